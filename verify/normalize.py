"""Discharging a BMC goal by rewriting (issue 26): the goal's own axiom equations oriented as
rewrite rules, and bit-vector sums in an associative-commutative normal form.

Why. A FlexASR linear layer's per-output goal says that the IR's left fold
``((p_0 + p_1) + p_2) + ...`` of I products equals what the PE computes: lane k sums its products
over the input vectors first, then the 16 lanes are added. Both are 32-bit sums (addition mod 2^32)
of the same ``ProductSum`` applications once the link axioms are applied. z3 proves that at
I = 672 in 4-7 min and 6 GB, and gave no verdict at I = 1152 or 1280 (15 GB). Yet the two sums are
the same multiset of summands, which a normal form shows in time linear in the goal.

What :func:`discharge` does, for a goal ``miter & A_1 & ... & A_n`` (the miter and the axiom
instances of its cone, exactly what ``verify.bmc`` would send to the solver):

* every axiom instance ``l = r`` whose side ``l`` is an uninterpreted-function application becomes
  the rewrite rule ``l -> r`` (instances in the order given: the link axioms of a mapping are
  instantiated inner applications first); an instance whose other side is already rewritten to
  ``l`` is skipped (a commutativity instance in both orders would loop);
* the miter is rebuilt bottom-up with the project's simplifier (:class:`ila.simplify.Rewriter`),
  each node first with its arguments rewritten, then by its rule if it has one (the rule's
  right-hand side rewritten in turn); the left-hand sides are keyed the same way, so a rule whose
  arguments are earlier right-hand sides matches the node it was instantiated for;
* then every maximal ``bvadd`` (one that is not itself a summand of a ``bvadd``) is flattened into
  its summands (through nested ``bvadd`` of the same width, a shared sub-sum counted once per
  use), the constant summands are added modulo 2^width into one, and the others are sorted by node
  identity (terms are hash-consed: equal terms are one node) and added back left to right. Only
  the maximal sums are rebuilt, so a left fold of I products costs O(I log I), not O(I^2).

The goal is discharged when the rewritten miter is the constant false. Soundness: each rule is an
equation the goal asserts, so in every model of the axioms a rewritten term has the value of the
term it replaces; bvadd is associative and commutative modulo 2^width, so the normal form of a sum
has the sum's value in every interpretation. Hence the miter and its rewriting agree in every model
of the axioms, and a miter that rewrites to false makes the goal unsat. Nothing else is concluded:
a goal that does not rewrite to false goes to the solver unchanged (rewriting is incomplete, e.g.
it knows nothing of ``bvsub`` or of multiplication).

Seeded bugs (:data:`BUGS`), for the tests: ``multiset_as_set`` (a repeated summand counted once:
``a + a + b`` and ``a + b`` get one normal form) and ``constant_dropped`` (the constant summands
forgotten: ``x + 1`` and ``x`` get one normal form). Each makes the checker prove a wrong goal;
``tests/test_verify_normalize.py`` shows that only the correct normal form refutes it.
"""
from __future__ import annotations

from ila import FALSE, bv_const
from ila.expr import Expr
from ila.ops import Op
from ila.simplify import Rewriter
from ila.walk import toposort

BUGS = ("multiset_as_set", "constant_dropped")


