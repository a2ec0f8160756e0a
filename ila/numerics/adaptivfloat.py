"""AdaptivFloat<8,3> and the fixed-point formats of FlexASR, vectorised in numpy.

Sources of the semantics (facts, see ``../shared/reference/ILA_AND_ACCELERATORS.md`` §2.1 and §6):
FlexASR ``AdpfloatSpec.h`` / ``AdpfloatUtils.h`` / ``SM6Spec.h`` (harvard-acc/FlexASR), the
uninterpreted-function bodies of flexnlp-ila, ac_types' ``ac_float::plus_minus`` (the adder the
hardware's max/mean/add go through) and the 3LA compiler-side quantiser (``tool/adaptivfloat.py``).

Encoding (8 bits)::

    bit 7   sign s
    6..4    exponent e (unsigned, 0..7)
    3..0    mantissa m (unsigned, 0..15), hidden leading one, no denormals

    value(code, bias_reg) = (-1)^s * 2^(e + bias_reg - 10) * (1 + m/16)      (e, m not both 0)
    value = 0  when e == 0 and m == 0  (so 0x00 and 0x80 are both zero)

``bias_reg`` is the 3-bit hardware bias register (0..7); the *exponent bias* of the compiler is
``bias = bias_reg - 10`` (range -10..-3). Every function taking ``bias_reg`` accepts arrays.

Fixed-point formats (two's complement, ``W`` bits, ``F`` fraction bits; raw integers here)::

    ACT      20 bits, 14 fraction   PE activation registers, act buffer           (kActWordWidth/kActNumFrac)
    LN_SUM   24 bits, 14 fraction   LayerNorm running sums                        (kLayerNormSumWidth)
    ATT      32 bits, 20 fraction   attention datapath                            (kAttentionWordWidth/NumFrac)
    ACCUM    32 bits, fraction = 28 - bias_w - bias_i
             PE MAC accumulator: product of two mantissas shifted by the sum of the exponent
             fields, without the biases (``adpfloat_mul``); ``accum_to_act`` aligns it to ACT.

Decisions (documented because the reference is ambiguous or buggy):

* **Overflow sign.** ``AdpfloatType::set_value_fixed`` (fixed point -> AdaptivFloat, used by the
  PE activation unit's output ``Fixed2Adaptfloat``) saturates to exponent 7, mantissa 15 but does
  not assign the sign in that branch, so a freshly built value saturates *negative* overflow to
  **+max** (0x7F). ``from_fixed(..., overflow="hardware")`` (the default, used by the model)
  reproduces that; ``overflow="signed"`` saturates to -max (0xFF) instead. The ac_float path used
  by max/mean/add (``set_value_ac_float``) does set the sign, so those saturate signed.
* **Rounding.** Fixed -> AdaptivFloat rounds to nearest with ties toward +infinity (ac_float
  ``AC_RND``), *after* which values whose exponent falls below the range are flushed to zero
  (no rounding up to the smallest normal). The compiler-side quantiser :func:`quantize` instead
  follows the 3LA tool: ties to even, values in [min/2, min) go to min, values below min/2 to 0.
* **Bias clamping.** :func:`choose_bias_reg` computes bias = floor(log2 max|x|) - 7 and clamps the
  register ``bias + 10`` to 0..7 (3 bits); ``clamped`` reports when that happened (the tensor then
  saturates, for bias > -3, or loses small values, for bias < -10).
"""
from __future__ import annotations

import warnings

import numpy as np

from ila.errors import D2AError


class NumericsError(D2AError, ValueError):
    """A tensor AdaptivFloat cannot encode at all (NaN or infinity)."""


class AdaptivFloatClampWarning(UserWarning):
    """The tensor's range needs an exponent bias outside what the 3-bit bias register holds, so
    quantisation saturates its large values or flushes its small ones to zero."""

EXP_BITS, MAN_BITS = 3, 4
OFFSET = -10                     # kAdpfloatOffset
BIAS_REG_BITS = 3
BIAS_REG_MAX = (1 << BIAS_REG_BITS) - 1

