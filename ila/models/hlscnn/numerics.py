"""HLSCNN datapath functions as ILA uninterpreted functions (``FuncRef``), like the 3LA HLSCNN ILA
(``ConvMac``, ``ConvMacPsum2Act``, ``ActAdd2Psum``, ``ConvAddBias``, ``PsumRelu``, ``Psum2Act``).

Each function carries a numpy ``body`` (vectorised, bit-accurate, equal to the definitions in
:mod:`ila.numerics.fixed_point`) for simulation and a bit-precise ``expr_body`` for proofs that
want exact numerics; proofs about the mapping can keep them uninterpreted.
Arguments and results are raw two's-complement bit patterns: PSUM 32 bits (16 frac), ACT 16 bits
(7 frac), weights 16 bits (14 frac; 8-bit weights are widened by the datapath before the MAC).
"""
from __future__ import annotations

from ila import BvSort, FuncRef, bv_const, extract, ite, sext
import numpy as np


def _sx(u, bits):
    """Unsigned bit patterns (uint64 arrays) -> signed int64."""
    h = 1 << (bits - 1)
    return (u.astype(np.int64) ^ h) - h


_M32, _M16 = (1 << 32) - 1, (1 << 16) - 1


# Lean numpy bodies (the simulator's hot path); tests check them against the readable
# definitions in ila.numerics.fixed_point and against the expr_body expressions.
def _mac_np(p, w, a):
    return ((p.astype(np.int64) + ((_sx(w, 16) * _sx(a, 16)) >> 5)) & _M32).astype(np.uint64)


def _rnd_sat_np(p):
    return (np.clip((_sx(p, 32) + 256) >> 9, -32768, 32767) & _M16).astype(np.uint64)


def _act_add_np(a, b):
    return (((_sx(a, 16) + _sx(b, 16)) << 9) & _M32).astype(np.uint64)


def _bias_np(p, b):
    return ((p.astype(np.int64) + (_sx(b, 16) << 2)) & _M32).astype(np.uint64)


def _relu_np(p):
    return np.where(_sx(p, 32) > 0, p, 0).astype(np.uint64)


def _trn_np(p):
    return ((_sx(p, 32) >> 9) & _M16).astype(np.uint64)


def _mac_expr(p, w, a):
    prod = sext(w, 32) * sext(a, 32)          # |w*a| <= 2**30: exact in 32 bits
    return p + prod.ashr(5)                   # truncate 21 -> 16 fraction bits, wrap at 32


def _rnd_sat_expr(p):
    r = (sext(p, 33) + 256).ashr(9)           # round half up, 16 -> 7 fraction bits
    return ite(r.sgt(32767), bv_const(0x7FFF, 16), ite(r.slt(-32768), bv_const(0x8000, 16), extract(r, 15, 0)))


def _act_add_expr(a, b):
    return (sext(a, 32) + sext(b, 32)) << 9


def _bias_expr(p, b):
    return p + (sext(b, 32) << 2)


def _relu_expr(p):
    return ite(p.sgt(0), p, bv_const(0, 32))


def _trn_expr(p):
    return extract(p.ashr(9), 15, 0)


B16, B32 = BvSort(16), BvSort(32)
CONV_MAC = FuncRef("hlscnn_conv_mac", B32, [B32, B16, B16], body=_mac_np,
                   expr_body=_mac_expr)
PSUM_TO_ACT_RND = FuncRef("hlscnn_conv_mac_psum2act", B16, [B32], body=_rnd_sat_np,
                          expr_body=_rnd_sat_expr)
ACT_ADD_PSUM = FuncRef("hlscnn_act_add2psum", B32, [B16, B16], body=_act_add_np,
                       expr_body=_act_add_expr)
PSUM_ADD_BIAS = FuncRef("hlscnn_conv_add_bias", B32, [B32, B16], body=_bias_np,
                        expr_body=_bias_expr)
PSUM_RELU = FuncRef("hlscnn_psum_relu", B32, [B32], body=_relu_np, expr_body=_relu_expr)
PSUM_TO_ACT_TRN = FuncRef("hlscnn_psum2act", B16, [B32], body=_trn_np,
                          expr_body=_trn_expr)

ALL = [CONV_MAC, PSUM_TO_ACT_RND, ACT_ADD_PSUM, PSUM_ADD_BIAS, PSUM_RELU, PSUM_TO_ACT_TRN]

__all__ = ["CONV_MAC", "PSUM_TO_ACT_RND", "ACT_ADD_PSUM", "PSUM_ADD_BIAS", "PSUM_RELU", "PSUM_TO_ACT_TRN", "ALL"]
