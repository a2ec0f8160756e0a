"""A memo of results computed from large numpy tensors, found by exact content.

The code generators quantise every operand on every call, and an application's weights are the
same tensors call after call and data point after data point. :class:`TensorMemo` keeps such
results: an entry is looked up by a cheap key (a caller's tag, the tensor's shape and dtype and 64
sampled elements) and returned only when its stored copy of the tensor equals the tensor byte for
byte (floats compared by their bits, so -0.0 is not 0.0 and a tensor changed in place anywhere is
computed again). A tensor is stored the second time its key is seen, so a layer's input, new in
every call, is never copied. Least recently used entries go first beyond ``max_entries`` entries
or ``max_bytes`` bytes (the copies plus the sizes the caller declares for its values). A lock makes
it safe to share between threads.

Users: AdaptivFloat quantisation of FlexASR operands (:mod:`ila.models.flexasr.quantcache`) and
int8 quantisation of VTA operands (:func:`mappings.vta.dense.quantize`). Each user's test checks
results through the memo equal fresh ones and catches the seeded bug ``"sample_only"`` (an entry
found by its key alone, without the exact comparison).

A memo keyed by its inputs assumes the code computing its values does not change. A seeded bug
(:func:`verify.mutations.applied`) replaces functions and table entries in place for a while, so
every memo of values computed by code is cleared when a seeded bug is applied and when it is
removed (:func:`clear_all`): every :class:`TensorMemo`, and every other memo whose clearing
function was given to :func:`register` (e.g. FlexASR's configuration rows,
:func:`ila.models.flexasr.isa.mmio_table`).
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Callable

import numpy as np

BUGS = ("sample_only",)

_TENSOR_MEMOS: "weakref.WeakSet[TensorMemo]" = weakref.WeakSet()
_CLEARERS: list = []


def register(clear: Callable[[], None]) -> None:
    """Have :func:`clear_all` call ``clear`` (a memo's clearing function; idempotent per function)."""
    if clear not in _CLEARERS:
        _CLEARERS.append(clear)


def clear_all() -> None:
    """Empty every memo of values computed by code: every live :class:`TensorMemo` and every
    registered memo (module docstring: called around each seeded bug)."""
    for memo in list(_TENSOR_MEMOS):
        memo.clear()
    for clear in list(_CLEARERS):
        clear()


def _bits(arr: np.ndarray) -> np.ndarray:
    """The bytes of C-contiguous ``arr`` (a bitwise comparison: -0.0 differs from 0.0)."""
    return arr.reshape(-1).view(np.uint8)


class TensorMemo:
    """Results by tensor content (module docstring). ``bug`` (one of :data:`BUGS`) seeds a
    deliberate error for the users' differential tests."""

    def __init__(self, *, max_entries: int = 64, max_bytes: int = 512 << 20, bug: str | None = None):
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown seeded bug {bug!r}; one of {BUGS}")
        self.max_entries, self.max_bytes, self.bug = max_entries, max_bytes, bug
        self._stored: OrderedDict = OrderedDict()    # key -> (copy, value, bytes)
        self._seen: OrderedDict = OrderedDict()      # keys seen once
        self._bytes = 0
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        _TENSOR_MEMOS.add(self)

    @staticmethod
    def key(arr: np.ndarray, tag=()) -> tuple:
        """The lookup key of C-contiguous ``arr``: (tag, shape, dtype, 64 sampled elements' bytes)."""
        idx = np.linspace(0, arr.size - 1, 64).astype(np.int64) if arr.size else np.zeros(0, np.int64)
        return tag, arr.shape, arr.dtype.str, arr.reshape(-1)[idx].tobytes()

    def get(self, arr: np.ndarray, tag=()):
        """The value stored for ``arr``'s exact content under ``tag``, or None."""
        arr = np.ascontiguousarray(arr)
        k = self.key(arr, tag)
        with self._lock:
            hit = self._stored.get(k)
            if hit is None or not (self.bug == "sample_only" or np.array_equal(_bits(hit[0]), _bits(arr))):
                self.misses += 1
                return None
            self._stored.move_to_end(k)
            self.hits += 1
            return hit[1]

    def put(self, arr: np.ndarray, value, tag=(), nbytes: int = 0) -> bool:
        """Note that ``arr`` (under ``tag``) gives ``value`` (``nbytes``: its size, for the byte
        budget): stored if its key was seen before; returns whether it was. Nobody may change a
        stored ``value`` later (make its arrays read-only)."""
        arr = np.ascontiguousarray(arr)
        k = self.key(arr, tag)
        with self._lock:
            if k not in self._seen and k not in self._stored:
                self._seen[k] = True
                while len(self._seen) > 8 * self.max_entries:
                    self._seen.popitem(last=False)
                return False
            old = self._stored.pop(k, None)
            if old is not None:
                self._bytes -= old[2]
            size = arr.nbytes + int(nbytes)
            self._stored[k] = (arr.copy(), value, size)
            self._bytes += size
            while len(self._stored) > 1 and (len(self._stored) > self.max_entries or self._bytes > self.max_bytes):
                _, gone = self._stored.popitem(last=False)
                self._bytes -= gone[2]
            return True

    def clear(self) -> None:
        with self._lock:
            self._stored.clear()
            self._seen.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def stats(self) -> dict:
        """``{"entries", "bytes", "hits", "misses"}``."""
        return {"entries": len(self._stored), "bytes": self._bytes, "hits": self.hits, "misses": self.misses}


__all__ = ["BUGS", "TensorMemo", "clear_all", "register"]