ACT_W, ACT_F = 20, 14            # kActWordWidth, kActNumFrac
LN_SUM_W, LN_SUM_F = 24, 14      # kLayerNormSumWidth (sums of ACT values keep ACT's fraction)
ATT_W, ATT_F = 32, 20            # kAttentionWordWidth, kAttentionNumFrac
ACCUM_W = 32                     # kAccumWordWidth
ACT_MAX, ACT_MIN = (1 << (ACT_W - 1)) - 1, -(1 << (ACT_W - 1))

ZERO, NEG_ZERO, MAX_CODE, MIN_CODE = 0x00, 0x80, 0x7F, 0xFF


# ----------------------------------------------------------------------------- helpers
def _i64(x) -> np.ndarray:
    return np.asarray(x).astype(np.int64)


def wrap_signed(x, width: int) -> np.ndarray:
    """Two's-complement wrap of integers to ``width`` bits (result as signed int64)."""
    x = _i64(x)
    m = np.int64(1) << np.int64(width)
    h = np.int64(1) << np.int64(width - 1)
    return ((x + h) & (m - 1)) - h


def to_unsigned(x, width: int) -> np.ndarray:
    """Signed integers as ``width``-bit unsigned bit patterns (uint64)."""
    return (_i64(x) & np.int64((1 << width) - 1)).astype(np.uint64)


def from_unsigned(x, width: int) -> np.ndarray:
    """``width``-bit unsigned bit patterns as signed int64."""
    return wrap_signed(np.asarray(x).astype(np.uint64).astype(np.int64), width)


def fields(code):
    """(sign, exp, man) of codes (arrays of ints)."""
    c = np.asarray(code).astype(np.int64) & 0xFF
    return c >> 7, (c >> 4) & 7, c & 15


def is_zero(code) -> np.ndarray:
    """True for 0x00 and 0x80 (exponent and mantissa both zero)."""
    return (np.asarray(code).astype(np.int64) & 0x7F) == 0


def canonical(code) -> np.ndarray:
    """Map negative zero 0x80 to 0x00; other codes unchanged (uint8)."""
    c = np.asarray(code).astype(np.int64) & 0xFF
    return np.where((c & 0x7F) == 0, 0, c).astype(np.uint8)


# ----------------------------------------------------------------------------- decode / encode
def decode(code, bias_reg) -> np.ndarray:
    """Exact value (float64) of AdaptivFloat codes under the 3-bit bias register ``bias_reg``."""
    s, e, m = fields(code)
    br = _i64(bias_reg)
    mag = np.ldexp((16 + m).astype(np.float64) / 16.0, (e + br + OFFSET).astype(np.int64))
    out = np.where(s == 1, -mag, mag)
    return np.where((e == 0) & (m == 0), 0.0, out)


def min_value(bias_reg) -> np.ndarray:
    """Smallest positive value: 2^(bias) * (1 + 1/16)."""
    return np.ldexp(17.0 / 16.0, _i64(bias_reg) + OFFSET)


def max_value(bias_reg) -> np.ndarray:
    """Largest value: 2^(7 + bias) * (2 - 1/16)."""
    return np.ldexp(31.0 / 16.0, _i64(bias_reg) + OFFSET + 7)


def ulp(code, bias_reg) -> np.ndarray:
    """Spacing of the mantissa grid at ``code``'s exponent: 2^(e + bias - 4)."""
    _, e, _ = fields(code)
    return np.ldexp(1.0, e + _i64(bias_reg) + OFFSET - MAN_BITS)


