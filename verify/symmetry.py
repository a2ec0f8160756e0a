"""``--method bmc --symmetry``: per-output BMC with symmetry reduction (issue 26, item 3).

A setup that asks for one solver query per output cell (``split_outputs``, :mod:`verify.bmc`)
often has the same query for every cell up to the names of its data: output ``y[t, o]`` of a
FlexASR linear layer is the same term over ``x[t, :]``, ``w[o, :]`` and ``b[o]`` as ``y[0, 0]`` is
over ``x[0, :]``, ``w[0, :]`` and ``b[0]``. This checker executes both fragments once
(:func:`verify.fragments.execute_setup`, the same symbolic execution of the emitted stream as
``verify.bmc``), builds every output's goal (its miter and the axiom instances of its cone,
exactly what ``verify.bmc`` sends to the solver), and sends to the solver only the first goal of
each *alpha-equivalence class*; every other goal is checked, syntactically, to be a bijective
renaming of the free variables of a goal already proved unsat.

Soundness. Two goals with equal :func:`alpha_key` are the same formula up to a bijection between
their free variables (data symbols, initial memories): the key lists the goal's DAG in topological
order, each node by its operator, sort, payload and argument positions, with a variable's name
replaced by the rank of its first occurrence, so equal keys define the node-by-node isomorphism
(constants, operator payloads and uninterpreted function symbols are kept as they are, not
renamed). Satisfiability is invariant under a bijective renaming of free variables, so an unsat
representative makes every goal of its class unsat. Keys are compared in full (dictionary
equality of the tuples), not by a hash alone. What stays per output is what the reduction cannot
share: the symbolic execution, each goal's construction and its comparison with its class.

Before a goal is classed it is offered to :func:`verify.normalize.discharge`: its axiom
equations as rewrite rules and its sums in AC normal form. A goal that rewrites to false is unsat
without the solver (the linear layer's goals do: both sides are the same multiset of products, in
time linear in the goal, where z3 needed minutes and gigabytes at I = 672 and gave no verdict at
I = 1152); the others are classed as below.

The verdict states the classes: ``N output cells equal for all data (K solver calls, one per
class of alpha-equivalent goals; the other N - K goals are variable renamings of a proved one)``.
A counterexample is found and replayed exactly as ``verify.bmc`` replays it (the goal that is sat
is a real output's goal). The ledger records the verdict as method ``bmc`` with checker
``verify.symmetry`` (its digest covers this module and ``verify.bmc``).

The reduction's seeded bug is :data:`BUGS` ``"unchecked"``: the symmetry assumed instead of
checked (every goal put in the first goal's class, as a reduction that trusts the address map's
regularity would). With it, a read-back that swaps outputs ``y[0, 1]`` and ``y[0, 2]`` is "proved"
from the correct ``y[0, 0]``; with the check, the goal of ``y[0, 1]`` is in a class of its own and
the solver refutes it (``tests/test_verify_symmetry.py``, with simulation before SAT off so that
only the solver and the reduction decide).
"""
from __future__ import annotations

import os
import time

from ila.errors import LoopBoundError
from ila.expr import Expr
from ila.ops import Op
from ila.smt import SmtEncoder
from ila.verdict import Counterexample, Proved, Unknown
from ila.walk import toposort

from . import bmc
from .fragments import HangError, ProofSetup
from .normalize import discharge

BUGS = ("unchecked",)


