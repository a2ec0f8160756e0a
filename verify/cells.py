"""Cell morphing: a child-ILA loop as an array-free transition system over tracked memory cells.

After Monniaux and Gonnord ("Cell morphing: from array programs to array-free Horn clauses",
SAS 2016): instead of the whole memory, track the values of a few memory cells at symbolic
addresses (e.g. the output cell (τ*, c*) of a tensor operation and the input cells it reads). A
proof for symbolic τ*, c* is a proof for every cell, and with symbolic bounds for every size.

:func:`loop_system` takes the child instructions of an ILA (the real model's instructions), and
rewrites their decodes and updates so that the tracked memory appears only through its cells:

* ``load(M, a)`` is ``ite(a = t1, c1, ite(a = t2, c2, ... h))`` with ``h`` a fresh *havoc*
  variable (an unconstrained value: loads outside the tracked cells over-approximate);
* the next value of cell k is ``load(M', t_k)`` for the instruction's new memory ``M'``, resolved
  through its stores (``load(store(m, a, d), t) = ite(t = a, d, load(m, t))``) and ``ite``s;
* other memories are havoc on every load.

The result is sound (an over-approximation of the loop) and quantifier-free.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ila import Ila
from ila.errors import IlaError
from ila.expr import FALSE, Expr, lor
from ila.ops import Op
from ila.simplify import Rewriter
from ila.sorts import BOOL, BvSort
from ila.unroll import symbol
from ila.walk import toposort

_havoc_ids = itertools.count()


@dataclass
class LoopSystem:
    """Array-free transition system of a child-ILA loop.

    ``vars`` are the current-state variables (the model's scalar state VARs, then the cell
    symbols); ``next[v]`` their next values over ``vars`` and ``havocs``; ``enabled`` holds when
    some child instruction fires; ``fires`` the per-instruction fire conditions (for checking
    that at most one fires)."""
    ila: Ila
    memory: str
    addrs: list[Expr]
    cells: list[Expr]
    states: list[Expr]
    next: dict[Expr, Expr]
    enabled: Expr
    fires: list[tuple[str, Expr]]
    havocs: list[Expr] = field(default_factory=list)
    next_by_instr: list[dict[Expr, Expr]] = field(default_factory=list)   # per fire: var -> next

    @property
    def vars(self) -> list[Expr]:
        return self.states + self.cells

    def consistency(self) -> Expr:
        """Cells at equal addresses hold equal values (true of any memory; part of every loop
        invariant, since loads read the first matching cell)."""
        from ila.expr import implies, land
        return land(*[implies(self.addrs[i].eq(self.addrs[j]), self.cells[i].eq(self.cells[j]))
                      for i in range(len(self.cells)) for j in range(i + 1, len(self.cells))])


class _Morph:
    def __init__(self, mem: Expr, addrs: list[Expr], cells: list[Expr], havocs: list[Expr], tag: str):
        self.mem, self.addrs, self.cells, self.havocs, self.tag = mem, addrs, cells, havocs, tag
        self.memo: dict[int, Expr] = {}
        self.rw = Rewriter()

    def havoc(self, width: int) -> Expr:
        h = symbol(f"havoc_{self.tag}_{next(_havoc_ids)}", BvSort(width))
        self.havocs.append(h)
        return h

    def load_from(self, m: Expr, a: Expr) -> Expr:
        b = self.rw.build
        if m is self.mem:
            out = self.havoc(m.sort.data_width)
            for t, c in reversed(list(zip(self.addrs, self.cells))):
                if t is a:
                    out = c
                else:
                    out = b(Op.ITE, c.sort, (b(Op.EQ, BOOL, (a, t), None), c, out), None)
            return out
        if m.op is Op.STORE:
            a2 = self.expr(m.args[1])
            d = self.expr(m.args[2])
            rest = self.load_from(m.args[0], a)
            return b(Op.ITE, d.sort, (b(Op.EQ, BOOL, (a, a2), None), d, rest), None)
        if m.op is Op.ITE:
            c = self.expr(m.args[0])
            return b(Op.ITE, BvSort(m.sort.data_width), (c, self.load_from(m.args[1], a), self.load_from(m.args[2], a)), None)
        if m.op is Op.VAR:           # another memory: not tracked
            return self.havoc(m.sort.data_width)
        raise IlaError(f"cell morphing: unsupported memory expression {m.short()}")

    def expr(self, e: Expr) -> Expr:
        """``e`` (a non-memory expression) with every load resolved through the cells."""
        for n in toposort([e]):
            if n.uid in self.memo:
                continue
            if n.sort.is_mem:
                continue
            if n.op is Op.LOAD:
                out = self.load_from(n.args[0], self.memo[n.args[1].uid])
            elif n.args:
                out = self.rw.build(n.op, n.sort, tuple(self.memo[a.uid] for a in n.args), n.payload)
            else:
                out = n
            self.memo[n.uid] = out
        return self.memo[e.uid]


def active_children(ila: Ila, state: dict[str, Expr]) -> list[Ila]:
    """Children whose valid does not simplify to false in ``state``, closed under the children
    that could switch another one on (an instruction of an active child updating a state that an
    inactive child's valid reads)."""
    children = [c for c in ila.walk() if c is not ila]
    env = {v: state[v.name] for v in ila.all_states() if v.name in state}
    rw = Rewriter(env)
    active = [c for c in children if rw.one(c.valid) is not FALSE]
    changed = True
    while changed:
        changed = False
        written = {s.name for c in active for i in c.instrs for s in i.updates}
        for c in children:
            if c in active:
                continue
            if written & {v.name for v in toposort([c.valid]) if v.op is Op.VAR}:
                active.append(c)
                changed = True
    return active


def loop_system(ila: Ila, memory: str, addrs: list[Expr], *, start_state: dict[str, Expr], tag: str) -> LoopSystem:
    """Cell-morphed transition system of the child loops of ``ila`` active in ``start_state``."""
    mem = ila.state(memory)
    kids = active_children(ila, start_state)
    instrs = [i for c in kids for i in c.instrs]
    cells = [symbol(f"cell_{tag}_{k}", BvSort(mem.sort.data_width)) for k in range(len(addrs))]
    havocs: list[Expr] = []
    mo = _Morph(mem, addrs, cells, havocs, tag)
    support: list[Expr] = []
    seen = set()
    for i in instrs:
        for e in [i.host.valid, i.get_decode(), *i.updates.keys(), *i.updates.values()]:
            for v in toposort([e]):
                if v.op is Op.VAR and not v.sort.is_mem and v.payload[0] == "state" and v.uid not in seen:
                    seen.add(v.uid)
                    support.append(v)
    fires = []
    nxt: dict[Expr, Expr] = {v: v for v in support + cells}
    per_instr = []
    for i in instrs:
        fire = mo.expr(mo.rw.build(Op.AND, BOOL, (i.host.valid, i.get_decode()), None))
        upd = {}
        for s in support:
            u = i.get_update(s)
            upd[s] = mo.expr(u) if u is not None else s
        new_mem = i.get_update(mem)
        for t, c in zip(addrs, cells):
            upd[c] = mo.load_from(new_mem, t) if new_mem is not None else c
        fires.append((i.name, fire))
        per_instr.append((fire, upd))
    for fire, upd in reversed(per_instr):
        for v in nxt:
            nxt[v] = mo.rw.build(Op.ITE, v.sort, (fire, upd[v], nxt[v]), None)
    enabled = lor(*[f for _, f in fires]) if fires else FALSE
    return LoopSystem(ila, memory, addrs, cells, support, nxt, mo.rw.one(enabled), fires, havocs,
                      [upd for _, upd in per_instr])

