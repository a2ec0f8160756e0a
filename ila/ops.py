"""The closed set of primitive operators: exactly the SMT-LIB QF_ABV(+UF) operators.

Each op has one numpy implementation and one pysmt builder, side by side in
:mod:`ila.semantics`; an import-time check there makes sure both cover every op. Derived
operators (signed max, saturating add, AdaptivFloat arithmetic, ...) are builders that expand
into these primitives, or uninterpreted functions (``APPLY``).

SMT-LIB edge cases hold in both backends: ``bvudiv x 0 = ~0``, ``bvurem x 0 = x``, ``bvsdiv``/
``bvsrem`` are defined through the unsigned ops on magnitudes, shifts by at least the width give
0 (``bvshl``, ``bvlshr``) or the sign fill (``bvashr``).
"""
from __future__ import annotations

import enum


class Op(enum.Enum):
    # leaves
    CONST = "const"        # Bool or BV constant (payload: value)
    VAR = "var"            # state or input (payload: (kind, name, owner uid))
    # Bool connectives
    AND = "and"
    OR = "or"
    XOR = "xor"
    NOT = "not"
    IMPLIES = "=>"
    # bit-vector arithmetic (modulo 2^w)
    ADD = "bvadd"
    SUB = "bvsub"
    MUL = "bvmul"
    UDIV = "bvudiv"
    SDIV = "bvsdiv"
    UREM = "bvurem"
    SREM = "bvsrem"
    NEG = "bvneg"
    # bitwise
    BVAND = "bvand"
    BVOR = "bvor"
    BVXOR = "bvxor"
    BVNOT = "bvnot"
    SHL = "bvshl"
    LSHR = "bvlshr"
    ASHR = "bvashr"
    ROTL = "rotate_left"   # payload: amount
    ROTR = "rotate_right"  # payload: amount
    # structure
    CONCAT = "concat"
    EXTRACT = "extract"    # payload: (hi, lo)
    ZEXT = "zero_extend"   # result width in the sort
    SEXT = "sign_extend"
    # comparisons (explicit signedness)
    EQ = "="
    ULT = "bvult"
    ULE = "bvule"
    UGT = "bvugt"
    UGE = "bvuge"
    SLT = "bvslt"
    SLE = "bvsle"
    SGT = "bvsgt"
    SGE = "bvsge"
    ITE = "ite"
    # arrays
    LOAD = "select"
    STORE = "store"
    # uninterpreted functions (payload: FuncRef)
    APPLY = "apply"


BOOL_CONNECTIVES = frozenset({Op.AND, Op.OR, Op.XOR, Op.NOT, Op.IMPLIES})
BV_BINARY_SAME_WIDTH = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.UDIV, Op.SDIV, Op.UREM, Op.SREM,
                                  Op.BVAND, Op.BVOR, Op.BVXOR, Op.SHL, Op.LSHR, Op.ASHR})
BV_COMPARISONS = frozenset({Op.ULT, Op.ULE, Op.UGT, Op.UGE, Op.SLT, Op.SLE, Op.SGT, Op.SGE})