def alpha_key(roots: list[Expr], *, bug: str | None = None) -> tuple:
    """The goal ``roots`` (a miter and its axiom instances) up to the names of its free variables:
    a tuple with one entry per DAG node in topological order, ``(op, sort, payload, argument
    positions)``, where a variable's payload is the rank of its first occurrence. Equal keys <=>
    the goals are equal after a bijective renaming of variables (module docstring). ``bug``: a
    seeded defect of the key (:data:`BUGS`), for the tests only."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown seeded bug {bug!r} of the alpha key (known: {', '.join(BUGS)})")
    if bug == "unchecked":
        return ()
    pos: dict[int, int] = {}
    ranks: dict[int, int] = {}
    out = []
    for n in toposort(roots):
        if n.op is Op.VAR:
            payload = ("var", ranks.setdefault(n.uid, len(ranks)))
        else:
            payload = n.payload
        out.append((n.op, n.sort, payload, tuple(pos[a.uid] for a in n.args)))
        pos[n.uid] = len(out) - 1
    return tuple(out), tuple(pos[r.uid] for r in roots)


def check_bmc_symmetric(ps: ProofSetup, *, solver: str = "z3", timeout: float | None = None,
                        inline_ufs: bool = False, emit_smt: str | None = None, label: str = "mapping",
                        scope: str = "", falsify: bool = True, bug: str | None = None,
                        rewrite: bool = True) -> Proved | Counterexample | Unknown:
    """:func:`verify.bmc.check_bmc` with one solver call per class of alpha-equivalent output goals
    (module docstring); the same verdicts (a timeout over the solver calls together is Unknown, a
    sat goal a replayed Counterexample). A setup without ``split_outputs`` (one goal for all
    outputs) has nothing to reduce: it is checked by ``verify.bmc`` itself. ``emit_smt``: a directory
    for the SMT-LIB2 text of each goal sent to the solver. ``falsify``: simulation
    on random data before the first solver call, as ``verify.bmc`` does (False: every class goes to
    the solver). ``bug``: a seeded defect of the reduction (:data:`BUGS`), for the tests only.
    ``rewrite``: first try to discharge each goal by rewriting (:func:`verify.normalize.discharge`:
    its axiom equations as rules, sums in AC normal form); a discharged goal needs neither the
    solver nor a class (False: every goal is classed, as the tests of the reduction need)."""
    if not getattr(ps, "split_outputs", False):
        return bmc.check_bmc(ps, solver=solver, timeout=timeout, inline_ufs=inline_ufs, emit_smt=emit_smt,
                             label=label, scope=scope)
    t0 = time.perf_counter()
    bound = bmc._child_bound_exceeded(ps)
    if bound is not None:
        return Unknown("bmc", solver, time.perf_counter() - t0, reason=bound)
    try:
        ex, goals = bmc._goals(ps, inline_ufs)
    except HangError as hang:
        return bmc._hang(ps, hang, solver, t0)
    except LoopBoundError as exc:
        return Unknown("bmc", solver, time.perf_counter() - t0, reason=str(exc))
    enc = SmtEncoder(inline_ufs=inline_ufs)
    proved: set = set()                  # keys of the goals the solver found unsat
    n = calls = rewritten = 0
    spent = 0.0
    for n, (miter, axioms) in enumerate(goals, 1):
        if rewrite and discharge(miter, axioms):
            rewritten += 1
            continue
        key = alpha_key([miter] + axioms, bug=bug)
        if key in proved:
            continue
        if falsify and calls == 0 and (not any(x.op is Op.APPLY for x in toposort([miter] + axioms)) or bmc._bodies_known(ps)):
            v = bmc._random_falsify(ps, solver, t0)
            if v is not None:
                return v
        left = None if timeout is None else timeout - spent
        if left is not None and left <= 0:
            return Unknown("bmc", solver, time.perf_counter() - t0,
                           reason=f"timeout after {n - 1} output goals ({calls} solver calls)")
        path = None
        if emit_smt:                     # the solved goals only (a skipped goal is a renaming of one)
            os.makedirs(emit_smt, exist_ok=True)
            path = os.path.join(emit_smt, f"{label}.bmc.out{n - 1}.smt2")
        t1 = time.perf_counter()
        v = bmc._solve(ps, ex, enc, miter, axioms, solver=solver, timeout=left, emit=path, label=label, t0=t0)
        spent += time.perf_counter() - t1
        calls += 1
        if v is not None:
            return v
        proved.add(key)
    return _verdict(ps, ex, enc, n, calls, rewritten, solver=solver, timeout=timeout, spent=spent, t0=t0,
                    inline_ufs=inline_ufs, scope=scope)


def _verdict(ps, ex, enc, n: int, calls: int, rewritten: int, *, solver, timeout, spent, t0, inline_ufs, scope):
    """The declared refinement map checked as ``verify.bmc`` checks it, then the Proved verdict
    stating the classes and the claims (``verify.scope``)."""
    note = ""
    declared = getattr(ps, "declared", None)
    if declared is not None:
        left = None if timeout is None else max(timeout - spent, 1.0)
        v = bmc._check_declared(ps, ex, enc, solver=solver, timeout=left, t0=t0, inline_ufs=inline_ufs)
        if v is not None:
            return v
        note = (f"; declared refinement map checked ({', '.join(declared.tensors) or 'declared tensors'}: "
                f"{len(declared.inputs)} inputs at the loop start, {len(declared.outputs)} outputs at the end)")
    for name, what in (("reference", "equal to the declared numerics term"),
                       ("numerics_note", "the IR side computes in the accelerator's numerics")):
        term = getattr(ps, name, None)
        if term is not None:
            note += f"; {what}: {term.describe}"
            if term.gap is not None:
                note += f"; that vs the float32 IR operator, by simulation: {term.gap()}"
    from .scope import describe
    exact = inline_ufs or not ps.funcs
    covers = bmc.claims_of(ps) + (f"numerics-{'exact' if exact else 'uf'}",)
    what = describe(covers, scope) if scope else ""
    parts = [f"{rewritten} goals discharged by rewriting with their axiom equations and sums in AC normal "
             f"form, without the solver"] if rewritten else []
    if calls or not rewritten:
        parts.append(f"{calls} solver calls, one per class of alpha-equivalent goals; the other "
                     f"{n - calls - rewritten} goals are variable renamings of a proved one, checked syntactically")
    return Proved("bmc", solver, time.perf_counter() - t0,
                  f"{len(ps.outputs)} output cells equal for all data ({'; '.join(parts)}){note}"
                  + (f"; {what}" if what else ""), scope=scope, covers=covers)


__all__ = ["BUGS", "alpha_key", "check_bmc_symmetric"]
