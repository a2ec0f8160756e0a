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

Before any solver query, :func:`sample_filter` runs the cell-morphed loop itself on a few hundred
concrete instances at once (numpy lanes, :mod:`ila.compile_np`: parameters drawn at random and kept
when they satisfy the precondition, sizes bounded by the spec's ``small_sizes``, havoc values fresh
at every step) and drops every candidate that some reached state falsifies. Such a candidate is in
no inductive invariant that holds initially (every state of the trace is reachable from a state
satisfying the precondition), so Houdini's answer, the greatest inductive subset, is unchanged; the
solver only confirms what remains (with symbolic sizes, each refuting model costs a query with the
mixed-radix rewriting, so this turned ~400 queries into a handful).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
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
    sampled: dict = field(default_factory=dict)     # sample_filter's statistics (lanes, steps)


def _falsified(goal_hyp: Expr, cands: list[Expr], spec, *, solver, timeout, inline_ufs,
               refine: tuple | None = None) -> list[int] | None:
    """Indices of candidates false in a model of ``goal_hyp ∧ ¬∧cands``; [] if none exists (all are
    implied); None if the solver cannot tell. With ``refine`` (loop and data variable uids) the
    equalities the hypothesis implies are substituted first (:func:`verify.refine.context_pins`, an
    equivalence), candidates whose image is then true or a conjunct of the hypothesis are implied
    without the solver, and a query with nonlinear address arithmetic is rewritten by
    :mod:`verify.refine` (equivalent as a validity question; a model of the rewritten query could
    in principle drop a candidate the original would keep, which only weakens the result, and the
    result is re-checked anyway)."""
    from ila.expr import TRUE
    open_ = list(range(len(cands)))
    images = list(cands)
    if refine is not None:
        from . import refine as R
        hyps = R.conjuncts(goal_hyp)
        images = list(cands)
        for _ in range(4):          # substituting pins can make more implications fire: repeat
            pins = R.context_pins(hyps, refine[0])
            for d in R.implied_facts(hyps):    # loop variable = parameter (a configuration register)
                if d.op is Op.EQ:
                    a, b = d.args
                    if a.op is Op.VAR and a.uid in refine[0] and b.op is Op.VAR and b.uid not in refine[0] \
                            and a not in pins:
                        pins[a] = b
            if not pins:
                break
            rw = Rewriter(pins)
            hyps = [v.eq(e) for v, e in pins.items()] + R.conjuncts(land(*[rw.one(h) for h in hyps]))
            images = [rw.one(c) for c in images]
        goal_hyp = land(*hyps)
        known = set(R.implied_facts(hyps))
        open_ = [k for k, c in enumerate(images)
                 if not (c is TRUE or all(x in known for x in R.conjuncts(c)))]
        if not open_:
            return []
    concl = land(*[images[k] for k in open_])
    goal = Rewriter().one(land(goal_hyp, ~concl))
    if refine is not None:
        if R.nonlinear_atoms(goal):
            oracles: dict = {}
            try:
                f = R.radix(implies(goal_hyp, concl), refine[1], oracles, solver=solver, timeout=2.0)
            finally:
                for o in oracles.values():
                    o.close()
            hs, c2 = R.split_implication(f)
            goal = Rewriter().one(land(*hs, ~c2))
    apps = [n for n in toposort([goal]) if n.op is Op.APPLY]
    axioms = axiom_instances([goal], inline_ufs=inline_ufs) + ([] if inline_ufs else spec.axioms(apps))
    enc = SmtEncoder(inline_ufs=inline_ufs)
    fs = enc.encode_all([goal] + axioms)
    want = [enc.encode(images[k]) for k in open_]
    res = check(enc, fs, solver=solver, timeout=timeout, want=want)
    if res.status == "unsat":
        return []
    if res.status != "sat":
        return None
    return [k for k, w in zip(open_, want) if not res.values.get(w, True)]


def _params_of(sysm, start: dict, spec, lp) -> list[Expr]:
    """The rigid parameters: free variables of the precondition, the start state, the cells' start
    values and the transition that are neither loop variables nor havocs."""
    loop = {v.uid for v in sysm.vars} | {h.uid for h in sysm.havocs}
    roots = [spec.pre, sysm.enabled, *start.values(), *lp.cell_init, *sysm.next.values()]
    return [n for n in toposort(roots) if n.op is Op.VAR and n.uid not in loop]


def _draw(rng, sort, n: int, bound: "np.ndarray | None" = None):
    """``n`` random values of ``sort``: log-uniform bit lengths (small values are as likely as
    large ones), at most ``bound`` (per lane) when given."""
    import numpy as np
    if sort.is_bool:
        return rng.integers(0, 2, n).astype(bool)
    w = sort.width
    if w > 64:
        raise ValueError("sample_filter: values wider than 64 bits")
    bits = rng.integers(0, w + 1, n)
    raw = rng.integers(0, 1 << 62, n, dtype=np.uint64) | (rng.integers(0, 4, n, dtype=np.uint64) << np.uint64(62))
    vals = np.where(bits >= 64, raw, raw & ((np.uint64(1) << bits.astype(np.uint64)) - np.uint64(1)))
    if bound is not None:
        vals = vals % (bound.astype(np.uint64) + np.uint64(1))
    return vals.astype(np.uint64)


