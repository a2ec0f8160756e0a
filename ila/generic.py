"""Bit-level arithmetic over Python ints and bit-vector expressions alike.

Code generators (the accelerators' assemblers and drivers) are written with these helpers so that
one piece of code emits both the concrete program a driver runs and, given symbolic tensor
elements or symbolic sizes, the symbolic program a proof reads (``DESIGN.md``, "the trusted path").
For ints the helpers are ordinary Python arithmetic; for :class:`~ila.expr.Expr` operands they
build the bit-vector terms of the same operations (widths are explicit, as in SMT-LIB).

Every function takes ``int | Expr`` operands; mixing an int with an expression converts the int
to a constant of the expression's width. Errors: :class:`~ila.errors.WidthError` when an int does
not fit the width it is asked to fill.
"""
from __future__ import annotations

from ila.errors import WidthError
from ila.expr import Expr, bv_const, concat, extract, ite, zext
from ila.simplify import simplify


def is_symbolic(*xs) -> bool:
    """True when any argument is an expression (the code runs symbolically)."""
    return any(isinstance(x, Expr) for x in xs)


def const(x, width: int):
    """``x`` as a ``width``-bit value: an int is range-checked and kept as int; an expression is
    zero-extended (or, when wider, refused)."""
    if isinstance(x, Expr):
        if x.sort.width > width:
            raise WidthError(f"a {x.sort.width}-bit value does not fit {width} bits: {x.short()}")
        return x if x.sort.width == width else zext(x, width)
    x = int(x)
    if not 0 <= x < (1 << width):
        raise WidthError(f"{x} does not fit {width} bits")
    return x


def field(x, lo: int, width: int):
    """Bits ``[lo + width - 1 : lo]`` of ``x`` (an int, or an expression at least that wide)."""
    if isinstance(x, Expr):
        return simplify(extract(x, lo + width - 1, lo))
    return (int(x) >> lo) & ((1 << width) - 1)


def join(parts) -> int | Expr:
    """Concatenate ``parts`` = [(value, width), ...], most significant first."""
    parts = list(parts)
    if not is_symbolic(*[v for v, _ in parts]):
        out = 0
        for v, w in parts:
            out = (out << w) | const(v, w)
        return out
    terms = [v if isinstance(v, Expr) and v.sort.width == w else
             (const(v, w) if isinstance(v, Expr) else bv_const(const(v, w), w)) for v, w in parts]
    return simplify(concat(*terms)) if len(terms) > 1 else terms[0]


def bytes_le(values, width: int = 8) -> int | Expr:
    """The little-endian word of ``values`` (element 0 least significant), each ``width`` bits."""
    return join([(v, width) for v in reversed(list(values))])


def to_int(x) -> int:
    """An int, or a constant expression's value; anything else is refused (a value the generator
    needs concretely, such as an address, depends on symbolic data)."""
    if isinstance(x, Expr):
        if x.op.name != "CONST":
            raise WidthError(f"a concrete value is needed here, got the term {x.short()}")
        return int(x.payload)
    return int(x)


def select(cond, a, b, width: int | None = None):
    """``a`` if ``cond`` else ``b``: Python's conditional for a bool, ``ite`` for a Bool term."""
    if isinstance(cond, Expr):
        w = width or next(v.sort.width for v in (a, b) if isinstance(v, Expr))
        a = a if isinstance(a, Expr) else bv_const(a, w)
        b = b if isinstance(b, Expr) else bv_const(b, w)
        return ite(cond, a, b)
    return a if cond else b


def ugt(a, b):
    """Unsigned ``a > b``."""
    if isinstance(a, Expr):
        return a.ugt(b)
    if isinstance(b, Expr):
        return b.ult(a)
    return a > b


def lshr(x, n: int):
    """Logical shift right by a constant (ints, numpy integer arrays, terms)."""
    return x.lshr(n) if isinstance(x, Expr) else x >> n


def low_bits(x, n: int):
    """``x`` mod 2**n (the low ``n`` bits, at the width of ``x``; ints, numpy arrays, terms)."""
    return x & ((1 << n) - 1)
