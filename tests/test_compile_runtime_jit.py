"""The host runtime's Numba-compiled kernels (compile/runtime/jit.py): within float32 rounding of
the IR reference semantics at every stride / dilation / padding combination, and chosen by the
runtime's plan only where they are cheaper than a library call."""
import numpy as np
import pytest

from compile.interpret import run_graph
from compile.ir.graph import Graph, call, const, var
from compile.runtime import jit, kernels

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")


def _reference(x, w, s, pads, d):
    c = x.shape[1]
    g = Graph([v := var("x", x.shape)], [call("nn.conv2d", v, const(w), strides=s, padding=pads, dilation=d,
                                               groups=c)])
    return run_graph(g, {"x": x})[0]


@pytest.mark.parametrize("n, c, h, wd, k, s, d, pads", [
    (1, 32, 9, 9, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (2, 24, 8, 7, 3, (2, 2), (1, 1), (1, 1, 1, 1)),         # two images, odd width, stride 2
    (1, 16, 6, 6, 5, (1, 2), (2, 1), (2, 0, 3, 1)),         # asymmetric stride, dilation and padding
    (1, 40, 1, 1, 3, (1, 1), (1, 1), (1, 1, 1, 1)),         # a 1x1 map: only the centre tap reads data
    (1, 8, 2, 2, 5, (2, 2), (1, 1), (2, 2, 2, 2)),          # taps mostly in padding
    (1, 3, 7, 5, 3, (1, 1), (1, 1), (0, 0, 0, 0)),          # no padding
])
def test_depthwise_equals_the_reference(n, c, h, wd, k, s, d, pads):
    rng = np.random.default_rng(c * h + k)
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    want = _reference(x, w, s, pads, d)
    got = jit.depthwise(x, w, s, pads[:2], pads[2:], d)
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    assert got.transpose(0, 2, 3, 1).flags.c_contiguous            # NHWC memory, as the other kernels
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)   # channels-last input
    assert np.array_equal(jit.depthwise(nhwc, w, s, pads[:2], pads[2:], d), got)


def test_a_constant_weight_is_rearranged_once_and_results_are_fresh():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w.flags.writeable = False
    a = jit.depthwise(x, w, (1, 1), (1, 1), (1, 1), (1, 1))
    assert jit._tap_major(w) is jit._tap_major(w)
    b = jit.depthwise(x, w, (1, 1), (1, 1), (1, 1), (1, 1))
    assert a is not b and np.array_equal(a, b)
    w2 = w.copy()                                                   # a writeable weight: read at every call
    w2[0] += 1
    assert not np.array_equal(jit.depthwise(x, w2, (1, 1), (1, 1), (1, 1), (1, 1))[:, 0], a[:, 0])


def test_the_plan_compiles_small_depthwise_convolutions_only(monkeypatch):
    small = ((1, 384, 8, 8), (384, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 384)      # MobileNet-V2: 0.2 M MACs
    large = ((1, 256, 56, 56), (256, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 256)    # 7 M MACs: a library call
    assert kernels._plan(*small) == "jit"
    assert kernels._plan(*large) != "jit"
    assert kernels._plan((1, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1) != "jit"   # not depthwise
    monkeypatch.setattr(kernels, "USE_JIT", False)
    assert kernels._plan(*small) != "jit"
    x = np.random.default_rng(2).standard_normal(small[0]).astype(np.float32)
    w = np.random.default_rng(3).standard_normal(small[1]).astype(np.float32)
    monkeypatch.setattr(kernels, "USE_JIT", True)
    got = kernels.conv2d(x, w, padding=(1, 1, 1, 1), groups=384)
    want = _reference(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_add_relu_equals_the_two_numpy_steps_and_declines_other_layouts():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1, 8, 5, 6)).astype(np.float32)
    b = rng.standard_normal((1, 8, 5, 6)).astype(np.float32)
    a[0, 0, 0, 0], b[0, 1, 0, 0] = np.nan, -np.inf
    want = np.maximum(a + b, 0)
    for x, y in ((a.copy(), b), (np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
                                 np.ascontiguousarray(b.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2))):
        got = jit.add_relu(x, y)
        assert got is x and np.array_equal(got, want, equal_nan=True)
    nhwc = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert jit.add_relu(nhwc, b) is None                              # layouts differ: the caller's two steps
    assert jit.add_relu(a.copy(), b[:, :, :, :1]) is None             # broadcasting: not this kernel's
    assert jit.add_relu(a.astype(np.float64), b) is None


def test_global_mean_of_an_nhwc_map_equals_the_reference():
    from compile.ir import ops
    rng = np.random.default_rng(5)
    x = np.ascontiguousarray(rng.standard_normal((2, 7, 5, 3)).astype(np.float32)).transpose(0, 3, 1, 2)
    for attrs in ({"axis": [2, 3], "keepdims": False}, {"axis": [-1, -2], "keepdims": True}):
        want = ops.evaluate("mean", [x], attrs)
        got = kernels.mean(x, **attrs)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    assert kernels.mean(np.ascontiguousarray(x), axis=[2, 3]) is None        # NCHW memory: numpy's reduction
    assert kernels.mean(x, axis=[1, 2, 3]) is None and kernels.mean(x, axis=None) is None


def test_pad_keeps_an_nhwc_layout_and_the_values():
    from compile.ir import ops
    x = np.ascontiguousarray(np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 6, 3, 4)).transpose(0, 3, 1, 2)
    s = x[:, :, ::2, ::2]                                             # a strided slice of an NHWC map
    a = {"pad_width": ((0, 0), (2, 2), (0, 0), (0, 0)), "pad_value": 0.0, "pad_mode": "constant"}
    got = kernels.pad(s, **a)
    assert np.array_equal(got, ops.evaluate("nn.pad", [s], a)) and got.transpose(0, 2, 3, 1).flags.c_contiguous
    c = np.ascontiguousarray(s)
    assert kernels.pad(c, **a).flags.c_contiguous and np.array_equal(kernels.pad(c, **a), got)
