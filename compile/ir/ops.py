"""The operators of the tensor IR: one table holding, per operator, its attributes (Relay's names
and defaults), its shape rule and its host semantics in numpy (float32; int64 for indices).

Names and attributes follow TVM Relay (``nn.conv2d`` with ``strides``, ``padding``, ``dilation``,
``groups``; ``nn.max_pool2d`` with ``pool_size``, ...), so the mappings' IR patterns
(``python -m verify.mapping --list``) read the same. Layouts are Relay's defaults: NCHW
activations, OIHW weights; ``nn.dense(x[..., K], w[N, K]) = x @ w.T``. Convolutions (1-D to 3-D,
grouped, depthwise, transposed), dense layers, matrix products of Einsum, recurrent layers and
normalisations accumulate in float64 and round once to float32 (so equal mathematical results are
equal bit for bit, whatever order a BLAS kernel sums in, up to the rare float64 sum that lands on
a float32 rounding boundary); the float64 copy of a read-only (constant) weight is made once and
kept while the array lives (:func:`_f64w`). Semantics: the ONNX operator specification where an
ONNX operator maps onto the IR one (each operator's docstring names it), Relay's otherwise.

:func:`infer` checks operand shapes when a node is built (ShapeMismatchError naming the
operator, the shapes and the source); :func:`result_dtype` gives the result's dtype;
:func:`evaluate` runs the numpy semantics.
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
    dtype: Callable[..., str] | None = None     # (list of input dtypes, attrs) -> output dtype; None: promotion


OPS: dict[str, OpDef] = {}


def _op(name, arity, attrs=None, shape=None, dtype=None):
    def reg(fn):
        OPS[name] = OpDef(name, arity, dict(attrs or {}), shape, fn, dtype)
        return fn
    return reg


# output dtype rules (OpDef.dtype)
def _bool(dtypes, attrs):
    return "bool"


def _int64(dtypes, attrs):
    return "int64"


def _first(dtypes, attrs):
    return dtypes[0]


def _attr_dtype(dtypes, attrs):
    return attrs["dtype"]


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
    _op(_name, 2, shape=_broadcast)(lambda a, b, _f=_f: _f(a, b).astype(np.result_type(a, b), copy=False))
_op("divide", 2, shape=_broadcast)(_divide)
# power keeps the base's type (ONNX Pow: an int32 base with a float exponent gives int32)
_op("power", 2, shape=_broadcast)(lambda a, b: np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
                                  if a.dtype != b.dtype else np.power(a, b).astype(a.dtype))


def _sigmoid(x):
    t = np.exp(-x)                       # 1 / (1 + exp(-x)), in place (the same operations in order)
    t += 1.0
    return np.divide(1.0, t, out=t).astype(x.dtype, copy=False)


try:                                      # the float64 error function: scipy's when installed (fast),
    from scipy.special import erf as _erf64   # else math.erf element by element; both accurate to
except ImportError:                       # float64 rounding, so the float32 results agree
    _erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf64(x.astype(np.float64)).astype(x.dtype, copy=False)


_F64: dict[int, tuple] = {}               # id -> (weak reference, float64 copy) of read-only arrays
_F64_LIMIT = 2 << 30                      # bytes of float64 copies kept at most
_f64_bytes = [0]


def _f64w(a):
    """``a`` in float64. Read-only arrays (the importer's constants: weights) are converted once and
    the copy kept while the array lives (up to _F64_LIMIT bytes); writeable ones every time."""
    if a.dtype == np.float64:
        return a
    if a.flags.writeable:
        return a.astype(np.float64)
    key = id(a)
    hit = _F64.get(key)
    if hit is not None and hit[0]() is a:
        return hit[1]
    out = a.astype(np.float64)
    if _f64_bytes[0] + out.nbytes <= _F64_LIMIT:
        import weakref

        def _drop(_, key=key, n=out.nbytes):
            if _F64.pop(key, None) is not None:
                _f64_bytes[0] -= n
        try:
            _F64[key] = (weakref.ref(a, _drop), out)
            _f64_bytes[0] += out.nbytes
        except TypeError:
            pass
    return out


_UNARY = {
    "nn.relu": lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "negative": np.negative,
    "abs": np.abs,
    "erf": _erf,
    "nn.silu": lambda x: np.multiply(x, _sigmoid(x)).astype(x.dtype, copy=False),
    "nn.gelu": lambda x: (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(x.dtype),
    "nn.hardswish": lambda x: (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype),
    "nn.dropout": lambda x: x,                       # identity at inference
}
for _name, _f in _UNARY.items():
    _op(_name, 1, shape=_same)(_f)


@_op("clip", 1, {"a_min": 0.0, "a_max": 6.0}, _same)
def _clip(x, a_min, a_max):
    """min(max(x, a_min), a_max) (as numpy's clip; NaN stays NaN)."""
    y = np.maximum(x, a_min)
    inplace = isinstance(y, np.ndarray) and y.ndim > 0 and y.dtype == np.result_type(y, a_max)
    return np.asarray(np.minimum(y, a_max, out=y if inplace else None)).astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------- dense / matmul
def _dense_shape(shapes, attrs):
    x, w = shapes
    _need(len(w) == 2 and len(x) >= 1 and x[-1] == w[1], "nn.dense needs x[..., K] and w[N, K]")
    return tuple(x[:-1]) + (w[0],)


@_op("nn.dense", 2, shape=_dense_shape)
def _dense(x, w):
    """x[..., K] @ w[N, K].T, float64 accumulation rounded once to x's type (one BLAS product
    over all leading axes)."""
    y = x.reshape(-1, x.shape[-1]).astype(np.float64) @ _f64w(w).T
    return y.reshape(x.shape[:-1] + (w.shape[0],)).astype(x.dtype)


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
    return np.add(x, b.reshape((-1,) + (1,) * (x.ndim - ax - 1))).astype(x.dtype, copy=False)


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
    return _windows_nd(x, (kh, kw), (sh, sw), (dh, dw), (oh, ow))


def _windows_nd(x, kernel, strides, dilation, out):
    """View of x (N, C, *S) as (N, C, *out, *kernel) windows (no copy): element
    [n, c, o..., k...] is x[n, c, o*stride + k*dilation] per spatial axis."""
    s = x.strides
    sp = s[2:]
    return np.lib.stride_tricks.as_strided(
        x, x.shape[:2] + tuple(out) + tuple(kernel),
        s[:2] + tuple(a * b for a, b in zip(sp, strides)) + tuple(a * b for a, b in zip(sp, dilation)),
        writeable=False)


def _pads_nd(p, nd):
    """Padding as (before per axis, after per axis): one value for all, one per axis (symmetric),
    or 2*nd values (befores then afters, ONNX's order)."""
    p = tuple(int(v) for v in p)
    if len(p) == 1:
        p = p * (2 * nd)
    elif len(p) == nd:
        p = p + p
    _need(len(p) == 2 * nd, f"padding needs 1, {nd} or {2 * nd} values, got {len(p)}")
    return p[:nd], p[nd:]


def _zero_pad(x, before, after):
    """x[N, C, *S] with zeros before and after each spatial axis (np.pad without its overhead)."""
    out = np.zeros(x.shape[:2] + tuple(d + b + a for d, b, a in zip(x.shape[2:], before, after)), x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(b, b + d) for d, b in zip(x.shape[2:], before))] = x
    return out


def _conv_out_sizes(x, w, strides, before, after, dilation):
    out = tuple((d + b + a - dl * (k - 1) - 1) // s + 1
                for d, k, s, b, a, dl in zip(x[2:], w[2:], strides, before, after, dilation))
    _need(all(o > 0 for o in out), "the kernel is larger than the padded input")
    return out


def _conv_core(x, w, strides, before, after, dilation, groups):
    """N-d cross-correlation (ONNX Conv / Relay nn.conv{1,2,3}d): x[N, C, *S], w[O, C/groups, *K]
    -> [N, O, *OS]. The columns (im2col: [C/groups * K, OS] per image and group) are gathered
    once into float64 (one strided copy per kernel tap, converting as it copies; a 1x1 stride-1
    kernel reads x itself), then one BLAS float64 matrix product per image and group batch
    (depthwise: a vectorised multiply-add over the taps); the float64 sums are rounded once to
    the result type. Weights are converted to float64 once per constant (:func:`_f64w`)."""
    nd = x.ndim - 2
    if any(before) or any(after):
        x = _zero_pad(x, before, after)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    out = _conv_out_sizes(x.shape, w.shape, strides, (0,) * nd, (0,) * nd, dilation)
    g, og = groups, o // groups
    kk, length = int(np.prod(kernel, dtype=np.int64)), int(np.prod(out, dtype=np.int64))
    rtype = np.result_type(x, w)
    wm = _f64w(w).reshape(g, og, cg * kk)
    if og == 1 and cg == 1 and g > 1 and length <= 256:   # depthwise, small maps: channels innermost
        xt = np.moveaxis(x, 1, -1).astype(np.float64)        # [N, *S, C]
        wt = np.ascontiguousarray(wm.reshape(c, kk).T)       # [K, C]
        acc = np.zeros((n,) + out + (c,))
        tmp = np.empty_like(acc)
        for j, k in enumerate(np.ndindex(*kernel)):
            tap = xt[(slice(None),) + tuple(slice(kk_ * dl, kk_ * dl + st * (o_ - 1) + 1, st)
                                            for kk_, dl, st, o_ in zip(k, dilation, strides, out))]
            np.multiply(tap, wt[j], out=tmp)
            acc += tmp
        return np.moveaxis(acc, -1, 1).astype(rtype)
    if og == 1 and cg == 1 and g > 1:                 # depthwise: multiply-add over the taps, channel blocks
        res = np.empty((n, c) + out, rtype)           # whose float64 sums stay in cache
        wt = wm.reshape(c, kk)
        step = max(1, (1 << 16) // max(length, 1))
        for b0 in range(0, c, step):
            b1 = min(c, b0 + step)
            acc = np.zeros((n, b1 - b0) + out)
            tmp = np.empty_like(acc)
            wb = wt[b0:b1].reshape((1, b1 - b0) + (1,) * nd + (kk,))
            for j, tap in enumerate(_taps(x[:, b0:b1], kernel, strides, dilation, out)):
                np.multiply(tap, wb[..., j], out=tmp)
                acc += tmp
            res[:, b0:b1] = acc
        return res
    if kk == 1 and all(s == 1 for s in strides):     # 1x1, stride 1: the columns are x itself
        cols = x.reshape(n, g, cg, length).astype(np.float64)
    else:
        cols = np.empty((n, c) + kernel + out, np.float64)
        for k, tap in zip(np.ndindex(*kernel), _taps(x, kernel, strides, dilation, out)):
            cols[(slice(None), slice(None)) + k] = tap
        cols = cols.reshape(n, g, cg * kk, length)
    if g == 1:
        res = np.matmul(wm[0], cols[:, 0])                               # (N, O, L)
    else:
        res = np.matmul(wm[None], cols)                                   # (N, G, Og, L)
    return res.reshape((n, o) + out).astype(rtype, copy=False)


@_op("nn.conv2d", 2, {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
                     "data_layout": "NCHW", "kernel_layout": "OIHW"}, _conv_shape)
def _conv2d(x, w, strides, padding, dilation, groups, data_layout="NCHW", kernel_layout="OIHW"):
    """Relay's nn.conv2d in NCHW/OIHW, or NHWC/OHWI (the same arithmetic on transposed views);
    :func:`_conv_core` (float64 accumulation rounded once)."""
    if data_layout == "NHWC":
        out = _conv2d(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), strides, padding, dilation, groups)
        return np.ascontiguousarray(out.transpose(0, 2, 3, 1))
    t, l, b, r = _pads(padding)
    return _conv_core(x, w, tuple(strides), (t, l), (b, r), tuple(dilation), groups)


def _convnd_shape(nd, name):
    def shape(shapes, attrs):
        x, w = shapes
        _need(len(x) == nd + 2 and len(w) == nd + 2, f"{name} needs {nd + 2}-D data and weights")
        g = attrs["groups"]
        _need(g >= 1 and x[1] == w[1] * g and w[0] % g == 0,
              f"{x[1]} input channels do not match weight {w} with groups={g}")
        _need(len(attrs["strides"]) == nd and len(attrs["dilation"]) == nd, f"strides and dilation need {nd} values")
        before, after = _pads_nd(attrs["padding"], nd)
        return (x[0], w[0]) + _conv_out_sizes(x, w, attrs["strides"], before, after, attrs["dilation"])
    return shape


def _convnd(nd):
    def conv(x, w, strides, padding, dilation, groups):
        before, after = _pads_nd(padding, nd)
        return _conv_core(x, w, tuple(strides), before, after, tuple(dilation), groups)
    conv.__doc__ = (f"Relay's nn.conv{nd}d (ONNX Conv with {nd} spatial axes): data [N, C, *S] (NC{'DHW'[3 - nd:]}), "
                    f"weights [O, C/groups, *K]; padding (befores, afters); float64 accumulation rounded once.")
    return conv


for _nd in (1, 3):
    _op(f"nn.conv{_nd}d", 2, {"strides": (1,) * _nd, "padding": (0,) * (2 * _nd), "dilation": (1,) * _nd,
                              "groups": 1}, _convnd_shape(_nd, f"nn.conv{_nd}d"))(_convnd(_nd))


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
    (0, 3, 1, 2))`` (groups 1). A pure data-movement operator (any dtype)."""
    t, l, b, r = _pads(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    kh, kw = kernel_size
    n, c, oh, ow = x.shape[0], x.shape[1], *_conv_shape([x.shape, (1, x.shape[1], kh, kw)],
                                                         {"strides": strides, "padding": padding,
                                                          "dilation": dilation, "groups": 1})[2:]
    win = _windows(xp, kh, kw, strides[0], strides[1], dilation[0], dilation[1], oh, ow)
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)


# pooling (ONNX MaxPool / AveragePool / LpPool semantics: ceil_mode drops a last window that would
# start in the end padding; average pools divide by the window's elements inside the input, or inside
# the explicitly padded input with count_include_pad, never counting the ceil-mode overhang)
def _pool_geometry(in_sp, kernel, strides, before, after, dilation, ceil_mode):
    """(output sizes, overhang per axis) of a pooling window sweep."""
    out, extra = [], []
    for d, k, s, b, a, dl in zip(in_sp, kernel, strides, before, after, dilation):
        span = d + b + a - dl * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= d + b:       # a window must start inside the input or its leading pad
            o -= 1
        _need(o > 0, "the window is larger than the padded input")
        out.append(o)
        extra.append(max(0, (o - 1) * s + dl * (k - 1) + 1 - (d + b + a)))
    return tuple(out), tuple(extra)


def _taps(xp, kernel, strides, dilation, out):
    """For every kernel tap, the strided view of xp [N, C, *S] it reads at each output position."""
    for k in np.ndindex(*kernel):
        yield xp[(slice(None), slice(None)) + tuple(
            slice(kk * dl, kk * dl + s * (o - 1) + 1, s) for kk, dl, s, o in zip(k, dilation, strides, out))]


def _pool_nd(x, kernel, strides, before, after, dilation, ceil_mode, kind, count_include_pad=False, p=2):
    """kind 'max' / 'avg' / 'lp' pooling of x[N, C, *S] over windows of ``kernel`` (dilated): one
    vectorised elementwise pass per kernel tap (sums in float64)."""
    out, extra = _pool_geometry(x.shape[2:], kernel, strides, before, after, dilation, ceil_mode)
    spec = ((0, 0), (0, 0)) + tuple((b, a + e) for b, a, e in zip(before, after, extra))
    if kind == "max":
        low = -np.inf if x.dtype.kind == "f" else (np.iinfo(x.dtype).min if x.dtype.kind in "iu" else False)
        xp = np.pad(x, spec, constant_values=low) if any(v for pr in spec for v in pr) else x
        acc = None
        for t in _taps(xp, kernel, strides, dilation, out):
            acc = t.copy() if acc is None else np.maximum(acc, t, out=acc)
        return acc
    xp = np.pad(x.astype(np.float64), spec)
    acc = np.zeros(xp.shape[:2] + tuple(out))
    for t in _taps(xp, kernel, strides, dilation, out):
        acc += np.abs(t) ** p if kind == "lp" else t
    if kind == "lp":
        return acc ** (1.0 / p)
    inside = np.ones(x.shape[2:])
    if count_include_pad:
        inside = np.pad(inside, tuple(zip(before, after)), constant_values=1.0)
        inside = np.pad(inside, tuple((0, e) for e in extra))
    else:
        inside = np.pad(inside, tuple((b, a + e) for b, a, e in zip(before, after, extra)))
    cnt = np.zeros(tuple(out))
    for t in _taps(inside[None, None], kernel, strides, dilation, out):
        cnt += t[0, 0]
    return acc / np.maximum(cnt, 1)


def _pool_shape(shapes, attrs):
    (x,) = shapes
    _need(len(x) == 4, "2-D pooling needs NCHW data")
    t, l, b, r = _pads(attrs["padding"])
    out, _ = _pool_geometry(x[2:], attrs["pool_size"], attrs["strides"], (t, l), (b, r), (1, 1), attrs["ceil_mode"])
    return (x[0], x[1]) + out


_POOL = {"pool_size": (2, 2), "strides": (1, 1), "padding": (0, 0, 0, 0), "ceil_mode": False}


@_op("nn.max_pool2d", 1, dict(_POOL), _pool_shape)
def _max_pool(x, pool_size, strides, padding, ceil_mode):
    t, l, b, r = _pads(padding)
    return _pool_nd(x, pool_size, strides, (t, l), (b, r), (1, 1), ceil_mode, "max").astype(x.dtype)


@_op("nn.avg_pool2d", 1, {**_POOL, "count_include_pad": False}, _pool_shape)
def _avg_pool(x, pool_size, strides, padding, ceil_mode, count_include_pad):
    t, l, b, r = _pads(padding)
    return _pool_nd(x, pool_size, strides, (t, l), (b, r), (1, 1), ceil_mode, "avg",
                    count_include_pad).astype(x.dtype)


def _poolnd_shape(nd, name):
    def shape(shapes, attrs):
        (x,) = shapes
        _need(len(x) == nd + 2, f"{name} needs {nd + 2}-D data")
        _need(len(attrs["pool_size"]) == nd and len(attrs["strides"]) == nd and len(attrs["dilation"]) == nd,
              f"pool_size, strides and dilation need {nd} values")
        before, after = _pads_nd(attrs["padding"], nd)
        out, _ = _pool_geometry(x[2:], attrs["pool_size"], attrs["strides"], before, after, attrs["dilation"],
                                attrs["ceil_mode"])
        return (x[0], x[1]) + out
    return shape


def _poolnd(nd, kind):
    def pool(x, pool_size, strides, padding, dilation, ceil_mode, count_include_pad=False, p=2):
        before, after = _pads_nd(padding, nd)
        return _pool_nd(x, pool_size, strides, before, after, dilation, ceil_mode, kind, count_include_pad,
                        p).astype(x.dtype)
    return pool


for _nd in (1, 2, 3):
    _base = {"pool_size": (1,) * _nd, "strides": (1,) * _nd, "padding": (0,) * (2 * _nd), "dilation": (1,) * _nd,
             "ceil_mode": False}
    if _nd != 2:              # 2-D: nn.max_pool2d / nn.avg_pool2d above (Relay's attributes, no dilation)
        _op(f"nn.max_pool{_nd}d", 1, dict(_base), _poolnd_shape(_nd, f"nn.max_pool{_nd}d"))(_poolnd(_nd, "max"))
        _op(f"nn.avg_pool{_nd}d", 1, {**_base, "count_include_pad": False},
            _poolnd_shape(_nd, f"nn.avg_pool{_nd}d"))(_poolnd(_nd, "avg"))
    _op(f"nn.lp_pool{_nd}d", 1, {**_base, "p": 2}, _poolnd_shape(_nd, f"nn.lp_pool{_nd}d"))(_poolnd(_nd, "lp"))


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
    t = np.subtract(x, mean.reshape(shp))              # (x - mean) * scale + beta, in place
    t *= scale
    t += beta.reshape(shp)
    return t.astype(x.dtype, copy=False)


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
    """The host semantics of ``op`` (numpy; floating-point exceptions give IEEE results, no warnings)."""
    with np.errstate(all="ignore"):
        return OPS[op].fn(*args, **attrs)


def result_dtype(op: str, dtypes: list[str], attrs: dict, source: str = "") -> str:
    """The dtype (numpy name) of ``op``'s result on operands of ``dtypes``: the operator's own rule
    (comparisons give bool, arg-reductions int64, ``cast`` its ``dtype``, indexing operators their
    data's type, ...), else numpy's promotion of the operand types (which is what :func:`evaluate`
    returns)."""
    d = schema(op, source)
    if d.dtype is not None:
        return str(np.dtype(d.dtype(list(dtypes), attrs)))
    return str(np.result_type(*dtypes)) if dtypes else "float32"


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


try:                       # ml_dtypes (an onnx dependency) registers bfloat16, float8, float4, int4, int2 with numpy
    import ml_dtypes as _ml   # noqa: F401
    NARROW_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn")
    NARROW_INTS = ("int4", "uint4", "int2", "uint2")
except ImportError:        # pragma: no cover
    NARROW_FLOATS, NARROW_INTS = (), ()
NARROW = NARROW_FLOATS + NARROW_INTS       # element types only cast operators take or give
_CAST_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "bool") + NARROW


def _cast_shape(shapes, attrs):
    _need(attrs["dtype"] in _CAST_TYPES, f"dtype {attrs['dtype']!r} is not one of {', '.join(_CAST_TYPES)}")
    return tuple(shapes[0])


@_op("cast", 1, {"dtype": "float32"}, _cast_shape)
def _cast(x, dtype):
    """Relay's cast (numpy conversion: float -> int truncates toward zero, out-of-range is undefined;
    to the narrow types of :data:`NARROW` by ml_dtypes: floats rounded to nearest even, beyond the
    range infinity or NaN as the type has them, integers wrapped)."""
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _saturate_shape(shapes, attrs):
    _need(attrs["dtype"] in NARROW_FLOATS, f"dtype {attrs['dtype']!r} is not one of {', '.join(NARROW_FLOATS)}")
    return tuple(shapes[0])


@_op("saturate_cast", 1, {"dtype": "float8_e4m3fn"}, _saturate_shape, _attr_dtype)
def _saturate_cast(x, dtype):
    """ONNX Cast to a float8 / float4 type with saturate=1: values beyond the type's largest
    finite value (infinities included) become that value with their sign, NaN stays NaN, the rest
    round to nearest even."""
    big = float(_ml.finfo(np.dtype(dtype)).max)
    with np.errstate(all="ignore"):
        return np.clip(x.astype(np.float64) if x.dtype.name in NARROW else x, -big, big).astype(dtype)


# ----------------------------------------------------------------------------- recurrent
def _lstm_shape(shapes, attrs):
    x, w, r = shapes[:3]
    _need(len(x) == 3 and len(w) == 3 and w[0] == 1 and w[1] % 4 == 0 and w[2] == x[2] and
          tuple(r) == (1, w[1], w[1] // 4), "nn.lstm needs x[T, B, I], w[1, 4H, I], r[1, 4H, H]")
    return (x[0], 1, x[1], w[1] // 4)


@_op("nn.lstm", None, {}, _lstm_shape)
def _lstm(x, w, r, b=None, h0=None, c0=None, _cell=False):
    """One forward LSTM layer with ONNX's semantics and gate order (i, o, f, c): inputs x[T, B, I],
    weights w[1, 4H, I], recurrence r[1, 4H, H], bias b[1, 8H] (input then recurrence), initial
    states [1, B, H]; returns the sequence output Y[T, 1, B, H] (float64 inside, float32 out)."""
    T, B, _ = x.shape
    H = r.shape[2]
    W, R = _f64w(w)[0], _f64w(r)[0]
    bias = np.zeros(4 * H) if b is None else b[0, :4 * H].astype(np.float64) + b[0, 4 * H:].astype(np.float64)
    h = np.zeros((B, H)) if h0 is None else h0[0].astype(np.float64)
    c = np.zeros((B, H)) if c0 is None else c0[0].astype(np.float64)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))    # noqa: E731
    out = np.empty((T, 1, B, H), np.float64)
    xw = (x.reshape(T * B, -1).astype(np.float64) @ W.T).reshape(T, B, 4 * H) + bias
    RT = R.T
    for t in range(T):
        g = xw[t] + h @ RT
        i, o, f, cc = sig(g[:, :H]), sig(g[:, H:2 * H]), sig(g[:, 2 * H:3 * H]), np.tanh(g[:, 3 * H:])
        c = f * c + i * cc
        h = o * np.tanh(c)
        out[t, 0] = h
    return (c[None] if _cell else out).astype(x.dtype)


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


# ============================================================================= operators added for the ONNX
# model zoo, written PyTorch models and ONNX's conformance suite. Semantics: the ONNX operator
# specification (https://onnx.ai/onnx/operators/) of the operator named in each docstring; Relay's
# operator names where Relay has the operator. Float results keep the input's float type;
# transcendental and accumulating operators compute in float64 and round once.
def _keep(f):
    """Apply ``f`` and keep the first operand's dtype."""
    def g(x, *rest, **attrs):
        return np.asarray(f(x, *rest, **attrs)).astype(x.dtype, copy=False)
    g.__doc__ = f.__doc__
    return g


