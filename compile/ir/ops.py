"""The operators of the tensor IR: one table holding, per operator, its attributes (Relay's names
and defaults), its shape rule and its host semantics in numpy (float32; int64 for indices).

Names and attributes follow TVM Relay (``nn.conv2d`` with ``strides``, ``padding``, ``dilation``,
``groups``; ``nn.max_pool2d`` with ``pool_size``, ...), so the mappings' IR patterns
(``python -m verify.mapping --list``) read the same. Layouts are Relay's defaults: NCHW
activations, OIHW weights; ``nn.dense(x[..., K], w[N, K]) = x @ w.T``. Convolutions and dense
layers accumulate in float64 and round once to float32 (so equal mathematical results are equal
bit for bit, whatever order a BLAS kernel sums in). Semantics: the ONNX
operator specification where an ONNX operator maps onto the IR one, Relay's otherwise.

:func:`infer` checks operand shapes when a node is built (ShapeMismatchError naming the
operator, the shapes and the source); :func:`evaluate` runs the numpy semantics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from compile.errors import ShapeMismatchError, UnsupportedOperatorError

Shape = tuple[int, ...]


@dataclass(frozen=True)
class OpDef:
    name: str
    arity: int | None                       # None: variadic
    attrs: dict = field(default_factory=dict)   # attribute -> default
    shape: Callable[..., Shape] | None = None   # (list of input shapes, attrs) -> output shape
    fn: Callable[..., np.ndarray] | None = None  # (*arrays, **attrs) -> array


OPS: dict[str, OpDef] = {}


def _op(name, arity, attrs=None, shape=None):
    def reg(fn):
        OPS[name] = OpDef(name, arity, dict(attrs or {}), shape, fn)
        return fn
    return reg


class _Bad(Exception):
    pass


def _need(cond, why):
    if not cond:
        raise _Bad(why)


# ----------------------------------------------------------------------------- elementwise
def _broadcast(shapes, attrs):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _Bad("shapes do not broadcast") from None


def _same(shapes, attrs):
    return tuple(shapes[0])


def _divide(a, b):
    """Float division; on integers it truncates toward zero (ONNX Div, C semantics)."""
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
        return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(np.result_type(a, b))
    return np.divide(a, b).astype(np.result_type(a, b))


for _name, _f in {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                  "maximum": np.maximum, "minimum": np.minimum}.items():
    _op(_name, 2, shape=_broadcast)(lambda a, b, _f=_f: _f(a, b).astype(np.result_type(a, b)))
_op("divide", 2, shape=_broadcast)(_divide)
# power keeps the base's type (ONNX Pow: an int32 base with a float exponent gives int32)
_op("power", 2, shape=_broadcast)(lambda a, b: np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
                                  if a.dtype != b.dtype else np.power(a, b).astype(a.dtype))


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


_UNARY = {
    "nn.relu": lambda x: np.maximum(x, 0).astype(x.dtype),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "negative": np.negative,
    "abs": np.abs,
    "erf": _erf,
    "nn.silu": lambda x: (x * _sigmoid(x)).astype(x.dtype),
    "nn.gelu": lambda x: (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(x.dtype),
    "nn.hardswish": lambda x: (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype),
    "nn.dropout": lambda x: x,                       # identity at inference
}
for _name, _f in _UNARY.items():
    _op(_name, 1, shape=_same)(_f)


@_op("clip", 1, {"a_min": 0.0, "a_max": 6.0}, _same)
def _clip(x, a_min, a_max):
    return np.clip(x, a_min, a_max).astype(x.dtype)


# ----------------------------------------------------------------------------- dense / matmul
def _dense_shape(shapes, attrs):
    x, w = shapes
    _need(len(w) == 2 and len(x) >= 1 and x[-1] == w[1], "nn.dense needs x[..., K] and w[N, K]")
    return tuple(x[:-1]) + (w[0],)


@_op("nn.dense", 2, shape=_dense_shape)
def _dense(x, w):
    return (x.astype(np.float64) @ w.T.astype(np.float64)).astype(x.dtype)


def _matmul_shape(shapes, attrs):
    a, b = shapes
    try:
        return np.matmul(np.empty(a, np.int8), np.empty(b, np.int8)).shape
    except ValueError:
        raise _Bad("inner dimensions differ") from None


@_op("nn.matmul", 2, shape=_matmul_shape)
def _matmul(a, b):
    return np.matmul(a, b).astype(np.result_type(a, b))


def _bmm_shape(shapes, attrs):
    a, b = shapes
    _need(len(a) == 3 and len(b) == 3, "nn.batch_matmul needs 3-D operands")
    k_b = b[2] if attrs["transpose_b"] else b[1]
    n = b[1] if attrs["transpose_b"] else b[2]
    _need(a[2] == k_b and (a[0] == b[0] or 1 in (a[0], b[0])), "batch or inner dimensions differ")
    return (max(a[0], b[0]), a[1], n)


@_op("nn.batch_matmul", 2, {"transpose_b": True}, _bmm_shape)
def _bmm(a, b, transpose_b):
    return np.matmul(a, b.transpose(0, 2, 1) if transpose_b else b).astype(a.dtype)


def _bias_add_shape(shapes, attrs):
    x, b = shapes
    ax = attrs["axis"] % len(x)
    _need(len(b) == 1 and b[0] == x[ax], f"bias of length {x[ax]} needed on axis {attrs['axis']}")
    return tuple(x)


@_op("nn.bias_add", 2, {"axis": 1}, _bias_add_shape)
def _bias_add(x, b, axis):
    ax = axis % x.ndim
    return (x + b.reshape((-1,) + (1,) * (x.ndim - ax - 1))).astype(x.dtype)


# ----------------------------------------------------------------------------- convolution and pooling
def _pads(p):
    p = tuple(p)
    return (p * 4)[:4] if len(p) == 1 else (p + p if len(p) == 2 else p)   # (top, left, bottom, right)


_LAYOUTS = {("NCHW", "OIHW"), ("NHWC", "OHWI")}


def _conv_shape(shapes, attrs):
    x, w = shapes
    dl, kl = attrs.get("data_layout", "NCHW"), attrs.get("kernel_layout", "OIHW")
    _need((dl, kl) in _LAYOUTS, f"layouts {dl}/{kl} (supported: NCHW/OIHW, NHWC/OHWI)")
    _need(len(x) == 4 and len(w) == 4, f"nn.conv2d needs 4-D {dl} data and {kl} weights")
    if dl == "NHWC":                       # compute the shape in NCHW/OIHW, answer in NHWC
        n, c, oh, ow = _conv_shape([(x[0], x[3], x[1], x[2]), (w[0], w[3], w[1], w[2])],
                                   {**attrs, "data_layout": "NCHW", "kernel_layout": "OIHW"})
        return (n, oh, ow, c)
    g = attrs["groups"]
    _need(x[1] == w[1] * g and w[0] % g == 0, f"{x[1]} input channels do not match weight {w} with groups={g}")
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    t, l, b, r = _pads(attrs["padding"])
    oh = (x[2] + t + b - dh * (w[2] - 1) - 1) // sh + 1
    ow = (x[3] + l + r - dw * (w[3] - 1) - 1) // sw + 1
    _need(oh > 0 and ow > 0, "the kernel is larger than the padded input")
    return (x[0], w[0], oh, ow)


def _windows(x, kh, kw, sh, sw, dh, dw, oh, ow):
    """View of x (N, C, H, W) as (N, C, oh, ow, kh, kw) windows (no copy)."""
    n, c, _, _ = x.shape
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False)


@_op("nn.conv2d", 2, {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
                     "data_layout": "NCHW", "kernel_layout": "OIHW"}, _conv_shape)
def _conv2d(x, w, strides, padding, dilation, groups, data_layout="NCHW", kernel_layout="OIHW"):
    """Relay's nn.conv2d in NCHW/OIHW, or NHWC/OHWI (the same arithmetic on transposed views)."""
    if data_layout == "NHWC":
        out = _conv2d(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), strides, padding, dilation, groups)
        return np.ascontiguousarray(out.transpose(0, 2, 3, 1))
    t, l, b, r = _pads(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    o, cg, kh, kw = w.shape
    _, _, oh, ow = _conv_shape([x.shape, w.shape], {"strides": strides, "padding": padding, "dilation": dilation,
                                                    "groups": groups})
    win = _windows(xp, kh, kw, strides[0], strides[1], dilation[0], dilation[1], oh, ow)
    n = x.shape[0]
    og = o // groups
    out = np.empty((n, o, oh, ow), dtype=np.result_type(x, w))
    for g in range(groups):                     # im2col per group, one matmul each
        cols = win[:, g * cg:(g + 1) * cg].transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, cg * kh * kw)
        res = cols.astype(np.float64) @ w[g * og:(g + 1) * og].reshape(og, -1).T.astype(np.float64)
        out[:, g * og:(g + 1) * og] = res.reshape(n, oh, ow, og).transpose(0, 3, 1, 2)
    return out


