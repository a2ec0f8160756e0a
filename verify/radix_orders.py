"""The mixed-radix rewrite of :mod:`verify.radix` extended for all-sizes phase proofs
(:mod:`verify.phases` with size symbols): unsigned comparisons, shared offsets, narrowed fields.

With ``K·row + col`` the integer values of both sides (no wrap) and ``0 ≤ col < K`` on both, the
order of the values is the lexicographic order of their digits:

* ``a <u b ⇔ row1 <u row2 ∨ (row1 = row2 ∧ col1 <u col2)`` (``≤u`` likewise; ``>u``, ``≥u`` with
  the sides swapped), e.g. a loop's store ``(i·mb + j)·16 + l`` inside ``N·mb·16`` is ``i <u N``;
* monomials both sides share with the same coefficient are cancelled before the radix is chosen
  (always for an equality: modular arithmetic; for an order only when neither whole side wraps),
  so an input address ``n·K + k`` compared with an output base ``N·K + M·K`` is decided by its
  rows; when only linear monomials remain, the equality (or order) of the rest is the answer;
* ``zext(extract(t, h, 0))`` of the width of ``t`` is ``t`` where the context's bounds keep ``t``
  below ``2^(h+1)`` (a size latched into a narrower instruction field and read back);
* an ``ite(c, a, b)`` whose condition ``c`` the hypothesis states is ``a`` (HLSCNN's clamp of an
  output row to the last one, which the invariant's bounds exclude), so the address is a
  polynomial again;
* a comparison the rewrite produces may be one of the next digit (the row ``fb·OH + oy`` of an
  address ``(fb·OH + oy)·OW + ox``): the rewrite is repeated, up to :data:`ROUNDS` times.

Each rewrite is an equivalence under the clause's hypothesis (its arithmetic facts), so the
rewritten clause is valid iff the clause is.
"""
from __future__ import annotations

from ila.expr import Expr, bv_const, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.walk import toposort

from .radix import Polys, RadixRewriter


