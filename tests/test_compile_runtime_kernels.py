"""The host runtime's float32 kernels (compile/runtime/kernels.py) and its in-place elementwise
steps: within float32 rounding of the IR reference semantics, on both the PyTorch and the numpy
paths, and never writing into a value another step still reads."""
import numpy as np
import pytest

from compile.errors import CompileError
from compile.interpret import run_graph
from compile.ir import ops
from compile.ir.graph import Graph, call, const, var
from compile.runtime import kernels, run


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


CONVS = [  # x shape, w shape, strides, padding (t, l, b, r), dilation, groups
    ((1, 16, 12, 12), (8, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 6, 11, 9), (4, 6, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2), 1),        # asymmetric padding, dilation
    ((1, 8, 10, 10), (12, 4, 3, 3), (1, 2), (1, 1, 1, 1), (1, 1), 2),      # grouped
    ((1, 24, 9, 9), (24, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 24),      # depthwise
    ((2, 16, 2, 2), (16, 1, 5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 16),      # depthwise, taps mostly in padding
    ((1, 40, 1, 1), (40, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 40),      # depthwise on a 1x1 map
    ((1, 32, 7, 7), (48, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),      # 1x1: one product
    ((1, 64, 32, 32), (96, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),    # 1x1 above the torch-product size
    ((1, 5, 8, 8), (7, 5, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),         # 1x1 strided: im2col
]


@pytest.fixture(params=[True, False], ids=["torch", "numpy"])
def path(request, monkeypatch):
    if request.param:
        pytest.importorskip("torch")
    monkeypatch.setattr(kernels, "USE_TORCH", request.param)
    monkeypatch.setattr(kernels, "USE_JIT", request.param)      # the numpy path: numpy kernels only
    return request.param


@pytest.mark.parametrize("xs, ws, strides, padding, dilation, groups", CONVS)
def test_conv2d_within_float32_rounding_of_the_reference(path, xs, ws, strides, padding, dilation, groups):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    w.flags.writeable = False                           # a constant weight, as the importer makes them
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    ref = ops.evaluate("nn.conv2d", [x, w], attrs)
    got = kernels.evaluate("nn.conv2d", [x, w], attrs)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert _rel(got, ref) < 1e-5


def test_nhwc_conv2d_and_its_channels_last_product(path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 6, 6, 16)).astype(np.float32)         # NHWC
    w = rng.standard_normal((8, 1, 1, 16)).astype(np.float32)         # OHWI
    attrs = dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, data_layout="NHWC",
                 kernel_layout="OHWI")
    assert _rel(kernels.evaluate("nn.conv2d", [x, w], attrs), ops.evaluate("nn.conv2d", [x, w], attrs)) < 1e-5
    xl = x.transpose(0, 3, 1, 2)                                       # NCHW view of NHWC memory
    wn = np.ascontiguousarray(w.transpose(0, 3, 1, 2))
    got = kernels.conv2d_numpy(xl, wn, (1, 1), (0, 0), (0, 0), (1, 1), 1)
    assert _rel(got, ops.evaluate("nn.conv2d", [np.ascontiguousarray(xl), wn], {**attrs, "data_layout": "NCHW",
                                                                                   "kernel_layout": "OIHW"})) < 1e-5


def test_dense_and_other_dtypes_fall_back_to_the_reference(path):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 4, 300)).astype(np.float32), rng.standard_normal((900, 300)).astype(np.float32)
    assert _rel(kernels.evaluate("nn.dense", [x, w], {}), ops.evaluate("nn.dense", [x, w], {})) < 1e-5
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert kernels.dense(x64, w64) is None                           # not a float32 kernel's operands
    assert np.array_equal(kernels.evaluate("nn.dense", [x64, w64], {}), ops.evaluate("nn.dense", [x64, w64], {}))


def test_the_depthwise_taps_skip_only_padding():
    """Each tap's output range is exactly where its input lies inside x (checked against the padded
    reference at every stride / dilation / padding combination of small maps)."""
    rng = np.random.default_rng(3)
    for h in (1, 2, 5):
        for k, s, d, p in [(3, 1, 1, 1), (5, 2, 1, 2), (3, 2, 2, 2), (4, 3, 1, 0), (5, 1, 1, 2)]:
            x = rng.standard_normal((1, 3, h, h + 1)).astype(np.float32)
            w = rng.standard_normal((3, 1, k, k)).astype(np.float32)
            attrs = dict(strides=(s, s), padding=(p, p, p + 1, p), dilation=(d, d), groups=3)
            try:
                ref = ops.evaluate("nn.conv2d", [x, w], attrs)
            except Exception:
                continue                                    # the kernel is larger than the padded input
            got = kernels.depthwise_numpy(x, w, (s, s), (p, p), (p + 1, p), (d, d))
            assert got.shape == ref.shape and _rel(got, ref) < 1e-5


def test_pad_kernel_equals_the_reference_bit_for_bit():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = dict(pad_width=((0, 0), (1, 2), (3, 0)), pad_value=-1.5, pad_mode="constant")
    assert np.array_equal(kernels.evaluate("nn.pad", [x], a), ops.evaluate("nn.pad", [x], a))
    assert kernels.pad(x, ((0, 0), (1, 1), (1, 1)), 0.0, "reflect") is None


def _conv_graph():
    """conv -> (reshape view, relu); add(view-relu, conv): the conv result has two readers, the
    reshape is a view of it, and relu's operand is that view; then batch-norm, sigmoid and clip,
    each the only reader of a fresh result."""
    rng = np.random.default_rng(4)
    x = var("x", (1, 4, 6, 6))
    c = call("nn.conv2d", x, const(rng.standard_normal((4, 4, 3, 3))), strides=(1, 1), padding=(1, 1, 1, 1))
    v = call("reshape", c, newshape=(1, 4, 6, 6))
    s = call("add", call("nn.relu", v), c)
    b = call("nn.batch_norm", s, *(const(rng.random(4) + 0.5) for _ in range(4)), axis=1, epsilon=1e-5)
    out = call("clip", call("sigmoid", b), a_min=0.1, a_max=0.9)
    return Graph([x], [out]), {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}


def test_in_place_steps_never_write_a_value_another_step_reads(monkeypatch):
    g, feeds = _conv_graph()
    ref = run_graph(g, feeds)[0]
    got = run(g, feeds)[0]
    assert _rel(got, ref) < 1e-5
    from compile.interpret import host_program
    from compile.runtime import HostRuntime
    hr = HostRuntime(host_program(g), g.inputs)
    owned_ops = sorted(hr.program.steps[i].value.op for i in hr.owned)
    assert owned_ops == ["add", "clip", "nn.batch_norm", "sigmoid"]   # not relu: its operand is a view
    # the seeded bug: a view counted as a fresh array -> relu writes into the conv result, which add reads
    monkeypatch.setattr(kernels, "FRESH", kernels.FRESH | {"reshape"})
    g2, _ = _conv_graph()
    assert _rel(run(g2, feeds)[0], ref) > 1e-3


def test_run_kernels_option():
    g, feeds = _conv_graph()
    assert np.array_equal(run(g, feeds, kernels="reference")[0], run_graph(g, feeds)[0])
    with pytest.raises(CompileError, match="'fast'"):
        run(g, feeds, kernels="fast")


def test_host_threads_sets_torch_intra_op_threads():
    torch = pytest.importorskip("torch")
    from compile.runtime.threads import host_threads
    before = torch.get_num_threads()
    with host_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_weight_copies_are_kept_within_their_budget(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(kernels, "_WEIGHTS", {})
    monkeypatch.setattr(kernels, "_kept", [0])
    monkeypatch.setattr(kernels, "WEIGHTS_LIMIT", 3000)
    ws = [np.ones((10, 50), np.float32) for _ in range(2)]          # 2000 bytes each
    for w in ws:
        w.flags.writeable = False
        assert torch.equal(kernels._torch_weight(torch, w), torch.ones(10, 50))
    assert len(kernels._WEIGHTS) == 1 and kernels._kept[0] == 2000   # the second is beyond the budget
    del ws[0]
    assert kernels._WEIGHTS == {} and kernels._kept[0] == 0          # dropped with its array
