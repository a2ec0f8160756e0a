"""Equivalence-preserving rewriting of a hard consecution clause ``H → G``.

Used by :mod:`verify.chc` for clauses whose addresses are nonlinear in symbolic sizes
(``--shape symbolic``: an address like ``R·C + oy·C + ox`` multiplies two unknowns, and bit-vector
solvers must rediscover the mixed-radix case analysis inside a large formula). Two steps, each an
identity under the clause's hypothesis, so the rewritten clause is valid iff the original is:

1. **Contextual pins.** Equalities ``v = e`` that the hypothesis implies (top-level conjuncts, and
   consequents of implications whose antecedent the hypothesis makes true, e.g. the invariant's
   ``busy → cnt_0 = 0`` when the instruction fires only while busy) are substituted:
   ``(H ∧ v = e → G) ≡ (H[v:=e] ∧ v = e → G[v:=e])``.
2. **Mixed-radix equalities** (:mod:`verify.radix`): ``row1·K + col1 = row2·K + col2`` becomes
   ``row1 = row2 ∧ col1 = col2`` where bounds and ``col <u K`` are shown under the clause's
   *arithmetic context* (the implied facts that mention no memory cell, havoc, data value or
   uninterpreted function), with small queries on one incremental solver.
"""
from __future__ import annotations

from typing import Iterable

from ila.expr import FALSE, TRUE, Expr, implies, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.walk import toposort

_CMP = (Op.EQ, Op.ULT, Op.ULE, Op.UGT, Op.UGE)


def conjuncts(e: Expr) -> list[Expr]:
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if x.op is Op.AND:
            stack.extend(reversed(x.args))
        elif x is not TRUE:
            out.append(x)
    return out


def split_implication(f: Expr) -> tuple[list[Expr], Expr]:
    """``H1 → (H2 → ... → G)`` as (conjuncts of H1 ∧ H2 ∧ ..., G)."""
    hyps = []
    while f.op is Op.IMPLIES:
        hyps.extend(conjuncts(f.args[0]))
        f = f.args[1]
    return hyps, f


def _holds(e: Expr, known: set) -> bool:
    """``e`` is true whenever all ``known`` atoms are (a syntactic check through and/or)."""
    if e in known or e is TRUE:
        return True
    if e.op is Op.AND:
        return all(_holds(a, known) for a in e.args)
    if e.op is Op.OR:
        return any(_holds(a, known) for a in e.args)
    return False


def implied_facts(hyps: list[Expr]) -> list[Expr]:
    """The hypothesis conjuncts and the consequents of its implications whose antecedents they
    make true (syntactically, to a fixpoint)."""
    facts = list(hyps)
    known = set(facts)
    changed = True
    while changed:
        changed = False
        for c in list(facts):
            if c.op is Op.IMPLIES and _holds(c.args[0], known):
                for d in conjuncts(c.args[1]):
                    if d not in known:
                        known.add(d)
                        facts.append(d)
                        changed = True
    return facts


def context_pins(hyps: list[Expr], loop_vars: set[int]) -> dict[Expr, Expr]:
    """Equalities ``v = e`` (v a loop variable, e free of v) implied by the hypothesis conjuncts."""
    facts = implied_facts(hyps)
    pins: dict[Expr, Expr] = {}
    for d in facts:
        if d.op is not Op.EQ:
            continue
        for v, e in (d.args, reversed(d.args)):
            if v.op is Op.VAR and v.uid in loop_vars and v not in pins and e.op is not Op.VAR:
                if all(n is not v for n in toposort([e])):
                    pins[v] = e
                    break
    # resolve chains (a0 = b0 + off, b0 = f(ts)) without cycles
    for _ in range(4):
        rw = Rewriter(pins)
        new = {v: rw.one(e) for v, e in pins.items()}
        new = {v: e for v, e in new.items() if all(n is not v for n in toposort([e]))}
        if new == pins:
            break
        pins = new
    return pins


def pin(formula: Expr, loop_vars: set[int]) -> Expr:
    hyps, goal = split_implication(formula)
    pins = context_pins(hyps, loop_vars)
    if not pins:
        return formula
    rw = Rewriter(pins)
    return implies(land(*[v.eq(e) for v, e in pins.items()], *[rw.one(h) for h in hyps]), rw.one(goal))


def _nonlinear(e: Expr) -> bool:
    return any(n.op in (Op.MUL, Op.UDIV, Op.UREM) and all(a.op is not Op.CONST for a in n.args) for n in toposort([e]))


def nonlinear_atoms(e: Expr) -> list[Expr]:
    return [n for n in toposort([e]) if n.op in _CMP and not n.args[0].sort.is_bool and not n.args[0].sort.is_mem
            and _nonlinear(n)]


