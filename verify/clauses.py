"""The clauses of a CHC proof (``verify.chc``): the product program of a mapping's two loops,
built from its :class:`mappings.base.ChcSpec`, and the validity check of one clause.

Shared by the checker (:mod:`verify.chc`), invariant inference (:mod:`verify.houdini`) and the
HORN export (:mod:`verify.horn`), which import it and not each other's modules.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from ila.expr import FALSE, TRUE, Expr, implies, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.smt import SmtEncoder, axiom_instances, check, to_smtlib2
from ila.unroll import execute
from ila.verdict import Status
from ila.walk import toposort
from mappings.base import ChcSpec, LoopSpec, Side

from .cells import LoopSystem, loop_system
from .fragments import reset_state
from .refine import conjuncts as _conjuncts


@dataclass
class Clause:
    name: str
    formula: Expr                       # must be valid
    parts: list["Clause"] | Callable[[], list["Clause"]] = field(default_factory=list)  # equivalent split,
    #                                                      tried if needed (a callable: built on demand)
    refine: tuple | None = None         # (loop variable uids, data variable uids) for verify.refine


@dataclass
class Built:
    systems: list[LoopSystem]
    starts: list[dict]
    invariants: list[Expr]
    posts: list[Expr]
    clauses: list[Clause]


def _pinned(inv: Expr, sysm: LoopSystem) -> dict[Expr, Expr]:
    """Loop variables the invariant pins to a value free of loop variables (``v = e`` conjuncts),
    e.g. configuration registers, which the loop never writes."""
    loop = {v.uid for v in sysm.vars}
    pins = {}
    for c in _conjuncts(inv):
        if c.op is Op.EQ and c.args[0].op is Op.VAR and c.args[0].uid in loop and c.args[0] not in pins:
            if not any(n.op is Op.VAR and n.uid in loop for n in toposort([c.args[1]])):
                if sysm.next_by_instr and all(nx.get(c.args[0]) is c.args[0] for nx in sysm.next_by_instr):
                    pins[c.args[0]] = c.args[1]
    return pins


MONOLITHIC_TIMEOUT = 20.0   # seconds for the one-query consecution before splitting it


def split_at_start(side: Side, prefix: str = "split.") -> tuple[list, list]:
    """Split a side's command stream, in its emitted order, at the command that starts the child
    loop (the first after which some child ILA may be valid: its valid is not false, which with
    symbolic sizes may be a term): (commands up to and including it, commands after it).
    ``{"wait_irq": True}`` commands are kept where they stand. Raises MappingError when no
    command starts a loop."""
    from ila.expr import FALSE
    from mappings.base import MappingError
    ila = side.ila
    real = [k for k, c in enumerate(side.commands) if not c.get("wait_irq")]
    u = execute(ila, [side.commands[k] for k in real], init={**reset_state(ila), **side.init}, prefix=prefix,
                run_children=False)
    children = [c for c in ila.walk() if c is not ila]
    for j, k in enumerate(real):
        st = u.states[u.marks[j]]
        env = {v: st[v.name] for v in ila.all_states()}
        if any(Rewriter(env).one(c.valid) is not FALSE for c in children):
            return side.commands[:k + 1], side.commands[k + 1:]
    raise MappingError(f"no command of the {ila.name} stream starts a child loop")


def loop_of(lp: LoopSpec) -> tuple[LoopSystem, dict]:
    """A side's loop system (cell-morphed child loop) and its start state: the model's state after
    the side's commands up to the start of the loop (in the emitted order), the tracked cells at
    their refinement-map values."""
    ila = lp.side.ila
    head, _ = split_at_start(lp.side)
    u = execute(ila, [c for c in head if not c.get("wait_irq")], init={**reset_state(ila), **lp.side.init},
                prefix=f"{lp.name}.", run_children=False)
    sysm = loop_system(ila, lp.side.memory, lp.addrs, start_state=u.final, tag=lp.name)
    start = {v: u.final[v.name] for v in sysm.states}
    start.update(zip(sysm.cells, lp.cell_init))
    return sysm, start


def build(spec: ChcSpec) -> Built:
    """Build the loop systems from the models and the clauses of the supplied invariants."""
    systems, starts, invs, posts, clauses = [], [], [], [], []
    for k, lp in enumerate(spec.loops):
        sysm, start = loop_of(lp)
        inv, post = land(sysm.consistency(), lp.invariant(sysm)), lp.post(sysm)
        at_start = Rewriter(start).one(inv)
        clauses.append(Clause(f"{lp.name}: initiation", implies(spec.pre, at_start)))
        # consecution: one query; if that is not quickly valid, split per instruction and per
        # conjunct of the invariant (many small queries, which scale to symbolic sizes better)
        parts = []
        pins = _pinned(inv, sysm)
        loop_uids = {v.uid for v in sysm.vars}
        data_uids = {v.uid for v in [*sysm.cells, *sysm.havocs, *lp.cell_init] if v.op is Op.VAR}
        for (iname, fire), nxt in zip(sysm.fires, sysm.next_by_instr):
            rw = Rewriter(nxt)

            def per_conjunct(iname=iname, fire=fire, rw=rw, pins=pins, inv=inv, lp=lp, refine=(loop_uids, data_uids)):
                sub = []
                for j, conj in enumerate(_conjuncts(inv)):
                    part = implies(land(spec.pre, inv, fire), rw.one(conj))
                    # under the invariant its pinned variables equal their values: substitute them
                    # (equivalent, and folds configuration arithmetic such as kh = cfg_5 & 0xffff)
                    part = implies(land(*[v.eq(e) for v, e in pins.items()]), Rewriter(pins).one(part))
                    sub.append(Clause(f"{lp.name}: consecution [{iname}] #{j}", part, refine=refine))
                return sub
            # per instruction first (one query), then per conjunct (built on demand) if that is
            # not quickly valid
            whole = implies(land(spec.pre, inv, fire), rw.one(inv))
            whole = implies(land(*[v.eq(e) for v, e in pins.items()]), Rewriter(pins).one(whole))
            parts.append(Clause(f"{lp.name}: consecution [{iname}]", whole, per_conjunct,
                                refine=(loop_uids, data_uids)))
        clauses.append(Clause(f"{lp.name}: consecution",
                              implies(land(spec.pre, inv, sysm.enabled), Rewriter(sysm.next).one(inv)), parts))
        for i in range(len(sysm.fires)):
            for j in range(i + 1, len(sysm.fires)):
                (ni, fi), (nj, fj) = sysm.fires[i], sysm.fires[j]
                clauses.append(Clause(f"{lp.name}: {ni} and {nj} exclusive", implies(land(spec.pre, inv, fi, fj), FALSE)))
        clauses.append(Clause(f"{lp.name}: exit", implies(land(spec.pre, inv, ~sysm.enabled), post)))
        systems.append(sysm)
        starts.append(start)
        invs.append(inv)
        posts.append(post)
    clauses.append(Clause("safety", implies(land(spec.pre, *posts), spec.final(systems))))
    return Built(systems, starts, invs, posts, clauses)


def _valid(clause: Clause, spec: ChcSpec, *, solver: str, timeout: float | None, inline_ufs: bool,
           emit_dir: str | None, label: str):
    goal = Rewriter().one(~clause.formula)
    if goal is FALSE:
        return Status.HOLDS, 0.0, ""
    apps = [n for n in toposort([goal]) if n.op is Op.APPLY]
    axioms = axiom_instances([goal], inline_ufs=inline_ufs) + ([] if inline_ufs else spec.axioms(apps))
    enc = SmtEncoder(inline_ufs=inline_ufs)
    fs = enc.encode_all([goal] + axioms)
    if emit_dir:
        safe = "".join(ch if ch.isalnum() else "_" for ch in clause.name)
        with open(os.path.join(emit_dir, f"{label}.{safe}.smt2"), "w") as fh:
            fh.write(to_smtlib2(enc, fs))
    res = check(enc, fs, solver=solver, timeout=timeout)
    return Status.of_negation(res.status), res.seconds, res.reason


def _valid_part(part: Clause, spec: ChcSpec, *, timeout: float | None, **kw):
    """A consecution part; when it has nonlinear address arithmetic (symbolic sizes) it is first
    rewritten by :mod:`verify.refine` (contextual pins, mixed-radix equalities: an equivalent
    clause)."""
    from . import refine as R
    if part.refine is None or not R.nonlinear_atoms(part.formula):
        return _valid(part, spec, timeout=timeout, **kw)
    loop_uids, data_uids = part.refine
    oracles: dict = {}
    try:
        f = _drop_implied(R.pin(part.formula, loop_uids))
        if f is TRUE:
            return Status.HOLDS, 0.0, ""
        f = R.radix(f, data_uids, oracles, solver=kw["solver"], timeout=ATOM_TIMEOUT)
    finally:
        for o in oracles.values():
            o.close()
    return _valid(Clause(part.name, f), spec, timeout=timeout, **kw)


def _drop_implied(f: Expr) -> Expr:
    """``H → G1 ∧ ... ∧ Gn`` without the conjuncts Gi that are themselves (syntactically) implied
    facts of H (an equivalent clause: H → Gi holds for them), TRUE when none is left."""
    from . import refine as R
    hyps, goal = R.split_implication(f)
    known = set(R.implied_facts(hyps))
    rest = [g for g in R.conjuncts(goal) if g not in known]
    if not rest:
        return TRUE
    return implies(land(*hyps), land(*rest))


def _leaves(parts: list[Clause], spec, timeout, kw, stop=None):
    """Check a list of clauses, descending into a clause's own parts when it is not quickly valid;
    yields (status, seconds, reason, name) for the clauses that decide. ``stop()`` true: the
    remaining clauses are yielded as skipped (Unknown) without a query."""
    for part in parts:
        if stop is not None and stop():
            yield Status.UNKNOWN, 0.0, "skipped after a failing clause", part
            continue
        if part.parts:
            st, sec, why = _valid_part(part, spec, timeout=min(timeout or PER_INSTR_TIMEOUT, PER_INSTR_TIMEOUT), **kw)
            if st is Status.HOLDS:
                yield st, sec, why, part
                continue
            yield from _leaves(part.parts() if callable(part.parts) else part.parts, spec, timeout, kw, stop)
        else:
            st, sec, why = _valid_part(part, spec, timeout=timeout, **kw)
            yield st, sec, why, part


PER_INSTR_TIMEOUT = 20.0  # seconds for one instruction's consecution before splitting it per conjunct (wall time: a shared machine)
ATOM_TIMEOUT = 2.0        # seconds per side-condition query in verify.refine