class Normalizer:
    """Rewriting of terms by oriented axiom equations, then sums in AC normal form (module
    docstring). One instance per goal: its rules are that goal's axiom instances."""

    def __init__(self, *, bug: str | None = None):
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown seeded bug {bug!r} of the normal form (known: {', '.join(BUGS)})")
        self.bug = bug
        self._rw = Rewriter()
        self._memo: dict[int, Expr] = {}         # node uid -> its rewriting by the rules
        self._rules: dict[int, Expr] = {}        # uid of a rewritten left-hand side -> right-hand side
        self._summands: dict[int, tuple] = {}    # uid of a normal-form sum -> its summands
        self._keep: list[Expr] = []              # nodes whose uids are keys above (interning is weak)

    # ------------------------------------------------------------------ rules
    def rewrite(self, root: Expr, _busy: frozenset = frozenset()) -> Expr:
        """``root`` rewritten by the rules added so far, bottom-up (equal to it in every model of
        the rules); sums are left as they are (:meth:`normal_form` orders them)."""
        memo, rules, build = self._memo, self._rules, self._rw.build
        stack = [(root, False)]
        while stack:
            n, ready = stack.pop()
            if n.uid in memo:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((a, False) for a in n.args if a.uid not in memo)
                continue
            e = build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload) if n.args else n
            rhs = rules.get(e.uid)
            if rhs is not None and e.uid not in _busy:
                e = self.rewrite(rhs, _busy | {e.uid})
            memo[n.uid] = e
        return memo[root.uid]

    def add_rule(self, axiom: Expr) -> None:
        """Orient the instance ``axiom`` (``l = r`` with an application on one side) as a rule; any
        other formula is ignored (it stays an assumption of the solver's goal only)."""
        if axiom.op is not Op.EQ:
            return
        lhs, rhs = axiom.args
        if lhs.op is not Op.APPLY:
            lhs, rhs = rhs, lhs
            if lhs.op is not Op.APPLY:
                return
        key = self._rw.build(lhs.op, lhs.sort, tuple(self.rewrite(a) for a in lhs.args), lhs.payload)
        if key is rhs or self._rules.get(rhs.uid) is key or key.uid in self._rules:
            return
        self._rules[key.uid] = rhs
        self._keep.append(key)

    # ------------------------------------------------------------------ sums
    def _sum(self, sort, leaves: list) -> Expr:
        terms, const = [], 0
        for a in leaves:
            for t in self._summands.get(a.uid, (a,)):
                if t.op is Op.CONST:
                    const += t.payload
                else:
                    terms.append(t)
        if self.bug == "multiset_as_set":
            terms = list({t.uid: t for t in terms}.values())
        terms.sort(key=lambda t: t.uid)
        const %= 1 << sort.width
        if const and self.bug != "constant_dropped":
            terms.append(bv_const(const, sort.width))
        if not terms:
            return bv_const(0, sort.width)
        e = terms[0]
        for t in terms[1:]:
            e = self._rw.build(Op.ADD, sort, (e, t), None)
        if len(terms) > 1:
            self._summands[e.uid] = tuple(terms)
            self._keep.append(e)
        return e

    def normal_form(self, root: Expr, budget: int = 50) -> Expr | None:
        """``root`` with every maximal sum (a ``bvadd`` not itself a summand of a ``bvadd``)
        flattened and ordered; None when flattening would visit more than ``budget`` times the
        DAG's nodes (sums sharing sub-sums many times over)."""
        nodes = toposort([root])
        top = {root.uid}
        for n in nodes:
            if n.op is not Op.ADD:
                top.update(a.uid for a in n.args)
        memo: dict[int, Expr] = {}
        visits, limit = 0, budget * len(nodes)
        for n in nodes:
            if n.op is Op.ADD:
                if n.uid not in top:
                    continue
                leaves, stack = [], list(n.args)
                while stack:
                    a = stack.pop()
                    visits += 1
                    if a.op is Op.ADD and a.uid not in top:
                        stack.extend(a.args)
                    else:
                        leaves.append(memo[a.uid])
                if visits > limit:
                    return None
                memo[n.uid] = self._sum(n.sort, leaves)
            elif n.args:
                memo[n.uid] = self._rw.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
            else:
                memo[n.uid] = n
        return memo[root.uid]


def discharge(miter: Expr, axioms: list[Expr], *, bug: str | None = None) -> bool:
    """True when the goal ``miter & axioms`` is unsat by rewriting (module docstring): the miter,
    rewritten by the axioms' equations with sums in AC normal form, is the constant false. False
    says nothing (the goal goes to the solver). ``bug``: a seeded defect (:data:`BUGS`), tests only."""
    nz = Normalizer(bug=bug)
    try:
        for ax in axioms:
            nz.add_rule(ax)
        return nz.normal_form(nz.rewrite(miter)) is FALSE
    except RecursionError:               # rules nested too deep to follow: leave it to the solver
        return False


__all__ = ["BUGS", "Normalizer", "discharge"]