def _f64(x):
    return x.astype(np.float64)


# ----------------------------------------------------------------------------- elementwise, unary
_UNARY_MORE = {
    "log": np.log, "floor": np.floor, "ceil": np.ceil,
    "round": np.round,                                   # half to even, as ONNX Round
    "sign": np.sign, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh,
    "reciprocal": lambda x: np.divide(1, x),
    "nn.softplus": lambda x: np.logaddexp(0, _f64(x)),
    "nn.softsign": lambda x: x / (1 + np.abs(x)),
    "nn.mish": lambda x: _f64(x) * np.tanh(np.logaddexp(0, _f64(x))),
    "nn.gelu_tanh": lambda x: 0.5 * _f64(x) * (1 + np.tanh(math.sqrt(2 / math.pi) * (_f64(x) + 0.044715 * _f64(x) ** 3))),
}
for _name, _f in _UNARY_MORE.items():
    _op(_name, 1, shape=_same)(_keep(_f))
_op("bitwise_not", 1, shape=_same)(np.invert)
_op("logical_not", 1, shape=_same, dtype=_bool)(lambda x: np.logical_not(x))
_op("isnan", 1, shape=_same, dtype=_bool)(lambda x: np.isnan(x))


@_op("isinf", 1, {"detect_positive": True, "detect_negative": True}, _same, _bool)
def _isinf(x, detect_positive, detect_negative):
    """ONNX IsInf."""
    return (np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative))


