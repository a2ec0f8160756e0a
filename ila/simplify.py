"""Substitution with simplification: the engine of path unrolling (symbolic execution).

:class:`Rewriter` rebuilds expression DAGs under a variable substitution and simplifies as it goes:

* constant folding through the numpy implementations of :data:`ila.semantics.TABLE` (the one
  source of semantics; uninterpreted functions are never folded unless asked);
* read-over-write: ``load(store(m, a, d), b)`` is ``d`` when ``a`` and ``b`` are the same term and
  skips the store when both are distinct constants; long chains of constant-address stores are
  indexed so a load costs a dict lookup;
* Boolean and ``ite`` identities (``true & x = x``, ``ite(true, a, b) = a``, ``x = x`` is true).

Every rule is an SMT-LIB identity, so simplified and raw terms are equivalent.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Mapping, Sequence

from .expr import FALSE, TRUE, Expr
from .ops import Op
from .semantics import TABLE
from .walk import toposort

_NO_FOLD = {Op.VAR, Op.CONST, Op.LOAD, Op.STORE, Op.APPLY}
# Store-chain indexes are shared by all rewriters (keyed by node uid, which is never reused), so
# symbolic execution, which makes a rewriter per step, keeps them across steps.
_CHAIN_INDEX: "OrderedDict[int, tuple[dict, Expr]]" = OrderedDict()
_CHAIN_INDEX_SIZE = 8


class Rewriter:
    """Substitute and simplify. One instance may be reused for many expressions (it memoises)."""

    def __init__(self, mapping: Mapping[Expr, Expr] | None = None, *, fold_ufs: bool = False):
        self.mapping = dict(mapping or {})
        self.fold_ufs = fold_ufs
        self.memo: dict[int, Expr] = {}
        self._index = _CHAIN_INDEX

    def __call__(self, exprs: Sequence[Expr]) -> list[Expr]:
        """The rewritten ``exprs``. Nodes rewritten by an earlier call are not visited again, nor
        is anything below them (an iterative post-order over the nodes not yet in the memo)."""
        memo = self.memo
        seen: set[int] = set()
        stack = [(e, False) for e in reversed(exprs) if e.uid not in memo]
        while stack:
            n, expanded = stack.pop()
            if expanded:
                if n.op is Op.VAR:
                    memo[n.uid] = self.mapping.get(n, n)
                elif not n.args:
                    memo[n.uid] = n
                else:
                    memo[n.uid] = self.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
                continue
            if n.uid in seen or n.uid in memo:
                continue
            seen.add(n.uid)
            stack.append((n, True))
            for a in reversed(n.args):
                if a.uid not in seen and a.uid not in memo:
                    stack.append((a, False))
        return [memo[e.uid] for e in exprs]

    def one(self, e: Expr) -> Expr:
        return self([e])[0]

    # ------------------------------------------------------------------ smart constructor
    def build(self, op: Op, sort, args: tuple, payload) -> Expr:
        if op not in _NO_FOLD and all(a.op is Op.CONST for a in args):
            val = TABLE[op].numpy(Expr(op, sort, args, payload), *[a.payload for a in args])
            return Expr(Op.CONST, sort, (), bool(val) if sort.is_bool else int(val))
        if op is Op.APPLY and self.fold_ufs and payload.body is not None and all(a.op is Op.CONST for a in args):
            node = Expr(op, sort, args, payload)
            return Expr(Op.CONST, sort, (), TABLE[op].numpy(node, *[a.payload for a in args]))
        if op is Op.LOAD:
            return self._load(args[0], args[1])
        if op is Op.ITE:
            c, t, e = args
            if c.op is Op.CONST:
                return t if c.payload else e
            if t is e:
                return t
            if sort.is_bool and t is TRUE and e is FALSE:
                return c
            if _const(t, 0) and _is_zero_test(c, e):      # ite(x = 0, 0, x) = x
                return e
        elif op is Op.AND:
            a, b = args
            if a is FALSE or b is FALSE:
                return FALSE
            if a is TRUE:
                return b
            if b is TRUE or a is b:
                return a
        elif op is Op.OR:
            a, b = args
            if a is TRUE or b is TRUE:
                return TRUE
            if a is FALSE:
                return b
            if b is FALSE or a is b:
                return a
        elif op is Op.NOT:
            if args[0].op is Op.NOT:
                return args[0].args[0]
        elif op is Op.IMPLIES:
            a, b = args
            if a is FALSE or b is TRUE:
                return TRUE
            if a is TRUE:
                return b
        elif op is Op.EQ:
            if args[0] is args[1]:
                return TRUE
        elif op is Op.EXTRACT and args[0].op is Op.CONCAT:
            hi, lo = payload
            top, bot = args[0].args
            wb = bot.sort.width
            if hi < wb:
                return self.build(op, sort, (bot,), payload) if (hi, lo) != (wb - 1, 0) else bot
            if lo >= wb:
                return self.build(op, sort, (top,), (hi - wb, lo - wb)) if (hi - wb, lo - wb) != (top.sort.width - 1, 0) else top
        elif op is Op.EXTRACT and payload == (args[0].sort.width - 1, 0):
            return args[0]
        elif op is Op.EXTRACT and args[0].op is Op.EXTRACT:       # extract of extract
            hi, lo = payload
            base_lo = args[0].payload[1]
            return self.build(op, sort, args[0].args, (hi + base_lo, lo + base_lo))
        elif op is Op.CONCAT and args[0].op is Op.EXTRACT and args[1].op is Op.EXTRACT \
                and args[0].args[0] is args[1].args[0] and args[0].payload[1] == args[1].payload[0] + 1:
            # adjacent fields of one value: concat(x[h:m+1], x[m:l]) = x[h:l]
            return self.build(Op.EXTRACT, sort, args[0].args, (args[0].payload[0], args[1].payload[1]))
        elif op in _ARITH:
            out = _arith(self, op, sort, args)
            if out is not None:
                return out
        return Expr(op, sort, args, payload)

    def _chain_index(self, top: Expr) -> tuple[dict, Expr]:
        """Index of a store chain: {const addr: data} for the constant-address stores above the
        barrier (the first store with a symbolic address, or the chain's base)."""
        hit = self._index.get(top.uid)
        if hit is not None:
            self._index.move_to_end(top.uid)
            return hit
        pending = []
        node = top
        base_index = None
        while node.op is Op.STORE and node.args[1].op is Op.CONST:
            cached = self._index.get(node.uid)
            if cached is not None and node is not top:
                base_index = cached
                break
            pending.append(node)
            node = node.args[0]
        if base_index is not None:
            table, barrier = dict(base_index[0]), base_index[1]
        else:
            table, barrier = {}, node
        for st in reversed(pending):
            table[st.args[1].payload] = st.args[2]
        res = (table, barrier)
        self._index[top.uid] = res
        if len(self._index) > _CHAIN_INDEX_SIZE:
            self._index.popitem(last=False)
        return res

    def load(self, mem: Expr, addr: Expr) -> Expr:
        """``load(mem, addr)`` simplified by read-over-write, without traversing ``mem``."""
        return self._load(mem, addr)

    def _load(self, mem: Expr, addr: Expr) -> Expr:
        while True:
            if mem.op is Op.STORE:
                if mem.args[1] is addr:
                    return mem.args[2]
                if addr.op is Op.CONST and mem.args[1].op is Op.CONST:
                    # skip a long run of constant stores at once
                    table, barrier = self._chain_index(mem) if _long(mem) else (None, None)
                    if table is not None:
                        if addr.payload in table:
                            return table[addr.payload]
                        mem = barrier
                        continue
                    mem = mem.args[0]
                    continue
            return Expr(Op.LOAD, _data_sort(mem), (mem, addr))


_ARITH = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.UDIV, Op.SHL, Op.LSHR})


