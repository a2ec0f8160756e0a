"""ILA models: states, inputs, instructions (decode + per-state update) and child ILAs.

Mirrors ILAng's ``Ila`` / ``InstrRef`` (``NewBvInput`` -> :meth:`Ila.new_bv_input`, ...). Semantics
(ILAng, ``u_unroller.h``): a state without an update keeps its value; an instruction without a
decode decodes on true; a model without valid is always valid. Child ILAs (:meth:`Ila.new_child`)
read and write the parent's state and have their own valid and decodes; the simulator runs them to
quiescence after each top-level instruction (ILAng ILAtor semantics).

Names of states and inputs are unique across one hierarchy (root and all children), and so are
instruction names, so traces and simulator states can be keyed by name.
"""
from __future__ import annotations

import itertools
from typing import Iterator

from .errors import (DecodeError, DuplicateNameError, SortError, UndeclaredError, UpdateError,
                     WidthError, user_location)
from .expr import TRUE, Expr, as_expr, var
from .ops import Op
from .sorts import BOOL, BoolSort, BvSort, MemSort, Sort
from .walk import variables

_ila_ids = itertools.count(1)


class Instr:
    """One ILA instruction: a decode condition and an update per architectural state."""

    def __init__(self, name: str, host: "Ila"):
        self.name = name
        self.host = host
        self.decode: Expr | None = None
        self.updates: dict[Expr, Expr] = {}
        self.loc = user_location()

    def set_decode(self, decode) -> "Instr":
        """Set the decode condition (a Bool Expr). Setting it twice is a DecodeError."""
        if self.decode is not None:
            raise DecodeError(f"instruction {self.name!r} already has a decode")
        decode = as_expr(decode, what=f"decode of {self.name!r}")
        if not isinstance(decode.sort, BoolSort):
            raise DecodeError(f"decode of {self.name!r} must be Bool, got {decode.short()} of sort {decode.sort}")
        self.host._check_scope(decode, f"decode of {self.name!r}")
        self.decode = decode
        return self

    def set_update(self, state: Expr, value) -> "Instr":
        """Set the next value of ``state`` when this instruction fires.

        Raises UpdateError when the state is updated twice, UndeclaredError when ``state`` is not a
        state of this model, WidthError/SortError when ``value`` has another sort.
        """
        root = self.host.root
        if not isinstance(state, Expr) or state.op is not Op.VAR or state.payload[0] != "state":
            raise UndeclaredError(f"set_update of {self.name!r}: {state!r} is not a declared state")
        if root._vars.get(state.name, (None,))[0] is not state:
            raise UndeclaredError(f"set_update of {self.name!r}: state {state.name!r} is not declared in ILA {root.name!r}")
        if state in self.updates:
            raise UpdateError(f"instruction {self.name!r} updates state {state.name!r} twice")
        like = state if isinstance(state.sort, BvSort) else None
        value = as_expr(value, like, f"update of {state.name!r}")
        if value.sort != state.sort:
            cls = WidthError if isinstance(state.sort, BvSort) and isinstance(value.sort, BvSort) else SortError
            raise cls(f"update of {state.name!r} ({state.sort}) in {self.name!r} has sort {value.sort}: {value.short()}")
        self.host._check_scope(value, f"update of {state.name!r} in {self.name!r}")
        self.updates[state] = value
        return self

    def get_decode(self) -> Expr:
        return self.decode if self.decode is not None else TRUE

    def get_update(self, state: Expr) -> Expr | None:
        return self.updates.get(state)

    def __repr__(self) -> str:
        return f"Instr({self.host.name}.{self.name})"


