"""compile.ir: shapes checked when a node is built (errors name operator, shapes and source), the
text form round-trips (hypothesis over random well-shaped graphs), deep graphs need no recursion,
and the host runtime computes each operator as its reference (numpy written out by hand)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from compile.errors import CompileError, ShapeMismatchError, TextFormatError, UnsupportedOperatorError
from compile.ir import Graph, call, const, parse, var
from compile.runtime import run


def test_shape_mismatch_names_operator_shapes_and_source():
    x, w = var("x", (1, 3, 8, 8)), const(np.zeros((4, 2, 3, 3), np.float32))
    with pytest.raises(ShapeMismatchError, match=r"nn.conv2d: operand shapes \(1, 3, 8, 8\), \(4, 2, 3, 3\).*conv1"):
        call("nn.conv2d", x, w, source="conv1")
    with pytest.raises(ShapeMismatchError, match=r"add: operand shapes \(2, 3\), \(4,\)"):
        call("add", var("a", (2, 3)), var("b", (4,)))


def test_unknown_operator_and_attribute_are_refused_by_name():
    with pytest.raises(UnsupportedOperatorError, match="'nn.fancy'.*node n7"):
        call("nn.fancy", var("x", (2,)), source="n7")
    with pytest.raises(UnsupportedOperatorError, match=r"unsupported attribute\(s\) \['bogus'\]"):
        call("nn.relu", var("x", (2,)), bogus=1)


def test_conv2d_pool_dense_against_loops():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    X = var("x", x.shape)
    c = call("nn.conv2d", X, const(w), strides=(2, 1), padding=(1, 0, 1, 1), groups=2)
    p = call("nn.max_pool2d", c, pool_size=(2, 2), strides=(2, 2), ceil_mode=True)
    g = Graph([X], [c, p])
    got_c, got_p = run(g, {"x": x})
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 1)))
    want = np.zeros(got_c.shape, np.float64)
    for n in range(2):
        for o in range(6):
            grp = o // 3
            for i in range(want.shape[2]):
                for j in range(want.shape[3]):
                    patch = xp[n, 2 * grp:2 * grp + 2, 2 * i:2 * i + 3, j:j + 2]
                    want[n, o, i, j] = (patch * w[o]).sum()
    np.testing.assert_allclose(got_c, want, rtol=1e-5, atol=1e-5)
    ph = -(-(want.shape[2] - 2) // 2) + 1
    for i in range(ph):
        for j in range(got_p.shape[3]):
            np.testing.assert_allclose(got_p[:, :, i, j], want[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].max(axis=(2, 3)),
                                       rtol=1e-5, atol=1e-6)
    d = Graph([X2 := var("x", (3, 5))], [call("nn.dense", X2, const(np.arange(10.0).reshape(2, 5)))])
    np.testing.assert_allclose(run(d, {"x": np.ones((3, 5))})[0], np.ones((3, 5)) @ np.arange(10.0).reshape(2, 5).T)


def test_runtime_refuses_bad_inputs():
    g = Graph([x := var("x", (2, 2))], [call("nn.relu", x)])
    with pytest.raises(CompileError, match=r"shape \(3,\), the graph expects \(2, 2\)"):
        run(g, {"x": np.zeros(3)})
    with pytest.raises(CompileError, match=r"missing input\(s\) \['x'\]"):
        run(g, {})


# ----------------------------------------------------------------------------- text form
UNARY = ["nn.relu", "sigmoid", "tanh", "nn.gelu", "nn.silu", "nn.hardswish", "nn.dropout"]


@st.composite
def graphs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=2, max_size=3)))
    x = var("x", shape)
    vals = [x]
    for k in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "const", "softmax", "transpose", "clip"]))
        a = draw(st.sampled_from(vals))
        if kind == "unary":
            vals.append(call(draw(st.sampled_from(UNARY)), a, source=f"n{k}"))
        elif kind == "binary":
            b = draw(st.sampled_from([v for v in vals if v.shape == a.shape]))
            vals.append(call(draw(st.sampled_from(["add", "multiply", "subtract", "maximum"])), a, b))
        elif kind == "const":
            c = const(np.asarray(draw(st.lists(st.floats(-2, 2, width=32), min_size=a.shape[-1],
                                                max_size=a.shape[-1])), np.float32))
            vals.append(call("add", a, c, source="bias"))
        elif kind == "softmax":
            vals.append(call("nn.softmax", a, axis=-1))
        elif kind == "clip":
            vals.append(call("clip", a, a_min=0.0, a_max=6.0))
        else:
            vals.append(call("transpose", a, axes=tuple(reversed(range(len(a.shape))))))
            vals.append(call("transpose", vals[-1], axes=tuple(reversed(range(len(a.shape))))))
    outs = draw(st.lists(st.sampled_from(vals[1:]), min_size=1, max_size=2, unique_by=lambda v: v.uid))
    return Graph([x], outs)


@settings(max_examples=60, deadline=None)
@given(graphs(), st.integers(0, 2**31))
def test_text_round_trips_and_keeps_meaning(g, seed):
    text = g.to_text()
    g2 = parse(text)
    assert g2.to_text() == text
    x = np.random.default_rng(seed).standard_normal(g.inputs[0].shape).astype(np.float32)
    for a, b in zip(run(g, {"x": x}), run(g2, {"x": x})):
        np.testing.assert_array_equal(a, b)


def test_text_errors_name_the_line():
    with pytest.raises(TextFormatError, match="line 1"):
        parse("nonsense")
    good = Graph([x := var("x", (2,))], [call("nn.relu", x)]).to_text()
    with pytest.raises(TextFormatError, match="line 2"):
        parse(good.replace("%1 = nn.relu(%x)", "%1 = nn.relu(%y)"))


def test_deep_chain_imports_prints_parses_and_runs():
    x = var("x", (4,))
    v = x
    for k in range(1000):
        v = call("add", call("nn.relu", v), const(np.float32(0.001)), source=f"layer{k}")
    g = Graph([x], [v])
    assert len(g) == 2000
    g2 = parse(g.to_text())
    out = run(g2, {"x": np.zeros(4, np.float32)})[0]
    np.testing.assert_allclose(out, np.full(4, 1.0), rtol=1e-4)