def _im2col_shape(shapes, attrs):
    (x,) = shapes
    _need(len(x) == 4, "nn.im2col needs NCHW data")
    kh, kw = attrs["kernel_size"]
    _, _, oh, ow = _conv_shape([x, (1, x[1], kh, kw)], {**attrs, "groups": 1})
    return (x[0] * oh * ow, x[1] * kh * kw)


@_op("nn.im2col", 1, {"kernel_size": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1)},
     _im2col_shape)
def _im2col(x, kernel_size, strides, padding, dilation):
    """The windows of a convolution as rows: x[N, C, H, W] -> [N*OH*OW, C*KH*KW], row (n, oy, ox)
    holding the window at output (oy, ox) in (c, ky, kx) order (zero padding), so that
    ``nn.conv2d(x, w) = transpose(reshape(nn.dense(im2col(x), reshape(w, [O, C*KH*KW])), [N, OH, OW, O]),
    (0, 3, 1, 2))`` (groups 1). A pure data-movement operator."""
    t, l, b, r = _pads(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    kh, kw = kernel_size
    n, c, oh, ow = x.shape[0], x.shape[1], *_conv_shape([x.shape, (1, x.shape[1], kh, kw)],
                                                         {"strides": strides, "padding": padding,
                                                          "dilation": dilation, "groups": 1})[2:]
    win = _windows(xp, kh, kw, strides[0], strides[1], dilation[0], dilation[1], oh, ow)
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)


