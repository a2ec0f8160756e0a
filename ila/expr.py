"""Immutable, hash-consed ILA expressions and their builders.

Every node is interned: building the same (op, sort, args, payload) twice returns the same object,
so identity is structural equality and ``hash`` is cheap. Builders check sorts and widths when a
node is made and raise :class:`~ila.errors.SortError` / :class:`~ila.errors.WidthError` naming the
bad operand. Python ints are coerced to constants of the other operand's width (they must fit:
``-2**(w-1) <= v < 2**w``; negatives are two's complement).

Signedness is explicit per operator: ``ult``/``slt``, ``udiv``/``sdiv``, ``lshr``/``ashr``. The
operators ``<``, ``>>``, ``/``, ``%`` and ``==`` with a non-expression therefore raise instead of
guessing; use ``a.eq(b)`` for equality. ``Expr.__bool__`` raises: use :func:`ite`.
"""
from __future__ import annotations

import itertools
import sys
from typing import Any, Callable, Iterable, Sequence

from .errors import SortError, WidthError
from .ops import Op
from .sorts import BOOL, BoolSort, BvSort, MemSort, Sort

# The intern table: (op value, sort, args, payload) -> node. A plain dict (a WeakValueDictionary's
# weak references and their callbacks were a quarter of a large proof's time), swept of the nodes
# nothing else holds whenever it has grown past ``_SWEEP_AT`` (:func:`_sweep`).
_INTERN: "dict[tuple, Expr]" = {}
_SWEEP_MIN = 1 << 20
_SWEEP_AT = _SWEEP_MIN
_ids = itertools.count()


def _sweep() -> int:
    """Drop the nodes only the intern table holds; the number dropped. Entries are visited newest
    first, so a node dies before its arguments are visited (they were interned before it), and a
    whole dead sub-DAG goes in one pass. The next sweep is due at twice the live size (at least
    ``_SWEEP_MIN``): the table holds at most about twice the live nodes, and the sweeps cost at most
    about as much again as the inserts between them."""
    global _SWEEP_AT
    keys = list(_INTERN)
    before = len(keys)
    getrc = sys.getrefcount
    for i in range(before - 1, -1, -1):
        k = keys[i]
        keys[i] = None
        node = _INTERN[k]
        if getrc(node) <= 3:                 # the table's value, ``node`` and getrefcount's argument
            del _INTERN[k]
        del node, k
    live = len(_INTERN)
    _SWEEP_AT = max(_SWEEP_MIN, 2 * live)
    return before - live


def intern_size() -> int:
    """The number of nodes in the intern table (live, or dead and not yet swept)."""
    return len(_INTERN)


