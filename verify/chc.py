"""``--method chc``: the product program of the two loop nests as constrained Horn clauses.

Each side of a mapping runs a straight-line prefix (configuration and start commands, executed
symbolically from the model) and then its child-ILA loop. The loops are made array-free by cell
morphing (:mod:`verify.cells`): the state is the model's scalar states plus the tracked memory
cells at symbolic addresses (an arbitrary output cell and the input cells it reads, through the
refinement map). The product program runs the IR loop, then the accelerator loop (sequential
composition; the second predicate carries the first loop's final cells, so its invariant relates
the two programs' states), and the final clause compares the tracked output cells.

Clauses, over rigid parameters p (tracked indices, input values, and sizes when symbolic)::

    pre(p) ∧ s = start(p)                 → Inv_k(s, p)          (initiation)
    Inv_k(s, p) ∧ enabled_k(s) ∧ s' = T_k(s) → Inv_k(s', p)       (consecution)
    Inv_k(s, p) ∧ fire_i(s) ∧ fire_j(s)    → false               (one instruction at a time)
    Inv_k(s, p) ∧ ¬enabled_k(s)            → Post_k(s, p)         (exit)
    pre(p) ∧ Post_IR ∧ Post_ACC            → cell_IR = cell_ACC   (safety)

:func:`check_chc` checks the relational invariants supplied by the mapping clause by clause with
any pysmt solver (quantifier-free bit-vector queries: validity of each clause), and hands the
same clauses with unknown predicates to z3's Spacer engine (``solve_spacer``). A clause that is
not valid is not a proof: the remaining clauses are skipped and the mapping is searched for a
counterexample, which is replayed in the simulators -- at a fixed shape by BMC there (then by
simulation); for all sizes at the shapes where a failing clause fails (solved for the sizes under
the spec's small bounds, then without a bound and minimised, so a bug that shows only near the
largest sizes the side conditions allow is found too), then the mapping's ``cex_shapes``: by
by BMC where the shape is small enough to unroll (:data:`BMC_CELLS`), else by simulation
(:func:`simulate_shape`: random inputs through the compiler-IR ILA and the accelerator's ILA
simulators, beyond the tolerance).
"""
from __future__ import annotations

import os
import time

import numpy as np

from ila.expr import Expr
from ila.ops import Op
from ila.simplify import Rewriter
from ila.unroll import execute
from ila.verdict import Counterexample, Proved, Status, Unknown
from mappings.base import ChcSpec, LoopSpec, Side  # noqa: F401  (re-exported)

from .clauses import MONOLITHIC_TIMEOUT, _leaves, _valid, build, split_at_start
from .clauses import _valid_part, loop_of  # noqa: F401  (re-exported for tests and tools)
from .countershapes import _maximise, _minimise, countershapes  # noqa: F401  (re-exported)
from .fragments import reset_state


def check_invariants(spec: ChcSpec, *, solver: str = "z3", timeout: float | None = None, inline_ufs: bool = False,
                     emit_dir: str | None = None, label: str = "mapping", failed: list | None = None,
                     stop_on_failure: bool = False) -> tuple[Status, list[tuple[str, Status, float, str]]]:
    """Check every clause of the supplied invariants; return (overall Status, rows of (clause,
    Status, seconds, note)). ``failed``, if given, collects the failing clauses (for a counter-model).
    ``stop_on_failure``: once a clause fails (the invariants cannot prove the mapping), the
    remaining clauses are reported as skipped instead of checked."""
    built = build(spec)
    rows = []
    overall = Status.HOLDS
    kw = dict(solver=solver, inline_ufs=inline_ufs, emit_dir=emit_dir, label=label)
    for c in built.clauses:
        if stop_on_failure and overall is Status.FAILS:
            rows.append((c.name, Status.UNKNOWN, 0.0, "skipped after a failing clause"))
            continue
        if c.parts and spec.scope == "symbolic":      # monolithic consecution is hopeless there
            status, secs, reason = Status.UNKNOWN, 0.0, "skipped"
        else:
            first = timeout if not c.parts else min(timeout or MONOLITHIC_TIMEOUT, MONOLITHIC_TIMEOUT)
            status, secs, reason = _valid(c, spec, timeout=first, **kw)
        if status is not Status.HOLDS and c.parts:
            stop = (lambda: overall is Status.FAILS) if stop_on_failure else None
            for st, sec, why, part in _leaves(c.parts, spec, timeout, kw, stop):
                rows.append((part.name, st, sec, why))
                overall = overall.worst(st)
                if st is Status.FAILS and failed is not None:
                    failed.append(part)
            continue
        rows.append((c.name, status, secs, reason))
        overall = overall.worst(status)
        if status is Status.FAILS and failed is not None:
            failed.append(c)
    return overall, rows


