"""Tiling rewrites (compile.rewrites.tiling): the rules the compiler runs are the certified ones with
bound conditions appended (checked structurally; a seeded difference only that check catches), one
split per operator above the size bound and none below it, the tiled terms equal to the operator
on large instances, and a model whose convolutions exceed HLSCNN's memory offloaded through tiles."""
import numpy as np
import pytest

from compile.egraph import apply_rules
from compile.interpret import run_graph
from compile.ir.graph import Graph, call, const, var
from compile.rewrites.broken import BROKEN
from compile.rewrites.certify import bound_check, certify, module_of
from compile.rewrites.tiling import DENSE_LIMIT, MIN_PIECE, TILING
from ila.verdict import Proved
from ledgers import with_rewrite_certificates

BY_NAME = {r.name: r for r in TILING}
CONV = ("conv2d_tile_out", "conv2d_tile_in", "conv2d_tile_rows")
DENSE = ("dense_tile_rows", "dense_tile_cols", "dense_tile_k")


def _conv(C, O, H, K=3, S=1, P=0):
    x, w = var("x", (1, C, H, H)), var("w", (O, C, K, K))
    return [x, w], call("nn.conv2d", x, w, strides=(S, S), padding=(P,) * 4)


def _dense(N, K, M):
    x, w = var("x", (N, K)), var("w", (M, K))
    return [x, w], call("nn.dense", x, w)


def _applied(names, node) -> list[str]:
    """The tiling rewrites among ``names`` whose compiled rules (bound included) apply to ``node``."""
    return [n for n in names if apply_rules(BY_NAME[n].rules, [node])[0] is not None]


def test_compiled_rules_are_the_checked_rules_with_the_bound_appended():
    assert {rw.name for rw in TILING} == set(CONV + DENSE) | {"slice_compose"}
    for rw in (BY_NAME[n] for n in CONV + DENSE):
        assert rw.checked and rw.size_guard, rw.name
        assert bound_check(rw) == [], rw.name
        assert all(len(a.where) > len(b.where) for a, b in zip(rw.rules, rw.checked))
        assert module_of(rw) == "compile.rewrites.tiling"
    assert not BY_NAME["slice_compose"].checked and module_of(BY_NAME["slice_compose"]) == "compile.rewrites.tiling"


def test_a_rule_differing_beyond_the_bound_is_refuted_by_the_bound_check_alone():
    rw = next(r for r in BROKEN if r.name == "conv2d_tile_out_unchecked_cut")
    cert = certify(rw, "compile.rewrites.broken", samples=5)
    assert cert.result == "refuted"
    assert cert.exact and all(isinstance(v, Proved) for _, v in cert.exact)        # the checked rules are right
    assert cert.property_failures and all(f.startswith("bound:") for f in cert.property_failures)


@pytest.mark.parametrize("inst, want", [
    (dict(C=64, O=64, H=58), "conv2d_tile_rows"),       # input >= weights: halve the rows (halo KH - 1)
    (dict(C=512, O=2048, H=7, K=1), "conv2d_tile_out"),  # weights larger: halve the output channels
    (dict(C=2048, O=64, H=7, K=1), "conv2d_tile_out"),
    (dict(C=2048, O=8, H=7, K=3), "conv2d_tile_in"),     # ... too few output channels: the input channels
    (dict(C=64, O=64, H=58, P=1), None),                  # padded: its unpadded form splits by rows
])
def test_one_split_per_large_convolution(inst, want):
    _, node = _conv(**inst)
    assert _applied(CONV, node) == ([want] if want else [])


@pytest.mark.parametrize("inst, want", [
    (dict(N=12544, K=147, M=64), "dense_tile_rows"),
    (dict(N=1, K=2048, M=1000), "dense_tile_cols"),
    (dict(N=64, K=8192, M=32), "dense_tile_rows"),
    (dict(N=1, K=80000, M=8), "dense_tile_k"),          # weights larger, too few columns to halve
    (dict(N=1, K=300000, M=1), "dense_tile_k"),         # input as large, one row
])
def test_one_split_per_large_dense(inst, want):
    _, node = _dense(**inst)
    assert _applied(DENSE, node) == [want]


