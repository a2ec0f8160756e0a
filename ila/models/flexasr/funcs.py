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

from ila import BvSort, FuncRef, bv_const, concat, ite, sext, zext
from ila.numerics import adaptivfloat as af

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

def _add_expr(a, b, halve: bool):
    """Bit-precise ``adpfloat_add`` / ``adpfloat_mean`` (see :func:`ila.numerics.adaptivfloat.af_add`):
    ac_float alignment of the two signed mantissas (6 fraction bits, truncating shift of the operand
    with the smaller exponent), round to 5 significant bits with ties toward +infinity, exponent
    minus one for the mean, then flush below the range and saturate (signed) above it."""
    W = 12

    def mant(x):
        m = zext(x[3:0], W) + 16
        return ite(x[6:0].eq(0), bv_const(0, W), ite(x[7].eq(1), bv_const(0, W) - m, m))

    ea, eb = a[6:4], b[6:4]
    za, zb = a[6:0].eq(0), b[6:0].eq(0)
    ma, mb = mant(a), mant(b)
    lt = ea.ult(eb)
    d = ite(za | zb, bv_const(0, 3), ite(lt, eb - ea, ea - eb))
    shifted = ite(lt, ma, mb) << 2
    fixed = ite(lt, mb, ma) << 2
    total = shifted.ashr(zext(d, W)) + fixed                       # |total| <= 248
    et = ite(za, eb, ite(zb, ea, ite(lt, eb, ea)))                # exponent field of the sum
    neg = total[W - 1].eq(1)
    mag = ite(neg, bv_const(0, W) - total, total)
    k = bv_const(0, 8)                                            # floor(log2 |total|), 0..7
    for bit in range(1, 8):
        k = ite(mag[bit].eq(1), bv_const(bit, 8), k)
    big = k.ugt(4)                                                # shift right by k-4, rounding
    sh = zext(k - 4, W)
    half = ite(big, bv_const(1, W) << (sh - 1), bv_const(0, W))
    r = ite(big, (total + half).ashr(sh), total << zext(bv_const(4, 8) - k, W))
    rmag = ite(r[W - 1].eq(1), bv_const(0, W) - r, r)
    carry = rmag.eq(32)
    man = ite(carry, bv_const(0, 4), (rmag - 16)[3:0])
    exp_tmp = k + zext(et, 8) + ite(carry, bv_const(1, 8), bv_const(0, 8)) - (7 if halve else 6)
    code = concat(ite(neg, bv_const(1, 1), bv_const(0, 1)), exp_tmp[2:0], man)
    sat = ite(neg, bv_const(0xFF, 8), bv_const(0x7F, 8))
    return ite(total.eq(0) | exp_tmp.slt(0), bv_const(0, 8), ite(exp_tmp.sgt(7), sat, code))


GB_ADPFLOAT_MEAN = FuncRef(
    "GBAdpfloat_mean", B8, [B8, B8],
    body=lambda a, b: af.af_mean(a, b).astype(np.uint64),
    axioms=[lambda a, b: GB_ADPFLOAT_MEAN(a, b).eq(GB_ADPFLOAT_MEAN(b, a))],
    expr_body=lambda a, b: _add_expr(a, b, halve=True))

GB_ADPFLOAT_ADD = FuncRef(
    "GBAdpfloat_add", B8, [B8, B8],
    body=lambda a, b: af.af_add(a, b).astype(np.uint64),
    axioms=[lambda a, b: GB_ADPFLOAT_ADD(a, b).eq(GB_ADPFLOAT_ADD(b, a))],
    expr_body=lambda a, b: _add_expr(a, b, halve=False))


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
def _norm_add(s24, x20):
    return _u(af.wrap_signed(_s(s24, 24) + _s(x20, 20), 24), 24)


