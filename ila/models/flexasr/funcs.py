"""Uninterpreted functions of the FlexASR ILA, with numpy bodies, axioms and bit-precise bodies.

The names follow flexnlp-ila ``uninterpreted_func.h`` where one function corresponds to one of
theirs (``GBAdpfloat_max``, ``Adptfloat2Fixed``, ``PEActEmul`` ...). A few are *coarser* than
theirs (a 16-term dot product instead of 16 ``ProductSum`` plus ``AccumAdd``; the bias/shift/clamp
chain of ``RunBias`` in one function; LayerNorm and Attention per-vector steps): their bodies
are compositions of the fine-grained numerics in :mod:`ila.numerics.adaptivfloat`, so the
numbers are the same, only the number of simulator steps differs.

Signed fixed-point values travel as unsigned bit patterns of their width (two's complement).
"""
from __future__ import annotations

import numpy as np

from ... import BvSort, FuncRef, bv_const, concat, ite, zext
from ...numerics import adaptivfloat as af

B1, B3, B8, B16, B20, B24, B32 = (BvSort(w) for w in (1, 3, 8, 16, 20, 24, 32))


def _stack(args):
    """Stack argument arrays (0-d scalars and 1-d lane arrays mixed) along a new axis 0."""
    return np.stack(np.broadcast_arrays(*[np.asarray(a) for a in args]))


def _s(x, w):
    return af.from_unsigned(x, w)


def _u(x, w):
    return af.to_unsigned(x, w)


# ----------------------------------------------------------------------------- AdaptivFloat max/mean/add
def canon_expr(x):
    """Bit-precise canonicalisation: 0x80 -> 0x00."""
    return ite(x[6:0].eq(0), bv_const(0, 8), x)


def order_key_expr(x):
    """Bit-precise 8-bit signed order key: +mag for sign 0, -mag for sign 1 (zero -> 0)."""
    mag = zext(x[6:0], 8)
    return ite(x[7].eq(1), bv_const(0, 8) - mag, mag)


def max_expr(a, b):
    """Bit-precise ``adpfloat_max``: canon(a) if key(a) >= key(b) (signed) else canon(b)."""
    return ite(order_key_expr(a).sge(order_key_expr(b)), canon_expr(a), canon_expr(b))


GB_ADPFLOAT_MAX = FuncRef(
    "GBAdpfloat_max", B8, [B8, B8],
    body=lambda a, b: af.af_max(a, b).astype(np.uint64),
    axioms=[
        lambda a, b: GB_ADPFLOAT_MAX(a, b).eq(GB_ADPFLOAT_MAX(b, a)),                 # commutative
        lambda a, b: GB_ADPFLOAT_MAX(a, b).eq(canon_expr(a))
        | GB_ADPFLOAT_MAX(a, b).eq(canon_expr(b)),                                  # canonical selection
        lambda a, b: GB_ADPFLOAT_MAX(a, b).ne(bv_const(0x80, 8)),                     # never -0
        lambda a, b: order_key_expr(GB_ADPFLOAT_MAX(a, b)).sge(order_key_expr(a))
        & order_key_expr(GB_ADPFLOAT_MAX(a, b)).sge(order_key_expr(b)),             # upper bound
    ],
    expr_body=max_expr)

GB_ADPFLOAT_MEAN = FuncRef(
    "GBAdpfloat_mean", B8, [B8, B8],
    body=lambda a, b: af.af_mean(a, b).astype(np.uint64),
    axioms=[lambda a, b: GB_ADPFLOAT_MEAN(a, b).eq(GB_ADPFLOAT_MEAN(b, a))])

GB_ADPFLOAT_ADD = FuncRef(
    "GBAdpfloat_add", B8, [B8, B8],
    body=lambda a, b: af.af_add(a, b).astype(np.uint64),
    axioms=[lambda a, b: GB_ADPFLOAT_ADD(a, b).eq(GB_ADPFLOAT_ADD(b, a))])


# ----------------------------------------------------------------------------- PE core
def _dot16(*args):
    w, x = np.split(_stack(args[:32]), 2)
    return _u(af.wrap_signed(af.product(w, x).sum(axis=0), af.ACCUM_W), af.ACCUM_W)