def test_nothing_is_split_at_or_below_the_bound():
    _, conv = _conv(C=16, O=16, H=32)                # 16*32*32 + 16*16*9 + 16*30*30 < TILE_LIMIT
    _, dense = _dense(N=64, K=256, M=64)
    assert _applied(CONV, conv) == [] and _applied(DENSE, dense) == []
    _, small_o = _conv(C=1, O=2 * MIN_PIECE - 1, H=200, K=1)   # large, but too few channels to halve
    assert "conv2d_tile_out" not in _applied(CONV, small_o)


@pytest.mark.parametrize("name, inst", [
    ("conv2d_tile_rows", dict(C=8, O=4, H=101, K=3, S=2)),
    ("conv2d_tile_out", dict(C=3, O=600, H=11, K=3, P=1)),
    ("conv2d_tile_in", dict(C=1500, O=8, H=4, K=3)),
    ("dense_tile_rows", dict(N=40001, K=9, M=5)),
    ("dense_tile_cols", dict(N=2, K=300, M=2001)),
    ("dense_tile_k", dict(N=1, K=200001, M=2)),
])
def test_tiled_terms_equal_the_operator_at_large_sizes(name, inst):
    """The compiled rule's right-hand side at a size only the bound admits, evaluated with the IR's
    reference semantics (weights as constants, as a model's are), equals the operator."""
    rng = np.random.default_rng(0)
    ins, node = (_conv if name in CONV else _dense)(**inst)
    x, w = ins
    wc = const(rng.standard_normal(w.shape).astype(np.float32))
    node = call(node.op, x, wc, **node.attrs)
    rw = BY_NAME[name]
    rhs = apply_rules(rw.rules, [node])[0]
    assert rhs is not None and tuple(rhs.shape) == tuple(node.shape)
    feeds = {"x": rng.standard_normal(x.shape).astype(np.float32)}
    a = run_graph(Graph([x], [node]), feeds)[0].astype(np.float64)
    b = run_graph(Graph([x], [rhs]), feeds)[0].astype(np.float64)
    if rw.bit_exact:
        assert np.array_equal(a, b)
    else:
        assert np.linalg.norm(a - b) / np.linalg.norm(a) < rw.rtol


def test_the_limit_is_what_the_bound_says():
    rw = BY_NAME["dense_tile_rows"]
    n = (DENSE_LIMIT - 1) // 2                  # N*K + M*K + N*M with K = M = 1: 2N + 1 = DENSE_LIMIT
    below, above = _dense(N=n, K=1, M=1)[1], _dense(N=n + 1, K=1, M=1)[1]
    assert apply_rules(rw.rules, [below])[0] is None and apply_rules(rw.rules, [above])[0] is not None


def test_nested_tiles_read_their_input_through_one_slice():
    """slice_compose: a slice of a slice (same axis, stride 1) is one slice of the operand, equal to
    the nested one; a seeded variant one row late is refuted (BMC counterexample)."""
    rw = BY_NAME["slice_compose"]
    x = var("x", (9, 4))
    inner = call("strided_slice", x, begin=(2,), end=(8,), strides=(1,), axes=(0,))
    node = call("strided_slice", inner, begin=(1,), end=(4,), strides=(1,), axes=(0,))
    rhs = apply_rules(rw.rules, [node])[0]
    assert rhs.op == "strided_slice" and rhs.args[0] is x and rhs.attrs["begin"] == (3,) and rhs.attrs["end"] == (6,)
    feeds = {"x": np.arange(36, dtype=np.float32).reshape(9, 4)}
    assert np.array_equal(run_graph(Graph([x], [rhs]), feeds)[0], run_graph(Graph([x], [node]), feeds)[0])
    bad = next(r for r in BROKEN if r.name == "slice_compose_shifted")
    cert = certify(bad, "compile.rewrites.broken", samples=5)
    assert cert.result == "refuted" and any(not isinstance(v, Proved) for _, v in cert.exact)


