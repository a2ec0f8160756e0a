"""Lowering of small IR graphs to a compiler-IR ILA fragment (:mod:`ila.models.relay`), so a
compiler-IR rewrite can be proved by BMC like a mapping: both sides become command streams of the
same ILA over shared symbolic input elements.

Layout: one tensor memory; address 0 holds the constant 0 (padding), tensors are placed one after
another from address 1, row-major. Operators with an ILA instruction use it (``nn.dense``,
``nn.bias_add``, ``add``, ``multiply``, ``nn.relu``, ``sigmoid`` and ``tanh`` (the ILA's activation
extension, :mod:`ila.models.relay.activations`), ``nn.max_pool2d`` without padding,
``nn.conv2d`` with batch 1, groups 1, one stride, no padding or dilation; ``lstm_layer``; ``nn.lstm``
with batch 1 and initial states absent or constant zeros, through its own ONNX-LSTM instruction). Pure data-movement
operators (``reshape``, ``transpose``, ``nn.im2col``, ``strided_slice``, ``concatenate``,
``squeeze``, ``expand_dims``, ``nn.batch_flatten``, ``nn.pad`` with value 0, and the broadcast of an
``add``/``multiply`` operand) are lowered through their own numpy semantics applied to the element
*indices*: the output index array says which input element (or the 0 cell) each output element
is, and the fragment copies it there (the ILA's ``reshape`` instruction, one per contiguous run).
That is sound because these operators are parametric in the element values.

Raises :class:`LoweringError` (a CompileError) naming the operator and what is unsupported.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.ir import ops
from compile.ir.graph import Const, Node, Value, Var, topological

DATA_MOVEMENT = ("reshape", "transpose", "nn.im2col", "strided_slice", "concatenate", "squeeze", "expand_dims",
                 "nn.batch_flatten", "nn.pad")
ZERO = 0


class LoweringError(CompileError):
    """An IR graph the compiler-IR ILA fragment cannot express (names the operator and why)."""


@dataclass
class Fragment:
    """A lowered graph: the commands, and the base address of each value (by uid)."""
    commands: list = field(default_factory=list)
    base: dict = field(default_factory=dict)
    top: int = 1

    def alloc(self, v: Value) -> int:
        self.base[v.uid] = self.top
        self.top += int(np.prod(v.shape, dtype=np.int64)) if v.shape else 1
        return self.base[v.uid]


def _fid(name: str) -> int:
    from ila.models.relay.activations import FUNC_IDS     # the base ILA's operators and the activations
    return FUNC_IDS[name]


def _cmd(f: Fragment, op: str, *args: int) -> None:
    c = {"func_id": _fid(op)}
    c.update({f"arg_{k}": int(a) for k, a in enumerate(args)})
    f.commands.append(c)


def _copy(f: Fragment, src: np.ndarray, dst_base: int) -> None:
    """Copy element src[j] (an address) to dst_base + j, one command per contiguous run."""
    src = np.asarray(src, dtype=np.int64).ravel()
    j = 0
    while j < len(src):
        k = j + 1
        while k < len(src) and src[k] == src[k - 1] + 1 and src[j] != ZERO:
            k += 1
        _cmd(f, "reshape", int(src[j]), dst_base + j, k - j)
        j = k


def _addresses(f: Fragment, v: Value) -> np.ndarray:
    n = int(np.prod(v.shape, dtype=np.int64)) if v.shape else 1
    return (f.base[v.uid] + np.arange(n, dtype=np.int64)).reshape(v.shape)


def _moved(f: Fragment, node: Node) -> np.ndarray:
    """The input address of every output element of a data-movement node (0 = the zero cell)."""
    attrs = dict(node.attrs)
    if node.op == "nn.pad":
        if float(attrs.get("pad_value", 0.0)) != 0.0 or attrs.get("pad_mode", "constant") != "constant":
            raise LoweringError(f"nn.pad at {node.source or '?'}: only constant padding with 0 lowers")
        attrs["pad_value"] = ZERO
    return np.asarray(ops.evaluate(node.op, [_addresses(f, a) for a in node.args], attrs))


def _broadcast(f: Fragment, v: Value, shape: tuple) -> int:
    """The base of ``v`` broadcast to ``shape`` (copied when the shapes differ)."""
    if tuple(v.shape) == tuple(shape):
        return f.base[v.uid]
    tmp = Var(tuple(shape), v.dtype)
    base = f.alloc(tmp)
    _copy(f, np.broadcast_to(_addresses(f, v), shape), base)
    return base


def _need(cond: bool, node: Node, why: str) -> None:
    if not cond:
        raise LoweringError(f"{node.op} at {node.source or '?'}: {why} does not lower to the compiler-IR ILA")


def lower(outputs: list[Value], elements: dict[int, list], fragment: Fragment | None = None) -> Fragment:
    """Commands computing ``outputs``; ``elements[var.uid]`` are the element terms (or ints) of each
    input variable, stored first; constants must hold integers (they are stored as int32)."""
    f = fragment
    if f is None:              # the zero cell is stored explicitly: the memory starts unconstrained
        f = Fragment([{"func_id": _fid("tensor_store"), "addr_in": ZERO, "data_in": 0}])
    for v in topological(list(outputs), nodes_only=False):
        if v.uid in f.base:
            continue
        if isinstance(v, Var):
            base = f.alloc(v)
            for k, e in enumerate(elements[v.uid]):
                f.commands.append({"func_id": _fid("tensor_store"), "addr_in": base + k, "data_in": e})
        elif isinstance(v, Const):
            vals = np.asarray(v.value).ravel()
            if not np.all(np.equal(np.mod(vals, 1), 0)):
                raise LoweringError(f"constant {v.name or v.uid}: non-integer values do not lower to int32")
            base = f.alloc(v)
            for k, x in enumerate(vals):
                f.commands.append({"func_id": _fid("tensor_store"), "addr_in": base + k,
                                   "data_in": int(x) & 0xFFFFFFFF})
        elif isinstance(v, Node):
            _node(f, v)
    return f


def _node(f: Fragment, node: Node) -> None:
    a = node.attrs
    args = node.args
    if node.op in DATA_MOVEMENT:
        src = _moved(f, node)
        _copy(f, src, f.alloc(node))
        return
    if node.op in ("add", "multiply"):
        x, y = (_broadcast(f, t, node.shape) for t in args)
        _cmd(f, node.op, x, y, f.alloc(node), int(np.prod(node.shape)))
        return
    if node.op in ("nn.relu", "sigmoid", "tanh"):
        _cmd(f, node.op, f.base[args[0].uid], f.alloc(node), int(np.prod(node.shape)))
        return
    if node.op == "nn.dense":
        x, w = args
        _cmd(f, "nn.dense", f.base[x.uid], f.base[w.uid], f.alloc(node), int(np.prod(x.shape[:-1])), x.shape[-1],
             w.shape[0])
        return
    if node.op == "nn.bias_add":
        x, b = args
        ax = a["axis"] % len(x.shape)
        R, C, S = int(np.prod(x.shape[:ax])), x.shape[ax], int(np.prod(x.shape[ax + 1:]))
        _cmd(f, "nn.bias_add", f.base[x.uid], f.base[b.uid], f.alloc(node), R, C, S)
        return
    if node.op == "nn.max_pool2d":
        x = args[0]
        _need(tuple(ops._pads(a["padding"])) == (0, 0, 0, 0), node, "padding")
        (kh, kw), (sh, sw) = a["pool_size"], a["strides"]
        _need(node.shape[2] == (x.shape[2] - kh) // sh + 1 and node.shape[3] == (x.shape[3] - kw) // sw + 1,
              node, "ceil mode")
        _cmd(f, "nn.max_pool2d", f.base[x.uid], f.alloc(node), x.shape[0] * x.shape[1], x.shape[2], x.shape[3],
             (kh << 16) | kw, (sh << 16) | sw)
        return
    if node.op == "nn.conv2d":
        x, w = args
        (sh, sw) = a["strides"]
        _need(x.shape[0] == 1 and a["groups"] == 1 and sh == sw and tuple(a["dilation"]) == (1, 1), node,
              "batch > 1, groups, dilation or unequal strides")
        t, l, b, r = ops._pads(a["padding"])
        from compile.ir.graph import call
        nhwc = a["data_layout"] == "NHWC"
        if (t, l, b, r) != (0, 0, 0, 0):          # zero padding first, as data movement
            pw = ((0, 0), (t, b), (l, r), (0, 0)) if nhwc else ((0, 0), (0, 0), (t, b), (l, r))
            padded = call("nn.pad", x, pad_width=pw)
            _copy(f, _moved(f, padded), f.alloc(padded))
            x = padded
        if nhwc:                                   # the ILA's NHWC convolution takes HWIO weights
            hwio = call("transpose", w, axes=(1, 2, 3, 0))
            _copy(f, _moved(f, hwio), f.alloc(hwio))
            _cmd(f, "nn.conv2d_nhwc", f.base[x.uid], f.base[hwio.uid], f.alloc(node), x.shape[3], x.shape[1],
                 x.shape[2], w.shape[0], (sh << 24) | (w.shape[1] << 8) | w.shape[2])
            return
        _cmd(f, "nn.conv2d_nchw", f.base[x.uid], f.base[w.uid], f.alloc(node), x.shape[1], x.shape[2], x.shape[3],
             w.shape[0], (sh << 24) | (w.shape[2] << 8) | w.shape[3])
        return
    if node.op == "lstm_layer":
        x, w_ih, w_hh, b = args
        (T, I), H = x.shape, w_hh.shape[1]
        out = f.alloc(node)
        _cmd(f, "lstm_layer", f.base[x.uid], f.base[w_ih.uid], f.base[w_hh.uid], f.base[b.uid], out,
             f.alloc(Var((5 * H,), node.dtype)), T, (I << 16) | H)
        return
    if node.op == "nn.lstm":
        x, w, r = args[:3]
        T, B, I = x.shape
        H = r.shape[2]
        _need(B == 1, node, "batch > 1")
        _need(all(isinstance(s, Const) and not np.any(np.asarray(s.value)) for s in args[4:]), node,
              "an initial state other than constant zeros")
        if len(args) > 3:
            bb = f.base[args[3].uid]
        else:                                       # no bias: both halves zero
            bb = f.alloc(Var((8 * H,), node.dtype))
            _copy(f, np.full(8 * H, ZERO), bb)
        out = f.alloc(node)
        _cmd(f, "nn.lstm", f.base[x.uid], f.base[w.uid], f.base[r.uid], bb, out,
             f.alloc(Var((5 * H,), node.dtype)), T, (I << 16) | H)
        return
    raise LoweringError(f"{node.op} at {node.source or '?'} has no compiler-IR ILA lowering")
