"""The compiler-IR rewrites. Each ``apply`` is what the compiler runs and what
:mod:`compile.rewrites.certify` checks (on instances built by ``lhs``).

Sources: the paper's §3 and Figure 7 (zero-bias dense, add as bias_add, large max-pool windows
as stacked temporal pools with transposes), Glenside's im2col (conv2d as a matrix product),
layout algebra (transpose and reshape pairs), and the ONNX LSTM operator specification against
PyTorch's nn.LSTM equations (the front-ends' folded ``nn.lstm`` as the ``lstm_layer`` FlexASR runs,
paper §4.4.2).
"""
from __future__ import annotations

import numpy as np

from compile.ir import ops
from compile.ir.graph import Const, Node, call, const, var
from compile.rewrites.base import Rewrite


def _is(n, op) -> bool:
    return isinstance(n, Node) and n.op == op


# ----------------------------------------------------------------------------- dense and bias
def dense_zero_bias(n):
    if not _is(n, "nn.dense"):
        return None
    return call("nn.bias_add", n, const(np.zeros(n.shape[-1], n.dtype)), axis=len(n.shape) - 1)


def add_bias(n):
    """add(x, b) with b broadcast along axis 1 of x only: b[C, 1, ..., 1] (or b[C] for 2-D x)."""
    if not _is(n, "add"):
        return None
    x, b = n.args
    if len(x.shape) < 2 or tuple(n.shape) != tuple(x.shape):
        return None
    C = x.shape[1]
    ok = tuple(b.shape) == (C,) + (1,) * (len(x.shape) - 2) if len(x.shape) > 2 else tuple(b.shape) == (C,)
    if not ok or b.dtype != x.dtype:
        return None
    bb = b if len(b.shape) == 1 else call("reshape", b, newshape=(C,))
    return call("nn.bias_add", x, bb, axis=1)


# ----------------------------------------------------------------------------- convolution as GEMM
def conv2d_im2col(n, kernel_axes=(0, 1, 2, 3)):
    if not _is(n, "nn.conv2d"):
        return None
    x, w = n.args
    a = n.attrs
    if x.shape[0] != 1 or a["groups"] != 1 or tuple(a["dilation"]) != (1, 1) or a["data_layout"] != "NCHW":
        return None
    O, C, KH, KW = w.shape
    _, _, oh, ow = n.shape
    cols = call("nn.im2col", x, kernel_size=(KH, KW), strides=a["strides"], padding=a["padding"])
    wk = w if kernel_axes == (0, 1, 2, 3) else call("transpose", w, axes=kernel_axes)
    mat = call("nn.dense", cols, call("reshape", wk, newshape=(O, C * KH * KW)))
    return call("transpose", call("reshape", mat, newshape=(1, oh, ow, O)), axes=(0, 3, 1, 2))


def conv2d_explicit_pad(n):
    """A padded convolution as zero padding (nn.pad) followed by an unpadded one."""
    if not _is(n, "nn.conv2d") or n.attrs["data_layout"] != "NCHW":
        return None
    t, l, b, r = ops._pads(n.attrs["padding"])
    if (t, l, b, r) == (0, 0, 0, 0):
        return None
    x, w = n.args
    xp = call("nn.pad", x, pad_width=((0, 0), (0, 0), (t, b), (l, r)))
    return call("nn.conv2d", xp, w, **{**n.attrs, "padding": (0, 0, 0, 0)})


def conv2d_nhwc(n):
    """An NCHW/OIHW convolution as an NHWC/OHWI one between transposes (HLSCNN's layout)."""
    if not _is(n, "nn.conv2d") or n.attrs["data_layout"] != "NCHW" or n.attrs["groups"] != 1:
        return None
    x, w = n.args
    attrs = {**n.attrs, "data_layout": "NHWC", "kernel_layout": "OHWI"}
    y = call("nn.conv2d", call("transpose", x, axes=(0, 2, 3, 1)), call("transpose", w, axes=(0, 2, 3, 1)), **attrs)
    return call("transpose", y, axes=(0, 3, 1, 2))


