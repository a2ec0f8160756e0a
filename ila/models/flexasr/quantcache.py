"""AdaptivFloat quantisation of large tensors, memoised by content.

The code generators quantise every operand on every call; an application's weights are the same
tensors call after call and data point after data point (a 650-unit LSTM's weight tiles: ~6 ms each
time). :func:`quantize` returns exactly what
:func:`ila.numerics.adaptivfloat.quantize_checked` returns for the same float32 tensor and bias
(codes, bias register, clamped flag), keeping the results of tensors of at least :data:`MIN_SIZE`
elements keyed by (shape, bias argument, BLAKE2b-128 digest of the float32 bytes), least recently
used first out beyond :data:`MAX_BYTES` of codes. Cached codes are read-only arrays (a caller that
writes into them fails loudly instead of corrupting later calls). The warnings a quantisation
issues (AdaptivFloatClampWarning when the bias register is clamped) are kept with its codes and
issued again on every hit, as without the cache.

``tests/test_flexasr_quantcache.py`` checks the memoised codes equal a fresh quantisation (same
tensor, other tensors of the same shape, a changed element) and that a seeded bug (``BUGS``: the
key without the data) is caught.
"""
from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict

import numpy as np

from ila.numerics import adaptivfloat as af

MIN_SIZE = 4096             # elements; smaller tensors are quantised directly (cheaper than hashing)
MAX_BYTES = 256 << 20       # bytes of cached codes
BUGS = ("key_without_data",)
_CACHE: OrderedDict = OrderedDict()
_STATE = {"bytes": 0, "hits": 0, "misses": 0}


def quantize(x, bias=None, *, bug: str | None = None) -> tuple[np.ndarray, int, bool]:
    """``af.quantize_checked(float32 x, bias)``: (uint8 codes of x's shape, bias register, clamped),
    from the cache when the same tensor was quantised before. NumericsError for NaN/inf (as
    :func:`~ila.numerics.adaptivfloat.quantize_checked`); ``bug`` (one of :data:`BUGS`) seeds an
    error for the differential test."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {BUGS}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.size < MIN_SIZE:
        return af.quantize_checked(x, bias)
    digest = b"" if bug == "key_without_data" else hashlib.blake2b(x.data, digest_size=16).digest()
    key = (x.shape, None if bias is None else int(bias), digest)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        _STATE["hits"] += 1
    else:
        _STATE["misses"] += 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            codes, reg, clamped = af.quantize_checked(x, bias)
        codes.setflags(write=False)
        hit = _CACHE[key] = (codes, reg, clamped, [(w.message, w.category) for w in caught])
        _STATE["bytes"] += codes.nbytes
        while _STATE["bytes"] > MAX_BYTES and len(_CACHE) > 1:
            _, old = _CACHE.popitem(last=False)
            _STATE["bytes"] -= old[0].nbytes
    codes, reg, clamped, issued = hit
    for message, category in issued:
        warnings.warn(message, category, stacklevel=3)
    return codes, reg, clamped


def clear() -> None:
    """Empty the cache (and its hit / miss counters)."""
    _CACHE.clear()
    _STATE.update(bytes=0, hits=0, misses=0)


def stats() -> dict:
    """``{"entries", "bytes", "hits", "misses"}`` of the cache."""
    return {"entries": len(_CACHE), **_STATE}


__all__ = ["BUGS", "MAX_BYTES", "MIN_SIZE", "clear", "quantize", "stats"]