@contextmanager
def _hashed_bodies(exprs):
    """Give every uninterpreted function without a numpy body (e.g. the IR's abstract mean) a
    fixed pseudo-random one for the duration (an arbitrary interpretation: states reached under
    it can only drop candidates, never keep a wrong one)."""
    import numpy as np
    funcs = {n.payload for n in toposort(list(exprs)) if n.op is Op.APPLY and n.payload.body is None}

    def body_of(f):
        w = f.range.width

        def body(*args):
            h = np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(sum(map(ord, f.name)) & 0xFFFFFFFF)
            with np.errstate(over="ignore"):
                for a in args:
                    h = (h ^ np.asarray(a, dtype=np.uint64)) * np.uint64(0xBF58476D1CE4E5B9)
                    h ^= h >> np.uint64(31)
            return h & np.uint64((1 << w) - 1)
        return body
    try:
        for f in funcs:
            f.body = body_of(f)
        yield
    finally:
        for f in funcs:
            f.body = None


def loads_as_functions(roots: list[Expr]) -> list[Expr] | None:
    """``roots`` with every load ``m[a]`` from an array variable ``m`` (a memory the loop only reads)
    replaced by ``f_m(a)``, ``f_m`` an uninterpreted function per array (one pass, so equal loads
    stay equal across the roots): the form :func:`sample_filter` runs, where each function gets a
    pseudo-random body (an arbitrary array content). None when a load from another memory term
    (a store chain) remains."""
    from ila.expr import FuncRef
    rw = Rewriter()
    funcs: dict = {}
    memo: dict = {}
    for n in toposort(list(roots)):
        if n.sort.is_mem:
            if n.op is not Op.VAR:
                return None
            memo[n.uid] = n
        elif n.op is Op.LOAD:
            m = n.args[0]
            f = funcs.get(m.uid)
            if f is None:
                f = funcs[m.uid] = FuncRef(f"sampled.{m.name}", n.sort, [n.args[1].sort])
            memo[n.uid] = f(memo[n.args[1].uid])
        elif n.args:
            memo[n.uid] = rw.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
        else:
            memo[n.uid] = n
    return [memo[r.uid] for r in roots]


