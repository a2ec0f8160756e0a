"""ONNX -> tensor IR (``from_onnx``), TVM-style.

The model is checked and shape-inferred with the ``onnx`` package; every graph input that is not
an initializer must have static dimensions (DynamicShapeError otherwise, naming the input and the
dimension). Initializers become constants (their element types kept); a node whose inputs are
all constants is folded at import time (shape arithmetic: ``Shape``, ``ConstantOfShape``,
``Gather`` on shapes, ``Cast``, ``Concat``, ...) by the IR's own semantics, so the IR holds only
tensor computation. Every other node maps onto IR operators (Relay names) with its ONNX node name
as the source location (``OpType#k`` for the k-th node when it has no name).

Converters are registered by (domain, operator, since-version), as TVM's ``_impl_vN``: a model of
opset N uses, for each operator, the converter with the largest since-version <= N in the
operator's domain (:func:`converter`). Operators without a converter are collected over the whole
model first and refused together (UnsupportedOperatorError listing each operator with its nodes);
an attribute, element type or input a converter does not handle is refused naming the operator and
the node (by name, or by index when it has none).

Operands the static-shape IR needs as constants (a target shape, axes, sizes, ``K`` of TopK, ...)
must be constant after folding; when one is computed from graph inputs the refusal is a
:class:`DataDependentShapeError` naming those inputs, and ``from_onnx(..., bind={name: array})``
imports the model specialised to their values (they become constants; the other inputs stay
inputs), as TVM's ``freeze_params`` does for weights.

Semantics follow the ONNX operator specification of the model's opset (e.g. ``Softmax`` before
opset 13 flattens to 2-D at ``axis``; from 13 on it works along ``axis``).
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np

from compile.errors import CompileError, DynamicShapeError, ModelLoadError, UnsupportedOperatorError
from compile.ir import ops
from compile.ir.graph import Const, Graph, Value, Var, call, topological, var

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}
_DTYPES.update({k: v for k, v in {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
                                  20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn", 25: "uint2",
                                  26: "int2"}.items() if v in ops.NARROW})    # only Cast takes or gives them
_ONNX_OF = {v: k for k, v in _DTYPES.items()}


class DataDependentShapeError(UnsupportedOperatorError):
    """An operand the IR needs as a constant (shape, axes, sizes, ...) is computed from graph inputs
    (``inputs``: their names); ``from_onnx(model, bind={...})`` specialises the model to their values."""

    def __init__(self, message: str, inputs):
        super().__init__(message)
        self.inputs = tuple(inputs)


def _dtype(elem_type: int, what: str) -> str:
    """The numpy dtype of ONNX element type ``elem_type``; UnsupportedOperatorError naming ``what``."""
    if elem_type not in _DTYPES:
        import onnx
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() \
            else str(elem_type)
        raise UnsupportedOperatorError(f"{what}: element type {name} is not supported")
    return _DTYPES[elem_type]


def _const(value, name: str = "", source: str = "") -> Const:
    """A constant keeping its element type (read-only: constants are never written)."""
    a = np.asarray(value).view()                  # a read-only view: no copy of large weights
    if (a.dtype.kind not in "biuf" or a.dtype.itemsize > 8) and a.dtype.name not in ops.NARROW:
        raise UnsupportedOperatorError(f"constant {name or source!r}: element type {a.dtype} is not supported")
    a.setflags(write=False)
    return Const(tuple(a.shape), str(a.dtype), source, value=a, name=name)


def _load(model_or_path):
    import onnx
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path, "model"
    try:
        if isinstance(model_or_path, (bytes, bytearray)):
            model, label = onnx.load_from_string(bytes(model_or_path)), "model"
        else:
            path = os.fspath(model_or_path)
            model, label = onnx.load(path), os.path.basename(path)
    except FileNotFoundError:
        raise ModelLoadError(f"ONNX model {model_or_path!s}: no such file") from None
    except IsADirectoryError:
        raise ModelLoadError(f"ONNX model {model_or_path!s}: is a directory, not a file") from None
    except Exception as exc:                          # protobuf decode errors have no common base
        raise ModelLoadError(f"ONNX model {model_or_path!s} cannot be read: {type(exc).__name__}: "
                             f"{str(exc)[:200] or 'truncated or not an ONNX protobuf'}") from None
    if not model.HasField("graph"):                   # protobuf reads 0 bytes as an empty message
        where = "model" if isinstance(model_or_path, (bytes, bytearray)) else f"{model_or_path!s}"
        raise ModelLoadError(f"ONNX model {where}: has no graph (an empty file, or not an ONNX model)")
    return model, label


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _domain(d: str) -> str:
    return "" if d in ("", "ai.onnx") else d


# ----------------------------------------------------------------------------- the registry
_REGISTRY: dict[tuple[str, str], list[tuple[int, Callable]]] = {}


def _reg(*names, since: int = 1, domain: str = ""):
    """Register a converter for ONNX operators ``names`` of ``domain`` from opset ``since`` on."""
    def deco(fn):
        for n in names:
            entries = _REGISTRY.setdefault((domain, n), [])
            entries.append((since, fn))
            entries.sort(key=lambda e: e[0])
        return fn
    return deco


def converter(domain: str, op_type: str, opset: int):
    """The converter of ``op_type`` in ``domain`` for a model of that domain's ``opset``: the one
    registered with the largest since-version <= ``opset``; None when there is none."""
    best = None
    for since, fn in _REGISTRY.get((_domain(domain), op_type), ()):
        if since <= opset:
            best = fn
    return best


def claimed() -> dict[tuple[str, str], list[int]]:
    """{(domain, operator): [since-versions]} of every registered converter ('' is ai.onnx)."""
    return {k: [s for s, _ in v] for k, v in sorted(_REGISTRY.items())}


# ----------------------------------------------------------------------------- the importer
class _Unsupported:
    """A placeholder output the importer cannot provide; using it is refused by name."""

    def __init__(self, why):
        self.why = why


class _Importer:
    def __init__(self, model, name: str):
        self.model, self.name = model, name
        self.opsets = {_domain(o.domain): o.version for o in model.opset_import}
        self.opset = self.opsets.get("", 13)
        self.env: dict[str, Value] = {}
        self.k = -1            # the index of the node being converted
        self.n = None          # the node being converted
        self.src = ""

    # -- naming
    def where(self, n=None) -> str:
        n = n or self.n
        return f"node {n.name!r}" if n.name else f"node #{self.k}"

    def refuse(self, why: str, n=None):
        n = n or self.n
        raise UnsupportedOperatorError(f"{self.name}: {n.op_type} {self.where(n)}: {why}")

    # -- operands
    def get(self, name, node) -> Value:
        if name not in self.env:
            raise CompileError(f"{self.name}: {node.op_type} {self.where(node)} uses {name!r}, which nothing defines")
        v = self.env[name]
        if isinstance(v, _Unsupported):
            raise UnsupportedOperatorError(v.why)
        return v

    def arg(self, k: int):
        """The Value of the current node's input ``k``, None when absent (or named '')."""
        n = self.n
        return self.get(n.input[k], n) if len(n.input) > k and n.input[k] else None

    def c(self, name):
        """The constant array of value ``name`` (None when it is not constant)."""
        v = self.env.get(name)
        return v.value if isinstance(v, Const) else None

    def const(self, k: int, what: str, default=None):
        """The constant array of the current node's input ``k`` (``default`` when absent);
        DataDependentShapeError naming the graph inputs it is computed from otherwise."""
        v = self.arg(k)
        if v is None:
            return default
        if isinstance(v, Const):
            return v.value
        deps = sorted({u.name for u in topological([v], nodes_only=False) if isinstance(u, Var)})
        n = self.n
        raise DataDependentShapeError(
            f"{self.name}: {n.op_type} {self.where(n)}: {what} (input {k}, {n.input[k]!r}) is not a constant "
            f"(computed from graph input(s) {', '.join(map(repr, deps))}): bind them to specialise the model",
            deps)

    def op(self, name, *args, **attrs):
        """An IR node at the current node (its dtype by :func:`compile.ir.ops.result_dtype`). The
        narrow element types (bfloat16, float8, float4, int4, int2) only go through casts."""
        if name not in ("cast", "saturate_cast"):
            narrow = sorted({a.dtype for a in args if a.dtype in ops.NARROW})
            if narrow:
                self.refuse(f"{self.n.op_type} on element type {', '.join(narrow)} (only casts take the narrow types)")
        node = call(name, *args, source=self.src, **attrs)
        node.dtype = ops.result_dtype(name, [a.dtype for a in args], node.attrs, self.src)
        if node.dtype in ops.NARROW and name not in ("cast", "saturate_cast"):
            self.refuse(f"{self.n.op_type} giving element type {node.dtype} (only casts take the narrow types)")
        return node

    def scalar(self, value, like: Value) -> Const:
        return _const(np.asarray(value, like.dtype))

    def fold(self, op, args, **attrs):
        if all(isinstance(a, Const) for a in args):
            full = ops.normalise_attrs(op, attrs)
            return _const(ops.evaluate(op, [a.value for a in args], full))
        return None


def _pads(onnx_pads, k=2):
    if not onnx_pads:
        return (0, 0, 0, 0)
    p = list(onnx_pads)
    return (p[0], p[1], p[k], p[k + 1])            # ONNX [t, l, b, r] -> IR (top, left, bottom, right)


def _rank(v: Value) -> int:
    return len(v.shape)


# ----------------------------------------------------------------------------- elementwise
_UNARY = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Sqrt": "sqrt", "Neg": "negative",
          "Abs": "abs", "Erf": "erf", "HardSwish": "nn.hardswish", "Identity": None, "Log": "log",
          "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Sin": "sin",
          "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
          "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Softplus": "nn.softplus", "Softsign": "nn.softsign",
          "Mish": "nn.mish", "IsNaN": "isnan", "Not": "logical_not", "BitwiseNot": "bitwise_not"}
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power",
           "Equal": "equal", "Less": "less", "LessOrEqual": "less_equal", "Greater": "greater",
           "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
           "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}
# operator -> (IR operator, {ONNX attribute: IR attribute})
_UNARY_ATTRS = {"LeakyRelu": ("nn.leaky_relu", {"alpha": "alpha"}), "Elu": ("nn.elu", {"alpha": "alpha"}),
                "Selu": ("nn.selu", {"alpha": "alpha", "gamma": "gamma"}), "Celu": ("nn.celu", {"alpha": "alpha"}),
                "HardSigmoid": ("nn.hardsigmoid", {"alpha": "alpha", "beta": "beta"}),
                "ThresholdedRelu": ("nn.thresholded_relu", {"alpha": "alpha"}),
                "Shrink": ("nn.shrink", {"bias": "bias", "lambd": "lambd"})}
_STRINGS = {"Equal"}     # comparisons also defined on strings (refused: no string tensors)


@_reg(*_UNARY)
def _unary(im, n, xs, a):
    op = _UNARY[n.op_type]
    return xs[0] if op is None else im.op(op, xs[0])


