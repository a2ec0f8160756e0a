"""vta.dense_bias's proof (issue 26): vta.dense's composite proof of the int8 core plus two lemmas of
its own (the stream is vta.dense's ``int_program`` of the quantised codes; the read-back is the
declared epilogue). The clean mapping is proved; every seeded bug (``verify/mutations/
vta_dense_bias.py``) is refuted with a counterexample replayed by simulation against the declared
term, the epilogue bugs by the epilogue lemma alone; BMC is refused with a message naming the
composite; the declared term is what the program computes."""
import numpy as np
import pytest

from mappings import registry
from mappings.base import MappingError
from mappings.vta import dense_bias as DB
from mappings.vta import dense_bias_proof as P
from verify import mutations

M = registry.get("vta.dense_bias")
SHAPE = dict(M.proof.shape)


def test_bmc_is_refused_naming_the_composite():
    with pytest.raises(MappingError, match="--method chc --shape 2x20x18"):
        M.proof.bmc(SHAPE)


def test_the_lemmas_hold_on_the_clean_program():
    assert P.stream_problems(SHAPE) == [] and P.epilogue_problems(SHAPE) == []


@pytest.mark.parametrize("bug", ["bias_reversed", "scale_of_x_twice", "bias_before_dequantisation"])
def test_an_epilogue_bug_fails_only_the_epilogue_lemma(bug):
    with mutations.applied(mutations.get(M, bug)):
        assert P.stream_problems(SHAPE) == []
        bad = P.epilogue_problems(SHAPE)
    assert bad and "declared epilogue" in bad[0]


def test_a_codes_bug_fails_the_stream_lemma():
    with mutations.applied(mutations.get(M, "last_code_of_w_zeroed")):
        bad = P.stream_problems(SHAPE)
    assert bad and "int_program of the codes" in bad[0]


def test_the_declared_term_is_what_the_program_computes():
    inputs = M.random_inputs(SHAPE, np.random.default_rng(4))
    got = np.asarray(M.run_accelerator(SHAPE, inputs))
    assert np.array_equal(got.view(np.uint32), DB.reference_term(SHAPE, inputs).view(np.uint32))


def test_the_ir_fragment_is_dense_then_bias_add():
    frag = M.ir_fragment(SHAPE)
    assert [op for op, _ in frag.ops] == ["nn.dense", "nn.bias_add"] and frag.numerics == "float32"
    assert frag.output[1] == (SHAPE["N"], SHAPE["M"]) and frag.inputs["b"][1] == (SHAPE["M"],)


@pytest.mark.slow
def test_the_clean_mapping_is_proved_by_the_composite():
    v = mutations.check(M, SHAPE, None, "chc", solver="z3")
    assert v.kind == "proved", v
    assert "5 lemmas" in v.detail and "epilogue checked" in v.detail


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(mutations.names(M)))
def test_seeded_bug_is_refuted_and_replayed(bug):
    v = mutations.check(M, SHAPE, bug, "chc", solver="z3")
    assert v.kind == "counterexample" and v.replayed, (bug, v)
