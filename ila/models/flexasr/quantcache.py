"""AdaptivFloat quantisation of large tensors, memoised by content.

The code generators quantise every operand on every call; an application's weights are the same
tensors call after call and data point after data point (a 650-unit LSTM's weight tiles: ~6 ms each
time). :func:`quantize` returns exactly what
:func:`ila.numerics.adaptivfloat.quantize_checked` returns for the same float32 tensor and bias
(codes, bias register, clamped flag), keeping the results of tensors of at least :data:`MIN_SIZE`
elements in a :class:`ila.memo.TensorMemo` (found by exact content under the bias argument, stored
the second time a tensor is seen, least recently used first out beyond :data:`MAX_BYTES`). Cached
codes are read-only arrays (a caller that writes into them fails loudly instead of corrupting later
calls). The warnings a quantisation issues (AdaptivFloatClampWarning when the bias register is
clamped) are kept with its codes and issued again on every hit, as without the memo.

``tests/test_flexasr_quantcache.py`` checks the memoised codes equal a fresh quantisation (same
tensor, other tensors of the same shape, a changed element, another bias) and that the memo's
seeded bug (``BUGS``: an entry found by its sampled key alone) is caught.
"""
from __future__ import annotations

import warnings

import numpy as np

from ila.memo import BUGS, TensorMemo
from ila.numerics import adaptivfloat as af

MIN_SIZE = 4096             # elements; smaller tensors are quantised directly (cheaper than the lookup)
MAX_BYTES = 512 << 20       # bytes of stored tensors and codes
_MEMO = TensorMemo(max_entries=256, max_bytes=MAX_BYTES)
_BUGGY: dict = {}           # seeded bug -> its own memo (the differential test's)


def quantize(x, bias=None, *, bug: str | None = None) -> tuple[np.ndarray, int, bool]:
    """``af.quantize_checked(float32 x, bias)``: (uint8 codes of x's shape, bias register, clamped),
    from the memo when the same tensor was quantised before. NumericsError for NaN/inf (as
    :func:`~ila.numerics.adaptivfloat.quantize_checked`); ``bug`` (one of :data:`BUGS`) seeds an
    error for the differential test."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {BUGS}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.size < MIN_SIZE:
        return af.quantize_checked(x, bias)
    memo = _MEMO if bug is None else _BUGGY.setdefault(bug, TensorMemo(max_entries=256, bug=bug))
    tag = None if bias is None else int(bias)
    hit = memo.get(x, tag)
    if hit is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            codes, reg, clamped = af.quantize_checked(x, bias)
        codes.setflags(write=False)
        hit = (codes, reg, clamped, [(w.message, w.category) for w in caught])
        memo.put(x, hit, tag, nbytes=codes.nbytes)
    codes, reg, clamped, issued = hit
    for message, category in issued:
        warnings.warn(message, category, stacklevel=3)
    return codes, reg, clamped


def clear() -> None:
    """Empty the memos (and their hit / miss counters)."""
    _MEMO.clear()
    _BUGGY.clear()


def stats() -> dict:
    """``{"entries", "bytes", "hits", "misses"}`` of the memo."""
    return _MEMO.stats()


__all__ = ["BUGS", "MAX_BYTES", "MIN_SIZE", "clear", "quantize", "stats"]
