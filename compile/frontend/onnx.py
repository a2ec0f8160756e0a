"""ONNX -> tensor IR (``from_onnx``), TVM-style.

The model is checked and shape-inferred with the ``onnx`` package; every graph input that is not
an initializer must have static dimensions (DynamicShapeError otherwise, naming the input and the
dimension). Initializers become constants; a node whose inputs are all constants is folded at
import time (shape arithmetic: ``Shape``, ``ConstantOfShape``, ``Gather`` on shapes, ``Cast``,
``Concat``, ...), so the IR holds only tensor computation. Every other node maps onto IR
operators (Relay names) with its ONNX node name as the source location. Operators or attributes
the importer does not handle are collected over the whole model first and refused together
(UnsupportedOperatorError listing each operator with its nodes and the model).

Semantics follow the ONNX operator specification of the model's opset (e.g. ``Softmax`` before
opset 13 flattens to 2-D at ``axis``; from 13 on it works along ``axis``).
"""
from __future__ import annotations

import os

import numpy as np

from compile.errors import CompileError, DynamicShapeError, ModelLoadError, UnsupportedOperatorError
from compile.ir import ops
from compile.ir.graph import Const, Graph, Value, call, const, var

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def _dtype(elem_type: int, what: str) -> str:
    """The numpy dtype of ONNX element type ``elem_type``; UnsupportedOperatorError naming ``what``."""
    if elem_type not in _DTYPES:
        import onnx
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() \
            else str(elem_type)
        raise UnsupportedOperatorError(f"{what}: element type {name} is not supported")
    return _DTYPES[elem_type]


def _load(model_or_path):
    import onnx
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path, "model"
    try:
        if isinstance(model_or_path, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model_or_path)), "model"
        path = os.fspath(model_or_path)
        return onnx.load(path), os.path.basename(path)
    except FileNotFoundError:
        raise ModelLoadError(f"ONNX model {model_or_path!s}: no such file") from None
    except Exception as exc:                          # protobuf decode errors have no common base
        raise ModelLoadError(f"ONNX model {model_or_path!s} cannot be read: {type(exc).__name__}: "
                             f"{str(exc)[:200] or 'truncated or not an ONNX protobuf'}") from None


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


class _Importer:
    def __init__(self, model, name: str):
        self.model, self.name = model, name
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
        self.env: dict[str, Value] = {}
        self.unsupported: dict[str, str] = {}

    # -- helpers
    def c(self, name):
        """The constant array of input ``name`` (None when it is not constant)."""
        v = self.env.get(name)
        return v.value if isinstance(v, Const) else None

    def get(self, name, node) -> Value:
        if name not in self.env:
            if name in self.unsupported:
                raise UnsupportedOperatorError(self.unsupported[name])
            raise CompileError(f"{self.name}: node {node.name or node.op_type!r} uses {name!r}, which nothing defines")
        return self.env[name]

    def fold(self, op, args, **attrs):
        if all(isinstance(a, Const) for a in args):
            full = ops.normalise_attrs(op, attrs)
            return const(ops.evaluate(op, [a.value for a in args], full))
        return None


def _pads(onnx_pads, k=2):
    if not onnx_pads:
        return (0, 0, 0, 0)
    p = list(onnx_pads)
    return (p[0], p[1], p[k], p[k + 1])            # ONNX [t, l, b, r] -> IR (top, left, bottom, right)


# ONNX op -> function(importer, node, inputs (Values), attrs) -> Value or tuple of Values
_CONV = {}


def _reg(*names):
    def deco(fn):
        for n in names:
            _CONV[n] = fn
        return fn
    return deco


_UNARY = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Sqrt": "sqrt", "Neg": "negative",
          "Abs": "abs", "Erf": "erf", "HardSwish": "nn.hardswish", "Identity": None, "Dropout": "nn.dropout"}
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power"}


@_reg(*_UNARY)
def _unary(im, n, xs, a):
    op = _UNARY[n.op_type]
    return xs[0] if op is None else call(op, xs[0], source=n.name)


@_reg(*_BINARY)
def _binary(im, n, xs, a):
    return call(_BINARY[n.op_type], xs[0], xs[1], source=n.name)