@_reg(*_UNARY_ATTRS)
def _unary_attrs(im, n, xs, a):
    op, names = _UNARY_ATTRS[n.op_type]
    return im.op(op, xs[0], **{names[k]: float(v) for k, v in a.items() if k in names})


@_reg("Dropout")
def _dropout(im, n, xs, a):
    if len(n.input) > 2 and n.input[2]:                                    # training_mode (opset 12+)
        t = im.c(n.input[2])
        if t is None or bool(np.asarray(t).reshape(-1)[0]):
            im.refuse("training mode (only inference)")
    if im.opset < 7 and not a.get("is_test", 0):
        im.refuse("training mode (is_test=0)")
    mask = _const(np.ones(xs[0].shape, bool))              # inference: every element kept
    return xs[0], mask


def _legacy_broadcast(im, n, a, x, y):
    """Before opset 7, ``broadcast=1`` aligns the second operand at ``axis`` (default: trailing)."""
    if not a.get("broadcast", 0) or "axis" not in a or _rank(y) == _rank(x):
        return y
    ax = a["axis"] % _rank(x)
    shape = (1,) * ax + tuple(y.shape) + (1,) * (_rank(x) - ax - _rank(y))
    return im.op("reshape", y, newshape=shape)


@_reg(*_BINARY)
def _binary(im, n, xs, a):
    y = _legacy_broadcast(im, n, a, xs[0], xs[1]) if im.opset < 7 else xs[1]
    return im.op(_BINARY[n.op_type], xs[0], y)


@_reg("Mod", since=10)
def _mod(im, n, xs, a):
    return im.op("mod", xs[0], xs[1], fmod=bool(a.get("fmod", 0)))  # fmod=0 on floats: opset 28's floor rule


@_reg("BitShift", since=11)
def _bitshift(im, n, xs, a):
    d = _s(a["direction"])
    return im.op("left_shift" if d == "LEFT" else "right_shift", xs[0], xs[1])


@_reg("PRelu")
def _prelu(im, n, xs, a):
    x, slope = xs[0], xs[1]
    if im.opset < 7 and _rank(slope) == 1 and _rank(x) > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = im.op("reshape", slope, newshape=(-1,) + (1,) * (_rank(x) - 2))   # opset 6: one slope per channel
    return im.op("nn.prelu", x, slope)


@_reg("IsInf", since=10)
def _isinf(im, n, xs, a):
    return im.op("isinf", xs[0], detect_positive=bool(a.get("detect_positive", 1)),
                 detect_negative=bool(a.get("detect_negative", 1)))


@_reg("Gelu", since=20)
def _gelu(im, n, xs, a):
    approx = _s(a.get("approximate", "none"))
    if approx not in ("none", "tanh"):
        im.refuse(f"approximate={approx!r}")
    return im.op("nn.gelu" if approx == "none" else "nn.gelu_tanh", xs[0])


@_reg("Swish", since=24)
def _swish(im, n, xs, a):
    alpha = float(a.get("alpha", 1.0))
    if alpha == 1.0:
        return im.op("nn.silu", xs[0])
    return im.op("multiply", xs[0], im.op("sigmoid", im.op("multiply", xs[0], im.scalar(alpha, xs[0]))))


@_reg("Sum", "Max", "Min", "Mean")
def _variadic(im, n, xs, a):
    op = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}[n.op_type]
    out = xs[0]
    for x in xs[1:]:
        out = im.op(op, out, x)
    if n.op_type == "Mean":
        out = im.op("divide", out, im.scalar(len(xs), out))
    return out


@_reg("Where", since=9)
def _where(im, n, xs, a):
    return im.op("where", xs[0], xs[1], xs[2])


@_reg("Clip")
def _clip(im, n, xs, a):
    x = xs[0]
    if im.opset < 11:
        return im.op("clip", x, a_min=float(a.get("min", -np.inf)), a_max=float(a.get("max", np.inf)))
    lo, hi = im.arg(1), im.arg(2)
    if all(v is None or isinstance(v, Const) for v in (lo, hi)):
        return im.op("clip", x, a_min=float(lo.value) if lo is not None else -np.inf,
                     a_max=float(hi.value) if hi is not None else np.inf)
    y = x if lo is None else im.op("maximum", x, lo)           # runtime bounds: min(max(x, lo), hi)
    return y if hi is None else im.op("minimum", y, hi)


@_reg("Cast")
def _cast(im, n, xs, a):
    to = a["to"]
    if isinstance(to, (str, bytes)):
        im.refuse(f"to={_s(to)!r} (opset 1 string type names)")
    dt = _dtype(to, f"{im.name}: Cast {im.where()}")
    return _cast_to(im, xs[0], dt, a)


def _cast_to(im, x, dt, a):
    """Cast to ``dt``: to float8 / float4 saturating unless saturate=0 (ONNX's default is 1)."""
    if dt in ops.NARROW_FLOATS and dt != "bfloat16" and a.get("saturate", 1):
        return im.fold("saturate_cast", [x], dtype=dt) or im.op("saturate_cast", x, dtype=dt)
    if "round_mode" in a:
        im.refuse("round_mode (FLOAT8E8M0 only)")
    return im.fold("cast", [x], dtype=dt) or im.op("cast", x, dtype=dt)


@_reg("BitCast", since=26)
def _bitcast(im, n, xs, a):
    x = xs[0]
    dt = _dtype(a["to"], f"{im.name}: BitCast {im.where()}")
    if np.dtype(dt).itemsize != np.dtype(x.dtype).itemsize or dt in ops.NARROW or x.dtype in ops.NARROW:
        im.refuse(f"from {x.dtype} to {dt} (equal widths, byte-sized types only)")
    return im.op("bitcast", x, dtype=dt)


@_reg("CastLike", since=15)
def _cast_like(im, n, xs, a):
    return _cast_to(im, xs[0], xs[1].dtype, a)      # only the target's type matters: a constant stays constant