class OrderRadixRewriter(RadixRewriter):
    """:class:`verify.radix.RadixRewriter` with the module's extensions."""

    def equality(self, a: Expr, b: Expr) -> Expr | None:
        got = self._digits(a, b, order=False)
        return None if got is None else land(got[0][0].eq(got[0][1]), got[1][0].eq(got[1][1]))

    def less(self, a: Expr, b: Expr, strict: bool) -> Expr | None:
        """``a <u b`` (``a ≤u b`` when not ``strict``) as the lexicographic order of the digits, or None."""
        got = self._digits(a, b, order=True)
        if got is None:
            return None
        (r1, r2), (c1, c2) = got
        return r1.ult(r2) | r1.eq(r2) & (c1.ult(c2) if strict else c1.ule(c2))

    def _digits(self, a: Expr, b: Expr, order: bool):
        """((row1, row2), (col1, col2)) with ``a = K·row1 + col1``, ``b = K·row2 + col2`` (both sides
        free of wrap-around, both columns below K), after cancelling shared monomials; or None."""
        w = a.sort.width
        P = self.polys.setdefault(w, Polys(w))
        pa, pb = P.of(a), P.of(b)
        same = [m for m, c in pa.items() if pb.get(m) == c]
        if same and (not order or all(self.iv.poly(P, p) < (1 << w) for p in (pa, pb))):
            pa = {m: c for m, c in pa.items() if m not in same}
            pb = {m: c for m, c in pb.items() if m not in same}
        nonlin = [m for m in list(pa) + list(pb) if len(m) > 1]
        if not nonlin:
            if same and any(len(m) > 1 for m in same) and (not order or all(
                    self.iv.poly(P, p) < (1 << w) and all(c < (1 << (w - 1)) for c in p.values()) for p in (pa, pb))):
                self.rewrites += 1                   # the shared products cancelled, the rest is linear
                zero = bv_const(0, w)
                return (zero, zero), (P.expr(pa), P.expr(pb))
            return None
        common = set(nonlin[0]).intersection(*[set(m) for m in nonlin[1:]])
        for v in sorted(common):
            sa, sb = self._split(P, pa, v), self._split(P, pb, v)
            if sa is None or sb is None:
                continue
            k = min(s[0] for s in (sa, sb) if s[0] is not None)
            rows = [{m: c // k for m, c in s[1].items()} for s in (sa, sb)]
            cols = [sa[2], sb[2]]
            radix = {(v,): k}
            ub_k = self.iv.poly(P, radix)
            if any(self.iv.poly(P, r) * ub_k + self.iv.poly(P, c) >= (1 << w) for r, c in zip(rows, cols)):
                continue
            kx = P.expr(radix)
            col_e = [P.expr(c) for c in cols]
            k_lb = self.iv.poly_lb(P, radix)
            if any(self.iv.poly(P, c) >= (1 << w) - 1 and self.iv.poly(P, c) >= k_lb for c in cols):
                continue
            if not all(self.iv.poly(P, c) < k_lb or self.lt(ce, kx) for c, ce in zip(cols, col_e)):
                continue
            self.rewrites += 1
            return (P.expr(rows[0]), P.expr(rows[1])), (col_e[0], col_e[1])
        return None

    def __call__(self, f: Expr) -> Expr:
        rw = Rewriter()
        memo: dict[int, Expr] = {}
        for n in toposort([f]):
            if n.op is Op.EQ and not n.args[0].sort.is_bool and not n.args[0].sort.is_mem:
                a, b = memo[n.args[0].uid], memo[n.args[1].uid]
                new = self.equality(a, b) if a.sort.width >= 8 else None
                memo[n.uid] = new if new is not None else rw.build(Op.EQ, n.sort, (a, b), None)
            elif n.op is Op.ZEXT and n.args[0].op is Op.EXTRACT and n.args[0].payload[1] == 0 \
                    and n.args[0].args[0].sort == n.sort \
                    and self.iv.ub(n.args[0].args[0]) < (1 << (n.args[0].payload[0] + 1)):
                memo[n.uid] = memo[n.args[0].args[0].uid]     # a value that fits its low bits: itself
            elif n.op in (Op.ULT, Op.ULE, Op.UGT, Op.UGE):
                a, b = memo[n.args[0].uid], memo[n.args[1].uid]
                lo, hi = (a, b) if n.op in (Op.ULT, Op.ULE) else (b, a)
                new = self.less(lo, hi, n.op in (Op.ULT, Op.UGT)) if a.sort.width >= 8 else None
                memo[n.uid] = new if new is not None else rw.build(n.op, n.sort, (a, b), None)
            elif n.args:
                memo[n.uid] = rw.build(n.op, n.sort, tuple(memo[x.uid] for x in n.args), n.payload)
            else:
                memo[n.uid] = n
        return memo[f.uid]


ROUNDS = 3


def radix_orders(formula: Expr, oracles: dict, *, solver: str, timeout: float) -> Expr:
    """``formula`` rewritten by :class:`OrderRadixRewriter` under its arithmetic context (the
    hypothesis conjuncts and what they imply syntactically, without memory reads or functions);
    ``oracles``: the solvers deciding ``col <u K`` per context (closed by the caller)."""
    from .refine import AtomOracle, arithmetic, implied_facts, split_implication
    hyps, _ = split_implication(formula)
    ctx = [h for h in implied_facts(hyps) if arithmetic(h, set())]
    key = ("radix", frozenset(h.uid for h in ctx))
    orc = oracles.get(key)
    if orc is None:
        orc = oracles[key] = AtomOracle(ctx, solver=solver, timeout=timeout)
    formula = _decided_ites(formula, ctx)
    # a rewritten comparison may be one again of the next digit (a row ``fb·OH + oy`` of an address
    # ``(fb·OH + oy)·OW + ox``): rewritten again, up to ROUNDS times
    for _ in range(ROUNDS):
        asked: list[Expr] = []
        OrderRadixRewriter(ctx, lambda x, y: asked.append(x.ult(y)) and False)(formula)
        orc.prove_all(asked)
        rw = OrderRadixRewriter(ctx, lambda x, y: orc.holds(x.ult(y)))
        formula = rw(formula)
        if not rw.rewrites:
            break
    return formula


def _decided_ites(formula: Expr, ctx: list) -> Expr:
    """``formula`` with every ``ite(c, a, b)`` whose condition ``c`` is one of the context facts
    ``ctx`` (implied by the hypothesis) replaced by ``a``: an equivalence, since ``c`` holds wherever
    the hypothesis does (e.g. HLSCNN's clamp of an output row to the last one, never taken while
    the row counter is below the output's height, as the invariant states)."""
    from ila.simplify import replace_nodes
    known = {c.uid for c in ctx}
    hits = {n.uid: n.args[1] for n in toposort([formula]) if n.op is Op.ITE and n.args[0].uid in known}
    if not hits:
        return formula
    (out,) = replace_nodes([formula], hits)
    return Rewriter().one(out)
