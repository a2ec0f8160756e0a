"""Mixed-radix address equalities: ``row1·K + col1 = row2·K + col2`` as ``row1 = row2 ∧ col1 = col2``.

With symbolic sizes, tensor addresses multiply unknowns (IR row-major ``(R + oy)·C + ox``, FlexASR's
tiled ``256·V·(t >> 4) + 16·(t & 15) + 256·v + i``), and bit-vector solvers must rediscover
Euclidean division inside every clause. This pass decides that once, syntactically, for each
equality ``a = b`` between 32-bit terms:

1. ``a`` and ``b`` become polynomials over atoms (sums of coefficient × monomial, modulo 2^w;
   ``+ - * << const`` are ring operations, anything else is an atom);
2. a *radix atom* V is chosen that occurs (once) in every nonlinear monomial of both sides; each
   side is ``K·row + col`` with ``K = k·V`` (k the largest power of two dividing every coefficient
   of the V-monomials) and ``row``, ``col`` free of V;
3. the rewrite is applied only when it is valid: interval bounds (from bit widths and the bound
   facts ``x <u e`` of the context) show ``ub(row)·ub(K) + ub(col) < 2^w`` on both sides (so no
   term wraps and the bit-vector values are the integer values), and ``col <u K`` holds on both
   sides under the context: by bounds (``ub(col) < lb(K)``, lower bounds from the facts
   ``x ≥u e``) or else shown by the solver (a linear query). Then, by uniqueness of Euclidean
   division, ``a = b ⇔ row1 = row2 ∧ col1 = col2``.

Every rewrite is thus an equivalence under the clause's hypothesis; equalities that fail a
condition are left alone.
"""
from __future__ import annotations

from collections import defaultdict

from ila.expr import TRUE, Expr, bv_const, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.walk import toposort

Poly = dict  # monomial (tuple of atom uids, sorted, with repetition) -> coefficient (mod 2^w)


class Polys:
    def __init__(self, width: int):
        self.w = width
        self.mask = (1 << width) - 1
        self.atoms: dict[int, Expr] = {}
        self.memo: dict[int, Poly] = {}

    def of(self, e: Expr) -> Poly:
        hit = self.memo.get(e.uid)
        if hit is not None:
            return hit
        out = self._of(e)
        self.memo[e.uid] = out
        return out

    def _of(self, e: Expr) -> Poly:
        op = e.op
        if op is Op.CONST:
            return {(): e.payload & self.mask} if e.payload & self.mask else {}
        if op is Op.ADD:
            return self._add(self.of(e.args[0]), self.of(e.args[1]), 1)
        if op is Op.SUB:
            return self._add(self.of(e.args[0]), self.of(e.args[1]), -1)
        if op is Op.NEG:
            return self._add({}, self.of(e.args[0]), -1)
        if op is Op.MUL:
            return self._mul(self.of(e.args[0]), self.of(e.args[1]))
        if op is Op.SHL and e.args[1].op is Op.CONST and e.args[1].payload < self.w:
            return self._mul(self.of(e.args[0]), {(): 1 << e.args[1].payload})
        self.atoms[e.uid] = e
        return {(e.uid,): 1}

    def _add(self, p: Poly, q: Poly, sign: int) -> Poly:
        out = dict(p)
        for m, c in q.items():
            v = (out.get(m, 0) + sign * c) & self.mask
            if v:
                out[m] = v
            else:
                out.pop(m, None)
        return out

    def _mul(self, p: Poly, q: Poly) -> Poly:
        out: dict = defaultdict(int)
        for m1, c1 in p.items():
            for m2, c2 in q.items():
                out[tuple(sorted(m1 + m2))] += c1 * c2
        return {m: c & self.mask for m, c in out.items() if c & self.mask}

    def expr(self, p: Poly) -> Expr:
        rw = Rewriter()
        total = bv_const(0, self.w)
        for m, c in sorted(p.items()):
            term = bv_const(c, self.w)
            for uid in m:
                term = rw.build(Op.MUL, term.sort, (term, self.atoms[uid]), None)
            total = rw.build(Op.ADD, total.sort, (total, term), None)
        return total


