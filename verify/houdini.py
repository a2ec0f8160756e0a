"""Invariant inference: the largest inductive subset of candidate conjuncts (Houdini).

After Flanagan and Leino ("Houdini, an annotation assistant for ESC/Java", FME 2001): start from a
set of candidate conjuncts for a loop (generated from templates, :mod:`verify.templates`), drop
those not established by the start state, then repeatedly drop those not preserved by some
instruction assuming all remaining ones, until nothing changes. What remains is the strongest
invariant expressible as a subset of the candidates (the greatest fixpoint), and is inductive by
construction; the CHC checker then checks it clause by clause like a supplied one.

Each check is one query per instruction: ``pre ∧ inv ∧ fire ∧ ¬(c1' ∧ ... ∧ cn')``; a model
refutes every candidate whose next-state value is false in it, so a round costs a few queries, not
one per candidate. A query the solver cannot decide falls back to per-candidate clauses (a
candidate that is not shown preserved is dropped: inference only ever weakens).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ila.expr import Expr, implies, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.smt import SmtEncoder, axiom_instances, check
from ila.verdict import Status
from ila.walk import toposort


@dataclass
class Inference:
    kept: list[Expr]
    dropped: list[Expr] = field(default_factory=list)
    queries: int = 0
    seconds: float = 0.0


def _falsified(goal_hyp: Expr, cands: list[Expr], spec, *, solver, timeout, inline_ufs,
               refine: tuple | None = None) -> list[int] | None:
    """Indices of candidates false in a model of ``goal_hyp ∧ ¬∧cands``; [] if none exists (all are
    implied); None if the solver cannot tell. With ``refine`` (loop and data variable uids) a query
    with nonlinear address arithmetic is first rewritten by :mod:`verify.refine` (equivalent as a
    validity question; a model of the rewritten query could in principle drop a candidate the
    original would keep, which only weakens the result, and the result is re-checked anyway)."""
    goal = Rewriter().one(land(goal_hyp, ~land(*cands)))
    if refine is not None:
        from . import refine as R
        if R.nonlinear_atoms(goal):
            oracles: dict = {}
            try:
                f = R.radix(R.pin(implies(goal_hyp, land(*cands)), refine[0]), refine[1], oracles, solver=solver,
                            timeout=2.0)
            finally:
                for o in oracles.values():
                    o.close()
            hyps, concl = R.split_implication(f)
            goal = Rewriter().one(land(*hyps, ~concl))
    apps = [n for n in toposort([goal]) if n.op is Op.APPLY]
    axioms = axiom_instances([goal], inline_ufs=inline_ufs) + ([] if inline_ufs else spec.axioms(apps))
    enc = SmtEncoder(inline_ufs=inline_ufs)
    fs = enc.encode_all([goal] + axioms)
    want = [enc.encode(c) for c in cands]
    res = check(enc, fs, solver=solver, timeout=timeout, want=want)
    if res.status == "unsat":
        return []
    if res.status != "sat":
        return None
    return [k for k, w in enumerate(want) if not res.values.get(w, True)]


class InferenceTimeout(Exception):
    """Invariant inference ran past its deadline (the checker reports Unknown)."""


def infer(spec, lp, candidates: list[Expr], *, solver: str = "z3", timeout: float | None = 30.0,
          inline_ufs: bool = False, deadline: float | None = None) -> Inference:
    """Houdini over ``candidates`` (expressions over the loop system of ``lp``). ``timeout``
    bounds each solver call (seconds); ``deadline`` (a ``time.perf_counter()`` value) the whole
    inference: past it, :class:`InferenceTimeout` is raised."""
    from .clauses import _valid_part, Clause, loop_of
    t0 = time.perf_counter()
    sysm, start = loop_of(lp)
    seen, cands = set(), []
    for c in candidates:
        if c.uid not in seen:
            seen.add(c.uid)
            cands.append(c)
    out = Inference(kept=[])
    kw = dict(solver=solver, timeout=timeout, inline_ufs=inline_ufs)

    def prune(hyp: Expr, image) -> bool:
        """Drop candidates whose image is not implied by ``hyp``; True if any was dropped."""
        nonlocal cands
        dropped_any = False
        while cands:
            if deadline is not None and time.perf_counter() > deadline:
                raise InferenceTimeout(f"invariant inference passed its deadline after {out.queries} queries")
            out.queries += 1
            bad = _falsified(hyp(), [image(c) for c in cands], spec, refine=refine, **kw)
            if bad == []:
                return dropped_any
            if bad is None:                # undecided: per-candidate clauses
                keep = []
                for c in cands:
                    out.queries += 1
                    st, _, _ = _valid_part(Clause("houdini", implies(hyp(), image(c)), refine=refine), spec,
                                           emit_dir=None, label="houdini", **kw)
                    (keep if st is Status.HOLDS else out.dropped).append(c)
                changed = len(keep) != len(cands)
                cands = keep
                return dropped_any or changed
            if not bad:                    # sat, but no candidate false in the model: cannot happen
                raise RuntimeError("Houdini: model falsifies no candidate")
            out.dropped.extend(cands[k] for k in bad)
            cands = [c for k, c in enumerate(cands) if k not in set(bad)]
            dropped_any = True
        return dropped_any

    refine = ({v.uid for v in sysm.vars}, {v.uid for v in [*sysm.cells, *sysm.havocs, *lp.cell_init] if v.op is Op.VAR})
    at_start = Rewriter(start)
    prune(lambda: spec.pre, at_start.one)
    consistency = sysm.consistency()
    changed = True
    while changed and cands:
        changed = False
        for (iname, fire), nxt in zip(sysm.fires, sysm.next_by_instr):
            rw = Rewriter(nxt)
            if prune(lambda: land(spec.pre, consistency, *cands, fire), rw.one):
                changed = True
    out.kept = cands
    out.seconds = time.perf_counter() - t0
    return out


def infer_invariants(spec, *, solver: str = "z3", timeout: float | None = 30.0, inline_ufs: bool = False,
                     deadline: float | None = None):
    """``spec`` with every loop whose ``invariant`` is None given the Houdini invariant over the
    generic templates (:func:`verify.templates.loop_candidates`) and the loop's relational
    ``candidates``; returns (new spec, one note per inferred loop)."""
    import dataclasses
    from .clauses import loop_of
    from .templates import loop_candidates
    loops, notes = [], []
    for lp in spec.loops:
        if lp.invariant is not None:
            loops.append(lp)
            continue
        sysm, start = loop_of(lp)
        rel = list(lp.candidates(sysm)) if lp.candidates else []
        cands = loop_candidates(sysm, start) + rel
        res = infer(spec, lp, cands, solver=solver, timeout=timeout, inline_ufs=inline_ufs, deadline=deadline)
        kept = set(res.kept)
        lost = [c for c in rel if c not in kept]
        notes.append(f"{lp.name}: inferred {len(res.kept)} of {len(cands)} candidate conjuncts in "
                     f"{res.seconds:.1f} s ({res.queries} queries)"
                     + (f"; relational candidates not inductive: {len(lost)}" if lost else ""))
        loops.append(dataclasses.replace(lp, invariant=lambda s, k=tuple(res.kept): land(*k)))
    return dataclasses.replace(spec, loops=loops), notes
