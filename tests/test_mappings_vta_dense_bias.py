"""Issue 24 item 3: vta.dense_bias matches the front-end's dense with bias as it is ((nn.bias_add
(nn.dense ?x ?w) ?b) on float32, bias on the last axis), runs vta.dense's int8 program and adds the
bias on the host after dequantisation; validated by simulation and whole-call validation at odd
shapes; other forms (axis, dtype, add instead of bias_add) are not its pattern."""
import numpy as np
import pytest

from compile.call import at_match
from compile.certify import validate
from compile.ir.graph import call as C, const, var
from compile.patterns import mapping_patterns, match, variables
from mappings.base import MappingError
from mappings.registry import get
from verify.simval import run_sim

NAME = "vta.dense_bias"
RNG = np.random.default_rng(0)


def _linear(n=3, k=37, m=11, axis=-1, dtype="float32", op="nn.bias_add"):
    x = var("x", (n, k), dtype)
    w = const((RNG.standard_normal((m, k)) / np.sqrt(k)).astype(dtype))
    b = const((RNG.standard_normal(m) * 0.1).astype(dtype))
    d = C("nn.dense", x, w)
    return C(op, d, b, axis=axis) if op == "nn.bias_add" else C(op, d, b)


def _call(node):
    pat = mapping_patterns([NAME])[NAME]
    env = match(pat, node)
    assert env is not None
    return at_match(get(NAME), node, env, variables(pat))


def test_the_front_end_form_matches_and_gives_the_shape():
    c = _call(_linear(3, 37, 11))
    assert dict(c.shape) == {"N": 3, "K": 37, "M": 11}
    c = _call(_linear(3, 37, 11, axis=1))                 # axis 1 is the last axis of a 2-D result
    assert dict(c.shape) == {"N": 3, "K": 37, "M": 11}


def test_other_forms_are_not_its_pattern():
    pat = mapping_patterns([NAME])[NAME]
    assert match(pat, _linear(op="add")) is None                                   # not a bias_add
    assert match(pat, _linear(dtype="int32")) is None                               # integer IR
    assert match(pat, C("nn.dense", var("x", (3, 8)), const(np.zeros((4, 8), np.float32)))) is None
    # bias along the rows (axis 0, b[N]): matched by the pattern, refused by the adapter
    node = C("nn.bias_add", C("nn.dense", var("x", (4, 8)), const(np.zeros((4, 8), np.float32))),
             const(np.zeros(4, np.float32)), axis=0)
    env = match(pat, node)
    assert env is not None and at_match(get(NAME), node, env, variables(pat)) is None


@pytest.mark.parametrize("shape", [{"N": 1, "K": 64, "M": 10}, {"N": 7, "K": 37, "M": 11}, {"N": 33, "K": 19, "M": 5}])
def test_sim_passes_at_odd_shapes(shape):
    rep = run_sim(get(NAME), shape=shape, samples=5, seed=2)
    assert rep.passed, rep.to_json()


def test_whole_call_validation_passes():
    rep = validate(_call(_linear(5, 37, 11)), samples=3)
    assert rep.passed, rep.summary()


def test_the_bias_is_added_on_the_host_exactly():
    """x = 0: the int8 product is 0 and the result is exactly b (float32); and the stream is vta.dense's."""
    m, d = get(NAME), get("vta.dense")
    s = {"N": 2, "K": 20, "M": 6}
    inp = m.random_inputs(s, np.random.default_rng(3))
    zero = dict(inp, x=np.zeros((2, 20), np.float32))
    out = m.run_accelerator(s, zero)
    assert np.array_equal(out, np.broadcast_to(inp["b"], (2, 6)))
    assert m.codegen(s, inp) == d.codegen(s, {"x": inp["x"], "w": inp["w"]})
    got = m.run_accelerator(s, inp) - d.run_accelerator(s, {"x": inp["x"], "w": inp["w"]})
    assert np.allclose(got, np.broadcast_to(inp["b"], (2, 6)), atol=1e-6)


def test_bad_input_is_refused_naming_the_value():
    m = get(NAME)
    s = {"N": 2, "K": 20, "M": 6}
    inp = m.random_inputs(s, np.random.default_rng(4))
    with pytest.raises(MappingError, match="b has shape"):
        m.program(s, dict(inp, b=np.zeros(5, np.float32)))
    bad = inp["b"].copy()
    bad[3] = np.inf
    with pytest.raises(MappingError, match=r"b\[3\] = inf"):
        m.program(s, dict(inp, b=bad))
    assert m.data_conditions[0].value(s, dict(inp, b=bad)) == 1.0