def _round_to_af(num, exp2, bias_reg, overflow: str) -> np.ndarray:
    """AdaptivFloat code of the exact value ``num * 2**exp2`` (``num`` signed int64).

    Rounds the value to 5 significant bits (1.mmmm) to nearest, ties toward +infinity (ac_float
    AC_RND; the grid is set by the magnitude, which agrees with ac_float's two's-complement
    normalisation except at exact negative powers of two, where the value is exact anyway), then
    flushes exponents below the range to zero and saturates those above it.
    """
    x = _i64(num)
    e2 = _i64(exp2)
    ax = np.abs(x)
    k = np.frexp(ax.astype(np.float64))[1].astype(np.int64) - 1   # floor(log2|x|); exact for |x| < 2^53
    k = np.where(ax == 0, 0, k)
    sh = k - MAN_BITS
    pos_sh = np.maximum(sh, 0)
    half = np.where(sh > 0, np.int64(1) << np.maximum(pos_sh - 1, 0), 0)
    r = np.where(sh > 0, (x + half) >> pos_sh, x << np.maximum(-sh, 0))
    mag = np.abs(r)
    carry = mag == 32
    mag = np.where(carry, 16, mag)
    k = k + carry
    exp_tmp = k + e2 - _i64(bias_reg) - OFFSET
    sign = (x < 0).astype(np.int64)
    code = (sign << 7) | (np.clip(exp_tmp, 0, 7) << 4) | np.clip(mag - 16, 0, 15)
    if overflow == "hardware":
        sat = np.full_like(x, MAX_CODE)
    elif overflow == "signed":
        sat = np.where(x < 0, MIN_CODE, MAX_CODE)
    else:
        raise ValueError(f"overflow must be 'hardware' or 'signed', got {overflow!r}")
    code = np.where(exp_tmp >= 8, sat, code)
    code = np.where((x == 0) | (exp_tmp < 0), 0, code)
    return code.astype(np.uint8)


def from_fixed(x, frac_bits: int, bias_reg, *, width: int | None = None,
               overflow: str = "hardware") -> np.ndarray:
    """Fixed point -> AdaptivFloat, as ``AdpfloatType::set_value_fixed<W, F>``.

    ``x``: raw signed integers (value x / 2^frac_bits); if ``width`` is given they are first
    wrapped to that many bits. Round to nearest (ties toward +inf), underflow flushes to 0x00,
    overflow saturates (``overflow``: "hardware" -> 0x7F whatever the sign, "signed" -> ±max; see
    the module docstring).
    """
    x = _i64(x) if width is None else wrap_signed(x, width)
    return _round_to_af(x, -frac_bits, bias_reg, overflow)


def to_fixed(code, bias_reg, width: int, frac_bits: int) -> np.ndarray:
    """AdaptivFloat -> fixed point, as ``AdpfloatType::to_fixed<W, F>``: (16+m) shifted by
    e + bias_reg - 10 - 4 + F (right if negative, truncating), negated for sign, wrapped to W."""
    s, e, m = fields(code)
    sh = e + _i64(bias_reg) + OFFSET - MAN_BITS + frac_bits
    v = 16 + m
    out = np.where(sh >= 0, v << np.maximum(sh, 0), v >> np.maximum(-sh, 0))
    out = np.where(s == 1, -out, out)
    out = np.where((e == 0) & (m == 0), 0, out)
    return wrap_signed(out, width)


def to_act(code, bias_reg) -> np.ndarray:
    """AdaptivFloat -> 20-bit/14-fraction activation fixed point (``Adptfloat2Fixed``)."""
    return to_fixed(code, bias_reg, ACT_W, ACT_F)


def from_act(x, bias_reg, *, overflow: str = "hardware") -> np.ndarray:
    """20-bit/14-fraction activation fixed point -> AdaptivFloat (``Fixed2Adaptfloat``)."""
    return from_fixed(x, ACT_F, bias_reg, width=ACT_W, overflow=overflow)


def float_to_fixed(x, width: int, frac_bits: int) -> np.ndarray:
    """Float -> fixed point, rounding to nearest and saturating to the ``width``-bit range."""
    v = np.rint(np.asarray(x, dtype=np.float64) * (1 << frac_bits))
    lim = float(1 << (width - 1))
    return np.clip(v, -lim, lim - 1).astype(np.int64)


def fixed_to_float(x, frac_bits: int) -> np.ndarray:
    """Fixed point raw integers -> float64."""
    return _i64(x).astype(np.float64) / float(1 << frac_bits)


