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
