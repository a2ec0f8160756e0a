"""The numpy simulator of ILA models (ILAng ILAtor semantics).

One :meth:`Simulator.step` takes the inputs of one command, fires the one top-level instruction
whose valid and decode hold, then runs child instructions (of children whose valid holds) until
none fires. Two instructions firing at once is a :class:`~ila.errors.SimulationError` naming both;
so is a command that no instruction decodes (unless ``allow_idle``), and a child loop running past
``max_child_steps``.

State: bit-vectors are Python ints masked to their width (any width), Bools are Python bools,
memories are numpy arrays (dtype by data width: uint8/16/32/64, object above 64 bits) of the
declared ``size``, or dicts for memories declared without a size.

Summaries: a child ILA may carry a tensor-level summary of its loop (:meth:`ila.model.Ila.set_summary`).
When exactly one child instruction fires and its child has a summary, the simulator calls the
summary, which either declines (the loop then runs instruction by instruction) or brings the state
to the loop's quiescent state at once. ``Simulator(ila, summaries=False)`` never uses them, and
:func:`compare_summaries` runs both ways on the same commands and compares every state. Summaries
are simulator-only: the SMT lowering and BMC see the child instructions.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np

from .commands import CommandTable
from .compile_np import compile_exprs
from .errors import SimulationError, UndeclaredError
from .expr import Expr
from .model import Ila, Instr
from .ops import Op
from .semantics import MemValue, mask
from .sorts import BoolSort, BvSort, MemSort


def _mem_dtype(w: int):
    for bits, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64)):
        if w <= bits:
            return dt
    return object


def _conjuncts(e: Expr) -> list[Expr]:
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if x.op is Op.AND:
            stack.extend(x.args)
        else:
            out.append(x)
    return out


def _key_of(e: Expr) -> dict[int, int]:
    """Map var uid -> required constant for conjuncts ``var == const`` of a decode."""
    keys = {}
    for c in _conjuncts(e):
        if c.op is Op.EQ and isinstance(c.args[0].sort, BvSort):
            a, b = c.args
            if a.op is Op.VAR and b.op is Op.CONST:
                keys[a.uid] = (a, b.payload)
            elif b.op is Op.VAR and a.op is Op.CONST:
                keys[b.uid] = (b, a.payload)
    return keys


class _Level:
    """The instructions of one ILA, with a decode index on the most discriminating variable."""

    def __init__(self, ila: Ila, vectorize: bool):
        self.ila = ila
        self.instrs: list[Instr] = ila.instrs
        self.valid = compile_exprs([ila.valid], name=f"valid_{ila.name}", inline=True)
        self._decode: dict[str, object] = {}          # per instruction, for fire(): compiled on demand
        self._batch: dict[str, object] = {}           # instruction -> _BatchPlan or None (run())
        self._buckets: dict[object, tuple] = {}       # decode-index value -> (candidates, one decode fn)
        self.updates = {}
        for i in self.instrs:
            names = [s.name for s in i.updates]
            fn = compile_exprs(list(i.updates.values()), vectorize=vectorize, name="update", inline=True) if names else None
            self.updates[i.name] = (names, fn)
        keyed = [_key_of(i.get_decode()) for i in self.instrs]
        counts: dict[int, int] = {}
        for k in keyed:
            for uid in k:
                counts[uid] = counts.get(uid, 0) + 1
        self.key = None
        self.table: dict[int, list[Instr]] = {}
        self.always: list[Instr] = list(self.instrs)
        if counts:
            uid = max(counts, key=counts.get)
            if counts[uid] >= 2:
                keyvar = next(k[uid][0] for k in keyed if uid in k)
                self.key = (keyvar.payload[0], keyvar.name)
                self.always = []
                for ins, k in zip(self.instrs, keyed):
                    if uid in k:
                        self.table.setdefault(k[uid][1], []).append(ins)
                    else:
                        self.always.append(ins)

    def decode(self, name: str):
        """The compiled decode of one instruction (``f(S, I) -> (bool,)``)."""
        fn = self._decode.get(name)
        if fn is None:
            fn = self._decode[name] = compile_exprs([self.ila.instr(name).get_decode()], name="decode", inline=True)
        return fn

    def candidates(self, S, I) -> list[Instr]:
        return self._bucket(S, I)[0]

    def _bucket(self, S, I) -> tuple:
        """The candidate instructions for the decode-index value of (S, I), and one compiled
        function evaluating all their decodes (shared subterms evaluated once)."""
        if self.key is None:
            v = _MISS
        else:
            kind, name = self.key
            v = (I if kind == "input" else S)[name]
            if v not in self.table:
                v = _MISS
        b = self._buckets.get(v)
        if b is None:
            hit = self.table.get(v) if v is not _MISS else None
            instrs = self.always + hit if hit else list(self.always)
            fn = compile_exprs([i.get_decode() for i in instrs], vectorize=False,
                               name=f"decodes_{self.ila.name}", inline=True) if instrs else None
            b = self._buckets[v] = (instrs, fn)
        return b

    def decoded(self, S, I) -> list[Instr]:
        """The candidates whose decode holds (the valid is not evaluated)."""
        instrs, fn = self._bucket(S, I)
        if fn is None:
            return []
        return [i for i, d in zip(instrs, fn(S, I)) if d]

    def fired(self, S, I) -> list[Instr]:
        if not self.valid(S, I)[0]:
            return []
        return self.decoded(S, I)


    def batch_plan(self, name: str):
        """The :class:`_BatchPlan` of top-level instruction ``name``, or None when it cannot run
        batched (computed once)."""
        if name not in self._batch:
            self._batch[name] = _BatchPlan.make(self.ila, self.ila.instr(name))
        return self._batch[name]


_MISS = object()      # decode-index bucket of the values no instruction is keyed on
BATCH = 1024          # commands per batch in Simulator.run


class _BatchPlan:
    """A run of consecutive commands that each fire the same top-level instruction (a data write,
    a read), executed at once over lane arrays of the commands' inputs (Simulator.run).

    Static conditions (checked here): the instruction's memory updates (if any) are store chains
    on the memory itself, its addresses, data and scalar updates read no state it writes, and neither
    the top-level valid, nor any top-level decode, nor any child's valid reads a state it writes.
    Then, from a state where no child is valid, every command of the run sees the states those
    expressions read unchanged, so the run equals one pass over its commands in order, provided
    (checked per batch) each command's inputs are valid, the valid holds and exactly this
    instruction decodes, and all the run's store addresses are distinct and inside their memories.
    The run stops before the first command that fails a check; that command then executes alone.
    """

    def __init__(self, ila: Ila, ins: Instr, mems, scalars, fn, decodes, index):
        self.ila, self.ins, self.mems, self.scalars = ila, ins, mems, scalars
        self.fn, self.decodes, self.index = fn, decodes, index

    @staticmethod
    def make(ila: Ila, ins: Instr) -> "_BatchPlan | None":
        from .compile_np import _store_chain
        from .walk import variables
        written = {s.name for s in ins.updates}
        mems, scalars, exprs = [], [], []
        for st_, e in ins.updates.items():
            if isinstance(st_.sort, MemSort):
                if ila.mem_size(st_.name) is None:
                    return None
                base, addrs, datas = _store_chain(e)
                if base is not st_ or not addrs:
                    return None
                mems.append((st_.name, len(addrs)))
                exprs += addrs + datas
            else:
                scalars.append(st_)
        exprs += [ins.updates[v] for v in scalars]
        readers = [ila.valid] + [i.get_decode() for i in ila.instrs] + [c.valid for c in ila.walk() if c is not ila]
        if any(v.name in written for v in variables(exprs + readers)):
            return None
        fn = compile_exprs(exprs, vectorize=False, name=f"batch_{ins.name}")
        decodes = compile_exprs([ila.valid] + [i.get_decode() for i in ila.instrs], vectorize=False,
                                name=f"batch_decodes_{ila.name}")
        return _BatchPlan(ila, ins, mems, scalars, fn, decodes, ila.instrs.index(ins))


_LEVELS: "weakref.WeakKeyDictionary[Ila, dict]" = weakref.WeakKeyDictionary()


def _level(ila: Ila, vectorize: bool) -> _Level:
    """The compiled instructions of ``ila``, shared by all simulators of it (compilation costs more
    than a small run; the compiled functions hold no state, and read function bodies when called)."""
    # the model may still grow between simulators: the key covers its valid, decodes and updates
    key = (vectorize, id(ila._valid), tuple((i.name, id(i.decode), tuple(map(id, i.updates)),
                                             tuple(map(id, i.updates.values()))) for i in ila._instrs.values()))
    per = _LEVELS.setdefault(ila, {})
    lvl = per.get(key)
    if lvl is None:
        lvl = per[key] = _Level(ila, vectorize)
    return lvl


def _child_valids(ila: Ila, levels: list) -> object:
    """One compiled function of the valid conditions of all ``levels`` (children of ``ila``)."""
    if not levels:
        return None
    key = ("child valids",) + tuple(id(l.ila._valid) for l in levels)
    per = _LEVELS.setdefault(ila, {})
    fn = per.get(key)
    if fn is None:
        fn = per[key] = compile_exprs([l.ila.valid for l in levels], vectorize=False, name=f"valids_{ila.name}",
                                      inline=True)
    return fn


class Simulator:
    """Execute an ILA model on concrete commands.

    Parameters
    ----------
    ila : Ila            the top-level model
    state : mapping, optional
        initial values by state name (ints, bools, numpy arrays for memories); the rest start at
        zero, except states pinned by ``add_init(state.eq(const))``.
    funcs : mapping, optional
        overrides of uninterpreted-function bodies by name (used to replay counterexamples
        found with uninterpreted functions).
    max_child_steps : int
        bound on child instructions per command (a non-terminating child loop is an error).
    summaries : bool or mapping, default True
        use the children's registered loop summaries (:meth:`ila.model.Ila.set_summary`);
        False runs every child loop instruction by instruction. A mapping ``{child name: fn or
        None}`` replaces the registered summary of the children it names (for differential tests
        of a summary, e.g. a seeded bug; not for choosing semantics). With ``record_trace`` the
        loops always run instruction by instruction (the trace names every instruction).
    """

    def __init__(self, ila: Ila, state: Mapping | None = None, *, vectorize: bool = True,
                 max_child_steps: int = 10_000_000, record_trace: bool = False,
                 summaries: bool | Mapping[str, Callable | None] = True):
        if ila.parent is not None:
            raise UndeclaredError(f"simulate the top-level ILA, not the child {ila.name!r}")
        self.ila = ila
        self.max_child_steps = max_child_steps
        self.record_trace = record_trace
        self.trace: list[str] = []
        self.steps = 0
        self.child_steps = 0
        self.summary_runs: dict[str, int] = {}     # child name -> loops run by its summary
        self._top = _level(ila, vectorize)
        self._children = [_level(c, vectorize) for c in ila.walk() if c is not ila]
        self._child_valid = _child_valids(ila, self._children)
        names = {lvl.ila.name for lvl in self._children}
        self._summary: dict[str, Callable] = {}
        if isinstance(summaries, Mapping):
            unknown = sorted(set(summaries) - names)
            if unknown:
                raise UndeclaredError(f"ILA {ila.name!r} has no child {unknown[0]!r} to summarise")
        for lvl in self._children:
            fn = lvl.ila.summary if summaries else None
            if isinstance(summaries, Mapping):
                fn = summaries[lvl.ila.name] if lvl.ila.name in summaries else lvl.ila.summary
            if fn is not None:
                self._summary[lvl.ila.name] = fn
        self._inputs = {v.name: v for v in ila.all_inputs()}
        self._input_defaults = {n: (False if isinstance(v.sort, BoolSort) else 0) for n, v in self._inputs.items()}
        self._input_masks = {n: mask(v.sort.width) for n, v in self._inputs.items() if isinstance(v.sort, BvSort)}
        self._states = {v.name: v for v in ila.all_states()}
        self.state: dict = {}
        for v in self._states.values():
            self.state[v.name] = self._zero(v)
        self._apply_inits()
        if state:
            for k, val in state.items():
                self.set_state(k, val)

    # ---------------------------------------------------------------- state access
    def _zero(self, v: Expr):
        if isinstance(v.sort, MemSort):
            size = self.ila.mem_size(v.name)
            return {} if size is None else np.zeros(size, dtype=_mem_dtype(v.sort.data_width))
        return False if isinstance(v.sort, BoolSort) else 0

    def _apply_inits(self):
        self.state.update(self.ila.reset_values())

    def reset(self) -> None:
        """Back to the reset state: memories zero, scalar states at their reset values
        (:meth:`ila.model.Ila.reset_values`), the trace cleared; the compiled model is kept."""
        for v in self._states.values():
            if isinstance(v.sort, MemSort):
                self.state[v.name] = self._zero(v)
        self._apply_inits()
        self.trace.clear()

    def set_state(self, name: str, value) -> None:
        """Set a state (memories: a numpy array of ``size`` entries or a dict)."""
        if name not in self._states:
            raise UndeclaredError(f"ILA {self.ila.name!r} has no state {name!r}")
        v = self._states[name]
        if isinstance(v.sort, MemSort):
            cur = self.state[name]
            if isinstance(value, dict) and isinstance(cur, dict):
                self.state[name] = {int(a): int(d) & mask(v.sort.data_width) for a, d in value.items()}
            elif isinstance(value, dict):
                arr = np.zeros_like(cur)
                for a, d in value.items():
                    if not 0 <= int(a) < arr.shape[0]:
                        raise SimulationError(f"memory {name!r}: address {int(a):#x} beyond its {arr.shape[0]} entries")
                    arr[int(a)] = int(d) & mask(v.sort.data_width)
                self.state[name] = arr
            else:
                arr = np.asarray(value)
                if isinstance(cur, np.ndarray) and arr.shape != cur.shape:
                    raise SimulationError(f"memory {name!r} has {cur.shape[0]} entries, got an array of shape {arr.shape}")
                self.state[name] = arr.astype(_mem_dtype(v.sort.data_width)).copy()
        else:
            self.state[name] = self._check_value(v, value, "state")

    def memory(self, name: str):
        """The array (or dict) of a memory state."""
        return self.state[name]

    def _check_value(self, v: Expr, value, kind: str):
        if isinstance(v.sort, BoolSort):
            if isinstance(value, (bool, np.bool_)) or value in (0, 1):
                return bool(value)
            raise SimulationError(f"{kind} {v.name!r} is Bool, got {value!r}")
        try:
            iv = int(value)
        except (TypeError, ValueError):
            raise SimulationError(f"{kind} {v.name!r} ({v.sort}) got non-integer {value!r}") from None
        if iv != value or not (0 <= iv <= mask(v.sort.width)):
            raise SimulationError(f"{kind} {v.name!r} is {v.sort.width} bits wide; value {value!r} does not fit")
        return iv

    # ---------------------------------------------------------------- execution
    def step(self, inputs: Mapping[str, int] | None = None, *, allow_idle: bool = False) -> str | None:
        """Execute one command; return the name of the top-level instruction that fired."""
        given = inputs or {}
        I = self._inputs_of(given)
        S = self.state
        with np.errstate(over="ignore"):
            fired = self._top.fired(S, I)
            if len(fired) > 1:
                raise SimulationError(f"instructions {fired[0].name!r} and {fired[1].name!r} both decode "
                                      f"command {self._describe(given)}")
            if not fired:
                if allow_idle:
                    return None
                raise SimulationError(f"no instruction of {self.ila.name!r} decodes command {self._describe(given)}")
            top = fired[0]
            self._apply(self._top, top, S, I)
            self.steps += 1
            self._run_children(S, I)
        return top.name

    def fire(self, name: str, inputs: Mapping[str, int] | None = None) -> None:
        """Apply exactly one instruction (top-level or child) by name, without running children;
        its valid and decode must hold (else SimulationError)."""
        ins = self.ila.find_instr(name)
        level = self._top if ins.host is self.ila else next(l for l in self._children if l.ila is ins.host)
        I = self._inputs_of(inputs or {})
        with np.errstate(over="ignore"):
            if not (level.valid(self.state, I)[0] and level.decode(name)(self.state, I)[0]):
                raise SimulationError(f"instruction {name!r} does not decode on command {self._describe(inputs or {})}")
            self._apply(level, ins, self.state, I)

    def _inputs_of(self, given: Mapping) -> dict:
        I = self._input_defaults.copy()
        masks = self._input_masks
        # the common case of _check_value: ints within their bit-vector input's width
        odd = [k for k, val in given.items() if type(val) is not int or not 0 <= val <= masks.get(k, -1)]
        I.update(given)
        for k in odd:
            if k not in self._inputs:
                raise SimulationError(f"unknown input {k!r} for ILA {self.ila.name!r}")
            I[k] = self._check_value(self._inputs[k], given[k], "input")
        return I

    def _describe(self, given: Mapping) -> str:
        parts = [f"{k}={v:#x}" if isinstance(v, int) and not isinstance(v, bool) and v > 9 else f"{k}={v!r}"
                 for k, v in given.items() if v]
        return "{" + ", ".join(parts) + "}"

    def _apply(self, level: _Level, ins: Instr, S, I):
        if self.record_trace:
            self.trace.append(ins.name)
        names, fn = level.updates[ins.name]
        if fn is None:
            return
        try:
            values = fn(S, I)
        except SimulationError as exc:
            raise SimulationError(f"instruction {ins.name!r} of ILA {level.ila.name!r}: {exc}",
                                  loc=ins.loc) from None
        except (ArithmeticError, ValueError, IndexError, KeyError, TypeError) as exc:
            raise SimulationError(f"instruction {ins.name!r} of ILA {level.ila.name!r}: its update fails: "
                                  f"{type(exc).__name__}: {exc}", loc=ins.loc) from None
        in_place = []
        for name, val in zip(names, values):
            if isinstance(val, MemValue):
                if val.base is S[name]:
                    in_place.append(val)
                else:
                    S[name] = val.materialize()
            else:
                S[name] = val
        for val in in_place:
            val.commit()

    def children_idle(self) -> bool:
        """True when the simulator records no trace and no child ILA's valid condition holds in the
        current state: no child instruction can fire after a top-level command, so a fast path may
        apply top-level commands at once (:mod:`ila.models.flexasr.beats`,
        :mod:`ila.models.hlscnn.beats`). False when a valid condition reads an input (it cannot be
        decided without the command)."""
        if self.record_trace:
            return False
        if not self._children:
            return True
        try:
            return not any(bool(v) for v in self._child_valid(self.state, {}))
        except (KeyError, SimulationError):
            return False

    def _run_children(self, S, I):
        if not self._children:
            return
        count = 0
        children, valids = self._children, self._child_valid
        while True:
            fired: list[tuple[_Level, Instr]] = []
            for lvl, ok in zip(children, valids(S, I)):
                if ok:
                    for ins in lvl.decoded(S, I):
                        fired.append((lvl, ins))
            if not fired:
                break
            if len(fired) > 1:
                raise SimulationError(f"child instructions {fired[0][1].name!r} and {fired[1][1].name!r} both fire")
            lvl = fired[0][0]
            if self._summary and not self.record_trace and lvl.ila.name in self._summary:
                n = self._summarise(lvl, S, self.max_child_steps - count)
                if n is not None:
                    count += n
                    continue
            self._apply(lvl, fired[0][1], S, I)
            count += 1
            if count > self.max_child_steps:
                raise SimulationError(f"child instructions did not quiesce within {self.max_child_steps} steps "
                                      f"(last: {fired[0][1].name!r})")
        self.child_steps += count

    def _summarise(self, lvl: _Level, S, budget: int) -> int | None:
        try:
            n = self._summary[lvl.ila.name](S, budget)
        except SimulationError as exc:
            raise SimulationError(f"summary of child ILA {lvl.ila.name!r}: {exc}", loc=lvl.ila.loc) from None
        if n is None:
            return None
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise SimulationError(f"summary of child ILA {lvl.ila.name!r} returned {n!r}, not a positive "
                                  f"number of child instructions (or None to decline)", loc=lvl.ila.loc)
        self.summary_runs[lvl.ila.name] = self.summary_runs.get(lvl.ila.name, 0) + 1
        return int(n)

    def run(self, commands: "Iterable[Mapping[str, int]] | CommandTable", *, allow_idle: bool = False,
            observe: "tuple[str, ...] | None" = None):
        """Execute a sequence of commands (dicts, or a :class:`~ila.commands.CommandTable`); return
        the top-level instruction names. With ``observe`` (names of scalar states), return
        ``(names, values)``: ``values[i]`` holds those states after command ``i`` (a list of tuples),
        e.g. the data of every MMIO read.

        Same result as :meth:`step` on each command in turn (state, names, errors); runs of
        commands that fire one instruction that :class:`_BatchPlan` admits (data writes, reads)
        execute as one batch."""
        cmds = commands if isinstance(commands, (list, CommandTable)) else list(commands)
        if observe is not None:
            bad = [o for o in observe if o not in self._states or isinstance(self._states[o].sort, MemSort)]
            if bad:
                raise SimulationError(f"cannot observe {bad[0]!r}: not a scalar state of ILA {self.ila.name!r}")
        seen: list | None = [] if observe is not None else None
        out: list[str | None] = []
        i, n = 0, len(cmds)
        while i < n:
            name = self.step(cmds[i], allow_idle=allow_idle)
            out.append(name)
            if seen is not None:
                seen.append(tuple(self.state[o] for o in observe))
            i += 1
            size = 8                               # batches grow while the run lasts
            while name is not None and i + 1 < n and not self.record_trace:
                plan = self._top.batch_plan(name)
                if plan is None or not self._same_next(plan, cmds[i]):
                    break
                k = self._run_batch(plan, cmds, i, size, observe, seen)
                out.extend([name] * k)
                i += k
                if k < size:
                    break
                size = min(2 * size, BATCH)
        return out if observe is None else (out, seen)

    def _same_next(self, plan: _BatchPlan, cmd) -> bool:
        """Cheap look-ahead: does ``cmd`` alone fire ``plan``'s instruction (children idle)?"""
        try:
            I = self._inputs_of(cmd or {})
        except SimulationError:
            return False
        S = self.state
        with np.errstate(over="ignore"):
            return bool(self._top.valid(S, I)[0]) and self._top.decoded(S, I) == [plan.ins]

    def _lanes(self, cmds, start: int, size: int) -> tuple[dict, dict, int]:
        """(lane arrays of every input, inputs of the first command, n) for the longest prefix of
        ``cmds[start:start + size]`` whose inputs are valid (a bad command raises when stepped)."""
        if isinstance(cmds, CommandTable):
            end = min(len(cmds), start + size)
            n, lanes = end - start, {}
            for name, col in cmds.columns.items():
                v = self._inputs.get(name)
                if v is None or (isinstance(v.sort, BvSort) and v.sort.width > 64):
                    return {}, {}, 0
                seg = col[start:end]
                ok = ((seg == 0) | (seg == 1)) if isinstance(v.sort, BoolSort) else \
                    (seg >= 0) & (seg <= self._input_masks[name]) if seg.dtype.kind == "i" else \
                    seg <= self._input_masks[name]
                bad = np.nonzero(~ok)[0]
                if bad.size:
                    n = min(n, int(bad[0]))
                lanes[name] = seg
            for name, v in self._inputs.items():
                kind = bool if isinstance(v.sort, BoolSort) else (np.uint64 if v.sort.width <= 64 else object)
                lanes[name] = lanes[name][:n].astype(kind) if name in lanes else np.zeros(n, kind)
            return lanes, (self._inputs_of(cmds[start]) if n else {}), n
        batch = []
        try:
            for c in cmds[start:start + size]:
                batch.append(self._inputs_of(c or {}))
        except SimulationError:
            pass                                   # that command raises when it is stepped
        lanes = {}
        for name, v in self._inputs.items():
            lanes[name] = np.array([I[name] for I in batch], dtype=bool if isinstance(v.sort, BoolSort) else
                                   (np.uint64 if v.sort.width <= 64 else object))
        return lanes, (batch[0] if batch else {}), len(batch)

    def _run_batch(self, plan: _BatchPlan, cmds, start: int, size: int, observe=None, seen=None) -> int:
        """Execute the longest prefix (up to ``size``) of ``cmds[start:]`` that the plan covers;
        return its length (0: none, the caller steps). With ``observe``, append the observed
        states after each command to ``seen``."""
        S = self.state
        lanes, first, n = self._lanes(cmds, start, size)
        if n < 2:
            return 0
        with np.errstate(over="ignore"):
            if self._children and any(self._child_valid(S, first)):
                return 0
            try:
                raw = plan.decodes(S, lanes)
                dec = np.empty((len(raw), n), bool)           # (valid + decodes, commands)
                for k, d in enumerate(raw):
                    dec[k] = d
                ok = dec[0] & dec[1 + plan.index] & (np.count_nonzero(dec[1:], axis=0) == 1)
                vals = plan.fn(S, lanes)
            except (SimulationError, ArithmeticError, ValueError, IndexError, KeyError, TypeError):
                return 0                           # stepping reports it at the right command
            bad = np.nonzero(~ok)[0]
            n = int(bad[0]) if bad.size else n

            def columns(vs):                       # (commands, len(vs)) array of per-command values
                wide = any(isinstance(v, np.ndarray) and v.dtype == object for v in vs)
                out = np.empty((len(ok), len(vs)), object if wide else np.uint64)
                for k, v in enumerate(vs):
                    out[:, k] = v
                return out[:n]

            pos, writes = 0, []
            for name, L in plan.mems:
                A = columns(vals[pos:pos + L]).astype(np.uint64)                    # (commands, stores)
                D = columns(vals[pos + L:pos + 2 * L])
                pos += 2 * L
                size = S[name].shape[0]
                out = np.nonzero((A >= size).any(axis=1))[0]
                if out.size:
                    n = min(n, int(out[0]))
                flat = A[:n].reshape(-1)
                _, first = np.unique(flat, return_index=True)
                if first.size != flat.size:
                    rep = np.ones(flat.size, bool)
                    rep[first] = False
                    n = min(n, int(np.nonzero(rep)[0][0]) // L)
                writes.append((name, A, D))
            if n < 1:
                return 0
            for name, A, D in writes:
                S[name][A[:n].reshape(-1).astype(np.int64)] = D[:n].reshape(-1)
            lanes_of = {}
            for v, val in zip(plan.scalars, vals[pos:]):
                val = np.broadcast_to(np.asarray(val), (len(ok),))
                lanes_of[v.name] = val[:n]
                x = val[n - 1]
                S[v.name] = bool(x) if isinstance(v.sort, BoolSort) else int(x)
            if seen is not None:
                cols = [[bool(x) for x in lanes_of[o]] if isinstance(self._states[o].sort, BoolSort) else
                        [int(x) for x in lanes_of[o]] if o in lanes_of else [S[o]] * n for o in observe]
                seen.extend(zip(*cols))
        self.steps += n
        return n


@dataclass
class SummaryComparison:
    """The outcome of :func:`compare_summaries`: ``mismatches`` (human-readable, empty when the
    runs agree), ``summary_runs`` (child name -> loops the summarised run replaced), ``commands``
    (commands compared) and ``child_steps`` of both runs (summarised, instruction by instruction)."""
    mismatches: list = field(default_factory=list)
    summary_runs: dict = field(default_factory=dict)
    commands: int = 0
    child_steps: tuple = (0, 0)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _diff_state(a: "Simulator", b: "Simulator", limit: int = 8) -> list[str]:
    out = []
    for name, v in a._states.items():
        x, y = a.state[name], b.state[name]
        if isinstance(v.sort, MemSort):
            if isinstance(x, dict) or isinstance(y, dict):
                xd = x if isinstance(x, dict) else {i: int(d) for i, d in enumerate(x) if d}
                yd = y if isinstance(y, dict) else {i: int(d) for i, d in enumerate(y) if d}
                keys = sorted(k for k in set(xd) | set(yd) if xd.get(k, 0) != yd.get(k, 0))
                if keys:
                    out.append(f"memory {name}: {len(keys)} entries differ, first at {keys[0]:#x} "
                               f"(summary {xd.get(keys[0], 0):#x}, instructions {yd.get(keys[0], 0):#x})")
            elif x.shape != y.shape or not np.array_equal(x, y):
                idx = np.nonzero(x != y)[0] if x.shape == y.shape else np.array([0])
                out.append(f"memory {name}: {idx.size} entries differ, first at {int(idx[0]):#x} "
                           f"(summary {int(x[idx[0]]):#x}, instructions {int(y[idx[0]]):#x})")
        elif x != y or type(x) is not type(y):
            out.append(f"state {name}: summary {x!r}, instructions {y!r}")
        if len(out) >= limit:
            break
    return out


def compare_summaries(ila: Ila, commands: Iterable[Mapping[str, int]], *, state: Mapping | None = None,
                      summaries: bool | Mapping[str, Callable | None] = True, allow_idle: bool = False,
                      max_child_steps: int = 10_000_000) -> SummaryComparison:
    """Differential check of loop summaries: run ``commands`` on two simulators of ``ila`` from the
    same initial ``state``, one with ``summaries`` (the registered ones, or a mapping as in
    :class:`Simulator`, e.g. a seeded bug), one instruction by instruction; after every command
    compare the fired instruction (or the error raised, by type and message), and after every
    command where a summary ran, and after the last, every architectural state: all scalar
    states and every entry of every memory. The number of child instructions a summary reports
    must equal the loop's. Returns a :class:`SummaryComparison` (bit-exact agreement: ``ok``)."""
    fast = Simulator(ila, state, summaries=summaries, max_child_steps=max_child_steps)
    slow = Simulator(ila, state, summaries=False, max_child_steps=max_child_steps)
    res = SummaryComparison()
    for k, cmd in enumerate(commands):
        outs = []
        for sim in (fast, slow):
            runs = sum(sim.summary_runs.values())
            try:
                outs.append(("ok", sim.step(cmd, allow_idle=allow_idle)))
            except SimulationError as exc:
                outs.append(("error", type(exc).__name__))
            outs[-1] += (sum(sim.summary_runs.values()) - runs,)
        res.commands = k + 1
        (kf, vf, ran), (ks, vs, _) = outs
        if (kf, vf) != (ks, vs):
            res.mismatches.append(f"command {k}: summary run gives {kf} {vf!r}, instruction run {ks} {vs!r}")
            break
        if ran:
            diff = _diff_state(fast, slow)
            if diff:
                res.mismatches += [f"command {k}: {d}" for d in diff]
                break
    else:
        res.mismatches += [f"after the last command: {d}" for d in _diff_state(fast, slow)]
    if not res.mismatches and fast.child_steps != slow.child_steps:
        res.mismatches.append(f"the summaries report {fast.child_steps} child instructions, the loops ran "
                              f"{slow.child_steps}")
    res.summary_runs = dict(fast.summary_runs)
    res.child_steps = (fast.child_steps, slow.child_steps)
    return res


__all__ = ["Simulator", "SummaryComparison", "compare_summaries"]