def encode_hw(x, bias_reg, *, overflow: str = "signed") -> np.ndarray:
    """Float -> AdaptivFloat with the hardware's rounding (nearest, ties up; flush; saturate),
    via an exact 64-fraction-bit fixed point (inputs must satisfy |x| < 2^9)."""
    xi = np.rint(np.asarray(x, dtype=np.float64) * 2.0 ** 44).astype(np.int64)
    return _round_to_af(xi, -44, bias_reg, overflow)


# ----------------------------------------------------------------------------- compiler-side quantiser
def check_finite(x, what: str = "tensor") -> np.ndarray:
    """``x`` as float64; NumericsError naming the count and first index of NaN/inf elements."""
    x = np.asarray(x, dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NumericsError(f"{what} has {int(bad.sum())} non-finite value(s) (first {float(x[first])!r} at index "
                            f"{first if x.ndim != 1 else first[0]}): AdaptivFloat encodes finite values only")
    return x


def choose_bias_reg(x) -> tuple[int, bool]:
    """Bias register for tensor ``x``: bias = floor(log2 max|x|) - 7, register = bias + 10,
    clamped to 0..7. Returns (bias_reg, clamped): ``clamped`` when max|x| needs a register outside
    0..7 (values then saturate at the top or flush to zero). An all-zero tensor gets register 0.
    Raises NumericsError for NaN or infinite elements."""
    x = check_finite(x)
    amax = float(np.max(np.abs(x))) if np.size(x) else 0.0
    if amax == 0.0:
        return 0, False
    bias = (np.frexp(amax)[1] - 1) - ((1 << EXP_BITS) - 1)
    reg = bias - OFFSET
    clamped = not (0 <= reg <= BIAS_REG_MAX)
    return int(min(max(reg, 0), BIAS_REG_MAX)), clamped


def quantize(x, bias_reg=None) -> tuple[np.ndarray, int]:
    """Float tensor -> (AdaptivFloat codes, bias_reg), as the 3LA compiler-side tool does.

    Values below min/2 become 0, values in [min/2, min) become min, values above max clamp to max;
    the 4-bit mantissa is rounded half to even (numpy ``rint``). ``bias_reg`` defaults to
    :func:`choose_bias_reg` of ``x``; when that register is clamped, an
    :class:`AdaptivFloatClampWarning` is issued (:func:`quantize_checked` also returns the flag).
    Raises NumericsError for NaN or infinite elements.
    """
    codes, reg, _ = quantize_checked(x, bias_reg)
    return codes, reg


def quantize_checked(x, bias_reg=None) -> tuple[np.ndarray, int, bool]:
    """:func:`quantize` plus the clamping flag: (codes, bias_reg, clamped)."""
    x = check_finite(x)
    clamped = False
    if bias_reg is None:
        bias_reg, clamped = choose_bias_reg(x)
        if clamped:
            amax = float(np.max(np.abs(x)))
            warnings.warn(f"AdaptivFloat: max|x| = {amax:.6g} needs an exponent bias outside the 3-bit register "
                          f"(clamped to {bias_reg}); values {'saturate' if bias_reg == BIAS_REG_MAX else 'flush to 0'}",
                          AdaptivFloatClampWarning, stacklevel=3)
    lo, hi = min_value(bias_reg), max_value(bias_reg)
    a = np.abs(x)
    a = np.where(a > hi, hi, a)
    a = np.where((a < lo) & (a >= 0.5 * lo), lo, a)
    tiny = a < 0.5 * lo
    safe = np.where(tiny | (a == 0), lo, a)
    k = np.frexp(safe)[1] - 1                                   # floor(log2 a)
    q = np.rint(np.ldexp(safe, MAN_BITS - k)).astype(np.int64)  # 16..32
    carry = q == 32
    q = np.where(carry, 16, q)
    k = k + carry
    e = k - (int(bias_reg) + OFFSET)
    code = ((x < 0).astype(np.int64) << 7) | (np.clip(e, 0, 7) << 4) | np.clip(q - 16, 0, 15)
    code = np.where(tiny, 0, code)
    return code.astype(np.uint8), int(bias_reg), clamped


def dequantize(code, bias_reg, dtype=np.float32) -> np.ndarray:
    """AdaptivFloat codes -> float32 (the result readback of the assembler)."""
    return decode(code, bias_reg).astype(dtype)


# ----------------------------------------------------------------------------- max / mean / add
def _to_ac(code):
    """AdaptivFloat -> ac_float<6,2,5> with bias 0 (``to_ac_float``): signed mantissa in
    sixteenths (±(16+m), 0 for zero) and exponent e - 10 (0 for zero)."""
    s, e, m = fields(code)
    z = (e == 0) & (m == 0)
    M = np.where(s == 1, -(16 + m), 16 + m)
    return np.where(z, 0, M), np.where(z, 0, e + OFFSET)


def _order_key(code) -> np.ndarray:
    """Signed key whose order is the order of the values (any bias): ±(code & 0x7F); zero -> 0."""
    c = np.asarray(code).astype(np.int64) & 0xFF
    mag = c & 0x7F
    return np.where(c >> 7 == 1, -mag, mag)


def af_max(a, b) -> np.ndarray:
    """``adpfloat_max``: a if value(a) >= value(b) else b, through ac_float and back
    (``set_value_ac_float``), which canonicalises both zeros to 0x00. Independent of the bias."""
    ka, kb = _order_key(a), _order_key(b)
    return canonical(np.where(ka >= kb, a, b))


def _plus(a, b):
    """ac_float<6,2,5,AC_RND>::add of two AdaptivFloats (bias 0), before rounding: returns the
    aligned sum as an integer with 6 fraction bits and its exponent e_t (``plus_minus``: the
    operand with the smaller exponent is shifted right, truncating below 2^-6)."""
    Ma, ea = _to_ac(a)
    Mb, eb = _to_ac(b)
    za, zb = Ma == 0, Mb == 0
    dif = ea - eb
    lt = dif < 0
    d = np.where(za | zb, 0, np.abs(dif))
    shifted = np.where(lt, Ma, Mb) * 4
    fixed = np.where(lt, Mb, Ma) * 4
    total = (shifted >> d) + fixed
    e_t = np.where((lt & ~zb) | za, eb, ea)
    return total, e_t


def af_add(a, b) -> np.ndarray:
    """``adpfloat_add``: ac_float add (align, truncate below 2^-6, round to 5 significant bits,
    ties up), then back to AdaptivFloat (flush below range, signed saturation above)."""
    total, e_t = _plus(a, b)
    return _round_to_af(total, e_t - 6, 0, "signed")


def af_mean(a, b) -> np.ndarray:
    """``adpfloat_mean``: the ac_float sum of :func:`af_add` (rounded to 5 significant bits) shifted
    right by one (exponent - 1), then back to AdaptivFloat. Rounding once then halving equals
    rounding the half, so this is ``round((a + b) / 2)`` except near the underflow threshold."""
    total, e_t = _plus(a, b)
    return _round_to_af(total, e_t - 7, 0, "signed")


def product(a, b) -> np.ndarray:
    """``adpfloat_mul`` into the 32-bit accumulator: ±(16+ma)(16+mb) << (ea + eb), zero if
    either is zero. The value is product * 2^(bias_a + bias_b - 28) with bias = reg - 10."""
    sa, ea, ma = fields(a)
    sb, eb, mb = fields(b)
    va = np.where((ea == 0) & (ma == 0), 0, 16 + ma)
    vb = np.where((eb == 0) & (mb == 0), 0, 16 + mb)
    p = (va * vb) << (ea + eb)
    return wrap_signed(np.where((sa ^ sb) == 1, -p, p), ACCUM_W)


def accum_shift(bias_w, bias_i) -> np.ndarray:
    """Right shift aligning an accumulator to ACT (``PECoreAccumRightShift``):
    -2*offset + 2*4 - 14 - bias_w - bias_i = 14 - bias_w - bias_i (5-bit unsigned)."""
    return (-2 * OFFSET + 2 * MAN_BITS - ACT_F - _i64(bias_w) - _i64(bias_i)) & 31


def accum_to_act(acc, bias_w, bias_i, bias_code=None, bias_b=0) -> np.ndarray:
    """PE RunBias: arithmetic right shift (``PECoreAccumRightShift``), add the bias converted to
    ACT (``PECoreAccumGetBiasOut``, 32-bit), clamp to the 20-bit ACT range
    (``PECoreAccumOverflowCheck``) and keep 20 bits (``PECoreAccum2ActReg``)."""
    out = wrap_signed(acc, ACCUM_W) >> accum_shift(bias_w, bias_i)
    if bias_code is not None:
        out = wrap_signed(out + to_act(bias_code, bias_b), ACCUM_W)
    return wrap_signed(np.clip(out, ACT_MIN, ACT_MAX), ACT_W)


# ----------------------------------------------------------------------------- ACT-unit arithmetic
def act_add(a, b) -> np.ndarray:
    """``PEActEadd``: 20-bit wrapping add."""
    return wrap_signed(_i64(a) + _i64(b), ACT_W)


def act_mul(a, b) -> np.ndarray:
    """``PEActEmul``: 40-bit product, arithmetic >> 14, low 20 bits."""
    return wrap_signed((_i64(a) * _i64(b)) >> ACT_F, ACT_W)


def act_sigmoid(a) -> np.ndarray:
    """``PEActSigmoid``. FlexASR uses ac_math's piecewise-linear sigmoid; we use the exact
    sigmoid truncated to 14 fraction bits (the PWL table is not reproduced; its error is below
    2^-10 over the input range)."""
    x = fixed_to_float(wrap_signed(a, ACT_W), ACT_F)
    return np.floor((1.0 / (1.0 + np.exp(-x))) * (1 << ACT_F)).astype(np.int64)


def act_tanh(a) -> np.ndarray:
    """``PEActTanh``: exact tanh truncated toward -inf to 14 fraction bits (see :func:`act_sigmoid`)."""
    x = fixed_to_float(wrap_signed(a, ACT_W), ACT_F)
    return np.floor(np.tanh(x) * (1 << ACT_F)).astype(np.int64)


def act_relu(a) -> np.ndarray:
    """``PEActRelu``."""
    a = wrap_signed(a, ACT_W)
    return np.where(a < 0, 0, a)


def act_onex(a) -> np.ndarray:
    """``PEActOnex``: 1 - a in ACT."""
    return wrap_signed((1 << ACT_F) - _i64(a), ACT_W)


# ----------------------------------------------------------------------------- algebraic facts
def _all_pairs():
    a, b = np.meshgrid(np.arange(256, dtype=np.int64), np.arange(256, dtype=np.int64), indexing="ij")
    return a.ravel(), b.ravel()


def _fact(name: str, ok, args) -> dict:
    ok = np.asarray(ok)
    bad = np.nonzero(~ok)[0]
    cex = tuple(int(np.asarray(x).ravel()[bad[0]]) for x in args) if bad.size else None
    return {"name": name, "holds": not bad.size, "violations": int(bad.size), "counterexample": cex}


def max_facts() -> list[dict]:
    """Facts about :func:`af_max` checked exhaustively over all 65 536 code pairs (and, for
    associativity, all 16.7 M triples). Each entry: name, holds, violations, counterexample.
    These are the candidate axioms for proofs with max uninterpreted (issue 6); only those with
    ``holds`` are sound. Notably ``max(a, b) in {a, b}`` FAILS for negative zero 0x80 (the result
    is canonicalised to 0x00) while ``max(a, b) in {canonical(a), canonical(b)}`` holds.
    """
    a, b = _all_pairs()
    m = af_max(a, b).astype(np.int64)
    ca, cb = canonical(a).astype(np.int64), canonical(b).astype(np.int64)
    ka, kb, km = _order_key(a), _order_key(b), _order_key(m)
    out = [
        _fact("commutative: max(a,b) == max(b,a)", m == af_max(b, a), (a, b)),
        _fact("selection: max(a,b) in {a, b}", (m == a) | (m == b), (a, b)),
        _fact("canonical selection: max(a,b) in {canon(a), canon(b)}", (m == ca) | (m == cb), (a, b)),
        _fact("never negative zero: max(a,b) != 0x80", m != NEG_ZERO, (a, b)),
        _fact("idempotent: max(a,a) == a", af_max(np.arange(256), np.arange(256)) == np.arange(256),
              (np.arange(256),)),
        _fact("idempotent up to zero: max(a,a) == canon(a)",
              af_max(np.arange(256), np.arange(256)) == canonical(np.arange(256)), (np.arange(256),)),
        _fact("upper bound: value(max(a,b)) >= value(a) and >= value(b)", (km >= ka) & (km >= kb), (a, b)),
        _fact("exact: value(max(a,b)) == max(value(a), value(b))", km == np.maximum(ka, kb), (a, b)),
        _fact("zero identity on non-negatives: max(a, 0x00) == canon(a) when a >= 0",
              (af_max(a, 0) == ca) | (ka < 0), (a,)),
        _fact("absorbing max code: max(a, 0x7F) == 0x7F", af_max(a, MAX_CODE) == MAX_CODE, (a,)),
        _fact("min code is identity up to zero: max(a, 0xFF) == canon(a)", af_max(a, MIN_CODE) == ca, (a,)),
        _fact("canonical args: max(canon(a), canon(b)) == max(a, b)", af_max(ca, cb) == m, (a, b)),
    ]
    # associativity over all triples, in chunks (16.7 M evaluations)
    bad = None
    for x in range(256):                                   # (x, a, b) range over all triples
        lhs = af_max(af_max(x, a), b)
        rhs = af_max(x, af_max(a, b))
        ok = lhs == rhs
        if not ok.all():
            j = int(np.nonzero(~ok)[0][0])
            bad = (x, int(a[j]), int(b[j]))
            break
    out.append({"name": "associative: max(max(a,b),c) == max(a,max(b,c))", "holds": bad is None,
                "violations": 0 if bad is None else -1, "counterexample": bad})
    return out


def mean_add_facts() -> list[dict]:
    """Exhaustive facts about :func:`af_mean` and :func:`af_add` (same format as
    :func:`max_facts`). Unlike max, mean and add CAN return negative zero 0x80: a result whose
    exponent field is 0 and mantissa rounds to 0 (value exactly 2^bias) is written with its sign
    by ``set_value_ac_float`` and reads back as zero (the reserved-zero hole of the format)."""
    a, b = _all_pairs()
    mean, add = af_mean(a, b).astype(np.int64), af_add(a, b).astype(np.int64)
    ka, kb = _order_key(a), _order_key(b)
    lo, hi = np.minimum(ka, kb), np.maximum(ka, kb)
    kmean = _order_key(mean)
    dm = decode(mean, 0)
    return [
        _fact("mean commutative", mean == af_mean(b, a), (a, b)),
        _fact("add commutative", add == af_add(b, a), (a, b)),
        _fact("mean never negative zero", mean != NEG_ZERO, (a, b)),
        _fact("add never negative zero", add != NEG_ZERO, (a, b)),
        _fact("mean idempotent up to zero: mean(a,a) == canon(a)",
              af_mean(np.arange(256), np.arange(256)) == canonical(np.arange(256)), (np.arange(256),)),
        _fact("mean between (by value): min(a,b) <= mean(a,b) <= max(a,b)",
              (kmean >= lo) & (kmean <= hi), (a, b)),
        _fact("mean within half a grid step of the exact mean, or flushed to zero",
              (np.abs(dm - (decode(a, 0) + decode(b, 0)) / 2) <= np.maximum(ulp(mean, 0), ulp(a, 0) / 2) / 2 + 1e-300)
              | is_zero(mean), (a, b)),
        _fact("add zero identity: add(a, 0x00) == canon(a)", af_add(a, 0) == canonical(a), (a,)),
        _fact("add of negation is zero: add(a, a ^ 0x80) == 0x00", af_add(a, a ^ 0x80) == 0, (a,)),
    ]


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("annotations", "np")]