def test_im2col_is_bounded_so_no_matrix_product_of_a_convolution_is_tiled():
    """conv2d_im2col runs with an appended bound (columns + weights + result <= IM2COL_LIMIT =
    DENSE_LIMIT): a convolution beyond it becomes a matrix product only through its tiles."""
    from compile.rewrites import registry
    from compile.rewrites.rules import IM2COL_LIMIT
    rw = registry()["conv2d_im2col"]
    assert rw.checked and bound_check(rw) == [] and IM2COL_LIMIT == DENSE_LIMIT
    small, big = _conv(C=16, O=16, H=34)[1], _conv(C=64, O=64, H=58)[1]     # 147,456+: below; 1.8M: above
    assert apply_rules(rw.rules, [small])[0] is not None and apply_rules(rw.rules, [big])[0] is None
    assert apply_rules(rw.checked, [big])[0] is not None                   # the certified rule applies


@pytest.mark.slow
def test_a_convolution_beyond_hlscnn_memory_is_offloaded_in_tiles(tmp_path):
    """A 3x3 convolution over a 64x58x58 input (431 KB of HLSCNN activations, more than its 192 KiB
    SoC memory): refused whole, offloaded as row tiles with halos; the co-simulated result is within
    HLSCNN's tolerance of the host's."""
    from compile.compiler import compile_graph
    from compile.rewrites.certify import record
    from compile.runtime.cosim import against_host
    ledger = with_rewrite_certificates(tmp_path / "l.json")
    for rw in TILING:
        cert = certify(rw, samples=10)
        assert cert.result == "proved", cert.summary()
        record(cert, ledger)
    rng = np.random.default_rng(1)
    x = var("x", (1, 64, 58, 58))
    w = const((rng.standard_normal((32, 64, 3, 3)) / 24).astype(np.float32))
    graph = Graph([x], [call("nn.conv2d", x, w, strides=(1, 1), padding=(0, 0, 0, 0))])
    exact = compile_graph(graph, ("hlscnn",), matching="exact", certify="sim", ledger_path=ledger)
    assert exact.counts() == {}
    res = compile_graph(graph, ("hlscnn",), matching="flexible", certify="sim", ledger_path=ledger)
    assert sum(res.counts().values()) >= 2 and res.host_ops == 0, (res.counts(), res.host_ops)
    assert res.rules_used.get("conv2d_tile_rows", 0) >= 1
    # only the tiles extraction uses were certified; the other levels' pending calls were not
    assert res.deferred >= 1
    r = against_host(res, {"x": rng.standard_normal((1, 64, 58, 58)).astype(np.float32)})
    assert r["error"] < 0.06


def test_a_rank3_dense_is_flattened_so_the_tiling_rules_see_it():
    """LSTM-WLM's decoder, nn.dense(x[35, 1, 650], w[10000, 650]): the rank-2 tiling rules do not
    match it as the front-end emits it; dense_flatten rewrites it to reshape(nn.dense(reshape(x,
    [35, 650]), w), [35, 1, 10000]), whose inner dense the column rule splits; the rewritten term
    equals the operator."""
    from compile.rewrites.rules import dense_flatten
    rng = np.random.default_rng(2)
    x = var("x", (35, 1, 650))
    w = const((rng.standard_normal((10000, 650)) / 25).astype(np.float32))
    node = call("nn.dense", x, w)
    assert _applied(DENSE, node) == []
    flat = dense_flatten(node)
    assert flat is not None and flat.op == "reshape" and flat.args[0].op == "nn.dense"
    assert _applied(DENSE, flat.args[0]) == ["dense_tile_cols"]
    xv = rng.standard_normal((35, 1, 650)).astype(np.float32)
    want = run_graph(Graph([x], [node]), {"x": xv})[0]
    got = run_graph(Graph([x], [flat]), {"x": xv})[0]
    assert got.shape == want.shape == (35, 1, 10000) and np.array_equal(got, want)
