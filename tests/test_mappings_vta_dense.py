"""vta.dense: float dense on VTA's int8 GEMM through host quantisation, tiled into passes. The
quantiser's rules and edge cases; the tiling (every pass within vta.gemm's side conditions, the
passes covering every output once); the int8 core bit-exact against the host's int64 product, on
one pass, on passes tiled in N and in M (a small VTA configuration, fast; the default one, slow);
the emitted streams are the passes run; bad data refused naming it; seeded wrong variants failed
by simulation validation; a float convolution offloaded through im2col and co-simulated."""
import dataclasses

import numpy as np
import pytest

from mappings.base import MappingError, frobenius_relative_error
from mappings.registry import get
from mappings.vta import common as V
from mappings.vta import dense as D
from verify.simval import run_sim
from ledgers import with_rewrite_certificates

M = get("vta.dense")
# input SRAM 8 rows, weight SRAM 4 tiles, accumulator SRAM 8 rows: passes in N and M at tiny shapes
SMALL_CFG = dict(log_inp_buff_size=7, log_wgt_buff_size=10, log_acc_buff_size=9)


@pytest.fixture
def small_vta(monkeypatch):
    from ila.models.vta.isa import DEFAULT_CONFIG
    cfg = dataclasses.replace(DEFAULT_CONFIG, **SMALL_CFG)
    assert (cfg.depth("inp"), cfg.depth("wgt"), cfg.depth("acc")) == (8, 4, 8)
    monkeypatch.setattr(V, "cfg", lambda: cfg)
    return cfg


def _host(inputs):
    """The host's int64 product of the int8 codes, dequantised: what the VTA passes must give."""
    qx, sx = D.quantize(inputs["x"])
    qw, sw = D.quantize(inputs["w"])
    return ((qx @ qw.T) * (sx * sw)).astype(np.float32)


def test_quantiser_rules_and_edge_cases():
    q, s = D.quantize(np.zeros((2, 3)))                          # all zero: scale 1
    assert s == 1.0 and q.shape == (2, 3) and not q.any()
    q, s = D.quantize(np.array([-2.0, 1.0, 2.0]))               # 1 / (2/127) = 63.5 -> 64 (half to even)
    assert q.tolist() == [-127, 64, 127] and s == pytest.approx(2 / 127)
    q, _ = D.quantize(np.array([127.0, 0.5, 1.5, 2.5, -2.5, -127.0]))
    assert q.tolist() == [127, 0, 2, 2, -2, -127]               # round half to even, symmetric (no -128)
    q, _ = D.quantize(np.array([1e4, 1.0, -30.0, 40.0]))        # one huge outlier: the rest round to 0
    assert q.tolist() == [127, 0, 0, 1]
    q, s = D.quantize(np.full((3, 2), -0.3, np.float32))        # all equal: every code at the bound
    assert (q == -127).all() and s * 127 == pytest.approx(0.3)
    with pytest.raises(MappingError, match=r"x\[1, 0\] = nan"):
        D.quantize(np.array([[1.0, 2.0], [np.nan, np.inf]]), "x")
    with pytest.raises(MappingError, match=r"w\[1\] = -inf"):
        D.quantize(np.array([0.0, -np.inf]), "w")


def test_bad_data_is_refused_naming_it():
    s = M.default_shape
    x = M.random_inputs(s, np.random.default_rng(1))
    x["x"][0, 0] = np.nan
    x["w"][2, 3] = np.inf
    with pytest.raises(MappingError, match=r"'finite data': measured 2\b"):
        M.check_data(s, x)
    with pytest.raises(MappingError, match=r"x\[0, 0\] = nan"):
        M.run_accelerator(s, x)
    x["x"][0, 0] = 1.0
    with pytest.raises(MappingError, match=r"w\[2, 3\] = inf"):
        M.codegen(s, x)
    with pytest.raises(MappingError, match=r"w has shape \(32, 63\), expected \(32, 64\)"):
        M.run_accelerator(s, {"x": x["x"], "w": x["w"][:, :63]})
    with pytest.raises(MappingError, match="K fits the weight SRAM"):
        M.check_shape({"N": 1, "K": 16 * 1024 + 1, "M": 1})


