"""numpy evaluation of FlexASR's datapath functions for the simulator's loop summaries
(:mod:`ila.models.flexasr.gb_control`, :mod:`ila.models.flexasr.linear_run`,
:mod:`ila.models.flexasr.act_run`): a function's own body on broadcast arrays, the 65,536-entry
table of a function of two codes, and the factorisation of ProductSum that turns its sums into
matrix products (checked against the table entry by entry)."""
from __future__ import annotations

import numpy as np


def _call(fn, *args):
    """A FuncRef's numpy body on broadcast uint64 arrays, masked to its range (as the simulator's
    lane evaluation of the function, ila.semantics._apply)."""
    conv = np.broadcast_arrays(*[np.asarray(a, dtype=np.uint64) for a in args])
    return np.asarray(fn.body(*conv)).astype(np.uint64) & np.uint64((1 << fn.range.width) - 1)


_TABLES: dict = {}


def _table8x8(fn) -> np.ndarray:
    """All 65,536 values of a FuncRef of two 8-bit arguments, indexed ``(a << 8) | b``: its numpy
    body evaluated once on every pair (:func:`_call`), so a lookup equals the call bit for bit."""
    if fn.name not in _TABLES:
        a, b = np.divmod(np.arange(1 << 16, dtype=np.uint64), np.uint64(256))
        _TABLES[fn.name] = _call(fn, a, b)
    return _TABLES[fn.name]


def product_factors(fn) -> np.ndarray | None:
    """``D`` (int64, one per 8-bit code) with ``fn(a, b) = D[a] * D[b] mod 2**32`` for every pair of
    codes -- the AdaptivFloat decode ``+-(16 + m) << e`` (0 for a zero code), as ``adpfloat_mul``
    multiplies -- when ``fn``'s table (:func:`_table8x8`, its body on every pair) says so entry by
    entry; None otherwise. Sums of such products are then integer matrix products (exact in float64:
    every partial sum of the PE's at most 255 x 16 products of magnitude below 2**24 is below 2**53)."""
    from ila.numerics import adaptivfloat as af
    key = ("factors", fn.name)
    if key not in _TABLES:
        s, e, m = af.fields(np.arange(256))
        d = np.where((e == 0) & (m == 0), 0, (16 + m) << e) * np.where(s == 1, -1, 1)
        same = np.array_equal((d[:, None] * d[None, :]).reshape(-1) & 0xFFFFFFFF, _table8x8(fn).astype(np.int64))
        _TABLES[key] = d if same else None
    return _TABLES[key]
