"""Host kernels compiled by Numba (a well-kept JIT compiler for numpy loops), for the operators
where a library call's fixed cost dominates: a depthwise convolution of MobileNet-V2 or
EfficientNet on a CIFAR-sized map is 0.1-0.9 M multiply-adds, which oneDNN computes in a few
microseconds but PyTorch's call around it costs 30-40 us (measured here: 960x4x4, 3x3 kernel:
35 us through ``torch.conv2d``, 10 us here).

* :func:`available` -- whether Numba imports (it is an optional dependency: without it the
  runtime's plan never chooses these kernels, :mod:`compile.runtime.kernels`).
* :func:`depthwise` -- depthwise convolution (one channel per group), NHWC loops with the
  channels innermost, float32 sums over the kernel taps in row-major tap order.
* :func:`add_relu` -- a residual block's ``relu(a + b)`` in one pass, into ``a``.
* :func:`mean_positions` -- global average pooling of an NHWC-laid-out map.

Numerics: float32 accumulation (as oneDNN's), so a result differs from the IR reference
(float64 accumulation rounded once, :mod:`compile.ir.ops`) by the float32 rounding of its sums;
nothing that certifies uses these kernels.
"""
from __future__ import annotations

import weakref

import numpy as np

_F32 = np.dtype(np.float32)
_numba: list = []             # [module or None] once looked up
_kernels: dict = {}           # name -> compiled function
_WEIGHTS: dict = {}           # id of a read-only weight -> (weak reference, tap-major copy)


def available() -> bool:
    """Whether Numba imports here."""
    if not _numba:
        try:
            import numba
            _numba.append(numba)
        except ImportError:
            _numba.append(None)
    return _numba[0] is not None


def _compiled(loop):
    """``loop`` compiled by Numba once per process (cached on disk beside this module); raises
    RuntimeError when Numba is not installed (callers check :func:`available` first)."""
    name = loop.__name__
    if name not in _kernels:
        if not available():
            raise RuntimeError(f"numba is not installed: compile.runtime.jit.{name} is unavailable")
        _kernels[name] = _numba[0].njit(cache=True, nogil=True)(loop)
    return _kernels[name]


def _depthwise_loops(x, w, out, sh, sw, dh, dw, pt, pl):
    n_, h, wd, c = x.shape
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    acc = np.empty(c, np.float32)
    for n in range(n_):
        for oy in range(oh):
            for ox in range(ow):
                acc[:] = 0
                for i in range(kh):
                    y = oy * sh - pt + i * dh
                    if y < 0 or y >= h:
                        continue
                    for j in range(kw):
                        xx = ox * sw - pl + j * dw
                        if xx < 0 or xx >= wd:
                            continue
                        for k in range(c):
                            acc[k] += x[n, y, xx, k] * w[i, j, k]
                for k in range(c):
                    out[n, oy, ox, k] = acc[k]


def _add_relu_loop(a, b):
    for i in range(a.size):
        v = a[i] + b[i]
        a[i] = 0 if v < 0 else v          # np.maximum(v, 0): a NaN stays NaN


def _mean_positions_loop(x, out):
    n_, p_, c = x.shape
    acc = np.empty(c, np.float64)
    for n in range(n_):
        acc[:] = 0
        for p in range(p_):
            for k in range(c):
                acc[k] += x[n, p, k]
        for k in range(c):
            out[n, k] = acc[k] / p_


def _nhwc(x) -> bool:
    """Whether 4-D x[N, C, H, W] lies in memory as a contiguous NHWC array."""
    return x.ndim == 4 and x.transpose(0, 2, 3, 1).flags.c_contiguous


def _flat(x):
    """A one-dimensional view of ``x`` in its memory order (C order, or NHWC order of a 4-D array
    [N, C, H, W]) and that order's name, or (None, None) for other layouts."""
    if x.flags.c_contiguous:
        return x.reshape(-1), "C"
    if _nhwc(x):
        return x.transpose(0, 2, 3, 1).reshape(-1), "NHWC"
    return None, None


def add_relu(a, b):
    """``relu(a + b)`` written into ``a`` (float32 arrays of one shape, laid out in the same memory
    order) in one pass: the float32 sum and ``max(., 0)`` of numpy's ``add`` and ``maximum`` per
    element, so the result equals the two numpy steps (NaN stays NaN). Returns ``a``, or None when
    the operands are not such arrays (the caller then runs the two steps)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == _F32 and b.dtype == _F32
            and a.shape == b.shape and a.flags.writeable):
        return None
    fa, order = _flat(a)
    fb, order_b = _flat(b)
    if fa is None or order != order_b:
        return None
    _compiled(_add_relu_loop)(fa, fb)
    return a


def mean_positions(x):
    """The mean over the spatial axes of float32 x[N, C, H, W] laid out NHWC in memory (global
    average pooling of a convolution's result): float32 [N, C], summed in float64 position by
    position and rounded once. None for another dtype, rank or layout (numpy's own reduction is
    fast on NCHW memory)."""
    if not (isinstance(x, np.ndarray) and x.dtype == _F32 and x.ndim == 4 and x.shape[1] > 1
            and x.shape[2] * x.shape[3] > 0 and _nhwc(x)):
        return None
    n, c, h, w = x.shape
    out = np.empty((n, c), _F32)
    _compiled(_mean_positions_loop)(x.transpose(0, 2, 3, 1).reshape(n, h * w, c), out)
    return out


def _tap_major(w) -> np.ndarray:
    """w[C, 1, KH, KW] as a contiguous float32 w[KH, KW, C]; kept while a read-only ``w`` lives."""
    hit = _WEIGHTS.get(id(w))
    if hit is not None and hit[0]() is w:
        return hit[1]
    c, _, kh, kw = w.shape
    t = np.ascontiguousarray(w.reshape(c, kh, kw).transpose(1, 2, 0), dtype=_F32)
    if not w.flags.writeable:
        try:
            _WEIGHTS[id(w)] = (weakref.ref(w, lambda _, k=id(w), d=_WEIGHTS: d.pop(k, None)), t)
        except TypeError:
            pass
    return t


def depthwise(x, w, strides, before, after, dilation):
    """Depthwise convolution of float32 x[N, C, H, W] by w[C, 1, KH, KW] (one channel per group),
    zero padding ``before`` = (top, left) and ``after`` = (bottom, right), strides and dilation
    per spatial axis; the result [N, C, OH, OW] float32 in NHWC memory order (as the runtime's
    other convolution kernels). Raises RuntimeError when Numba is not installed."""
    fn = _compiled(_depthwise_loops)
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    (sh, sw), (dh, dw) = strides, dilation
    oh = (h + before[0] + after[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + before[1] + after[1] - dw * (kw - 1) - 1) // sw + 1
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out = np.empty((n, oh, ow, c), _F32)
    fn(xl, _tap_major(w), out, sh, sw, dh, dw, before[0], before[1])
    return out.transpose(0, 3, 1, 2)


def depthwise_us(n: int, c: int, taps: int) -> float:
    """Estimated microseconds of :func:`depthwise` for ``taps`` kernel taps (counted over the
    output positions, those that read data) on ``n`` images of ``c`` channels (measured here:
    about 12 multiply-adds per ns with 96 or more channels, half that below 64)."""
    per_ns = 12.0 if c >= 64 else 6.0
    return 1.0 + n * c * taps / (per_ns * 1e3)
