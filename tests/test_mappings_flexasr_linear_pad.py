"""Issue 24 item 3: flexasr.linear_pad takes the front-end's dense with bias ((nn.bias_add (nn.dense ?x
?w) ?b), the paper's FlexASR exact-matching pattern) at sizes flexasr.linear refuses (ResNet-20's
64 -> 10 classifier), zero-padding I and O to FlexASR's vector sizes inside its program; its stream
is flexasr.linear's at the padded shape; validated by simulation and whole-call validation."""
import numpy as np
import pytest

from compile.call import at_match
from compile.certify import validate
from compile.ir.graph import call as C, const, var
from compile.patterns import mapping_patterns, match, variables
from mappings.base import MappingError
from mappings.flexasr import linear_pad as LP
from mappings.registry import get
from verify.simval import run_sim

NAME = "flexasr.linear_pad"
RNG = np.random.default_rng(0)


def _linear(t=1, i=64, o=10, axis=-1):
    x = var("x", (t, i))
    w = const((RNG.standard_normal((o, i)) / 8).astype(np.float32))
    b = const((RNG.standard_normal(o) / 4).astype(np.float32))
    return C("nn.bias_add", C("nn.dense", x, w), b, axis=axis)


def _call(name, node):
    pat = mapping_patterns([name])[name]
    env = match(pat, node)
    assert env is not None
    return at_match(get(name), node, env, variables(pat))


def test_resnet20s_classifier_is_taken_where_flexasr_linear_refuses_it():
    node = _linear(1, 64, 10)
    c = _call(NAME, node)
    assert dict(c.shape) == {"T": 1, "I": 64, "O": 10}
    get(NAME).check_shape(c.shape)
    with pytest.raises(MappingError, match="O multiple of 64"):
        get("flexasr.linear").check_shape(_call("flexasr.linear", node).shape)
    rep = validate(c, samples=3)
    assert rep.passed, rep.summary()


def test_the_stream_is_flexasr_linears_at_the_padded_shape():
    m, lin = get(NAME), get("flexasr.linear")
    s = {"T": 3, "I": 20, "O": 10}
    inp = m.random_inputs(s, np.random.default_rng(1))
    xp, wp, bp = LP.pad_operands(s, inp["x"], inp["w"], inp["b"])
    assert xp.shape == (3, 32) and wp.shape == (64, 32) and bp.shape == (64,)
    assert not xp[:, 20:].any() and not wp[10:].any() and not wp[:, 20:].any() and not bp[10:].any()
    prog = m.program(s, inp)
    assert prog.command_list() == lin.codegen(LP.padded(s), {"x": xp, "w": wp, "b": bp})
    assert m.run_accelerator(s, inp).shape == (3, 10)
    assert np.array_equal(m.run_accelerator(s, inp), lin.run_accelerator(LP.padded(s), {"x": xp, "w": wp, "b": bp})[:, :10])


def test_no_padding_is_flexasr_linear_itself():
    m, lin = get(NAME), get("flexasr.linear")
    s = {"T": 2, "I": 16, "O": 64}
    inp = lin.random_inputs(s, np.random.default_rng(2))
    assert m.codegen(s, inp) == lin.codegen(s, inp)


@pytest.mark.parametrize("shape", [{"T": 1, "I": 64, "O": 10}, {"T": 5, "I": 37, "O": 11}, {"T": 3, "I": 100, "O": 70}])
def test_sim_passes_at_odd_shapes(shape):
    rep = run_sim(get(NAME), shape=shape, samples=3, seed=4)
    assert rep.passed, rep.to_json()


def test_side_conditions_are_on_the_padded_shape():
    m = get(NAME)
    with pytest.raises(MappingError, match="fits the PE weight buffers"):
        m.check_shape({"T": 1, "I": 1280, "O": 1000})         # MobileNet-V2's classifier: 1024/4 x 1281 bytes
    with pytest.raises(MappingError, match="positive sizes"):
        m.check_shape({"T": 1, "I": 0, "O": 10})
    m.check_shape({"T": 1, "I": 384, "O": 10})


def test_random_inputs_meet_the_data_condition_at_tiny_shapes():
    m = get(NAME)
    for seed in range(20):
        s = {"T": 1, "I": 1, "O": 1}
        m.check_data(s, m.random_inputs(s, np.random.default_rng(seed)))
        for e in m.edge_inputs(s, np.random.default_rng(seed)):
            m.check_data(s, e)


def test_bad_input_is_refused_naming_the_tensor():
    m = get(NAME)
    s = {"T": 2, "I": 20, "O": 10}
    inp = m.random_inputs(s, np.random.default_rng(3))
    with pytest.raises(MappingError, match="w has shape"):
        m.program(s, dict(inp, w=np.zeros((10, 21), np.float32)))