def _is_zero_test(c: Expr, x: Expr) -> bool:
    """``c`` is ``x = 0``, ``0 = x`` or ``x <u 1``."""
    if c.op is Op.EQ:
        return (c.args[0] is x and _const(c.args[1], 0)) or (c.args[1] is x and _const(c.args[0], 0))
    return c.op is Op.ULT and c.args[0] is x and _const(c.args[1], 1)


def _const(e: Expr, value: int | None = None) -> bool:
    return e.op is Op.CONST and (value is None or e.payload == value)


def _arith(rw: "Rewriter", op: Op, sort, args: tuple) -> Expr | None:
    """Ring and shift identities, all valid modulo 2^width: x+0, x-0, x*1, x*0, x/1, x<<0, x>>0,
    (x - k) + k, (x + k) - k, and x * 2^k and x / 2^k as shifts (so equal offsets computed by
    multiplication and by shifting become the same term)."""
    a, b = args
    w = sort.width
    if op is Op.ADD:
        if _const(a, 0):
            return b
        if _const(b, 0):
            return a
        if b.op is Op.CONST and a.op in (Op.SUB, Op.ADD) and a.args[1].op is Op.CONST:
            k = (b.payload + (a.args[1].payload if a.op is Op.ADD else -a.args[1].payload)) % (1 << w)
            return rw.build(Op.ADD, sort, (a.args[0], Expr(Op.CONST, sort, (), k)), None)
    elif op is Op.SUB:
        if _const(b, 0):
            return a
        if b.op is Op.CONST:
            return rw.build(Op.ADD, sort, (a, Expr(Op.CONST, sort, (), (-b.payload) % (1 << w))), None)
    elif op is Op.MUL:
        if a.op is Op.CONST and b.op is not Op.CONST:
            a, b = b, a
        if _const(b, 1):
            return a
        if _const(b, 0):
            return b
        if b.op is Op.CONST and b.payload & (b.payload - 1) == 0:
            sh = Expr(Op.CONST, sort, (), b.payload.bit_length() - 1)
            return rw.build(Op.SHL, sort, (a, sh), None)
    elif op is Op.UDIV:
        if _const(b, 1):
            return a
        if b.op is Op.CONST and b.payload and b.payload & (b.payload - 1) == 0:
            sh = Expr(Op.CONST, sort, (), b.payload.bit_length() - 1)
            return rw.build(Op.LSHR, sort, (a, sh), None)
    elif op in (Op.SHL, Op.LSHR):
        if _const(b, 0):
            return a
    return None


