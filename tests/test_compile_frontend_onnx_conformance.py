"""ONNX's conformance suite (onnx.backend.test) against the host runtime, for the claimed operators:
no wrong answer and no crash; every refusal is a clear CompileError; the suite really runs."""
import numpy as np
import onnx
import pytest
from onnx import helper

from benchmarks.onnx_conformance import claimed_ops, run
from compile.errors import UnsupportedOperatorError
from compile.frontend import from_onnx
from compile.frontend.onnx_backend import HostBackend, refusal
from compile.runtime import run as run_graph


@pytest.fixture(scope="module")
def results():
    return run()


def test_no_claimed_operator_gives_a_wrong_answer(results):
    out, _ = results
    fails = {n: d for n, (s, d) in out.items() if s == "FAIL"}
    assert not fails, fails
    statuses = [s for s, _ in out.values()]
    assert statuses.count("pass") >= 300, statuses.count("pass")


def test_refusals_are_compile_errors_naming_the_node(results):
    out, _ = results
    for name, (status, why) in out.items():
        if status == "refused":
            assert why.split(":")[0].endswith("Error"), (name, why)


def test_every_claimed_operator_passes_somewhere(results):
    out, models = results
    passed = {nd.op_type for n, (s, _) in out.items() if s == "pass" for nd in models[n].graph.node}
    # ConstantOfShape only ever appears on a runtime shape in the suite (refused: static shapes only)
    assert claimed_ops() - passed <= {"ConstantOfShape"}, claimed_ops() - passed


def _model(node, inputs, outputs, opset=17):
    g = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_a_wrong_backend_is_caught_by_the_suite(monkeypatch):
    """The harness can fail: with Relu computed wrongly, the Relu cases fail."""
    from compile.ir import ops
    monkeypatch.setitem(ops.OPS, "nn.relu", ops.OPS["nn.relu"].__class__(
        "nn.relu", 1, {}, ops.OPS["nn.relu"].shape, lambda x: np.abs(x)))
    out, _ = run(r"^test_relu$")
    assert out and all(s == "FAIL" for s, _ in out.values()), out


def test_backend_api_and_new_importer_features():
    f = helper.make_tensor_value_info
    x = f("x", onnx.TensorProto.FLOAT, [1, 1, 5, 5])
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")
    m = _model(node, [x], [f("y", onnx.TensorProto.FLOAT, [1, 1, 3, 3])])
    data = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (y,) = HostBackend.prepare(m).run([data])
    assert y.shape == (1, 1, 3, 3) and y[0, 0, 2, 2] == 24 and y[0, 0, 0, 0] == 6
    cast = _model(helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.INT32),
                  [f("x", onnx.TensorProto.FLOAT, [3])], [f("y", onnx.TensorProto.INT32, [3])])
    got = run_graph(from_onnx(cast), {"x": np.array([1.7, -1.7, 2.0], np.float32)})[0]
    assert got.dtype == np.int32 and got.tolist() == [1, -1, 2]
    bad = _model(helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.BFLOAT16),
                 [f("x", onnx.TensorProto.FLOAT, [3])], [f("y", onnx.TensorProto.BFLOAT16, [3])])
    assert "BFLOAT16" in refusal(bad) and not HostBackend.is_compatible(bad)
    with pytest.raises(UnsupportedOperatorError, match=r"output 1 \('idx'\) is used"):
        from_onnx(_model(helper.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2]),
                         [x], [f("y", onnx.TensorProto.FLOAT, None), f("idx", onnx.TensorProto.INT64, None)], 12))
