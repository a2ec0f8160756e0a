"""vta.add's and vta.relu's all-sizes phase proofs (mappings/vta/alu_allsizes.py): the generator's
element-wise layout and instructions on the size symbol, the proof's checks, its seeded
size-dependent bugs, and (slow) the proofs themselves."""
import numpy as np
import pytest

from mappings import registry
from verify import mutations
from verify.mutations import applied, get
from verify.mutations.vta import ALLSIZES_ONLY


@pytest.mark.parametrize("op", ["add", "relu"])
def test_the_proofs_checks_hold(op):
    """The symbolic words are elementwise_program's at sample shapes, the assumed DRAM bytes are
    the declared refinement map's, the term side conditions are the mapping's."""
    from mappings.vta import alu_allsizes as AA
    for name, check in AA.allsizes_proof(op).checks:
        assert check() == [], name


def test_elementwise_program_is_built_from_the_layout_and_instruction_functions():
    """elementwise_program's instructions are elementwise_instructions' on its layout (ints)."""
    from ila.models.vta import driver
    from ila.models.vta.isa import encode
    prog = driver.elementwise_program("add", np.arange(40), np.arange(40))
    bases = driver.elementwise_layout(driver._Dram(prog.cfg), "add", 3)
    assert [encode(i, prog.cfg) for i in driver.elementwise_instructions("add", 3, bases)] == \
        [encode(i, prog.cfg) for i in prog.insns]


def test_words_check_sees_a_generator_that_differs_from_the_terms():
    """The seeded ALU bug from 5 rows on changes the words at n = 100 (7 rows) only."""
    from mappings.vta import alu_allsizes as AA
    words = dict(AA.allsizes_proof("add").checks)["the symbolic instructions are elementwise_program's (sample shapes)"]
    with applied(get(registry.get("vta.add"), "alu_iter_out_short_some_sizes")):
        bad = words()
    assert bad and all("'n': 100" in b or "'n': 1000" in b for b in bad), bad


@pytest.mark.parametrize("name", ["vta.add", "vta.relu"])
def test_size_dependent_alu_bugs_are_right_at_the_proof_shape_and_wrong_where_they_fire(name):
    """BMC proves each all-sizes-only mutant at the mapping's proof shape (2 rows); simulation
    differs where it fires (n = 80: 5 rows; n = 16000: 1000 rows)."""
    from verify.phases import simulate_counterexample
    m = registry.get(name)
    assert set(ALLSIZES_ONLY[name]) == {"alu_iter_out_short_some_sizes", "alu_iter_out_short_near_max"}
    for bug in ALLSIZES_ONLY[name]:
        assert mutations.check(m, dict(m.proof.shape), bug, "bmc", solver="z3").kind == "proved"
    for bug, n in (("alu_iter_out_short_some_sizes", 80), ("alu_iter_out_short_near_max", 16000)):
        with applied(get(m, bug)):
            assert simulate_counterexample(m, {"n": n}, tries=1) is not None
        assert simulate_counterexample(m, {"n": n}, tries=1) is None


def test_fixed_shape_chc_points_to_bmc():
    from mappings.base import MappingError
    m = registry.get("vta.add")
    with pytest.raises(MappingError, match="--shape symbolic"):
        m.proof.chc({"n": 32})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vta.add", "vta.relu"])
def test_alu_loops_proved_for_all_sizes(name):
    from verify.chc import check_chc
    v = check_chc(registry.get(name), None, solver="z3", timeout=60, numerics="exact")
    assert v.kind == "proved", v
    assert "configuration-fields" in v.detail and "model-loops" in v.detail