@_op("nn.leaky_relu", 1, {"alpha": 0.01}, _same)
@_keep
def _leaky_relu(x, alpha):
    """Relay nn.leaky_relu / ONNX LeakyRelu: x if x >= 0 else alpha * x."""
    return np.where(x >= 0, x, x * np.asarray(alpha, x.dtype))


@_op("nn.elu", 1, {"alpha": 1.0}, _same)
@_keep
def _elu(x, alpha):
    """ONNX Elu: x if x > 0 else alpha * (exp(x) - 1)."""
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(_f64(x), 0)))


@_op("nn.celu", 1, {"alpha": 1.0}, _same)
@_keep
def _celu(x, alpha):
    """ONNX Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return np.maximum(0, _f64(x)) + np.minimum(0, alpha * np.expm1(np.minimum(_f64(x), 0) / alpha))


@_op("nn.selu", 1, {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}, _same)
@_keep
def _selu(x, alpha, gamma):
    """ONNX Selu: gamma * (x if x > 0 else alpha * (exp(x) - 1))."""
    return gamma * np.where(x > 0, _f64(x), alpha * np.expm1(np.minimum(_f64(x), 0)))


@_op("nn.hardsigmoid", 1, {"alpha": 0.2, "beta": 0.5}, _same)
@_keep
def _hardsigmoid(x, alpha, beta):
    """ONNX HardSigmoid: max(0, min(1, alpha * x + beta))."""
    return np.clip(alpha * _f64(x) + beta, 0, 1)


@_op("nn.thresholded_relu", 1, {"alpha": 1.0}, _same)
@_keep
def _thresholded_relu(x, alpha):
    """ONNX ThresholdedRelu: x if x > alpha else 0."""
    return np.where(x > alpha, x, 0)


@_op("nn.shrink", 1, {"bias": 0.0, "lambd": 0.5}, _same)
@_keep
def _shrink(x, bias, lambd):
    """ONNX Shrink: x + bias if x < -lambd, x - bias if x > lambd, else 0."""
    xf = _f64(x)
    return np.where(xf < -lambd, xf + bias, np.where(xf > lambd, xf - bias, 0))


# ----------------------------------------------------------------------------- elementwise, binary
def _cmp(f):
    return lambda a, b: f(a, b)


for _name, _f in {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
                  "greater": np.greater, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
                  "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    _op(_name, 2, shape=_broadcast, dtype=_bool)(_cmp(_f))
for _name, _f in {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
                  "left_shift": np.left_shift, "right_shift": np.right_shift}.items():
    _op(_name, 2, shape=_broadcast, dtype=_first)(lambda a, b, _f=_f: _f(a, b).astype(a.dtype))


@_op("mod", 2, {"fmod": False}, _broadcast)
def _mod(a, b, fmod):
    """ONNX Mod: with fmod the remainder takes the dividend's sign (C fmod), otherwise the divisor's
    (Python %); integer division by zero gives 0."""
    with np.errstate(all="ignore"):
        return (np.fmod(a, b) if fmod else np.mod(a, b)).astype(np.result_type(a, b))


def _prelu_shape(shapes, attrs):
    x, s = shapes
    try:
        out = tuple(np.broadcast_shapes(tuple(x), tuple(s)))
    except ValueError:
        raise _Bad("the slope does not broadcast to the data") from None
    _need(out == tuple(x), "the slope must broadcast to the data's shape")
    return tuple(x)


@_op("nn.prelu", 2, {}, _prelu_shape)
def _prelu(x, slope):
    """ONNX PRelu: x if x >= 0 else slope * x (slope broadcast to x, numpy rules)."""
    return np.where(x >= 0, x, x * slope).astype(x.dtype)


def _where_shape(shapes, attrs):
    return _broadcast(shapes, attrs)


@_op("where", 3, {}, _where_shape, lambda d, a: str(np.result_type(d[1], d[2])))
def _where(cond, x, y):
    """Relay where / ONNX Where: x where cond else y (broadcast)."""
    return np.where(cond.astype(bool), x, y)


# ----------------------------------------------------------------------------- reductions
def _reduce_shape(shapes, attrs):
    (x,) = shapes
    axes = _norm_axes(attrs["axis"], len(x))
    return tuple(1 if k in axes else d for k, d in enumerate(x)) if attrs["keepdims"] else \
        tuple(d for k, d in enumerate(x) if k not in axes)


def _norm_axes(axis, rank):
    if axis is None:
        return tuple(range(rank))
    axes = tuple(int(a) for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
    _need(all(-rank <= a < rank for a in axes), f"axes {axes} out of range for rank {rank}")
    return tuple(sorted({a % rank for a in axes}))


def _identity_of(kind, dtype):
    if kind == "max":
        return -np.inf if dtype.kind == "f" else (np.iinfo(dtype).min if dtype.kind in "iu" else False)
    return np.inf if dtype.kind == "f" else (np.iinfo(dtype).max if dtype.kind in "iu" else True)


def _reducer(kind):
    def red(x, axis, keepdims):
        axes = _norm_axes(axis, x.ndim)
        if kind in ("max", "min"):
            f = np.max if kind == "max" else np.min
            return f(x, axis=axes, keepdims=keepdims, initial=_identity_of(kind, x.dtype))
        if kind == "logsumexp":
            xf = _f64(x)
            with np.errstate(all="ignore"):
                m = np.max(xf, axis=axes, keepdims=True, initial=-np.inf)
                m = np.where(np.isfinite(m), m, 0)
                r = np.log(np.sum(np.exp(xf - m), axis=axes, keepdims=True)) + m
            return (r if keepdims else r.reshape(_reduce_shape([x.shape], {"axis": axes, "keepdims": False})))\
                .astype(x.dtype)
        f = {"sum": np.sum, "prod": np.prod}[kind]
        return f(x, axis=axes, keepdims=keepdims).astype(x.dtype)
    red.__doc__ = f"Relay {kind} / ONNX Reduce{kind.capitalize()}: over ``axis`` (None: all axes); an empty " \
                  "reduction gives the operation's identity (max: -inf or the type's minimum)."
    return red


for _k in ("sum", "max", "min", "prod", "logsumexp"):
    _op(_k, 1, {"axis": None, "keepdims": False}, _reduce_shape)(_reducer(_k))


def _arg_shape(shapes, attrs):
    (x,) = shapes
    _need(-len(x) <= attrs["axis"] < max(len(x), 1), f"axis {attrs['axis']} out of range")
    return _reduce_shape(shapes, {"axis": (attrs["axis"],) if x else None, "keepdims": attrs["keepdims"]})


def _argext(kind):
    def f(x, axis, keepdims, select_last_index):
        """ONNX ArgMax / ArgMin: int64 indices of the first (or last) extreme along ``axis``."""
        ax = axis % x.ndim
        g = np.argmax if kind == "max" else np.argmin
        if select_last_index:
            r = x.shape[ax] - 1 - g(np.flip(x, ax), axis=ax)
        else:
            r = g(x, axis=ax)
        r = r.astype(np.int64)
        return np.expand_dims(r, ax) if keepdims else r
    return f


for _k in ("max", "min"):
    _op(f"arg{_k}", 1, {"axis": 0, "keepdims": True, "select_last_index": False}, _arg_shape, _int64)(_argext(_k))


# ----------------------------------------------------------------------------- layout and indexing
def _broadcast_to_shape(shapes, attrs):
    try:
        return tuple(np.broadcast_shapes(tuple(shapes[0]), tuple(attrs["shape"])))
    except ValueError:
        raise _Bad(f"cannot broadcast to {tuple(attrs['shape'])}") from None


@_op("broadcast_to", 1, {"shape": ()}, _broadcast_to_shape)
def _broadcast_to(x, shape):
    """ONNX Expand: x broadcast with ``shape`` (both ways, numpy rules)."""
    return np.array(np.broadcast_to(x, _broadcast_to_shape([x.shape], {"shape": shape})))


def _tile_shape(shapes, attrs):
    (x,) = shapes
    _need(len(attrs["reps"]) == len(x) and min(attrs["reps"], default=0) >= 0, "reps need one value >= 0 per axis")
    return tuple(d * r for d, r in zip(x, attrs["reps"]))


@_op("tile", 1, {"reps": ()}, _tile_shape)
def _tile(x, reps):
    """Relay tile / ONNX Tile."""
    return np.tile(x, reps)


def _gather_elements_shape(shapes, attrs):
    data, idx = shapes
    _need(len(data) == len(idx), "data and indices need the same rank")
    return tuple(idx)


@_op("gather", 2, {"axis": 0}, _gather_elements_shape, _first)
def _gather_elements(data, idx, axis):
    """Relay gather / ONNX GatherElements (negative indices count from the end)."""
    ax = axis % data.ndim
    idx = idx.astype(np.int64)
    return np.take_along_axis(data, np.where(idx < 0, idx + data.shape[ax], idx), axis=ax)


def _gather_nd_shape(shapes, attrs):
    data, idx = shapes
    b = attrs["batch_dims"]
    _need(len(idx) >= 1 and b + idx[-1] <= len(data), "indices' last axis too long for the data")
    return tuple(idx[:-1]) + tuple(data[b + idx[-1]:])


@_op("gather_nd", 2, {"batch_dims": 0}, _gather_nd_shape, _first)
def _gather_nd(data, idx, batch_dims):
    """ONNX GatherND."""
    idx = idx.astype(np.int64)
    b = batch_dims
    bshape = data.shape[:b]
    nb = int(np.prod(bshape, dtype=np.int64))
    d = data.reshape((nb,) + data.shape[b:])
    i = idx.reshape((nb, -1, idx.shape[-1]))
    k = idx.shape[-1]
    i = np.where(i < 0, i + np.array(data.shape[b:b + k]), i)
    out = np.stack([d[j][tuple(i[j].T)] for j in range(nb)])
    return out.reshape(_gather_nd_shape([data.shape, idx.shape], {"batch_dims": b}))


def _scatter_elements_shape(shapes, attrs):
    data, idx, upd = shapes
    _need(tuple(idx) == tuple(upd) and len(idx) == len(data), "indices and updates need equal shapes, data's rank")
    _need(attrs["reduction"] in ("none", "add", "mul", "max", "min"), f"reduction {attrs['reduction']!r}")
    return tuple(data)


_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@_op("scatter_elements", 3, {"axis": 0, "reduction": "none"}, _scatter_elements_shape, _first)
def _scatter_elements(data, idx, upd, axis, reduction):
    """ONNX ScatterElements (reduction none/add/mul/max/min; with none, later updates win)."""
    out = data.copy()
    ax = axis % data.ndim
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + data.shape[ax], idx)
    full = list(np.indices(idx.shape, sparse=True))
    full[ax] = idx
    if reduction == "none":
        out[tuple(full)] = upd
    else:
        _UFUNC[reduction].at(out, tuple(np.broadcast_arrays(*full)), upd)
    return out


def _scatter_nd_shape(shapes, attrs):
    data, idx, upd = shapes
    _need(tuple(upd) == tuple(idx[:-1]) + tuple(data[idx[-1]:]), "updates' shape must be indices[:-1] + data[k:]")
    _need(attrs["reduction"] in ("none", "add", "mul", "max", "min"), f"reduction {attrs['reduction']!r}")
    return tuple(data)


@_op("scatter_nd", 3, {"reduction": "none"}, _scatter_nd_shape, _first)
def _scatter_nd(data, idx, upd, reduction):
    """ONNX ScatterND."""
    out = data.copy()
    idx = idx.astype(np.int64)
    k = idx.shape[-1]
    ii = idx.reshape(-1, k)
    uu = upd.reshape((ii.shape[0],) + data.shape[k:])
    for j in range(ii.shape[0]):
        t = tuple(ii[j])
        out[t] = uu[j] if reduction == "none" else _UFUNC[reduction](out[t], uu[j])
    return out


def _one_hot_shape(shapes, attrs):
    idx, vals = shapes
    _need(tuple(vals) == (2,), "values must be [off, on]")
    r = len(idx) + 1
    _need(-r <= attrs["axis"] < r, f"axis {attrs['axis']} out of range")
    ax = attrs["axis"] % r
    return tuple(idx[:ax]) + (attrs["depth"],) + tuple(idx[ax:])


@_op("one_hot", 2, {"depth": 1, "axis": -1}, _one_hot_shape, lambda d, a: d[1])
def _one_hot(idx, values, depth, axis):
    """ONNX OneHot: indices (negative ones count from depth) against ``depth`` classes; values
    [off, on]; indices outside [-depth, depth) give an all-off row."""
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + depth, i)
    r = idx.ndim + 1
    ax = axis % r
    cls = np.arange(depth).reshape((depth,) + (1,) * (r - ax - 1))
    hot = np.expand_dims(i, ax) == cls
    return np.where(hot, values[1], values[0]).astype(values.dtype)


@_op("trilu", 1, {"k": 0, "upper": True}, lambda s, a: _need(len(s[0]) >= 2, "trilu needs rank >= 2") or tuple(s[0]))
def _trilu(x, k, upper):
    """Relay trilu / ONNX Trilu: keep the upper (or lower) triangle of the last two axes from diagonal k."""
    return np.triu(x, k) if upper else np.tril(x, k)


def _cum(f):
    def cum(x, axis, exclusive, reverse):
        """ONNX CumSum / CumProd along ``axis`` (exclusive: without the element itself; reverse: from the end)."""
        ax = axis % x.ndim
        y = np.flip(x, ax) if reverse else x
        r = f(y, axis=ax, dtype=y.dtype)
        if exclusive:
            ident = np.zeros_like if f is np.cumsum else np.ones_like
            first = ident(np.take(r, [0], axis=ax))
            r = np.concatenate([first, np.take(r, range(r.shape[ax] - 1), axis=ax)], axis=ax)
        return np.flip(r, ax) if reverse else r
    return cum


for _name, _f in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
    _op(_name, 1, {"axis": 0, "exclusive": False, "reverse": False},
        lambda s, a: _need(-len(s[0]) <= a["axis"] < len(s[0]), "axis out of range") or tuple(s[0]))(_cum(_f))


def _topk_shape(shapes, attrs):
    (x,) = shapes
    ax = attrs["axis"] % len(x)
    _need(0 <= attrs["k"] <= x[ax], f"k={attrs['k']} is not in [0, {x[ax]}]")
    _need(attrs["ret_type"] in ("values", "indices"), "ret_type is values or indices")
    return tuple(x[:ax]) + (attrs["k"],) + tuple(x[ax + 1:])


@_op("topk", 1, {"k": 1, "axis": -1, "largest": True, "sorted": True, "ret_type": "values"}, _topk_shape,
     lambda d, a: "int64" if a["ret_type"] == "indices" else d[0])
def _topk(x, k, axis, largest, sorted, ret_type):
    """ONNX TopK: the k largest (or smallest) along ``axis``, sorted, equal values in index order;
    ``ret_type`` selects the values or the int64 indices output."""
    ax = axis % x.ndim
    key = -x if largest and x.dtype.kind in "fi" else x
    if largest and x.dtype.kind not in "fi":
        order = np.flip(np.argsort(np.flip(x, ax), axis=ax, kind="stable"), ax)
        order = x.shape[ax] - 1 - order
    else:
        order = np.argsort(key, axis=ax, kind="stable")
    idx = np.take(order, range(k), axis=ax).astype(np.int64)
    return idx if ret_type == "indices" else np.take_along_axis(x, idx, axis=ax)


def _d2s_shape(shapes, attrs):
    (x,) = shapes
    b = attrs["block_size"]
    _need(len(x) == 4 and x[1] % (b * b) == 0, f"nn.depth_to_space needs NCHW with C divisible by {b * b}")
    _need(attrs["mode"] in ("DCR", "CRD"), f"mode {attrs['mode']!r}")
    return (x[0], x[1] // (b * b), x[2] * b, x[3] * b)


@_op("nn.depth_to_space", 1, {"block_size": 1, "mode": "DCR"}, _d2s_shape)
def _depth_to_space(x, block_size, mode):
    """Relay nn.depth_to_space / ONNX DepthToSpace (DCR or CRD), NCHW."""
    n, c, h, w = x.shape
    b = block_size
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _s2d_shape(shapes, attrs):
    (x,) = shapes
    b = attrs["block_size"]
    _need(len(x) == 4 and x[2] % b == 0 and x[3] % b == 0, f"nn.space_to_depth needs NCHW with H, W divisible by {b}")
    _need(attrs["mode"] in ("DCR", "CRD"), f"mode {attrs['mode']!r}")
    return (x[0], x[1] * b * b, x[2] // b, x[3] // b)


@_op("nn.space_to_depth", 1, {"block_size": 1, "mode": "DCR"}, _s2d_shape)
def _space_to_depth(x, block_size, mode):
    """Relay nn.space_to_depth / ONNX SpaceToDepth, NCHW; output channels ordered (block row, block
    column, channel) in DCR mode, (channel, block row, block column) in CRD mode."""
    n, c, h, w = x.shape
    b = block_size
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return x.reshape(n, c, h // b, b, w // b, b).transpose(perm).reshape(n, c * b * b, h // b, w // b)


def _einsum_shape(shapes, attrs):
    try:
        return np.einsum(attrs["equation"], *[np.empty(s, np.int8) for s in shapes]).shape
    except ValueError as exc:
        raise _Bad(f"equation {attrs['equation']!r}: {exc}") from None


@_op("einsum", None, {"equation": ""}, _einsum_shape)
def _einsum(*xs, equation):
    """Relay einsum / ONNX Einsum (numpy's einsum; floats summed in float64, rounded once)."""
    dt = np.result_type(*xs)
    if dt.kind == "f":
        return np.einsum(equation, *[_f64(x) for x in xs], optimize=len(xs) > 2).astype(dt)
    return np.einsum(equation, *xs).astype(dt)


def _det_shape(shapes, attrs):
    (x,) = shapes
    _need(len(x) >= 2 and x[-1] == x[-2], "det needs square matrices on the last two axes")
    return tuple(x[:-2])


@_op("det", 1, {}, _det_shape)
def _det(x):
    """ONNX Det (float64 LU, rounded once)."""
    return np.linalg.det(_f64(x)).astype(x.dtype)


# ----------------------------------------------------------------------------- normalisation, softmax
@_op("nn.log_softmax", 1, {"axis": -1}, _same)
def _log_softmax(x, axis):
    """Relay nn.log_softmax / ONNX LogSoftmax (opset 13 semantics: along ``axis``)."""
    xf = _f64(x)
    m = xf.max(axis=axis, keepdims=True)
    return (xf - m - np.log(np.exp(xf - m).sum(axis=axis, keepdims=True))).astype(x.dtype)


@_op("hardmax", 1, {"axis": -1}, _same)
def _hardmax(x, axis):
    """ONNX Hardmax (opset 13): 1 at the first maximum along ``axis``, 0 elsewhere."""
    ax = axis % x.ndim
    i = np.expand_dims(np.argmax(x, axis=ax), ax)
    out = np.zeros_like(x)
    np.put_along_axis(out, i, 1, axis=ax)
    return out


def _lrn_shape(shapes, attrs):
    (x,) = shapes
    _need(len(x) >= 3 and attrs["size"] >= 1, "nn.lrn needs [N, C, ...] data and size >= 1")
    return tuple(x)


@_op("nn.lrn", 1, {"size": 5, "axis": 1, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}, _lrn_shape)
def _lrn(x, size, axis, alpha, beta, bias):
    """Relay nn.lrn / ONNX LRN across channels: x / (bias + alpha / size * square_sum)^beta, the
    square sum over channels [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the input
    (float64, rounded once)."""
    ax = axis % x.ndim
    sq = _f64(x) ** 2
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    pad = [(0, 0)] * x.ndim
    pad[ax] = (lo + 1, hi)
    cs = np.cumsum(np.pad(sq, pad), axis=ax)
    c = x.shape[ax]
    s = np.take(cs, range(size, size + c), axis=ax) - np.take(cs, range(0, c), axis=ax)
    return (_f64(x) / (bias + alpha / size * s) ** beta).astype(x.dtype)


def _norm_param_shape(shapes, attrs):
    x = shapes[0]
    _need(len(x) >= 2 and all(tuple(s) == (x[1],) for s in shapes[1:]), f"scale and bias of length {x[1]} needed")
    return tuple(x)


@_op("nn.instance_norm", 3, {"epsilon": 1e-5}, _norm_param_shape)
def _instance_norm(x, gamma, beta, epsilon):
    """Relay nn.instance_norm / ONNX InstanceNormalization: per (n, c) over the spatial axes (float64)."""
    axes = tuple(range(2, x.ndim))
    xf = _f64(x)
    mu = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mu) ** 2).mean(axis=axes, keepdims=True)
    shp = (1, -1) + (1,) * (x.ndim - 2)
    return ((xf - mu) / np.sqrt(var + epsilon) * gamma.reshape(shp) + beta.reshape(shp)).astype(x.dtype)


