"""Candidate invariant conjuncts generated from a loop's structure, for :mod:`verify.houdini`.

Nothing here is specific to a mapping: the templates read the cell-morphed loop system
(:class:`verify.cells.LoopSystem`) and its start state and instantiate, for every guard ``g``
among ``true``, ``q = k`` (a *control variable* q — one compared with constants in the decodes —
at each of its constants k) and ``q = k ∧ x ≠ 0`` (x a counter):

* configuration: ``v = v₀`` for every variable whose start value ``v₀`` mentions no loop variable
  (the configuration registers, which the loop should not write);
* counters (variables some instruction updates to ``x + d``, d constant): ``g → x ⋈ s`` for
  ⋈ ∈ {=, ≤, <} and s a configuration value of the same width (the sizes), and ``g → x = 0``,
  ``g → x ≥ 1``, ``g → x ≥ 2``, ``g → x even``; ``g → x < E``, ``g → x ≤ E`` for a bound E the
  instructions compare ``x`` or ``x + d`` with (also zero-extended: ``zext(x) < E``); and for a
  counter that wraps to a configuration term R (``x := ite(c, R, x + d)``, e.g. a micro-op pc
  restarting at the loop's first micro-op) ``g → x = R`` and ``g → x ≥ R``;
* registers (variables updated to a non-constant expression ``e`` by an instruction that steps
  counters by d): ``g → r = e[x := x − d]`` (the value the instruction left, expressed in the
  current counters);
* control: ``g → q ∈ {constants}`` and, for one-bit variables b, ``b = c → q = k`` (a
  configuration register compared with constants, such as a mode, is not a control variable).

Houdini keeps the inductive subset; what the templates cannot express must come from elsewhere
(the relational cell conjuncts of a mapping family).
"""
from __future__ import annotations

from ila.expr import TRUE, Expr, bv_const, implies, land, lor
from ila.ops import Op
from ila.walk import toposort


def _vars_in(e: Expr) -> set[int]:
    return {n.uid for n in toposort([e]) if n.op is Op.VAR}


