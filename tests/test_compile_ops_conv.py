"""compile.ir.ops convolution and pooling paths (issue 23: im2col + BLAS, vectorised depthwise,
1x1 fast path, N-d, transposed) against convolutions and pools written out as loops in float64;
the float64 weight cache is only used for read-only arrays."""
import itertools

import numpy as np
import pytest

from compile.ir import ops


def _conv_loops(x, w, strides, before, after, dilation, groups):
    """Cross-correlation by definition (float64), any number of spatial axes."""
    nd = x.ndim - 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple(zip(before, after)))
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    y = np.zeros((n, o, *out_sp))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for pos in itertools.product(*[range(s) for s in out_sp]):
            acc = 0.0
            for ci in range(cg):
                for kk in itertools.product(*[range(s) for s in k]):
                    idx = tuple(p * s + q * d for p, s, q, d in zip(pos, strides, kk, dilation))
                    acc += xp[(slice(None), g * cg + ci) + idx] * float(w[(oc, ci) + kk])
            y[(slice(None), oc) + pos] = acc
    return y


CASES = [  # (x shape, w shape, strides, before, after, dilation, groups)
    ((1, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 0), (1, 1), (1, 1), 2),       # grouped
    ((2, 3, 5, 5), (4, 3, 1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1),       # 1x1 fast path, batch 2
    ((1, 6, 5, 5), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 6),       # depthwise, small map
    ((1, 3, 20, 17), (3, 1, 3, 3), (2, 1), (1, 1), (1, 1), (2, 1), 3),     # depthwise, large map, dilated
    ((1, 2, 9), (3, 2, 3), (2,), (1,), (2,), (2,), 1),                      # 1-D
    ((1, 4, 4, 5, 3), (2, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (0, 1, 1), (1, 1, 2), 2),   # 3-D grouped
]


@pytest.mark.parametrize("case", CASES, ids=[f"{len(c[0]) - 2}d-g{c[6]}-{c[1][2:]}" for c in CASES])
def test_convolution_paths_equal_the_definition(case):
    xs, ws, strides, before, after, dil, groups = case
    rng = np.random.default_rng(len(xs) * 7 + groups)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    want = _conv_loops(x, w, strides, before, after, dil, groups).astype(np.float32)
    for frozen in (False, True):                    # the importer's constants are read-only
        w.setflags(write=not frozen)
        got = ops._conv_core(x, w, strides, before, after, dil, groups)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    if len(xs) == 4:                                 # through the IR operator (its padding order)
        got = ops.evaluate("nn.conv2d", [x, w], ops.normalise_attrs("nn.conv2d", dict(
            strides=strides, padding=before + after, dilation=dil, groups=groups)))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_transposed_convolution_is_the_adjoint():
    """<conv(x, w), y> == <x, conv_transpose(y, w)> for every stride / padding / dilation here."""
    rng = np.random.default_rng(3)
    for strides, pads, dil in (((2, 1), (1, 0, 1, 0), (1, 1)), ((1, 2), (0, 1, 0, 0), (2, 1))):
        x = rng.standard_normal((1, 4, 7, 6))
        w = rng.standard_normal((6, 2, 3, 2))
        y = ops._conv_core(x, w, strides, pads[:2], pads[2:], dil, 2)
        r = rng.standard_normal(y.shape)
        attrs = ops.normalise_attrs("nn.conv2d_transpose", dict(strides=strides, padding=pads, dilation=dil, groups=2,
                                                                output_padding=(0, 0)))
        xt = ops.evaluate("nn.conv2d_transpose", [r, w], attrs)
        xt = xt[:, :, :x.shape[2], :x.shape[3]]
        xt = np.pad(xt, ((0, 0), (0, 0), (0, x.shape[2] - xt.shape[2]), (0, x.shape[3] - xt.shape[3])))
        assert np.isclose((y * r).sum(), (x * xt).sum())


def test_pools_equal_the_definition():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    for kind in ("max", "avg"):
        for ceil, cip in ((False, False), (True, False), (True, True)):
            got = ops._pool_nd(x, (3, 2), (2, 3), (1, 0), (1, 1), (1, 2), ceil, kind, cip)
            xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1 + 3), (0, 1 + 3)), constant_values=np.nan)
            oh, ow = got.shape[2:]
            for i, j in itertools.product(range(oh), range(ow)):
                win = xp[:, :, i * 2:i * 2 + 3, j * 3:j * 3 + 3:2]          # dilation 2 along W
                inside = ~np.isnan(win)
                if kind == "max":
                    want = np.nanmax(win, axis=(2, 3))
                else:
                    n = inside.sum(axis=(2, 3))
                    if cip:                                  # explicit pads count, the ceil overhang not
                        rows = [r for r in range(i * 2, i * 2 + 3) if r < 7 + 2]
                        cols = [c for c in range(j * 3, j * 3 + 3, 2) if c < 8 + 1]
                        n = len(rows) * len(cols)
                    want = np.nansum(win, axis=(2, 3)) / n
                np.testing.assert_allclose(got[:, :, i, j], want, rtol=1e-6)


def test_float64_weight_cache_only_for_read_only_arrays():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = ops._f64w(w)
    w[0, 0] = 100.0                                  # a writeable array is converted every time
    assert ops._f64w(w)[0, 0] == 100.0 and a[0, 0] == 0.0
    w.setflags(write=False)
    b = ops._f64w(w)
    assert ops._f64w(w) is b and b.dtype == np.float64 and b[0, 0] == 100.0
