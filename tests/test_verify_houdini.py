"""Invariant inference (verify.houdini over verify.templates) for the LayerReduce family."""
import dataclasses

import pytest

from verify import mutations

from ila.verdict import Counterexample, Proved, Status
from mappings import registry
from verify import chc, houdini, templates


def test_houdini_drops_non_inductive_candidates_and_keeps_the_relational_ones():
    m = registry.get("flexasr.maxpool")
    spec = m.proof.chc({"R": 2, "C": 16}, infer=True)
    lp = spec.loops[0]                                     # the IR pooling loop
    sysm, start = chc.loop_of(lp)
    rel = lp.candidates(sysm)
    out_cell, x0 = sysm.cells[2], lp.cell_init[0]
    bogus = [out_cell.eq(x0), sysm.cells[0].eq(lp.cell_init[1])]   # false at the start / after a step
    res = houdini.infer(spec, lp, templates.loop_candidates(sysm, start) + rel + bogus)
    kept = set(res.kept)
    assert not kept & set(bogus)
    assert set(rel) <= kept                                # the family's relational conjuncts are inductive


def test_inferred_invariant_proves_maxpool():
    m = registry.get("flexasr.maxpool")
    v = chc.check_chc(m, {"R": 2, "C": 16}, infer=True)
    assert isinstance(v, Proved) and "inferred" in v.detail


@pytest.mark.slow
def test_inference_needs_the_relational_candidates():
    """Without the family's relational candidates the generic templates cannot reach the post."""
    m = registry.get("flexasr.maxpool")
    spec = m.proof.chc({"R": 2, "C": 16}, infer=True)
    spec = dataclasses.replace(spec, loops=[dataclasses.replace(lp, candidates=None) for lp in spec.loops])
    spec, _ = houdini.infer_invariants(spec)
    status, rows = chc.check_invariants(spec)
    assert status is not Status.HOLDS


@pytest.mark.slow
def test_meanpool_chc_inferred_and_refutes_wrong_mode():
    m = registry.get("flexasr.meanpool")
    v = chc.check_chc(m, {"R": 4, "C": 32})
    assert isinstance(v, Proved) and "inferred" in v.detail
    bad = mutations.check(m, {"R": 4, "C": 32}, "wrong_mode", "chc")
    assert isinstance(bad, Counterexample) and bad.replayed


def test_sample_filter_drops_only_candidates_a_reached_state_falsifies():
    """The concrete runs before Houdini keep every conjunct of an inductive invariant (here the
    family's relational candidates and the supplied invariant's conjuncts, at all sizes) and drop
    candidates false at the start or after a step."""
    from verify.refine import conjuncts
    m = registry.get("flexasr.maxpool")
    supplied = m.proof.chc(None)
    spec = m.proof.chc(None, infer=True)
    lp, lp_sup = spec.loops[1], supplied.loops[1]          # the FlexASR LayerReduce loop
    sysm, start = chc.loop_of(lp)
    rel = lp.candidates(sysm)
    inv = conjuncts(lp_sup.invariant(sysm))
    bogus = [sysm.cells[2].eq(lp.cell_init[0]),            # the output cell keeps x0: false once processed
             sysm.states[0].eq(sysm.states[0] + 1)]         # false everywhere
    kept, dropped, stats = houdini.sample_filter(spec, lp, sysm, start, rel + inv + bogus)
    assert stats["lanes"] > 100 and stats["steps"] > 10
    assert set(rel + inv) <= set(kept)
    assert set(bogus) <= set(dropped)


@pytest.mark.slow
def test_all_sizes_maxpool_proved_with_inferred_invariants():
    """Issue 26: the all-sizes LayerReduce proof with inferred invariants is PROVED (it fell to
    UNKNOWN after 176 s); about 8 s of CPU here."""
    import time
    m = registry.get("flexasr.maxpool")
    t0 = time.process_time()
    v = chc.check_chc(m, None, infer=True, timeout=600)
    assert isinstance(v, Proved) and "inferred" in v.detail and v.scope == "symbolic"
    assert time.process_time() - t0 < 60


def test_loads_as_functions_gives_each_read_array_one_function():
    """The phase proofs' sampling (verify.phases._Checker._sample_templates) runs a loop whose read
    memories are arrays: each load m[a] becomes f_m(a), one function per array across all roots,
    so equal loads stay equal; a load from a store chain is refused (None)."""
    from ila import BvSort, MemSort
    from ila.expr import load, store
    from ila.ops import Op
    from ila.unroll import symbol
    from ila.walk import toposort
    m, n = symbol("t.m", MemSort(8, 4)), symbol("t.n", MemSort(8, 4))
    a, b = symbol("t.a", BvSort(8)), symbol("t.b", BvSort(8))
    r1, r2 = load(m, a) + load(n, a), load(m, a).eq(load(m, b))
    out = houdini.loads_as_functions([r1, r2])
    nodes = toposort(out)
    assert not any(x.op is Op.LOAD for x in nodes)
    apps = [x for x in nodes if x.op is Op.APPLY]
    assert {x.payload.name for x in apps} == {"sampled.t.m", "sampled.t.n"}
    assert len({x.uid for x in apps if x.payload.name == "sampled.t.m" and x.args[0] is a}) == 1
    assert houdini.loads_as_functions([load(store(m, a, load(n, b)), b)]) is None