def test_passes_stay_within_gemm_side_conditions_and_cover_each_output_once():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    gemm = get("vta.gemm")

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.integers(1, 700), st.integers(1, 16 * 1023), st.integers(1, 700))
    def prop(n, k, m):
        shape = {"N": n, "K": k, "M": m}
        blocks: dict = {}
        for r, c in D.passes(shape):
            gemm.check_shape(D.pass_shape(shape, r, c))
            blocks.setdefault((c.start, c.stop), []).append((r.start, r.stop))
        # column blocks tile [0, M) in order, and the row blocks of each tile [0, N) in order
        cols = list(blocks)
        assert [a for a, _ in cols] == [0] + [b for _, b in cols[:-1]] and cols[-1][1] == m
        for rows in blocks.values():
            assert [a for a, _ in rows] == [0] + [b for _, b in rows[:-1]] and rows[-1][1] == n
    prop()
    # ResNet-20's widest im2col convolution: 227 rows of 9 K blocks per pass; the Transformer's
    # 512 -> 2048 dense: four column blocks of 512 (32 K blocks x 32 M blocks = 1024 weight tiles)
    assert [(r.start, r.stop) for r, _ in D.passes({"N": 1024, "K": 144, "M": 16})] == \
        [(0, 227), (227, 454), (454, 681), (681, 908), (908, 1024)]
    assert [(c.start, c.stop) for _, c in D.passes({"N": 64, "K": 512, "M": 2048})] == \
        [(0, 512), (512, 1024), (1024, 1536), (1536, 2048)]


def test_int8_core_is_bit_exact_over_two_row_passes():
    shape = {"N": 230, "K": 144, "M": 20}                      # 227 + 3 rows
    assert len(D.passes(shape)) == 2
    x = M.random_inputs(shape, np.random.default_rng(0))
    got = M.run_accelerator(shape, x)
    assert got.dtype == np.float32 and np.array_equal(got, _host(x))
    assert 0 < frobenius_relative_error(M.reference(shape, x), got) < M.tolerance


def test_passes_tiled_in_n_and_m_are_bit_exact_and_are_the_emitted_streams(small_vta):
    from ila.models.vta.isa import FinishInsn, decode
    from ila.models.vta.model import build_vta
    from mappings.common import fresh_simulator
    from mappings.vta.gemm import acc_index
    shape = {"N": 5, "K": 40, "M": 40}                          # 3 K blocks: 16 columns, 2 rows a pass
    plan = D.passes(shape)
    assert len({r.start for r, _ in plan}) == 3 and len({c.start for _, c in plan}) == 3 and len(plan) == 9
    x = M.random_inputs(shape, np.random.default_rng(4))
    got = M.run_accelerator(shape, x)
    assert np.array_equal(got, _host(x))
    assert frobenius_relative_error(M.reference(shape, x), got) < M.tolerance
    # the codegen's stream, cut after each FINISH and run from reset, gives the same int32 results
    stream = [c for c in M.codegen(shape, x) if "vta_read_acc" not in c and not c.get("vta_reset")]
    cuts = [i + 1 for i, c in enumerate(stream)
            if "vta_top_instr_in" in c and isinstance(decode(c["vta_top_instr_in"], small_vta), FinishInsn)]
    assert len(cuts) == len(plan) and cuts[-1] == len(stream)
    qx, _ = D.quantize(x["x"])
    qw, _ = D.quantize(x["w"])
    out = np.zeros((5, 40), np.int64)
    for (r, c), a, b in zip(plan, [0] + cuts, cuts):
        sim = fresh_simulator(build_vta(small_vta))
        sim.run(stream[a:b])
        acc = sim.memory("vta_acc_mem").astype(np.uint64).astype(np.uint32).view(np.int32)
        out[r, c] = acc[acc_index(D.pass_shape(shape, r, c))]
    assert np.array_equal(out, qx @ qw.T)


@pytest.mark.slow
def test_default_sram_passes_tiled_in_n_and_m_are_bit_exact():
    shape = {"N": 65, "K": 512, "M": 528}                      # 64 + 1 rows x 512 + 16 columns
    plan = D.passes(shape)
    assert len({r.start for r, _ in plan}) == 2 and len({c.start for _, c in plan}) == 2
    x = M.random_inputs(shape, np.random.default_rng(5))
    got = M.run_accelerator(shape, x)
    assert np.array_equal(got, _host(x))
    assert frobenius_relative_error(M.reference(shape, x), got) < M.tolerance


