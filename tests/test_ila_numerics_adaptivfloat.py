"""Property tests of AdaptivFloat<8,3> and the FlexASR fixed-point conversions."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ila.numerics import adaptivfloat as af

CODES = np.arange(256, dtype=np.int64)
bias_regs = st.integers(0, 7)
codes = st.integers(0, 255)


# ----------------------------------------------------------------------------- encoding
def test_decode_layout_and_zeros():
    assert af.decode(0x00, 3) == 0.0 and af.decode(0x80, 3) == 0.0
    # 0x3A: sign 0, exp 3, man 10 -> 2^(3 + 5 - 10) * (1 + 10/16)
    assert af.decode(0x3A, 5) == 2.0 ** -2 * (26 / 16)
    assert af.decode(0xBA, 5) == -(2.0 ** -2) * (26 / 16)
    assert af.decode(0x7F, 7) == af.max_value(7) == 2.0 ** 4 * 31 / 16
    assert af.decode(0x01, 0) == af.min_value(0) == 2.0 ** -10 * 17 / 16
    # exp 0, man 0 is zero; exp 0, man 1 is the smallest normal (no denormals)
    v = af.decode(CODES, 4)
    assert np.all(v[(CODES & 0x7F) == 0] == 0) and np.all(v[(CODES & 0x7F) != 0] != 0)


@given(bias_regs)
def test_decode_is_strictly_monotone_in_order_key(br):
    v = af.decode(CODES, br)
    key = np.where(CODES >= 128, -(CODES & 0x7F), CODES)
    order = np.argsort(key, kind="stable")
    vs = v[order]
    assert np.all(np.diff(vs) >= 0)
    assert np.all(np.diff(vs)[np.diff(key[order]) > 0] > 0)


@given(bias_regs)
def test_exact_values_round_trip(br):
    v = af.decode(CODES, br)
    for enc in (lambda x: af.encode_hw(x, br), lambda x: af.quantize(x, br)[0]):
        assert np.array_equal(af.decode(enc(v), br), v)
    assert np.array_equal(af.decode(af.from_act(af.to_act(CODES, br), br), br), v)


@settings(max_examples=300)
@given(bias_regs, st.floats(0, 1, allow_nan=False), st.booleans())
def test_round_trip_within_half_ulp_in_range(br, u, neg):
    lo, hi = float(af.min_value(br)), float(af.max_value(br))
    # inside the range, avoiding the reserved-zero hole just above 2^bias (see to_fixed docs)
    x = lo + u * (hi - lo)
    x = -x if neg else x
    for code in (af.encode_hw(x, br), af.quantize(np.array([x]), br)[0][0]):
        err = abs(float(af.decode(code, br)) - x)
        assert err <= float(af.ulp(code, br)) / 2 + 1e-12 * abs(x), (x, hex(int(code)))


@given(bias_regs, st.floats(1.0, 1e6))
def test_saturation(br, scale):
    x = float(af.max_value(br)) * (1.04 + scale * 1e-3)    # beyond max + half a grid step
    assert af.encode_hw(x, br) == 0x7F and af.encode_hw(-x, br) == 0xFF
    assert af.quantize(np.array([x, -x]), br)[0].tolist() == [0x7F, 0xFF]
    # hardware fixed -> AdaptivFloat: negative overflow loses its sign (set_value_fixed)
    raw = af.float_to_fixed(-x, 32, af.ACT_F)
    if raw < -(1 << 31) + 1:
        return
    assert af.from_fixed(raw, af.ACT_F, br) == 0x7F
    assert af.from_fixed(raw, af.ACT_F, br, overflow="signed") == 0xFF


@given(bias_regs, st.floats(0, 0.999))
def test_flush_to_zero(br, u):
    lo = float(af.min_value(br))
    tiny = u * 2.0 ** (br - 10)            # below 2^bias: the hardware flushes
    assert af.is_zero(af.encode_hw(tiny, br)) and af.is_zero(af.encode_hw(-tiny, br))
    # the compiler quantiser: below min/2 -> 0, [min/2, min) -> min
    q, _ = af.quantize(np.array([0.49 * lo, 0.51 * lo, -0.51 * lo]), br)
    assert q.tolist() == [0x00, 0x01, 0x81]


@settings(max_examples=200)
@given(bias_regs, st.lists(st.floats(-40, 40), min_size=2, max_size=30))
def test_encoding_is_monotone(br, xs):
    xs = np.sort(np.array(xs))
    for codes_ in (af.encode_hw(xs, br), af.quantize(xs, br)[0]):
        assert np.all(np.diff(af.decode(codes_, br)) >= 0)


@given(st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=50))
def test_choose_bias_reg(xs):
    x = np.array(xs)
    reg, clamped = af.choose_bias_reg(x)
    amax = np.max(np.abs(x))
    assert 0 <= reg <= 7
    if amax == 0:
        return
    bias = int(np.floor(np.log2(amax))) - 7
    assert clamped == (not -10 <= bias <= -3)
    assert reg == min(max(bias + 10, 0), 7)
    if not clamped:
        q, _ = af.quantize(x, reg)
        i = int(np.argmax(np.abs(x)))
        top = float(af.max_value(reg))
        if abs(x[i]) <= top:      # max|x| is representable within half an ulp
            assert abs(af.decode(q[i], reg) - x[i]) <= af.ulp(q[i], reg) / 2 + 1e-12
        else:                     # in (1.9375, 2) * 2**k the bias choice leaves max|x| above the range
            assert abs(float(af.decode(q[i], reg))) == top


# ----------------------------------------------------------------------------- fixed point
@settings(max_examples=300)
@given(bias_regs, st.integers(-(1 << 19), (1 << 19) - 1))
def test_from_act_rounds_to_nearest(br, raw):
    code = af.from_act(raw, br)
    x = raw / 2.0 ** af.ACT_F
    got = float(af.decode(code, br))
    lo, hi = 2.0 ** (br - 10) * 33 / 32, float(af.max_value(br))
    if lo < abs(x) <= hi:
        assert abs(got - x) <= float(af.ulp(code, br)) / 2
        # ties go toward +infinity: the other candidate is never strictly closer
        assert np.sign(got) == np.sign(x)
    elif abs(x) < 2.0 ** (br - 10):
        assert got == 0.0
    elif abs(x) > hi:
        # just above max|x| the value may still round down to ±max (rounding precedes the
        # overflow check); beyond half an ulp the hardware saturates to 0x7F whatever the sign
        half_ulp = float(af.ulp(0x7F, br)) / 2
        if abs(x) - hi < half_ulp:
            assert got == np.sign(x) * hi or code == 0x7F
        else:
            assert code == 0x7F


def test_ties_round_toward_plus_infinity():
    br = 10 - 10 + 0   # bias_reg 0: value = 2^(e-10)(1+m/16); pick e = 5 -> grid 2^-9
    grid = 2 ** -9
    base = 2 ** -5 * (1 + 3 / 16)
    up = af.float_to_fixed(base + grid / 2, 32, 20)
    assert af.decode(af.from_fixed(up, 20, br), br) == base + grid
    down = af.float_to_fixed(-(base + grid / 2), 32, 20)
    assert af.decode(af.from_fixed(down, 20, br), br) == -base


@given(bias_regs, codes)
def test_to_fixed_formats_are_exact(br, c):
    v = float(af.decode(c, br))
    for w, f in ((af.ACT_W, af.ACT_F), (af.ATT_W, af.ATT_F), (af.LN_SUM_W, af.LN_SUM_F)):
        assert af.fixed_to_float(af.to_fixed(c, br, w, f), f) == v


@given(codes, codes, bias_regs, bias_regs)
def test_product_and_accum_to_act(a, b, bw, bi):
    p = int(af.product(a, b))
    exact = float(af.decode(a, bw)) * float(af.decode(b, bi))
    assert p * 2.0 ** (bw + bi - 28) == exact
    act = int(af.accum_to_act(p, bw, bi))
    assert abs(act / 2 ** 14 - exact) < 2 ** -14 or act in (af.ACT_MAX, af.ACT_MIN)


def test_wrap_helpers():
    assert af.wrap_signed(1 << 19, 20) == -(1 << 19)
    assert af.from_unsigned(af.to_unsigned(-5, 20), 20) == -5


# ----------------------------------------------------------------------------- max / mean / add
def test_max_exhaustive_against_decoded_values():
    a, b = np.meshgrid(CODES, CODES, indexing="ij")
    m = af.af_max(a, b)
    for br in (0, 5):
        va, vb, vm = af.decode(a, br), af.decode(b, br), af.decode(m, br)
        assert np.array_equal(vm, np.maximum(va, vb))
    assert m[0x80, 0x80] == 0x00 and m[0x85, 0x80] == 0x00 and m[0x05, 0x80] == 0x05


@settings(max_examples=300)
@given(codes, codes, bias_regs)
def test_mean_and_add_match_exact_arithmetic_up_to_rounding(a, b, br):
    va, vb = float(af.decode(a, br)), float(af.decode(b, br))
    for op, exact in ((af.af_mean, (va + vb) / 2), (af.af_add, va + vb)):
        c = op(a, b)
        got = float(af.decode(c, br))
        lo, hi = 2.0 ** (br - 10) * 34 / 32, float(af.max_value(br))
        if exact == 0:
            assert got == 0
        elif lo <= abs(exact) <= hi:
            # one rounding to 5 significant bits, plus the truncation of the aligned operand below
            # 2^-6 of the larger exponent's scale (at most one more grid step of the result)
            assert abs(got - exact) <= 1.5 * float(af.ulp(c, br)) + 1e-15, (hex(a), hex(b))
        elif abs(exact) > hi:
            assert abs(got) == hi
        else:
            assert abs(got) <= 2.0 ** (br - 10) * 17 / 16 * 1.0001


def test_mean_exhaustive_error_bound():
    a, b = np.meshgrid(CODES, CODES, indexing="ij")
    c = af.af_mean(a, b)
    exact = (af.decode(a, 0) + af.decode(b, 0)) / 2
    got = af.decode(c, 0)
    nz = np.abs(exact) >= 2.0 ** -10 * 17 / 16
    rel = np.abs(got - exact)[nz] / np.abs(exact)[nz]
    assert rel.max() <= 2 ** -4 + 1e-12     # within one grid step relative, never worse


def test_max_facts_recorded_for_proofs():
    facts = {f["name"]: f for f in af.max_facts()}
    holds = {n for n, f in facts.items() if f["holds"]}
    assert "commutative: max(a,b) == max(b,a)" in holds
    assert "associative: max(max(a,b),c) == max(a,max(b,c))" in holds
    assert "canonical selection: max(a,b) in {canon(a), canon(b)}" in holds
    assert "exact: value(max(a,b)) == max(value(a), value(b))" in holds
    assert "never negative zero: max(a,b) != 0x80" in holds
    sel = facts["selection: max(a,b) in {a, b}"]
    assert not sel["holds"] and 0x80 in sel["counterexample"] and sel["violations"] == 255
    assert not facts["idempotent: max(a,a) == a"]["holds"]
    assert facts["idempotent: max(a,a) == a"]["counterexample"] == (0x80,)


def test_mean_add_facts_recorded():
    facts = {f["name"]: f for f in af.mean_add_facts()}
    assert facts["mean commutative"]["holds"] and facts["add commutative"]["holds"]
    assert facts["mean between (by value): min(a,b) <= mean(a,b) <= max(a,b)"]["holds"]
    # the reserved-zero hole: value 2^bias is written as (sign, 0, 0), i.e. 0x80 for negatives
    assert not facts["mean never negative zero"]["holds"]
    assert af.af_mean(0x00, 0x90) == 0x80


def test_act_unit_ops():
    one = 1 << 14
    assert af.act_mul(one * 3, one // 2) == one * 3 // 2
    assert af.act_add(af.ACT_MAX, 1) == af.ACT_MIN
    assert af.act_onex(one // 4) == 3 * one // 4
    assert af.act_relu(-5) == 0 and af.act_relu(7) == 7
    assert abs(af.act_sigmoid(0) - one // 2) <= 1 and af.act_tanh(0) == 0


# ----------------------------------------------------------------------------- no silent wrong answers
import warnings


from ila.errors import D2AError


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_an_error_naming_it(bad):
    x = np.array([[1.0, 2.0], [bad, 3.0]])
    with pytest.raises(af.NumericsError, match=r"1 non-finite value.*index \(1, 0\)") as e:
        af.quantize(x)
    assert isinstance(e.value, D2AError)
    with pytest.raises(af.NumericsError):
        af.choose_bias_reg(x)
    with pytest.raises(af.NumericsError):
        af.quantize(x, bias_reg=3)                     # an explicit register does not hide it


@pytest.mark.parametrize("x, reg", [([100.0, -50.0], 7), ([1e-5, -2e-5], 0)])
def test_clamped_register_is_reported(x, reg):
    with pytest.warns(af.AdaptivFloatClampWarning, match="clamped"):
        codes, got = af.quantize(np.array(x))
    assert got == reg
    codes, got, clamped = af.quantize_checked(np.array(x))
    assert clamped


def test_in_range_tensor_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        codes, reg, clamped = af.quantize_checked(np.array([0.5, -3.0, 20.0]))
    assert not clamped and af.dequantize(codes, reg)[2] == 20.0


def test_driver_result_flags_clamping():
    from ila.models.flexasr.driver import run_pool
    x = np.ones((2, 16), np.float32)
    assert not run_pool(x).clamped
    with pytest.warns(af.AdaptivFloatClampWarning):
        r = run_pool(x * 1000)
    assert r.clamped


def test_mappings_refuse_data_outside_the_register_range():
    from mappings.base import MappingError
    from mappings.registry import get, names
    for name in [n for n in names() if n.startswith("flexasr.")]:
        m = get(name)
        assert any(c.name == "AdaptivFloat range" for c in m.data_conditions), name
    m = get("flexasr.maxpool")
    with pytest.raises(MappingError, match="AdaptivFloat range"):
        m.check_data({"R": 2, "C": 16}, {"x": np.full((2, 16), 1000.0, np.float32)})
    m.check_data({"R": 2, "C": 16}, {"x": np.full((2, 16), 3.0, np.float32)})
