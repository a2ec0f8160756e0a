"""Substitution with simplification: the engine of path unrolling (symbolic execution).

:class:`Rewriter` rebuilds expression DAGs under a variable substitution and simplifies as it goes:

* constant folding through the numpy implementations of :data:`ila.semantics.TABLE` (the one
  source of semantics; uninterpreted functions are never folded unless asked);
* read-over-write: ``load(store(m, a, d), b)`` is ``d`` when ``a`` and ``b`` are the same term and
  skips the store when both are distinct constants; long chains of constant-address stores are
  indexed so a load costs a dict lookup (one table per growing chain, shared by its nodes:
  :class:`_ChainTable`; ``tests/test_simplify_chains.py`` checks it against the store-by-store walk);
* Boolean and ``ite`` identities (``true & x = x``, ``ite(true, a, b) = a``, ``x = x`` is true).

Every rule is an SMT-LIB identity, so simplified and raw terms are equivalent.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from typing import Mapping, Sequence

from .expr import FALSE, TRUE, Expr
from .ops import Op
from .semantics import TABLE
from .walk import toposort

_NO_FOLD = {Op.VAR, Op.CONST, Op.LOAD, Op.STORE, Op.APPLY}
# the operators as module constants (an Enum member lookup is a Python-level call on the hot path)
_CONST = Op.CONST
_VAR = Op.VAR
_STORE = Op.STORE
_AND = Op.AND
_APPLY = Op.APPLY
_CONCAT = Op.CONCAT
_EQ = Op.EQ
_EXTRACT = Op.EXTRACT
_IMPLIES = Op.IMPLIES
_ITE = Op.ITE
_LOAD = Op.LOAD
_NOT = Op.NOT
_OR = Op.OR


class _ChainTable:
    """The constant-address stores of one growing store chain, in chain order (oldest first):
    ``data[p]`` is the p-th store's value, ``pos[a]`` the positions of the stores at address ``a``
    (ascending), ``barrier`` what lies below the chain's oldest indexed store (the first store with
    a symbolic address, or the chain's base). A chain node is indexed as (table, n): the table's
    first n stores are the node's constant-address run, so a chain that grows one store at a time
    (symbolic execution) extends one table in place instead of copying it per node."""
    __slots__ = ("pos", "data", "barrier")

    def __init__(self, barrier: Expr):
        self.pos: dict[int, list[int]] = {}
        self.data: list[Expr] = []
        self.barrier = barrier

    def append(self, addr: int, value: Expr) -> None:
        self.pos.setdefault(addr, []).append(len(self.data))
        self.data.append(value)

    def prefix(self, n: int) -> "_ChainTable":
        """A new table holding the first ``n`` stores (a chain branching off an older node)."""
        t = _ChainTable(self.barrier)
        for a, ps in self.pos.items():
            kept = ps if ps[-1] < n else ps[:bisect_left(ps, n)]
            if kept:
                t.pos[a] = list(kept)
        t.data = self.data[:n]
        return t

    def get(self, addr: int, n: int):
        """The value of the last of the first ``n`` stores at ``addr``, or None."""
        ps = self.pos.get(addr)
        if not ps:
            return None
        if ps[-1] < n:
            return self.data[ps[-1]]
        k = bisect_left(ps, n)
        return self.data[ps[k - 1]] if k else None


# Store-chain indexes are shared by all rewriters (keyed by node uid, which is never reused), so
# symbolic execution, which makes a rewriter per step, keeps them across steps: node uid ->
# (table, n). Entries share their tables, so many nodes of one chain cost little memory.
_CHAIN_INDEX: "OrderedDict[int, tuple[_ChainTable, int]]" = OrderedDict()
_CHAIN_INDEX_SIZE = 4096


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
        memo, mapping, build = self.memo, self.mapping, self.build
        seen: set[int] = set()
        stack = [(e, False) for e in reversed(exprs) if e.uid not in memo]
        pop, push = stack.pop, stack.append
        while stack:
            n, expanded = pop()
            if expanded:
                args = n.args
                if n.op is _VAR:
                    memo[n.uid] = mapping.get(n, n)
                elif not args:
                    memo[n.uid] = n
                else:
                    memo[n.uid] = build(n.op, n.sort, tuple([memo[a.uid] for a in args]), n.payload)
                continue
            uid = n.uid
            if uid in seen or uid in memo:
                continue
            seen.add(uid)
            push((n, True))
            for a in reversed(n.args):
                if a.uid not in seen and a.uid not in memo:
                    push((a, False))
        return [memo[e.uid] for e in exprs]

    def one(self, e: Expr) -> Expr:
        return self([e])[0]

    # ------------------------------------------------------------------ smart constructor
    def build(self, op: Op, sort, args: tuple, payload) -> Expr:
        if op not in _NO_FOLD:
            for a in args:
                if a.op is not _CONST:
                    break
            else:
                val = TABLE[op].numpy(Expr(op, sort, args, payload), *[a.payload for a in args])
                return Expr(_CONST, sort, (), bool(val) if sort.is_bool else int(val))
        if op is _APPLY and self.fold_ufs and payload.body is not None and all(a.op is _CONST for a in args):
            node = Expr(op, sort, args, payload)
            return Expr(_CONST, sort, (), TABLE[op].numpy(node, *[a.payload for a in args]))
        if op is _LOAD:
            return self._load(args[0], args[1])
        if op is _ITE:
            c, t, e = args
            if c.op is _CONST:
                return t if c.payload else e
            if t is e:
                return t
            if sort.is_bool and t is TRUE and e is FALSE:
                return c
            if _const(t, 0) and _is_zero_test(c, e):      # ite(x = 0, 0, x) = x
                return e
        elif op is _AND:
            a, b = args
            if a is FALSE or b is FALSE:
                return FALSE
            if a is TRUE:
                return b
            if b is TRUE or a is b:
                return a
        elif op is _OR:
            a, b = args
            if a is TRUE or b is TRUE:
                return TRUE
            if a is FALSE:
                return b
            if b is FALSE or a is b:
                return a
        elif op is _NOT:
            if args[0].op is _NOT:
                return args[0].args[0]
        elif op is _IMPLIES:
            a, b = args
            if a is FALSE or b is TRUE:
                return TRUE
            if a is TRUE:
                return b
        elif op is _EQ:
            if args[0] is args[1]:
                return TRUE
        elif op is _EXTRACT and args[0].op is _CONCAT:
            hi, lo = payload
            top, bot = args[0].args
            wb = bot.sort.width
            if hi < wb:
                return self.build(op, sort, (bot,), payload) if (hi, lo) != (wb - 1, 0) else bot
            if lo >= wb:
                return self.build(op, sort, (top,), (hi - wb, lo - wb)) if (hi - wb, lo - wb) != (top.sort.width - 1, 0) else top
        elif op is _EXTRACT and payload == (args[0].sort.width - 1, 0):
            return args[0]
        elif op is _EXTRACT and args[0].op is _EXTRACT:       # extract of extract
            hi, lo = payload
            base_lo = args[0].payload[1]
            return self.build(op, sort, args[0].args, (hi + base_lo, lo + base_lo))
        elif op is _CONCAT and args[0].op is _EXTRACT and args[1].op is _EXTRACT \
                and args[0].args[0] is args[1].args[0] and args[0].payload[1] == args[1].payload[0] + 1:
            # adjacent fields of one value: concat(x[h:m+1], x[m:l]) = x[h:l]
            return self.build(_EXTRACT, sort, args[0].args, (args[0].payload[0], args[1].payload[1]))
        elif op in _ARITH:
            out = _arith(self, op, sort, args)
            if out is not None:
                return out
        return Expr(op, sort, args, payload)

    def _chain_index(self, top: Expr) -> tuple[_ChainTable, int]:
        """Index of a store chain: (table, n), the first n stores of the table being the
        constant-address stores from ``top`` down to the barrier (the first store with a symbolic
        address, or the chain's base), oldest first (:class:`_ChainTable`)."""
        index = self._index
        hit = index.get(top.uid)
        if hit is not None:
            index.move_to_end(top.uid)
            return hit
        pending = []
        node = top
        base = None
        while node.op is _STORE and node.args[1].op is _CONST:
            if node is not top:
                base = index.get(node.uid)
                if base is not None:
                    break
            pending.append(node)
            node = node.args[0]
        if base is None:
            table, n = _ChainTable(node), 0
        else:
            table, n = base
            if n != len(table.data):        # a branch off an older node of the chain: its own table
                table = table.prefix(n)
        for st in reversed(pending):
            table.append(st.args[1].payload, st.args[2])
        n += len(pending)
        index[top.uid] = (table, n)
        if len(index) > _CHAIN_INDEX_SIZE:
            index.popitem(last=False)
        return table, n

    def load(self, mem: Expr, addr: Expr) -> Expr:
        """``load(mem, addr)`` simplified by read-over-write, without traversing ``mem``."""
        return self._load(mem, addr)

    def _load(self, mem: Expr, addr: Expr) -> Expr:
        while True:
            if mem.op is _STORE:
                if mem.args[1] is addr:
                    return mem.args[2]
                if addr.op is _CONST and mem.args[1].op is _CONST:
                    # skip a long run of constant stores at once
                    if _long(mem):
                        table, n = self._chain_index(mem)
                        hit = table.get(addr.payload, n)
                        if hit is not None:
                            return hit
                        mem = table.barrier
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