PE_PRODUCT_SUM16 = FuncRef(
    "PEProductSum16", B32, [B8] * 32, body=_dot16)
"""Sum of 16 ``ProductSum(w_k, x_k)`` (``adpfloat_mul`` into the accumulator), 32-bit wrap.
Arguments: w_0..w_15, x_0..x_15."""

PRODUCT_SUM = FuncRef(
    "ProductSum", B32, [B8, B8],
    body=lambda w, x: _u(af.product(w, x), af.ACCUM_W),
    axioms=[lambda a, b: PRODUCT_SUM(a, b).eq(PRODUCT_SUM(b, a))])
"""``adpfloat_mul`` of a weight and an input into the 32-bit accumulator (flexnlp-ila ``ProductSum``)."""

ACCUM_ADD = FuncRef(
    "AccumAdd", B32, [B32, B32],
    body=lambda a, b: _u(_s(a, 32) + _s(b, 32), 32),
    axioms=[lambda a, b: ACCUM_ADD(a, b).eq(ACCUM_ADD(b, a))],
    expr_body=lambda a, b: a + b)

PE_CORE_ACCUM2ACT = FuncRef(
    "PECoreAccum2Act", B20, [B32, B8, B3, B3, B3, B1],
    body=lambda acc, bcode, bw, bi, bb, is_bias: _u(np.where(
        np.asarray(is_bias) == 1,
        af.accum_to_act(_s(acc, 32), bw, bi, bcode, bb),
        af.accum_to_act(_s(acc, 32), bw, bi)), 20))
"""PE core ``RunBias``: ``PECoreAccumRightShift`` by 14 - bias_w - bias_i, optional
``PECoreAccumGetBiasOut`` (bias byte converted with bias register bb), ``PECoreAccumOverflowCheck``
(clamp to the 20-bit range) and ``PECoreAccum2ActReg``. Args: acc, bias byte, bw, bi, bb, is_bias."""


# ----------------------------------------------------------------------------- activation unit
def _act1(name, fn):
    return FuncRef(name, B20, [B20], body=lambda a: _u(fn(_s(a, 20)), 20))


PE_ACT_EADD = FuncRef("PEActEadd", B20, [B20, B20], body=lambda a, b: _u(af.act_add(_s(a, 20), _s(b, 20)), 20),
                      expr_body=lambda a, b: a + b)
PE_ACT_EMUL = FuncRef("PEActEmul", B20, [B20, B20], body=lambda a, b: _u(af.act_mul(_s(a, 20), _s(b, 20)), 20))
PE_ACT_SIGMOID = _act1("PEActSigmoid", af.act_sigmoid)
PE_ACT_TANH = _act1("PEActTanh", af.act_tanh)
PE_ACT_RELU = _act1("PEActRelu", af.act_relu)
PE_ACT_ONEX = _act1("PEActOnex", af.act_onex)
ADPTFLOAT2FIXED = FuncRef("Adptfloat2Fixed", B20, [B8, B3], body=lambda c, b: _u(af.to_act(c, b), 20))
FIXED2ADAPTFLOAT = FuncRef("Fixed2Adaptfloat", B8, [B20, B3],
                           body=lambda x, b: af.from_act(_s(x, 20), b).astype(np.uint64))


# ----------------------------------------------------------------------------- layer norm
def _ln_sum16(s, *args):
    codes, bias = _stack(args[:16]), args[16]
    return _u(af.wrap_signed(_s(s, 24) + af.to_act(codes, bias).sum(axis=0), 24), 24)


def _ln_sqsum16(s, *args):
    codes, bias, mean = _stack(args[:16]), args[16], _s(args[17], 20)
    d = af.wrap_signed(af.to_act(codes, bias) - mean, 20)                 # ActSignedMinus
    return _u(af.wrap_signed(_s(s, 24) + af.act_mul(d, d).sum(axis=0), 24), 24)


def _ln_mean(s, n):
    n = np.maximum(np.asarray(n).astype(np.int64), 1)
    return _u(af.wrap_signed(np.floor_divide(_s(s, 24), n), 20), 20)    # GBNormDivide_24