def check_placement(lp: LoopSpec) -> list[str]:
    """Stream lemma 1 (fixed shapes): the commands up to the start of the loop, executed in their
    emitted order without the loop, leave every input element at the address the declared
    refinement map gives (``lp.placed``). An input stored after the start, a store with permuted
    bytes or at a permuted address, are violations. Returns them (empty: the lemma holds for all
    data)."""
    from ila.expr import bv_const
    ila = lp.side.ila
    head, _ = split_at_start(lp.side, prefix="lemma.")
    u = execute(ila, [c for c in head if not c.get("wait_irq")], init={**reset_state(ila), **lp.side.init},
                prefix="lemma.", run_children=False)
    mem = u.final[lp.side.memory]
    rw = Rewriter()
    bad = []
    for k, (datum, addr) in enumerate(lp.placed):
        got = rw.load(mem, bv_const(addr, mem.sort.addr_width))
        if got is not datum:
            bad.append(f"{lp.name} input {k} ({datum.short()}) is not at {addr:#x} when the loop starts: "
                       f"that cell holds {got.short()}")
            if len(bad) >= 3:
                break
    return bad


def check_readback(lp: LoopSpec) -> list[str]:
    """Stream lemma 2 (fixed shapes): the commands after the start of the loop, executed from any
    state the loop can leave (every state a child instruction updates replaced by a fresh symbol),
    write nothing to the tensor memory and read each output element, through the driver's own
    read-back (``lp.read_map['readback']``), from the address the declared refinement map gives.
    Returns the violations (empty: the lemma holds)."""
    from ila.expr import bv_const
    from ila.unroll import symbol
    from .fragments import execute_side
    ila = lp.side.ila
    head, tail = split_at_start(lp.side, prefix="lemma.")
    u = execute(ila, [c for c in head if not c.get("wait_irq")], init={**reset_state(ila), **lp.side.init},
                prefix="lemma.", run_children=False)
    touched = {v.name for c in ila.walk() if c is not ila for ins in c.instrs for v in ins.updates}
    after = {name: (symbol(f"after.{name}", u.final[name].sort) if name in touched else val)
             for name, val in u.final.items()}
    mem = after[lp.side.memory]
    if not isinstance(mem, Expr) or mem.op is not Op.VAR:
        mem = after[lp.side.memory] = symbol(f"after.{lp.side.memory}", u.final[lp.side.memory].sort)
    v, reads = execute_side(Side(ila, tail, lp.side.memory, port=lp.side.port), prefix="after.", run_children=False,
                            init=after)
    bad = []
    if v.final[lp.side.memory] is not mem:
        bad.append(f"a command after the start of the {lp.name} loop writes its tensor memory")
    flat = np.asarray(lp.read_map["readback"](reads), dtype=object).ravel()
    rw = Rewriter()
    for k, addr in lp.read_map["cells"]:
        want = rw.load(mem, bv_const(addr, mem.sort.addr_width))
        got = rw.one(flat[k]) if k < flat.size else None
        if got is not want:
            bad.append(f"read-back element {k} is {got.short() if got is not None else 'missing'}, "
                       f"not the cell at {addr:#x}")
            if len(bad) >= 3:
                break
    return bad


def stream_lemmas(spec: ChcSpec) -> list[tuple[str, Status, float, str]]:
    """Rows (name, Status, seconds, note) of the stream lemmas of every loop that declares them."""
    rows = []
    for lp in spec.loops:
        for what, check, needs in (("inputs placed before the start, as declared", check_placement, lp.placed),
                                   ("read-back as declared, no writes after the start", check_readback, lp.read_map)):
            if needs is None:
                continue
            t1 = time.perf_counter()
            bad = check(lp)
            rows.append((f"{lp.name} stream: {what}", Status.FAILS if bad else Status.HOLDS,
                         time.perf_counter() - t1, "; ".join(bad)))
    return rows


BMC_CELLS = 4096        # shapes up to this many elements (product of the sizes) are searched by BMC;
#                         larger ones by simulation (the proof fragments would be too large to unroll)


