"""Sorts of ILA expressions: Bool, BV(width) and Mem(addr_width, data_width).

Mirrors ILAng's ``SortRef::BOOL()``, ``SortRef::BV(w)`` and ``SortRef::MEM(aw, dw)``. Widths are
in bits and must be positive; there is no upper limit (constants are arbitrary-precision).
"""
from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class BoolSort(Sort):
    def __repr__(self) -> str:
        return "Bool"


@dataclass(frozen=True, slots=True)
class BvSort(Sort):
    width: int

    def __post_init__(self):
        if not isinstance(self.width, int) or isinstance(self.width, bool) or self.width < 1:
            raise WidthError(f"bit-vector width must be a positive int, got {self.width!r}")

    def __repr__(self) -> str:
        return f"BV({self.width})"


@dataclass(frozen=True, slots=True)
class MemSort(Sort):
    addr_width: int
    data_width: int

    def __post_init__(self):
        for label, w in (("address", self.addr_width), ("data", self.data_width)):
            if not isinstance(w, int) or isinstance(w, bool) or w < 1:
                raise WidthError(f"memory {label} width must be a positive int, got {w!r}")

    def __repr__(self) -> str:
        return f"Mem({self.addr_width}, {self.data_width})"


BOOL = BoolSort()


def BV(width: int) -> BvSort:  # noqa: N802 (mirrors SortRef::BV)
    return BvSort(width)


def Mem(addr_width: int, data_width: int) -> MemSort:  # noqa: N802
    return MemSort(addr_width, data_width)