def _pool_shape(shapes, attrs):
    (x,) = shapes
    _need(len(x) == 4, "2-D pooling needs NCHW data")
    (ph, pw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    t, l, b, r = _pads(attrs["padding"])
    rnd = math.ceil if attrs["ceil_mode"] else math.floor
    oh = int(rnd((x[2] + t + b - ph) / sh)) + 1
    ow = int(rnd((x[3] + l + r - pw) / sw)) + 1
    if attrs["ceil_mode"]:                  # a window must start inside the input or its leading pad
        oh -= (oh - 1) * sh >= x[2] + t
        ow -= (ow - 1) * sw >= x[3] + l
    _need(oh > 0 and ow > 0, "the window is larger than the padded input")
    return (x[0], x[1], oh, ow)


def _pool(x, attrs, reduce, pad_value):
    (ph, pw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    t, l, b, r = _pads(attrs["padding"])
    _, _, oh, ow = _pool_shape([x.shape], attrs)
    extra_h = max(0, (oh - 1) * sh + ph - (x.shape[2] + t + b))
    extra_w = max(0, (ow - 1) * sw + pw - (x.shape[3] + l + r))
    xp = np.pad(x, ((0, 0), (0, 0), (t, b + extra_h), (l, r + extra_w)), constant_values=pad_value)
    return reduce(_windows(xp, ph, pw, sh, sw, 1, 1, oh, ow), axis=(4, 5)), (t, l, b, r, extra_h, extra_w)


_POOL = {"pool_size": (2, 2), "strides": (1, 1), "padding": (0, 0, 0, 0), "ceil_mode": False}


@_op("nn.max_pool2d", 1, dict(_POOL), _pool_shape)
def _max_pool(x, **attrs):
    return _pool(x, attrs, np.max, -np.inf)[0].astype(x.dtype)


@_op("nn.avg_pool2d", 1, {**_POOL, "count_include_pad": False}, _pool_shape)
def _avg_pool(x, **attrs):
    s, (t, l, b, r, eh, ew) = _pool(x, attrs, np.sum, 0.0)
    if attrs["count_include_pad"]:          # explicit padding counts, the ceil-mode overhang does not
        cnt = np.ones((x.shape[2] + t + b, x.shape[3] + l + r), x.dtype)
    else:
        cnt = np.pad(np.ones(x.shape[2:], x.dtype), ((t, b), (l, r)))
    cnt = np.pad(cnt, ((0, eh), (0, ew)))
    (ph, pw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    oh, ow = s.shape[2:]
    c = _windows(cnt[None, None], ph, pw, sh, sw, 1, 1, oh, ow).sum(axis=(4, 5))
    return (s / np.maximum(c, 1)).astype(x.dtype)


@_op("nn.global_avg_pool2d", 1, shape=lambda s, a: (s[0][0], s[0][1], 1, 1))
def _gap(x):
    return x.mean(axis=(2, 3), keepdims=True).astype(x.dtype)


# ----------------------------------------------------------------------------- normalisation
def _bn_shape(shapes, attrs):
    x = shapes[0]
    ax = attrs["axis"] % len(x)
    _need(all(len(s) == 1 and s[0] == x[ax] for s in shapes[1:]), f"parameters of length {x[ax]} needed")
    return tuple(x)


@_op("nn.batch_norm", 5, {"axis": 1, "epsilon": 1e-5}, _bn_shape)
def _batch_norm(x, gamma, beta, mean, var, axis, epsilon):
    shp = [1] * x.ndim
    shp[axis % x.ndim] = -1
    scale = (gamma / np.sqrt(var + epsilon)).reshape(shp)
    return ((x - mean.reshape(shp)) * scale + beta.reshape(shp)).astype(x.dtype)


def _ln_shape(shapes, attrs):
    x = shapes[0]
    _need(all(tuple(s) == tuple(x[attrs["axis"] % len(x):]) or s == (x[-1],) for s in shapes[1:]),
          "gamma/beta must match the normalised axis")
    return tuple(x)


@_op("nn.layer_norm", 3, {"axis": -1, "epsilon": 1e-5}, _ln_shape)
def _layer_norm(x, gamma, beta, axis, epsilon):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return ((x - mu) / np.sqrt(var + epsilon) * gamma + beta).astype(x.dtype)


@_op("nn.softmax", 1, {"axis": -1}, _same)
def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


# ----------------------------------------------------------------------------- layout
def _reshape_shape(shapes, attrs):
    (x,) = shapes
    try:
        return np.empty(x, np.int8).reshape(attrs["newshape"]).shape
    except ValueError:
        raise _Bad(f"cannot reshape {tuple(x)} to {tuple(attrs['newshape'])}") from None


@_op("reshape", 1, {"newshape": ()}, _reshape_shape)
def _reshape(x, newshape):
    return x.reshape(newshape)


def _transpose_shape(shapes, attrs):
    (x,) = shapes
    axes = attrs["axes"] or tuple(reversed(range(len(x))))
    _need(sorted(a % len(x) for a in axes) == list(range(len(x))), f"axes {axes} are not a permutation")
    return tuple(x[a] for a in axes)


@_op("transpose", 1, {"axes": ()}, _transpose_shape)
def _transpose(x, axes):
    return np.transpose(x, axes or None)


@_op("nn.batch_flatten", 1, shape=lambda s, a: (s[0][0], int(np.prod(s[0][1:]))))
def _batch_flatten(x):
    return x.reshape(x.shape[0], -1)


def _concat_shape(shapes, attrs):
    ax = attrs["axis"] % len(shapes[0])
    _need(all(len(s) == len(shapes[0]) and all(a == b for k, (a, b) in enumerate(zip(s, shapes[0])) if k != ax)
              for s in shapes), "shapes differ off the concatenation axis")
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    return tuple(out)


@_op("concatenate", None, {"axis": 0}, _concat_shape)
def _concatenate(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _squeeze_shape(shapes, attrs):
    (x,) = shapes
    axes = attrs["axis"]
    axes = [a for a in range(len(x)) if x[a] == 1] if axes is None else [a % len(x) for a in axes]
    _need(all(x[a] == 1 for a in axes), f"axes {axes} are not of size 1")
    return tuple(d for k, d in enumerate(x) if k not in axes)


@_op("squeeze", 1, {"axis": None}, _squeeze_shape)
def _squeeze(x, axis):
    return x.reshape(_squeeze_shape([x.shape], {"axis": axis}))


def _expand_shape(shapes, attrs):
    (x,) = shapes
    ax = attrs["axis"] % (len(x) + 1) if attrs["axis"] < 0 else attrs["axis"]
    return tuple(x[:ax]) + (1,) * attrs["num_newaxis"] + tuple(x[ax:])


@_op("expand_dims", 1, {"axis": 0, "num_newaxis": 1}, _expand_shape)
def _expand_dims(x, axis, num_newaxis):
    return x.reshape(_expand_shape([x.shape], {"axis": axis, "num_newaxis": num_newaxis}))


def _mean_shape(shapes, attrs):
    (x,) = shapes
    axes = range(len(x)) if attrs["axis"] is None else [a % len(x) for a in attrs["axis"]]
    return tuple(1 if k in axes else d for k, d in enumerate(x)) if attrs["keepdims"] else \
        tuple(d for k, d in enumerate(x) if k not in axes)


@_op("mean", 1, {"axis": None, "keepdims": False}, _mean_shape)
def _mean(x, axis, keepdims):
    return x.mean(axis=None if axis is None else tuple(axis), keepdims=keepdims).astype(x.dtype)


def _take_shape(shapes, attrs):
    data, idx = shapes
    ax = attrs["axis"] % len(data)
    return tuple(data[:ax]) + tuple(idx) + tuple(data[ax + 1:])


@_op("take", 2, {"axis": 0}, _take_shape)
def _take(data, idx, axis):
    return np.take(data, idx.astype(np.int64), axis=axis)


# ----------------------------------------------------------------------------- the two entry points
def schema(op: str, source: str = "") -> OpDef:
    """The operator's definition; UnsupportedOperatorError naming it (and the source node)."""
    d = OPS.get(op)
    if d is None:
        raise UnsupportedOperatorError(f"unsupported operator {op!r}" + (f" (node {source})" if source else ""))
    return d


def normalise_attrs(op: str, attrs: dict, source: str = "") -> dict:
    """The full attribute dict (defaults filled in, sequences as tuples); unknown attributes are
    refused naming them."""
    d = schema(op, source)
    unknown = set(attrs) - set(d.attrs)
    if unknown:
        raise UnsupportedOperatorError(f"operator {op!r}" + (f" (node {source})" if source else "")
                                       + f": unsupported attribute(s) {sorted(unknown)}; known {sorted(d.attrs)}")
    out = dict(d.attrs)
    for k, v in attrs.items():
        out[k] = tuple(v) if isinstance(v, (list, tuple)) else v
    return out


def infer(op: str, shapes: list[Shape], attrs: dict, source: str = "") -> Shape:
    """The output shape of ``op`` on operands of ``shapes``; ShapeMismatchError naming the
    operator, every operand shape and the source node."""
    d = schema(op, source)
    if d.arity is not None and len(shapes) != d.arity:
        raise ShapeMismatchError(f"{op} takes {d.arity} operand(s), got {len(shapes)}"
                                 + (f" (node {source})" if source else ""))
    try:
        return tuple(int(v) for v in d.shape([tuple(s) for s in shapes], attrs))
    except _Bad as exc:
        shown = ", ".join(str(tuple(s)) for s in shapes)
        raise ShapeMismatchError(f"{op}: operand shapes {shown}: {exc}" + (f" (node {source})" if source else "")) \
            from None


def evaluate(op: str, args: list[np.ndarray], attrs: dict) -> np.ndarray:
    """The host semantics of ``op`` (numpy)."""
    return OPS[op].fn(*args, **attrs)


# ----------------------------------------------------------------------------- slicing, padding
def _slice_index(shape, attrs):
    idx = [slice(None)] * len(shape)
    for b, e, s, ax in zip(attrs["begin"], attrs["end"], attrs["strides"] or (1,) * len(attrs["begin"]),
                           attrs["axes"] or range(len(attrs["begin"]))):
        idx[ax % len(shape)] = slice(b, e, s)
    return tuple(idx)


def _slice_shape(shapes, attrs):
    (x,) = shapes
    _need(len(attrs["begin"]) == len(attrs["end"]), "begin and end differ in length")
    return np.empty(x, np.int8)[_slice_index(x, attrs)].shape


@_op("strided_slice", 1, {"begin": (), "end": (), "strides": (), "axes": ()}, _slice_shape)
def _strided_slice(x, **attrs):
    return x[_slice_index(x.shape, attrs)]


def _pad_shape(shapes, attrs):
    (x,) = shapes
    pw = attrs["pad_width"]
    _need(len(pw) == len(x) and all(len(p) == 2 and min(p) >= 0 for p in pw), "pad_width needs (before, after) >= 0 per axis")
    return tuple(d + a + b for d, (a, b) in zip(x, pw))


def _pad_shape_mode(shapes, attrs):
    _need(attrs["pad_mode"] in ("constant", "edge", "reflect"), f"pad_mode {attrs['pad_mode']!r} is not "
          "constant, edge or reflect")
    if attrs["pad_mode"] == "reflect":
        _need(all(max(p) < d for d, p in zip(shapes[0], attrs["pad_width"])), "reflect padding needs pads < the axis")
    return _pad_shape(shapes, attrs)


@_op("nn.pad", 1, {"pad_width": (), "pad_value": 0.0, "pad_mode": "constant"}, _pad_shape_mode)
def _pad(x, pad_width, pad_value, pad_mode):
    """Relay's nn.pad: constant (pad_value), edge (repeat the border), reflect (mirror, border once)."""
    if pad_mode == "constant":
        return np.pad(x, pad_width, constant_values=pad_value)
    return np.pad(x, pad_width, mode=pad_mode)


_CAST_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "bool")


def _cast_shape(shapes, attrs):
    _need(attrs["dtype"] in _CAST_TYPES, f"dtype {attrs['dtype']!r} is not one of {', '.join(_CAST_TYPES)}")
    return tuple(shapes[0])


@_op("cast", 1, {"dtype": "float32"}, _cast_shape)
def _cast(x, dtype):
    """Relay's cast (numpy conversion: float -> int truncates toward zero, out-of-range is undefined)."""
    with np.errstate(all="ignore"):
        return x.astype(dtype)


# ----------------------------------------------------------------------------- recurrent
def _lstm_shape(shapes, attrs):
    x, w, r = shapes[:3]
    _need(len(x) == 3 and len(w) == 3 and w[0] == 1 and w[1] % 4 == 0 and w[2] == x[2] and
          tuple(r) == (1, w[1], w[1] // 4), "nn.lstm needs x[T, B, I], w[1, 4H, I], r[1, 4H, H]")
    return (x[0], 1, x[1], w[1] // 4)


@_op("nn.lstm", None, {}, _lstm_shape)
def _lstm(x, w, r, b=None, h0=None, c0=None):
    """One forward LSTM layer with ONNX's semantics and gate order (i, o, f, c): inputs x[T, B, I],
    weights w[1, 4H, I], recurrence r[1, 4H, H], bias b[1, 8H] (input then recurrence), initial
    states [1, B, H]; returns the sequence output Y[T, 1, B, H] (float64 inside, float32 out)."""
    T, B, _ = x.shape
    H = r.shape[2]
    W, R = w[0].astype(np.float64), r[0].astype(np.float64)
    bias = np.zeros(4 * H) if b is None else b[0, :4 * H].astype(np.float64) + b[0, 4 * H:].astype(np.float64)
    h = np.zeros((B, H)) if h0 is None else h0[0].astype(np.float64)
    c = np.zeros((B, H)) if c0 is None else c0[0].astype(np.float64)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))    # noqa: E731
    out = np.empty((T, 1, B, H), np.float64)
    xw = x.astype(np.float64) @ W.T + bias
    for t in range(T):
        g = xw[t] + h @ R.T
        i, o, f, cc = sig(g[:, :H]), sig(g[:, H:2 * H]), sig(g[:, 2 * H:3 * H]), np.tanh(g[:, 3 * H:])
        c = f * c + i * cc
        h = o * np.tanh(c)
        out[t, 0] = h
    return out.astype(x.dtype)


def _lstm_layer_shape(shapes, attrs):
    x, w_ih, w_hh, b = shapes
    _need(len(x) == 2, f"lstm_layer needs x[T, I] (2-D), got rank {len(x)}")
    _need(len(w_hh) == 2 and w_hh[0] >= 4 and w_hh[0] == 4 * w_hh[1],
          f"lstm_layer needs w_hh[4H, H], got {tuple(w_hh)}")
    H = w_hh[1]
    _need(tuple(w_ih) == (4 * H, x[1]), f"lstm_layer needs w_ih[4H, I] = ({4 * H}, {x[1]}), got {tuple(w_ih)}")
    _need(tuple(b) == (4 * H,), f"lstm_layer needs b[4H] = ({4 * H},), got {tuple(b)}")
    return (x[0], H)


@_op("lstm_layer", 4, {}, _lstm_layer_shape)
def _lstm_layer(x, w_ih, w_hh, b):
    """One forward LSTM layer as FlexASR runs it (paper §4.4.2) and as the compiler-IR ILA's
    ``lstm_layer`` instruction states it: PyTorch's nn.LSTM equations and gate order (i, f, g, o)
    in the 4H weight rows; x[T, I], w_ih[4H, I], w_hh[4H, H], one bias b[4H] (= b_ih + b_hh), zero
    initial hidden and cell state; returns the hidden-state sequence h[T, H]. Computed in float64,
    rounded once to float32 (the float reference of ``ila.models.flexasr.reference.lstm_layer``
    up to float32 rounding)."""
    H = w_hh.shape[1]
    Wi, Wh = w_ih.astype(np.float64), w_hh.astype(np.float64)
    xw = x.astype(np.float64) @ Wi.T + b.astype(np.float64)
    h, c = np.zeros(H), np.zeros(H)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))    # noqa: E731
    out = np.empty((x.shape[0], H), np.float64)
    for t in range(x.shape[0]):
        g = xw[t] + Wh @ h
        i, f, gg, o = sig(g[:H]), sig(g[H:2 * H]), np.tanh(g[2 * H:3 * H]), sig(g[3 * H:])
        c = f * c + i * gg
        h = o * np.tanh(c)
        out[t] = h
    return out.astype(np.float32)