def _transposed_tiles(q):
    """Each 16x16 tile of the weight codes transposed (a wrong weight tile layout)."""
    m, k = q.shape
    t = q.reshape(m // 16, 16, k // 16, 16)
    return t.transpose(0, 3, 2, 1).reshape(m, k)


def _wrong(bug):
    def run(shape, inputs):
        qx, sx = D.quantize(inputs["x"])
        qw, sw = D.quantize(inputs["w"])
        if bug == "dequantised with the scale of x only":
            return D.dequantize(D.int_product(shape, qx, qw), sx, 1.0)
        return D.dequantize(D.int_product(shape, qx, _transposed_tiles(qw)), sx, sw)
    return dataclasses.replace(M, run_accelerator=run)


@pytest.mark.parametrize("bug", ["dequantised with the scale of x only", "weight tiles transposed"])
def test_seeded_wrong_variants_fail_simulation(bug):
    shape = {"N": 16, "K": 32, "M": 16}
    assert run_sim(M, shape=shape, samples=2, seed=3).passed
    rep = run_sim(_wrong(bug), shape=shape, samples=2, seed=3)
    assert not rep.passed and min(rep.errors) > 10 * M.tolerance


def test_seeded_tiling_bug_fails_simulation(small_vta, monkeypatch):
    """The last pass dropped (an off-by-one in the pass count): its outputs stay 0."""
    shape = {"N": 5, "K": 40, "M": 40}
    assert run_sim(M, shape=shape, samples=1, seed=2).passed
    right = D.passes
    monkeypatch.setattr(D, "passes", lambda s: right(s)[:-1])
    assert not run_sim(M, shape=shape, samples=1, seed=2).passed


def test_bare_float_dense_offloads_with_exact_matching(tmp_path):
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(6)
    x = var("x", (2, 24))
    g = Graph([x], [call("nn.relu", call("nn.dense", x, const(rng.standard_normal((5, 24)).astype(np.float32))))])
    res = compile_graph(g, ("vta",), certify="sim", ledger_path=tmp_path / "l.json")
    assert res.counts() == {"vta.dense": 1}
    (o,) = res.offloads
    assert o.shape == "2x24x5" and not o.chain


def test_float_convolution_offloads_to_vta_through_im2col(tmp_path):
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    from compile.runtime import run
    from compile.runtime.cosim import cosimulate
    path = with_rewrite_certificates(tmp_path / "l.json")
    cert = certify(registry()["conv2d_im2col"], samples=5)
    assert cert.result == "proved"
    record(cert, path=path)
    rng = np.random.default_rng(2)
    x = var("x", (1, 3, 6, 6))
    g = Graph([x], [call("nn.conv2d", x, const(rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
                         strides=(1, 1), padding=(1, 1))])
    assert compile_graph(g, ("vta",), ledger_path=path).counts() == {}          # exact: no dense to match
    res = compile_graph(g, ("vta",), matching="flexible", certify="sim", ledger_path=path)
    assert res.counts() == {"vta.dense": 1}
    (o,) = res.offloads
    assert "conv2d_im2col" in o.chain and o.shape == "36x27x4"
    inp = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    out = cosimulate(res, inp)
    (inv,) = out.invocations
    assert inv.mapping == "vta.dense" and not inv.refused and 0 < inv.error < M.tolerance
    assert frobenius_relative_error(run(g, inp)[0], out.outputs[0]) < M.tolerance


def _memo_finds_only_equal_content(memo) -> bool:
    """A recurring weight tensor is stored on its second quantisation and found on its third with
    the codes and scale of a fresh quantisation; after an in-place change it is quantised again
    (True when the memo behaves so)."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    fresh = D._quantize(w, "w")
    for k in range(2):
        assert memo.get(w) is None
        got = D._quantize(w, "w")
        assert memo.put(w, got) == (k == 1)
        if k == 1:
            got[0].flags.writeable = False                  # as D.quantize does with what the memo keeps
    hit = memo.get(w)
    assert hit is not None and np.array_equal(hit[0], fresh[0]) and hit[1] == fresh[1]
    assert not hit[0].flags.writeable                       # callers cannot change the stored codes
    w[150, 1:199] *= 3.0                                    # in place, away from the 64 sampled elements
    got = memo.get(w)
    return got is None


def test_the_quantisation_memo_returns_fresh_codes_and_sees_in_place_changes():
    from ila.memo import TensorMemo
    assert _memo_finds_only_equal_content(TensorMemo(max_entries=8))
    # the seeded bug (entries found by the sample alone) returns the stale codes: the check fails
    assert not _memo_finds_only_equal_content(TensorMemo(max_entries=8, bug="sample_only"))


def test_quantize_through_the_memo_equals_the_plain_quantisation():
    rng = np.random.default_rng(12)
    w = rng.standard_normal((256, 128)).astype(np.float32)          # >= MEMO_MIN elements
    assert w.size >= D.MEMO_MIN
    want = D._quantize(w, "w")
    for _ in range(4):                                               # computed, stored, then found
        codes, scale = D.quantize(w, "w")
        assert np.array_equal(codes, want[0]) and scale == want[1]
    w[0, 0] = np.inf
    with pytest.raises(MappingError, match=r"cannot quantise w\[0, 0\] = inf"):
        D.quantize(w, "w")
