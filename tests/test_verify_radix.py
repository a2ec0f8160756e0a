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


def _conclusion(f):
    from verify.refine import split_implication
    return split_implication(f)[1]


def test_radix_orders_rewrites_every_digit_of_a_three_digit_address():
    """``((a·B + b)·K + c) <u (M·B)·K`` with a < N, b < B, c < K becomes a comparison of the first
    digits after the rewrite of each digit in turn (verify.radix_orders.ROUNDS): no product of two
    sizes is left; and under the context the rewritten conclusion equals the original on every
    assignment of a grid (true on some, false on others)."""
    from ila.expr import implies
    from verify.radix_orders import radix_orders
    a, b, c = (symbol(f"rx3.{x}", BvSort(4)) for x in ("a", "b", "c"))
    N, B, K, M = (symbol(f"rx3.{x}", BvSort(3)) for x in ("N", "B", "K", "M"))
    a16, b16, c16, N16, B16, K16, M16 = (zext(v, 16) for v in (a, b, c, N, B, K, M))
    ctx = [a16.ult(N16), b16.ult(B16), c16.ult(K16)]
    f = implies(land(*ctx), ((a16 * B16 + b16) * K16 + c16).ult((M16 * B16) * K16))
    oracles = {}
    try:
        g = radix_orders(f, oracles, solver="z3", timeout=5)
    finally:
        for orc in oracles.values():
            orc.close()
    muls = [x for x in _nodes(_conclusion(g)) if x.op.name == "MUL" and all(y.op.name != "CONST" for y in x.args)]
    assert not muls, [str(m) for m in muls]
    grid = np.array(list(itertools.product(range(16), range(0, 16, 3), range(0, 16, 3), range(8), range(8), range(8),
                                           range(8))), dtype=np.uint64)
    env = {x.name: grid[:, k] for k, x in enumerate((a, b, c, N, B, K, M))}
    ok, before, after = (np.asarray(x, dtype=bool) for x in evaluate([land(*ctx), _conclusion(f), _conclusion(g)],
                                                                     env, env))
    assert ok.sum() > 1000 and (before[ok] == after[ok]).all() and before[ok].any() and not before[ok].all()


def test_an_ite_whose_condition_the_hypothesis_states_is_decided():
    """verify.radix_orders._decided_ites: ``ite(c, x, y)`` under a hypothesis with the conjunct c is x
    (a clamp the invariant's bounds never take), so the address becomes a polynomial again."""
    from ila.expr import implies, ite
    from verify.radix_orders import _decided_ites
    x, y, n = (symbol(f"rxi.{v}", BvSort(8)) for v in ("x", "y", "n"))
    c = x.ult(n)
    f = implies(land(c, y.ult(n)), ite(c, x, n - 1).ult(n))
    g = _decided_ites(f, [c, y.ult(n)])
    assert not any(e.op.name == "ITE" for e in _nodes(g))
    h = _decided_ites(f, [y.ult(n)])                  # c is not stated: left alone
    assert any(e.op.name == "ITE" for e in _nodes(h))
