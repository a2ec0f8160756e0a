"""The operand adapters every matchable mapping declares (``Mapping.match_shape`` and
``bind_operands``): at a match of the mapping's own IR pattern, the adapter reads the mapping's
shape and hands the runner exactly the named inputs the IR operands hold; and the pattern's IR
semantics (the host runtime) on those operands equals the mapping's reference on the adapted
inputs. So the compiler's view of a mapping (pattern + adapters) and the certified one (reference,
runner) agree; a change to either invalidates the mapping's certificates (its digest)."""
import numpy as np
import pytest

from compile.ir.graph import Const, Graph, Var, call, const, var
from compile.call import at_match
from compile.patterns import mapping_patterns, matches, variables
from compile.runtime import run
from mappings.base import frobenius_relative_error
from mappings.registry import get, names


def _linear(s, n):
    x = var("x", (s["T"], s["I"]))
    return Graph([x], [call("nn.bias_add", call("nn.dense", x, const(n["w"])), const(n["b"]))]), {"x": n["x"]}


def _layernorm(s, n):
    x = var("x", (s["T"], s["H"]))
    return Graph([x], [call("nn.layer_norm", x, const(n["gamma"]), const(n["beta"]))]), {"x": n["x"]}


def _attention(s, n):
    dec, enc = var("dec", (1, s["H"])), var("enc", (s["T"], s["H"]))
    g = Graph([dec, enc], [call("nn.dense", call("nn.softmax", call("nn.dense", dec, enc)),
                                call("transpose", enc, axes=(1, 0)))])
    return g, {"dec": n["dec"].reshape(1, -1), "enc": n["enc"]}


def _pool(op):
    def build(s, n):
        x = var("x", (1, 1, s["R"], s["C"]))
        return Graph([x], [call(op, x, pool_size=(2, 1), strides=(2, 1))]), {"x": n["x"].reshape(1, 1, s["R"], s["C"])}
    return build


def _conv(s, n):
    x = var("x", n["x"].shape)
    g = Graph([x], [call("nn.conv2d", x, const(n["w"]), strides=(s["S"], s["S"]), data_layout="NHWC",
                         kernel_layout="OHWI")])
    return g, {"x": n["x"]}


def _conv_nchw(s, n):
    x = var("x", n["x"].shape)
    g = Graph([x], [call("nn.conv2d", x, const(n["w"]), strides=(s["S"], s["S"]), padding=(s["P"],) * 4)])
    return g, {"x": n["x"]}


def _elementwise(op):
    def build(s, n):
        a = var("a", (s["n"],), "int32")
        if op == "add":
            b = var("b", (s["n"],), "int32")
            return Graph([a, b], [call("add", a, b)]), {"a": n["a"], "b": n["b"]}
        return Graph([a], [call("nn.relu", a)]), {"a": n["a"]}
    return build


def _lstm(s, n):
    x = var("x", (s["T"], s["I"]))
    return Graph([x], [call("lstm_layer", x, const(n["w_ih"]), const(n["w_hh"]), const(n["b"]))]), {"x": n["x"]}


def _dense(s, n):
    x = var("x", (s["N"], s["K"]))
    return Graph([x], [call("nn.dense", x, const(n["w"]))]), {"x": n["x"]}


def _dense_bias(s, n):
    x = var("x", (s["N"], s["K"]))
    return Graph([x], [call("nn.bias_add", call("nn.dense", x, const(n["w"])), const(n["b"]), axis=-1)]), {"x": n["x"]}


def _gemm(s, n):
    x, w = var("x", (s["N"], s["K"]), "int32"), var("w", (s["M"], s["K"]), "int32")
    return Graph([x, w], [call("nn.dense", x, w)]), {"x": n["x"], "w": n["w"]}


# a graph holding just the mapping's pattern, built from the mapping's named inputs
BUILD = {"flexasr.linear": _linear, "flexasr.layernorm": _layernorm, "flexasr.attention": _attention,
         "flexasr.lstm": _lstm, "flexasr.maxpool": _pool("nn.max_pool2d"), "flexasr.meanpool": _pool("nn.avg_pool2d"),
         "hlscnn.conv2d": _conv, "hlscnn.conv2d_w8": _conv, "vta.add": _elementwise("add"),
         "vta.relu": _elementwise("relu"), "vta.gemm": _gemm, "vta.dense": _dense,
         "hlscnn.conv2d_nchw": _conv_nchw, "hlscnn.conv2d_nchw_w8": _conv_nchw, "vta.dense_bias": _dense_bias,
         "flexasr.linear_pad": _linear}
MATCHABLE = [n for n in names() if get(n).match_shape is not None]


def test_every_matchable_mapping_is_covered_and_chains_are_not_matchable():
    assert set(MATCHABLE) == set(BUILD), "add a graph builder for each mapping that declares match_shape"
    for n in names():
        m = get(n)
        if m.fuses:
            assert m.match_shape is None, f"{n} is a chain mapping: the compiler never matches it"
            assert m.bind_operands is not None, f"{n}: a fused chain's operand reaches its runner through it"
        else:
            assert (m.match_shape is None) == (m.bind_operands is None), n


def _small(m):
    shape = dict(m.default_shape)
    if m.shape_strategy is not None:
        from hypothesis import find, settings
        shape = find(m.shape_strategy(), lambda s: True, settings=settings(database=None))
    return shape


@pytest.mark.parametrize("name", MATCHABLE)
@pytest.mark.parametrize("seed", [0, 1])
def test_adapters_hand_the_runner_the_ir_operands(name, seed):
    m = get(name)
    shape = m.default_shape if seed == 0 else _small(m)
    named = m.random_inputs(shape, np.random.default_rng(seed))
    g, inputs = BUILD[name](shape, named)
    pat = mapping_patterns([name])[name]
    ((node, env),) = [(n_, e) for n_, e in matches(g, pat) if n_ is g.outputs[0]]
    c = at_match(m, node, env, variables(pat))
    assert c.shape == shape
    operands = [inputs[v.name] if isinstance(v, Var) else v.value if isinstance(v, Const) else None
                for v in (env[k] for k in variables(pat))]
    bound = c.inputs(operands)
    assert set(bound) == set(named)
    for k in named:
        assert np.array_equal(np.asarray(bound[k]), np.asarray(named[k])), (name, k)
    host = run(g, inputs)[0]
    ref = np.asarray(m.reference(shape, named))
    if m.ir_dtype.startswith("int"):
        assert np.array_equal(host.reshape(-1).astype(np.int64), ref.reshape(-1).astype(np.int64))
    else:
        assert frobenius_relative_error(ref.reshape(-1), host.reshape(-1)) < 1e-5


def test_adapters_refuse_what_the_unit_cannot_take():
    pool = get("flexasr.maxpool").match_shape
    assert pool({}, {"?x": (1, 2, 8, 16)}, (1, 2, 4, 16)) is None           # two channels
    assert pool({"padding": (1, 0, 1, 0)}, {"?x": (1, 1, 8, 16)}, (1, 1, 5, 16)) is None
    assert get("vta.add").match_shape({}, {"?a": (4, 16), "?b": (16,)}, (4, 16)) is None   # broadcast
    conv = get("hlscnn.conv2d").match_shape
    assert conv({"data_layout": "NHWC", "strides": (1, 1)}, {"?x": (2, 8, 8, 3), "?w": (4, 3, 3, 3)}, ()) is None
