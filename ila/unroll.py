"""Unrolling of ILA models at the expression level (before lowering to SMT).

* :func:`unroll_path`: along a given instruction sequence (top-level and child instructions, by
  name), with per-step input constraints (ILAng ``UnrollPathSubs`` / ``UnrollPathConn``). Each
  step's valid and decode become path conditions. ``connect=True`` gives every state a fresh
  time-indexed copy ``name@k`` with an equality constraint; the default substitutes.
* :func:`execute`: symbolic execution of a command stream with concrete control (addresses,
  flags) and symbolic data: the simulator's semantics (one top-level instruction per command,
  then children to quiescence) with decodes decided by simplification. The instruction path is
  found, not given; a decode that depends on symbolic data is an error.
* :func:`unroll_mono`: k steps where any top-level instruction (or none) may fire, with fresh
  inputs per step (ILAng ``UnrollMonoConn``, for models without children).

Symbols are VAR nodes of kind ``"sym"`` named ``<prefix><name>@<step>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .errors import IlaError, LoopBoundError, SimulationError, UndeclaredError
from .expr import FALSE, TRUE, Expr, as_expr, eq, land, var
from .model import Ila, Instr
from .ops import Op
from .simplify import Rewriter


@dataclass
class Unrolled:
    """Result of an unrolling: ``states[k]`` maps state names to their value before step k
    (``states[-1]`` is the final state), ``inputs[k]`` the inputs of step k, ``conditions`` the
    Bool path conditions (decodes, valids, input and connection constraints)."""
    ila: Ila
    steps: list[str]
    states: list[dict[str, Expr]]
    inputs: list[dict[str, Expr]]
    conditions: list[Expr] = field(default_factory=list)
    init: dict[str, Expr] = field(default_factory=dict)
    marks: list[int] = field(default_factory=list)   # execute: index into states after each command

    @property
    def final(self) -> dict[str, Expr]:
        return self.states[-1]


def symbol(name: str, sort, step: int | None = None, prefix: str = "") -> Expr:
    suffix = "" if step is None else f"@{step}"
    return var("sym", f"{prefix}{name}{suffix}", sort, 0)


def initial_state(ila: Ila, init: Mapping[str, object] | None = None, prefix: str = "") -> dict[str, Expr]:
    """Symbolic initial state ``<prefix><name>@0``, overridden by ``init`` (ints or Exprs)."""
    out = {}
    for v in ila.all_states():
        out[v.name] = symbol(v.name, v.sort, 0, prefix)
    for k, val in (init or {}).items():
        if k not in out:
            raise UndeclaredError(f"initial value for unknown state {k!r} of ILA {ila.name!r}")
        if out[k].sort.is_mem and not isinstance(val, Expr):
            out[k] = memory_value(out[k], val)
            continue
        if out[k].sort.is_bool and val in (0, 1) and not isinstance(val, Expr):
            val = bool(val)
        out[k] = as_expr(val, out[k] if out[k].sort.is_bv else None, f"initial value of {k!r}")
    return out


def memory_value(base: Expr, values) -> Expr:
    """``base`` with the concrete entries of ``values`` (array indexed by address, or dict) stored."""
    from .expr import bv_const, store
    items = values.items() if isinstance(values, Mapping) else enumerate(values)
    out = base
    aw, dw = base.sort.addr_width, base.sort.data_width
    for a, d in items:
        out = store(out, bv_const(int(a), aw), bv_const(int(d), dw))
    return out


def _inputs_for(ila: Ila, given: Mapping[str, object] | None, step: int, prefix: str) -> dict[str, Expr]:
    given = dict(given or {})
    out = {}
    for v in ila.all_inputs():
        if v.name in given:
            val = given.pop(v.name)
            if v.sort.is_bool and not isinstance(val, Expr) and val in (0, 1):
                val = bool(val)
            out[v.name] = as_expr(val, v if v.sort.is_bv else None, f"input {v.name!r}")
            if out[v.name].sort != v.sort:
                raise IlaError(f"input {v.name!r} is {v.sort}, got {out[v.name].short()}")
        else:
            out[v.name] = symbol(v.name, v.sort, step, prefix)
    if given:
        raise UndeclaredError(f"unknown inputs {sorted(given)} for ILA {ila.name!r}")
    return out


def _env(ila: Ila, state: Mapping[str, Expr], inputs: Mapping[str, Expr]) -> dict[Expr, Expr]:
    m = {}
    for v in ila.all_states():
        m[v] = state[v.name]
    for v in ila.all_inputs():
        m[v] = inputs[v.name]
    return m


def _step(ila: Ila, ins: Instr, state: dict, inputs: dict, rw: Rewriter) -> dict[str, Expr]:
    names = [s.name for s in ins.updates]
    vals = rw(list(ins.updates.values()))
    new = dict(state)
    new.update(zip(names, vals))
    return new


def unroll_path(ila: Ila, instrs: Sequence[str], inputs: Sequence[Mapping | None] | None = None, *,
                init: Mapping | None = None, prefix: str = "", connect: bool = False) -> Unrolled:
    """Unroll along ``instrs`` (names; child instructions allowed). ``inputs[k]`` constrains the
    inputs of top-level step k (ints or Exprs); child steps see the inputs of the last top-level
    step, as in the simulator. Missing inputs are fresh symbols."""
    state = initial_state(ila, init, prefix)
    res = Unrolled(ila, list(instrs), [state], [], init=dict(state))
    cur_inputs = None
    top_k = 0
    for k, name in enumerate(instrs):
        ins = ila.find_instr(name)
        if ins.host is ila or cur_inputs is None:
            given = inputs[top_k] if inputs is not None and top_k < len(inputs) else None
            cur_inputs = _inputs_for(ila, given, k, prefix)
            top_k += 1
        rw = Rewriter(_env(ila, state, cur_inputs))
        res.conditions.extend(c for c in rw([ins.host.valid, ins.get_decode()]) if c is not TRUE)
        new = _step(ila, ins, state, cur_inputs, rw)
        if connect:
            for s in ins.updates:
                sym = symbol(s.name, s.sort, k + 1, prefix)
                res.conditions.append(eq(sym, new[s.name]))
                new[s.name] = sym
        res.inputs.append(cur_inputs)
        res.states.append(new)
        state = new
    return res


def execute(ila: Ila, commands: Sequence[Mapping[str, object]], *, init: Mapping | None = None,
            prefix: str = "", max_child_steps: int = 1_000_000, allow_idle: bool = False,
            run_children: bool = True) -> Unrolled:
    """Symbolic execution of ``commands`` (concrete control, symbolic data): see module docstring.

    ``run_children=False`` stops after each top-level instruction (the child loops are left to a
    loop-level proof, e.g. CHC). Raises SimulationError when a decode or valid does not simplify to a constant (control depends
    on symbolic data), when two instructions fire, when no instruction decodes a command, or when a
    child loop exceeds ``max_child_steps``.
    """
    state = initial_state(ila, init, prefix)
    res = Unrolled(ila, [], [state], [], init=dict(state))
    children = [c for c in ila.walk() if c is not ila]

    def fire(level_ilas, inputs, k, what) -> Instr | None:
        rw = Rewriter(_env(ila, state, inputs))
        fired = []
        for h in level_ilas:
            valid = rw.one(h.valid)
            if valid is FALSE:
                continue
            if valid is not TRUE:
                raise SimulationError(f"{what}: valid of {h.name!r} depends on symbolic data: {valid.short()}")
            for ins in h.instrs:
                d = rw.one(ins.get_decode())
                if d is TRUE:
                    fired.append(ins)
                elif d is not FALSE:
                    raise SimulationError(f"{what}: decode of {ins.name!r} depends on symbolic data: {d.short()}")
        if len(fired) > 1:
            raise SimulationError(f"{what}: instructions {fired[0].name!r} and {fired[1].name!r} both fire")
        return fired[0] if fired else None

    k = 0
    for c_i, cmd in enumerate(commands):
        inputs = _inputs_for(ila, {**{v.name: 0 for v in ila.all_inputs()}, **cmd}, k, prefix)
        top = fire([ila], inputs, k, f"command {c_i}")
        if top is None:
            if allow_idle:
                res.marks.append(len(res.states) - 1)
                continue
            raise SimulationError(f"command {c_i}: no instruction of {ila.name!r} decodes {dict(cmd)!r}")
        count = 0
        ins = top
        while ins is not None:
            rw = Rewriter(_env(ila, state, inputs))
            state = _step(ila, ins, state, inputs, rw)
            res.steps.append(ins.name)
            res.inputs.append(inputs)
            res.states.append(state)
            k += 1
            ins = fire(children, inputs, k, f"command {c_i}") if children and run_children else None
            count += 1
            if count > max_child_steps:
                raise LoopBoundError(f"command {c_i}: child loop exceeds {max_child_steps} steps")
        res.marks.append(len(res.states) - 1)
    return res


def unroll_mono(ila: Ila, bound: int, *, prefix: str = "") -> Unrolled:
    """``bound`` steps in which any one top-level instruction, or none (idle), fires, with fresh
    inputs each step. Decodes are assumed exclusive (two firing is a simulator error), which is
    encoded as a condition. Models with child ILAs are rejected (use :func:`unroll_path`)."""
    if ila.children:
        raise IlaError(f"mono unrolling of {ila.name!r}: the model has child ILAs; use unroll_path or execute")
    state = initial_state(ila, None, prefix)
    res = Unrolled(ila, [f"any@{k}" for k in range(bound)], [state], [], init=dict(state))
    for k in range(bound):
        inputs = _inputs_for(ila, None, k, prefix)
        rw = Rewriter(_env(ila, state, inputs))
        valid = rw.one(ila.valid)
        decs = [land(valid, d) for d in rw([i.get_decode() for i in ila.instrs])]
        for i in range(len(decs)):
            for j in range(i + 1, len(decs)):
                res.conditions.append(~(decs[i] & decs[j]))
        new = dict(state)
        for v in ila.all_states():
            nxt = state[v.name]
            for ins, d in reversed(list(zip(ila.instrs, decs))):
                u = ins.get_update(v)
                if u is not None:
                    nxt = rw.build(Op.ITE, nxt.sort, (d, rw.one(u), nxt), None)
            new[v.name] = nxt
        res.inputs.append(inputs)
        res.states.append(new)
        state = new
    return res