class Expr:
    """One node of the expression DAG. Do not instantiate directly: use the builders."""

    __slots__ = ("op", "sort", "args", "payload", "uid", "__weakref__")

    op: Op
    sort: Sort
    args: tuple["Expr", ...]
    payload: Any

    def __new__(cls, op: Op, sort: Sort, args: tuple = (), payload: Any = None):
        key = (op._value_, sort, args, payload)        # the enum's value: Enum.__hash__ is Python code
        node = _INTERN.get(key)
        if node is None:
            if len(_INTERN) >= _SWEEP_AT:
                _sweep()
            node = object.__new__(cls)
            node.op, node.sort, node.args, node.payload = op, sort, args, payload
            node.uid = next(_ids)
            _INTERN[key] = node
        return node

    # ----------------------------------------------------------------- inspection
    @property
    def width(self) -> int:
        """Bit width of a BV expression (SortError for Bool or memory)."""
        if not isinstance(self.sort, BvSort):
            raise SortError(f"{self.short()} has sort {self.sort}, not a bit-vector")
        return self.sort.width

    @property
    def is_const(self) -> bool:
        return self.op is Op.CONST

    @property
    def value(self):
        if self.op is not Op.CONST:
            raise SortError(f"{self.short()} is not a constant")
        return self.payload

    @property
    def name(self) -> str:
        if self.op is Op.VAR:
            return self.payload[1]
        if self.op is Op.APPLY:
            return self.payload.name
        raise SortError(f"{self.short()} has no name")

    def short(self) -> str:
        """A one-line, length-limited rendering for error messages."""
        text = repr(self)
        return text if len(text) <= 80 else text[:77] + "..."

    def __repr__(self) -> str:
        op = self.op
        if op is Op.CONST:
            if isinstance(self.sort, BoolSort):
                return "true" if self.payload else "false"
            return f"{self.payload:#x}:{self.sort.width}"
        if op is Op.VAR:
            return self.payload[1]
        inner = ", ".join(a.short() if len(self.args) > 2 else repr(a) for a in self.args)
        if op is Op.APPLY:
            return f"{self.payload.name}({inner})"
        extra = f"[{self.payload}]" if self.payload is not None else ""
        return f"{op.value}{extra}({inner})"

    def __bool__(self):
        raise SortError(f"ILA expression {self.short()} used as a Python bool; use ite(...)")

    # identity (nodes are interned); object's own slot, so that hashing runs no Python code
    __hash__ = object.__hash__

    def __eq__(self, other):
        if isinstance(other, Expr):
            return self is other
        raise SortError(f"'==' between {self.short()} and {other!r}: use a.eq(b) to build equality")

    def __ne__(self, other):
        if isinstance(other, Expr):
            return self is not other
        raise SortError(f"'!=' between {self.short()} and {other!r}: use a.ne(b)")

    def _no_implicit(self, what: str, hint: str):
        raise SortError(f"'{what}' on {self.short()} is ambiguous about signedness: use {hint}")

    def __lt__(self, o): self._no_implicit("<", "ult/slt")
    def __le__(self, o): self._no_implicit("<=", "ule/sle")
    def __gt__(self, o): self._no_implicit(">", "ugt/sgt")
    def __ge__(self, o): self._no_implicit(">=", "uge/sge")
    def __rshift__(self, o): self._no_implicit(">>", "lshr/ashr")
    def __truediv__(self, o): self._no_implicit("/", "udiv/sdiv")
    def __floordiv__(self, o): self._no_implicit("//", "udiv/sdiv")
    def __mod__(self, o): self._no_implicit("%", "urem/srem")

    # ----------------------------------------------------------------- operators
    def __add__(self, o): return _bv2(Op.ADD, self, o)
    def __radd__(self, o): return _bv2(Op.ADD, o, self)
    def __sub__(self, o): return _bv2(Op.SUB, self, o)
    def __rsub__(self, o): return _bv2(Op.SUB, o, self)
    def __mul__(self, o): return _bv2(Op.MUL, self, o)
    def __rmul__(self, o): return _bv2(Op.MUL, o, self)
    def __lshift__(self, o): return _bv2(Op.SHL, self, o)
    def __neg__(self): return Expr(Op.NEG, _need_bv(self, "-").sort, (self,))

    def __and__(self, o): return _logic(Op.AND, Op.BVAND, self, o)
    def __rand__(self, o): return _logic(Op.AND, Op.BVAND, o, self)
    def __or__(self, o): return _logic(Op.OR, Op.BVOR, self, o)
    def __ror__(self, o): return _logic(Op.OR, Op.BVOR, o, self)
    def __xor__(self, o): return _logic(Op.XOR, Op.BVXOR, self, o)
    def __rxor__(self, o): return _logic(Op.XOR, Op.BVXOR, o, self)

    def __invert__(self):
        if isinstance(self.sort, BoolSort):
            return Expr(Op.NOT, BOOL, (self,))
        return Expr(Op.BVNOT, _need_bv(self, "~").sort, (self,))

    def __getitem__(self, key):
        """``x[hi:lo]`` extracts bits hi..lo (inclusive, like ILAng ``x(hi, lo)``); ``x[i]`` is bit i."""
        if isinstance(key, slice):
            if key.step is not None:
                raise WidthError(f"extract of {self.short()} takes [hi:lo], not a step")
            return extract(self, key.start, key.stop)
        return extract(self, key, key)

    def udiv(self, o): return _bv2(Op.UDIV, self, o)
    def sdiv(self, o): return _bv2(Op.SDIV, self, o)
    def urem(self, o): return _bv2(Op.UREM, self, o)
    def srem(self, o): return _bv2(Op.SREM, self, o)
    def shl(self, o): return _bv2(Op.SHL, self, o)
    def lshr(self, o): return _bv2(Op.LSHR, self, o)
    def ashr(self, o): return _bv2(Op.ASHR, self, o)
    def ult(self, o): return _cmp(Op.ULT, self, o)
    def ule(self, o): return _cmp(Op.ULE, self, o)
    def ugt(self, o): return _cmp(Op.UGT, self, o)
    def uge(self, o): return _cmp(Op.UGE, self, o)
    def slt(self, o): return _cmp(Op.SLT, self, o)
    def sle(self, o): return _cmp(Op.SLE, self, o)
    def sgt(self, o): return _cmp(Op.SGT, self, o)
    def sge(self, o): return _cmp(Op.SGE, self, o)
    def eq(self, o): return eq(self, o)
    def ne(self, o): return ~eq(self, o)
    def zext(self, width): return zext(self, width)
    def sext(self, width): return sext(self, width)
    def load(self, addr): return load(self, addr)
    def store(self, addr, data): return store(self, addr, data)