@_reg("Sum", "Max", "Min")
def _variadic(im, n, xs, a):
    op = {"Sum": "add", "Max": "maximum", "Min": "minimum"}[n.op_type]
    out = xs[0]
    for x in xs[1:]:
        out = call(op, out, x, source=n.name)
    return out


def _auto_pads(im, n, a, in_hw, kernel, strides, dilations):
    """Explicit (top, left, bottom, right) pads of a 2-D window operator, from ``pads`` or ``auto_pad``
    (SAME_UPPER/SAME_LOWER: output = ceil(input / stride), the odd pad at the end / the start)."""
    mode = _s(a.get("auto_pad", "NOTSET"))
    if mode in ("NOTSET", "VALID"):
        return _pads(a.get("pads")) if mode == "NOTSET" else (0, 0, 0, 0)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedOperatorError(f"{im.name}: {n.op_type} node {n.name!r}: auto_pad={mode!r}")
    before, after = [], []
    for d, k, s, dl in zip(in_hw, kernel, strides, dilations):
        total = max(0, (-(-d // s) - 1) * s + (k - 1) * dl + 1 - d)
        small, big = total // 2, total - total // 2
        before.append(small if mode == "SAME_UPPER" else big)
        after.append(big if mode == "SAME_UPPER" else small)
    return (before[0], before[1], after[0], after[1])


@_reg("Conv")
def _conv(im, n, xs, a):
    if len(xs[1].shape) != 4:
        raise UnsupportedOperatorError(f"{im.name}: Conv node {n.name!r}: only 2-D convolution is supported")
    strides, dil = tuple(a.get("strides", (1, 1))), tuple(a.get("dilations", (1, 1)))
    pads = _auto_pads(im, n, a, xs[0].shape[2:], xs[1].shape[2:], strides, dil)
    y = call("nn.conv2d", xs[0], xs[1], strides=strides, padding=pads,
             dilation=tuple(a.get("dilations", (1, 1))), groups=a.get("group", 1), source=n.name)
    return call("nn.bias_add", y, xs[2], source=n.name) if len(xs) > 2 else y


@_reg("BatchNormalization")
def _bn(im, n, xs, a):
    return call("nn.batch_norm", *xs[:5], epsilon=float(a.get("epsilon", 1e-5)), source=n.name)


@_reg("MaxPool", "AveragePool")
def _pool(im, n, xs, a):
    if len(a["kernel_shape"]) != 2:
        raise UnsupportedOperatorError(f"{im.name}: {n.op_type} node {n.name!r}: only 2-D pools")
    if any(d != 1 for d in a.get("dilations", (1, 1))):
        raise UnsupportedOperatorError(f"{im.name}: {n.op_type} node {n.name!r}: dilated pooling")
    strides = tuple(a.get("strides", (1, 1)))
    pads = _auto_pads(im, n, a, xs[0].shape[2:], a["kernel_shape"], strides, (1, 1))
    kw = dict(pool_size=tuple(a["kernel_shape"]), strides=strides,
              padding=pads, ceil_mode=bool(a.get("ceil_mode", 0)), source=n.name)
    if n.op_type == "MaxPool":
        return call("nn.max_pool2d", xs[0], **kw)
    return call("nn.avg_pool2d", xs[0], count_include_pad=bool(a.get("count_include_pad", 0)), **kw)


@_reg("GlobalAveragePool")
def _gap(im, n, xs, a):
    return call("nn.global_avg_pool2d", xs[0], source=n.name)


@_reg("Gemm")
def _gemm(im, n, xs, a):
    x, w = xs[0], xs[1]
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if a.get("transA", 0):
        x = call("transpose", x, axes=(1, 0), source=n.name)
    if not a.get("transB", 0):
        w = im.fold("transpose", [w], axes=(1, 0)) or call("transpose", w, axes=(1, 0), source=n.name)
    y = call("nn.dense", x, w, source=n.name)
    if alpha != 1.0:
        y = call("multiply", y, const(np.float32(alpha)), source=n.name)
    if len(xs) > 2:
        b = xs[2] if beta == 1.0 else call("multiply", xs[2], const(np.float32(beta)), source=n.name)
        y = call("nn.bias_add", y, b, axis=-1, source=n.name) if len(b.shape) == 1 and b.shape[0] == y.shape[-1] \
            else call("add", y, b, source=n.name)
    return y


@_reg("MatMul")
def _matmul(im, n, xs, a):
    if len(xs[1].shape) == 2 and isinstance(xs[1], Const):
        return call("nn.dense", xs[0], const(xs[1].value.T), source=n.name)
    return call("nn.matmul", xs[0], xs[1], source=n.name)


def _reshape_target(in_shape, target, allowzero=False):
    t = [int(v) for v in target]
    return tuple(in_shape[k] if v == 0 and not allowzero else v for k, v in enumerate(t))


@_reg("Reshape")
def _reshape(im, n, xs, a):
    shape = im.c(n.input[1]) if im.opset >= 5 else a["shape"]
    if shape is None:
        raise UnsupportedOperatorError(f"{im.name}: Reshape node {n.name!r}: the target shape is not a constant")
    return call("reshape", xs[0], newshape=_reshape_target(xs[0].shape, shape, a.get("allowzero", 0)), source=n.name)


@_reg("Flatten")
def _flatten(im, n, xs, a):
    ax = a.get("axis", 1) % (len(xs[0].shape) or 1)
    lead = int(np.prod(xs[0].shape[:ax]))
    return call("reshape", xs[0], newshape=(lead, -1), source=n.name)


@_reg("Transpose")
def _transpose(im, n, xs, a):
    return call("transpose", xs[0], axes=tuple(a.get("perm", ())), source=n.name)


@_reg("Concat")
def _concat(im, n, xs, a):
    return call("concatenate", *xs, axis=a["axis"], source=n.name)


def _axes(im, n, a, k=1):
    if "axes" in a:
        return tuple(a["axes"])
    if len(n.input) > k and n.input[k]:
        v = im.c(n.input[k])
        if v is None:
            raise UnsupportedOperatorError(f"{im.name}: {n.op_type} node {n.name!r}: axes are not a constant")
        return tuple(int(x) for x in np.ravel(v))
    return None


@_reg("Squeeze")
def _squeeze(im, n, xs, a):
    return call("squeeze", xs[0], axis=_axes(im, n, a), source=n.name)


@_reg("Unsqueeze")
def _unsqueeze(im, n, xs, a):
    out = xs[0]
    rank = len(out.shape) + len(_axes(im, n, a))
    for ax in sorted(x % rank for x in _axes(im, n, a)):
        out = call("expand_dims", out, axis=ax, source=n.name)
    return out


@_reg("Softmax")
def _softmax(im, n, xs, a):
    x = xs[0]
    if im.opset >= 13:
        return call("nn.softmax", x, axis=a.get("axis", -1), source=n.name)
    ax = a.get("axis", 1) % len(x.shape)                 # before opset 13: coerced to 2-D at axis
    if ax == len(x.shape) - 1:
        return call("nn.softmax", x, axis=-1, source=n.name)
    flat = call("reshape", x, newshape=(int(np.prod(x.shape[:ax])), -1), source=n.name)
    return call("reshape", call("nn.softmax", flat, axis=-1, source=n.name), newshape=x.shape, source=n.name)


@_reg("Clip")
def _clip(im, n, xs, a):
    lo = a.get("min", -np.inf) if im.opset < 11 else (im.c(n.input[1]) if len(n.input) > 1 and n.input[1] else -np.inf)
    hi = a.get("max", np.inf) if im.opset < 11 else (im.c(n.input[2]) if len(n.input) > 2 and n.input[2] else np.inf)
    if lo is None or hi is None:
        raise UnsupportedOperatorError(f"{im.name}: Clip node {n.name!r}: bounds are not constants")
    return call("clip", xs[0], a_min=float(lo), a_max=float(hi), source=n.name)


@_reg("ReduceMean")
def _reduce_mean(im, n, xs, a):
    return call("mean", xs[0], axis=_axes(im, n, a), keepdims=bool(a.get("keepdims", 1)), source=n.name)


@_reg("Gather")
def _gather(im, n, xs, a):
    return call("take", xs[0], xs[1], axis=a.get("axis", 0), source=n.name)


@_reg("LayerNormalization")
def _layer_norm(im, n, xs, a):
    beta = xs[2] if len(xs) > 2 else const(np.zeros(xs[1].shape, np.float32))
    x, axis, eps = xs[0], a.get("axis", -1), float(a.get("epsilon", 1e-5))
    y = call("nn.layer_norm", x, xs[1], beta, axis=axis, epsilon=eps, source=n.name)
    if not any(len(n.output) > k and n.output[k] for k in (1, 2)):
        return y
    # the optional outputs Mean and InvStdDev (shapes keep the normalised axes as 1)
    axes = tuple(range(axis % len(x.shape), len(x.shape)))
    mu = call("mean", x, axis=axes, keepdims=True, source=n.name)
    d = call("subtract", x, mu, source=n.name)
    var = call("mean", call("multiply", d, d, source=n.name), axis=axes, keepdims=True, source=n.name)
    std = call("sqrt", call("add", var, const(np.asarray(eps, x.dtype)), source=n.name), source=n.name)
    return y, mu, call("divide", const(np.asarray(1, x.dtype)), std, source=n.name)


@_reg("Slice")
def _slice(im, n, xs, a):
    if im.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        vals = [im.c(n.input[k]) if len(n.input) > k and n.input[k] else None for k in range(1, 5)]
        if any(v is None for v in vals[:2]) or (len(n.input) > 3 and n.input[3] and vals[2] is None) or \
                (len(n.input) > 4 and n.input[4] and vals[3] is None):
            raise UnsupportedOperatorError(f"{im.name}: Slice node {n.name!r}: starts/ends/axes/steps are not constants")
        starts, ends, axes, steps = vals
    big = 2 ** 62
    clip = lambda v: max(min(int(v), big), -big)     # noqa: E731  (ONNX uses INT64_MAX for "to the end")
    return call("strided_slice", xs[0], begin=tuple(clip(v) for v in starts), end=tuple(clip(v) for v in ends),
                strides=tuple(int(v) for v in steps) if steps is not None else (),
                axes=tuple(int(v) for v in axes) if axes is not None else (), source=n.name)


@_reg("Pad")
def _pad_op(im, n, xs, a):
    mode = _s(a.get("mode", "constant"))
    if mode not in ("constant", "edge", "reflect"):
        raise UnsupportedOperatorError(f"{im.name}: Pad node {n.name!r}: mode {mode!r}")
    pads = a.get("pads") if im.opset < 11 else im.c(n.input[1])
    value = a.get("value", 0.0) if im.opset < 11 else (im.c(n.input[2]) if len(n.input) > 2 and n.input[2] else 0.0)
    if pads is None or value is None or (len(n.input) > 3 and n.input[3]):
        raise UnsupportedOperatorError(f"{im.name}: Pad node {n.name!r}: pads/value must be constants, no axes input")
    r = len(xs[0].shape)
    pads = [int(p) for p in pads]
    if min(pads) < 0:
        raise UnsupportedOperatorError(f"{im.name}: Pad node {n.name!r}: negative pads (cropping)")
    return call("nn.pad", xs[0], pad_width=tuple((pads[k], pads[k + r]) for k in range(r)), pad_mode=mode,
                pad_value=float(np.asarray(value).reshape(-1)[0]) if np.size(value) else 0.0, source=n.name)


@_reg("Gelu")
def _gelu(im, n, xs, a):
    if _s(a.get("approximate", "none")) != "none":
        raise UnsupportedOperatorError(f"{im.name}: Gelu node {n.name!r}: approximate={_s(a['approximate'])!r}")
    return call("nn.gelu", xs[0], source=n.name)


@_reg("Split")
def _split(im, n, xs, a):
    x = xs[0]
    ax = a.get("axis", 0) % len(x.shape)
    sizes = a.get("split") if im.opset < 13 else (im.c(n.input[1]) if len(n.input) > 1 and n.input[1] else None)
    if sizes is None and im.opset >= 13 and len(n.input) > 1 and n.input[1]:
        raise UnsupportedOperatorError(f"{im.name}: Split node {n.name!r}: the split sizes are not constants")
    if sizes is None:
        k = a.get("num_outputs", len(n.output))
        step = -(-x.shape[ax] // k)
        sizes = [min(step, x.shape[ax] - step * j) for j in range(k)]
    outs, at = [], 0
    for sz in sizes:
        outs.append(call("strided_slice", x, begin=(at,), end=(at + int(sz),), axes=(ax,), source=n.name))
        at += int(sz)
    return tuple(outs)


@_reg("LSTM")
def _lstm(im, n, xs, a):
    if _s(a.get("direction", "forward")) != "forward" or a.get("layout", 0) or "clip" in a or \
            a.get("input_forget", 0) or "activations" in a:
        raise UnsupportedOperatorError(f"{im.name}: LSTM node {n.name!r}: only forward, layout 0, default activations")
    if len(n.input) > 4 and n.input[4]:
        raise UnsupportedOperatorError(f"{im.name}: LSTM node {n.name!r}: sequence_lens")
    if len(n.input) > 7 and n.input[7]:
        raise UnsupportedOperatorError(f"{im.name}: LSTM node {n.name!r}: peepholes")
    args = [im.get(n.input[k], n) if len(n.input) > k and n.input[k] else None for k in (0, 1, 2, 3, 5, 6)]
    x, w, r, b, h0, c0 = args
    if b is None:
        b = const(np.zeros((1, 2 * w.shape[1]), np.float32))
    ins = [x, w, r, b] + ([h0 if h0 is not None else const(np.zeros((1, x.shape[1], r.shape[2]), np.float32))]
                          if (h0 is not None or c0 is not None) else []) + ([c0] if c0 is not None else [])
    y = call("nn.lstm", *ins, source=n.name)
    last = call("strided_slice", y, begin=(-1,), end=(2 ** 62,), axes=(0,), source=n.name)
    h_last = call("squeeze", last, axis=(0,), source=n.name)
    return (y, h_last, _Unsupported(f"{im.name}: LSTM node {n.name!r}: the final cell state output Y_c is used"))


class _Unsupported:
    """A placeholder output the importer cannot provide; using it is refused by name."""

    def __init__(self, why):
        self.why = why


# constant-only operators (folded at import time)
def _fold_only(fn):
    def conv(im, n, xs, a):
        if not all(isinstance(x, Const) for x in xs):
            raise UnsupportedOperatorError(f"{im.name}: {n.op_type} node {n.name!r} on non-constant data")
        return const(fn(im, n, [x.value for x in xs], a))
    return conv


def _constant(im, n, xs, a):
    import onnx
    if "value" in a:
        return onnx.numpy_helper.to_array(a["value"])
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                    ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dt)
    raise UnsupportedOperatorError(f"{im.name}: Constant node {n.name!r}: attribute(s) {sorted(a)} "
                                   "(only value, value_float(s), value_int(s))")


_CONV["Constant"] = _fold_only(_constant)
_CONV["ConstantOfShape"] = _fold_only(lambda im, n, xs, a: np.full(
    tuple(int(v) for v in xs[0]), __import__("onnx").numpy_helper.to_array(a["value"]).reshape(-1)[0]
    if "value" in a else np.float32(0)))
@_reg("Cast")
def _cast(im, n, xs, a):
    return call("cast", xs[0], dtype=_dtype(a["to"], f"{im.name}: Cast node {n.name!r}"), source=n.name)


@_reg("Shape")
def _shape(im, n, xs, a):
    r = len(xs[0].shape)
    start, end = a.get("start", 0), a.get("end", r)
    return const(np.asarray(xs[0].shape[slice(start, end)], np.int64))


def from_onnx(model_or_path, *, name: str | None = None) -> Graph:
    """Import an ONNX model (a ``ModelProto``, serialized bytes, or a path) into a :class:`Graph`.

    Raises ModelLoadError (unreadable/truncated file), DynamicShapeError (an input dimension not
    bound to a number), UnsupportedOperatorError (listing every unsupported operator of the
    model with its nodes), ShapeMismatchError (naming the operator, shapes and node)."""
    import onnx
    model, label = _load(model_or_path)
    label = name or label
    g = model.graph
    bad: dict[str, list[str]] = {}
    for nd in g.node:
        if nd.op_type not in _CONV or nd.domain not in ("", "ai.onnx"):
            bad.setdefault(nd.op_type if not nd.domain or nd.domain == "ai.onnx" else f"{nd.domain}.{nd.op_type}",
                           []).append(nd.name or "?")
    if bad:
        listed = "; ".join(f"{op} (node(s) {', '.join(ns[:5])}{', ...' if len(ns) > 5 else ''})" for op, ns in bad.items())
        raise UnsupportedOperatorError(f"{label}: unsupported ONNX operator(s): {listed}")
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        raise ModelLoadError(f"{label}: ONNX shape inference fails: {str(exc)[:300]}") from None
    g = model.graph
    im = _Importer(model, label)
    from onnx import numpy_helper
    for init in g.initializer:
        im.env[init.name] = const(numpy_helper.to_array(init), name=init.name, source=init.name)
    inputs = []
    for inp in g.input:
        if inp.name in im.env:
            continue
        if not inp.type.HasField("tensor_type"):
            raise UnsupportedOperatorError(f"{label}: input {inp.name!r} is a {inp.type.WhichOneof('value')}, "
                                           "not a tensor (only tensor inputs)")
        tt = inp.type.tensor_type
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if not d.HasField("dim_value"):
                raise DynamicShapeError(f"{label}: input {inp.name!r} dimension {k} is "
                                        f"{d.dim_param or 'unknown'!r}, not a number: bind it (static shapes only)")
            dims.append(d.dim_value)
        v = var(inp.name, dims, _dtype(tt.elem_type, f"{label}: input {inp.name!r}"), source=inp.name)
        im.env[inp.name] = v
        inputs.append(v)
    used = {i for nd in g.node for i in nd.input} | {o.name for o in g.output}
    for nd in g.node:
        xs = [im.get(i, nd) for i in nd.input if i]
        a = _attrs(nd)
        if nd.op_type == "Dropout" and len(nd.output) > 1 and nd.output[1] in used:
            raise UnsupportedOperatorError(f"{label}: Dropout node {nd.name!r}: the mask output")
        if nd.op_type == "Dropout" and len(nd.input) > 2 and nd.input[2] and \
                (im.c(nd.input[2]) is None or bool(im.c(nd.input[2]))):     # training_mode (opset 12+)
            raise UnsupportedOperatorError(f"{label}: Dropout node {nd.name!r}: training mode (only inference)")
        out = None
        if xs and all(isinstance(x, Const) for x in xs) and nd.op_type not in ("Shape",):
            out = _fold(im, nd, xs, a)
        if out is None:
            out = _CONV[nd.op_type](im, nd, xs, a)
        outs = out if isinstance(out, tuple) else (out,)
        for k in range(len(outs), len(nd.output)):
            if nd.output[k] and nd.output[k] in used:
                raise UnsupportedOperatorError(f"{label}: {nd.op_type} node {nd.name!r}: output {k} "
                                               f"({nd.output[k]!r}) is used; only the first {len(outs)} supported")
        for k, o in enumerate(outs):
            if k < len(nd.output) and nd.output[k]:
                if isinstance(o, _Unsupported):
                    if nd.output[k] in used:
                        raise UnsupportedOperatorError(o.why)
                    continue
                im.env[nd.output[k]] = o
    outputs = [im.get(o.name, g.node[-1]) for o in g.output]
    return Graph(inputs, outputs, name=(g.name or "main").replace(" ", "_").replace("-", "_") or "main")


def _fold(im, nd, xs, a):
    """Evaluate a node on constant inputs at import time (its IR semantics, or the fold-only rule)."""
    from compile.ir.graph import Graph as _G
    from compile.runtime import run
    out = _CONV[nd.op_type](im, nd, xs, a)
    vals = out if isinstance(out, tuple) else (out,)
    done = tuple(v if isinstance(v, (Const, _Unsupported)) else const(run(_G([], [v]), {})[0]) for v in vals)
    return done if isinstance(out, tuple) else done[0]
