"""The host runtime's step plan (compile.runtime.plan): a planned run computes what the step-by-step
interpreter loop computes with the same kernels (fusions included), a fusion never hides a value
another step reads, and the small-map kernels (depthwise as per-channel products, 1x1 convolutions
as w @ x) agree with the reference semantics."""
import numpy as np
import pytest

from compile.interpret import Interpreter, host_program, run_graph
from compile.ir.graph import Graph, call, const, var
from compile.runtime import HostRuntime, kernels, run
from compile.runtime.plan import plan


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _blocks(rng, extra_reader: bool = False):
    """conv -> clip (fused), depthwise conv -> relu (fused), 1x1 conv -> SiLU (sigmoid * x, fused),
    squeeze-and-excite gate (sigmoid of another value: not SiLU); ``extra_reader``: the first
    convolution is also read by an add, so its clip must not be fused into it."""
    x = var("x", (1, 8, 6, 6))
    c = call("nn.conv2d", x, const(rng.standard_normal((16, 8, 3, 3)).astype(np.float32)),
             strides=(1, 1), padding=(1, 1, 1, 1))
    a = call("clip", c, a_min=0.0, a_max=6.0)
    d = call("nn.relu", call("nn.conv2d", a, const(rng.standard_normal((16, 1, 3, 3)).astype(np.float32)),
                             strides=(1, 1), padding=(1, 1, 1, 1), groups=16))
    p = call("nn.conv2d", d, const(rng.standard_normal((16, 16, 1, 1)).astype(np.float32)))
    silu = call("multiply", p, call("sigmoid", p))
    gate = call("sigmoid", call("mean", silu, axis=(2, 3), keepdims=True))
    out = call("multiply", silu, gate)
    if extra_reader:
        out = call("add", out, c)
    return Graph([x], [out]), {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)}


@pytest.mark.parametrize("extra_reader", [False, True])
def test_planned_run_equals_the_step_by_step_loop(extra_reader):
    g, feeds = _blocks(np.random.default_rng(0), extra_reader)
    prog = host_program(g)
    hr = HostRuntime(prog, g.inputs)
    planned = hr.run(feeds)[0]
    looped = Interpreter.run(HostRuntime(host_program(g), g.inputs), feeds)[0]   # run_host per step
    assert np.array_equal(planned, looped)
    assert _rel(planned, run_graph(g, feeds)[0]) < 1e-5
    kinds = [p.kind for p in plan(prog, hr.owned)]
    # fused pairs become aliases: clip into its conv (not when the conv has another reader), relu
    # into the depthwise conv, the multiply of SiLU into its sigmoid
    assert kinds.count("alias") == (2 if extra_reader else 3)


@pytest.mark.parametrize("downsample", [False, True])
def test_a_residual_add_and_relu_run_as_one_step(downsample):
    """relu(conv(x) + shortcut): one step (the add into the convolution's fresh result), equal to
    the step-by-step loop; the shortcut is x itself or, downsampling, a strided slice of x padded
    with channels (ResNet-20's option A), which keeps x's NHWC layout so one pass reads both."""
    from compile.runtime import jit
    if not jit.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(6)
    x = var("x", (1, 8, 8, 8))
    first = call("nn.relu", call("nn.conv2d", x, const(rng.standard_normal((8, 8, 3, 3)).astype(np.float32)),
                                 padding=(1, 1, 1, 1)))                # an NHWC-laid-out block input
    if downsample:
        w = const(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
        body = call("nn.conv2d", first, w, strides=(2, 2), padding=(1, 1, 1, 1))
        short = call("nn.pad", call("strided_slice", first, begin=(0, 0, 0, 0), end=(1, 8, 8, 8), strides=(1, 1, 2, 2)),
                     pad_width=((0, 0), (4, 4), (0, 0), (0, 0)))
    else:
        body = call("nn.conv2d", first, const(rng.standard_normal((8, 8, 3, 3)).astype(np.float32)),
                    padding=(1, 1, 1, 1))
        short = first
    g = Graph([x], [call("nn.relu", call("add", body, short))])
    feeds = {"x": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)}
    prog = host_program(g)
    hr = HostRuntime(prog, g.inputs)
    planned = hr.run(feeds)[0]
    looped = Interpreter.run(HostRuntime(host_program(g), g.inputs), feeds)[0]
    assert np.array_equal(planned, looped) and _rel(planned, run_graph(g, feeds)[0]) < 1e-5
    ops_of = {p.index: prog.steps[p.index].value.op for p in plan(prog, hr.owned) if p.kind == "alias"}
    assert sorted(ops_of.values()) == ["nn.relu", "nn.relu"]          # the block input's relu and the residual one


def test_a_fusion_never_hides_a_value_another_step_reads():
    rng = np.random.default_rng(1)
    x = var("x", (1, 4, 5, 5))
    c = call("nn.conv2d", x, const(rng.standard_normal((4, 4, 3, 3)).astype(np.float32)), padding=(1, 1, 1, 1))
    s = call("sigmoid", c)
    g = Graph([x], [call("multiply", c, s), s, call("nn.relu", c)])   # sigmoid and conv read twice
    feeds = {"x": rng.standard_normal((1, 4, 5, 5)).astype(np.float32)}
    for got, want in zip(run(g, feeds), run_graph(g, feeds)):
        assert _rel(got, want) < 1e-5
    hr = HostRuntime(host_program(g), g.inputs)
    assert all(p.kind != "alias" for p in plan(hr.program, hr.owned))


@pytest.mark.parametrize("c, h, k, s, d, p", [
    (480, 2, 5, 1, 1, 2), (240, 4, 3, 2, 1, 1), (16, 5, 3, 1, 2, 2), (32, 4, 3, 1, 1, 0), (24, 3, 5, 2, 1, (2, 1, 0, 2))])
def test_small_map_depthwise_products_equal_the_reference(c, h, k, s, d, p, monkeypatch):
    monkeypatch.setattr(kernels, "USE_JIT", False)          # the choice without Numba
    rng = np.random.default_rng(c + h)
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    w = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    w.flags.writeable = False                       # a constant weight: its matrices are kept
    pads = (p,) * 4 if isinstance(p, int) else p
    t, l, b, r = pads
    assert kernels._plan(x.shape, w.shape, (s, s), (t, l), (b, r), (d, d), c) in ("toeplitz", "depthwise")
    got = kernels.depthwise_toeplitz(x, w, (s, s), (t, l), (b, r), (d, d))
    want = run_graph(Graph([v := var("x", x.shape)], [call("nn.conv2d", v, const(w), strides=(s, s), padding=pads,
                                                          dilation=(d, d), groups=c)]), {"x": x})[0]
    assert got.shape == want.shape and _rel(got, want) < 1e-5
    assert kernels.depthwise_toeplitz(x, w, (s, s), (t, l), (b, r), (d, d)) is not got     # a fresh result


def test_small_map_pointwise_convolution_equals_the_reference():
    rng = np.random.default_rng(3)
    for c, h, o in [(1152, 1, 48), (112, 2, 672), (24, 8, 144)]:
        x = rng.standard_normal((1, c, h, h)).astype(np.float32)
        w = rng.standard_normal((o, c, 1, 1)).astype(np.float32)
        got = kernels.conv2d(x, w)
        want = run_graph(Graph([v := var("x", x.shape)], [call("nn.conv2d", v, const(w))]), {"x": x})[0]
        assert _rel(got, want) < 1e-5
