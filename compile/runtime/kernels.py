"""The host runtime's float32 kernels: the operators where nearly all of a network's host time goes
(convolutions and dense layers), computed as onnxruntime and PyTorch compute them -- float32
products summed in float32 by a BLAS or convolution library -- instead of the IR reference's
float64 accumulation rounded once (:mod:`compile.ir.ops`).

* :data:`KERNELS` -- IR operator name -> kernel ``f(*operands, **attrs)``, or None when this
  operand combination is not one it handles (other dtypes, layouts): the caller then uses the
  reference semantics (:func:`compile.ir.ops.evaluate`).
* ``nn.conv2d`` (NCHW/OIHW or NHWC/OHWI, any stride, dilation, groups, asymmetric padding), by
  :func:`_plan`, a function of the shapes (:func:`conv2d_for` binds it once per shape): a 1x1
  stride-1 kernel is one float32 product (:func:`_product`: MKL's through PyTorch above
  :data:`TORCH_PRODUCT_MACS`, else numpy's OpenBLAS; w @ x[C, HW] on maps of at most
  :data:`SMALL_MAP` positions); a depthwise kernel below about 3 M multiply-adds by a loop nest
  compiled with Numba (:mod:`compile.runtime.jit`; 2-30 us on MobileNet-V2's small maps where a
  PyTorch call costs 35-60 us, and within a network's run its time stays the isolated time while a
  PyTorch call's doubles),
  without Numba on a small map one product per channel against the kernel's placement matrices
  (:func:`depthwise_toeplitz`, up to :data:`TOEPLITZ_LIMIT` elements) or a numpy multiply-add per
  kernel tap that reads data (:func:`depthwise_numpy`);
  everything else ``torch.nn.functional.conv2d`` (oneDNN). Without torch: :func:`conv2d_numpy`
  (float32 im2col and one BLAS product per image and group batch).
* ``nn.dense`` (x[..., K] @ w[N, K].T): one float32 product (:func:`_product`); ``nn.pad``
  (constant mode): one fill and one copy, equal to the reference bit for bit (an NHWC-laid-out
  operand keeps that layout); ``mean`` over the spatial axes of an NHWC-laid-out map (global
  average pooling) by a compiled loop (:func:`mean`).

Layout: convolution results lie in NHWC memory order (:data:`NHWC`; the arrays are still
[N, C, H, W] to every reader, as numpy strides make them): oneDNN's depthwise and small 3x3
convolutions run faster on channels-last data (MobileNet-V2: 7.0 -> 6.2 ms per image here), and a
1x1 convolution of one image is one product either way.

Numerics: float32 accumulation in the library's order, so a result differs from the reference by
the float32 rounding of its sums (``tests/test_compile_runtime_kernels.py`` bounds it by 1e-5
relative per operator; ``python -m benchmarks.host_speed`` reports the whole-model difference).
Everything that certifies (rewrites, calls, proofs) uses the reference semantics, never these.
"""
from __future__ import annotations

import numpy as np

from compile.ir import ops
from compile.runtime import jit

_F32 = np.dtype(np.float32)
_torch = []                 # [module or None] once looked up
NHWC = True                 # convolution results in NHWC memory order (oneDNN's fast layout)
USE_TORCH = True            # False: the numpy kernels even when torch is importable (tests compare both)
USE_JIT = True              # False: never the Numba-compiled kernels (compile.runtime.jit)


def _torch_module():
    if not _torch:
        try:
            import torch
            import torch.nn.functional  # noqa: F401
            _torch.append(torch)
        except ImportError:
            _torch.append(None)
    return _torch[0] if USE_TORCH else None


def _f32(*arrays) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype == _F32 for a in arrays)


def conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, data_layout="NCHW",
           kernel_layout="OIHW"):
    """Relay nn.conv2d on float32 x[N, C, H, W] and w[O, C/groups, KH, KW] (or NHWC/OHWI);
    float32 result [N, O, OH, OW]; None for other dtypes."""
    if not _f32(x, w):
        return None
    return conv2d_for(x.shape, w.shape, strides, padding, dilation, groups, data_layout)(x, w)