# ----------------------------------------------------------------------------- convolution and pooling
def _auto_pads(im, n, a, in_sp, kernel, strides, dilations):
    """Explicit ONNX pads (befores then afters) of a window operator, from ``pads`` or ``auto_pad``
    (SAME_UPPER/SAME_LOWER: output = ceil(input / stride), the odd pad at the end / the start)."""
    nd = len(kernel)
    mode = _s(a.get("auto_pad", "NOTSET"))
    if mode == "VALID":
        return (0,) * (2 * nd)
    if mode == "NOTSET":
        p = tuple(int(v) for v in a.get("pads", (0,) * (2 * nd)))
        if len(p) != 2 * nd:
            im.refuse(f"pads {p} for {nd} spatial axes")
        return p
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        im.refuse(f"auto_pad={mode!r}")
    before, after = [], []
    for d, k, s, dl in zip(in_sp, kernel, strides, dilations):
        total = max(0, (-(-d // s) - 1) * s + (k - 1) * dl + 1 - d)
        small, big = total // 2, total - total // 2
        before.append(small if mode == "SAME_UPPER" else big)
        after.append(big if mode == "SAME_UPPER" else small)
    return tuple(before + after)


def _window_attrs(im, n, a, x, kernel):
    nd = len(kernel)
    strides = tuple(int(v) for v in a.get("strides", (1,) * nd))
    dil = tuple(int(v) for v in a.get("dilations", (1,) * nd))
    if len(strides) != nd or len(dil) != nd:
        im.refuse(f"strides {strides} / dilations {dil} for {nd} spatial axes")
    return strides, dil, _auto_pads(im, n, a, x.shape[2:], kernel, strides, dil)


@_reg("Conv")
def _conv(im, n, xs, a):
    x, w = xs[0], xs[1]
    nd = _rank(w) - 2
    if nd not in (1, 2, 3) or _rank(x) != nd + 2:
        im.refuse(f"{nd}-D convolution (1-D, 2-D and 3-D are supported)")
    strides, dil, pads = _window_attrs(im, n, a, x, w.shape[2:])
    group = int(a.get("group", 1))
    if nd == 2:
        y = im.op("nn.conv2d", x, w, strides=strides, padding=_pads(pads), dilation=dil, groups=group)
    else:
        y = im.op(f"nn.conv{nd}d", x, w, strides=strides, padding=pads, dilation=dil, groups=group)
    return im.op("nn.bias_add", y, xs[2]) if len(xs) > 2 else y


@_reg("ConvTranspose")
def _conv_transpose(im, n, xs, a):
    x, w = xs[0], xs[1]
    nd = _rank(w) - 2
    if nd not in (1, 2, 3) or _rank(x) != nd + 2:
        im.refuse(f"{nd}-D transposed convolution (1-D, 2-D and 3-D are supported)")
    kernel = w.shape[2:]
    strides = tuple(int(v) for v in a.get("strides", (1,) * nd))
    dil = tuple(int(v) for v in a.get("dilations", (1,) * nd))
    outpad = tuple(int(v) for v in a.get("output_padding", (0,) * nd))
    mode = _s(a.get("auto_pad", "NOTSET"))
    if "output_shape" in a or mode in ("SAME_UPPER", "SAME_LOWER"):
        out = tuple(int(v) for v in a["output_shape"][-nd:]) if "output_shape" in a else \
            tuple(d * s for d, s in zip(x.shape[2:], strides))
        before, after = [], []
        for d, k, s, dl, op, o in zip(x.shape[2:], kernel, strides, dil, outpad, out):
            total = s * (d - 1) + op + (k - 1) * dl + 1 - o
            if mode == "SAME_UPPER":
                before.append(total // 2)
                after.append(total - total // 2)
            else:
                before.append(total - total // 2)
                after.append(total // 2)
        pads = tuple(before + after)
    elif mode == "VALID":
        pads = (0,) * (2 * nd)
    elif mode == "NOTSET":
        pads = tuple(int(v) for v in a.get("pads", (0,) * (2 * nd)))
    else:
        im.refuse(f"auto_pad={mode!r}")
    y = im.op(f"nn.conv{nd}d_transpose", x, w, strides=strides, padding=pads, dilation=dil,
              groups=int(a.get("group", 1)), output_padding=outpad)
    return im.op("nn.bias_add", y, xs[2]) if len(xs) > 2 else y


@_reg("MaxPool", "AveragePool", "LpPool")
def _pool(im, n, xs, a):
    x = xs[0]
    kernel = tuple(int(v) for v in a["kernel_shape"])
    nd = len(kernel)
    if nd not in (1, 2, 3) or _rank(x) != nd + 2:
        im.refuse(f"{nd}-D pooling (1-D, 2-D and 3-D are supported)")
    if n.op_type == "MaxPool" and int(a.get("storage_order", 0)):
        im.refuse("storage_order=1")
    strides, dil, pads = _window_attrs(im, n, a, x, kernel)
    ceil = bool(a.get("ceil_mode", 0))
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[n.op_type]
    extra = {"count_include_pad": bool(a.get("count_include_pad", 0))} if kind == "avg" else \
        ({"p": int(a.get("p", 2))} if kind == "lp" else {})
    if nd == 2 and all(d == 1 for d in dil) and kind != "lp":
        y = im.op(f"nn.{kind}_pool2d", x, pool_size=kernel, strides=strides, padding=_pads(pads), ceil_mode=ceil,
                  **extra)
    elif nd == 2 and kind != "lp":             # dilated 2-D pooling: as 3-D pooling over a unit depth axis
        x3 = im.op("expand_dims", x, axis=2)
        y = im.op(f"nn.{kind}_pool3d", x3, pool_size=(1,) + kernel, strides=(1,) + strides,
                  padding=(0, pads[0], pads[1], 0, pads[2], pads[3]), dilation=(1,) + dil, ceil_mode=ceil, **extra)
        y = im.op("squeeze", y, axis=(2,))
    else:
        y = im.op(f"nn.{kind}_pool{nd}d", x, pool_size=kernel, strides=strides, padding=pads, dilation=dil,
                  ceil_mode=ceil, **extra)
    indices = _Unsupported(f"{im.name}: {n.op_type} {im.where()}: the Indices output is used")
    return y, indices


@_reg("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(im, n, xs, a):
    x = xs[0]
    if _rank(x) == 4 and n.op_type == "GlobalAveragePool":
        return im.op("nn.global_avg_pool2d", x)
    axes = tuple(range(2, _rank(x)))
    if n.op_type == "GlobalAveragePool":
        return im.op("mean", x, axis=axes, keepdims=True)
    if n.op_type == "GlobalMaxPool":
        return im.op("max", x, axis=axes, keepdims=True)
    p = float(a.get("p", 2))
    s = im.op("sum", im.op("power", im.op("abs", x), im.scalar(p, x)), axis=axes, keepdims=True)
    return im.op("power", s, im.scalar(1.0 / p, x))


# ----------------------------------------------------------------------------- normalisation
@_reg("BatchNormalization")
def _bn(im, n, xs, a):
    if a.get("training_mode", 0) and im.opset >= 14:
        return _bn_training(im, n, xs, a)
    if a.get("training_mode", 0):
        im.refuse("training_mode=1 before opset 14")
    if im.opset < 7 and not a.get("is_test", 0):
        im.refuse("is_test=0 (only inference)")
    if im.opset < 9 and not a.get("spatial", 1):
        im.refuse("spatial=0")
    y = im.op("nn.batch_norm", *xs[:5], epsilon=float(a.get("epsilon", 1e-5)))
    stats = _Unsupported(f"{im.name}: BatchNormalization {im.where()}: a training statistics output is used")
    return (y,) + (stats,) * 4


def _bn_training(im, n, xs, a):
    """BatchNormalization with training_mode=1 (opset 14+): Y from the batch's own mean and
    population variance; running_mean / running_var = input * momentum + batch * (1 - momentum)."""
    x, scale, bias, mean_in, var_in = xs[:5]
    c = x.shape[1]
    axes = tuple(k for k in range(_rank(x)) if k != 1)
    mu = im.op("mean", x, axis=axes, keepdims=True)
    d = im.op("subtract", x, mu)
    var = im.op("mean", im.op("multiply", d, d), axis=axes, keepdims=True)
    mu_c, var_c = im.op("reshape", mu, newshape=(c,)), im.op("reshape", var, newshape=(c,))
    y = im.op("nn.batch_norm", x, scale, bias, mu_c, var_c, epsilon=float(a.get("epsilon", 1e-5)))
    mom = float(a.get("momentum", 0.9))

    def running(old, cur):
        return im.op("add", im.op("multiply", old, im.scalar(mom, old)),
                     im.op("multiply", im.op("cast", cur, dtype=old.dtype), im.scalar(1 - mom, old)))
    return y, running(mean_in, mu_c), running(var_in, var_c)


@_reg("InstanceNormalization", since=6)
def _instance_norm(im, n, xs, a):
    return im.op("nn.instance_norm", xs[0], xs[1], xs[2], epsilon=float(a.get("epsilon", 1e-5)))


@_reg("GroupNormalization", since=18)
def _group_norm(im, n, xs, a):
    x, scale, bias = xs[:3]
    g = int(a["num_groups"])
    c = x.shape[1]
    if im.opset < 21 and scale.shape == (g,) and g != c:     # opset 18: scale and bias per group
        idx = _const(np.arange(c) // (c // g))
        scale, bias = im.op("take", scale, idx), im.op("take", bias, idx)
    if int(a.get("stash_type", 1)) != 1:
        im.refuse(f"stash_type={a['stash_type']}")
    return im.op("nn.group_norm", x, scale, bias, num_groups=g, epsilon=float(a.get("epsilon", 1e-5)))


@_reg("LayerNormalization", since=17)
def _layer_norm(im, n, xs, a):
    x, axis, eps = xs[0], a.get("axis", -1), float(a.get("epsilon", 1e-5))
    axes = tuple(range(axis % _rank(x), _rank(x)))
    scale = xs[1]
    beta = xs[2] if len(xs) > 2 else _const(np.zeros(scale.shape, scale.dtype))
    if tuple(scale.shape) != tuple(x.shape[axes[0]:]) or tuple(beta.shape) != tuple(x.shape[axes[0]:]):
        shape = tuple(x.shape[axes[0]:])                    # scale / bias broadcast onto the normalised axes
        scale = scale if tuple(scale.shape) == shape else im.op("broadcast_to", scale, shape=shape)
        beta = beta if tuple(beta.shape) == shape else im.op("broadcast_to", beta, shape=shape)
    y = im.op("nn.layer_norm", x, scale, beta, axis=axis, epsilon=eps)
    if not any(len(n.output) > k and n.output[k] for k in (1, 2)):
        return y
    # the optional outputs Mean and InvStdDev (shapes keep the normalised axes as 1)
    mu = im.op("mean", x, axis=axes, keepdims=True)
    d = im.op("subtract", x, mu)
    v = im.op("mean", im.op("multiply", d, d), axis=axes, keepdims=True)
    std = im.op("sqrt", im.op("add", v, im.scalar(eps, x)))
    return y, mu, im.op("divide", im.scalar(1, x), std)


@_reg("RMSNormalization", since=23)
def _rms_norm(im, n, xs, a):
    x, scale = xs[0], xs[1]
    axes = tuple(range(a.get("axis", -1) % _rank(x), _rank(x)))
    ms = im.op("mean", im.op("multiply", x, x), axis=axes, keepdims=True)
    rms = im.op("sqrt", im.op("add", ms, im.scalar(float(a.get("epsilon", 1e-5)), x)))
    return im.op("multiply", im.op("divide", x, rms), scale)


@_reg("LpNormalization")
def _lp_norm(im, n, xs, a):
    x = xs[0]
    ax, p = a.get("axis", -1) % _rank(x), int(a.get("p", 2))
    if p not in (1, 2):
        im.refuse(f"p={p} (1 or 2)")
    norm = im.op("sum", im.op("abs", x), axis=(ax,), keepdims=True) if p == 1 else \
        im.op("sqrt", im.op("sum", im.op("multiply", x, x), axis=(ax,), keepdims=True))
    zero = im.scalar(0, x)                                   # a zero norm gives 0 (not 0/0)
    return im.op("where", im.op("equal", norm, zero), zero, im.op("divide", x, norm))


@_reg("MeanVarianceNormalization", since=9)
def _mvn(im, n, xs, a):
    x = xs[0]
    axes = tuple(int(v) for v in a.get("axes", (0, 2, 3)))
    mu = im.op("mean", x, axis=axes, keepdims=True)
    d = im.op("subtract", x, mu)
    var = im.op("subtract", im.op("mean", im.op("multiply", x, x), axis=axes, keepdims=True), im.op("multiply", mu, mu))
    return im.op("divide", d, im.op("add", im.op("sqrt", var), im.scalar(1e-9, x)))


@_reg("LRN")
def _lrn(im, n, xs, a):
    return im.op("nn.lrn", xs[0], size=int(a["size"]), axis=1, alpha=float(a.get("alpha", 1e-4)),
                 beta=float(a.get("beta", 0.75)), bias=float(a.get("bias", 1.0)))


def _coerced(im, x, axis, op):
    """``op`` along the last axis of x flattened to 2-D at ``axis`` (Softmax & co before opset 13)."""
    ax = axis % max(_rank(x), 1)
    if ax == _rank(x) - 1:
        return im.op(op, x, axis=-1)
    flat = im.op("reshape", x, newshape=(int(np.prod(x.shape[:ax])), -1))
    return im.op("reshape", im.op(op, flat, axis=-1), newshape=x.shape)


@_reg("Softmax", "LogSoftmax", "Hardmax")
def _softmax(im, n, xs, a):
    op = {"Softmax": "nn.softmax", "LogSoftmax": "nn.log_softmax", "Hardmax": "hardmax"}[n.op_type]
    if im.opset >= 13:
        return im.op(op, xs[0], axis=a.get("axis", -1))
    return _coerced(im, xs[0], a.get("axis", 1), op)


# ----------------------------------------------------------------------------- dense / matmul
@_reg("Gemm")
def _gemm(im, n, xs, a):
    x, w = xs[0], xs[1]
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if a.get("transA", 0):
        x = im.op("transpose", x, axes=(1, 0))
    if not a.get("transB", 0):
        w = im.fold("transpose", [w], axes=(1, 0)) or im.op("transpose", w, axes=(1, 0))
    y = im.op("nn.dense", x, w)
    if alpha != 1.0:
        y = im.op("multiply", y, im.scalar(alpha, y))
    if len(xs) > 2:
        b = xs[2] if beta == 1.0 else im.op("multiply", xs[2], im.scalar(beta, xs[2]))
        y = im.op("nn.bias_add", y, b, axis=-1) if len(b.shape) == 1 and b.shape[0] == y.shape[-1] \
            else im.op("add", y, b)
    return y


@_reg("MatMul")
def _matmul(im, n, xs, a):
    if len(xs[1].shape) == 2 and isinstance(xs[1], Const) and _rank(xs[0]) >= 1 and xs[0].dtype == xs[1].dtype \
            and xs[0].dtype.startswith("float"):
        return im.op("nn.dense", xs[0], _const(np.ascontiguousarray(xs[1].value.T)))
    return im.op("nn.matmul", xs[0], xs[1])


@_reg("Einsum", since=12)
def _einsum(im, n, xs, a):
    eq = _s(a["equation"]).replace(" ", "")
    return im.op("einsum", *xs, equation=eq)


@_reg("Det", since=11)
def _det(im, n, xs, a):
    return im.op("det", xs[0])


# ----------------------------------------------------------------------------- layout
def _reshape_target(in_shape, target, allowzero=False):
    t = [int(v) for v in target]
    return tuple(in_shape[k] if v == 0 and not allowzero else v for k, v in enumerate(t))


@_reg("Reshape")
def _reshape(im, n, xs, a):
    shape = im.const(1, "the target shape") if im.opset >= 5 else a["shape"]
    return im.op("reshape", xs[0], newshape=_reshape_target(xs[0].shape, shape, a.get("allowzero", 0)))


@_reg("Flatten")
def _flatten(im, n, xs, a):
    ax = a.get("axis", 1) % (_rank(xs[0]) or 1) if a.get("axis", 1) != _rank(xs[0]) else _rank(xs[0])
    lead = int(np.prod(xs[0].shape[:ax]))
    return im.op("reshape", xs[0], newshape=(lead, int(np.prod(xs[0].shape[ax:]))))


@_reg("Transpose")
def _transpose(im, n, xs, a):
    return im.op("transpose", xs[0], axes=tuple(a.get("perm", ())))


@_reg("Concat")
def _concat(im, n, xs, a):
    return im.op("concatenate", *xs, axis=a["axis"])


def _axes(im, n, a, k=1, what="axes"):
    if "axes" in a:
        return tuple(int(v) for v in a["axes"])
    v = im.const(k, what)
    return None if v is None else tuple(int(x) for x in np.ravel(v))


@_reg("Squeeze")
def _squeeze(im, n, xs, a):
    return im.op("squeeze", xs[0], axis=_axes(im, n, a))


@_reg("Unsqueeze")
def _unsqueeze(im, n, xs, a):
    out = xs[0]
    axes = _axes(im, n, a)
    rank = _rank(out) + len(axes)
    for ax in sorted(x % rank for x in axes):
        out = im.op("expand_dims", out, axis=ax)
    return out


@_reg("Expand", since=8)
def _expand(im, n, xs, a):
    shape = tuple(int(v) for v in im.const(1, "the shape"))
    return im.op("broadcast_to", xs[0], shape=shape)


@_reg("Tile", since=6)
def _tile(im, n, xs, a):
    reps = tuple(int(v) for v in im.const(1, "repeats"))
    return im.op("tile", xs[0], reps=reps)


@_reg("Gather")
def _gather(im, n, xs, a):
    return im.op("take", xs[0], xs[1], axis=a.get("axis", 0))


@_reg("GatherElements", since=11)
def _gather_elements(im, n, xs, a):
    return im.op("gather", xs[0], xs[1], axis=a.get("axis", 0))


@_reg("GatherND", since=11)
def _gather_nd(im, n, xs, a):
    return im.op("gather_nd", xs[0], xs[1], batch_dims=int(a.get("batch_dims", 0)))


@_reg("ScatterElements", "Scatter", since=9)
def _scatter_elements(im, n, xs, a):
    return im.op("scatter_elements", xs[0], xs[1], xs[2], axis=a.get("axis", 0),
                 reduction=_s(a.get("reduction", "none")))


@_reg("ScatterND", since=11)
def _scatter_nd(im, n, xs, a):
    return im.op("scatter_nd", xs[0], xs[1], xs[2], reduction=_s(a.get("reduction", "none")))


@_reg("DepthToSpace")
def _depth_to_space(im, n, xs, a):
    return im.op("nn.depth_to_space", xs[0], block_size=int(a["blocksize"]), mode=_s(a.get("mode", "DCR")))


@_reg("SpaceToDepth")
def _space_to_depth(im, n, xs, a):
    return im.op("nn.space_to_depth", xs[0], block_size=int(a["blocksize"]), mode=_s(a.get("mode", "DCR")))


@_reg("Trilu", since=14)
def _trilu(im, n, xs, a):
    k = im.const(1, "k", np.int64(0))
    return im.op("trilu", xs[0], k=int(np.ravel(k)[0]), upper=bool(a.get("upper", 1)))


@_reg("CumSum", since=11)
def _cumsum(im, n, xs, a):
    ax = int(np.ravel(im.const(1, "axis"))[0])
    return im.op("cumsum", xs[0], axis=ax, exclusive=bool(a.get("exclusive", 0)), reverse=bool(a.get("reverse", 0)))


@_reg("CumProd", since=26)
def _cumprod(im, n, xs, a):
    ax = int(np.ravel(im.const(1, "axis"))[0])
    return im.op("cumprod", xs[0], axis=ax, exclusive=bool(a.get("exclusive", 0)), reverse=bool(a.get("reverse", 0)))


@_reg("TopK")
def _topk(im, n, xs, a):
    x = xs[0]
    k = int(a["k"]) if im.opset < 10 else int(np.ravel(im.const(1, "K"))[0])
    kw = dict(k=k, axis=int(a.get("axis", -1)), largest=bool(a.get("largest", 1)))
    if not a.get("sorted", 1):
        pass                                              # unsorted output may be in any order: sorted is one
    return im.op("topk", x, ret_type="values", **kw), im.op("topk", x, ret_type="indices", **kw)


@_reg("OneHot", since=9)
def _one_hot(im, n, xs, a):
    depth = int(np.ravel(im.const(1, "depth"))[0])
    return im.op("one_hot", xs[0], xs[2], depth=depth, axis=int(a.get("axis", -1)))


@_reg("ArgMax", "ArgMin")
def _arg(im, n, xs, a):
    return im.op("argmax" if n.op_type == "ArgMax" else "argmin", xs[0], axis=int(a.get("axis", 0)),
                 keepdims=bool(a.get("keepdims", 1)), select_last_index=bool(a.get("select_last_index", 0)))


@_reg("Compress", since=9)
def _compress(im, n, xs, a):
    cond = np.asarray(im.const(1, "the condition")).astype(bool).ravel()
    x = xs[0]
    if "axis" not in a:
        x = im.op("reshape", x, newshape=(-1,))
    ax = int(a.get("axis", 0)) % _rank(x)
    cond = cond[:x.shape[ax]]
    return im.op("take", x, _const(np.nonzero(cond)[0].astype(np.int64)), axis=ax)


# ----------------------------------------------------------------------------- reductions
_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod",
           "ReduceLogSumExp": "logsumexp", "ReduceL1": None, "ReduceL2": None, "ReduceLogSum": None,
           "ReduceSumSquare": None}
_AXES_INPUT = {"ReduceSum": 13}          # the opset from which axes are an input (others: 18)


@_reg(*_REDUCE)
def _reduce(im, n, xs, a):
    x = xs[0]
    if im.opset >= _AXES_INPUT.get(n.op_type, 18):
        axes = _axes(im, n, {}, 1)
    else:
        axes = tuple(int(v) for v in a["axes"]) if "axes" in a else None
    keep = bool(a.get("keepdims", 1))
    if axes is not None and len(axes) == 0:
        axes = None
        if a.get("noop_with_empty_axes", 0):
            return x
    op = _REDUCE[n.op_type]
    if op is not None:
        return im.op(op, x, axis=axes, keepdims=keep)
    if n.op_type == "ReduceL1":
        return im.op("sum", im.op("abs", x), axis=axes, keepdims=keep)
    sq = im.op("sum", im.op("multiply", x, x), axis=axes, keepdims=keep) if n.op_type != "ReduceLogSum" else None
    if n.op_type == "ReduceSumSquare":
        return sq
    if n.op_type == "ReduceL2":
        if x.dtype.startswith("float"):
            return im.op("sqrt", sq)
        return im.op("cast", im.op("sqrt", im.op("cast", sq, dtype="float64")), dtype=x.dtype)
    return im.op("log", im.op("sum", x, axis=axes, keepdims=keep))          # ReduceLogSum


# ----------------------------------------------------------------------------- slicing, splitting, padding
@_reg("Slice")
def _slice(im, n, xs, a):
    if im.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = im.const(1, "starts"), im.const(2, "ends")
        axes, steps = im.const(3, "axes"), im.const(4, "steps")
    big = 2 ** 62
    clip = lambda v: max(min(int(v), big), -big)     # noqa: E731  (ONNX uses INT64_MAX for "to the end")
    return im.op("strided_slice", xs[0], begin=tuple(clip(v) for v in np.ravel(starts)),
                 end=tuple(clip(v) for v in np.ravel(ends)),
                 strides=tuple(int(v) for v in np.ravel(steps)) if steps is not None else (),
                 axes=tuple(int(v) for v in np.ravel(axes)) if axes is not None else ())


@_reg("Pad")
def _pad_op(im, n, xs, a):
    mode = _s(a.get("mode", "constant"))
    if mode not in ("constant", "edge", "reflect", "wrap"):
        im.refuse(f"mode {mode!r}")
    x = xs[0]
    r = _rank(x)
    if im.opset < 11:
        pads, value, axes = a.get("pads", a.get("paddings")), a.get("value", 0.0), None
    else:
        pads, value = im.const(1, "pads"), im.const(2, "the constant value", 0.0)
        axes = im.const(3, "axes")
    pads = [int(p) for p in np.ravel(pads)]
    axes = list(range(r)) if axes is None else [int(v) % r for v in np.ravel(axes)]
    if len(pads) != 2 * len(axes):
        im.refuse(f"{len(pads)} pads for {len(axes)} axes")
    width = [[0, 0] for _ in range(r)]
    for k, ax in enumerate(axes):
        width[ax] = [pads[k], pads[k + len(axes)]]
    if any(p < 0 for w in width for p in w):                 # negative pads crop first
        x = im.op("strided_slice", x, begin=tuple(max(-w[0], 0) for w in width),
                  end=tuple(d - max(-w[1], 0) for d, w in zip(x.shape, width)), axes=tuple(range(r)))
        width = [[max(w[0], 0), max(w[1], 0)] for w in width]
    if not any(p for w in width for p in w):
        return x
    if mode == "wrap":
        for ax, (b, e) in enumerate(width):                  # wrap: concatenate the slices that wrap around
            if b or e:
                d = x.shape[ax]
                parts = []
                if b:
                    parts += [im.op("strided_slice", x, begin=(d - (b % d or d),), end=(d,), axes=(ax,))] + \
                             [x] * (b // d - (1 if b % d == 0 else 0))
                parts.append(x)
                if e:
                    parts += [x] * (e // d - (1 if e % d == 0 else 0)) + \
                             [im.op("strided_slice", x, begin=(0,), end=(e % d or d,), axes=(ax,))]
                x = im.op("concatenate", *parts, axis=ax)
        return x
    pv = np.asarray(value).reshape(-1)
    return im.op("nn.pad", x, pad_width=tuple(tuple(w) for w in width), pad_mode=mode,
                 pad_value=(pv[0].item() if pv.size else 0.0))


@_reg("Split")
def _split(im, n, xs, a):
    x = xs[0]
    ax = a.get("axis", 0) % _rank(x)
    sizes = a.get("split") if im.opset < 13 else im.const(1, "the split sizes")
    if sizes is None:
        k = a.get("num_outputs", len(n.output))
        step = -(-x.shape[ax] // k)
        sizes = [min(step, x.shape[ax] - step * j) for j in range(k)]
    sizes = [int(v) for v in np.ravel(sizes)]
    if sum(sizes) != x.shape[ax] or len(sizes) != len(n.output):
        im.refuse(f"split sizes {sizes} for an axis of {x.shape[ax]} and {len(n.output)} outputs")
    outs, at = [], 0
    for sz in sizes:
        outs.append(im.op("strided_slice", x, begin=(at,), end=(at + sz,), axes=(ax,)))
        at += sz
    return tuple(outs)


# ----------------------------------------------------------------------------- resize
def _resize_out(im, x, scales, sizes, axes, policy, roi, mode):
    r = _rank(x)
    axes = list(range(r)) if axes is None else [int(v) % r for v in axes]
    full_scales, full_sizes = [1.0] * r, list(x.shape)
    if sizes is not None:
        sizes = [int(v) for v in np.ravel(sizes)]
        if len(sizes) != len(axes):
            im.refuse(f"{len(sizes)} sizes for {len(axes)} axes")
        if policy in ("not_larger", "not_smaller"):
            ratios = [s / x.shape[ax] for s, ax in zip(sizes, axes)]
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for ax in axes:
                full_scales[ax] = s
                full_sizes[ax] = int(np.floor(s * x.shape[ax] + 0.5))
        else:
            for s, ax in zip(sizes, axes):
                full_sizes[ax] = s
                full_scales[ax] = s / x.shape[ax]
    else:
        scales = [float(v) for v in np.ravel(scales)]
        if len(scales) != len(axes):
            im.refuse(f"{len(scales)} scales for {len(axes)} axes")
        for s, ax in zip(scales, axes):
            if s <= 0:
                im.refuse(f"scale {s} <= 0")
            span = (roi[ax + r] - roi[ax]) if (mode == "tf_crop_and_resize" and roi) else 1.0
            full_scales[ax] = s
            full_sizes[ax] = int(np.floor(x.shape[ax] * span * s))
    return tuple(full_sizes), tuple(full_scales)


@_reg("Resize", since=10)
def _resize(im, n, xs, a):
    x = xs[0]
    r = _rank(x)
    mode = _s(a.get("mode", "nearest"))
    if im.opset < 11:
        if mode == "nearest" and any(float(s) < 1 for s in np.ravel(im.const(1, "scales"))):
            im.refuse("nearest downsampling at opset 10 (its rounding is not specified)")
        size, scales = _resize_out(im, x, im.const(1, "scales"), None, None, "stretch", (), "asymmetric")
        return im.op("image.resize", x, size=size, scales=scales, method=mode,
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    ctm = _s(a.get("coordinate_transformation_mode", "half_pixel"))
    roi = im.const(1, "roi") if ctm == "tf_crop_and_resize" else None
    scales, sizes = im.const(2, "scales"), im.const(3, "sizes")
    scales = None if scales is None or np.size(scales) == 0 else scales
    sizes = None if sizes is None or np.size(sizes) == 0 else sizes
    if (scales is None) == (sizes is None):
        im.refuse("exactly one of scales and sizes is needed")
    axes = a.get("axes")
    roi_full = ()
    if roi is not None and np.size(roi):
        roi = [float(v) for v in np.ravel(roi)]
        if axes is not None:
            full = [0.0] * r + [1.0] * r
            k = len(axes)
            for j, ax in enumerate(axes):
                full[int(ax) % r], full[int(ax) % r + r] = roi[j], roi[j + k]
            roi = full
        roi_full = tuple(roi)
    elif ctm == "tf_crop_and_resize":
        im.refuse("tf_crop_and_resize without roi")
    size, sc = _resize_out(im, x, scales, sizes, axes, _s(a.get("keep_aspect_ratio_policy", "stretch")),
                           roi_full, ctm)
    if mode not in ("nearest", "linear", "cubic"):
        im.refuse(f"mode {mode!r}")
    return im.op("image.resize", x, size=size, scales=sc, roi=roi_full, method=mode,
                 coordinate_transformation_mode=ctm, nearest_mode=_s(a.get("nearest_mode", "round_prefer_floor")),
                 cubic_coeff_a=float(a.get("cubic_coeff_a", -0.75)), exclude_outside=bool(a.get("exclude_outside", 0)),
                 extrapolation_value=float(a.get("extrapolation_value", 0.0)), antialias=bool(a.get("antialias", 0)))


@_reg("GridSample", since=16)
def _grid_sample(im, n, xs, a):
    mode = _s(a.get("mode", "bilinear"))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if im.opset < 20 and _rank(xs[0]) != 4:
        im.refuse("non-4-D input before opset 20")
    return im.op("image.grid_sample", xs[0], xs[1], method=mode, padding_mode=_s(a.get("padding_mode", "zeros")),
                 align_corners=bool(a.get("align_corners", 0)))


@_reg("AffineGrid", since=20)
def _affine_grid(im, n, xs, a):
    """The sampling grid theta @ [positions; 1] over evenly spaced normalised positions of the
    constant ``size`` (pixel centres, or corners with align_corners): [N, *S, r], x first."""
    theta = xs[0]
    size = [int(v) for v in np.ravel(im.const(1, "size"))]
    r = len(size) - 2
    if r not in (2, 3) or tuple(theta.shape[1:]) != (r, r + 1):
        im.refuse(f"theta {theta.shape} for size {size}")
    align = bool(a.get("align_corners", 0))
    axes = []
    for d in size[2:][::-1]:                                     # x (last spatial axis) first
        if align:
            axes.append(np.linspace(-1, 1, d) if d > 1 else np.zeros(1))
        else:
            axes.append((np.arange(d) * 2 + 1) / d - 1)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")               # in the spatial axes' order
    pos = np.stack([m for m in mesh[::-1]] + [np.ones_like(mesh[0])], axis=-1)   # [*S, r + 1], x first
    base = _const(pos.reshape(-1, r + 1).astype(theta.dtype))
    g = im.op("nn.matmul", base, im.op("transpose", theta, axes=(0, 2, 1)))     # [N, prod(S), r]
    return im.op("reshape", g, newshape=(size[0],) + tuple(size[2:]) + (r,))


@_reg("CausalConvWithState", since=27)
def _causal_conv(im, n, xs, a):
    """Causal depthwise 1-D convolution over [past_state (zeros if absent); input]: output (+ bias,
    optional SiLU) and the last k-1 positions as present_state, of IR operators."""
    x, w, b, past = im.arg(0), im.arg(1), im.arg(2), im.arg(3)
    bsz, c, _ = x.shape
    k = w.shape[2]
    act = _s(a.get("activation", "none"))
    if act not in ("none", "silu", "swish") or tuple(w.shape[:2]) != (c, 1):
        im.refuse(f"activation {act!r} / weight {w.shape} (depthwise [C, 1, k]; none, silu or swish)")
    if past is None:
        past = _const(np.zeros((bsz, c, k - 1), x.dtype))
    full = im.op("concatenate", past, x, axis=2) if k > 1 else x
    y = im.op("nn.conv1d", full, w, strides=(1,), padding=(0, 0), dilation=(1,), groups=c)
    if b is not None:
        y = im.op("nn.bias_add", y, b)
    if act != "none":
        y = im.op("nn.silu", y)
    total = full.shape[2]
    state = im.op("strided_slice", full, begin=(total - (k - 1),), end=(total,), axes=(2,)) if k > 1 else \
        _const(np.zeros((bsz, c, 0), x.dtype))
    return y, state


@_reg("Col2Im", since=18)
def _col2im(im, n, xs, a):
    img = tuple(int(v) for v in np.ravel(im.const(1, "image_shape")))
    blk = tuple(int(v) for v in np.ravel(im.const(2, "block_shape")))
    return im.op("col2im", xs[0], image_shape=img, block_shape=blk, strides=tuple(a.get("strides", ())),
                 dilations=tuple(a.get("dilations", ())), pads=tuple(a.get("pads", ())))


@_reg("Upsample", since=7)
def _upsample(im, n, xs, a):
    x = xs[0]
    mode = _s(a.get("mode", "nearest"))
    if mode not in ("nearest", "linear", "bilinear"):
        im.refuse(f"mode {mode!r}")
    scales = a["scales"] if im.opset < 9 else im.const(1, "scales")
    size, sc = _resize_out(im, x, scales, None, None, "stretch", (), "asymmetric")
    return im.op("image.resize", x, size=size, scales=sc, method="nearest" if mode == "nearest" else "linear",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ----------------------------------------------------------------------------- recurrent
def _reverse(im, v, axis=0):
    return im.op("strided_slice", v, begin=(-1,), end=(-(2 ** 62),), strides=(-1,), axes=(axis,))


def _take_dir(im, v, d, count):
    """Direction d of a [num_directions, ...] operand (the operand itself when there is one)."""
    if v is None or count == 1:
        return v
    return im.op("strided_slice", v, begin=(d,), end=(d + 1,), axes=(0,))


@_reg("LSTM", "GRU", "RNN")
def _recurrent(im, n, xs, a):
    kind = n.op_type
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    direction = _s(a.get("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        im.refuse(f"direction={direction!r}")
    dirs = 2 if direction == "bidirectional" else 1
    x, w, r, b = im.arg(0), im.arg(1), im.arg(2), im.arg(3)
    seq, h0 = im.arg(4), im.arg(5)
    c0, peep = (im.arg(6), im.arg(7)) if kind == "LSTM" else (None, None)
    layout = int(a.get("layout", 0))
    if layout:
        x = im.op("transpose", x, axes=(1, 0, 2))
        h0 = im.op("transpose", h0, axes=(1, 0, 2)) if h0 is not None else None
        c0 = im.op("transpose", c0, axes=(1, 0, 2)) if c0 is not None else None
    T, B = x.shape[0], x.shape[1]
    if seq is not None:
        lens = im.const(4, "sequence_lens")
        if np.any(np.asarray(lens) != T):
            im.refuse("sequence_lens shorter than the sequence")
    if peep is not None and not (isinstance(peep, Const) and not np.any(peep.value)):
        im.refuse("peepholes")
    acts = [_s(v) for v in a.get("activations", ())]
    per = {"LSTM": 3, "GRU": 2, "RNN": 1}[kind]
    if kind == "LSTM":
        if acts and [v.lower() for v in acts] != ["sigmoid", "tanh", "tanh"] * dirs:
            im.refuse(f"activations {acts} (LSTM: the default Sigmoid, Tanh, Tanh only)")
        if "clip" in a or a.get("input_forget", 0):
            im.refuse("clip / input_forget")
    extra = {}
    if kind != "LSTM":
        if "clip" in a:
            extra["clip"] = float(a["clip"])
        if kind == "GRU":
            extra["linear_before_reset"] = bool(a.get("linear_before_reset", 0))
    alphas, betas = list(a.get("activation_alpha", ())), list(a.get("activation_beta", ()))
    ys, lasts, cells = [], [], []
    for d in range(dirs):
        rev = direction == "reverse" or d == 1
        wd, rd, bd = (_take_dir(im, v, d, dirs) for v in (w, r, b))
        hd_, cd = _take_dir(im, h0, d, dirs), _take_dir(im, c0, d, dirs)
        xin = _reverse(im, x) if rev else x
        if kind == "LSTM":
            H = r.shape[2]
            if bd is None:
                bd = _const(np.zeros((1, 8 * H), x.dtype))
            ins = [xin, wd, rd, bd]
            if hd_ is not None or cd is not None:
                ins.append(hd_ if hd_ is not None else _const(np.zeros((1, B, H), x.dtype)))
            if cd is not None:
                ins.append(cd)
            y = im.op("nn.lstm", *ins)
            if len(n.output) > 2 and n.output[2]:
                cells.append(im.op("nn.lstm_cell_state", *ins))
        else:
            my = acts[d * per:(d + 1) * per] if acts else (["Sigmoid", "Tanh"] if kind == "GRU" else ["Tanh"])
            na = sum(1 for v in my if v.lower() in ("leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu",
                                                    "affine"))
            nb = sum(1 for v in my if v.lower() in ("hardsigmoid", "affine", "scaledtanh"))
            al, alphas = alphas[:na], alphas[na:]
            be, betas = betas[:nb], betas[nb:]
            ins = [xin, wd, rd] + ([bd] if bd is not None or hd_ is not None else [])
            if bd is None and hd_ is not None:
                ins[3] = _const(np.zeros((1, 2 * gates * r.shape[2]), x.dtype))
            if hd_ is not None:
                ins.append(hd_)
            y = im.op("nn.gru" if kind == "GRU" else "nn.rnn", *ins, activations=tuple(my),
                      activation_alpha=tuple(float(v) for v in al), activation_beta=tuple(float(v) for v in be),
                      **extra)
        if rev:
            y = _reverse(im, y)
        pos = 0 if rev else T - 1
        lasts.append(im.op("reshape", im.op("strided_slice", y, begin=(pos,), end=(pos + 1,), axes=(0,)),
                           newshape=(1, B, r.shape[2])))
        ys.append(y)
    y = ys[0] if dirs == 1 else im.op("concatenate", *ys, axis=1)
    yh = lasts[0] if dirs == 1 else im.op("concatenate", *lasts, axis=0)
    yc = (cells[0] if dirs == 1 else im.op("concatenate", *cells, axis=0)) if cells else \
        _Unsupported(f"{im.name}: {kind} {im.where()}: the cell state output")
    if layout:
        y = im.op("transpose", y, axes=(2, 0, 1, 3))
        yh = im.op("transpose", yh, axes=(1, 0, 2))
        if cells:
            yc = im.op("transpose", yc, axes=(1, 0, 2))
    return (y, yh, yc) if kind == "LSTM" else (y, yh)


# ----------------------------------------------------------------------------- attention
@_reg("Attention", since=23)
def _attention(im, n, xs, a):
    q, k, v = im.arg(0), im.arg(1), im.arg(2)
    mask, past_k, past_v = im.arg(3), im.arg(4), im.arg(5)
    nonpad = im.arg(6) if im.opset >= 24 else None
    if (past_k is None) != (past_v is None):
        im.refuse("past_key without past_value (or the reverse)")
    if nonpad is not None and past_k is not None:
        im.refuse("nonpad_kv_seqlen with a past cache")
    three_d = _rank(q) == 3
    if three_d:
        if "q_num_heads" not in a or "kv_num_heads" not in a:
            im.refuse("3-D inputs without q_num_heads / kv_num_heads")
        hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])

        def heads(x, h):                            # [B, S, h*D] -> [B, h, S, D]
            b, sl, hd = x.shape
            return im.op("transpose", im.op("reshape", x, newshape=(b, sl, h, hd // h)), axes=(0, 2, 1, 3))
        q, k, v = heads(q, hq), heads(k, hkv), heads(v, hkv)
    elif im.opset >= 25 and ("q_num_heads" in a or "kv_num_heads" in a):
        im.refuse("q_num_heads / kv_num_heads with 4-D inputs")
    pk = im.op("concatenate", past_k, k, axis=2) if past_k is not None else k
    pv = im.op("concatenate", past_v, v, axis=2) if past_v is not None else v
    sp = a.get("softmax_precision")
    extra = [x for x in (mask, nonpad) if x is not None]
    kw = dict(scale=float(a["scale"]) if "scale" in a else None, is_causal=bool(a.get("is_causal", 0)),
              past_len=int(past_k.shape[2]) if past_k is not None else 0, softcap=float(a.get("softcap", 0.0)),
              qk_mode=int(a.get("qk_matmul_output_mode", 0)),
              softmax_dtype=_dtype(sp, f"{im.name}: Attention {im.where()}") if sp else None,
              has_mask=mask is not None, has_nonpad=nonpad is not None,
              left_window=int(a.get("left_window_size", -1)), right_window=int(a.get("right_window_size", -1)))
    y = im.op("nn.attention", q, pk, pv, *extra, output="y", **kw)
    if three_d:
        b, h, sl, dv = y.shape
        y = im.op("reshape", im.op("transpose", y, axes=(0, 2, 1, 3)), newshape=(b, sl, h * dv))
    qk = im.op("nn.attention", q, pk, pv, *extra, output="qk", **kw) if len(n.output) > 3 and n.output[3] else \
        _Unsupported(f"{im.name}: Attention {im.where()}: qk_matmul_output")
    return y, pk, pv, qk


# ----------------------------------------------------------------------------- spectral
@_reg("DFT", since=17)
def _dft(im, n, xs, a):
    x = xs[0]
    length = im.const(1, "dft_length")
    length = int(np.ravel(length)[0]) if length is not None and np.size(length) else None
    if im.opset >= 20:
        ax = im.const(2, "axis")
        axis = int(np.ravel(ax)[0]) if ax is not None and np.size(ax) else -2
    else:
        axis = int(a.get("axis", 1))
    return im.op("dft", x, axis=axis, inverse=bool(a.get("inverse", 0)), onesided=bool(a.get("onesided", 0)),
                 length=length)


@_reg("SwiGLU", since=28)
def _swiglu(im, n, xs, a):
    """Swish_alpha(A) * B (shapes equal, no broadcasting)."""
    gate, value = xs[0], xs[1]
    if tuple(gate.shape) != tuple(value.shape):
        im.refuse(f"gate {gate.shape} and value {value.shape} differ (no broadcasting)")
    alpha = float(a.get("alpha", 1.0))
    sw = im.op("nn.silu", gate) if alpha == 1.0 else \
        im.op("multiply", gate, im.op("sigmoid", im.op("multiply", gate, im.scalar(alpha, gate))))
    return im.op("multiply", sw, value)


@_reg("RotaryEmbedding", since=23)
def _rotary(im, n, xs, a):
    """Rotary positional embedding (the specification's algorithm) composed of IR operators: the
    first rotary_embedding_dim features of each head rotated by the cached cos / sin of each
    position (halves, or interleaved pairs)."""
    x, cos, sin = im.arg(0), im.arg(1), im.arg(2)
    pos = im.arg(3)
    r = _rank(x)
    if r == 4:                                            # [B, H, S, D] -> [B, S, H, D]
        x4 = im.op("transpose", x, axes=(0, 2, 1, 3))
    elif r == 3:
        heads = int(a.get("num_heads", 0))
        if heads <= 0:
            im.refuse("3-D input without num_heads")
        b, sl, hid = x.shape
        x4 = im.op("reshape", x, newshape=(b, sl, heads, hid // heads))
    else:
        im.refuse(f"input of rank {r}")
    d = x4.shape[3]
    rd = int(a.get("rotary_embedding_dim", 0)) or d
    half = rd // 2
    if pos is not None:
        cos, sin = im.op("take", cos, pos, axis=0), im.op("take", sin, pos, axis=0)
    if cos.shape[-1] != half or sin.shape[-1] != half:
        im.refuse(f"cos/sin caches of width {cos.shape[-1]}/{sin.shape[-1]} for rotary dimension {rd}")
    cos, sin = im.op("expand_dims", cos, axis=2), im.op("expand_dims", sin, axis=2)
    rot = im.op("strided_slice", x4, begin=(0,), end=(rd,), axes=(3,))
    if a.get("interleaved", 0):
        x1 = im.op("strided_slice", rot, begin=(0,), end=(rd,), strides=(2,), axes=(3,))
        x2 = im.op("strided_slice", rot, begin=(1,), end=(rd,), strides=(2,), axes=(3,))
    else:
        x1 = im.op("strided_slice", rot, begin=(0,), end=(half,), axes=(3,))
        x2 = im.op("strided_slice", rot, begin=(half,), end=(rd,), axes=(3,))
    real = im.op("subtract", im.op("multiply", cos, x1), im.op("multiply", sin, x2))
    imag = im.op("add", im.op("multiply", sin, x1), im.op("multiply", cos, x2))
    if a.get("interleaved", 0):
        pair = im.op("concatenate", im.op("expand_dims", real, axis=4), im.op("expand_dims", imag, axis=4), axis=4)
        rot = im.op("reshape", pair, newshape=tuple(rot.shape))
    else:
        rot = im.op("concatenate", real, imag, axis=3)
    if rd < d:
        rot = im.op("concatenate", rot, im.op("strided_slice", x4, begin=(rd,), end=(d,), axes=(3,)), axis=3)
    return im.op("transpose", rot, axes=(0, 2, 1, 3)) if r == 4 else im.op("reshape", rot, newshape=tuple(x.shape))


@_reg("LinearAttention", since=27)
def _linear_attention(im, n, xs, a):
    q, k, v = im.arg(0), im.arg(1), im.arg(2)
    past, decay, beta = im.arg(3), im.arg(4), im.arg(5)
    rule = _s(a.get("update_rule", "gated_delta"))
    if rule in ("gated", "gated_delta") and decay is None:
        im.refuse(f"update rule {rule!r} without decay")
    if rule in ("delta", "gated_delta") and beta is None:
        im.refuse(f"update rule {rule!r} without beta")
    if "q_num_heads" not in a or "kv_num_heads" not in a:
        im.refuse("q_num_heads and kv_num_heads are required")
    use_decay = decay is not None and rule in ("gated", "gated_delta")
    use_beta = beta is not None and rule in ("delta", "gated_delta")
    extra = [x for x, use in ((past, past is not None), (decay, use_decay), (beta, use_beta)) if use]
    kw = dict(q_heads=int(a["q_num_heads"]), kv_heads=int(a["kv_num_heads"]), scale=float(a.get("scale", 0.0)),
              rule=rule, has_past=past is not None, has_decay=use_decay, has_beta=use_beta)
    return (im.op("nn.linear_attention", q, k, v, *extra, output="y", **kw),
            im.op("nn.linear_attention", q, k, v, *extra, output="state", **kw))


# ----------------------------------------------------------------------------- losses, quantisation
@_reg("NegativeLogLikelihoodLoss", since=12)
def _nll(im, n, xs, a):
    ign = int(a["ignore_index"]) if "ignore_index" in a else None
    return im.op("nn.nll_loss", *xs[:3], reduction=_s(a.get("reduction", "mean")), ignore_index=ign)


@_reg("SoftmaxCrossEntropyLoss", since=12)
def _sce(im, n, xs, a):
    lp = im.op("nn.log_softmax", xs[0], axis=1)
    ign = int(a["ignore_index"]) if "ignore_index" in a else None
    return im.op("nn.nll_loss", lp, *xs[1:3], reduction=_s(a.get("reduction", "mean")), ignore_index=ign), lp


def _q_axis(im, a, x):
    ax = int(a.get("axis", 1))
    return ax if _rank(x) == 0 else ax % _rank(x)


@_reg("QuantizeLinear", since=10)
def _quantize(im, n, xs, a):
    x, scale = xs[0], xs[1]
    zp = im.arg(2)
    if "output_dtype" in a and a["output_dtype"]:
        out = _dtype(a["output_dtype"], f"{im.name}: QuantizeLinear {im.where()}")
    else:
        out = zp.dtype if zp is not None else "uint8"
    if out not in ops._QTYPES:
        im.refuse(f"output type {out} (integer types only)")
    if a.get("precision", 0):
        im.refuse("precision attribute")
    args = [x, scale] + ([zp] if zp is not None else [])
    return im.op("qnn.quantize", *args, axis=_q_axis(im, a, x), block_size=int(a.get("block_size", 0)),
                 out_dtype=out)


@_reg("DequantizeLinear", since=10)
def _dequantize(im, n, xs, a):
    x, scale = xs[0], xs[1]
    zp = im.arg(2)
    if x.dtype not in ops._QTYPES:
        im.refuse(f"input type {x.dtype} (integer types only)")
    out = _dtype(a["output_dtype"], f"{im.name}: DequantizeLinear {im.where()}") if a.get("output_dtype") \
        else scale.dtype
    args = [x, scale] + ([zp] if zp is not None else [])
    return im.op("qnn.dequantize", *args, axis=_q_axis(im, a, x), block_size=int(a.get("block_size", 0)),
                 out_dtype=out)


@_reg("DynamicQuantizeLinear", since=11)
def _dynamic_quantize(im, n, xs, a):
    """y, scale, zero point of uint8 quantisation over x's own range widened to include 0 (the
    specification's function body, of IR operators)."""
    x = xs[0]
    zero, top = im.scalar(0, x), im.scalar(255, x)
    lo = im.op("minimum", im.op("min", x, axis=None, keepdims=False), zero)
    hi = im.op("maximum", im.op("max", x, axis=None, keepdims=False), zero)
    scale = im.op("divide", im.op("subtract", hi, lo), top)
    zp_f = im.op("round", im.op("clip", im.op("subtract", zero, im.op("divide", lo, scale)), a_min=0.0, a_max=255.0))
    zp = im.op("cast", zp_f, dtype="uint8")
    return im.op("qnn.quantize", x, scale, zp, axis=1, out_dtype="uint8"), scale, zp


@_reg("MatMulInteger", since=10)
def _matmul_integer(im, n, xs, a):
    args = [im.arg(0), im.arg(1), im.arg(2), im.arg(3)]
    while args[-1] is None:
        args.pop()
    if any(v is None for v in args):
        args = [v if v is not None else _const(np.zeros((), args[k].dtype)) for k, v in enumerate(args)]
    return im.op("qnn.matmul_integer", *args)


@_reg("QLinearMatMul", since=10)
def _qlinear_matmul(im, n, xs, a):
    if len(xs) != 8:
        im.refuse("all eight inputs are needed")
    return im.op("qnn.qlinear_matmul", *xs)


@_reg("ConvInteger", since=10)
def _conv_integer(im, n, xs, a):
    x, w = im.arg(0), im.arg(1)
    xz, wz = im.arg(2), im.arg(3)
    xi = im.op("cast", x, dtype="int32")
    wi = im.op("cast", w, dtype="int32")
    if xz is not None:
        xi = im.op("subtract", xi, im.op("cast", xz, dtype="int32"))
    if wz is not None:
        wz = im.op("cast", wz, dtype="int32")
        if _rank(wz) == 1 and wz.shape[0] > 1:
            wz = im.op("reshape", wz, newshape=(-1,) + (1,) * (_rank(w) - 1))
        wi = im.op("subtract", wi, wz)
    nd = _rank(w) - 2
    if nd != 2:
        im.refuse(f"{nd}-D integer convolution")
    strides, dil, pads = _window_attrs(im, n, a, x, w.shape[2:])
    return im.op("nn.conv2d", xi, wi, strides=strides, padding=_pads(pads), dilation=dil, groups=int(a.get("group", 1)))


# ----------------------------------------------------------------------------- more layout
@_reg("CenterCropPad", since=18)
def _center_crop_pad(im, n, xs, a):
    x = xs[0]
    shape = [int(v) for v in np.ravel(im.const(1, "the shape"))]
    r = _rank(x)
    axes = [int(v) % r for v in a.get("axes", range(r))]
    if len(shape) != len(axes):
        im.refuse(f"{len(shape)} sizes for {len(axes)} axes")
    begin, end, width = [0] * r, list(x.shape), [(0, 0)] * r
    for s, ax in zip(shape, axes):
        d = x.shape[ax]
        if s < d:
            begin[ax] = (d - s) // 2
            end[ax] = begin[ax] + s
        elif s > d:
            width[ax] = ((s - d) // 2, s - d - (s - d) // 2)
    y = im.op("strided_slice", x, begin=tuple(begin), end=tuple(end), axes=tuple(range(r)))
    return im.op("nn.pad", y, pad_width=tuple(width)) if any(w != (0, 0) for w in width) else y


@_reg("ReverseSequence", since=10)
def _reverse_sequence(im, n, xs, a):
    x = xs[0]
    lens = np.asarray(im.const(1, "sequence_lens")).astype(np.int64)
    ta, ba = int(a.get("time_axis", 0)), int(a.get("batch_axis", 1))
    t = np.arange(x.shape[ta]).reshape([-1 if k == ta else 1 for k in range(_rank(x))])
    ln = lens.reshape([-1 if k == ba else 1 for k in range(_rank(x))])
    idx = np.broadcast_to(np.where(t < ln, ln - 1 - t, t), x.shape).astype(np.int64)
    return im.op("gather", x, _const(idx), axis=ta)


def _window(kind):
    def fold(im, n, xs, a):
        size = int(np.ravel(xs[0])[0])
        periodic = int(a.get("periodic", 1))
        dt = _dtype(a.get("output_datatype", 1), f"{im.name}: {n.op_type} {im.where()}")
        nn_ = np.arange(size, dtype=np.float64)
        m = size if periodic else size - 1
        c = np.cos(2 * np.pi * nn_ / m) if m else np.ones(size)
        if kind == "hann":
            w = 0.5 - 0.5 * c
        elif kind == "hamming":
            w = 25 / 46 - 21 / 46 * c
        else:
            w = 0.42 - 0.5 * c + 0.08 * (np.cos(4 * np.pi * nn_ / m) if m else np.ones(size))
        return w.astype(dt)
    return fold


# ----------------------------------------------------------------------------- control flow, data-dependent
@_reg("If")
def _if(im, n, xs, a):
    """The branch the (constant) condition selects, inlined: its nodes are converted in place."""
    cond = bool(np.asarray(im.const(0, "the condition")).reshape(-1)[0])
    branch = a["then_branch" if cond else "else_branch"]
    from onnx import numpy_helper
    for init in branch.initializer:
        im.env[init.name] = _const(numpy_helper.to_array(init), name=init.name, source=init.name)
    saved = (im.k, im.n, im.src)
    _convert_nodes(im, branch.node, prefix=f"{im.src}/")
    im.k, im.n, im.src = saved
    outs = tuple(im.get(o.name, n) for o in branch.output)
    if len(outs) != len(n.output):
        im.refuse(f"the branch gives {len(outs)} outputs for {len(n.output)}")
    return outs


@_reg("Scan", since=9)
def _scan(im, n, xs, a):
    """Scan unrolled over its (static) sequence length: the body's nodes converted once per
    iteration with the state and the iterated slices bound to its inputs; scan outputs stacked."""
    body = a["body"]
    m = int(a["num_scan_inputs"])
    vals = [im.get(i, n) for i in n.input]
    states, seqs = vals[:len(vals) - m], vals[len(vals) - m:]
    in_axes = [int(v) % _rank(x) for v, x in zip(a.get("scan_input_axes", [0] * m), seqs)]
    in_dirs = list(a.get("scan_input_directions", [0] * m))
    k_out = len(body.output) - len(states)
    out_axes = list(a.get("scan_output_axes", [0] * k_out))
    out_dirs = list(a.get("scan_output_directions", [0] * k_out))
    lengths = {x.shape[ax] for x, ax in zip(seqs, in_axes)}
    if len(lengths) != 1:
        im.refuse(f"scan inputs of different lengths {sorted(lengths)}")
    steps = lengths.pop()
    from onnx import numpy_helper
    for init in body.initializer:
        im.env[init.name] = _const(numpy_helper.to_array(init), name=init.name, source=init.name)
    saved = (im.k, im.n, im.src)
    here = im.src
    per_step = [[] for _ in range(k_out)]
    for t in range(steps):
        for inp, v in zip(body.input[:len(states)], states):
            im.env[inp.name] = v
        for inp, x, ax, dr in zip(body.input[len(states):], seqs, in_axes, in_dirs):
            at = steps - 1 - t if dr else t
            im.src = here
            im.env[inp.name] = im.op("squeeze", im.op("strided_slice", x, begin=(at,), end=(at + 1,), axes=(ax,)),
                                     axis=(ax,))
        _convert_nodes(im, body.node, prefix=f"{here}/step{t}/")
        im.k, im.n, im.src = saved
        outs = [im.get(o.name, n) for o in body.output]
        states = outs[:len(states)]
        for j, o in enumerate(outs[len(states):]):
            per_step[j].append(o)
    scanned = []
    for j, items in enumerate(per_step):
        if out_dirs[j]:
            items = items[::-1]
        ax = int(out_axes[j]) % (_rank(items[0]) + 1) if items else 0
        if not items:
            im.refuse("a scan over zero steps")
        scanned.append(im.op("concatenate", *[im.op("expand_dims", it, axis=ax) for it in items], axis=ax))
    return tuple(states) + tuple(scanned)


def _corners(b, center_point_box):
    """Boxes [..., 4] as (x_min, x_max, y_min, y_max)."""
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return xc - w / 2, xc + w / 2, yc - h / 2, yc + h / 2
    return (np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3]),
            np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2]))


@_reg("NonMaxSuppression", since=10)
def _nms(im, n, xs, a):
    """NonMaxSuppression on constant boxes and scores (the output's length depends on their values):
    per batch and class, candidates above score_threshold by descending score (lower index first
    on ties), each kept unless its IoU with a kept box is strictly above iou_threshold (boxes
    without area or overlap never suppress)."""
    boxes = np.asarray(im.const(0, "boxes (the output's length depends on their values)"))
    scores = np.asarray(im.const(1, "scores (the output's length depends on their values)"))
    cap = im.const(2, "max_output_boxes_per_class", np.zeros(0, np.int64))
    cap = int(np.ravel(cap)[0]) if np.size(cap) else 0
    iou_t = im.const(3, "iou_threshold", np.zeros(0, np.float32))
    iou_t = float(np.ravel(iou_t)[0]) if np.size(iou_t) else 0.0
    score_t = im.const(4, "score_threshold")
    score_t = float(np.ravel(score_t)[0]) if score_t is not None and np.size(score_t) else None
    cpb = int(a.get("center_point_box", 0))
    out = []
    for bi in range(boxes.shape[0]):
        x0, x1, y0, y1 = _corners(boxes[bi], cpb)
        area = (x1 - x0) * (y1 - y0)
        for ci in range(scores.shape[1]):
            sc = scores[bi, ci]
            cand = [k for k in range(len(sc)) if score_t is None or sc[k] > score_t]
            cand.sort(key=lambda k: (-sc[k], k))
            kept = []
            for k in cand:
                if len(kept) >= cap:
                    break
                ok = True
                for j in kept:
                    iw = min(x1[k], x1[j]) - max(x0[k], x0[j])
                    ih = min(y1[k], y1[j]) - max(y0[k], y0[j])
                    if iw <= 0 or ih <= 0 or area[k] <= 0 or area[j] <= 0:
                        continue
                    inter = iw * ih
                    union = area[k] + area[j] - inter
                    if union > 0 and inter / union > iou_t:
                        ok = False
                        break
                if ok:
                    kept.append(k)
                    out.append((bi, ci, k))
    return _const(np.array(out, np.int64).reshape(-1, 3))


@_reg("Unique", since=11)
def _unique(im, n, xs, a):
    """Unique on constant data (its output shape depends on the values): Y, indices,
    inverse_indices, counts; sorted, or in order of first occurrence."""
    x = np.asarray(im.const(0, "the data (the output's shape depends on its values)"))
    axis = a.get("axis")
    flat = x.reshape(-1) if axis is None else x
    y, idx, inv, cnt = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                 axis=None if axis is None else int(axis))
    inv = inv.reshape(-1)
    if not a.get("sorted", 1):
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else int(axis))
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
    return tuple(_const(v) for v in (y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)))


# ----------------------------------------------------------------------------- constants (folded at import)
def _fold_only(fn):
    def conv(im, n, xs, a):
        if not all(isinstance(x, Const) for x in xs):
            for k in range(len(n.input)):
                im.const(k, "an operand (the output's shape depends on its values)")
        return _const(fn(im, n, [x.value for x in xs], a))
    return conv


def _constant(im, n, xs, a):
    import onnx
    if "value" in a:
        return onnx.numpy_helper.to_array(a["value"])
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                    ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dt)
    im.refuse(f"attribute(s) {sorted(a)} (only value, value_float(s), value_int(s))")


def _constant_of_shape(im, n, xs, a):
    import onnx
    shape = tuple(int(v) for v in xs[0]) if xs else ()
    value = onnx.numpy_helper.to_array(a["value"]).reshape(-1)[0] if "value" in a else np.float32(0)
    return np.full(shape, value)


def _range(im, n, xs, a):
    start, limit, delta = (np.asarray(v).reshape(()) for v in xs)
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return (start + np.arange(count, dtype=np.float64 if start.dtype.kind == "f" else np.int64) * delta)\
        .astype(start.dtype)


def _eye_like(im, n, xs, a):
    x = xs[0]
    if len(x.shape) != 2:
        im.refuse("input of rank other than 2")
    dt = _dtype(a["dtype"], f"{im.name}: EyeLike {im.where()}") if "dtype" in a else x.dtype
    return np.eye(x.shape[0], x.shape[1], int(a.get("k", 0)), dtype=dt)


_reg("Constant")(_fold_only(_constant))
_reg("ConstantOfShape", since=9)(_fold_only(_constant_of_shape))
_reg("Range", since=11)(_fold_only(_range))
_reg("HannWindow", since=17)(_fold_only(_window("hann")))
_reg("HammingWindow", since=17)(_fold_only(_window("hamming")))
_reg("BlackmanWindow", since=17)(_fold_only(_window("blackman")))
_reg("NonZero", since=9)(_fold_only(lambda im, n, xs, a: np.array(np.nonzero(xs[0]), np.int64)))


@_reg("EyeLike", since=9)
def _eye(im, n, xs, a):
    return _const(_eye_like(im, n, xs, a))


@_reg("Shape")
def _shape(im, n, xs, a):
    r = _rank(xs[0])
    start, end = a.get("start", 0), a.get("end", r)
    return _const(np.asarray(xs[0].shape[slice(start, end)], np.int64))


@_reg("Size")
def _size(im, n, xs, a):
    return _const(np.asarray(int(np.prod(xs[0].shape, dtype=np.int64)), np.int64))


# ----------------------------------------------------------------------------- the entry point
def _convert_nodes(im, nodes, prefix: str = ""):
    """Convert ``nodes`` in order into ``im.env`` (the model's graph, or a branch inlined by If)."""
    label = im.name
    for k, nd in enumerate(nodes):
        im.k, im.n, im.src = k, nd, nd.name or f"{prefix}{nd.op_type}#{k}"
        _check_attrs(im, nd)
        xs = [im.get(i, nd) for i in nd.input if i]
        a = _attrs(nd)
        conv = converter(nd.domain, nd.op_type, im.opsets.get(_domain(nd.domain), 1))
        out = None
        if xs and all(isinstance(x, Const) for x in xs) and nd.op_type not in _NO_FOLD:
            out = _fold(im, conv, nd, xs, a)
        if out is None:
            out = conv(im, nd, xs, a)
        outs = out if isinstance(out, tuple) else (out,)
        for j in range(len(outs), len(nd.output)):
            if nd.output[j]:
                im.env[nd.output[j]] = _Unsupported(f"{label}: {nd.op_type} {im.where(nd)}: output {j} "
                                                    f"({nd.output[j]!r}) is used; only the first {len(outs)} "
                                                    "supported")
        for j, o in enumerate(outs):
            if j < len(nd.output) and nd.output[j]:
                im.env[nd.output[j]] = o


_NO_FOLD = ("Shape", "Size", "If", "Scan")          # converters that need no folding (or may not be folded)


def _all_nodes(graph):
    """The graph's nodes and, recursively, those of the bodies of its If and Scan nodes."""
    for nd in graph.node:
        yield nd
        if nd.op_type in ("If", "Scan"):
            for at in nd.attribute:
                if at.type == 5:
                    yield from _all_nodes(at.g)


def _check_attrs(im, nd):
    for at in nd.attribute:
        if at.ref_attr_name:
            im.refuse("attribute references (function bodies)", nd)
        if at.type in (5, 10) and nd.op_type not in ("If", "Scan"):   # GRAPH, GRAPHS: control flow
            im.refuse(f"graph attribute {at.name!r} (control flow)", nd)


def from_onnx(model_or_path, *, name: str | None = None, bind: dict | None = None,
              outputs: list[str] | None = None) -> Graph:
    """Import an ONNX model (a ``ModelProto``, serialized bytes, or a path) into a :class:`Graph`.

    ``bind``: {graph input name: array} -- those inputs become constants of the given values (the
    model specialised to them; see :class:`DataDependentShapeError`). ``outputs``: names of ONNX
    values (any node output) to return instead of the model's outputs, e.g. every intermediate
    tensor.

    Raises ModelLoadError (unreadable/truncated file), DynamicShapeError (an input dimension not
    bound to a number), UnsupportedOperatorError (listing every operator of the model without a
    converter with its nodes; or one node's unsupported attribute, type or data-dependent operand,
    naming the node), ShapeMismatchError (naming the operator, shapes and node), CompileError (a
    bound or requested name that the model does not have)."""
    import onnx
    from onnx import numpy_helper
    model, label = _load(model_or_path)
    label = name or label
    g = model.graph
    opsets = {_domain(o.domain): o.version for o in model.opset_import}
    bad: dict[str, list[str]] = {}
    for k, nd in enumerate(_all_nodes(g)):
        dom = _domain(nd.domain)
        if converter(dom, nd.op_type, opsets.get(dom, 1)) is None:
            key = nd.op_type if not dom else f"{dom}.{nd.op_type}"
            if not dom and (dom, nd.op_type) in _REGISTRY:
                key += f" (opset {opsets.get(dom, 1)})"
            bad.setdefault(key, []).append(nd.name or f"#{k}")
    if bad:
        listed = "; ".join(f"{op} (node(s) {', '.join(ns[:5])}{', ...' if len(ns) > 5 else ''})" for op, ns in bad.items())
        raise UnsupportedOperatorError(f"{label}: unsupported ONNX operator(s): {listed}")
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        raise ModelLoadError(f"{label}: ONNX shape inference fails: {str(exc)[:300]}") from None
    g = model.graph
    im = _Importer(model, label)
    for init in g.initializer:
        im.env[init.name] = _const(numpy_helper.to_array(init), name=init.name, source=init.name)
    bind = dict(bind or {})
    names = {i.name for i in g.input}
    unknown = sorted(set(bind) - names)
    if unknown:
        raise CompileError(f"{label}: bind names {unknown}, which are not graph inputs")
    inputs = []
    for inp in g.input:
        if inp.name in im.env and inp.name not in bind:
            continue
        if not inp.type.HasField("tensor_type"):
            raise UnsupportedOperatorError(f"{label}: input {inp.name!r} is a {inp.type.WhichOneof('value')}, "
                                           "not a tensor (only tensor inputs)")
        tt = inp.type.tensor_type
        dt = _dtype(tt.elem_type, f"{label}: input {inp.name!r}")
        if inp.name in bind:
            im.env[inp.name] = _const(np.asarray(bind[inp.name]).astype(dt, copy=False), name=inp.name,
                                      source=inp.name)
            continue
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if not d.HasField("dim_value"):
                raise DynamicShapeError(f"{label}: input {inp.name!r} dimension {k} is "
                                        f"{d.dim_param or 'unknown'!r}, not a number: bind it (static shapes only)")
            dims.append(d.dim_value)
        v = var(inp.name, dims, dt, source=inp.name)
        im.env[inp.name] = v
        inputs.append(v)
    _convert_nodes(im, g.node)
    want = outputs if outputs is not None else [o.name for o in g.output]
    missing = [o for o in want if o not in im.env]
    if missing:
        raise CompileError(f"{label}: no value named {missing[:5]}")
    outs = []
    for o in want:
        v = im.env[o]
        if isinstance(v, _Unsupported):
            raise UnsupportedOperatorError(v.why)
        outs.append(v)
    return Graph(inputs, outs, name=(g.name or "main").replace(" ", "_").replace("-", "_") or "main")


def _fold(im, conv, nd, xs, a):
    """Evaluate a node on constant inputs at import time (its IR semantics, or the fold-only rule)."""
    from compile.interpret import run_graph as run     # the IR's reference semantics
    out = conv(im, nd, xs, a)
    vals = out if isinstance(out, tuple) else (out,)
    done = tuple(v if isinstance(v, (Const, _Unsupported)) else _const(run(Graph([], [v]), {})[0]) for v in vals)
    return done if isinstance(out, tuple) else done[0]