def _search_inputs(mapping, shape: dict, rng, samples: int):
    """The inputs the counterexample search at a large shape tries: ``samples`` random inputs of the
    mapping, then the boundary probes -- for each input tensor and each of its axes, a random input
    whose data is zeroed except in the last two positions along that axis. A program that drops the
    last timesteps or the last channel block (a size field one short, only near the largest sizes)
    changes a random input's result by less than the tolerance at large shapes (one pair of R rows),
    but a probe's completely. Yields (inputs, description)."""
    for _ in range(samples):
        yield mapping.random_inputs(shape, rng), "random inputs"
    base = mapping.random_inputs(shape, rng)
    for name, value in base.items():
        a = np.asarray(value)
        for axis in range(a.ndim):
            if a.shape[axis] < 3:
                continue
            probe = np.zeros_like(a)
            tail = [slice(None)] * a.ndim
            tail[axis] = slice(a.shape[axis] - 2, None)
            probe[tuple(tail)] = a[tuple(tail)]
            yield {**base, name: probe}, f"boundary probe: {name!r} zero except its last 2 positions on axis {axis}"


def simulate_shape(mapping, shape: dict, *, samples: int = 3, seed: int = 0, solver: str = "z3",
                   t0: float | None = None):
    """A counterexample at ``shape`` found by simulation, or None: random inputs of the mapping
    (its data conditions respected) run through the compiler-IR fragment on the compiler-IR ILA
    simulator (``mapping.ir_fragment``; the numpy reference where a mapping has none) and through
    the emitted stream on the accelerator's ILA simulator (``mapping.run_accelerator``); a
    Frobenius relative error above the mapping's tolerance at the shape is returned as a
    Counterexample (replayed: both sides ran in the simulators). Besides ``samples`` random inputs it
    tries boundary probes (:func:`_search_inputs`): data only at the end of one axis."""
    from mappings.base import frobenius_relative_error, format_shape
    t0 = time.perf_counter() if t0 is None else t0
    rng = np.random.default_rng(seed)
    tol = mapping.tolerance_at(shape)
    from ila.errors import D2AError
    for k, (inputs, how) in enumerate(_search_inputs(mapping, shape, rng, samples)):
        try:
            mapping.check_data(shape, inputs)
        except Exception:
            continue
        try:
            if mapping.ir_fragment is not None:
                from mappings.common import run_ir
                ir = np.asarray(run_ir(mapping.ir_fragment(shape), inputs))
                side = "the compiler-IR ILA simulator"
            else:
                ir = np.asarray(mapping.reference(shape, inputs))
                side = "the numpy reference"
            acc = np.asarray(mapping.run_accelerator(shape, inputs))
        except D2AError:          # e.g. a loop that does not end within the simulator's bound: not decided here
            return None
        err = frobenius_relative_error(ir.reshape(acc.shape), acc)
        if not err <= tol:
            return Counterexample("chc", solver, time.perf_counter() - t0,
                                  f"simulation at shape {format_shape(shape)} ({how}, seed {seed}, sample {k}): "
                                  f"relative error {err:.3g} > tolerance {tol:g} ({side} vs the emitted stream on "
                                  f"the accelerator's ILA simulator)",
                                  trace={"output": f"shape {format_shape(shape)}", "ir_value": "", "acc_value": "",
                                         "found_by": "simulation", "error": err, "tolerance": tol, "seed": seed,
                                         "sample": k}, replayed=True)
    return None