def _group_norm_shape(shapes, attrs):
    x, gamma, beta = shapes
    g = attrs["num_groups"]
    _need(len(x) >= 2 and g >= 1 and x[1] % g == 0, f"nn.group_norm: {x[1]} channels in {g} groups")
    _need(tuple(gamma) == (x[1],) and tuple(beta) == (x[1],), f"scale and bias of length {x[1]} needed")
    return tuple(x)


@_op("nn.group_norm", 3, {"num_groups": 1, "epsilon": 1e-5}, _group_norm_shape)
def _group_norm(x, gamma, beta, num_groups, epsilon):
    """Relay nn.group_norm / ONNX GroupNormalization (opset 21: per-channel scale and bias), float64."""
    n, c = x.shape[:2]
    xf = _f64(x).reshape((n, num_groups, -1))
    mu = xf.mean(axis=2, keepdims=True)
    var = ((xf - mu) ** 2).mean(axis=2, keepdims=True)
    y = ((xf - mu) / np.sqrt(var + epsilon)).reshape(x.shape)
    shp = (1, -1) + (1,) * (x.ndim - 2)
    return (y * gamma.reshape(shp) + beta.reshape(shp)).astype(x.dtype)


# ----------------------------------------------------------------------------- resize
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_shape(shapes, attrs):
    (x,) = shapes
    r = len(x)
    _need(len(attrs["size"]) == r and len(attrs["scales"]) == r, f"size and scales need {r} values")
    _need(attrs["method"] in ("nearest", "linear", "cubic"), f"method {attrs['method']!r}")
    _need(attrs["coordinate_transformation_mode"] in _COORD_MODES,
          f"coordinate_transformation_mode {attrs['coordinate_transformation_mode']!r}")
    _need(attrs["nearest_mode"] in _NEAREST_MODES, f"nearest_mode {attrs['nearest_mode']!r}")
    _need(not attrs["roi"] or len(attrs["roi"]) == 2 * r, f"roi needs {2 * r} values")
    return tuple(int(v) for v in attrs["size"])