# ----------------------------------------------------------------------------- pooling (Figure 7)
def _plain_pool(n) -> bool:
    a = n.attrs
    if not _is(n, "nn.max_pool2d") or tuple(ops._pads(a["padding"])) != (0, 0, 0, 0):
        return False
    (kh, kw), (sh, sw) = a["pool_size"], a["strides"]
    x = n.args[0]
    return n.shape[2] == (x.shape[2] - kh) // sh + 1 and n.shape[3] == (x.shape[3] - kw) // sw + 1


def maxpool_split(n):
    """A window of a*b rows at stride a (a > 1, b > 1) = an (a,1)/(a,1) pool, then a (b,kw)/(1,sw) pool."""
    if not _plain_pool(n):
        return None
    (kh, kw), (a, sw) = n.attrs["pool_size"], n.attrs["strides"]
    if a < 2 or kh % a or kh // a < 2:
        return None
    first = call("nn.max_pool2d", n.args[0], pool_size=(a, 1), strides=(a, 1))
    return call("nn.max_pool2d", first, pool_size=(kh // a, kw), strides=(1, sw))


def maxpool_transpose(n):
    """Pooling along W as pooling along H between transposes (only for windows wider than tall)."""
    if not _plain_pool(n):
        return None
    (kh, kw), (sh, sw) = n.attrs["pool_size"], n.attrs["strides"]
    if (kw, sw) <= (kh, sh):
        return None
    t = call("transpose", n.args[0], axes=(0, 1, 3, 2))
    inner = call("nn.max_pool2d", t, pool_size=(kw, kh), strides=(sw, sh))
    return call("transpose", inner, axes=(0, 1, 3, 2))


def maxpool_windows(n):
    """Figure 7 (c): a 2-D max-pool (batch 1) as one temporal pool over its flattened windows:
    (kh, kw >= 2) the K = kh*kw elements of every window (nn.im2col, per channel) become the rows of a
    [1, 1, K, C*L] matrix (L windows per channel), pooled by a (K, 1)/(K, 1) window, reshaped back."""
    if not _plain_pool(n):
        return None
    x = n.args[0]
    (kh, kw), (sh, sw) = n.attrs["pool_size"], n.attrs["strides"]
    N, C, OH, OW = n.shape
    K, L = kh * kw, OH * OW
    if N != 1 or kh < 2 or kw < 2:               # a window of one row or column is already a row pool
        return None
    cols = call("nn.im2col", x, kernel_size=(kh, kw), strides=(sh, sw))
    rows = call("transpose", call("reshape", cols, newshape=(L, C, K)), axes=(2, 1, 0))
    m = call("reshape", rows, newshape=(1, 1, K, C * L))
    return call("reshape", call("nn.max_pool2d", m, pool_size=(K, 1), strides=(K, 1)), newshape=(1, C, OH, OW))


def maxpool_halve(n):
    """A pool whose windows tile the rows (kh = sh, kh even, kh >= 4) as a (2,1)/(2,1) pool then a
    (kh/2, kw)/(kh/2, sw) pool (Figure 7 (c): 16 rows as four stacked temporal pools)."""
    if not _plain_pool(n):
        return None
    (kh, kw), (sh, sw) = n.attrs["pool_size"], n.attrs["strides"]
    if kh != sh or kh % 2 or kh < 4:
        return None
    first = call("nn.max_pool2d", n.args[0], pool_size=(2, 1), strides=(2, 1))
    return call("nn.max_pool2d", first, pool_size=(kh // 2, kw), strides=(kh // 2, sw))


VECTOR = 16          # FlexASR's vector width: its pooling and linear layers take multiples of 16 columns


def pool_pad_columns(n):
    """A pool along rows only (window (k,1), stride (k,1)) of a [1, 1, R, C] matrix whose C is not a
    multiple of :data:`VECTOR`: pad the columns (zeros) to the next multiple, pool, slice the C
    columns back (the padding never reaches a kept column)."""
    if not _plain_pool(n):
        return None
    x = n.args[0]
    (kh, kw), (sh, sw) = n.attrs["pool_size"], n.attrs["strides"]
    if (kw, sw) != (1, 1) or x.shape[0] * x.shape[1] != 1 or x.shape[3] % VECTOR == 0:
        return None
    C = x.shape[3]
    pad = call("nn.pad", x, pad_width=((0, 0), (0, 0), (0, 0), (0, -C % VECTOR)))
    pooled = call("nn.max_pool2d", pad, pool_size=(kh, 1), strides=(sh, 1))
    return call("strided_slice", pooled, begin=(0,), end=(C,), strides=(1,), axes=(3,))


# ----------------------------------------------------------------------------- layout algebra
def transpose_pair(n):
    if not (_is(n, "transpose") and _is(n.args[0], "transpose")):
        return None
    inner = n.args[0]
    p, q = inner.attrs["axes"], n.attrs["axes"]
    if not p or not q:
        return None
    both = tuple(p[k] for k in q)
    x = inner.args[0]
    return x if both == tuple(range(len(both))) else call("transpose", x, axes=both)


def reshape_pair(n):
    if not (_is(n, "reshape") and _is(n.args[0], "reshape")):
        return None
    x = n.args[0].args[0]
    return x if tuple(x.shape) == tuple(n.shape) else call("reshape", x, newshape=tuple(n.shape))


# ----------------------------------------------------------------------------- recurrent (paper §4.4.2)
ONNX_TO_TORCH = (0, 2, 3, 1)   # PyTorch's gate q (i, f, g, o) is ONNX's gate ONNX_TO_TORCH[q] of (i, o, f, c)


def _zero_state(v) -> bool:
    """An initial state the rewrite may drop: a constant of zeros (either sign)."""
    from compile.ir.graph import Const
    return isinstance(v, Const) and not np.any(np.asarray(v.value))


def _gates(v, H: int, order, axis: int, offset: int = 0):
    """The 4H gate rows of ``v`` along ``axis`` (from ``offset``) reordered: block q of the result
    is block ``order[q]`` of ``v`` (strided_slice + concatenate, data movement only)."""
    blocks = [call("strided_slice", v, begin=(offset + q * H,), end=(offset + (q + 1) * H,), strides=(1,),
                   axes=(axis,)) for q in order]
    return call("concatenate", *blocks, axis=axis)


def lstm_fold(n, order=ONNX_TO_TORCH, halves=(True, True)):
    """ONNX's folded LSTM (``nn.lstm``: x[T, 1, I], w[1, 4H, I], r[1, 4H, H], b[1, 8H] = Wb then
    Rb, gates (i, o, f, c); batch 1; initial states absent or constant zeros) as FlexASR's LSTM
    layer (``lstm_layer``: PyTorch gates (i, f, g, o), one bias b_ih + b_hh, zero initial state):
    ``reshape(lstm_layer(reshape(x, [T, I]), W', R', Wb' + Rb'), [T, 1, 1, H])`` where ' reorders
    the gate blocks (ONNX c is PyTorch g; strided_slice + concatenate + reshape). A constant b (as
    the front-ends build it) has its halves summed at compile time with the IR ``add``'s own
    semantics, so the rewritten term holds no host compute besides the call (an ``add`` left on the
    host would cost the extraction more than the ``nn.lstm`` it replaces). ``order``/``halves``
    exist for the seeded wrong variants (:mod:`compile.rewrites.broken`): the gate permutation, and
    which bias halves are summed."""
    if not _is(n, "nn.lstm"):
        return None
    x, w, r = n.args[:3]
    b = n.args[3] if len(n.args) > 3 else None
    T, B, I = x.shape
    H = r.shape[2]
    if B != 1 or not all(_zero_state(s) for s in n.args[4:]):
        return None
    if b is not None and tuple(b.shape) != (1, 8 * H):
        return None
    W = call("reshape", _gates(w, H, order, 1), newshape=(4 * H, I))
    R = call("reshape", _gates(r, H, order, 1), newshape=(4 * H, H))
    if b is None:
        bsum = const(np.zeros(4 * H, np.float32))
    elif isinstance(b, Const):              # the front-ends' case: the same add, evaluated now (bit for bit
        idx = np.concatenate([np.arange(q * H, (q + 1) * H) for q in order])   # what the host would compute)
        wb, rb = (np.asarray(b.value, np.float32)[0, off:off + 4 * H][idx] for off in (0, 4 * H))
        bsum = const(ops.evaluate("add", [wb, rb], {}) if all(halves) else (wb if halves[0] else rb))
    else:
        wb, rb = (call("reshape", _gates(b, H, order, 1, off), newshape=(4 * H,)) for off in (0, 4 * H))
        bsum = call("add", wb, rb) if all(halves) else (wb if halves[0] else rb)
    y = call("lstm_layer", call("reshape", x, newshape=(T, I)), W, R, bsum)
    return call("reshape", y, newshape=(T, 1, 1, H))


# ----------------------------------------------------------------------------- instances for the checks
def _dims(rng, n, lo=1, hi=5):
    return [int(v) for v in rng.integers(lo, hi + 1, n)]


def _conv_lhs(p):
    x, w = var("x", (1, p["C"], p["H"], p["W"])), var("w", (p["O"], p["C"], p["KH"], p["KW"]))
    P = p["P"]
    return [x, w], call("nn.conv2d", x, w, strides=(p["S"], p["S"]), padding=(P, P, P, P))


def _rand_conv(rng):
    C, O, KH, KW = _dims(rng, 4, 1, 3)
    S, P = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    return dict(C=C, O=O, KH=KH, KW=KW, S=S, P=P, H=KH + int(rng.integers(0, 6)), W=KW + int(rng.integers(0, 6)))


def _pool_lhs(p):
    x = var("x", (p["N"], p["C"], p["H"], p["W"]))
    return [x], call("nn.max_pool2d", x, pool_size=(p["kh"], p["kw"]), strides=(p["sh"], p["sw"]))


def _rand_pool(rng):
    kh, kw, sh, sw = _dims(rng, 4, 1, 4)
    N, C = _dims(rng, 2, 1, 2)
    return dict(kh=kh, kw=kw, sh=sh, sw=sw, N=N, C=C, H=kh + int(rng.integers(0, 6)), W=kw + int(rng.integers(0, 6)))


def _rand_split(rng):
    a, b = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    p = _rand_pool(rng)
    p.update(kh=a * b, sh=a, H=a * b + int(rng.integers(0, 7)))
    return p


def _rand_windows(rng):
    p = _rand_pool(rng)
    kh, kw = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    p.update(N=1, kh=kh, kw=kw, H=kh + int(rng.integers(0, 5)), W=kw + int(rng.integers(0, 5)))
    return p


def _rand_halve(rng):
    k = 2 * int(rng.integers(2, 5))
    p = _rand_pool(rng)
    p.update(kh=k, sh=k, H=k + int(rng.integers(0, 2 * k)))
    return p


def _rand_pad_columns(rng):
    k = int(rng.integers(1, 5))
    return dict(kh=k, kw=1, sh=k, sw=1, N=1, C=1, H=k + int(rng.integers(0, 6)), W=int(rng.integers(1, 40)))


def _add_lhs(p):
    x = var("x", (p["N"], p["C"]) + (p["H"],) * p["rank2"])
    b = var("b", (p["C"],) + (1,) * p["rank2"])
    return [x, b], call("add", x, b)


def _transposes_lhs(p):
    x = var("x", p["shape"])
    return [x], call("transpose", call("transpose", x, axes=p["p1"]), axes=p["p2"])


def _rand_perms(rng):
    return dict(shape=tuple(_dims(rng, 3, 1, 4)), p1=tuple(int(v) for v in rng.permutation(3)),
                p2=tuple(int(v) for v in rng.permutation(3)))


def _reshapes_lhs(p):
    x = var("x", p["shape"])
    return [x], call("reshape", call("reshape", x, newshape=p["s1"]), newshape=p["s2"])


def _rand_reshapes(rng):
    a, b, c = _dims(rng, 3, 1, 4)
    return dict(shape=(a, b, c), s1=(a * b, c), s2=(a, b * c))


def _lstm_lhs(p):
    """nn.lstm over x[T, B, I], w[1, 4H, I], r[1, 4H, H]; ``bias``: 'input' (b[1, 8H] an input),
    'const' (a constant b: standard normal from ``seed``, rounded to integers with ``ints`` for the
    exact check) or 'none'; ``state``: 'absent', 'zeros' (constant zero h0 and c0) or 'input' (h0 an
    input: the rewrite must not apply)."""
    T, B, I, H = p["T"], p.get("B", 1), p["I"], p["H"]
    x, w, r = var("x", (T, B, I)), var("w", (1, 4 * H, I)), var("r", (1, 4 * H, H))
    ins, args = [x, w, r], [x, w, r]
    if p["bias"] != "none" or p["state"] != "absent":
        if p["bias"] == "input":
            b = var("b", (1, 8 * H))
            ins.append(b)
        else:
            v = np.random.default_rng(p.get("seed", 0)).standard_normal((1, 8 * H)) * (4 if p.get("ints") else 1)
            v = np.round(v) if p.get("ints") else v
            b = const((v if p["bias"] == "const" else np.zeros((1, 8 * H))).astype(np.float32))
        args.append(b)
    if p["state"] == "zeros":
        args += [const(np.zeros((1, B, H), np.float32))] * 2
    elif p["state"] == "input":
        h0 = var("h0", (1, B, H))
        ins.append(h0)
        args.append(h0)
    return ins, call("nn.lstm", *args)


def _rand_lstm(rng):
    T, I, H = int(rng.integers(1, 7)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    u = rng.random()
    return dict(T=T, I=I, H=H, B=2 if u < 0.05 else 1, bias=str(rng.choice(["input", "const", "none"], p=[.5, .3, .2])),
                state="input" if u > 0.95 else str(rng.choice(["absent", "zeros"])), seed=int(rng.integers(1 << 30)))


# Property-test tolerance of lstm_fold, measured (seeds 1 and 100..104, 2000 random parameter sets
# of _rand_lstm each, 10,809 where the rewrite applies; standard-normal float32 data): relative
# Frobenius error median 1.2e-8, 99.9th percentile below 8.5e-7, largest 2.2e-6. Its only source is
# the rewritten side's float32 ``add`` of two bias *inputs* (the left side sums them in float64;
# constant biases are summed by the same float32 add on both paths, and everything else is the
# same float64 arithmetic in the same order): an absolute error of 2^-24 |Wb + Rb| per
# pre-activation, relatively larger where cancellation makes the outputs small (T = 1, H = 1
# cases). 1e-5: ~4.5x the largest seen, four orders below a wrong gate order or a dropped bias
# (relative errors 0.1 .. 2).
LSTM_RTOL = 1e-5

RULES = (
    Rewrite("dense_zero_bias", "nn.dense(x, w) => nn.bias_add(nn.dense(x, w), zeros[M])  (paper §3: MobileNet-V2)",
            dense_zero_bias, lambda p: ([x := var("x", (p["N"], p["K"])), w := var("w", (p["M"], p["K"]))],
                                        call("nn.dense", x, w)),
            lambda rng: dict(zip("NKM", _dims(rng, 3))), (dict(N=2, K=3, M=2),)),
    Rewrite("add_bias", "add(x[N,C,...], b[C,1,...]) => nn.bias_add(x, reshape(b, [C]), axis=1)",
            add_bias, _add_lhs, lambda rng: dict(zip(("N", "C", "H"), _dims(rng, 3)), rank2=int(rng.integers(0, 3))),
            (dict(N=1, C=2, H=2, rank2=2), dict(N=2, C=3, H=1, rank2=0))),
    Rewrite("conv2d_im2col", "nn.conv2d(x, w) => transpose(reshape(nn.dense(nn.im2col(x), reshape(w, [O, C*KH*KW])), "
            "[1, OH, OW, O]), (0, 3, 1, 2))  (groups 1, batch 1; Glenside's im2col)",
            conv2d_im2col, _conv_lhs, _rand_conv,
            (dict(C=2, O=2, KH=2, KW=2, S=1, P=0, H=3, W=3), dict(C=1, O=2, KH=2, KW=1, S=2, P=1, H=3, W=2))),
    Rewrite("conv2d_explicit_pad", "nn.conv2d(x, w, padding p) => nn.conv2d(nn.pad(x, p), w, padding 0)",
            conv2d_explicit_pad, _conv_lhs, _rand_conv, (dict(C=2, O=1, KH=2, KW=2, S=1, P=1, H=2, W=3),)),
    Rewrite("conv2d_nhwc", "nn.conv2d(x, w) [NCHW/OIHW] => transpose(nn.conv2d(transpose(x, (0, 2, 3, 1)), "
            "transpose(w, (0, 2, 3, 1)), NHWC/OHWI), (0, 3, 1, 2))  (HLSCNN's layout)",
            conv2d_nhwc, _conv_lhs, _rand_conv,
            (dict(C=2, O=2, KH=2, KW=2, S=1, P=0, H=3, W=3), dict(C=1, O=2, KH=2, KW=1, S=2, P=1, H=3, W=2))),
    Rewrite("maxpool_split", "nn.max_pool2d(x, (a*b, kw), (a, sw)) => nn.max_pool2d(nn.max_pool2d(x, (a, 1), (a, 1)), "
            "(b, kw), (1, sw))  (Figure 7: large windows as stacked temporal pools)",
            maxpool_split, _pool_lhs, _rand_split,
            (dict(kh=4, kw=1, sh=2, sw=1, N=1, C=1, H=6, W=2), dict(kh=4, kw=2, sh=2, sw=2, N=1, C=2, H=5, W=4))),
    Rewrite("maxpool_transpose", "nn.max_pool2d(x, (kh, kw), (sh, sw)) => transpose(nn.max_pool2d(transpose(x, "
            "(0, 1, 3, 2)), (kw, kh), (sw, sh)), (0, 1, 3, 2))  (Figure 7: pooling along W as pooling along H)",
            maxpool_transpose, _pool_lhs, _rand_pool, (dict(kh=1, kw=2, sh=1, sw=2, N=1, C=1, H=3, W=4),)),
    Rewrite("maxpool_windows", "nn.max_pool2d(x[1,C,H,W], (kh, kw), (sh, sw)) => reshape(nn.max_pool2d(reshape("
            "transpose(reshape(nn.im2col(x), [L, C, K]), (2, 1, 0)), [1, 1, K, C*L]), (K, 1), (K, 1)), [1, C, OH, OW])  "
            "(Figure 7 (c): the flattened windows)",
            maxpool_windows, _pool_lhs, _rand_windows,
            (dict(kh=2, kw=2, sh=1, sw=2, N=1, C=2, H=3, W=4), dict(kh=2, kw=3, sh=1, sw=1, N=1, C=1, H=2, W=4))),
    Rewrite("maxpool_halve", "nn.max_pool2d(x, (k, kw), (k, sw)) => nn.max_pool2d(nn.max_pool2d(x, (2, 1), (2, 1)), "
            "(k/2, kw), (k/2, sw))  (k even, k >= 4)",
            maxpool_halve, _pool_lhs, _rand_halve,
            (dict(kh=4, kw=1, sh=4, sw=1, N=1, C=1, H=5, W=1), dict(kh=4, kw=2, sh=4, sw=1, N=1, C=1, H=4, W=3))),
    Rewrite("pool_pad_columns", "nn.max_pool2d(x[1,1,R,C], (k, 1), (k, 1)) => strided_slice(nn.max_pool2d(nn.pad(x, "
            "columns to a multiple of 16), (k, 1), (k, 1)), columns 0..C)",
            pool_pad_columns, _pool_lhs, _rand_pad_columns, (dict(kh=2, kw=1, sh=2, sw=1, N=1, C=1, H=4, W=3),)),
    Rewrite("transpose_pair", "transpose(transpose(x, p), q) => transpose(x, p∘q), or x when p∘q is the identity",
            transpose_pair, _transposes_lhs, _rand_perms,
            (dict(shape=(2, 3, 2), p1=(1, 2, 0), p2=(2, 0, 1)), dict(shape=(2, 3, 2), p1=(1, 0, 2), p2=(2, 0, 1)))),
    Rewrite("reshape_pair", "reshape(reshape(x, s1), s2) => reshape(x, s2), or x when s2 is x's shape",
            reshape_pair, _reshapes_lhs, _rand_reshapes, (dict(shape=(2, 3, 2), s1=(6, 2), s2=(2, 6)),)),
    Rewrite("lstm_fold", "nn.lstm(x[T,1,I], w, r, b, h0=0, c0=0) [ONNX gates i,o,f,c] => reshape(lstm_layer("
            "reshape(x, [T, I]), W[i,f,c,o], R[i,f,c,o], Wb[i,f,c,o] + Rb[i,f,c,o]), [T, 1, 1, H])  "
            "(PyTorch gates i,f,g,o; paper §4.4.2: the LSTM layer FlexASR runs)",
            lstm_fold, _lstm_lhs, _rand_lstm,
            (dict(T=2, I=1, H=1, bias="input", state="zeros"), dict(T=2, I=2, H=2, bias="input", state="absent"),
             dict(T=2, I=1, H=2, bias="none", state="absent"),
             dict(T=2, I=2, H=1, bias="const", state="zeros", seed=0, ints=True)),
            bit_exact=False, rtol=LSTM_RTOL),
)
