"""Scalar numerics of the compiler-IR ILA: how one tensor element is added, multiplied, compared.

Two element types:

* ``float32``: elements are 32-bit IEEE-754 bit patterns; the scalar operators are uninterpreted
  functions (``relay_fadd``, ``relay_fmul``, ``relay_fmax``, ...) whose numpy bodies compute in
  float32 (round to nearest even, numpy semantics). In proofs they are abstract data types, with
  the axioms stated here (commutativity; max returns one of its arguments).
* ``int32``: two's-complement 32-bit integers with exact bit-vector operators (``bvadd``,
  ``bvmul``, signed max via ``ite(bvslt)``), for the integer accelerators (VTA).
* ``int32_uf``: ``int32`` plus ``sigmoid`` and ``tanh`` as uninterpreted functions
  (``relay_isigmoid``, ``relay_itanh``; no axioms), so the recurrent operators (``lstm_layer``,
  ``nn.lstm``) exist in the integer ILA. The exact checks of compiler-IR rewrites use it: an
  identity proved there holds for *every* activation function, in particular for the real
  sigmoid and tanh. The simulation bodies read the element as Q16.16 fixed point (value / 2^16)
  and round the float64 activation back; proofs never rely on them.

Source of the semantics: TVM Relay operator definitions (float32 and int32 tensors).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ila.expr import Expr, FuncRef, bv_const, ite, lor
from ila.sorts import BvSort


def _f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.uint64).astype(np.uint32).view(np.float32)


def _bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)


def _binary(fn: Callable) -> Callable:
    def body(a, b):
        with np.errstate(all="ignore"):
            return _bits(fn(_f32(a), _f32(b)))
    return body


def _unary(fn: Callable) -> Callable:
    def body(a):
        with np.errstate(all="ignore"):
            return _bits(fn(_f32(a)))
    return body


F32 = BvSort(32)


def _max_axioms(f):
    return [lambda a, b: f(a, b).eq(f(b, a)), lambda a, b: lor(f(a, b).eq(a), f(a, b).eq(b))]


@dataclass(frozen=True)
class Numerics:
    """Element type of IR tensors and builders for its scalar operators (Expr -> Expr)."""
    name: str
    width: int
    add: Callable[[Expr, Expr], Expr]
    sub: Callable[[Expr, Expr], Expr]
    mul: Callable[[Expr, Expr], Expr]
    max: Callable[[Expr, Expr], Expr]
    div: Callable[[Expr, Expr], Expr]
    exp: Callable[[Expr], Expr]
    rsqrt: Callable[[Expr], Expr]
    sigmoid: Callable[[Expr], Expr]
    tanh: Callable[[Expr], Expr]
    from_int: Callable[[Expr], Expr]                      # unsigned 32-bit integer -> element
    zero: int
    from_float: Callable[[np.ndarray], np.ndarray]       # numpy values -> element bit patterns
    to_float: Callable[[np.ndarray], np.ndarray]         # element bit patterns -> numpy values

    def const(self, bits: int) -> Expr:
        return bv_const(bits, self.width)


def _float32() -> Numerics:
    fadd = FuncRef("relay_fadd", F32, [F32, F32], body=_binary(np.add),
                   axioms=[lambda a, b: fadd(a, b).eq(fadd(b, a))])
    fsub = FuncRef("relay_fsub", F32, [F32, F32], body=_binary(np.subtract))
    fmul = FuncRef("relay_fmul", F32, [F32, F32], body=_binary(np.multiply),
                   axioms=[lambda a, b: fmul(a, b).eq(fmul(b, a))])
    fmax = FuncRef("relay_fmax", F32, [F32, F32], body=_binary(np.maximum))
    fmax.axioms = tuple(_max_axioms(fmax))
    fdiv = FuncRef("relay_fdiv", F32, [F32, F32], body=_binary(np.divide))
    fexp = FuncRef("relay_fexp", F32, [F32], body=_unary(np.exp))
    frsqrt = FuncRef("relay_frsqrt", F32, [F32], body=_unary(lambda x: np.float32(1) / np.sqrt(x)))
    fsig = FuncRef("relay_fsigmoid", F32, [F32], body=_unary(lambda x: np.float32(1) / (np.float32(1) + np.exp(-x))))
    ftanh = FuncRef("relay_ftanh", F32, [F32], body=_unary(np.tanh))
    i2f = FuncRef("relay_u2f", F32, [F32], body=lambda a: _bits(np.asarray(a, dtype=np.uint64).astype(np.float32)))
    return Numerics("float32", 32, fadd, fsub, fmul, fmax, fdiv, fexp, frsqrt, fsig, ftanh, i2f, 0,
                    lambda x: np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64),
                    lambda b: np.asarray(b, dtype=np.uint64).astype(np.uint32).view(np.float32))


def _int32() -> Numerics:
    def unsupported(what):
        def f(*_):
            raise NotImplementedError(f"{what} is not defined on int32 IR tensors")
        return f
    return Numerics("int32", 32, lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
                    lambda a, b: ite(a.slt(b), b, a), lambda a, b: a.sdiv(b),
                    unsupported("exp"), unsupported("rsqrt"), unsupported("sigmoid"), unsupported("tanh"),
                    lambda a: a, 0,
                    lambda x: np.asarray(x, dtype=np.int64).astype(np.int32).view(np.uint32).astype(np.uint64),
                    lambda b: np.asarray(b, dtype=np.uint64).astype(np.uint32).view(np.int32))


def _q16(fn: Callable) -> Callable:
    def body(a):
        v = np.asarray(a, dtype=np.uint64).astype(np.uint32).view(np.int32).astype(np.float64) / 65536.0
        return np.round(fn(v) * 65536.0).astype(np.int64).astype(np.uint32).astype(np.uint64)
    return body


def _int32_uf() -> Numerics:
    from dataclasses import replace
    I32 = BvSort(32)
    isig = FuncRef("relay_isigmoid", I32, [I32], body=_q16(lambda v: 1.0 / (1.0 + np.exp(-v))))
    itanh = FuncRef("relay_itanh", I32, [I32], body=_q16(np.tanh))
    return replace(_int32(), name="int32_uf", sigmoid=isig, tanh=itanh)


FLOAT32 = _float32()
INT32 = _int32()
INT32_UF = _int32_uf()
NUMERICS = {"float32": FLOAT32, "int32": INT32, "int32_uf": INT32_UF}


def abstract(name: str, width: int, *, max_body: Callable | None = None, add_body: Callable | None = None,
             mul_body: Callable | None = None, axioms: bool = True) -> Numerics:
    """Numerics over an abstract ``width``-bit element type (the paper's abstract data types):
    ``max``, ``add`` and ``mul`` are uninterpreted functions named ``<name>_max`` etc., with numpy
    bodies for simulation when given, and (``axioms``) commutativity, plus "max returns one of its
    arguments". Other operators are not available."""
    S = BvSort(width)
    fmax = FuncRef(f"{name}_max", S, [S, S], body=max_body)
    fadd = FuncRef(f"{name}_add", S, [S, S], body=add_body)
    fmul = FuncRef(f"{name}_mul", S, [S, S], body=mul_body)
    if axioms:
        fmax.axioms = tuple(_max_axioms(fmax))
        fadd.axioms = (lambda a, b: fadd(a, b).eq(fadd(b, a)),)
        fmul.axioms = (lambda a, b: fmul(a, b).eq(fmul(b, a)),)

    def unsupported(what):
        def f(*_):
            raise NotImplementedError(f"{what} is not defined on the abstract element type {name!r}")
        return f
    return Numerics(name, width, fadd, unsupported("sub"), fmul, fmax, unsupported("div"), unsupported("exp"),
                    unsupported("rsqrt"), unsupported("sigmoid"), unsupported("tanh"), unsupported("from_int"), 0,
                    lambda x: np.asarray(x, dtype=np.uint64), lambda b: np.asarray(b, dtype=np.uint64))