# --------------------------------------------------------------------- constants
def bv_const(value: int, width: int) -> Expr:
    """A bit-vector constant of ``width`` bits (any width). Negative values wrap (two's complement).

    Raises WidthError when the value does not fit: ``-2**(width-1) <= value < 2**width``.
    """
    sort = BvSort(width)
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np
            if isinstance(value, np.integer):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise WidthError(f"bit-vector constant must be an int, got {value!r}") from None
    if not (-(1 << (width - 1)) <= value < (1 << width)):
        raise WidthError(f"constant {value!r} does not fit in {width} bits")
    return Expr(Op.CONST, sort, (), value & ((1 << width) - 1))


def bool_const(value: bool) -> Expr:
    """The Bool constant true or false."""
    return Expr(Op.CONST, BOOL, (), bool(value))


TRUE = bool_const(True)
FALSE = bool_const(False)


def as_expr(x, like: Expr | None = None, what: str = "operand") -> Expr:
    """Coerce a Python bool/int to a constant (ints take ``like``'s width)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return bool_const(x)
    if isinstance(x, int) or type(x).__module__ == "numpy":
        if like is None or not isinstance(like.sort, BvSort):
            raise SortError(f"cannot infer a width for the {what} {x!r}; use bv_const(v, w)")
        return bv_const(int(x), like.sort.width)
    raise SortError(f"{what} {x!r} is not an ILA expression")


def _need_bv(e: Expr, op: str) -> Expr:
    if not isinstance(e.sort, BvSort):
        raise SortError(f"'{op}' needs a bit-vector, got {e.short()} of sort {e.sort}")
    return e


def _pair(a, b, op: str) -> tuple[Expr, Expr]:
    if not isinstance(a, Expr):
        b = as_expr(b, what=f"operand of '{op}'")
        a = as_expr(a, b, f"operand of '{op}'")
    else:
        b = as_expr(b, a, f"operand of '{op}'")
    return a, b


def _bv2(op: Op, a, b) -> Expr:
    a, b = _pair(a, b, op.value)
    _need_bv(a, op.value), _need_bv(b, op.value)
    if a.sort != b.sort:
        raise WidthError(f"'{op.value}' width mismatch: {a.short()} is {a.sort}, {b.short()} is {b.sort}")
    return Expr(op, a.sort, (a, b))


def _cmp(op: Op, a, b) -> Expr:
    a, b = _pair(a, b, op.value)
    _need_bv(a, op.value), _need_bv(b, op.value)
    if a.sort != b.sort:
        raise WidthError(f"'{op.value}' width mismatch: {a.short()} is {a.sort}, {b.short()} is {b.sort}")
    return Expr(op, BOOL, (a, b))


def _logic(bool_op: Op, bv_op: Op, a, b) -> Expr:
    a, b = _pair(a, b, bool_op.value)
    if isinstance(a.sort, BoolSort) and isinstance(b.sort, BoolSort):
        return Expr(bool_op, BOOL, (a, b))
    return _bv2(bv_op, a, b)


# --------------------------------------------------------------------- builders
def eq(a, b) -> Expr:
    """Equality of two expressions of the same sort (Bool, BV or memory) -> Bool."""
    a, b = _pair(a, b, "=")
    if a.sort != b.sort:
        raise WidthError(f"'=' sort mismatch: {a.short()} is {a.sort}, {b.short()} is {b.sort}")
    return Expr(Op.EQ, BOOL, (a, b))


def _need_bool(e, what: str) -> Expr:
    e = as_expr(e, what=what)
    if not isinstance(e.sort, BoolSort):
        raise SortError(f"{what} must be Bool, got {e.short()} of sort {e.sort}")
    return e


def ite(cond, then, other) -> Expr:
    """If-then-else. ``cond`` is Bool; both branches have one sort (any, memories included)."""
    cond = _need_bool(cond, "ite condition")
    then, other = _pair(then, other, "ite")
    if then.sort != other.sort:
        raise WidthError(f"ite branches differ: {then.short()} is {then.sort}, {other.short()} is {other.sort}")
    return Expr(Op.ITE, then.sort, (cond, then, other))


def implies(a, b) -> Expr:
    """Boolean implication a => b."""
    return Expr(Op.IMPLIES, BOOL, (_need_bool(a, "implies premise"), _need_bool(b, "implies conclusion")))


def land(*items) -> Expr:
    """Conjunction of any number of Bool expressions (true when empty)."""
    out = TRUE
    for i, x in enumerate(items):
        x = _need_bool(x, f"land operand {i}")
        out = x if out is TRUE else Expr(Op.AND, BOOL, (out, x))
    return out


def lor(*items) -> Expr:
    """Disjunction of any number of Bool expressions (false when empty)."""
    out = FALSE
    for i, x in enumerate(items):
        x = _need_bool(x, f"lor operand {i}")
        out = x if out is FALSE else Expr(Op.OR, BOOL, (out, x))
    return out


def concat(hi: Expr, lo: Expr, *rest: Expr) -> Expr:
    """Concatenation, most significant first: ``concat(a, b)`` has width wa + wb."""
    out = hi
    for part in (lo, *rest):
        a, b = _need_bv(as_expr(out, what="concat operand"), "concat"), _need_bv(as_expr(part, what="concat operand"), "concat")
        out = Expr(Op.CONCAT, BvSort(a.width + b.width), (a, b))
    return out


def extract(e: Expr, hi: int, lo: int) -> Expr:
    """Bits ``hi`` down to ``lo`` (inclusive) of a BV: width hi - lo + 1."""
    e = _need_bv(as_expr(e, what="extract operand"), "extract")
    if not (isinstance(hi, int) and isinstance(lo, int) and 0 <= lo <= hi < e.width):
        raise WidthError(f"extract [{hi}:{lo}] out of range for {e.short()} of width {e.width}")
    return Expr(Op.EXTRACT, BvSort(hi - lo + 1), (e,), (hi, lo))


def _ext(op: Op, e: Expr, width: int) -> Expr:
    e = _need_bv(as_expr(e, what=f"{op.value} operand"), op.value)
    if not isinstance(width, int) or width < e.width:
        raise WidthError(f"{op.value} to {width!r} bits is narrower than {e.short()} ({e.width} bits)")
    if width == e.width:
        return e
    return Expr(op, BvSort(width), (e,))


def zext(e: Expr, width: int) -> Expr:
    """Zero-extend to a total of ``width`` bits (ILAng ZExt convention)."""
    return _ext(Op.ZEXT, e, width)


def sext(e: Expr, width: int) -> Expr:
    """Sign-extend to a total of ``width`` bits (ILAng SExt convention)."""
    return _ext(Op.SEXT, e, width)


def _rot(op: Op, e: Expr, amount: int) -> Expr:
    e = _need_bv(as_expr(e, what="rotate operand"), op.value)
    if not isinstance(amount, int) or amount < 0:
        raise WidthError(f"rotate amount must be a non-negative int, got {amount!r}")
    return Expr(op, e.sort, (e,), amount % e.width)


def rotl(e: Expr, amount: int) -> Expr:
    """Rotate left by a constant number of bits."""
    return _rot(Op.ROTL, e, amount)


def rotr(e: Expr, amount: int) -> Expr:
    """Rotate right by a constant number of bits."""
    return _rot(Op.ROTR, e, amount)


def _need_mem(m: Expr, what: str) -> MemSort:
    if not isinstance(m, Expr) or not isinstance(m.sort, MemSort):
        raise SortError(f"{what} needs a memory, got {m.short() if isinstance(m, Expr) else repr(m)}"
                        f"{' of sort ' + str(m.sort) if isinstance(m, Expr) else ''}")
    return m.sort


def load(mem: Expr, addr) -> Expr:
    """Read ``mem[addr]`` (SMT ``select``): result BV(data_width)."""
    s = _need_mem(mem, "load")
    addr = as_expr(addr, Expr(Op.CONST, BvSort(s.addr_width), (), 0), "load address")
    if addr.sort != BvSort(s.addr_width):
        raise WidthError(f"load address {addr.short()} is {addr.sort}; memory {mem.short()} has {s.addr_width}-bit addresses")
    return Expr(Op.LOAD, BvSort(s.data_width), (mem, addr))


def store(mem: Expr, addr, data) -> Expr:
    """``mem`` with ``mem[addr] := data`` (SMT ``store``): result has the memory's sort."""
    s = _need_mem(mem, "store")
    addr = as_expr(addr, Expr(Op.CONST, BvSort(s.addr_width), (), 0), "store address")
    data = as_expr(data, Expr(Op.CONST, BvSort(s.data_width), (), 0), "store data")
    if addr.sort != BvSort(s.addr_width):
        raise WidthError(f"store address {addr.short()} is {addr.sort}; memory {mem.short()} has {s.addr_width}-bit addresses")
    if data.sort != BvSort(s.data_width):
        raise WidthError(f"store data {data.short()} is {data.sort}; memory {mem.short()} has {s.data_width}-bit data")
    return Expr(Op.STORE, s, (mem, addr, data))


