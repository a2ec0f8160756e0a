"""Bounded model checking of invariants of an ILA model, with counterexample replay.

:func:`bmc` unrolls the model ``bound`` steps (:func:`ila.unroll.unroll_mono`: any top-level
instruction or none per step, fresh inputs each step), starting from states satisfying the model's
inits, and asks the solver for a step at which ``prop`` fails. A satisfying model is turned into a
concrete trace (initial state, inputs per step) and replayed in the numpy simulator; only a
replayed violation becomes a :class:`~ila.verdict.Counterexample`. Unsat is ``Proved`` with scope
"bound k"; a timeout is ``Unknown``.
"""
from __future__ import annotations

import time

from ila.errors import IlaInternalError, SortError
from ila.compile_np import compile_exprs
from ila.expr import Expr, land, lor
from ila.model import Ila
from ila.ops import Op
from ila.simplify import Rewriter
from ila.sim import Simulator
from ila.smt import SmtEncoder, axiom_instances, check
from ila.sorts import MemSort
from ila.unroll import Unrolled, unroll_mono
from ila.verdict import Counterexample, Proved, Unknown
from ila.walk import toposort


def _at(ila: Ila, e: Expr, state: dict) -> Expr:
    env = {v: state[v.name] for v in ila.all_states()}
    return Rewriter(env).one(e)


def memory_reads(exprs, mem_symbol: Expr) -> list[Expr]:
    """LOAD nodes reading directly from ``mem_symbol`` (used to read memory values from a model)."""
    return [n for n in toposort(list(exprs)) if n.op is Op.LOAD and n.args[0] is mem_symbol]


def initial_values(enc: SmtEncoder, u: Unrolled, exprs, values_of) -> dict:
    """Concrete initial state from a solver model: scalars directly, memories from the reads."""
    init = {}
    for name, sym in u.init.items():
        if isinstance(sym.sort, MemSort):
            table = {}
            for ld in memory_reads(exprs, sym):
                table[values_of(ld.args[1])] = values_of(ld)
            init[name] = table
        elif sym.op is Op.VAR:
            init[name] = values_of(sym)
        elif sym.op is Op.CONST:
            init[name] = sym.payload
    return init


def bmc(ila: Ila, prop: Expr, bound: int, *, solver: str = "z3", timeout: float | None = None) -> Proved | Counterexample | Unknown:
    """Check that ``prop`` (a Bool over states) holds in every state reachable in ``bound`` steps."""
    if not prop.sort.is_bool:
        raise SortError(f"bmc property must be Bool, got {prop.short()}")
    t0 = time.perf_counter()
    u = unroll_mono(ila, bound)
    inits = [_at(ila, c, u.states[0]) for i in ila.walk() for c in i.inits]
    props = [_at(ila, prop, s) for s in u.states]
    constraints = inits + u.conditions
    query = constraints + [lor(*[~p for p in props])]
    query += axiom_instances(query)
    enc = SmtEncoder()
    fs = enc.encode_all(query)
    leaves = [n for n in toposort(query) if n.op is Op.VAR or n.op is Op.LOAD and n.args[0].op is Op.VAR]
    want = [enc.encode(n) for n in leaves if not isinstance(n.sort, MemSort)]
    res = check(enc, fs, solver=solver, timeout=timeout, want=want)
    secs = time.perf_counter() - t0
    if res.status == "unsat":
        return Proved("bmc", solver, secs, f"{prop.short()} holds", scope=f"bound {bound}")
    if res.status == "unknown":
        return Unknown("bmc", solver, secs, reason=res.reason)
    def val(e: Expr):
        if e.is_const:
            return e.payload
        v = res.values.get(enc.encode(e))
        if v is None:   # not in the query: unconstrained, any value is a witness
            return False if e.sort.is_bool else 0
        return v

    init = initial_values(enc, u, query, val)
    inputs = [{k: val(v) for k, v in step.items()} for step in u.inputs]
    sim = Simulator(ila, state=init)
    check_prop = compile_exprs([prop])
    failed_at = None
    if not check_prop(sim.state, {})[0]:
        failed_at = 0
    for k, cmd in enumerate(inputs):
        if failed_at is not None:
            break
        sim.step(cmd, allow_idle=True)
        if not check_prop(sim.state, {})[0]:
            failed_at = k + 1
    if failed_at is None:
        raise IlaInternalError(f"bmc: the solver's trace for {prop.short()} does not replay in the simulator")
    trace = {"initial_state": {k: v for k, v in init.items()}, "inputs": inputs[:failed_at],
             "violated_at_step": failed_at}
    return Counterexample("bmc", solver, time.perf_counter() - t0,
                          f"{prop.short()} fails after {failed_at} steps", trace=trace, replayed=True)