def conv2d_for(xs, ws, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, data_layout="NCHW"):
    """The float32 convolution kernel ``f(x, w)`` for operands of shapes ``xs`` and ``ws`` with
    these attributes (what :func:`conv2d` runs), its kernel choice (:func:`_plan`) made once:
    the host runtime's plan binds it per step (:mod:`compile.runtime.plan`)."""
    if data_layout == "NHWC":
        inner = conv2d_for((xs[0], xs[3], xs[1], xs[2]), (ws[0], ws[3], ws[1], ws[2]), strides, padding, dilation,
                           groups)

        def nhwc(x, w):
            out = inner(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2))
            return np.ascontiguousarray(out.transpose(0, 2, 3, 1))
        return nhwc
    t, l, b, r = ops._pads(padding)
    strides, dilation, before, after = tuple(strides), tuple(dilation), (t, l), (b, r)
    how = _plan(tuple(xs), tuple(ws), strides, before, after, dilation, groups)
    if how == "depthwise":
        return lambda x, w: depthwise_numpy(x, w, strides, before, after, dilation)
    if how == "toeplitz":
        return lambda x, w: depthwise_toeplitz(x, w, strides, before, after, dilation)
    if how == "jit":
        return lambda x, w: jit.depthwise(x, w, strides, before, after, dilation)
    if how == "numpy":
        return lambda x, w: conv2d_numpy(x, w, strides, before, after, dilation, groups)
    torch = _torch_module()
    fn = torch.nn.functional
    pad = before if before == after else (0, 0)

    def run(x, w):
        xt = torch.from_numpy(x if x.flags.writeable and (_channels_last(x) or x.flags.c_contiguous)
                              else np.array(x, order="C"))
        if NHWC:
            xt = xt.contiguous(memory_format=torch.channels_last)
        if before != after:
            xt = fn.pad(xt, (l, r, t, b))
        with torch.no_grad():
            y = fn.conv2d(xt, _torch_weight(torch, w), None, strides, pad, dilation, groups)
        return y.numpy()
    return run


SMALL_MAP = 64                   # output positions up to which a 1x1 convolution is computed as w @ x
TORCH_PRODUCT_MACS = 1 << 20     # smaller products: numpy (measured here: torch faster only above ~1M)
_PLANS: dict[tuple, str] = {}
TORCH_CALL_US = 50.0        # a PyTorch convolution's fixed cost on one thread (measured: 50-60 us)
JIT_BELOW_US = 250.0        # a depthwise convolution estimated below this runs compiled (jit.depthwise): within a
                            # network's run a PyTorch call costs 2-3x its isolated time (cold code and caches), the
                            # compiled loop about its isolated time (MobileNet-V2's 144x32x32 layer: 330 vs 181 us)


