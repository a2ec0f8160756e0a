"""THE semantics table: for every primitive op, its numpy implementation and its pysmt builder,
side by side. An import-time check guarantees both cover every :class:`~ila.ops.Op`.

Concrete values (numpy side):

* Bool: Python ``bool`` (scalar) or a numpy ``bool`` array (lanes);
* BV(w): Python ``int`` in ``[0, 2**w)`` (scalar) or a numpy array of dtype ``uint64`` for
  ``w <= 64`` and ``object`` (Python ints) for wider vectors (lanes);
* Mem: a :class:`MemValue` (a base array or dict plus pending writes).

Every numpy implementation takes the node first (for widths and payloads), then argument values,
and accepts scalars and lane arrays alike. SMT-LIB edge cases are implemented exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from .errors import IlaInternalError, SimulationError
from .ops import Op
from .sorts import BvSort


@lru_cache(maxsize=None)
def mask(w: int) -> int:
    return (1 << w) - 1


def dtype_for(w: int):
    """numpy dtype used for lane arrays of a w-bit vector."""
    return np.uint64 if w <= 64 else object


def is_lanes(x) -> bool:
    return isinstance(x, np.ndarray)


def as_lanes(x, w: int) -> np.ndarray:
    """Convert a value (scalar or array) to a lane array of the dtype for width ``w``."""
    dt = dtype_for(w)
    if isinstance(x, np.ndarray):
        return x if x.dtype == dt else x.astype(dt)
    return np.asarray(x, dtype=dt)


def _w(n) -> int:
    return n.sort.width


def _where(c, a, b, w: int):
    """Elementwise select with a dtype fixed by the width (never promoting to float)."""
    if not is_lanes(c) and not is_lanes(a) and not is_lanes(b):
        return a if c else b
    return np.where(c, as_lanes(a, w), as_lanes(b, w))


def _bool_where(c, a, b):
    if not is_lanes(c) and not is_lanes(a) and not is_lanes(b):
        return a if c else b
    return np.where(c, a, b).astype(bool)


def _fix(x, w: int):
    """Give a lane array the dtype of width ``w``; leave scalars alone."""
    return as_lanes(x, w) if is_lanes(x) else x


# ------------------------------------------------------------------ bit-vector helpers
def _udiv(a, b, w):
    if is_lanes(a) or is_lanes(b):
        a, b = as_lanes(a, w), as_lanes(b, w)
        safe = np.where(b == 0, as_lanes(1, w), b)
        return np.where(b == 0, as_lanes(mask(w), w), a // safe)
    return mask(w) if b == 0 else a // b


def _urem(a, b, w):
    if is_lanes(a) or is_lanes(b):
        a, b = as_lanes(a, w), as_lanes(b, w)
        safe = np.where(b == 0, as_lanes(1, w), b)
        return np.where(b == 0, a, a % safe)
    return a if b == 0 else a % b


def _neg(a, w):
    if is_lanes(a):
        a = as_lanes(a, w)
        return (as_lanes(0, w) - a) & mask(w) if w <= 64 else (0 - a) & mask(w)
    return (-a) & mask(w)


def _sign(a, w):
    return (a >> (w - 1)) & 1


def _sdiv(n, a, b):
    w = _w(n)
    sa, sb = _sign(a, w), _sign(b, w)
    q = _udiv(_where(sa, _neg(a, w), a, w), _where(sb, _neg(b, w), b, w), w)
    return _where(sa ^ sb, _neg(q, w), q, w)


def _srem(n, a, b):
    w = _w(n)
    sa, sb = _sign(a, w), _sign(b, w)
    r = _urem(_where(sa, _neg(a, w), a, w), _where(sb, _neg(b, w), b, w), w)
    return _where(sa, _neg(r, w), r, w)


def _clamp_shift(b, w):
    return np.minimum(as_lanes(b, w), as_lanes(w - 1, w)) if is_lanes(b) else min(b, w - 1)


def _shl(n, a, b):
    w = _w(n)
    if not is_lanes(a) and not is_lanes(b):
        return 0 if b >= w else (a << b) & mask(w)
    a = as_lanes(a, w)
    return _where(b >= w, 0, (a << _clamp_shift(b, w)) & mask(w), w)


def _lshr(n, a, b):
    w = _w(n)
    if not is_lanes(a) and not is_lanes(b):
        return 0 if b >= w else a >> b
    a = as_lanes(a, w)
    return _where(b >= w, 0, a >> _clamp_shift(b, w), w)


def _ashr(n, a, b):
    w = _w(n)
    m = mask(w)
    s = _sign(a, w)
    if not is_lanes(a) and not is_lanes(b):
        if b >= w:
            return m if s else 0
        return (a >> b) | ((m ^ (m >> b)) if s else 0)
    a = as_lanes(a, w)
    k = _clamp_shift(b, w)
    fill = as_lanes(m, w) ^ (as_lanes(m, w) >> k)
    shifted = (a >> k) | _where(s, fill, 0, w)
    return _where(b >= w, _where(s, m, 0, w), shifted, w)


def _rotl(n, a):
    w, k = _w(n), n.payload
    if k == 0:
        return a
    return ((a << k) & mask(w)) | (a >> (w - k))


def _rotr(n, a):
    w, k = _w(n), n.payload
    if k == 0:
        return a
    return (a >> k) | ((a << (w - k)) & mask(w))


def _concat(n, a, b):
    w = _w(n)
    wb = n.args[1].sort.width
    return (_fix(a, w) << wb) | _fix(b, w)


def _extract(n, a):
    hi, lo = n.payload
    return _fix((a >> lo) & mask(hi - lo + 1), hi - lo + 1)


def _zext(n, a):
    return _fix(a, _w(n))


def _sext(n, a):
    w, wi = _w(n), n.args[0].sort.width
    a = _fix(a, w)
    return a | _where(_sign(a, wi), mask(w) ^ mask(wi), 0, w)


def _slt(a, b, w):
    sb = 1 << (w - 1)
    return (a ^ sb) < (b ^ sb)


def _not(a):
    return ~a if is_lanes(a) else not a


def _eq(n, a, b):
    if isinstance(a, MemValue):
        return a.equals(b)
    return a == b


def _ite(n, c, t, e):
    if isinstance(t, MemValue):
        if is_lanes(c):
            raise SimulationError("ite between memories with a lane-vector condition is not supported")
        return t if c else e
    if n.sort.is_bool:
        return _bool_where(c, t, e)
    return _where(c, t, e, _w(n))


def _apply(n, *args):
    f = n.payload
    if f.body is None:
        raise SimulationError(f"uninterpreted function {f.name!r} has no numpy body to simulate")
    lanes = any(is_lanes(a) for a in args)
    conv = [a if is_lanes(a) else np.asarray(a, dtype=np.uint64 if s.is_bool or s.width <= 64 else object)
            for a, s in zip(args, f.domain)]
    if lanes:   # give every argument the lane shape, so bodies never mix 0-d and 1-d arrays
        conv = list(np.broadcast_arrays(*conv))
    out = f.body(*conv)
    if f.range.is_bool:
        return np.asarray(out, dtype=bool) if lanes else bool(out)
    w = f.range.width
    if lanes:
        return as_lanes(np.broadcast_to(np.asarray(out), np.broadcast(*conv).shape), w) & mask(w)
    return int(out) & mask(w)


# ------------------------------------------------------------------ memories
class MemValue:
    """A memory value in the simulator: a base (numpy array indexed by address, or a dict with
    default 0 for memories without a declared size) plus an ordered tuple of pending writes
    ``(addr, data)`` (scalars or equal-length lane arrays; later writes win)."""

    __slots__ = ("base", "writes", "name")

    def __init__(self, base, writes=(), name="memory"):
        self.base, self.writes, self.name = base, writes, name

    def _base_load(self, addr):
        base = self.base
        if isinstance(base, dict):
            if is_lanes(addr):
                return np.array([base.get(int(a), 0) for a in addr], dtype=object)
            return base.get(addr, 0)
        size = base.shape[0]
        if is_lanes(addr):
            if addr.size and int(addr.max()) >= size:
                raise SimulationError(f"load from {self.name} at address {int(addr.max()):#x}, beyond its {size} entries")
            out = base[addr.astype(np.int64)]
            return out.astype(np.uint64) if out.dtype != object else out
        if addr >= size:
            raise SimulationError(f"load from {self.name} at address {addr:#x}, beyond its {size} entries")
        return int(base[addr])

    def load(self, addr):
        if not self.writes:
            return self._base_load(addr)
        if not is_lanes(addr):
            for wa, wd in reversed(self.writes):
                if is_lanes(wa):
                    hits = np.nonzero(wa == addr)[0]
                    if hits.size:
                        v = wd[hits[-1]] if is_lanes(wd) else wd
                        return v if isinstance(v, (int, bool)) else int(v)
                elif wa == addr:
                    return wd
            return self._base_load(addr)
        res = self._base_load(addr)
        for wa, wd in self.writes:
            if is_lanes(wa):
                for j in range(wa.shape[0]):
                    res = np.where(addr == wa[j], wd[j] if is_lanes(wd) else wd, res)
            else:
                res = np.where(addr == wa, wd, res)
        return res

    def store(self, addr, data):
        return MemValue(self.base, self.writes + ((addr, data),), self.name)

    def commit(self):
        """Apply the pending writes to the base in place; return the base."""
        base = self.base
        for wa, wd in self.writes:
            if isinstance(base, dict):
                if is_lanes(wa):
                    wd = np.broadcast_to(wd, wa.shape)
                    for a, d in zip(wa.tolist(), wd.tolist()):
                        base[int(a)] = int(d)
                else:
                    base[wa] = wd
                continue
            size = base.shape[0]
            top = int(wa.max()) if is_lanes(wa) else wa
            if is_lanes(wa) and wa.size == 0:
                continue
            if top >= size:
                raise SimulationError(f"store to {self.name} at address {top:#x}, beyond its {size} entries")
            if is_lanes(wa):
                base[wa.astype(np.int64)] = wd
            else:
                base[wa] = wd
        return base

    def materialize(self):
        copy = MemValue(self.base.copy(), self.writes, self.name)
        return copy.commit()

    def equals(self, other: "MemValue") -> bool:
        a, b = self.materialize(), other.materialize()
        if isinstance(a, dict) or isinstance(b, dict):
            da = a if isinstance(a, dict) else {i: int(v) for i, v in enumerate(a) if v}
            db = b if isinstance(b, dict) else {i: int(v) for i, v in enumerate(b) if v}
            keys = set(da) | set(db)
            return all(da.get(k, 0) == db.get(k, 0) for k in keys)
        return a.shape == b.shape and bool(np.array_equal(a, b))


def _load(n, m, a):
    return m.load(a)


def _store(n, m, a, d):
    return m.store(a, d)


# ------------------------------------------------------------------ the table
@dataclass(frozen=True)
class Semantic:
    numpy: Callable | None      # numpy(node, *values) -> value   (None: leaf handled by caller)
    smt: Callable | None        # smt(mgr, node, *fnodes) -> FNode, mgr a pysmt FormulaManager


def _smt_eq(m, n, a, b):
    return m.Iff(a, b) if n.args[0].sort.is_bool else m.Equals(a, b)


def _bw(f):
    return lambda n, a, b: f(a, b) & mask(_w(n))


TABLE: dict[Op, Semantic] = {
    Op.CONST: Semantic(None, None),
    Op.VAR: Semantic(None, None),
    Op.AND: Semantic(lambda n, a, b: a & b, lambda m, n, a, b: m.And(a, b)),
    Op.OR: Semantic(lambda n, a, b: a | b, lambda m, n, a, b: m.Or(a, b)),
    Op.XOR: Semantic(lambda n, a, b: a ^ b, lambda m, n, a, b: m.Xor(a, b)),
    Op.NOT: Semantic(lambda n, a: _not(a), lambda m, n, a: m.Not(a)),
    Op.IMPLIES: Semantic(lambda n, a, b: _not(a) | b, lambda m, n, a, b: m.Implies(a, b)),
    Op.ADD: Semantic(_bw(lambda a, b: a + b), lambda m, n, a, b: m.BVAdd(a, b)),
    Op.SUB: Semantic(_bw(lambda a, b: a - b), lambda m, n, a, b: m.BVSub(a, b)),
    Op.MUL: Semantic(_bw(lambda a, b: a * b), lambda m, n, a, b: m.BVMul(a, b)),
    Op.UDIV: Semantic(lambda n, a, b: _udiv(a, b, _w(n)), lambda m, n, a, b: m.BVUDiv(a, b)),
    Op.SDIV: Semantic(_sdiv, lambda m, n, a, b: m.BVSDiv(a, b)),
    Op.UREM: Semantic(lambda n, a, b: _urem(a, b, _w(n)), lambda m, n, a, b: m.BVURem(a, b)),
    Op.SREM: Semantic(_srem, lambda m, n, a, b: m.BVSRem(a, b)),
    Op.NEG: Semantic(lambda n, a: _neg(a, _w(n)), lambda m, n, a: m.BVNeg(a)),
    Op.BVAND: Semantic(lambda n, a, b: a & b, lambda m, n, a, b: m.BVAnd(a, b)),
    Op.BVOR: Semantic(lambda n, a, b: a | b, lambda m, n, a, b: m.BVOr(a, b)),
    Op.BVXOR: Semantic(lambda n, a, b: a ^ b, lambda m, n, a, b: m.BVXor(a, b)),
    Op.BVNOT: Semantic(lambda n, a: a ^ mask(_w(n)), lambda m, n, a: m.BVNot(a)),
    Op.SHL: Semantic(_shl, lambda m, n, a, b: m.BVLShl(a, b)),
    Op.LSHR: Semantic(_lshr, lambda m, n, a, b: m.BVLShr(a, b)),
    Op.ASHR: Semantic(_ashr, lambda m, n, a, b: m.BVAShr(a, b)),
    Op.ROTL: Semantic(_rotl, lambda m, n, a: m.BVRol(a, n.payload) if n.payload else a),
    Op.ROTR: Semantic(_rotr, lambda m, n, a: m.BVRor(a, n.payload) if n.payload else a),
    Op.CONCAT: Semantic(_concat, lambda m, n, a, b: m.BVConcat(a, b)),
    Op.EXTRACT: Semantic(_extract, lambda m, n, a: m.BVExtract(a, n.payload[1], n.payload[0])),
    Op.ZEXT: Semantic(_zext, lambda m, n, a: m.BVZExt(a, _w(n) - n.args[0].sort.width)),
    Op.SEXT: Semantic(_sext, lambda m, n, a: m.BVSExt(a, _w(n) - n.args[0].sort.width)),
    Op.EQ: Semantic(_eq, _smt_eq),
    Op.ULT: Semantic(lambda n, a, b: a < b, lambda m, n, a, b: m.BVULT(a, b)),
    Op.ULE: Semantic(lambda n, a, b: a <= b, lambda m, n, a, b: m.BVULE(a, b)),
    Op.UGT: Semantic(lambda n, a, b: a > b, lambda m, n, a, b: m.BVUGT(a, b)),
    Op.UGE: Semantic(lambda n, a, b: a >= b, lambda m, n, a, b: m.BVUGE(a, b)),
    Op.SLT: Semantic(lambda n, a, b: _slt(a, b, n.args[0].sort.width), lambda m, n, a, b: m.BVSLT(a, b)),
    Op.SLE: Semantic(lambda n, a, b: _not(_slt(b, a, n.args[0].sort.width)), lambda m, n, a, b: m.BVSLE(a, b)),
    Op.SGT: Semantic(lambda n, a, b: _slt(b, a, n.args[0].sort.width), lambda m, n, a, b: m.BVSGT(a, b)),
    Op.SGE: Semantic(lambda n, a, b: _not(_slt(a, b, n.args[0].sort.width)), lambda m, n, a, b: m.BVSGE(a, b)),
    Op.ITE: Semantic(_ite, lambda m, n, c, t, e: m.Ite(c, t, e)),
    Op.LOAD: Semantic(_load, lambda M, n, m, a: M.Select(m, a)),
    Op.STORE: Semantic(_store, lambda M, n, m, a, d: M.Store(m, a, d)),
    Op.APPLY: Semantic(_apply, None),   # the SMT encoder declares the function symbol itself
}

_LEAVES_OR_SPECIAL = {Op.CONST, Op.VAR, Op.APPLY}


def _check_table() -> None:
    missing = set(Op) - set(TABLE)
    if missing:
        raise IlaInternalError(f"semantics table misses ops {sorted(o.name for o in missing)}")
    for op, sem in TABLE.items():
        if op not in _LEAVES_OR_SPECIAL and (sem.numpy is None or sem.smt is None):
            raise IlaInternalError(f"op {op.name} lacks a numpy or an SMT implementation")
        if op not in {Op.CONST, Op.VAR} and sem.numpy is None:
            raise IlaInternalError(f"op {op.name} lacks a numpy implementation")


_check_table()

__all__ = ["TABLE", "Semantic", "MemValue", "mask", "dtype_for", "as_lanes", "is_lanes", "BvSort"]