def _long(mem: Expr, threshold: int = 8) -> bool:
    node = mem
    for _ in range(threshold):
        if node.op is not Op.STORE:
            return False
        node = node.args[0]
    return True


def _data_sort(mem: Expr):
    from .sorts import BvSort
    return BvSort(mem.sort.data_width)


def substitute(exprs: Sequence[Expr], mapping: Mapping[Expr, Expr], *, fold_ufs: bool = False) -> list[Expr]:
    """Replace variables by expressions in ``exprs`` and simplify (see module docstring)."""
    return Rewriter(mapping, fold_ufs=fold_ufs)(exprs)


def replace_nodes(exprs: Sequence[Expr], mapping: Mapping[int, Expr]) -> list[Expr]:
    """Rebuild ``exprs`` with every node whose uid is a key of ``mapping`` replaced by its value
    (any node, not only variables; sorts must agree), simplifying the rebuilt nodes."""
    memo: dict[int, Expr] = {}
    rw = Rewriter()
    for n in toposort(list(exprs)):
        if n.uid in mapping:
            memo[n.uid] = mapping[n.uid]
        elif n.args:
            memo[n.uid] = rw.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
        else:
            memo[n.uid] = n
    return [memo[e.uid] for e in exprs]


def simplify(e: Expr) -> Expr:
    """Simplify one expression (no substitution)."""
    return Rewriter().one(e)
