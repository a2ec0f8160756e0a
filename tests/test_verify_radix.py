"""verify.radix / verify.refine: the mixed-radix rewrite is an equivalence under its context (checked
by enumerating every assignment at 8-bit width), and is refused when a side condition fails."""
import itertools

import numpy as np
import pytest

from ila import BvSort, zext
from ila.expr import TRUE, land
from ila.compile_np import evaluate
from ila.unroll import symbol
from verify.radix import RadixRewriter
from verify.radix_orders import OrderRadixRewriter
from verify.refine import AtomOracle


def _vars():
    V = symbol("rx.V", BvSort(3))
    r1, r2 = symbol("rx.r1", BvSort(2)), symbol("rx.r2", BvSort(2))
    c1, c2 = symbol("rx.c1", BvSort(8)), symbol("rx.c2", BvSort(8))
    return V, r1, r2, c1, c2


def _rewrite(ctx, f):
    orc = AtomOracle(ctx, solver="z3", timeout=5)
    try:
        rr = RadixRewriter(ctx, lambda x, y: orc.decide(x.ult(y)) is TRUE)
        return rr, rr(f)
    finally:
        orc.close()


def _assignments(V, r1, r2, c1, c2):
    """Every (V, r1, r2) with a grid of columns, as arrays by variable name."""
    grid = np.array(list(itertools.product(range(8), range(4), range(4), range(0, 256, 3), range(0, 256, 5))),
                    dtype=np.uint64)
    return {x.name: grid[:, k] for k, x in enumerate((V, r1, r2, c1, c2))}


def test_radix_rewrite_is_an_equivalence_under_its_context():
    V, r1, r2, c1, c2 = _vars()
    K = zext(V, 8) << 2                                   # radix 4·V
    lhs = zext(r1, 8) * K + c1
    rhs = zext(r2, 8) * K + c2
    ctx = [c1.ult(K), c2.ult(K)]
    f = lhs.eq(rhs)
    rr, g = _rewrite(ctx, f)
    assert rr.rewrites == 1 and g is not f
    env = _assignments(V, r1, r2, c1, c2)
    ok, before, after = (np.asarray(x, dtype=bool) for x in evaluate([land(*ctx), f, g], env, env))
    assert ok.sum() > 1000 and (before[ok] == after[ok]).all()
    assert before[ok].any()                       # some equal addresses among the checked ones


@pytest.mark.parametrize("case", ["unbounded column", "overflowing row"])
def test_radix_rewrite_refused_when_a_side_condition_fails(case):
    V, r1, r2, c1, c2 = _vars()
    K = zext(V, 8) << 2
    if case == "unbounded column":             # c1 <= 27 but not c1 < K: 1·K + 0 = 0·K + K would be lost
        ctx = [c1.ule(27), c2.ult(K)]
        f = (zext(r1, 8) * K + c1).eq(zext(r2, 8) * K + c2)
    else:                                      # rows up to 255: r·K wraps modulo 2^8
        w1, w2 = symbol("rx.w1", BvSort(8)), symbol("rx.w2", BvSort(8))
        ctx = [c1.ult(K), c2.ult(K)]
        f = (w1 * K + c1).eq(w2 * K + c2)
    rr, g = _rewrite(ctx, f)
    assert rr.rewrites == 0 and g is f


def test_symbolic_maxpool_consecution_part_is_rewritten_to_linear():
    """The hardest symbolic clause (IR step: a processed output cell keeps max(x0, x1)) loses its
    nonlinear address equalities and then is valid quickly."""
    from mappings import registry
    from ila.verdict import Status
    from verify import chc, refine as R
    m = registry.get("flexasr.maxpool")
    spec = m.proof.chc(None, numerics="uf")
    built = chc.build(spec)
    parts = [q for c in built.clauses for p in c.parts for q in (p.parts() if callable(p.parts) else [p])
             if q.name.startswith("ir: consecution")]
    hard = max(parts, key=lambda p: len(R.nonlinear_atoms(p.formula)))
    st, secs, _ = chc._valid_part(hard, spec, timeout=30, solver="z3", inline_ufs=False, emit_dir=None, label="t")
    assert st is Status.HOLDS


@pytest.mark.slow
def test_symbolic_maxpool_proved_and_seeded_config_bug_refuted():
    from mappings import registry
    from verify.chc import check_chc
    from ila.verdict import Counterexample, Proved
    m = registry.get("flexasr.maxpool")
    assert isinstance(check_chc(m, None), Proved)
    from verify import mutations
    v = mutations.check(m, None, "timestep_off_by_one", "chc")
    assert isinstance(v, Counterexample) and v.replayed


@pytest.mark.parametrize("op", ["ult", "ule", "ugt", "uge"])
def test_radix_order_rewrite_is_an_equivalence_under_its_context(op):
    """verify.radix_orders: ``K·r1 + c1 <u K·r2 + c2`` (and the other unsigned comparisons) becomes the
    lexicographic comparison of (row, column): checked on every assignment of a grid."""
    V, r1, r2, c1, c2 = _vars()
    K = zext(V, 8) << 2
    lhs, rhs = zext(r1, 8) * K + c1, zext(r2, 8) * K + c2
    ctx = [c1.ult(K), c2.ult(K)]
    f = getattr(lhs, op)(rhs)
    orc = AtomOracle(ctx, solver="z3", timeout=5)
    try:
        rr = OrderRadixRewriter(ctx, lambda x, y: orc.decide(x.ult(y)) is TRUE)
        g = rr(f)
        plain = RadixRewriter(ctx, lambda x, y: orc.decide(x.ult(y)) is TRUE)(f)
    finally:
        orc.close()
    assert rr.rewrites == 1 and g is not f and plain is f          # without orders: left alone
    env = _assignments(V, r1, r2, c1, c2)
    ok, before, after = (np.asarray(x, dtype=bool) for x in evaluate([land(*ctx), f, g], env, env))
    assert ok.sum() > 1000 and (before[ok] == after[ok]).all() and before[ok].any() and not before[ok].all()


def test_radix_cancels_shared_monomials():
    """A shared offset (an output base ``N·K + M·K``) is cancelled before the radix is chosen: an
    input address ``n·K + k`` below it is decided by the rows alone."""
    n, N, M = (symbol(f"rx.{x}", BvSort(16)) for x in ("n", "N", "M"))
    k, K = symbol("rx.k", BvSort(16)), symbol("rx.K", BvSort(16))
    ctx = [n.ult(N), k.ult(K), N.ule(15), K.ule(15), M.ule(15)]
    base = N * K + M * K
    orc = AtomOracle(ctx, solver="z3", timeout=5)
    try:
        rr = OrderRadixRewriter(ctx, lambda x, y: orc.decide(x.ult(y)) is TRUE)
        g = rr((n * K + k).ult(base))
    finally:
        orc.close()
    assert rr.rewrites == 1
    assert all(x.op.name != "MUL" or any(a.op.name == "CONST" for a in x.args) for x in _nodes(g))


def _nodes(e):
    from ila.walk import toposort
    return toposort([e])
