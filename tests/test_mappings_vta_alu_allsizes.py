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
@pytest.mark.parametrize("name, infer", [("vta.add", False), ("vta.relu", False), ("vta.relu", True)])
def test_alu_loops_proved_for_all_sizes(name, infer):
    """Supplied invariants; and inferred (Houdini through the all-sizes clause preparation: the
    relational candidates need the assumed regions' facts, which the abstracted pruning query
    lacks, so they are confirmed alone)."""
    from verify.chc import check_chc
    v = check_chc(registry.get(name), None, solver="z3", timeout=60, numerics="exact", infer=infer)
    assert v.kind == "proved", v
    assert "configuration-fields" in v.detail and "model-loops" in v.detail
    if infer:
        assert "invariant inferred by Houdini" in v.detail and "relational candidates confirmed alone" in v.detail
        assert "not inductive" not in v.detail


@pytest.mark.slow
@pytest.mark.parametrize("bug, where", [("alu_iter_out_short_some_sizes", "BMC at shape"),
                                        ("alu_iter_out_short_near_max", "simulation at shape")])
def test_size_dependent_alu_bugs_are_refuted_with_inferred_invariants(bug, where):
    """With inferred invariants too, a seeded size-dependent bug is a counterexample at a size where
    it fires (found by the countershape search: BMC at a small size, or simulation near the largest
    sizes the side conditions allow), not UNKNOWN (about 4 min each)."""
    from verify.chc import check_chc
    m = registry.get("vta.relu")
    with applied(get(m, bug)):
        v = check_chc(m, None, solver="z3", timeout=60, numerics="exact", infer=True)
    assert v.kind == "counterexample", v
    assert where in v.detail, v.detail


def test_inferred_consecution_is_checked_in_halves_down_to_the_failing_conjunct():
    """An inferred invariant's consecution is decided in groups: a group left unknown (here: any
    of more than two conjuncts) is halved; holding groups give one row each, and a failing
    conjunct is found alone, its formula kept for the counterexample search."""
    from ila.simplify import Rewriter
    from ila.sorts import BvSort
    from ila.unroll import symbol
    from verify.phases import Status, _Checker, _conjuncts
    x = symbol("t.gx", BvSort(8))
    ck = _Checker.__new__(_Checker)
    ck.rows, ck.failed, ck.emit_dir, ck.oracles = [], [], None, {}
    ck.solver, ck.timeout, ck.inline_ufs, ck.keep = "z3", 10.0, False, frozenset()
    real = _Checker.decide.__get__(ck)
    asked = []

    def decide(formula, facts=None, reps=None, cases=()):
        n = len(_conjuncts(formula.args[1]))
        asked.append(n)
        if n > 2:
            return Status.UNKNOWN, "too many conjuncts", formula
        return real(formula, facts, reps, cases)
    ck.decide = decide
    conj = [x.ule(10), x.ult(200), x.ne(255), x.ult(10), x.ult(11)]   # #3 fails at x = 9 (x + 1 = 10)
    st = ck._consecution_groups("t", "step", conj, x.ult(10), Rewriter({x: x + 1}), lambda f: f, Rewriter({}),
                                [], None, [])
    assert st is Status.FAILS
    bad = [r for r in ck.rows if r.status is not Status.HOLDS]
    assert [r.name for r in bad] == ["t: consecution [step] #3"]
    assert asked[0] == 5 and len(ck.failed) == 1
    assert {r.name for r in ck.rows if r.status is Status.HOLDS} >= {"t: consecution [step] #0..1"}
    st = ck._consecution_groups("t", "step", [c for k, c in enumerate(conj) if k != 3], x.ult(10),
                                Rewriter({x: x + 1}), lambda f: f, Rewriter({}), [], None, [])
    assert st is Status.HOLDS