def _bound_facts(ctx: list[Expr]) -> dict[int, list[Expr]]:
    """uid of x -> the e of context facts ``x <u e`` / ``x ≤u e`` (inclusive bound e - 1 / e)."""
    out: dict[int, list] = defaultdict(list)
    for c in ctx:
        if c.op in (Op.ULT, Op.ULE):
            out[c.args[0].uid].append((c.args[1], c.op is Op.ULT))
        elif c.op in (Op.UGT, Op.UGE):
            out[c.args[1].uid].append((c.args[0], c.op is Op.UGT))
    return out


def _lower_facts(ctx: list[Expr]) -> dict[int, list[Expr]]:
    """uid of x -> the e of context facts ``x >u e`` / ``x ≥u e`` (strict or not)."""
    out: dict[int, list] = defaultdict(list)
    for c in ctx:
        if c.op in (Op.UGT, Op.UGE):
            out[c.args[0].uid].append((c.args[1], c.op is Op.UGT))
        elif c.op in (Op.ULT, Op.ULE):
            out[c.args[1].uid].append((c.args[0], c.op is Op.ULT))
    return out


class Intervals:
    """Upper bounds (as Python ints) of bit-vector terms from widths and context facts."""

    def __init__(self, ctx: list[Expr]):
        self.facts = _bound_facts(ctx)
        self.lower = _lower_facts(ctx)
        self.memo: dict[int, int] = {}
        self.lmemo: dict[int, int] = {}

    def ub(self, e: Expr, depth: int = 0) -> int:
        hit = self.memo.get(e.uid)
        if hit is not None:
            return hit
        w = e.sort.width
        best = (1 << w) - 1
        if depth < 6:
            best = min(best, self._structural(e, depth))
            for bound, strict in self.facts.get(e.uid, ()):
                b = self.ub(bound, depth + 1) - (1 if strict else 0)
                best = min(best, max(b, 0))
        self.memo[e.uid] = best
        return best

    def lb(self, e: Expr, depth: int = 0) -> int:
        """A lower bound (Python int) of the bit-vector value of ``e``: from constants, ``zext``,
        sums and products that cannot wrap (their upper bounds stay below 2^w) and the context's
        facts ``x ≥u e``, ``x >u e``, ``e ≤u x``, ``e <u x``."""
        hit = self.lmemo.get(e.uid)
        if hit is not None:
            return hit
        best = 0
        if depth < 6:
            op, a = e.op, e.args
            full = (1 << e.sort.width) - 1
            if op is Op.CONST:
                best = e.payload
            elif op is Op.ZEXT:
                best = self.lb(a[0], depth + 1)
            elif op in (Op.ADD, Op.MUL) or (op is Op.SHL and a[1].op is Op.CONST):
                if self.ub(e, depth) < full or self._no_wrap(e, depth):
                    x = self.lb(a[0], depth + 1)
                    y = (1 << a[1].payload) if op is Op.SHL else self.lb(a[1], depth + 1)
                    best = x + y if op is Op.ADD else x * y
            for bound, strict in self.lower.get(e.uid, ()):
                best = max(best, self.lb(bound, depth + 1) + (1 if strict else 0))
        best = min(best, (1 << e.sort.width) - 1)
        self.lmemo[e.uid] = best
        return best

    def _no_wrap(self, e: Expr, depth: int) -> bool:
        """The integer value of a sum / product of the operands' upper bounds fits the width."""
        a = e.args
        x = self.ub(a[0], depth + 1)
        y = (1 << a[1].payload) if e.op is Op.SHL else self.ub(a[1], depth + 1)
        return (x + y if e.op is Op.ADD else x * y) < (1 << e.sort.width)

    def poly_lb(self, P: "Polys", p: Poly) -> int:
        """A lower bound of a polynomial whose coefficients are all positive and whose upper bound
        (:meth:`poly`) fits the width (so it does not wrap); 0 otherwise."""
        if self.poly(P, p) >= (1 << P.w) or any(c >= (1 << (P.w - 1)) for c in p.values()):
            return 0
        total = 0
        for m, c in p.items():
            t = c
            for uid in m:
                t *= self.lb(P.atoms[uid])
            total += t
        return total

    def _structural(self, e: Expr, depth: int) -> int:
        op, a = e.op, e.args
        full = (1 << e.sort.width) - 1
        if op is Op.CONST:
            return e.payload
        if op is Op.ZEXT:
            return self.ub(a[0], depth + 1)
        if op is Op.BVAND:
            return min(self.ub(a[0], depth + 1), self.ub(a[1], depth + 1))
        if op is Op.LSHR and a[1].op is Op.CONST:
            return self.ub(a[0], depth + 1) >> a[1].payload
        if op in (Op.ADD, Op.MUL) or (op is Op.SHL and a[1].op is Op.CONST):
            x = self.ub(a[0], depth + 1)
            y = (1 << a[1].payload) if op is Op.SHL else self.ub(a[1], depth + 1)
            v = x + y if op is Op.ADD else x * y
            return v if v <= full else full
        return full

    def poly(self, P: Polys, p: Poly) -> int:
        total = 0
        for m, c in p.items():
            t = c
            for uid in m:
                t *= self.ub(P.atoms[uid])
            total += t
        return total


