"""Sorts of ILA expressions: Bool, BV(width) and Mem(addr_width, data_width).

Mirrors ILAng's ``SortRef::BOOL()``, ``SortRef::BV(w)`` and ``SortRef::MEM(aw, dw)``. Widths are
in bits and must be positive; there is no upper limit (constants are arbitrary-precision).
"""
from __future__ import annotations

from .errors import WidthError


class Sort:
    """Base class of the three sorts."""

    __slots__ = ()

    @property
    def is_bool(self) -> bool:
        return isinstance(self, BoolSort)

    @property
    def is_bv(self) -> bool:
        return isinstance(self, BvSort)

    @property
    def is_mem(self) -> bool:
        return isinstance(self, MemSort)


class _Canonical(Sort):
    """A sort with one object per value (built through a cache), so that equal sorts are the same
    object: equality and hashing are object identity, which runs no Python code (the intern key of
    every expression node holds its sort). Immutable; pickles and copies to the canonical object."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class BoolSort(_Canonical):
    __slots__ = ()
    _one = None

    def __new__(cls):
        if cls._one is None:
            type.__setattr__(cls, "_one", object.__new__(cls))
        return cls._one

    def __reduce__(self):
        return (BoolSort, ())

    def __repr__(self) -> str:
        return "Bool"


class BvSort(_Canonical):
    __slots__ = ("width",)
    _cache: dict = {}

    def __new__(cls, width):
        got = cls._cache.get(width) if type(width) is int else None
        if got is None:
            if not isinstance(width, int) or isinstance(width, bool) or width < 1:
                raise WidthError(f"bit-vector width must be a positive int, got {width!r}")
            width = int(width)
            got = cls._cache.get(width)
            if got is None:
                got = object.__new__(cls)
                object.__setattr__(got, "width", width)
                cls._cache[width] = got
        return got

    def __reduce__(self):
        return (BvSort, (self.width,))

    def __repr__(self) -> str:
        return f"BV({self.width})"


class MemSort(_Canonical):
    __slots__ = ("addr_width", "data_width")
    _cache: dict = {}

    def __new__(cls, addr_width, data_width):
        key = (addr_width, data_width)
        got = cls._cache.get(key) if type(addr_width) is int and type(data_width) is int else None
        if got is None:
            for label, w in (("address", addr_width), ("data", data_width)):
                if not isinstance(w, int) or isinstance(w, bool) or w < 1:
                    raise WidthError(f"memory {label} width must be a positive int, got {w!r}")
            key = (int(addr_width), int(data_width))
            got = cls._cache.get(key)
            if got is None:
                got = object.__new__(cls)
                object.__setattr__(got, "addr_width", key[0])
                object.__setattr__(got, "data_width", key[1])
                cls._cache[key] = got
        return got

    def __reduce__(self):
        return (MemSort, (self.addr_width, self.data_width))

    def __repr__(self) -> str:
        return f"Mem({self.addr_width}, {self.data_width})"


BOOL = BoolSort()


def BV(width: int) -> BvSort:  # noqa: N802 (mirrors SortRef::BV)
    return BvSort(width)


def Mem(addr_width: int, data_width: int) -> MemSort:  # noqa: N802
    return MemSort(addr_width, data_width)