def _cubic_kernel(d, a):
    d = np.abs(d)
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _resize_matrix(n_in, n_out, scale, roi, attrs):
    """(M[n_out, n_in], e[n_out]): resized = M @ x + e along one axis (ONNX Resize's 1-D rule:
    coordinate transformation, edge-clamped neighbours, coefficients per method)."""
    mode = attrs["coordinate_transformation_mode"]
    y = np.arange(n_out, dtype=np.float64)
    out_w = scale * n_in
    outside = np.zeros(n_out, bool)
    if mode == "align_corners":
        x = np.zeros(n_out) if out_w == 1 else y * (n_in - 1) / (out_w - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        x = (np.full(n_out, (end - start) * (n_in - 1) / 2) if out_w == 1
             else y * (end - start) * (n_in - 1) / (out_w - 1)) + start * (n_in - 1)
        outside = (x < 0) | (x > n_in - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if out_w == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:                                                   # half_pixel_symmetric
        offset = n_in / 2 * (1 - n_out / out_w)
        x = offset + (y + 0.5) / scale - 0.5
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    method = attrs["method"]
    if method == "nearest":
        nm = attrs["nearest_mode"]
        idx = {"round_prefer_floor": np.ceil(x - 0.5), "round_prefer_ceil": np.floor(x + 0.5),
               "floor": np.floor(x), "ceil": np.ceil(x)}[nm]
        np.add.at(m, (rows, np.clip(idx, 0, n_in - 1).astype(np.int64)), 1.0)
    else:
        base = np.floor(x)
        base = np.where(base == x, x - 1, base)             # ratio in (0, 1], as the spec's reference
        ratio = x - base
        s = min(scale, 1.0) if attrs["antialias"] else 1.0
        if method == "linear":
            start = int(np.floor(-1 / s) + 1)
            taps = np.arange(start, 2 - start)
            w = np.clip(1 - np.abs((taps[None, :] - ratio[:, None]) * s), 0, 1)
        else:
            start = int(np.floor(-2 / s) + 1)
            taps = np.arange(start, 2 - start)
            w = _cubic_kernel((taps[None, :] - ratio[:, None]) * s, attrs["cubic_coeff_a"])
        idx = base[:, None] + taps[None, :]
        if attrs["exclude_outside"]:
            w = np.where((idx < 0) | (idx > n_in - 1), 0.0, w)
        if attrs["antialias"] or attrs["exclude_outside"]:
            w = w / w.sum(axis=1, keepdims=True)
        np.add.at(m, (np.repeat(rows, len(taps)), np.clip(idx, 0, n_in - 1).astype(np.int64).ravel()), w.ravel())
    e = np.zeros(n_out)
    if outside.any():
        m[outside] = 0.0
        e[outside] = attrs["extrapolation_value"]
    return m, e


@_op("image.resize", 1, {"size": (), "scales": (), "roi": (), "method": "nearest",
                         "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                         "cubic_coeff_a": -0.75, "exclude_outside": False, "extrapolation_value": 0.0,
                         "antialias": False}, _resize_shape)
def _resize(x, size, scales, roi, method, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
            exclude_outside, extrapolation_value, antialias):
    """ONNX Resize (opsets 11-19; Relay image.resize{1,2,3}d): every axis resized to ``size`` with
    the coordinate scale ``scales`` (output / input unless given), nearest / linear / cubic
    interpolation separable over the axes, each as a float64 matrix product (exact for nearest),
    rounded once."""
    attrs = dict(method=method, coordinate_transformation_mode=coordinate_transformation_mode,
                 nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                 extrapolation_value=extrapolation_value, antialias=antialias)
    y = _f64(x)
    r = x.ndim
    for ax in range(r):
        n_in, n_out, sc = x.shape[ax], int(size[ax]), float(scales[ax])
        span = (float(roi[ax]), float(roi[ax + r])) if roi else (0.0, 1.0)
        if n_in == n_out and sc == 1.0 and coordinate_transformation_mode != "tf_crop_and_resize":
            continue
        m, e = _resize_matrix(n_in, n_out, sc, span, attrs)
        y = np.moveaxis(np.tensordot(m, y, axes=(1, ax)), 0, ax) + e.reshape((-1,) + (1,) * (r - ax - 1))
    return y.astype(x.dtype)


# ----------------------------------------------------------------------------- recurrent (ONNX GRU, RNN)
def _act(name, alpha, beta):
    """An ONNX recurrent activation by name (float64 in and out)."""
    n = name.lower()
    table = {
        "relu": lambda v: np.maximum(v, 0), "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "affine": lambda v: alpha * v + beta, "leakyrelu": lambda v: np.where(v >= 0, v, alpha * v),
        "thresholdedrelu": lambda v: np.where(v > alpha, v, 0), "scaledtanh": lambda v: alpha * np.tanh(beta * v),
        "hardsigmoid": lambda v: np.clip(alpha * v + beta, 0, 1),
        "elu": lambda v: np.where(v >= 0, v, alpha * np.expm1(np.minimum(v, 0))),
        "softsign": lambda v: v / (1 + np.abs(v)), "softplus": lambda v: np.logaddexp(0, v),
    }
    return table[n]


_ACT_DEFAULTS = {"leakyrelu": (0.01, 0.0), "thresholdedrelu": (1.0, 0.0), "hardsigmoid": (0.2, 0.5),
                 "elu": (1.0, 0.0), "affine": (1.0, 0.0), "scaledtanh": (1.0, 1.0)}
_ACT_NAMES = ("relu", "tanh", "sigmoid", "affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid",
              "elu", "softsign", "softplus")


def _acts(attrs, k):
    names = attrs["activations"]
    _need(len(names) == k, f"{k} activations needed, got {len(names)}")
    _need(all(n.lower() in _ACT_NAMES for n in names), f"activations {names}")
    return names


def _activation_fns(attrs):
    names, al, be = attrs["activations"], list(attrs["activation_alpha"]), list(attrs["activation_beta"])
    out = []
    for n in names:
        da, db = _ACT_DEFAULTS.get(n.lower(), (0.0, 0.0))
        a = al.pop(0) if n.lower() in _ACT_DEFAULTS and al else da
        b = be.pop(0) if n.lower() in ("hardsigmoid", "affine", "scaledtanh") and be else db
        out.append(_act(n, a, b))
    return out


def _rnn_shape(gates, name):
    def shape(shapes, attrs):
        x, w, r = shapes[:3]
        _need(len(x) == 3 and len(w) == 3 and w[0] == 1 and w[1] % gates == 0 and w[2] == x[2],
              f"{name} needs x[T, B, I], w[1, {gates}H, I]")
        hd = w[1] // gates
        _need(tuple(r) == (1, gates * hd, hd), f"{name} needs r[1, {gates}H, H]")
        if len(shapes) > 3:
            _need(tuple(shapes[3]) == (1, 2 * gates * hd), f"{name} needs b[1, {2 * gates}H]")
        if len(shapes) > 4:
            _need(tuple(shapes[4]) == (1, x[1], hd), f"{name} needs h0[1, B, H]")
        _need(len(shapes) <= 5, f"{name} takes x, w, r, b, h0")
        _acts(attrs, 2 if gates == 3 else 1)
        return (x[0], 1, x[1], hd)
    return shape


def _rnn_prep(x, w, r, b, h0, gates):
    hd = r.shape[2]
    W, R = _f64w(w)[0], _f64w(r)[0]
    bias = np.zeros(2 * gates * hd) if b is None else _f64(b[0])
    h = np.zeros((x.shape[1], hd)) if h0 is None else _f64(h0[0])
    return hd, W, R, bias[:gates * hd], bias[gates * hd:], h


def _clip_fn(clip):
    return (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)


@_op("nn.gru", None, {"linear_before_reset": False, "activations": ("Sigmoid", "Tanh"), "activation_alpha": (),
                      "activation_beta": (), "clip": 0.0}, _rnn_shape(3, "nn.gru"))
def _gru(x, w, r, b=None, h0=None, linear_before_reset=False, activations=("Sigmoid", "Tanh"),
         activation_alpha=(), activation_beta=(), clip=0.0):
    """One forward GRU layer, ONNX GRU semantics and gate order (z, r, h): x[T, B, I], w[1, 3H, I],
    r[1, 3H, H], b[1, 6H] (input then recurrence biases), h0[1, B, H]; returns Y[T, 1, B, H]
    (float64 inside, rounded once). ``clip`` > 0 clips the gate pre-activations."""
    hd, W, R, wb, rb, h = _rnn_prep(x, w, r, b, h0, 3)
    f, g = _activation_fns({"activations": activations, "activation_alpha": activation_alpha,
                            "activation_beta": activation_beta})
    cl = _clip_fn(clip)
    xw = _f64(x) @ W.T + wb
    out = np.empty((x.shape[0], 1, x.shape[1], hd))
    for t in range(x.shape[0]):
        hr = h @ R.T + rb
        z = f(cl(xw[t, :, :hd] + hr[:, :hd]))
        rr = f(cl(xw[t, :, hd:2 * hd] + hr[:, hd:2 * hd]))
        if linear_before_reset:
            n = g(cl(xw[t, :, 2 * hd:] + rr * hr[:, 2 * hd:]))
        else:
            n = g(cl(xw[t, :, 2 * hd:] + (rr * h) @ R[2 * hd:].T + rb[2 * hd:]))
        h = (1 - z) * n + z * h
        out[t, 0] = h
    return out.astype(x.dtype)


@_op("nn.rnn", None, {"activations": ("Tanh",), "activation_alpha": (), "activation_beta": (), "clip": 0.0},
     _rnn_shape(1, "nn.rnn"))
def _rnn(x, w, r, b=None, h0=None, activations=("Tanh",), activation_alpha=(), activation_beta=(), clip=0.0):
    """One forward simple-RNN layer, ONNX RNN semantics: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb);
    x[T, B, I], w[1, H, I], r[1, H, H], b[1, 2H], h0[1, B, H]; returns Y[T, 1, B, H] (float64 inside)."""
    hd, W, R, wb, rb, h = _rnn_prep(x, w, r, b, h0, 1)
    (f,) = _activation_fns({"activations": activations, "activation_alpha": activation_alpha,
                            "activation_beta": activation_beta})
    cl = _clip_fn(clip)
    xw = _f64(x) @ W.T + wb + rb
    out = np.empty((x.shape[0], 1, x.shape[1], hd))
    for t in range(x.shape[0]):
        h = f(cl(xw[t] + h @ R.T))
        out[t, 0] = h
    return out.astype(x.dtype)


def _lstm_state_shape(shapes, attrs):
    (t, _, b, hd) = _lstm_shape(shapes[:3], attrs)
    return (1, b, hd)


@_op("nn.lstm_cell_state", None, {}, _lstm_state_shape)
def _lstm_cell_state(x, w, r, b=None, h0=None, c0=None):
    """The final cell state Y_c[1, B, H] of the forward LSTM layer that ``nn.lstm`` computes on the
    same operands (ONNX LSTM's third output)."""
    return _lstm(x, w, r, b, h0, c0, _cell=True)


# ----------------------------------------------------------------------------- transposed convolution
def _convt_full(x, w, strides, dilation, output_padding):
    return tuple(s * (d - 1) + dl * (k - 1) + 1 + op
                 for d, k, s, dl, op in zip(x[2:], w[2:], strides, dilation, output_padding))


def _convt_shape(nd, name):
    def shape(shapes, attrs):
        x, w = shapes
        _need(len(x) == nd + 2 and len(w) == nd + 2, f"{name} needs {nd + 2}-D data and [C, O/groups, *K] weights")
        g = attrs["groups"]
        _need(g >= 1 and x[1] == w[0] and w[0] % g == 0, f"{x[1]} input channels do not match weight {w}, groups={g}")
        _need(len(attrs["strides"]) == nd and len(attrs["dilation"]) == nd and len(attrs["output_padding"]) == nd,
              f"strides, dilation and output_padding need {nd} values")
        before, after = _pads_nd(attrs["padding"], nd)
        full = _convt_full(x, w, attrs["strides"], attrs["dilation"], attrs["output_padding"])
        out = tuple(f - b - a for f, b, a in zip(full, before, after))
        _need(all(o > 0 for o in out), "the padding removes the whole output")
        return (x[0], w[1] * g) + out
    return shape


def _convnd_transpose(nd):
    def convt(x, w, strides, padding, dilation, groups, output_padding):
        """Relay nn.conv{1,2,3}d_transpose / ONNX ConvTranspose: x[N, C, *S], w[C, O/groups, *K];
        output size stride*(S-1) + dilation*(K-1) + 1 + output_padding - pad_begin - pad_end (a
        negative pad extends with zeros). Each input position scatters x * w over its window;
        float64 accumulation rounded once."""
        before, after = _pads_nd(padding, nd)
        n, c = x.shape[:2]
        og = w.shape[1]
        kernel = w.shape[2:]
        full = _convt_full(x.shape, w.shape, strides, dilation, output_padding)
        acc = np.zeros((n, og * groups) + full)
        cg = c // groups
        xs = _f64(x).reshape(n, groups, cg, -1)
        wf = _f64(w).reshape(groups, cg, og, -1)                       # (G, Cg, Og, KK)
        contrib = np.einsum("gcok,ngcl->ngokl", wf, xs)                 # (N, G, Og, KK, L)
        contrib = contrib.reshape((n, groups * og) + (int(np.prod(kernel, dtype=np.int64)),) + x.shape[2:])
        for j, k in enumerate(np.ndindex(*kernel)):
            idx = (slice(None), slice(None)) + tuple(
                slice(kk * dl, kk * dl + s * (d - 1) + 1, s) for kk, dl, s, d in zip(k, dilation, strides, x.shape[2:]))
            acc[idx] += contrib[:, :, j]
        sl = []
        for f, b, a in zip(full, before, after):
            sl.append(slice(max(b, 0), f - max(a, 0)))
        acc = acc[(slice(None), slice(None)) + tuple(sl)]
        if min(before + after) < 0:
            acc = np.pad(acc, ((0, 0), (0, 0)) + tuple((max(-b, 0), max(-a, 0)) for b, a in zip(before, after)))
        return acc.astype(np.result_type(x, w))
    return convt


for _nd in (1, 2, 3):
    _op(f"nn.conv{_nd}d_transpose", 2, {"strides": (1,) * _nd, "padding": (0,) * (2 * _nd), "dilation": (1,) * _nd,
                                        "groups": 1, "output_padding": (0,) * _nd},
        _convt_shape(_nd, f"nn.conv{_nd}d_transpose"))(_convnd_transpose(_nd))


# output dtype rules of the operators defined before the rules existed
for _name, _rule in {"power": _first, "nn.dense": _first, "nn.bias_add": _first, "nn.batch_norm": _first,
                     "nn.layer_norm": _first, "take": _first, "cast": _attr_dtype, "nn.lstm": _first,
                     "lstm_layer": lambda d, a: "float32", "nn.batch_matmul": _first, "clip": _first,
                     "mean": _first, "nn.im2col": _first, "nn.pad": _first, "nn.conv2d": None}.items():
    if _rule is not None:
        OPS[_name] = OPS[_name].__class__(**{**OPS[_name].__dict__, "dtype": _rule})


# ----------------------------------------------------------------------------- losses
def _nll_shape(shapes, attrs):
    p, t = shapes[0], shapes[1]
    _need(len(p) >= 2 and tuple(t) == (p[0],) + tuple(p[2:]), "nn.nll_loss needs predictions [N, C, ...] and "
          "targets [N, ...]")
    _need(len(shapes) == 2 or tuple(shapes[2]) == (p[1],), f"weights of length {p[1]} needed")
    _need(attrs["reduction"] in ("none", "sum", "mean"), f"reduction {attrs['reduction']!r}")
    return tuple(t) if attrs["reduction"] == "none" else ()


@_op("nn.nll_loss", None, {"reduction": "mean", "ignore_index": None}, _nll_shape, _first)
def _nll_loss(pred, target, weights=None, reduction="mean", ignore_index=None):
    """Relay nn.nll_loss / ONNX NegativeLogLikelihoodLoss: loss[n, d...] = -pred[n, t, d...] * w[t]
    with t = target[n, d...] (0 where t == ignore_index); 'mean' divides the sum by the summed
    weights of the counted targets (float64 inside)."""
    t = target.astype(np.int64)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    tc = np.where(keep, t, 0)
    picked = np.take_along_axis(_f64(pred), tc[:, None], axis=1)[:, 0]
    w = np.ones(pred.shape[1]) if weights is None else _f64(weights)
    wt = np.where(keep, w[tc], 0.0)
    loss = -picked * wt
    if reduction == "none":
        return loss.astype(pred.dtype)
    if reduction == "sum":
        return np.asarray(loss.sum(), pred.dtype)
    return np.asarray(loss.sum() / wt.sum(), pred.dtype)


# ----------------------------------------------------------------------------- quantisation (ONNX QuantizeLinear / DequantizeLinear)
_QTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32")


def _qparam(v, x, axis, block_size):
    """A scale or zero point broadcast onto x: scalar (per tensor), 1-D along ``axis`` (per axis),
    or x's rank with ``block_size`` elements per entry along ``axis`` (blocked)."""
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1 and v.ndim <= 1:
        return v.reshape(())
    ax = axis % x.ndim
    if block_size:
        return np.repeat(v, block_size, axis=ax).take(range(x.shape[ax]), axis=ax)
    return v.reshape((-1,) + (1,) * (x.ndim - ax - 1))


def _q_shape(shapes, attrs):
    x, s = shapes[0], shapes[1]
    _need(len(shapes) in (2, 3), "scale and an optional zero point")
    _need(len(shapes) == 2 or tuple(shapes[2]) == tuple(s), "the zero point's shape must equal the scale's")
    if len(s) == 1 and s[0] > 1 and not attrs["block_size"]:
        _need(len(x) > 0 and s[0] == x[attrs["axis"] % len(x)], f"per-axis scale of {s[0]} for axis {attrs['axis']}")
    return tuple(x)


@_op("qnn.quantize", None, {"axis": 1, "block_size": 0, "out_dtype": "uint8"}, _q_shape,
     lambda d, a: a["out_dtype"])
def _quantize(x, scale, zero_point=None, axis=1, block_size=0, out_dtype="uint8"):
    """Relay qnn.quantize / ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point)
    to ``out_dtype``; the division in x's type (as the specification's reference and
    onnxruntime), the rounding and the zero point exact."""
    s = _qparam(scale, x, axis, block_size).astype(x.dtype)
    z = 0 if zero_point is None else _qparam(zero_point, x, axis, block_size).astype(np.float64)
    info = np.iinfo(out_dtype)
    return np.clip(_f64(np.round(x / s)) + z, info.min, info.max).astype(out_dtype)


@_op("qnn.dequantize", None, {"axis": 1, "block_size": 0, "out_dtype": "float32"}, _q_shape,
     lambda d, a: a["out_dtype"])
def _dequantize(x, scale, zero_point=None, axis=1, block_size=0, out_dtype="float32"):
    """Relay qnn.dequantize / ONNX DequantizeLinear: (x - zero_point) * scale, in the scale's type."""
    s = _qparam(scale, x, axis, block_size)
    z = np.int64(0) if zero_point is None else _qparam(zero_point, x, axis, block_size).astype(np.int64)
    return ((x.astype(np.int64) - z).astype(np.float64) * _f64(s)).astype(out_dtype)


def _qmatmul_shape(shapes, attrs):
    return _matmul_shape([shapes[0], shapes[1]], attrs)


@_op("qnn.matmul_integer", None, {}, _qmatmul_shape, lambda d, a: "int32")
def _matmul_integer(a, b, a_zero=None, b_zero=None):
    """ONNX MatMulInteger: (a - a_zero) @ (b - b_zero) in int32 (exact; zero points per tensor,
    per row of a or per column of b)."""
    az = np.int64(0) if a_zero is None else a_zero.astype(np.int64)
    bz = np.int64(0) if b_zero is None else b_zero.astype(np.int64)
    if np.ndim(az) == 1 and a.ndim >= 2:
        az = az.reshape(-1, 1)
    return np.matmul(a.astype(np.int64) - az, b.astype(np.int64) - bz).astype(np.int32)


@_op("qnn.qlinear_matmul", 8, {}, lambda s, a: _matmul_shape([s[0], s[3]], a), lambda d, a: d[7])
def _qlinear_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
    """ONNX QLinearMatMul: saturate(rint((a - a_zero) @ (b - b_zero) * (a_scale * b_scale / y_scale))
    + y_zero), the integer product exact, the multiplier in the scales' type; per-tensor or
    per-row / per-column parameters."""
    az, bz = a_zero.astype(np.int64), b_zero.astype(np.int64)
    if az.ndim == 1 and a.ndim >= 2:
        az = az.reshape(-1, 1)
    c = np.matmul(a.astype(np.int64) - az, b.astype(np.int64) - bz)
    m = a_scale.reshape(-1, 1) * b_scale / y_scale if np.ndim(a_scale) == 1 and a.ndim >= 2 \
        else a_scale * b_scale / y_scale
    d = c * m.astype(np.float64) + y_zero.astype(np.float64)
    info = np.iinfo(y_zero.dtype)
    return np.clip(np.rint(d), info.min, info.max).astype(y_zero.dtype)


# ----------------------------------------------------------------------------- attention (ONNX Attention, opsets 23-25)
def _attention_shape(shapes, attrs):
    q, k, v = shapes[:3]
    _need(len(q) == len(k) == len(v) == 4, "nn.attention needs 4-D q, k, v [B, heads, S, D]")
    _need(q[0] == k[0] == v[0] and k[2] == v[2] and q[3] == k[3], "q, k, v do not agree on batch, length or width")
    _need(k[1] == v[1] and q[1] % k[1] == 0, f"{q[1]} query heads for {k[1]} key/value heads")
    _need(len(shapes) == 3 + attrs["has_mask"] + attrs["has_nonpad"], "operands do not match has_mask / has_nonpad")
    _need(attrs["output"] in ("y", "qk"), f"output {attrs['output']!r}")
    if attrs["output"] == "qk":
        return (q[0], q[1], q[2], k[2])
    return (q[0], q[1], q[2], v[3])


def _neg_inf_where(allowed, dtype):
    return np.where(allowed, dtype.type(0), dtype.type(-np.inf))


@_op("nn.attention", None, {"scale": None, "is_causal": False, "past_len": 0, "softcap": 0.0, "qk_mode": 0,
                            "output": "y", "softmax_dtype": None, "has_mask": False, "has_nonpad": False,
                            "left_window": -1, "right_window": -1}, _attention_shape)
def _attention(q, k, v, *extra, scale, is_causal, past_len, softcap, qk_mode, output, softmax_dtype, has_mask,
               has_nonpad, left_window, right_window):
    """ONNX Attention (opsets 23-25) on 4-D q[B, Hq, Sq, D], k[B, Hkv, Skv, D], v[B, Hkv, Skv, Dv]
    (k and v already include a past cache of ``past_len`` positions): softmax(q k^T * scale +
    bias) v, the bias from the mask (boolean: -inf where False; float: added; shorter than Skv:
    padded with -inf), a causal frontier j <= i + offset (offset = past_len, or per batch
    nonpad_kv_seqlen - Sq), a sliding window, and the nonpad_kv_seqlen padding; grouped-query heads
    repeat each key/value head; ``softcap`` > 0 applies softcap * tanh(qk / softcap) before the
    bias; a query row whose bias is -inf everywhere gives zeros. ``output`` 'y' is Y, 'qk' the
    qk_matmul_output of ``qk_mode`` (0/1: scores after softcap, 2: plus bias, 3: probabilities).
    Scaling as the specification: q and k each times sqrt(scale) in q's type; products summed
    in float64 and rounded once."""
    mask = extra[0] if has_mask else None
    nonpad = extra[-1].astype(np.int64).reshape(-1) if has_nonpad else None
    dt = q.dtype
    b, hq, sq, d = q.shape
    skv = k.shape[2]
    s = dt.type(math.sqrt(1.0 / math.sqrt(d) if scale is None else scale))
    if mask is not None and mask.shape[-1] < skv:
        pad = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
        mask = np.pad(mask, pad, constant_values=False if mask.dtype == np.bool_ else -np.inf)
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(skv).reshape(1, skv)
    offset = (nonpad - sq).reshape(-1, 1, 1, 1) if (nonpad is not None and past_len == 0) else past_len

    def frontier(allowed):                       # (q, kv) or per batch (B, 1, q, kv)
        return _neg_inf_where(allowed, dt)
    bias = np.zeros((sq, skv), dt)
    if is_causal:
        base = bias if mask is None else (_neg_inf_where(mask, dt) if mask.dtype == np.bool_ else mask.astype(dt))
        bias = base + frontier(j <= i + offset)
    elif mask is not None:
        bias = bias + (_neg_inf_where(mask, dt) if mask.dtype == np.bool_ else mask.astype(dt))
    if left_window >= 0 or right_window >= 0:
        diff = (i + offset) - j
        allowed = np.ones(np.shape(diff), bool)
        if left_window >= 0:
            allowed &= diff <= left_window
        if right_window >= 0:
            allowed &= -diff <= right_window
        bias = bias + frontier(allowed)
    if nonpad is not None:
        bias = bias + frontier((np.arange(skv) < nonpad[:, None]).reshape(b, 1, 1, skv))
    if hq != k.shape[1]:
        k = np.repeat(k, hq // k.shape[1], axis=1)
        v = np.repeat(v, hq // v.shape[1], axis=1)
    qk = (_f64(q * s) @ np.swapaxes(_f64(k * s), -1, -2)).astype(dt)
    if softcap > 0:
        qk = (np.tanh(qk / dt.type(softcap)) * dt.type(softcap)).astype(dt)
    qkb = qk + bias
    scores = qkb.astype(softmax_dtype) if softmax_dtype else qkb
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isneginf(m), 0, m))
    tot = np.sum(e, axis=-1, keepdims=True)
    p = e / np.where(tot == 0, 1, tot)
    dead = np.isneginf(np.max(np.broadcast_to(bias, qkb.shape), axis=-1, keepdims=True))
    p = np.where(dead, 0, p).astype(dt)
    if output == "qk":
        return {0: qk, 1: qk, 2: qkb, 3: p}[qk_mode].astype(dt)
    return (_f64(p) @ _f64(v)).astype(dt)


# ----------------------------------------------------------------------------- spectral (ONNX DFT)
def _dft_shape(shapes, attrs):
    (x,) = shapes
    r = len(x)
    _need(r >= 2 and x[-1] in (1, 2), "dft needs [..., 1 or 2] (real, or real and imaginary parts)")
    ax = attrs["axis"] % r
    _need(ax < r - 1, f"axis {attrs['axis']} is the real/imaginary axis")
    out = list(x)
    if attrs["onesided"] and attrs["inverse"]:           # one-sided spectrum -> real signal (irfft)
        n = attrs["length"] if attrs["length"] is not None else 2 * (x[ax] - 1)
        _need(n >= 1, f"DFT length {n}")
        out[ax], out[-1] = n, 1
        return tuple(out)
    n = attrs["length"] if attrs["length"] is not None else x[ax]
    _need(n >= 1, f"DFT length {n}")
    out[ax] = n // 2 + 1 if attrs["onesided"] else n
    out[-1] = 2
    return tuple(out)


@_op("dft", 1, {"axis": 1, "inverse": False, "onesided": False, "length": None}, _dft_shape)
def _dft(x, axis, inverse, onesided, length):
    """ONNX DFT: the discrete Fourier transform along ``axis`` of a real ([..., 1]) or complex
    ([..., 2]) signal, zero-padded or cut to ``length``; the inverse divides by the length; a
    one-sided forward transform keeps length // 2 + 1 frequencies, a one-sided inverse returns the
    real signal ([..., length, 1]). numpy's FFT at the input's precision (complex64 for float32),
    as the specification's reference computes it."""
    ax = axis % x.ndim
    z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    if onesided and inverse:
        n = length if length is not None else 2 * (x.shape[ax] - 1)
        return np.fft.irfft(z, n=n, axis=ax)[..., None].astype(x.dtype)
    n = length if length is not None else x.shape[ax]
    y = (np.fft.ifft if inverse else np.fft.fft)(z, n=n, axis=ax)
    if onesided:
        y = np.take(y, range(n // 2 + 1), axis=ax)
    return np.stack([y.real, y.imag], axis=-1).astype(x.dtype)


def _bitcast_shape(shapes, attrs):
    _need(attrs["dtype"] in _CAST_TYPES, f"dtype {attrs['dtype']!r} is not one of {', '.join(_CAST_TYPES)}")
    return tuple(shapes[0])


@_op("bitcast", 1, {"dtype": "int32"}, _bitcast_shape, _attr_dtype)
def _bitcast(x, dtype):
    """ONNX BitCast: the same bytes (little endian) read as ``dtype`` of the same width."""
    out = x if x.flags.c_contiguous else x.copy()        # (ascontiguousarray would make a 0-d array 1-d)
    if out.dtype.itemsize != np.dtype(dtype).itemsize:
        raise ValueError(f"bitcast from {out.dtype} to {dtype}: widths differ")
    return out.view(dtype)


# ----------------------------------------------------------------------------- grid sampling (ONNX GridSample)
def _grid_sample_shape(shapes, attrs):
    x, g = shapes
    r = len(x) - 2
    _need(r >= 1 and len(g) == r + 2 and g[0] == x[0] and g[-1] == r,
          f"image.grid_sample needs x[N, C, *S] and grid[N, *S_out, {r}]")
    _need(attrs["method"] in ("nearest", "linear", "cubic"), f"method {attrs['method']!r}")
    _need(attrs["padding_mode"] in ("zeros", "border", "reflection"), f"padding_mode {attrs['padding_mode']!r}")
    return (x[0], x[1]) + tuple(g[1:-1])


def _reflect(v, lo, hi):
    """v reflected at lo and hi until inside [lo, hi] (elementwise)."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below, above = v < lo, v > hi
    d = np.where(below, lo - v, np.where(above, v - hi, 0.0))
    k = np.floor(d / span)
    rem = d - k * span
    even = (k % 2) == 0
    low_side = np.where(even, lo + rem, hi - rem)
    high_side = np.where(even, hi - rem, lo + rem)
    return np.where(below, low_side, np.where(above, high_side, v))


@_op("image.grid_sample", 2, {"method": "linear", "padding_mode": "zeros", "align_corners": False},
     _grid_sample_shape, _first)
def _grid_sample(x, grid, method, padding_mode, align_corners):
    """ONNX GridSample (Relay image.grid_sample): Y[n, c, o...] interpolates x[n, c] at the
    normalised position grid[n, o..., :] (x first, i.e. the last spatial axis first) in [-1, 1]
    (pixel centres, or corners with align_corners); nearest (rounding half to even), linear or
    cubic (Keys, a = -0.75) per axis; positions and taps outside the input: zeros, the border
    (clamped) or reflected. Float64 inside, rounded once."""
    r = x.ndim - 2
    dims = x.shape[2:]
    pos = _f64(grid)[..., ::-1]                                 # (N, *O, r) in the spatial axes' order
    coords, taps, weights = [], [], []
    for ax in range(r):
        d = dims[ax]
        u = pos[..., ax]
        v = (u + 1) / 2 * (d - 1) if align_corners else ((u + 1) * d - 1) / 2
        lo, hi = (0.0, d - 1.0) if align_corners else (-0.5, d - 0.5)
        if method == "nearest":
            v = np.rint(v)
        out = (v < lo) | (v > hi)
        if padding_mode == "border":
            v = np.where(out, np.clip(v, 0, d - 1), v)
        elif padding_mode == "reflection":
            v = np.where(out, _reflect(v, lo, hi), v)
        if method == "nearest":
            idx = [np.trunc(v).astype(np.int64)]
            w = [np.ones_like(v)]
        else:
            base = np.floor(v)
            t = v - base
            if method == "linear":
                idx = [base.astype(np.int64), base.astype(np.int64) + 1]
                w = [1 - t, t]
            else:
                a = -0.75
                idx = [base.astype(np.int64) + j for j in (-1, 0, 1, 2)]
                w = [_cubic_kernel(t + 1, a), _cubic_kernel(t, a), _cubic_kernel(1 - t, a), _cubic_kernel(2 - t, a)]
        fixed, valid = [], []
        for i in idx:
            if padding_mode == "zeros":
                valid.append((i >= 0) & (i < d))
                fixed.append(np.clip(i, 0, d - 1))
            elif padding_mode == "border":
                valid.append(np.ones(i.shape, bool))
                fixed.append(np.clip(i, 0, d - 1))
            else:
                valid.append(np.ones(i.shape, bool))
                fixed.append(np.clip(np.trunc(_reflect(i.astype(np.float64), lo, hi)).astype(np.int64), 0, d - 1))
        taps.append(list(zip(fixed, valid)))
        weights.append(w)
    n = x.shape[0]
    nidx = np.arange(n).reshape((n,) + (1,) * (pos.ndim - 2))
    acc = np.zeros(pos.shape[:-1] + (x.shape[1],))
    xf = _f64(x)
    import itertools
    for combo in itertools.product(*[range(len(t)) for t in taps]):
        w = np.ones(pos.shape[:-1])
        ok = np.ones(pos.shape[:-1], bool)
        index = [nidx, slice(None)]
        for ax, j in enumerate(combo):
            i, v = taps[ax][j]
            w = w * weights[ax][j]
            ok &= v
            index.append(i)
        vals = xf[tuple(index)]                                   # (N, *O, C): advanced axes first
        acc += np.where(ok[..., None], vals, 0.0) * w[..., None]
    return np.moveaxis(acc, -1, 1).astype(x.dtype)


# ----------------------------------------------------------------------------- col2im (ONNX Col2Im)
def _col2im_geometry(attrs):
    img, blk = tuple(attrs["image_shape"]), tuple(attrs["block_shape"])
    nd = len(img)
    strides = tuple(attrs["strides"]) or (1,) * nd
    dil = tuple(attrs["dilations"]) or (1,) * nd
    pads = tuple(attrs["pads"]) or (0,) * (2 * nd)
    out = tuple((d + pads[i] + pads[i + nd] - dil[i] * (k - 1) - 1) // strides[i] + 1
                for i, (d, k) in enumerate(zip(img, blk)))
    return img, blk, strides, dil, pads, out


def _col2im_shape(shapes, attrs):
    (x,) = shapes
    img, blk, strides, dil, pads, out = _col2im_geometry(attrs)
    kk = int(np.prod(blk, dtype=np.int64))
    _need(len(x) == 3 and len(img) == len(blk) and x[1] % kk == 0, "col2im needs [N, C*prod(block), L]")
    _need(len(strides) == len(dil) == len(img) and len(pads) == 2 * len(img), "strides/dilations/pads per axis")
    _need(x[2] == int(np.prod(out, dtype=np.int64)), f"{x[2]} blocks for a block grid of {out}")
    return (x[0], x[1] // kk) + img


@_op("col2im", 1, {"image_shape": (), "block_shape": (), "strides": (), "dilations": (), "pads": ()}, _col2im_shape)
def _col2im(x, image_shape, block_shape, strides, dilations, pads):
    """ONNX Col2Im (PyTorch's fold): each column's block added into the (padded) image at its
    position, the padding cropped; float64 sums rounded once."""
    img, blk, st, dil, pd, out = _col2im_geometry(dict(image_shape=image_shape, block_shape=block_shape,
                                                       strides=strides, dilations=dilations, pads=pads))
    nd = len(img)
    n = x.shape[0]
    kk = int(np.prod(blk, dtype=np.int64))
    c = x.shape[1] // kk
    cols = _f64(x).reshape((n, c, kk) + out)
    acc = np.zeros((n, c) + tuple(d + pd[i] + pd[i + nd] for i, d in enumerate(img)))
    for j, k in enumerate(np.ndindex(*blk)):
        idx = (slice(None), slice(None)) + tuple(slice(kk_ * dl, kk_ * dl + s * (o - 1) + 1, s)
                                                 for kk_, dl, s, o in zip(k, dil, st, out))
        acc[idx] += cols[:, :, j]
    crop = (slice(None), slice(None)) + tuple(slice(pd[i], pd[i] + d) for i, d in enumerate(img))
    return acc[crop].astype(x.dtype)


# ----------------------------------------------------------------------------- linear attention (ONNX LinearAttention)
def _lin_att_shape(shapes, attrs):
    q, k, v = shapes[:3]
    hq, hkv = attrs["q_heads"], attrs["kv_heads"]
    _need(len(q) == len(k) == len(v) == 3 and hq >= 1 and hkv >= 1 and hq % hkv == 0,
          "nn.linear_attention needs 3-D q, k, v and q_heads a multiple of kv_heads")
    _need(q[2] % hq == 0 and k[2] % hkv == 0 and v[2] % hkv == 0 and q[2] // hq == k[2] // hkv,
          "head widths do not divide the packed widths")
    _need(attrs["rule"] in ("linear", "gated", "delta", "gated_delta"), f"update rule {attrs['rule']!r}")
    _need(len(shapes) == 3 + attrs["has_past"] + attrs["has_decay"] + attrs["has_beta"], "operands do not match flags")
    _need(attrs["output"] in ("y", "state"), f"output {attrs['output']!r}")
    dk, dv = k[2] // hkv, v[2] // hkv
    return (q[0], q[1], hq * dv) if attrs["output"] == "y" else (q[0], hkv, dk, dv)


@_op("nn.linear_attention", None, {"q_heads": 1, "kv_heads": 1, "scale": 0.0, "rule": "gated_delta",
                                   "has_past": False, "has_decay": False, "has_beta": False, "output": "y"},
     _lin_att_shape)
def _linear_attention(q, k, v, *extra, q_heads, kv_heads, scale, rule, has_past, has_decay, has_beta, output):
    """ONNX LinearAttention, token by token: the state S[B, Hkv, dk, dv] decays by exp(g_t) (gated
    rules; per head or per key dimension), adds k_t (x) v_t (linear, gated) or beta_t k_t (x)
    (v_t - S^T k_t) (delta rules, S already decayed); o_t = scale * q_t^T S for each query head on
    its key/value head. ``output`` 'y' is the output [B, T, Hq*dv], 'state' the present state.
    Float64 inside, rounded once."""
    extra = list(extra)
    past = extra.pop(0) if has_past else None
    decay = extra.pop(0) if has_decay else None
    beta = extra.pop(0) if has_beta else None
    b, t, _ = q.shape
    hq, hkv = q_heads, kv_heads
    dk, dv = k.shape[2] // hkv, v.shape[2] // hkv
    Q = _f64(q).reshape(b, t, hq, dk)
    K = _f64(k).reshape(b, t, hkv, dk)
    V = _f64(v).reshape(b, t, hkv, dv)
    S = np.zeros((b, hkv, dk, dv)) if past is None else _f64(past).copy()
    g = None if decay is None else _f64(decay).reshape(b, t, hkv, -1)[..., None]      # [B, T, Hkv, 1 or dk, 1]
    be = None if beta is None else np.broadcast_to(_f64(beta).reshape(b, t, -1), (b, t, hkv))[..., None, None]
    sc = scale if scale else 1.0 / math.sqrt(dk)
    group = hq // hkv
    out = np.empty((b, t, hq, dv))
    for s in range(t):
        kt, vt = K[:, s], V[:, s]                                                      # [B, Hkv, dk|dv]
        if rule in ("gated", "gated_delta"):
            S = np.exp(g[:, s]) * S
        if rule in ("linear", "gated"):
            S = S + kt[..., :, None] * vt[..., None, :]
        else:
            pred = np.einsum("bhkv,bhk->bhv", S, kt)
            S = S + be[:, s] * kt[..., :, None] * (vt - pred)[..., None, :]
        Sq = np.repeat(S, group, axis=1)                                               # [B, Hq, dk, dv]
        out[:, s] = sc * np.einsum("bhk,bhkv->bhv", Q[:, s], Sq)
    if output == "state":
        return S.astype(q.dtype)
    return out.reshape(b, t, hq * dv).astype(q.dtype)
