"""compile.frontend.from_onnx: models nobody here wrote (the onnx wheel's light model zoo) import and
run equal to their shipped expected outputs; a small model with the common operators equals
onnxruntime; bad input (unsupported operators, custom domains, truncated files, unbound
dimensions) is a clear CompileError naming what and where."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compile.errors import DynamicShapeError, ModelLoadError, UnsupportedOperatorError
from compile.frontend import from_onnx
from compile.runtime import run

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _light(name):
    from onnx.backend.test.runner import Runner
    m = onnx.load(os.path.join(LIGHT, f"light_{name}.onnx"))
    inits = {i.name for i in m.graph.initializer}
    feeds = {i.name: Runner.generate_dummy_data(i, seed=0, name=f"light_{name}", random=False)
             for i in m.graph.input if i.name not in inits}
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT, f"light_{name}_output_0.pb")))
    return m, feeds, want


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet",
                                  pytest.param("resnet50", marks=pytest.mark.slow),
                                  pytest.param("densenet121", marks=pytest.mark.slow),
                                  pytest.param("inception_v2", marks=pytest.mark.slow),
                                  pytest.param("vgg19", marks=pytest.mark.slow),
                                  pytest.param("bvlc_alexnet", marks=pytest.mark.slow),
                                  pytest.param("zfnet512", marks=pytest.mark.slow),
                                  pytest.param("inception_v1", marks=pytest.mark.slow)])
def test_light_models_equal_their_expected_outputs(name):
    m, feeds, want = _light(name)
    g = from_onnx(m, name=name)
    got = run(g, feeds)[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    assert all(n.source for n in g.nodes)                       # every node knows its ONNX node


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_small_model_equals_onnxruntime():
    import onnxruntime as ort
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "fc")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, name="pool"),
             helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
             helper.make_node("Reshape", ["g", "shape"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc"], ["y0"], transB=1, name="fc"),
             helper.make_node("Softmax", ["y0"], ["y"], axis=-1, name="softmax")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b, fc, shape])
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run(from_onnx(m), {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_unsupported_and_custom_operators_are_listed_with_their_nodes():
    nodes = [helper.make_node("RoiAlign", ["x", "s"], ["n"], name="roi1"),
             helper.make_node("MyOp", ["x"], ["y"], domain="com.example", name="custom7")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4]),
                       helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1, 4])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedOperatorError) as e:
        from_onnx(m, name="bad.onnx")
    assert "RoiAlign (node(s) roi1)" in str(e.value) and "com.example.MyOp (node(s) custom7)" in str(e.value)


def test_truncated_file_and_unbound_dimension(tmp_path):
    full = open(os.path.join(LIGHT, "light_squeezenet.onnx"), "rb").read()
    bad = tmp_path / "trunc.onnx"
    bad.write_bytes(full[: len(full) // 2])
    with pytest.raises(ModelLoadError, match="trunc.onnx"):
        from_onnx(bad)
    with pytest.raises(ModelLoadError, match="no such file"):
        from_onnx(tmp_path / "missing.onnx")
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(DynamicShapeError, match="input 'x' dimension 0 is 'batch'"):
        from_onnx(m)