def _ln_inv_std(sq, n):
    n = np.maximum(np.asarray(n).astype(np.int64), 1)
    var = np.maximum(np.floor_divide(_s(sq, 24), n), 0) / float(1 << af.ACT_F)
    inv = np.floor(np.minimum(1.0 / np.sqrt(var + 2.0 ** -af.ACT_F), 2.0 ** 5) * (1 << af.ACT_F))
    return _u(inv.astype(np.int64), 20)                                  # SInvSqrt


def _ln_norm(x, bx, mean, inv, g, bg, be, bbe, bout):
    d = af.wrap_signed(af.to_act(x, bx) - _s(mean, 20), 20)
    y = af.act_mul(af.act_mul(d, _s(inv, 20)), af.to_act(g, bg))
    y = af.act_add(y, af.to_act(be, bbe))
    return af.from_act(y, bout).astype(np.uint64)


GB_NORM_SUM16 = FuncRef("GBNormSum16", B24, [B24] + [B8] * 16 + [B3], body=_ln_sum16)
GB_NORM_SQSUM16 = FuncRef("GBNormSqSum16", B24, [B24] + [B8] * 16 + [B3, B20], body=_ln_sqsum16)
GB_NORM_MEAN = FuncRef("GBNormDivide_24", B20, [B24, B16], body=_ln_mean)
GB_NORM_INV_STD = FuncRef("SInvSqrt", B20, [B24, B16], body=_ln_inv_std)
GB_NORM_OUT = FuncRef("GBNormOut", B8, [B8, B3, B20, B20, B8, B3, B8, B3, B3], body=_ln_norm)


# ----------------------------------------------------------------------------- attention
def _att_dot16(acc, *args):
    e, d = np.split(_stack(args[:32]), 2)
    b1, b2 = args[32], args[33]
    p = af.to_fixed(e, b1, 32, af.ATT_F) * af.to_fixed(d, b2, 32, af.ATT_F) >> af.ATT_F
    return _u(af.wrap_signed(_s(acc, 32) + p.sum(axis=0), 32), 32)


def _att_exp(s, m):
    x = (_s(s, 32) - _s(m, 32)) / float(1 << af.ATT_F)
    return _u(np.floor(np.exp(np.maximum(x, -30.0)) * (1 << af.ATT_F)).astype(np.int64), 32)


def _att_div(e, total):
    t = np.maximum(_s(total, 32), 1)
    return _u(np.floor_divide(_s(e, 32) << af.ATT_F, t), 32)


def _att_wacc(acc, p, bp, e, b1):
    v = (af.to_fixed(p, bp, 32, af.ATT_F) * af.to_fixed(e, b1, 32, af.ATT_F)) >> af.ATT_F
    return _u(af.wrap_signed(_s(acc, 32) + v, 32), 32)


GB_ATTENTION_DOT16 = FuncRef("GBAttentionDot16", B32, [B32] + [B8] * 32 + [B3, B3], body=_att_dot16)
GB_ATTENTION_MAX = FuncRef("GBAttentionMax", B32, [B32, B32],
                           body=lambda a, b: _u(np.maximum(_s(a, 32), _s(b, 32)), 32),
                           expr_body=lambda a, b: ite(a.sge(b), a, b))
GB_ATTENTION_EXP = FuncRef("GBAttentionExp", B32, [B32, B32], body=_att_exp)
GB_ATTENTION_ADD = FuncRef("GBAttentionAdd", B32, [B32, B32],
                           body=lambda a, b: _u(_s(a, 32) + _s(b, 32), 32), expr_body=lambda a, b: a + b)
GB_ATTENTION_DIV = FuncRef("GBAttentionDiv", B32, [B32, B32], body=_att_div)
GB_ATTENTION_WACC = FuncRef("GBAttentionWAcc", B32, [B32, B8, B3, B8, B3], body=_att_wacc)
"""acc + p * e in ATT fixed point, p and e AdaptivFloat with their bias registers."""
GB_ATTENTION_COMPRESS = FuncRef(
    "GBAttentionCompress", B8, [B32, B3],
    body=lambda x, b: af.from_fixed(_s(x, 32), af.ATT_F, b).astype(np.uint64))


def concat_bytes(bs):
    """Concatenate byte expressions, element 0 least significant."""
    return concat(*reversed(list(bs)))
