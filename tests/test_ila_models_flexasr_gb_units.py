"""FlexASR GB operations (LayerNorm, Attention, ZeroPadding) end to end against independent numpy
models of the hardware numerics, bit-precise AdaptivFloat mean/add bodies, bad input, and the
PE-core regrouping (speed) keeping the linear/LSTM results."""
import numpy as np
import pytest

from ila import Ila, bv_const
from ila.compile_np import evaluate
from ila.models.flexasr import reference as ref
from ila.models.flexasr import constants as C, driver as D
from ila.models.flexasr.isa import ShapeError, assemble
from ila.models.flexasr.funcs import (GB_ADPFLOAT_ADD, GB_ADPFLOAT_MEAN, GB_ATTENTION_DIV, GB_NORM_DIVIDE_24,
                                      SINV_SQRT)
from ila.numerics import adaptivfloat as af
from ila.sim import Simulator

M20, M32 = (1 << 20) - 1, (1 << 32) - 1


def _w(x, bits):
    """Two's-complement wrap of Python/numpy ints."""
    x = np.asarray(x, dtype=object)
    return ((x + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


# ----------------------------------------------------------------------------- independent models
def layernorm_model(xq, bx, gq, bg, betq, bb):
    """LayerNorm as the flexnlp-ila FSM computes it, written from its formulas with Python ints."""
    T, H = xq.shape
    nv = H // 16
    x = af.to_act(xq, bx).astype(object)
    g = af.to_act(gq, bg).astype(object)
    be = af.to_act(betq, bb).astype(object)
    out = np.zeros_like(xq)
    for t in range(T):
        s = sq = 0
        for v in range(nv):
            vec = x[t, 16 * v:16 * v + 16]
            s = _w(s + _w(sum(vec), 20), 24)
            sq = _w(sq + _w(sum(_w((e * e) >> 14, 20) for e in vec), 20), 24)
        n = 16 * nv
        mean = _w(int(abs(s) // n) * (1 if s >= 0 else -1), 20)
        msq = _w(int(abs(sq) // n) * (1 if sq >= 0 else -1), 20)
        var = _w(msq - _w((mean * mean) >> 14, 20), 20)
        u = int(var) & M20                          # SInvSqrt reads the bits as unsigned <20, 6>
        inv = M20 if u == 0 else min(int(np.floor((1 << 14) / np.sqrt(u / 2 ** 14))), M20)
        inv = _w(inv, 20)
        for h in range(H):
            y = _w((_w(x[t, h] - mean, 20) * inv) >> 14, 20)
            y = _w((y * g[h]) >> 14, 20)
            y = _w(y + be[h], 20)
            out[t, h] = af.from_act(int(y), bx)
    return out


def _shift(acc, s):
    return _w(acc << s, 32) if s > 0 else acc >> -s


def attention_model(eq, be, dq, bd, bp, bo):
    """Attention as the flexnlp-ila FSM computes it (Python ints; exact exp instead of the PWL)."""
    T, H = eq.shape
    acc = [int(_w(sum(int(p) for p in af.product(eq[t], dq)), 32)) for t in range(T)]
    scores = [-(1 << 26) if a == 0 else int(_shift(a, be + bd - 8)) for a in acc]
    mx = max([-(1 << 30)] + scores)
    e = [int(np.floor(np.exp((s - mx) / 2 ** 20) * 2 ** 20)) for s in scores]
    tot = int(_w(sum(e), 32)) & M32
    r2 = (tot >> 16) & 63
    pcodes = []
    for ei in e:
        r1 = ((ei & M32) >> 16) & 63
        q = 0x3FF if r2 == 0 else ((r1 << 8) // r2) & 0x3FF
        pcodes.append(int(af.from_fixed(int(_w(q << 12, 26)), 20, bp)))
    pcodes = np.array(pcodes, np.uint8)
    out = []
    for i in range(H):
        a = int(_w(sum(int(p) for p in af.product(eq[:, i], pcodes)), 32))
        out.append(int(af.from_fixed(int(_w(int(_shift(a, be + bp - 8)), 26)), 20, bo)))
    return np.array(out, np.uint8), pcodes


# ----------------------------------------------------------------------------- LayerNorm
@pytest.mark.parametrize("T,H", [(1, 16), (5, 48), (16, 64)])
def test_layernorm_bit_exact_against_independent_model(T, H):
    rng = np.random.default_rng(T * H)
    x = (rng.standard_normal((T, H)) * 0.7).astype(np.float32)
    g = (1 + rng.standard_normal(H) / 8).astype(np.float32)
    b = (rng.standard_normal(H) / 8).astype(np.float32)
    res = D.run_layernorm(x, g, b)
    (xq, bx), (gq, bg), (betq, bb) = res.inputs["x"], res.inputs["gamma"], res.inputs["beta"]
    assert np.array_equal(res.codes, layernorm_model(xq, bx, gq, bg, betq, bb))
    # inputs small enough that no 20-bit vector sum wraps: within AdaptivFloat rounding of float32
    assert ref.frobenius_rel_error(ref.layernorm(x, g, b), res.out) < 0.05


def test_layernorm_vector_square_sum_wraps_like_the_model():
    """A 16-value vector whose sum of squares reaches 32 overflows the 20-bit ACT vector register
    (as in flexnlp-ila): the model reproduces it, the float reference of course does not."""
    x = np.full((1, 16), 1.5, np.float32)
    x[0, ::2] = -1.5                                   # sum x^2 = 36 >= 32, mean 0
    res = D.run_layernorm(x)
    xq, bx = res.inputs["x"]
    assert np.array_equal(res.codes, layernorm_model(xq, bx, *res.inputs["gamma"], *res.inputs["beta"]))
    assert ref.frobenius_rel_error(ref.layernorm(x), res.out) > 0.5


def test_layernorm_child_trace_uses_public_instruction_names():
    sim = Simulator(D.runner().model, record_trace=True)
    x = np.arange(16, dtype=np.uint8).reshape(1, 16)
    lib = {"x": x, "g": np.full(16, 0x40, np.uint8), "b": np.zeros(16, np.uint8)}
    _, cmds = assemble([{"name": "store_act", "tensor": "x", "base": 0},
                        {"name": "store_small", "tensor": "g", "base": 0},
                        {"name": "store_small", "tensor": "b", "base": 1},
                        {"name": "layernorm", "num_ts": 1, "num_v": 1, "base_in": 0, "base_gamma": 0, "base_beta": 1,
                         "adpbias_inp": 3, "adpbias_gamma": 3, "adpbias_beta": 3}], lib)
    sim.run([c for c in cmds if not c.get("wait_irq")])
    ln = [n for n in sim.trace if n.startswith("gb_layer_norm") or n == "GB_LAYER_NORM_START"]
    p = "gb_layer_norm_"
    assert ln == ["GB_LAYER_NORM_START", p + "timestep_level_op", p + "sum_vector_level_prep", p + "sum_byte_op",
                  p + "sum_vector_level_prep", p + "mean_op", p + "norm_vector_prep", p + "norm_byte_op",
                  p + "norm_vector_prep", p + "child_next"]
    assert sim.state["top_interrupt_request"] == 1 and sim.state["gb_layer_norm_child_valid_flag"] == 0


# ----------------------------------------------------------------------------- Attention
@pytest.mark.parametrize("T,H", [(16, 16), (40, 32), (64, 64)])
def test_attention_bit_exact_against_independent_model(T, H):
    rng = np.random.default_rng(T + H)
    enc = rng.standard_normal((T, H)).astype(np.float32)
    dec = rng.standard_normal(H).astype(np.float32)
    res = D.run_attention(enc, dec)
    (eq, be), (dq, bd), (pc, bp) = res.inputs["enc"], res.inputs["dec"], res.inputs["p"]
    want, want_p = attention_model(eq, be, dq, bd, bp, res.bias_reg)
    assert np.array_equal(pc, want_p)
    assert np.array_equal(res.codes, want)
    assert res.out.shape == (H,)


def test_attention_close_to_reference_when_softmax_is_peaked():
    rng = np.random.default_rng(7)
    enc = rng.standard_normal((32, 64)).astype(np.float32)
    dec = rng.standard_normal(64).astype(np.float32)
    res = D.run_attention(enc, dec)
    assert ref.frobenius_rel_error(ref.attention(enc, dec), res.out) < 0.2


def test_attention_division_reduces_operands_to_six_bits():
    f = GB_ATTENTION_DIV.body
    one, half = 1 << 20, 1 << 19
    assert int(f(np.uint64(half), np.uint64(one))) == half                  # 0.5 / 1
    assert int(f(np.uint64(one), np.uint64(5 * one))) == int(f(np.uint64(one), np.uint64(one)))  # 5 wraps to 1
    assert int(f(np.uint64((1 << 20) // 32), np.uint64(one))) == 0          # 1/32 truncates to 0 first
    assert int(f(np.uint64(one), np.uint64(0))) == 0x3FF << 12              # zero divisor: largest quotient


# ----------------------------------------------------------------------------- ZeroPadding
@pytest.mark.parametrize("T,H,t1,t2", [(4, 16, 1, 3), (20, 48, 3, 18), (34, 64, 0, 34)])
def test_zero_padding_clears_exactly_the_timesteps(T, H, t1, t2):
    rng = np.random.default_rng(T)
    x = rng.standard_normal((T, H)).astype(np.float32)
    res = D.run_zero_padding(x, t1, t2)
    want = res.inputs["x"][0].copy()
    want[t1:t2] = 0
    assert np.array_equal(res.codes, want)
    assert D.runner().sim.state["top_interrupt_request"] == 1


# ----------------------------------------------------------------------------- UFs
def test_layernorm_ufs_truncate_and_saturate():
    div = GB_NORM_DIVIDE_24.body
    assert af.from_unsigned(div(np.uint64((-7) & 0xFFFFFF), np.uint64(2)), 20) == -3   # toward zero
    assert int(div(np.uint64(7), np.uint64(2))) == 3
    inv = SINV_SQRT.body
    assert int(inv(np.uint64(1 << 14))) == 1 << 14                            # 1/sqrt(1) = 1
    assert int(inv(np.uint64(4 << 14))) == 1 << 13                            # 1/sqrt(4) = 0.5
    assert int(inv(np.uint64(0))) == M20


def _all_pairs():
    a, b = np.meshgrid(np.arange(256, dtype=np.uint64), np.arange(256, dtype=np.uint64), indexing="ij")
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("F,body", [(GB_ADPFLOAT_ADD, af.af_add), (GB_ADPFLOAT_MEAN, af.af_mean)])
def test_mean_add_expr_bodies_are_bit_precise_on_all_pairs(F, body):
    m = Ila("pairs")
    a, b = m.new_bv_input("a", 8), m.new_bv_input("b", 8)
    A, B = _all_pairs()
    got = np.asarray(evaluate([F.expr_body(a, b)], {}, {"a": A, "b": B})[0]).astype(np.int64)
    assert got.shape == (65536,)
    assert np.array_equal(got, body(A, B).astype(np.int64))
    assert np.array_equal(got, F.body(A, B).astype(np.int64))


@pytest.mark.parametrize("F", [GB_ADPFLOAT_ADD, GB_ADPFLOAT_MEAN])
def test_mean_add_expr_bodies_through_smt(F):
    """SMT side: the solver's value of the expression agrees with the numpy body on a sample of
    pairs, and commutativity (the FuncRef's axiom) is proved for all 65 536 pairs at once."""
    pytest.importorskip("pysmt")
    from ila.smt import SmtEncoder, check
    m = Ila("smt_pairs")
    a, b = m.new_bv_input("a", 8), m.new_bv_input("b", 8)
    enc = SmtEncoder()
    rng = np.random.default_rng(3)
    pairs = [(0x00, 0x80), (0x7F, 0x7F), (0xFF, 0xFF), (0x10, 0x90), (0x0F, 0x8E)] + \
            [tuple(int(v) for v in rng.integers(0, 256, 2)) for _ in range(6)]
    for x, y in pairs:
        term = enc.encode(F.expr_body(bv_const(x, 8), bv_const(y, 8)))
        res = check(enc, [enc.mgr.TRUE()], want=[term])
        assert res.status == "sat" and res.values[term] == int(F.body(np.uint64(x), np.uint64(y))), (x, y)
    res = check(enc, [enc.encode(F.expr_body(a, b).ne(F.expr_body(b, a)))])
    assert res.status == "unsat"


# ----------------------------------------------------------------------------- bad input
def test_gb_operations_reject_unsupported_shapes_clearly():
    with pytest.raises(ShapeError, match="groups of 16"):
        assemble([{"name": "attention", "num_ts": 20, "num_v": 1, "base_enc": 0, "base_dec": 0, "base_prob": 1,
                   "adpbias_enc": 0, "adpbias_dec": 0, "adpbias_prob": 0, "adpbias_out": 0}], {})
    with pytest.raises(ShapeError, match="overlap"):
        assemble([{"name": "attention", "num_ts": 32, "num_v": 2, "base_enc": 0, "base_dec": 0, "base_prob": 1,
                   "adpbias_enc": 0, "adpbias_dec": 0, "adpbias_prob": 0, "adpbias_out": 0}], {})
    with pytest.raises(ShapeError, match="small buffer"):
        assemble([{"name": "layernorm", "num_ts": 2, "num_v": 4, "base_in": 0, "base_gamma": 1022, "base_beta": 0,
                   "adpbias_inp": 0, "adpbias_gamma": 0, "adpbias_beta": 0}], {})
    with pytest.raises(ShapeError, match="num_ts_1 < num_ts_2"):
        assemble([{"name": "zero_padding", "num_v": 1, "num_ts_1": 5, "num_ts_2": 5, "base": 0}], {})
    with pytest.raises(ShapeError, match="multiple of 16"):
        D.run_layernorm(np.zeros((2, 20), np.float32))
    with pytest.raises(ShapeError, match="gamma and beta"):
        D.run_layernorm(np.zeros((2, 16), np.float32), np.ones(32, np.float32))
    with pytest.raises(ShapeError, match="decoder vector"):
        D.run_attention(np.zeros((16, 32), np.float32), np.zeros(16, np.float32))
    with pytest.raises(ShapeError, match="t1 < t2"):
        D.run_zero_padding(np.zeros((4, 16), np.float32), 3, 9)


def test_gb_start_triggers_need_a_valid_config():
    sim = Simulator(D.runner().model)
    for addr in (C.START_LAYER_NORM, C.START_ATTENTION, C.START_ZERO_PADDING):
        assert sim.step({"if_axi_wr": 1, "addr_in": addr}, allow_idle=True) is None


# ----------------------------------------------------------------------------- PE-core regrouping
def test_pe_core_groups_four_output_vectors_and_keeps_results():
    """Eight output vectors per PE (two MAC chunks of 4): still equal to an independent model of the
    PE arithmetic (products, 32-bit accumulation, shift/bias/clamp, Fixed2Adaptfloat)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    w = (rng.standard_normal((512, 32)) / 4).astype(np.float32)
    b = (rng.standard_normal(512) / 4).astype(np.float32)
    res = D.run_linear(x, w, b)
    (xq, bx), (wq, bw), (bq, bb) = res.inputs["x"], res.inputs["w"], res.inputs["b"]
    acc = np.array([[sum(int(p) for p in af.product(wq[o], xq[t])) for o in range(512)] for t in range(3)])
    act = af.accum_to_act(acc, bw, bx, bq[None, :], bb)
    assert np.array_equal(res.codes, af.from_act(act, res.bias_reg))