def sample_filter(spec, lp, sysm, start: dict, cands: list[Expr], *, lanes: int = 256, max_steps: int = 1000,
                  seed: int = 0) -> tuple[list[Expr], list[Expr], dict]:
    """Candidates not falsified by any state of concrete runs of the loop system (module
    docstring): (kept, dropped, stats). Parameters are drawn per lane (sizes at most the largest
    bound of ``spec.small_sizes`` for symbolic sizes) and kept when ``spec.pre`` holds; each run
    stops when no lane's loop is enabled or after ``max_steps`` steps. No accepted lane: nothing
    is dropped."""
    import numpy as np
    from ila.compile_np import compile_exprs
    from ila.errors import SimulationError
    rng = np.random.default_rng(seed)
    params = _params_of(sysm, start, spec, lp)
    sizes = {v.uid: k for k, v in enumerate(getattr(spec, "size_vars", []) or [])}
    bounds = [b for b in (getattr(spec, "small_sizes", []) or []) if b is not None]
    stats = {"lanes": 0, "steps": 0}
    if any((not p.sort.is_bool and p.sort.width > 64) for p in params + sysm.vars + sysm.havocs):
        return cands, [], stats
    roots = [spec.pre, sysm.enabled, *sysm.next.values(), *cands, *start.values()]
    with _hashed_bodies(roots):
        try:
            f_pre = compile_exprs([spec.pre], vectorize=False)
            S: dict = {}
            got = 0
            for _ in range(40):
                n = 4096
                env = {}
                pick = rng.integers(0, len(bounds), n) if bounds else None
                for p in params:
                    b = None
                    if p.uid in sizes and bounds:
                        b = np.array([bd[sizes[p.uid]] for bd in bounds], dtype=np.uint64)[pick]
                    env[p.name] = _draw(rng, p.sort, n, b)
                ok = np.asarray(f_pre(env, {})[0], dtype=bool)
                ok = np.broadcast_to(ok, (n,))
                if ok.any():
                    for p in params:
                        S.setdefault(p.name, []).append(env[p.name][ok])
                    got += int(ok.sum())
                if got >= lanes:
                    break
            if got == 0:
                return cands, [], stats
            S = {k: np.concatenate(v)[:lanes] for k, v in S.items()}
            n = min(got, lanes)
            stats["lanes"] = n
            names = list(start)
            f_start = compile_exprs([start[v] for v in names], vectorize=False)
            def lanes_of(v, val):
                dt = bool if v.sort.is_bool else np.uint64
                return np.broadcast_to(np.asarray(val, dtype=dt), (n,)).copy()
            for v, val in zip(names, f_start(S, {})):
                S[v.name] = lanes_of(v, val)
            # registers no instruction writes keep their start values: substituted, so that the
            # instructions they disable (another mode) fold away instead of being evaluated
            cfg = {v: start[v] for v in sysm.states if v in start and all(u.get(v, v) is v for u in sysm.next_by_instr)}
            fold = Rewriter(cfg)
            order = [v for v in sysm.vars if v not in cfg]
            f_step = compile_exprs([fold.one(sysm.enabled)] + [fold.one(sysm.next[v]) for v in order],
                                   vectorize=False)
            alive = np.ones(len(cands), dtype=bool)
            known = {v.uid for v in sysm.vars} | {p.uid for p in params}
            free = [x for x in toposort(cands) if x.op is Op.VAR and x.uid not in known]
            pools = {h.name: _draw(rng, h.sort, 64 * n).reshape(64, n) for h in [*sysm.havocs, *free]}
            live = {"idx": np.arange(len(cands)), "fn": compile_exprs(cands, vectorize=False) if cands else None}

            def observe(step):
                if live["fn"] is None:
                    return
                for h in free:              # a candidate naming a havoc holds for all its values
                    S[h.name] = pools[h.name][(step * 7 + 3) % 64]
                for k, val in zip(live["idx"], live["fn"](S, {})):
                    if alive[k] and not (val if isinstance(val, (bool, np.bool_)) else val.all()):
                        alive[k] = False
                still = np.flatnonzero(alive)
                if len(still) < 0.75 * len(live["idx"]):    # recompile for the survivors only
                    live["idx"] = still
                    live["fn"] = compile_exprs([cands[k] for k in still], vectorize=False) if len(still) else None
            observe(0)
            for step in range(max_steps):
                for h in sysm.havocs:
                    S[h.name] = pools[h.name][step % 64]
                out = f_step(S, {})
                en = np.broadcast_to(np.asarray(out[0], dtype=bool), (n,))
                if not en.any():
                    break
                for v, val in zip(order, out[1:]):
                    S[v.name] = lanes_of(v, val)
                stats["steps"] = step + 1
                if step < 128 or step % 4 == 3:     # later states are sampled (a filter: sound either way)
                    observe(step + 1)
            observe(stats["steps"] + 1)
        except SimulationError:
            return cands, [], stats
    kept = [c for k, c in enumerate(cands) if alive[k]]
    return kept, [c for k, c in enumerate(cands) if not alive[k]], stats


class InferenceTimeout(Exception):
    """Invariant inference ran past its deadline (the checker reports Unknown)."""


def infer(spec, lp, candidates: list[Expr], *, solver: str = "z3", timeout: float | None = 30.0,
          inline_ufs: bool = False, deadline: float | None = None, sample: bool = True) -> Inference:
    """Houdini over ``candidates`` (expressions over the loop system of ``lp``). ``timeout``
    bounds each solver call (seconds); ``deadline`` (a ``time.perf_counter()`` value) the whole
    inference: past it, :class:`InferenceTimeout` is raised. ``sample``: drop the candidates
    concrete runs falsify first (:func:`sample_filter`; same result, fewer queries)."""
    from .clauses import _valid_part, Clause, loop_of
    t0 = time.perf_counter()
    sysm, start = loop_of(lp)
    seen, cands = set(), []
    for c in candidates:
        if c.uid not in seen:
            seen.add(c.uid)
            cands.append(c)
    out = Inference(kept=[])
    if sample:
        cands, gone, out.sampled = sample_filter(spec, lp, sysm, start, cands)
        out.dropped.extend(gone)
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
            if bad is None:                # undecided: halves, down to single candidates (dropped
                keep = []                  # when still undecided: inference only weakens)

                def halves(group):
                    if deadline is not None and time.perf_counter() > deadline:
                        raise InferenceTimeout(f"invariant inference passed its deadline after {out.queries} queries")
                    out.queries += 1
                    if len(group) == 1:
                        st, _, _ = _valid_part(Clause("houdini", implies(hyp(), image(group[0])), refine=refine),
                                               spec, emit_dir=None, label="houdini", **kw)
                        (keep if st is Status.HOLDS else out.dropped).append(group[0])
                        return
                    got = _falsified(hyp(), [image(c) for c in group], spec, refine=refine, **kw)
                    if got == []:
                        keep.extend(group)
                    elif got is None:
                        halves(group[:len(group) // 2])
                        halves(group[len(group) // 2:])
                    else:
                        out.dropped.extend(group[k] for k in got)
                        keep.extend(c for k, c in enumerate(group) if k not in set(got))
                halves(cands[:len(cands) // 2])
                halves(cands[len(cands) // 2:])
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