class Ila:
    """An ILA model (or a child ILA when created by :meth:`new_child`)."""

    def __init__(self, name: str, *, _parent: "Ila | None" = None):
        if not isinstance(name, str) or not name:
            raise DuplicateNameError(f"ILA name must be a non-empty str, got {name!r}")
        self.name = name
        self.uid = next(_ila_ids)
        self.parent = _parent
        self.root: Ila = self if _parent is None else _parent.root
        self.loc = user_location()
        self._inputs: dict[str, Expr] = {}
        self._states: dict[str, Expr] = {}
        self._instrs: dict[str, Instr] = {}
        self._children: dict[str, Ila] = {}
        self._inits: list[Expr] = []
        self._valid: Expr | None = None
        self._fetch: Expr | None = None
        self._summary = None
        if _parent is None:
            self._vars: dict[str, tuple[Expr, Ila, int | None]] = {}
            self._instr_names: set[str] = set()
            self._ila_names: set[str] = {name}

    # ---------------------------------------------------------------- declarations
    def _declare(self, kind: str, name: str, sort: Sort, size: int | None = None) -> Expr:
        if not isinstance(name, str) or not name:
            raise DuplicateNameError(f"{kind} name must be a non-empty str, got {name!r}")
        root = self.root
        if name in root._vars:
            other = root._vars[name][1]
            raise DuplicateNameError(f"name {name!r} is already declared in ILA {other.name!r}")
        v = var(kind, name, sort, root.uid)
        root._vars[name] = (v, self, size)
        (self._inputs if kind == "input" else self._states)[name] = v
        return v

    def new_bv_input(self, name: str, width: int) -> Expr:
        """Declare a bit-vector input of ``width`` bits."""
        return self._declare("input", name, BvSort(width))

    def new_bool_input(self, name: str) -> Expr:
        return self._declare("input", name, BOOL)

    def new_bv_state(self, name: str, width: int) -> Expr:
        """Declare a bit-vector architectural state of ``width`` bits."""
        return self._declare("state", name, BvSort(width))

    def new_bool_state(self, name: str) -> Expr:
        return self._declare("state", name, BOOL)

    def new_mem_state(self, name: str, addr_width: int, data_width: int, size: int | None = None) -> Expr:
        """Declare a memory state Mem(addr_width, data_width).

        ``size`` is the number of entries really present (ILAng ``SetEntryNum``), addresses
        0..size-1; the simulator allocates a dense numpy array for it. Without a size the simulator
        uses a sparse map (unwritten entries read as 0).
        """
        sort = MemSort(addr_width, data_width)
        if size is not None and (not isinstance(size, int) or size < 1 or size > (1 << addr_width)):
            raise WidthError(f"memory {name!r}: size {size!r} must be in 1..2**{addr_width}")
        return self._declare("state", name, sort, size)

    def new_instr(self, name: str) -> Instr:
        """Declare an instruction; set its decode and updates on the returned :class:`Instr`."""
        root = self.root
        if not isinstance(name, str) or not name or name in root._instr_names:
            raise DuplicateNameError(f"instruction name {name!r} is already used in ILA {root.name!r}"
                                     if isinstance(name, str) and name else f"bad instruction name {name!r}")
        root._instr_names.add(name)
        ins = Instr(name, self)
        self._instrs[name] = ins
        return ins

    def new_child(self, name: str) -> "Ila":
        """Declare a child ILA that reads and writes this ILA's state."""
        root = self.root
        if name in root._ila_names:
            raise DuplicateNameError(f"child ILA name {name!r} is already used in ILA {root.name!r}")
        root._ila_names.add(name)
        child = Ila(name, _parent=self)
        self._children[name] = child
        return child

    def add_init(self, cond) -> None:
        """Add a Bool initial-state constraint (with none, initial values are arbitrary)."""
        cond = as_expr(cond, what="init")
        if not isinstance(cond.sort, BoolSort):
            raise SortError(f"init must be Bool, got {cond.short()} of sort {cond.sort}")
        self._check_scope(cond, "init")
        self._inits.append(cond)

    def set_valid(self, cond) -> None:
        """Set the valid condition (Bool); only once."""
        if self._valid is not None:
            raise DecodeError(f"ILA {self.name!r} already has a valid condition")
        cond = as_expr(cond, what="valid")
        if not isinstance(cond.sort, BoolSort):
            raise SortError(f"valid of {self.name!r} must be Bool, got {cond.short()} of sort {cond.sort}")
        self._check_scope(cond, "valid")
        self._valid = cond

    def set_fetch(self, expr) -> None:
        """Set the fetch function (a bit-vector); only once."""
        if self._fetch is not None:
            raise DecodeError(f"ILA {self.name!r} already has a fetch function")
        expr = as_expr(expr, what="fetch")
        if not isinstance(expr.sort, BvSort):
            raise SortError(f"fetch of {self.name!r} must be a bit-vector, got {expr.short()}")
        self._check_scope(expr, "fetch")
        self._fetch = expr

    def set_summary(self, fn, *, name: str | None = None) -> None:
        """Register a tensor-level summary of this child ILA's instruction loop (simulator only).

        ``fn(S, budget) -> int | None`` receives the simulator's state dict ``S`` (state name ->
        int / bool / numpy array, as in :class:`ila.sim.Simulator`) when this child is the only
        active one after a top-level instruction, and either declines (returns None: the
        simulator then runs the child instruction by instruction) or mutates ``S`` in place to
        exactly the state the child's loop reaches at quiescence and returns the number of child
        instructions it stands for (it must decline when that number exceeds ``budget``, so the
        loop raises its own error). The summary must be checked equal to the loop (bit-exact
        differential tests comparing every state after quiescence, :func:`ila.sim.compare_summaries`);
        the simulator selects it (``Simulator(..., summaries=True)``, the default), the SMT lowering
        and BMC never see it: proofs keep using the child's instructions. Only a child ILA has a
        summary, and only one (DecodeError otherwise).
        """
        if self.parent is None:
            raise DecodeError(f"ILA {self.name!r} is a top-level ILA: only a child ILA's loop has a summary")
        if self._summary is not None:
            raise DecodeError(f"child ILA {self.name!r} already has a summary ({self._summary_name!r})")
        if not callable(fn):
            raise DecodeError(f"summary of {self.name!r} must be callable, got {fn!r}")
        self._summary = fn
        self._summary_name = name or getattr(fn, "__name__", "summary")

    @property
    def summary(self):
        """The registered simulator summary of this child's loop (:meth:`set_summary`), or None."""
        return self._summary

    def _check_scope(self, e: Expr, what: str) -> None:
        root = self.root
        for v in variables([e]):
            known = root._vars.get(v.name)
            if known is None or known[0] is not v:
                raise UndeclaredError(f"{what} uses {v.name!r}, which is not declared in ILA {root.name!r}")

    # ---------------------------------------------------------------- access
    def _get(self, table: dict, kind: str, name: str):
        if name in table:
            return table[name]
        raise UndeclaredError(f"ILA {self.name!r} has no {kind} {name!r}")

    def input(self, name: str) -> Expr:
        return self._get(self._inputs, "input", name)

    def state(self, name: str) -> Expr:
        """A state of this ILA or, for a child, of an ancestor."""
        ila: Ila | None = self
        while ila is not None:
            if name in ila._states:
                return ila._states[name]
            ila = ila.parent
        raise UndeclaredError(f"ILA {self.name!r} has no state {name!r}")

    def instr(self, name: str) -> Instr:
        return self._get(self._instrs, "instruction", name)

    def child(self, name: str) -> "Ila":
        return self._get(self._children, "child", name)

    @property
    def inputs(self) -> list[Expr]:
        return list(self._inputs.values())

    @property
    def states(self) -> list[Expr]:
        return list(self._states.values())

    @property
    def instrs(self) -> list[Instr]:
        return list(self._instrs.values())

    @property
    def children(self) -> list["Ila"]:
        return list(self._children.values())

    @property
    def inits(self) -> list[Expr]:
        return list(self._inits)

    @property
    def valid(self) -> Expr:
        return self._valid if self._valid is not None else TRUE

    @property
    def fetch(self) -> Expr | None:
        return self._fetch

    # ---------------------------------------------------------------- hierarchy
    def walk(self) -> Iterator["Ila"]:
        """This ILA and all descendants, parents first."""
        yield self
        for c in self._children.values():
            yield from c.walk()

    def all_states(self) -> list[Expr]:
        return [v for ila in self.walk() for v in ila._states.values()]

    def all_inputs(self) -> list[Expr]:
        return [v for ila in self.walk() for v in ila._inputs.values()]

    def reset_values(self) -> dict[str, int | bool]:
        """The reset value of every scalar state of this ILA and its children: the constant of an
        ``add_init(state.eq(const))``, else 0 (bit-vectors) or False (Bool). Memories are not
        included (the simulator zeroes them; proofs keep them symbolic). The one definition of
        reset used by the simulator and by the checkers."""
        out: dict[str, int | bool] = {v.name: (False if v.sort.is_bool else 0)
                                      for v in self.all_states() if not v.sort.is_mem}
        for ila in self.walk():
            for c in ila._inits:
                a, b = (tuple(c.args) + (None, None))[:2]
                if c.op.name == "EQ" and a is not None and a.op.name == "VAR" and b.op.name == "CONST" \
                        and not a.sort.is_mem:
                    out[a.name] = b.payload
        return out

    def all_instrs(self) -> list[Instr]:
        return [i for ila in self.walk() for i in ila._instrs.values()]

    def find_instr(self, name: str) -> Instr:
        """An instruction anywhere in the hierarchy, by name."""
        for ila in self.walk():
            if name in ila._instrs:
                return ila._instrs[name]
        raise UndeclaredError(f"ILA {self.name!r} has no instruction {name!r} (nor do its children)")

    def mem_size(self, name: str) -> int | None:
        return self.root._vars[name][2]

    def host_chain_valid(self) -> list[Expr]:
        """Valid conditions of this ILA and its ancestors (a child runs only when all hold)."""
        out, ila = [], self
        while ila is not None:
            out.append(ila.valid)
            ila = ila.parent
        return out

    def __repr__(self) -> str:
        return f"Ila({self.name!r}: {len(self._inputs)} inputs, {len(self._states)} states, " \
               f"{len(self._instrs)} instrs, {len(self._children)} children)"
