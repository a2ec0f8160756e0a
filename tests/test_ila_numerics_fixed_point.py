"""HLSCNN fixed-point and VTA integer numerics: formats, rounding/saturation, datapath ops, and the
agreement of the three descriptions of each HLSCNN datapath function (readable numpy definition,
lean simulator body of the FuncRef, bit-precise expr_body)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ila import Ila
from ila.compile_np import evaluate
from ila.models.hlscnn import numerics as N
from ila.numerics import fixed_point as fx


def test_formats_match_reference_widths():
    assert (fx.ACT.total, fx.ACT.frac, fx.ACT.int_bits) == (16, 7, 9)
    assert (fx.PSUM.total, fx.PSUM.frac) == (32, 16)
    assert (fx.WGT16.total, fx.WGT16.frac, fx.WGT16.int_bits) == (16, 14, 2)
    assert (fx.WGT8.total, fx.WGT8.frac, fx.WGT8.int_bits) == (8, 6, 2)
    assert (fx.OUT.total, fx.OUT.frac) == (16, 4)
    assert fx.weight_format(8) is fx.WGT8 and fx.weight_format(16) is fx.WGT16
    with pytest.raises(ValueError, match="8 or 16"):
        fx.weight_format(12)


def test_quantize_rounds_to_nearest_even_and_saturates():
    q = fx.ACT.quantize([0.5 / 128, 1.5 / 128, -0.5 / 128, 1.0, 300.0, -300.0, 255.99])
    assert q.tolist() == [0, 2, 0, 128, 32767, -32768, 32767]
    assert fx.WGT8.quantize([1.99, -2.5, 0.0078125 * 3]).tolist() == [127, -128, 2]   # 0.0234 -> 1.5 lsb -> 2
    assert fx.WGT16.round_trip(0.1) == pytest.approx(0.1, abs=2 ** -15)
    with pytest.raises(ValueError, match="NaN"):
        fx.ACT.quantize([np.nan])


def test_bits_round_trip_and_wrap():
    raw = np.array([-32768, -1, 0, 1, 32767])
    assert fx.ACT.from_bits(fx.ACT.to_bits(raw)).tolist() == raw.tolist()
    assert fx.to_bits(-1, 16).tolist() == 0xFFFF
    assert fx.wrap([128, 255, -129], 8).tolist() == [-128, -1, 127]
    assert fx.saturate([200, -200], 8).tolist() == [127, -128]
    assert fx.widen_weight8(np.array([-1, 64])).tolist() == [-256, 16384]   # value kept: 64/64 = 16384/16384


def test_hlscnn_ops_by_hand():
    # 1.0 (w16 raw 16384) * 1.0 (act raw 128) = 2**21 >> 5 = 2**16 = 1.0 in PSUM
    assert int(fx.conv_mac(0, 16384, 128)) == 1 << 16
    # tiny negative product truncates toward -inf: -1 * 1 = -1 (21 frac) -> -1 in 16 frac
    assert int(fx.conv_mac(0, -1, 1)) == -1
    assert int(fx.conv_mac((1 << 31) - 1, 16384, 128)) == -(1 << 31) + (1 << 16) - 1     # 32-bit wrap
    assert fx.psum_to_act_rnd([255, 256, -256, -257, 1 << 30]).tolist() == [0, 1, 0, -1, 32767]
    assert int(fx.act_add_psum(3, -5)) == -2 * 512
    assert int(fx.psum_add_bias(0, 16384)) == 1 << 16
    assert fx.psum_relu([-5, 5]).tolist() == [0, 5]
    assert fx.psum_to_act_trn([511, -1, 32768 * 512]).tolist() == [0, -1, -32768]        # floor, wrap


def test_vta_integer_helpers():
    assert fx.wrap_int8([127, 128, -129, 300]).tolist() == [127, -128, 127, 44]
    assert fx.wrap_int32([2 ** 31]).tolist() == [-2 ** 31]
    assert fx.sat_int8([1000, -1000, 5]).tolist() == [127, -128, 5]
    assert fx.vta_shr([-8, 8, 3, -1], [1, -2, 40, 40]).tolist() == [-4, 32, 0, -1]
    assert fx.vta_shr([1], [-40]).tolist() == [0]
    assert fx.relative_error([3.0, 4.0], [3.0, 4.0]) == 0.0
    assert fx.relative_error([3.0, 4.0], [0.0, 0.0]) == 1.0


_SPECS = [  # FuncRef, readable definition, argument widths
    (N.CONV_MAC, fx.conv_mac, (32, 16, 16)),
    (N.PSUM_TO_ACT_RND, fx.psum_to_act_rnd, (32,)),
    (N.ACT_ADD_PSUM, fx.act_add_psum, (16, 16)),
    (N.PSUM_ADD_BIAS, fx.psum_add_bias, (32, 16)),
    (N.PSUM_RELU, fx.psum_relu, (32,)),
    (N.PSUM_TO_ACT_TRN, fx.psum_to_act_trn, (32,)),
]


@pytest.mark.parametrize("func,ref,widths", _SPECS, ids=[s[0].name for s in _SPECS])
def test_funcref_body_equals_definition_on_random_lanes(func, ref, widths):
    rng = np.random.default_rng(7)
    args = [rng.integers(0, 1 << w, 4000, dtype=np.uint64) for w in widths]
    args = [np.concatenate([a, np.array([0, (1 << w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1], np.uint64)])
            for a, w in zip(args, widths)]
    got = func.body(*args)
    want = fx.to_bits(ref(*[fx.from_bits(a, w) for a, w in zip(args, widths)]), func.range.width)
    assert np.array_equal(got.astype(np.uint64), want)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_funcref_expr_body_equals_numpy_body(data):
    for func, _, widths in _SPECS:
        vals = [data.draw(st.integers(0, (1 << w) - 1)) for w in widths]
        m = Ila("uf_check")
        vs = [m.new_bv_state(f"a{i}", w) for i, w in enumerate(widths)]
        (got,) = evaluate([func.expr_body(*vs)], {f"a{i}": v for i, v in enumerate(vals)})
        want = int(func.body(*[np.asarray(v, dtype=np.uint64) for v in vals]))
        assert got == want, (func.name, vals)