# --------------------------------------------------------------------- uninterpreted functions
class FuncRef:
    """An uninterpreted function ``name: domain -> range`` (ILAng ``FuncRef``).

    Parameters
    ----------
    name : str
    range_sort : Sort          (BV or Bool)
    domain : sequence of Sort  (BV or Bool each)
    body : callable, optional
        numpy implementation used by the simulator. Called with one numpy array per argument
        (dtype uint64, or object for widths > 64): 0-d arrays for scalar evaluation, 1-d lane
        arrays for vectorised evaluation. Returns an array-like of the broadcast shape; the
        result is masked to the range width.
    axioms : sequence of callables, optional
        each maps argument expressions ``(a0, a1, ...)`` to a Bool Expr that holds for every
        argument tuple (e.g. commutativity). Proofs instantiate them on the tuples that occur.
    expr_body : callable, optional
        a bit-precise ILA expression of the function, ``expr_body(a0, a1, ...) -> Expr``;
        proofs may inline it instead of keeping the function uninterpreted.
    """

    def __init__(self, name: str, range_sort: Sort, domain: Sequence[Sort] = (), *,
                 body: Callable | None = None, axioms: Iterable[Callable] = (),
                 expr_body: Callable | None = None):
        if not isinstance(name, str) or not name:
            raise SortError(f"function name must be a non-empty str, got {name!r}")
        for s in (range_sort, *domain):
            if not isinstance(s, (BvSort, BoolSort)):
                raise SortError(f"function {name!r}: sorts must be BV or Bool, got {s!r}")
        self.name = name
        self.range = range_sort
        self.domain = tuple(domain)
        self.body = body
        self.axioms = tuple(axioms)
        self.expr_body = expr_body

    def __call__(self, *args) -> Expr:
        dom = self.domain
        if len(args) == len(dom):             # the common case: expressions of the domain's sorts
            for a, s in zip(args, dom):
                if type(a) is not Expr or (a.sort is not s and a.sort != s):
                    break
            else:
                return Expr(Op.APPLY, self.range, args, self)
        if len(args) != len(self.domain):
            raise SortError(f"{self.name} takes {len(self.domain)} arguments, got {len(args)}")
        out = []
        for i, (a, s) in enumerate(zip(args, self.domain)):
            if isinstance(a, Expr) and a.sort == s:
                out.append(a)
                continue
            like = Expr(Op.CONST, s, (), 0) if isinstance(s, BvSort) else None
            a = as_expr(a, like, f"argument {i} of {self.name}")
            if a.sort != s:
                raise WidthError(f"argument {i} of {self.name} is {a.short()} of sort {a.sort}, expected {s}")
            out.append(a)
        return Expr(Op.APPLY, self.range, tuple(out), self)

    def __repr__(self) -> str:
        return f"FuncRef({self.name}: {' x '.join(map(repr, self.domain))} -> {self.range!r})"


def var(kind: str, name: str, sort: Sort, owner_uid: int) -> Expr:
    """A state or input variable (used by :class:`ila.model.Ila`)."""
    return Expr(Op.VAR, sort, (), (kind, name, owner_uid))