class RadixRewriter:
    """Rewrites the equalities of formulas under one context (see module docstring). ``lt_oracle``
    decides ``ctx → x <u y`` for two terms (a solver query), memoised by the caller."""

    def __init__(self, ctx: list[Expr], lt_oracle):
        self.ctx = ctx
        self.iv = Intervals(ctx)
        self.lt = lt_oracle
        self.polys: dict[int, Polys] = {}
        self.rewrites = 0

    def _split(self, P: Polys, p: Poly, v: int):
        """p = (k·V)·row + col with row, col free of atom v; None when v is not linear in p."""
        with_v = {m: c for m, c in p.items() if v in m}
        if any(m.count(v) != 1 for m in with_v):
            return None
        col = {m: c for m, c in p.items() if v not in m}
        row = {tuple(x for x in m if x != v): c for m, c in with_v.items()}
        k = 1 << min((c & -c).bit_length() - 1 for c in with_v.values()) if with_v else None
        return k, row, col

    def equality(self, a: Expr, b: Expr) -> Expr | None:
        w = a.sort.width
        P = self.polys.setdefault(w, Polys(w))
        pa, pb = P.of(a), P.of(b)
        nonlin = [m for m in list(pa) + list(pb) if len(m) > 1]
        if not nonlin:
            return None
        common = set(nonlin[0]).intersection(*[set(m) for m in nonlin[1:]])
        for v in sorted(common):
            sa, sb = self._split(P, pa, v), self._split(P, pb, v)
            if sa is None or sb is None:
                continue
            ks = [s[0] for s in (sa, sb) if s[0] is not None]
            k = min(ks)
            rows = [{m: c // k for m, c in s[1].items()} for s in (sa, sb)]
            cols = [sa[2], sb[2]]
            radix = {(v,): k}
            ub_k = self.iv.poly(P, radix)
            if any(self.iv.poly(P, r) * ub_k + self.iv.poly(P, c) >= (1 << w) for r, c in zip(rows, cols)):
                continue
            kx = P.expr(radix)
            col_e = [P.expr(c) for c in cols]
            k_lb = self.iv.poly_lb(P, radix)       # col <u K by bounds alone (no solver) when possible
            if any(self.iv.poly(P, c) >= (1 << w) - 1 and self.iv.poly(P, c) >= k_lb for c in cols):
                continue                            # a column nothing bounds: not asked (no rewrite)
            if not all(self.iv.poly(P, c) < k_lb or self.lt(ce, kx) for c, ce in zip(cols, col_e)):
                continue
            self.rewrites += 1
            return land(P.expr(rows[0]).eq(P.expr(rows[1])), col_e[0].eq(col_e[1]))
        return None

    def __call__(self, f: Expr) -> Expr:
        rw = Rewriter()
        memo: dict[int, Expr] = {}
        for n in toposort([f]):
            if n.op is Op.EQ and not n.args[0].sort.is_bool and not n.args[0].sort.is_mem:
                a, b = memo[n.args[0].uid], memo[n.args[1].uid]
                new = self.equality(a, b) if a.sort.width >= 8 else None
                memo[n.uid] = new if new is not None else rw.build(Op.EQ, n.sort, (a, b), None)
            elif n.args:
                memo[n.uid] = rw.build(n.op, n.sort, tuple(memo[x.uid] for x in n.args), n.payload)
            else:
                memo[n.uid] = n
        out = memo[f.uid]
        return out if out is not None else TRUE
