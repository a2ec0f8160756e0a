"""The generic loop templates (verify/templates.py) on a hand-built loop system: a micro-op pc that
wraps to the loop's first micro-op, compared with the end zero-extended (the shape of VTA's GEMM
and ALU loops, ila/models/vta/model.py), gets candidates relating it to both configuration terms;
a loop without such a wrap gets none."""
from ila import BvSort, bv_const
from ila.expr import implies, ite, zext
from ila.unroll import symbol
from verify.cells import LoopSystem
from verify.templates import loop_candidates


def _system(wrap: bool):
    op, upc = symbol("t.op", BvSort(4)), symbol("t.upc", BvSort(15))
    bgn, end = symbol("t.bgn", BvSort(13)), symbol("t.end", BvSort(14))
    last = (zext(upc, 16) + 1).eq(zext(end, 16))
    step = ite(last, zext(bgn, 15), upc + 1) if wrap else upc + 1
    fire = op.eq(6)
    nxt = {upc: step, op: ite(last, bv_const(0, 4), op)}
    sysm = LoopSystem(None, "m", [], [], [op, upc, bgn, end], nxt, fire, [("step", fire)], [], [nxt])
    start = {op: bv_const(6, 4), upc: zext(symbol("p.bgn", BvSort(13)), 15),
             bgn: symbol("p.bgn", BvSort(13)), end: symbol("p.end", BvSort(14))}
    return sysm, start, op, upc, bgn, end


def test_wrapping_counter_gets_its_reset_value_and_widened_bound():
    sysm, start, op, upc, bgn, end = _system(wrap=True)
    cands = {c.uid for c in loop_candidates(sysm, start)}
    guard = op.eq(6)
    for atom in (upc.eq(zext(bgn, 15)), upc.uge(zext(bgn, 15)), zext(upc, 16).ult(zext(end, 16))):
        assert atom.uid in cands                     # unguarded
        assert implies(guard, atom).uid in cands     # under the control variable's value


def test_counter_without_wrap_gets_no_reset_candidate():
    sysm, start, op, upc, bgn, end = _system(wrap=False)
    cands = {c.uid for c in loop_candidates(sysm, start)}
    assert upc.eq(zext(bgn, 15)).uid not in cands