def arithmetic(e: Expr, data_vars: set[int]) -> bool:
    """``e`` mentions no uninterpreted function and none of ``data_vars`` (cells, havocs, values)."""
    return not any(n.op in (Op.APPLY, Op.LOAD, Op.STORE) or (n.op is Op.VAR and n.uid in data_vars)
                   for n in toposort([e]))


class AtomOracle:
    """Decides atoms under one arithmetic context with one incremental solver (push-free: each
    query is ``solve(assumptions=[±A])``). ``decide(A)`` gives TRUE, FALSE or A itself."""

    def __init__(self, ctx: list[Expr], *, solver: str, timeout: float):
        from ila.smt import SmtEncoder
        self.enc = SmtEncoder()
        self.solver_name, self.timeout = solver, timeout
        self.ctx = ctx
        self._solver = None
        self.memo: dict[int, Expr] = {}
        self.valid: dict[int, bool] = {}      # holds(): atom uid -> implied by the context
        self.queries = 0

    def _get(self):
        if self._solver is None:
            ms = max(1, int(self.timeout * 1000))
            opts = {"timeout": ms} if self.solver_name == "z3" else {"tlimit-per": ms, "incremental": "true"}
            self._solver = self.enc.env.factory.Solver(name=self.solver_name, logic="QF_BV", solver_options=opts)
            for f in self.enc.encode_all(self.ctx):
                self._solver.add_assertion(f)
        return self._solver

    def _unsat(self, f) -> bool:
        from pysmt.exceptions import SolverReturnedUnknownResultError
        self.queries += 1
        with self.enc.active():
            try:
                return self._get().solve(assumptions=[f]) is False
            except SolverReturnedUnknownResultError:
                return False

    def decide(self, a: Expr) -> Expr:
        hit = self.memo.get(a.uid)
        if hit is not None:
            return hit
        enc = self.enc.encode(a)
        mgr = self.enc.mgr
        if self._unsat(enc):
            out = FALSE
        elif self._unsat(mgr.Not(enc)):
            out = TRUE
        else:
            out = a
        self.memo[a.uid] = out
        return out

    def holds(self, a: Expr) -> bool:
        """``ctx → a`` is valid (one query, memoised; a timeout counts as not shown)."""
        hit = self.valid.get(a.uid)
        if hit is None:
            hit = self.valid[a.uid] = self._unsat(self.enc.mgr.Not(self.enc.encode(a)))
        return hit

    def prove_all(self, atoms: list[Expr]) -> None:
        """Find which of ``atoms`` the context implies with few queries: ``ctx ∧ ¬(a1 ∧ ... ∧ an)``
        unsat shows them all; a model refutes every atom false in it (not implied), and the rest
        are asked again (as Houdini does). Results go to the memo :meth:`holds` reads."""
        todo = [a for a in dict.fromkeys(atoms) if a.uid not in self.valid]
        with self.enc.active():
            self._prove_all(todo)

    def _prove_all(self, todo: list[Expr]) -> None:
        mgr = self.enc.mgr
        while todo:
            encs = [self.enc.encode(a) for a in todo]
            s = self._get()
            self.queries += 1
            try:
                sat = s.solve(assumptions=[mgr.Not(mgr.And(encs))])
            except Exception:                  # unknown: leave them to one query each
                return
            if not sat:
                for a in todo:
                    self.valid[a.uid] = True
                return
            false = [a for a, e in zip(todo, encs) if not s.get_py_value(e)]
            if not false:                       # cannot happen (the model falsifies the conjunction)
                return
            for a in false:
                self.valid[a.uid] = False
            todo = [a for a in todo if a.uid not in self.valid]

    def close(self):
        if self._solver is not None:
            self._solver.exit()
            self._solver = None


def radix(formula: Expr, data_vars: set[int], oracles: dict, *, solver: str, timeout: float) -> Expr:
    """Rewrite the mixed-radix address equalities of ``formula`` (:mod:`verify.radix`) under its
    arithmetic context."""
    from .radix import RadixRewriter
    hyps, _ = split_implication(formula)
    ctx = [h for h in implied_facts(hyps) if arithmetic(h, data_vars)]
    key = ("radix", frozenset(h.uid for h in ctx))
    orc = oracles.get(key)
    if orc is None:
        orc = oracles[key] = AtomOracle(ctx, solver=solver, timeout=timeout)
    # a dry run collects the side conditions col <u K the rewrite would ask, proved together in
    # a few queries (AtomOracle.prove_all); the rewrite then reads their answers
    asked: list[Expr] = []
    RadixRewriter(ctx, lambda x, y: asked.append(x.ult(y)) and False)(formula)
    orc.prove_all(asked)
    return RadixRewriter(ctx, lambda x, y: orc.holds(x.ult(y)))(formula)