def check_chc(mapping, shape: dict | None, *, solver: str = "z3", timeout: float | None = None,
              numerics: str = "uf", emit_smt: str | None = None, spacer: float | None = None,
              infer: bool = False):
    """``verify.mapping --method chc``: prove with the mapping's relational invariants (supplied,
    or inferred with ``infer``), plus, at a fixed shape, the stream lemmas (the emitted commands
    before the start place the inputs as declared; those after it write nothing and read the
    outputs as declared). Seeded bugs are applied around this call (``verify.mutations``).
    ``spacer`` (seconds) also hands the clauses with unknown invariants to z3's Spacer; its answer
    is reported, and a 'safe' answer proves the loops by itself. An invalid clause is not a
    counterexample: one is searched by BMC at this shape (symbolic sizes: at the shapes where a
    failing clause fails, from the solver's counter-model, then the mapping's ``cex_shapes``)
    and replayed in the simulators."""
    t0 = time.perf_counter()
    spec: ChcSpec = mapping.proof.chc(shape, numerics=numerics, **({"infer": True} if infer else {}))
    from mappings.phases import Composite, PhaseProof
    if isinstance(spec, (PhaseProof, Composite)):   # a program of several loops, proved loop by loop (verify.phases)
        from .phases import check as check_phases
        return check_phases(mapping, shape, spec, solver=solver, timeout=timeout, numerics=numerics)
    inferred = []
    if any(lp.invariant is None for lp in spec.loops):
        from .houdini import InferenceTimeout, infer_invariants
        try:
            spec, inferred = infer_invariants(spec, solver=solver, timeout=min(timeout or 30.0, 30.0),
                                              inline_ufs=numerics == "exact",
                                              deadline=None if timeout is None else t0 + timeout)
        except InferenceTimeout as exc:
            return Unknown("chc", solver, time.perf_counter() - t0, reason=f"{exc} (--timeout {timeout:g} s)")
    label = f"{mapping.name}.{spec.scope}"
    if emit_smt:
        os.makedirs(emit_smt, exist_ok=True)
    failed: list = []
    overall, rows = check_invariants(spec, solver=solver, timeout=timeout, inline_ufs=numerics == "exact",
                                     emit_dir=emit_smt, label=label, failed=failed, stop_on_failure=True)
    lemma_rows = stream_lemmas(spec)       # the loops start from / end at the declared map: the emitted
    rows += lemma_rows                      # streams must place the inputs and read the outputs there
    for _, st, _, _ in lemma_rows:
        overall = overall.worst(st)
    if emit_smt:
        from .horn import horn_smtlib
        with open(os.path.join(emit_smt, f"{label}.horn.smt2"), "w") as fh:
            fh.write(horn_smtlib(spec, inline_ufs=numerics == "exact"))
    spacer_note = ""
    if spacer:
        from .horn import solve_spacer
        answer, ssecs = solve_spacer(spec, timeout=spacer, inline_ufs=numerics == "exact")
        said = {Status.HOLDS: "safe", Status.FAILS: "unsafe", Status.UNKNOWN: "unknown"}[answer]
        spacer_note = f"; Spacer (invariants unknown): {said} in {ssecs:.1f} s"
        if answer is Status.HOLDS and overall is not Status.FAILS:
            overall = Status.HOLDS
    secs = time.perf_counter() - t0
    table = "; ".join(f"{n}: {s.value}{f' ({why})' if why else ''} ({t:.2f} s)" for n, s, t, why in rows
                      if s is not Status.HOLDS)
    covers = tuple(spec.covers) + (f"numerics-{numerics}",)
    if overall is Status.HOLDS:
        from .scope import describe
        how = "relational invariants" if not inferred else "inferred invariants (" + "; ".join(inferred) + ")"
        return Proved("chc", solver, secs, f"{how} hold for all {len(rows)} clauses and lemmas; "
                      f"{describe(covers, spec.scope)}{spacer_note}", scope=spec.scope, covers=covers)
    if overall is Status.UNKNOWN:
        return Unknown("chc", solver, secs, reason=f"some clauses unknown: {table}{spacer_note}")
    bad = [n for n, s, _, _ in rows if s is Status.FAILS]
    tried = []
    if mapping.proof is not None:       # look for a real counterexample: BMC, or simulation at large shapes
        from .bmc import check_bmc
        def cells_of(at):
            return int(np.prod([int(x) for x in at.values()]))
        shapes = [shape] if shape is not None else (sorted(countershapes(spec, failed, solver=solver), key=cells_of)
                                                    + list(mapping.proof.cex_shapes or [mapping.default_shape]))
        for at in shapes:
            try:
                mapping.check_shape(at)
            except Exception:
                continue
            where = "this shape" if shape is not None else f"shape {'x'.join(map(str, at.values()))}"
            tried.append(where)
            cells = cells_of(at)
            # BMC at the proof's own shape and at shapes small enough to unroll; simulation at larger
            # ones (random inputs through both ILA simulators: enough for a wrong configuration field)
            if shape is not None or cells <= BMC_CELLS:
                from ila.errors import D2AError
                try:
                    v = check_bmc(mapping.proof.bmc(at, numerics=numerics), solver=solver,
                                  timeout=timeout if shape is not None else min(timeout or 300.0, 300.0),
                                  inline_ufs=numerics == "exact")
                except D2AError:          # a degenerate shape (e.g. a loop that never ends): the next one
                    continue
                if isinstance(v, Counterexample):
                    return Counterexample("chc", solver, time.perf_counter() - t0,
                                          f"clause(s) {', '.join(bad)} fail; BMC at {where} finds: {v.detail}",
                                          trace={**v.trace, "failed_clauses": bad, "shape": at}, replayed=v.replayed)
            else:
                c = simulate_shape(mapping, at, solver=solver, t0=t0)
                if c is not None:
                    return Counterexample("chc", solver, time.perf_counter() - t0,
                                          f"clause(s) {', '.join(bad)} fail; {c.detail}",
                                          trace={**c.trace, "failed_clauses": bad, "shape": at}, replayed=True)
    return Unknown("chc", solver, time.perf_counter() - t0,
                   reason=f"the supplied invariant is not inductive (clauses {', '.join(bad)} fail) and no "
                          f"counterexample was found at {', '.join(tried) or 'the tried shapes'}")
