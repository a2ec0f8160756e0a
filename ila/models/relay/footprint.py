"""What each compiler-IR ILA operator command reads and writes (its footprint), from its arguments.

For the operators listed in :data:`DESCRIBED`, :func:`access` gives, for one command
(``{"func_id": ..., "arg_0": ..., ...}``, arguments as in :mod:`ila.models.relay.model`):

* ``reads``: the tensor-memory regions ``(base, elements)`` whose contents determine the result;
* ``write``: the one region ``(base, elements)`` the command writes, every element of it, and
  nothing outside it (scalar registers aside: each operator described here starts its running
  ``acc`` afresh at the first step of every output element, so no register value carries into a
  result);
* ``params``: the arguments that are not addresses (dimensions, packed kernel and stride words);
* ``gather`` for the pure data-movement operators (``reshape``, ``transpose``): the written region
  is ``concat(reads)[gather]``, element by element; None for the computing operators, whose
  written region is a function of ``params`` and the contents of ``reads`` alone;
* ``degenerate``: why the command's loop nest writes less than its region (a zero extent: a
  kernel larger than the input, a zero stride or dimension), else None. A degenerate command is
  not described (the structural check refuses it).

Indices are 32-bit in the model; a region is only described when it ends below ``2**32`` (no
address wraps around). ``tests/test_relay_footprint.py`` checks every entry against the ILA
simulator on random memories: the written region is the only one that changes, it changes in
every element, and re-drawing the memory outside the read regions leaves it unchanged.

Source: the loop nests of :mod:`ila.models.relay.model` (TVM Relay operator definitions).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ila.models.relay.model import FUNC_IDS

_LIMIT = 1 << 32


@dataclass(frozen=True)
class Access:
    op: str
    reads: tuple            # ((base, elements), ...)
    write: tuple            # (base, elements)
    params: tuple           # the non-address arguments
    gather: np.ndarray | None = None
    degenerate: str | None = None


def _arg(cmd: dict, k: int) -> int:
    return int(cmd.get(f"arg_{k}", 0)) & 0xFFFFFFFF


def _dense(a):
    x, w, out, n, k, m = a[:6]
    return [(x, n * k), (w, m * k)], (out, n * m), (n, k, m), None, (n, k, m)


def _bias_add(a):
    x, b, out, r, c, s = a[:6]
    return [(x, r * c * s), (b, c)], (out, r * c * s), (r, c, s), None, (r, c, s)


def _binary(a):
    x, y, out, n = a[:4]
    return [(x, n), (y, n)], (out, n), (n,), None, (n,)


def _unary(a):
    x, out, n = a[:3]
    return [(x, n)], (out, n), (n,), None, (n,)


def _reshape(a):
    x, out, n = a[:3]
    return [(x, n)], (out, n), (n,), np.arange(n, dtype=np.int64), (n,)


def _transpose(a):
    x, out, r, c = a[:4]
    # out[j * R + i] = x[i * C + j]
    gather = np.arange(r * c, dtype=np.int64).reshape(r, c).T.reshape(-1)
    return [(x, r * c)], (out, r * c), (r, c), gather, (r, c)


def _pool(a):
    x, out, p, h, w, k, s = a[:7]
    kh, kw, sh, sw = k >> 16, k & 0xFFFF, s >> 16, s & 0xFFFF
    oh = 0 if h < kh or sh == 0 else (h - kh) // sh + 1
    ow = 0 if w < kw or sw == 0 else (w - kw) // sw + 1
    return [(x, p * h * w)], (out, p * oh * ow), (p, h, w, k, s), None, (p, oh, ow, kh, kw)


def _conv(a):
    x, w, out, c, h, wd, o, packed = a[:8]
    kh, kw, s = (packed >> 8) & 0xFF, packed & 0xFF, packed >> 24
    oh = 0 if h < kh or s == 0 else (h - kh) // s + 1
    ow = 0 if wd < kw or s == 0 else (wd - kw) // s + 1
    return [(x, c * h * wd), (w, o * c * kh * kw)], (out, o * oh * ow), (c, h, wd, o, packed), None, \
        (c, o, oh, ow, kh, kw)


_TABLE = {"nn.dense": _dense, "nn.bias_add": _bias_add, "add": _binary, "multiply": _binary,
          "nn.relu": _unary, "reshape": _reshape, "transpose": _transpose, "nn.max_pool2d": _pool,
          "nn.avg_pool2d": _pool, "nn.conv2d_nchw": _conv, "nn.conv2d_nhwc": _conv}
DESCRIBED = tuple(_TABLE)
_BY_ID = {FUNC_IDS[name]: name for name in _TABLE}
# operators whose step k reads element k of its first operand and writes element k of the result
# (nothing else of the written region): running them in place (result region = first operand) is
# the same as running them on a copy
ELEMENTWISE = ("nn.bias_add", "add", "multiply", "nn.relu")


def access(cmd: dict) -> Access | None:
    """The footprint of one operator command, or None when its operator is not described here
    (tensor stores and loads included: the caller handles those)."""
    name = _BY_ID.get(int(cmd.get("func_id", 0)))
    if name is None:
        return None
    args = [_arg(cmd, k) for k in range(8)]
    reads, write, params, gather, extents = _TABLE[name](args)
    degenerate = None
    if any(int(e) == 0 for e in extents):
        degenerate = f"{name} with a zero extent ({', '.join(str(int(e)) for e in extents)})"
    elif any(b + n > _LIMIT for b, n in [*reads, write]):
        degenerate = f"{name} addresses beyond 2**32"
    return Access(name, tuple((int(b), int(n)) for b, n in reads), (int(write[0]), int(write[1])),
                  tuple(int(p) for p in params), gather, degenerate)