def _plan(xs, ws, strides, before, after, dilation, groups) -> str:
    """Which kernel computes this convolution: "numpy" (1x1 stride-1 kernels are one BLAS product;
    everything when torch is not importable); for a depthwise convolution "jit"
    (:func:`compile.runtime.jit.depthwise`, when Numba imports and its estimated time is below
    :data:`JIT_BELOW_US`), else "toeplitz" (:func:`depthwise_toeplitz`, small maps), "depthwise"
    (:func:`depthwise_numpy`, when its estimated cost -- 3 us per kernel tap that reads data plus
    4 ns per multiply-add -- is below a PyTorch call's); else "torch". A pure function of the
    shapes and attributes (so a result does not depend on timing), cached per key."""
    key = (xs, ws, strides, before, after, dilation, groups, _torch_module() is not None, USE_JIT)
    hit = _PLANS.get(key)
    if hit is not None:
        return hit
    n, c, h, wd = xs
    o, cg, kh, kw = ws
    if cg == 1 and o == c and groups == c:
        oh = (h + before[0] + after[0] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (wd + before[1] + after[1] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
        rows = [r1 - r0 for r0, r1, _ in (_tap_range(h, before[0], i, dilation[0], strides[0], oh) for i in range(kh))]
        cols = [c1 - c0 for c0, c1, _ in (_tap_range(wd, before[1], j, dilation[1], strides[1], ow) for j in range(kw))]
        cost = sum(3.0 + 0.004 * n * c * r * q for r in rows for q in cols if r and q)
        if USE_JIT and jit.available() and jit.depthwise_us(n, c, sum(r * q for r in rows for q in cols)) < JIT_BELOW_US:
            how = "jit"
        elif n == 1 and oh * ow * h * wd * c <= TOEPLITZ_LIMIT and cost >= 2 * TOEPLITZ_US:
            how = "toeplitz"
        else:
            how = "depthwise" if cost < TORCH_CALL_US or _torch_module() is None else "torch"
    elif _torch_module() is None or (kh == kw == 1 and strides == (1, 1) and not any(before + after)):
        how = "numpy"
    else:
        how = "torch"
    _PLANS[key] = how
    return how


_WEIGHTS: dict[int, tuple] = {}      # id -> (weak reference, torch tensor) of read-only weights
WEIGHTS_LIMIT = 1 << 30               # bytes of weight copies kept at most
_kept = [0]


def _torch_weight(torch, w):
    """``w`` as a contiguous torch tensor; a read-only array (a constant weight) is copied once (a
    writeable copy: torch does not take read-only memory) and the tensor kept while ``w`` lives."""
    if w.flags.writeable:
        return torch.from_numpy(np.ascontiguousarray(w))
    hit = _WEIGHTS.get(id(w))
    if hit is not None and hit[0]() is w:
        return hit[1]
    import weakref
    t = torch.from_numpy(np.array(w, order="C"))
    if NHWC and t.ndim == 4:
        t = t.contiguous(memory_format=torch.channels_last)
    if _kept[0] + w.nbytes > WEIGHTS_LIMIT:
        return t                            # beyond the budget: converted at every call

    def _drop(_, k=id(w), d=_WEIGHTS, kept=_kept, n=w.nbytes):
        if d.pop(k, None) is not None:
            kept[0] -= n
    try:
        _WEIGHTS[id(w)] = (weakref.ref(w, _drop), t)
        _kept[0] += w.nbytes
    except TypeError:
        pass
    return t


TOEPLITZ_LIMIT = 1 << 16   # elements of a depthwise convolution's per-channel matrices (256 KB: larger ones, read cold, lose to oneDNN)
TOEPLITZ_US = 5.0          # about what one such product costs here (3-9 us measured at EfficientNet's 2x2 and 4x4 maps)
_TOEPLITZ: dict[tuple, tuple] = {}    # (id of a read-only weight, shapes) -> (weak reference, matrices)


def depthwise_toeplitz(x, w, strides, before, after, dilation):
    """Depthwise convolution of one image x[1, C, H, W] by w[C, 1, KH, KW] on a small map as one
    product per channel: out[p, c] = sum_j T[p, j, c] x[j, c] over the H*W input positions j, with
    T[OH*OW, H*W, C] the kernel placed at each output position p (zeros where a tap reads padding;
    :func:`_toeplitz`, built once per read-only weight). Result in NHWC memory (float32 sums in
    einsum's order: equal to the reference up to float32 rounding)."""
    n, c, h, wd = x.shape
    t, oh, ow = _toeplitz(w, (h, wd), strides, before, after, dilation)
    xl = x.transpose(0, 2, 3, 1).reshape(h * wd, c)
    return np.einsum("pjc,jc->pc", t, xl).reshape(1, oh, ow, c).transpose(0, 3, 1, 2)


def _toeplitz(w, size, strides, before, after, dilation):
    """(T[OH*OW, H*W, C], OH, OW) of :func:`depthwise_toeplitz`, kept while a read-only ``w`` lives."""
    key = (id(w), w.shape, size, strides, before, after, dilation)
    hit = _TOEPLITZ.get(key)
    if hit is not None and hit[0]() is w:
        return hit[1]
    c, _, kh, kw = w.shape
    (h, wd), (sh, sw), (dh, dw) = size, strides, dilation
    oh = (h + before[0] + after[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + before[1] + after[1] - dw * (kw - 1) - 1) // sw + 1
    y, xo, i, j = np.meshgrid(np.arange(oh), np.arange(ow), np.arange(kh), np.arange(kw), indexing="ij")
    iy, ix = y * sh + i * dh - before[0], xo * sw + j * dw - before[1]
    ok = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < wd)
    t = np.zeros((oh * ow, h * wd, c), _F32)
    t[(y * ow + xo)[ok], (iy * wd + ix)[ok]] = w.reshape(c, kh, kw)[:, i[ok], j[ok]].T
    hit = (t, oh, ow)
    if not w.flags.writeable:
        import weakref
        try:
            _TOEPLITZ[key] = (weakref.ref(w, lambda _, k=key, d=_TOEPLITZ: d.pop(k, None)), hit)
        except TypeError:
            pass
    return hit


def _tap_range(size: int, pad: int, k: int, dil: int, stride: int, out: int) -> tuple[int, int, int]:
    """For one kernel tap ``k`` on one spatial axis: (first output, end output, first input) of the
    outputs whose input position o * stride + k * dil - pad lies inside [0, size)."""
    off = k * dil - pad
    o0 = max(0, -(off // stride))                 # the first o with o * stride + off >= 0
    o1 = min(out, (size - 1 - off) // stride + 1) if o0 < out else o0
    return o0, max(o0, o1), o0 * stride + off


def depthwise_numpy(x, w, strides, before, after, dilation):
    """Depthwise convolution (one channel per group) of float32 x[N, C, H, W] by w[C, 1, KH, KW]
    with implicit zero padding: per kernel tap, one multiply-add over the outputs whose input lies
    inside x (no padded copy; a tap that reads only padding is skipped)."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    (sh, sw), (dh, dw), (pt, pl) = strides, dilation, before
    oh = (h + before[0] + after[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + before[1] + after[1] - dw * (kw - 1) - 1) // sw + 1
    acc = np.zeros((n, oh, ow, c), _F32).transpose(0, 3, 1, 2) if NHWC else np.zeros((n, c, oh, ow), _F32)
    wt = w.reshape(c, kh, kw)
    for i in range(kh):
        r0, r1, y0 = _tap_range(h, pt, i, dh, sh, oh)
        if r0 == r1:
            continue
        for j in range(kw):
            c0, c1, x0 = _tap_range(wd, pl, j, dw, sw, ow)
            if c0 == c1:
                continue
            tap = x[:, :, y0:y0 + sh * (r1 - r0 - 1) + 1:sh, x0:x0 + sw * (c1 - c0 - 1) + 1:sw]
            acc[:, :, r0:r1, c0:c1] += tap * wt[:, i, j].reshape(1, c, 1, 1)
    return acc


def _channels_last(x) -> bool:
    """Whether x[N, C, H, W] lies in memory as NHWC (PyTorch's channels-last results do)."""
    return x.ndim == 4 and x.shape[1] > 1 and x.transpose(0, 2, 3, 1).flags.c_contiguous


def conv2d_numpy(x, w, strides, before, after, dilation, groups):
    """The numpy float32 convolution (x[N, C, H, W], w[O, C/groups, KH, KW], explicit zero padding
    ``before`` / ``after`` per spatial axis): im2col columns gathered in float32 and one BLAS
    float32 product per image and group batch; depthwise (one channel per group):
    :func:`depthwise_numpy`."""
    o, cg = w.shape[:2]
    if cg == 1 and groups > 1 and o == groups:             # depthwise: per tap, no padded copy
        return depthwise_numpy(x, w, strides, before, after, dilation)
    if any(before) or any(after):
        x = ops._zero_pad(x, before, after)
    n, c = x.shape[:2]
    kernel = tuple(w.shape[2:])
    out = ops._conv_out_sizes(x.shape, w.shape, strides, (0, 0), (0, 0), dilation)
    g, og = groups, o // groups
    kk, length = kernel[0] * kernel[1], out[0] * out[1]
    if g == 1 and kk == 1 and strides == (1, 1) and n == 1 and length <= SMALL_MAP:
        # a few positions: w @ x[C, HW], the weights read row by row as one matrix-vector-like product
        # (the transposed product packs the whole weight matrix for a handful of rows: 2-3x slower here)
        y = _product(x.reshape(c, length) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(c, length),
                     w, (o, c))
        if not NHWC:
            return y.reshape((n, o) + out)
        # the result in NHWC memory, as every other convolution's (a depthwise convolution reading
        # an NCHW array converts it first: ~30 us at 8x8 maps, the copy here ~2 us)
        return np.ascontiguousarray(y.T).reshape((n,) + out + (o,)).transpose(0, 3, 1, 2)
    if g == 1 and kk == 1 and strides == (1, 1) and (_channels_last(x) or (NHWC and n == 1)):
        # one product with an NHWC result: x in NHWC memory, or one NCHW image read transposed
        xl = x.transpose(0, 2, 3, 1).reshape(n * length, c) if _channels_last(x) else x.reshape(c, length).T
        return _product(xl, w, (o, c), True).reshape((n,) + out + (o,)).transpose(0, 3, 1, 2)
    if kk == 1 and strides == (1, 1):
        cols = x.reshape(n, g, cg, length)
    else:
        cols = np.empty((n, c) + kernel + out, _F32)
        for k, tap in zip(np.ndindex(*kernel), ops._taps(x, kernel, strides, dilation, out)):
            cols[(slice(None), slice(None)) + k] = tap
        cols = cols.reshape(n, g, cg * kk, length)
    res = _product(cols[:, 0], w, (og, cg * kk)) if g == 1 else _product(cols, w, (1, g, og, cg * kk))
    return res.reshape((n, o) + out)


def _product(a, w, shape: tuple, transposed: bool = False):
    """The float32 matrix product w.reshape(shape) @ a (``transposed``: a @ w.reshape(shape).T),
    numpy broadcasting over leading axes: PyTorch's (MKL's sgemm: 1.5-2x OpenBLAS's on the
    small products of 1x1 convolutions, measured here) when torch is importable and the product
    has at least :data:`TORCH_PRODUCT_MACS` multiply-adds (below, a torch call's fixed cost
    dominates), else numpy's."""
    torch = _torch_module()
    if torch is None or a.size * shape[-2] < TORCH_PRODUCT_MACS:
        wm = w.reshape(shape)
        return a @ wm.T if transposed else np.matmul(wm, a)
    lead = a.shape[:-2]
    if len(shape) == 2 and all(d == 1 for d in lead):     # one image: a 2-D product (no batching)
        a = a.reshape(a.shape[-2:])
    ta = torch.from_numpy(a if a.flags.writeable else np.array(a))
    wm = _torch_weight(torch, w).reshape(shape)
    with torch.no_grad():
        y = (torch.matmul(ta, wm.T) if transposed else torch.matmul(wm, ta)).numpy()
    return y.reshape(lead + y.shape[-2:]) if y.ndim == 2 and lead else y


def dense(x, w):
    """nn.dense on float32 x[..., K], w[N, K]: x @ w.T, [..., N], one float32 BLAS product."""
    if not _f32(x, w):
        return None
    return _product(x.reshape(-1, x.shape[-1]), w, w.shape, True).reshape(x.shape[:-1] + (w.shape[0],))


def pad(x, pad_width, pad_value=0.0, pad_mode="constant"):
    """nn.pad, constant mode: the reference's result (np.pad) by one fill and one copy; None for
    the other modes. A 4-D operand laid out NHWC in memory (a convolution's result, or a strided
    slice of one) gets its result in NHWC memory too, so a residual add can read both in one
    order (the values are the same either way)."""
    if pad_mode != "constant" or not isinstance(x, np.ndarray) or len(pad_width) != x.ndim:
        return None
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, pad_width))
    if x.ndim == 4 and x.shape[1] > 1 and not x.flags.c_contiguous and _nhwc_order(x):
        out = np.full((shape[0], shape[2], shape[3], shape[1]), pad_value, x.dtype).transpose(0, 3, 1, 2)
    else:
        out = np.full(shape, pad_value, x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pad_width))] = x
    return out


def _nhwc_order(x) -> bool:
    """Whether the strides of x[N, C, H, W] run channels fastest, then W, then H (NHWC memory
    order, possibly with gaps: a strided slice of an NHWC array)."""
    s = [abs(v) for v in x.strides]
    return s[1] <= s[3] <= s[2] <= s[0]


def mean(x, axis=None, keepdims=False):
    """The IR's ``mean`` over the spatial axes (2, 3) of a 4-D float32 map laid out NHWC in memory
    (a network's global average pooling), by :func:`compile.runtime.jit.mean_positions` (float64
    sums rounded once; the reference sums in float32 pairwise, so the two differ by float32
    rounding); None for every other case (the reference then runs)."""
    if not (USE_JIT and isinstance(x, np.ndarray) and x.ndim == 4 and axis is not None
            and sorted(int(a) % 4 for a in axis) == [2, 3] and len(axis) == 2 and jit.available()):
        return None
    y = jit.mean_positions(x)
    if y is None:
        return None
    return y.reshape(y.shape + (1, 1)) if keepdims else y


KERNELS = {"nn.conv2d": conv2d, "nn.dense": dense, "nn.pad": pad, "mean": mean}


def evaluate(op: str, args: list, attrs: dict) -> np.ndarray:
    """``op`` on ``args`` with the float32 kernel where there is one for these operands, else the
    reference semantics (:func:`compile.ir.ops.evaluate`)."""
    with np.errstate(all="ignore"):
        return evaluate_quiet(op, args, attrs)


def evaluate_quiet(op: str, args: list, attrs: dict) -> np.ndarray:
    """:func:`evaluate` for a caller that has already set ``np.errstate(all="ignore")`` (the host
    runtime, once per run)."""
    k = KERNELS.get(op)
    if k is not None:
        y = k(*args, **attrs)
        if y is not None:
            return y
    return ops.OPS[op].fn(*args, **attrs)


# ----------------------------------------------------------------------------- in place
def _clip_inplace(x, a_min, a_max):
    # numpy's clip, one pass (the reference's maximum then minimum are two): the same values, except
    # that a zero result may be +0.0 where the reference gives -0.0
    return np.clip(x, a_min, a_max, out=x)


def _sigmoid_inplace(x):
    np.negative(x, out=x)                   # the reference's operations, in its order, into x
    np.exp(x, out=x)
    x += 1.0
    return np.divide(1.0, x, out=x)


def _binary_inplace(f):
    def run(a, b):
        if not (isinstance(b, np.ndarray) and b.dtype == a.dtype and b.ndim <= a.ndim
                and np.broadcast_shapes(a.shape, b.shape) == a.shape):
            return None
        return f(a, b, out=a)
    return run


def _batch_norm_inplace(x, gamma, beta, mean, var, axis, epsilon):
    if not all(isinstance(a, np.ndarray) and a.dtype == x.dtype for a in (gamma, beta, mean, var)):
        return None
    shp = [1] * x.ndim
    shp[axis % x.ndim] = -1
    scale = (gamma / np.sqrt(var + epsilon)).reshape(shp)
    np.subtract(x, mean.reshape(shp), out=x)
    x *= scale
    x += beta.reshape(shp)
    return x


def _bias_add_inplace(x, b, axis):
    if not (isinstance(b, np.ndarray) and b.dtype == x.dtype):
        return None
    ax = axis % x.ndim
    return np.add(x, b.reshape((-1,) + (1,) * (x.ndim - ax - 1)), out=x)


# Elementwise operators that may write their result into their first operand when that operand is
# a float32 array nobody else reads: the reference's numpy operations, in its order, so the result
# is equal bit for bit (clip: numpy's one-pass clip, equal in value; None: these operands are not
# handled, compute a new array).
IN_PLACE = {
    "nn.relu": lambda x: np.maximum(x, 0, out=x),
    "clip": _clip_inplace,
    "sigmoid": _sigmoid_inplace,
    "add": _binary_inplace(np.add),
    "subtract": _binary_inplace(np.subtract),
    "multiply": _binary_inplace(np.multiply),
    "nn.bias_add": _bias_add_inplace,
    "nn.batch_norm": _batch_norm_inplace,
}
# Operators whose result is a new array (never a view of an operand): only such a result may be
# overwritten in place by its single reader.
FRESH = frozenset(KERNELS) | frozenset(IN_PLACE)


def evaluate_in_place(op: str, args: list, attrs: dict):
    """``op`` computed into ``args[0]`` (which the caller owns: a fresh float32 array no other
    step reads), or None when ``op`` has no in-place form for these operands. The caller sets
    ``np.errstate(all="ignore")`` (IEEE results, no warnings, as :func:`compile.ir.ops.evaluate`)."""
    f = IN_PLACE.get(op)
    x = args[0] if args else None
    if f is None or not (isinstance(x, np.ndarray) and x.dtype == _F32 and x.flags.writeable):
        return None
    return f(*args, **attrs)

