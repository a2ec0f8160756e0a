"""Compilation of expression DAGs to straight-line Python functions over numpy values.

The generated function ``f(S, I)`` reads states from ``S`` and inputs from ``I`` (dicts by name)
and returns the values of the requested expressions, calling the numpy implementations of
:data:`ila.semantics.TABLE` (the one source of semantics). Memory states are read as
:class:`~ila.semantics.MemValue` views of the arrays in ``S``.

Lane vectorisation: a chain of at least :data:`MIN_LANES` stores whose addresses and data have the
same structure per lane (differing only in constants or in leaves, e.g. ``mem[a+i] := f(mem[b+i])``
for i = 0..15) is anti-unified into one template evaluated once on numpy lane arrays, so a 16-lane
instruction costs one numpy operation per template node instead of 16 scalar evaluations.
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from .errors import IlaInternalError
from .expr import Expr, var
from .ops import Op
from .semantics import TABLE, MemValue, as_lanes, dtype_for, mask
from .sorts import BvSort, MemSort
from .walk import toposort

MIN_LANES = 4
_slot_ids = itertools.count()


class _Lanes:
    """A vectorised store chain: base memory, lane templates and their slots."""

    def __init__(self, base: Expr, taddr: Expr, tdata: Expr, slots: list[tuple[Expr, list[Expr]]], n: int):
        self.base, self.taddr, self.tdata, self.slots, self.n = base, taddr, tdata, slots, n


def _anti_unify(groups: list[list[Expr]]) -> tuple[list[Expr], list[tuple[Expr, list[Expr]]]] | None:
    """Templates for each group of per-lane expressions, with slot variables where lanes differ."""
    memo: dict[tuple[int, ...], Expr] = {}
    slots: list[tuple[Expr, list[Expr]]] = []

    def au(es: list[Expr]) -> Expr | None:
        key = tuple(e.uid for e in es)
        if key in memo:
            return memo[key]
        e0 = es[0]
        if all(e is e0 for e in es):
            out = e0
        elif (e0.op not in (Op.CONST, Op.VAR)
              and all(e.op is e0.op and e.sort == e0.sort and e.payload == e0.payload
                      and len(e.args) == len(e0.args) for e in es)):
            args = []
            for k in range(len(e0.args)):
                t = au([e.args[k] for e in es])
                if t is None:
                    return None
                args.append(t)
            out = Expr(e0.op, e0.sort, tuple(args), e0.payload)
        else:
            if isinstance(e0.sort, MemSort):
                return None
            out = var("slot", f"__slot{next(_slot_ids)}", e0.sort, -1)
            slots.append((out, es))
        memo[key] = out
        return out

    outs = []
    for g in groups:
        t = au(g)
        if t is None:
            return None
        outs.append(t)
    return outs, slots


def _store_chain(top: Expr) -> tuple[Expr, list[Expr], list[Expr]]:
    addrs, datas = [], []
    node = top
    while node.op is Op.STORE:
        addrs.append(node.args[1])
        datas.append(node.args[2])
        node = node.args[0]
    addrs.reverse()
    datas.reverse()
    return node, addrs, datas


def plan_lanes(roots: Sequence[Expr]) -> dict[int, _Lanes]:
    """Find vectorisable store-chain tops among the nodes reachable from ``roots``."""
    nodes = toposort(roots)
    inner: set[int] = {n.args[0].uid for n in nodes if n.op is Op.STORE}
    plans: dict[int, _Lanes] = {}
    for n in nodes:
        if n.op is not Op.STORE or n.uid in inner:
            continue
        base, addrs, datas = _store_chain(n)
        if len(addrs) < MIN_LANES:
            continue
        res = _anti_unify([addrs, datas])
        if res is None:
            continue
        (ta, td), slots = res
        if not slots:
            continue
        plans[n.uid] = _Lanes(base, ta, td, slots, len(addrs))
    return plans


# Scalar fast path: for a node whose value is statically a scalar (no lane array can reach it), the
# scalar branch of its TABLE implementation written inline (one line per node, still evaluated
# eagerly in the same order), instead of a call that tests for lanes at run time. Each template is
# the scalar branch of ila.semantics verbatim; tests compare both paths (and numpy with SMT).
_INLINE = {
    Op.AND: "({0} & {1})", Op.OR: "({0} | {1})", Op.XOR: "({0} ^ {1})",
    Op.BVAND: "({0} & {1})", Op.BVOR: "({0} | {1})", Op.BVXOR: "({0} ^ {1})",
    Op.NOT: "(not {0})", Op.IMPLIES: "((not {0}) | {1})",
    Op.ADD: "(({0} + {1}) & {M})", Op.SUB: "(({0} - {1}) & {M})", Op.MUL: "(({0} * {1}) & {M})",
    Op.BVNOT: "({0} ^ {M})",
    Op.CONCAT: "(({0} << {WB}) | {1})", Op.EXTRACT: "(({0} >> {LO}) & {ME})", Op.ZEXT: "{0}",
    Op.ULT: "({0} < {1})", Op.ULE: "({0} <= {1})", Op.UGT: "({0} > {1})", Op.UGE: "({0} >= {1})",
    Op.SHL: "(0 if {1} >= {W} else ({0} << {1}) & {M})", Op.LSHR: "(0 if {1} >= {W} else {0} >> {1})",
    Op.UDIV: "({M} if {1} == 0 else {0} // {1})", Op.UREM: "({0} if {1} == 0 else {0} % {1})",
}


def _load1(m: MemValue, a):
    """Inline scalar LOAD: MemValue.load's own path for a pending-write-free dense memory and an
    address inside it, else MemValue.load itself (same value or error)."""
    b = m.base
    if not m.writes and type(b) is np.ndarray and a < b.shape[0]:
        return int(b[a])
    return m.load(a)


class _Codegen:
    def __init__(self, inline: bool = True):
        self.inline = inline
        self.lanes: set[int] = set()          # uids of nodes whose value may be a lane array
        self.lines: list[str] = []
        self.glob: dict[str, object] = {"MemValue": MemValue, "as_lanes": as_lanes, "np": np, "LD1": _load1}
        self.names: dict[int, str] = {}
        self.lane_vars: dict[int, str] = {}
        self._k = itertools.count()

    def const(self, value, prefix="c") -> str:
        name = f"{prefix}{next(self._k)}"
        self.glob[name] = value
        return name

    def emit(self, roots: Sequence[Expr], plans: dict[int, _Lanes]) -> list[str]:
        def deps(n: Expr) -> list[Expr]:
            p = plans.get(n.uid)
            if p is None:
                return list(n.args)
            out = [p.base]
            for _, es in p.slots:
                if not all(e.op is Op.CONST for e in es):
                    out.extend(es)
            return out + [p.taddr, p.tdata]

        order = toposort(list(roots), deps)
        slot_src: dict[int, tuple[list[Expr], int]] = {}
        for p in plans.values():
            for sv, es in p.slots:
                slot_src[sv.uid] = (es, p.n)
        for n in order:
            self.names[n.uid] = self._node(n, plans, slot_src)
        return [self.names[r.uid] for r in roots]

    def _node(self, n: Expr, plans, slot_src) -> str:
        t = f"t{n.uid}"
        op = n.op
        if op is Op.CONST:
            return self.const(n.payload)
        if any(a.uid in self.lanes for a in n.args if not isinstance(a.sort, MemSort)):
            self.lanes.add(n.uid)
        if op is Op.VAR:
            kind, name = n.payload[0], n.payload[1]
            if kind == "slot":
                self.lanes.add(n.uid)
                es, count = slot_src[n.uid]
                w = n.sort.width if isinstance(n.sort, BvSort) else 1
                if all(e.op is Op.CONST for e in es):
                    arr = np.array([e.payload for e in es], dtype=bool if n.sort.is_bool else dtype_for(w))
                    return self.const(arr, "lane")
                dt = "bool" if n.sort.is_bool else ("np.uint64" if w <= 64 else "object")
                self.lines.append(f"{t} = np.array([{', '.join(self.names[e.uid] for e in es)}], dtype={dt})")
                return t
            if kind == "input":
                self.lines.append(f"{t} = I[{name!r}]")
            elif isinstance(n.sort, MemSort):
                self.lines.append(f"{t} = MemValue(S[{name!r}], (), {name!r})")
            else:
                self.lines.append(f"{t} = S[{name!r}]")
            return t
        p = plans.get(n.uid)
        if p is not None:
            w_a, w_d = p.taddr.sort.width, p.tdata.sort.width
            a, d = self.names[p.taddr.uid], self.names[p.tdata.uid]
            self.lines.append(
                f"{t} = {self.names[p.base.uid]}.store(np.broadcast_to(as_lanes({a}, {w_a}), ({p.n},)), "
                f"np.broadcast_to(as_lanes({d}, {w_d}), ({p.n},)))")
            return t
        tmpl = _INLINE.get(op) if self.inline and n.uid not in self.lanes else None
        if op is Op.EQ and self.inline and n.uid not in self.lanes and not isinstance(n.args[0].sort, MemSort):
            tmpl = "({0} == {1})"
        elif op is Op.ITE and self.inline and n.uid not in self.lanes and not isinstance(n.sort, MemSort):
            tmpl = "({1} if {0} else {2})"
        elif op is Op.LOAD and self.inline and n.uid not in self.lanes:
            tmpl = "LD1({0}, {1})"
        if tmpl is not None:
            args = [self.names[a.uid] for a in n.args]
            w = n.sort.width if isinstance(n.sort, BvSort) else 1
            extra = {"M": mask(w), "W": w}
            if op is Op.CONCAT:
                extra["WB"] = n.args[1].sort.width
            elif op is Op.EXTRACT:
                hi, lo = n.payload
                extra["LO"], extra["ME"] = lo, mask(hi - lo + 1)
            self.lines.append(f"{t} = " + tmpl.format(*args, **extra))
            return t
        impl = TABLE[op].numpy
        if impl is None:
            raise IlaInternalError(f"no numpy implementation for {op}")
        fname = self.const(impl, "F")
        nname = self.const(n, "N")
        args = ", ".join(self.names[a.uid] for a in n.args)
        self.lines.append(f"{t} = {fname}({nname}, {args})")
        return t


def compile_exprs(exprs: Sequence[Expr], *, vectorize: bool = True, name: str = "f", inline: bool = False):
    """Compile ``exprs`` into ``f(S, I) -> tuple`` of their values (see module docstring).
    ``inline``: write the scalar branch of simple ops inline where no lane array of the function's
    own making can reach them (same values; False calls the TABLE implementation for every node).
    Only for callers whose states and inputs are scalars (the simulator's are: Python ints and
    bools, memories aside); with lane arrays in ``S`` or ``I`` use the default."""
    import re
    # an ASCII identifier: Python NFKC-normalises non-ASCII names ('ﬁlter' defines 'filter') and
    # refuses others ('x²'), and the name is only a label of the generated function
    name = "f_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    cg = _Codegen(inline)
    plans = plan_lanes(exprs) if vectorize else {}
    outs = cg.emit(list(exprs), plans)
    body = "\n    ".join(cg.lines) if cg.lines else "pass"
    src = f"def {name}(S, I):\n    {body}\n    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})\n"
    ns = dict(cg.glob)
    exec(compile(src, f"<ila-compiled {name}>", "exec"), ns)
    fn = ns[name]
    fn.source = src
    fn.lanes = len(plans)
    return fn


def evaluate(exprs: Sequence[Expr], states: dict, inputs: dict | None = None, *, vectorize: bool = False):
    """Evaluate expressions once on concrete states/inputs (memories as arrays or dicts)."""
    fn = compile_exprs(exprs, vectorize=vectorize)
    return fn(states, inputs or {})


__all__ = ["compile_exprs", "evaluate", "plan_lanes", "mask"]