def _trunc_div(a, b):
    """C/ac_int integer division (truncation toward zero); a zero divisor gives 0 (never used)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    return np.where(b == 0, 0, np.where((a < 0) ^ (safe < 0), -q, q))


def _norm_div(a, b):
    return _u(af.wrap_signed(_trunc_div(_s(a, 24), _s(b, 24)), 20), 20)


def _inv_sqrt(x):
    """``SInvSqrt``: the 20-bit argument read as UNSIGNED ac_fixed<20, 6> (14 fraction bits), result
    in the same format, then reinterpreted as a signed ACT value. ac_math's piecewise-linear
    ``ac_inverse_sqrt_pwl`` is replaced by the exact 1/sqrt truncated to 14 fraction bits,
    saturated to the format (a zero argument gives the largest code)."""
    u = np.asarray(x).astype(np.uint64).astype(np.float64)
    with np.errstate(divide="ignore"):
        inv = np.floor(np.where(u > 0, (1 << af.ACT_F) / np.sqrt(np.maximum(u, 1) / (1 << af.ACT_F)), np.inf))
    return np.minimum(inv, float((1 << af.ACT_W) - 1)).astype(np.uint64)


def _vec_sum16(*args):
    codes, bias = _stack(args[:16]), args[16]
    return _u(af.wrap_signed(af.to_act(codes, bias).sum(axis=0), 20), 20)


def _vec_sqsum16(*args):
    codes, bias = _stack(args[:16]), args[16]
    x = af.to_act(codes, bias)
    return _u(af.wrap_signed(af.act_mul(x, x).sum(axis=0), 20), 20)


GB_NORM_ADD_24_20 = FuncRef("GBNormAdd_24_20", B24, [B24, B20], body=_norm_add,
                            expr_body=lambda a, b: a + sext(b, 24))
"""24-bit LayerNorm sum + 20-bit ACT value (kLayerNormSumWidth), wrapping."""
GB_NORM_DIVIDE_24 = FuncRef("GBNormDivide_24", B20, [B24, B24], body=_norm_div)
"""Signed 24-bit division truncating toward zero, result kept to 20 bits (E[x] of a timestep)."""
ACT_SIGNED_MINUS = FuncRef("ActSignedMinus", B20, [B20, B20],
                           body=lambda a, b: _u(af.wrap_signed(_s(a, 20) - _s(b, 20), 20), 20),
                           expr_body=lambda a, b: a - b)
SINV_SQRT = FuncRef("SInvSqrt", B20, [B20], body=_inv_sqrt)
GB_NORM_VECTOR_SUM16 = FuncRef("GBNormVectorSum16", B20, [B8] * 16 + [B3], body=_vec_sum16)
"""Coarse: the 16 ``PEActEadd(acc, Adptfloat2Fixed(x_i, bias))`` of ``gb_layer_norm_sum_byte_op``
(20-bit wrapping sum of the vector in ACT fixed point), starting from 0."""
GB_NORM_VECTOR_SQSUM16 = FuncRef("GBNormVectorSqSum16", B20, [B8] * 16 + [B3], body=_vec_sqsum16)
"""Coarse: the 16 ``PEActEadd(acc, PEActEmul(x_i, x_i))`` of the same instruction, from 0."""


# ----------------------------------------------------------------------------- attention
def _shift_amount(b):
    return np.minimum(np.asarray(b).astype(np.uint64), 63).astype(np.int64)


def _att_lsh(a, b):
    return _u(af.wrap_signed(_s(a, 32) << _shift_amount(b), 32), 32)


def _att_rsh(a, b):
    return _u(_s(a, 32) >> _shift_amount(b), 32)


def _att_exp(x):
    """``GBAttentionExp``: signed ac_fixed<32, 12> in, UNSIGNED ac_fixed<32, 12> out (20 fraction
    bits, wrapping). ac_math's ``ac_exp_pwl`` is replaced by the exact exp truncated to 20 bits."""
    v = _s(x, 32).astype(np.float64) / (1 << af.ATT_F)
    e = np.floor(np.exp(np.minimum(v, 22.0)) * (1 << af.ATT_F))
    return (e.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)


def _att_div(a, b):
    """``GBAttentionDiv``: both operands reduced to UNSIGNED ac_fixed<6, 2> (AC_TRN, AC_WRAP: 2
    integer bits modulo 4, 4 fraction bits truncated), divided into ac_fixed<10, 2> (8 fraction
    bits, truncated, modulo 4), returned with 20 fraction bits. A zero divisor (ours) gives the
    largest quotient."""
    r1 = (np.asarray(a).astype(np.uint64) >> np.uint64(af.ATT_F - 4)) & np.uint64(63)
    r2 = (np.asarray(b).astype(np.uint64) >> np.uint64(af.ATT_F - 4)) & np.uint64(63)
    q = np.where(r2 == 0, np.uint64(0x3FF), (r1 << np.uint64(8)) // np.maximum(r2, np.uint64(1)))
    return (q & np.uint64(0x3FF)) << np.uint64(af.ATT_F - 8)


GB_ATTENTION_LSH = FuncRef("GBAttentionLSH", B32, [B32, B32], body=_att_lsh)
GB_ATTENTION_RSH = FuncRef("GBAttentionRSH", B32, [B32, B32], body=_att_rsh)
GB_ATTENTION_MAX = FuncRef("GBAttentionMax", B32, [B32, B32],
                           body=lambda a, b: _u(np.maximum(_s(a, 32), _s(b, 32)), 32),
                           axioms=[lambda a, b: GB_ATTENTION_MAX(a, b).eq(GB_ATTENTION_MAX(b, a))],
                           expr_body=lambda a, b: ite(a.sgt(b), a, b))
GB_ATTENTION_SUB = FuncRef("GBAttentionSub", B32, [B32, B32],
                           body=lambda a, b: _u(_s(a, 32) - _s(b, 32), 32), expr_body=lambda a, b: a - b)
GB_ATTENTION_EXP = FuncRef("GBAttentionExp", B32, [B32], body=_att_exp)
GB_ATTENTION_DIV = FuncRef("GBAttentionDiv", B32, [B32, B32], body=_att_div)
GB_ATTENTION_COMPRESS = FuncRef(
    "GBAttentionCompress", B8, [B32, B3],
    body=lambda x, b: af.from_fixed(_s(x, 32), af.ATT_F, b, width=26).astype(np.uint64))
"""``set_value_fixed<26, 20>`` of the low 26 bits: ATT fixed point -> AdaptivFloat (hardware overflow)."""


def concat_bytes(bs):
    """Concatenate byte expressions, element 0 least significant."""
    return concat(*reversed(list(bs)))