def loop_candidates(sysm, start: dict) -> list[Expr]:
    loop = {v.uid for v in sysm.vars}
    states = list(sysm.states)
    out: list[Expr] = []

    # configuration values
    config = {}
    for v in states:
        v0 = start.get(v)
        if v0 is not None and not (_vars_in(v0) & loop) and all(u.get(v, v) is v for u in sysm.next_by_instr):
            config[v] = v0
            out.append(v.eq(v0))

    # control variables and their constants
    codes: dict[Expr, set[int]] = {}
    for _, fire in sysm.fires:
        for n in toposort([fire]):
            if n.op is Op.EQ and n.args[0].op is Op.VAR and n.args[0].uid in loop and n.args[1].op is Op.CONST \
                    and not n.args[0].sort.is_bool and n.args[0].sort.width > 1:
                codes.setdefault(n.args[0], set()).add(n.args[1].payload)
    # a configuration register compared with constants (a mode) is not a control variable: the
    # loop never writes it, so guards on its other values are vacuous and its own value is a
    # configuration candidate already
    codes = {q: ks for q, ks in codes.items() if q not in config}
    for q in codes:
        for upd in sysm.next_by_instr:
            e = upd.get(q, q)
            for n in toposort([e]):
                if n.op is Op.CONST and n.sort == q.sort:
                    codes[q].add(n.payload)

    # counters: x -> step d per instruction (x + d, possibly under ite: a carry chain), and the
    # bounds they are compared with (x + d = E: wrap-around at E)
    steps: list[dict[Expr, int]] = []
    counters: set[Expr] = set()
    bounds: dict[Expr, list[Expr]] = {}
    widened: dict[Expr, list[tuple[Expr, Expr]]] = {}     # x -> (zext(x), E) for zext(x) [+ d] = E
    resets: dict[Expr, list[Expr]] = {}                   # x -> R for x := ite(c, R, x + d)
    config_uids = {v.uid for v in config}
    for upd in sysm.next_by_instr:
        st = {}
        for v in states:
            e = upd.get(v, v)
            if e.op is Op.ADD and e.args[0] is v and e.args[1].op is Op.CONST:
                st[v] = e.args[1].payload
            for n in toposort([e]):
                if n.op is Op.ADD and n.args[0] is v and n.args[1].op is Op.CONST:
                    counters.add(v)
                if n.op is Op.EQ and n.args[1].op is not Op.CONST and not (_vars_in(n.args[1]) & {v.uid}):
                    lhs = n.args[0].args[0] if n.args[0].op is Op.ADD and n.args[0].args[1].op is Op.CONST \
                        else n.args[0]
                    if lhs is v:
                        bounds.setdefault(v, []).append(n.args[1])   # x = E (last value) or x + d = E (wrap)
                    elif lhs.op is Op.ZEXT and lhs.args[0] is v:     # the same, compared zero-extended
                        widened.setdefault(v, []).append((lhs, n.args[1]))
                if n.op is Op.ITE and n.args[2].op is Op.ADD and n.args[2].args[0] is v \
                        and n.args[2].args[1].op is Op.CONST and n.args[1] is not v and n.args[1].op is not Op.CONST \
                        and not (_vars_in(n.args[1]) & (loop - config_uids)):
                    resets.setdefault(v, []).append(n.args[1])       # x := ite(wrap, R, x + d): R a configuration term
        steps.append(st)

    guards = [TRUE]
    for b in states:
        if b.sort.is_bool:
            guards += [b, ~b]
    for q, ks in codes.items():
        for k in sorted(ks):
            g = q.eq(bv_const(k, q.sort.width))
            guards.append(g)
            guards.extend(g & ~x.eq(0) for x in sorted(counters, key=lambda x: x.uid))

    sizes = {}
    for v, v0 in config.items():
        if v0.sort.is_bool or (v0.op is Op.CONST and v0.payload == 0):
            continue
        if v0 not in sizes.get(v0.sort.width, []):
            sizes.setdefault(v0.sort.width, []).append(v0)

    atoms = []
    for x in sorted(counters, key=lambda x: x.uid):
        w = x.sort.width
        for s in sizes.get(w, []):
            atoms += [x.eq(s), x.ule(s), x.ult(s)]
        for e in bounds.get(x, []):
            atoms += [x.ult(e), x.ule(e)]
        for xe, e in widened.get(x, []):
            atoms += [xe.ult(e), xe.ule(e)]
        for r in resets.get(x, []):
            atoms += [x.eq(r), x.uge(r)]
        atoms += [x.eq(0), x.uge(1), x.uge(2), x[0].eq(0)]
    from ila.simplify import Rewriter
    for upd, st in zip(sysm.next_by_instr, steps):
        back = Rewriter({x: x - d for x, d in st.items()})
        for r in states:
            e = upd.get(r, r)
            if r in counters or r in config or e is r or e.op is Op.CONST or r in codes:
                continue
            if r.sort.is_bool or r.sort.width == 1:
                continue
            atoms.append(r.eq(back.one(e)))
    # tracked cells keep their start values (inputs the loop must not overwrite)
    out += [c.eq(start[c]) for c in sysm.cells if c in start]
    for g in guards:
        for a in atoms:
            out.append(a if g is TRUE else implies(g, a))
    for q, ks in codes.items():
        out.append(lor(*[q.eq(bv_const(k, q.sort.width)) for k in sorted(ks)]))
        for b in states:
            if not b.sort.is_bool and b.sort.width == 1 and b is not q:
                for c in (0, 1):
                    out.append(implies(b.eq(c), lor(*[q.eq(bv_const(k, q.sort.width)) for k in sorted(ks)])))
                    out += [implies(b.eq(c), q.eq(bv_const(k, q.sort.width))) for k in sorted(ks)]
    return out


__all__ = ["loop_candidates", "land"]
