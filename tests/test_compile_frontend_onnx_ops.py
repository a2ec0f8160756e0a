"""The ONNX importer's operators beyond the applications' (issue 23): each small model equals
onnxruntime; converters are chosen by (domain, operator, opset); a refusal names the node by name,
or by index when it has none; an operand needed as a constant that comes from graph inputs is a
DataDependentShapeError naming them, and binding them specialises the model."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compile.errors import UnsupportedOperatorError
from compile.frontend import from_onnx
from compile.frontend.onnx import DataDependentShapeError, claimed, converter
from compile.runtime import run

ort = pytest.importorskip("onnxruntime")
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def _against_ort(m, feeds, rtol=1e-5):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = run(from_onnx(m), feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        scale = max(float(np.abs(w).max()), 1e-30) if w.size else 1.0
        assert np.abs(g.astype(np.float64) - w).max() <= rtol * scale, np.abs(g.astype(np.float64) - w).max() / scale


def _w(rng, *shape, name):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def test_squeeze_excite_block_with_new_activations_and_reductions():
    """Conv1d, LRN, HardSigmoid, LeakyRelu, Elu, Selu, Where/Greater, ReduceMax/ReduceSum (opset 18
    axes inputs), Expand, Resize: one model, equal to onnxruntime."""
    rng = np.random.default_rng(0)
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    shape = numpy_helper.from_array(np.array([2, 8, 12], np.int64), "shape")
    scales = numpy_helper.from_array(np.array([1, 1, 2], np.float32), "scales")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1], name="conv1d"),
             helper.make_node("Unsqueeze", ["c", "axes"], ["c4"], name="unsq"),
             helper.make_node("LRN", ["c4"], ["l4"], size=3, alpha=1e-2, beta=0.75, bias=1.0, name="lrn"),
             helper.make_node("Squeeze", ["l4", "axes"], ["l"], name="sq"),
             helper.make_node("ReduceMax", ["l", "axes"], ["m"], keepdims=1, name="rmax"),
             helper.make_node("HardSigmoid", ["m"], ["gate"], alpha=0.3, beta=0.4, name="hsig"),
             helper.make_node("Mul", ["l", "gate"], ["se"], name="mul"),
             helper.make_node("Greater", ["se", "zero"], ["pos"], name="gt"),
             helper.make_node("LeakyRelu", ["se"], ["lr"], alpha=0.2, name="lrelu"),
             helper.make_node("Elu", ["se"], ["el"], alpha=0.7, name="elu"),
             helper.make_node("Where", ["pos", "lr", "el"], ["wh"], name="where"),
             helper.make_node("Selu", ["wh"], ["s"], name="selu"),
             helper.make_node("ReduceSum", ["s", "axes"], ["rs"], keepdims=1, name="rsum"),
             helper.make_node("Expand", ["rs", "shape"], ["ex"], name="expand"),
             helper.make_node("Add", ["ex", "s"], ["y0"], name="add"),
             helper.make_node("Resize", ["y0", "", "scales"], ["y"], mode="linear", name="resize")]
    inits = [_w(rng, 8, 4, 3, name="w"), _w(rng, 8, name="b"), axes, shape, scales,
             numpy_helper.from_array(np.zeros((), np.float32), "zero")]
    m = _model(nodes, [_vi("x", [2, 4, 12])], [_vi("y", None)], inits, opset=18)
    _against_ort(m, {"x": rng.standard_normal((2, 4, 12)).astype(np.float32)})


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_recurrent_layers_in_every_direction(op, direction):
    rng = np.random.default_rng(1)
    g, d, T, B, I, H = {"GRU": 3, "LSTM": 4, "RNN": 1}[op], 2 if direction == "bidirectional" else 1, 5, 2, 3, 4
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    node = helper.make_node(op, ["x", "w", "r", "b", "", "h0"], ["y", "yh"], hidden_size=H, direction=direction,
                            name="rnn", **extra)
    inits = [_w(rng, d, g * H, I, name="w"), _w(rng, d, g * H, H, name="r"), _w(rng, d, 2 * g * H, name="b"),
             _w(rng, d, B, H, name="h0")]
    m = _model([node], [_vi("x", [T, B, I])], [_vi("y", None), _vi("yh", None)], inits)
    _against_ort(m, {"x": rng.standard_normal((T, B, I)).astype(np.float32)})


def test_pools_and_convolutions_in_1d_and_3d():
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 1], group=2,
                              name="conv3d"),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2, 2], strides=[1, 2, 2], ceil_mode=1,
                              name="maxpool3d"),
             helper.make_node("AveragePool", ["c"], ["a"], kernel_shape=[1, 2, 3], pads=[0, 1, 1, 0, 1, 1],
                              name="avgpool3d"),
             helper.make_node("ConvTranspose", ["x", "wt"], ["t"], strides=[2, 1, 2], output_padding=[1, 0, 0],
                              name="convt")]
    inits = [_w(rng, 4, 2, 3, 2, 3, name="w"), _w(rng, 4, 3, 2, 2, 3, name="wt")]
    m = _model(nodes, [_vi("x", [1, 4, 5, 6, 7])], [_vi("p", None), _vi("a", None), _vi("t", None)], inits)
    _against_ort(m, {"x": rng.standard_normal((1, 4, 5, 6, 7)).astype(np.float32)})


def test_converters_are_chosen_by_opset():
    assert converter("", "Softmax", 11) is converter("", "Softmax", 12)       # one converter, opset-aware
    assert converter("", "Mod", 9) is None and converter("", "Mod", 10) is not None
    assert converter("ai.onnx", "Relu", 17) is converter("", "Relu", 17)
    assert ("", "LRN") in claimed() and ("", "GRU") in claimed()
    # Softmax before opset 13 flattens at axis: different numbers from opset 13 on the same data
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 7
    outs = {}
    for opset in (11, 13):
        m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [_vi("x", [2, 2, 3])], [_vi("y", None)],
                   opset=opset)
        outs[opset] = run(from_onnx(m), {"x": x})[0]
    assert np.allclose(outs[11].reshape(2, 6).sum(1), 1) and np.allclose(outs[13].sum(1), 1)


def test_refusals_name_the_node_by_name_or_by_index():
    for name, says in (("", "Pad node #1"), ("my_pad", "Pad node 'my_pad'")):
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Pad", ["r", "pads"], ["y"], mode="bogus", name=name)]
        m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", None)],
                   [numpy_helper.from_array(np.zeros(4, np.int64), "pads")])
        with pytest.raises(UnsupportedOperatorError, match=says + ": mode 'bogus'"):
            from_onnx(m)
    m2 = _model([helper.make_node("RoiAlign", ["x", "x"], ["y"])], [_vi("x", [1, 2, 4])], [_vi("y", None)])
    with pytest.raises(UnsupportedOperatorError, match=r"RoiAlign \(node\(s\) #0\)"):
        from_onnx(m2)


def test_runtime_shapes_are_refused_by_input_name_and_bound_on_request():
    nodes = [helper.make_node("Add", ["s", "one"], ["s1"], name="plus"),
             helper.make_node("Reshape", ["x", "s1"], ["y"], name="reshape")]
    m = _model(nodes, [_vi("x", [2, 6]), _vi("s", [2], TensorProto.INT64)], [_vi("y", [2, 6])],
               [numpy_helper.from_array(np.array([0, 1], np.int64), "one")])
    with pytest.raises(DataDependentShapeError, match=r"Reshape node 'reshape': the target shape .* 's'") as e:
        from_onnx(m)
    assert e.value.inputs == ("s",)
    g = from_onnx(m, bind={"s": np.array([3, 3], np.int64)})
    assert [v.name for v in g.inputs] == ["x"]
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert run(g, {"x": x})[0].shape == (3, 4)
    from compile.frontend.onnx_backend import HostBackend
    (y,) = HostBackend.prepare(m).run([x, np.array([2, 5], np.int64)])
    assert y.shape == (2, 6) and np.array_equal(y.ravel(), x.ravel())


def test_intermediate_values_can_be_returned():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Neg", ["r"], ["y"], name="neg")]
    m = _model(nodes, [_vi("x", [3])], [_vi("y", None)])
    r, y = run(from_onnx(m, outputs=["r", "y"]), {"x": np.array([-1, 0, 2], np.float32)})
    assert r.tolist() == [0, 0, 2] and y.tolist() == [0, 0, -2]


def test_if_inlines_the_branch_its_condition_selects():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_vi("t", [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", [3])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")
    m = _model([node], [_vi("c", [], TensorProto.BOOL), _vi("x", [3])], [_vi("y", [3])])
    with pytest.raises(DataDependentShapeError, match="If node 'if': the condition"):
        from_onnx(m)
    x = np.array([-1, 0, 2], np.float32)
    for c, want in ((True, [0, 0, 2]), (False, [1, 0, -2])):
        g = from_onnx(m, bind={"c": np.array(c)})
        assert run(g, {"x": x})[0].tolist() == want
        assert {n.op for n in g.nodes} == {"nn.relu" if c else "negative"}


def test_scan_is_unrolled_over_its_sequence():
    """A running sum over axis 1, read backwards, with every partial sum as a scan output."""
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
                             [_vi("s_in", [2]), _vi("x_t", [2])], [_vi("s_out", [2]), _vi("y_t", [2])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1], name="scan")
    m = _model([node], [_vi("s0", [2]), _vi("x", [2, 4])], [_vi("s", [2]), _vi("y", [4, 2])])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    s0 = np.array([10, 20], np.float32)
    _against_ort(m, {"s0": s0, "x": x})
    s, y = run(from_onnx(m), {"s0": s0, "x": x})
    assert np.array_equal(y, s0 + np.cumsum(x[:, ::-1], axis=1).T) and np.array_equal(s, y[-1])


def test_narrow_types_only_through_casts():
    """float8 casts saturate by default (ONNX Cast), not with saturate=0; other operators refuse
    the narrow types by name."""
    x = np.array([1.0, 1000.0, -np.inf, np.nan, 0.3], np.float32)
    for sat, want_big in ((1, 448.0), (0, np.nan)):
        m = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN, saturate=sat),
                    helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT)],
                   [_vi("x", [5])], [_vi("z", [5])], opset=21)
        z = run(from_onnx(m), {"x": x})[0]
        assert z.dtype == np.float32 and z[0] == 1.0 and np.isnan(z[3]) and abs(z[4] - 0.3) < 0.02
        assert (z[1] == want_big) if sat else np.isnan(z[1])
        assert (z[2] == -448.0) if sat else np.isnan(z[2])
    m = _model([helper.make_node("Add", ["a", "a"], ["y"], name="add_bf16")], [_vi("a", [2], TensorProto.BFLOAT16)],
               [_vi("y", [2], TensorProto.BFLOAT16)], opset=21)
    with pytest.raises(UnsupportedOperatorError, match=r"Add node 'add_bf16': Add on element type bfloat16"):
        from_onnx(m)


@pytest.mark.parametrize("mode,padding,align", [("bilinear", "zeros", 0), ("nearest", "border", 1),
                                                ("bicubic", "reflection", 0)])
def test_grid_sample_equals_onnxruntime(mode, padding, align):
    rng = np.random.default_rng(5)
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    m = _model([node], [_vi("x", [2, 3, 5, 6]), _vi("g", [2, 4, 7, 2])], [_vi("y", None)], opset=16)
    feeds = {"x": rng.standard_normal((2, 3, 5, 6)).astype(np.float32),
             "g": rng.uniform(-1.4, 1.4, (2, 4, 7, 2)).astype(np.float32)}
    _against_ort(m, feeds)
