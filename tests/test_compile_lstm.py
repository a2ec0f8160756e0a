"""FlexASR's LSTM offload for the front-ends' folded LSTM (paper §4.4.2, Table 1: LSTM-WLM 1/1).

The front-ends produce one ``nn.lstm`` (ONNX LSTM: gates i, o, f, c; two bias halves); FlexASR's
mapping ``flexasr.lstm`` matches the IR operator ``lstm_layer`` (PyTorch nn.LSTM: gates i, f, g, o;
one summed bias; zero initial state). The certified rewrite ``lstm_fold`` connects them. Here: the
host semantics of ``lstm_layer`` against ``nn.lstm`` and FlexASR's float reference; the ONNX-LSTM
instruction of the compiler-IR ILA against the host; the rewrite's certificate, its side condition
and its seeded wrong variants (refuted by the exact check); the rewrite on LSTM-WLM (the gate
refuses its 650 features: not a multiple of 16/64); and a small LSTM-WLM (64 features) whose LSTM
is offloaded to flexasr.lstm and co-simulated within the mapping's tolerance.
"""
import numpy as np
import pytest

from compile.compiler import compile_graph
from compile.errors import CompileError, ShapeMismatchError
from compile.ir import ops
from compile.ir.graph import Graph, call, const, var
from compile.rewrites import registry
from compile.rewrites import rules
from compile.rewrites.broken import BROKEN
from compile.runtime import run
from ledgers import with_rewrite_certificates


def _perm(H):
    """Row indices taking ONNX's gate blocks (i, o, f, c) to PyTorch's (i, f, g, o)."""
    return np.concatenate([np.arange(q * H, (q + 1) * H) for q in (0, 2, 3, 1)])


def _rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("T,I,H,seed", [(1, 1, 1, 0), (5, 3, 4, 1), (8, 16, 64, 2)])
def test_lstm_layer_host_semantics_is_nn_lstm_after_the_gate_permutation(T, I, H, seed):
    from ila.models.flexasr import reference as ref
    rng = np.random.default_rng(seed)
    x, w, r, b = _rand(rng, T, 1, I), _rand(rng, 1, 4 * H, I, scale=.5), _rand(rng, 1, 4 * H, H, scale=.5), \
        _rand(rng, 1, 8 * H, scale=.5)
    onnx = ops.evaluate("nn.lstm", [x, w, r, b], {})
    p = _perm(H)
    bsum = b[0, :4 * H][p] + b[0, 4 * H:][p]
    torch_like = ops.evaluate("lstm_layer", [x[:, 0], w[0][p], r[0][p], bsum], {})
    assert torch_like.dtype == np.float32 and torch_like.shape == (T, H)
    np.testing.assert_allclose(torch_like, onnx.reshape(T, H), rtol=0, atol=1e-6)
    np.testing.assert_allclose(torch_like, ref.lstm_layer(x[:, 0], w[0][p], r[0][p], bsum), rtol=0, atol=1e-5)


def test_lstm_layer_shape_errors_name_the_node_and_the_bad_shape():
    x, wi, wh, b = var("x", (3, 2)), var("wi", (8, 2)), var("wh", (8, 2)), var("b", (8,))
    assert call("lstm_layer", x, wi, wh, b).shape == (3, 2)
    for bad, what in (((var("x3", (3, 1, 2)), wi, wh, b), "rank 3"),
                      ((x, var("wi5", (8, 5)), wh, b), "(8, 5)"),
                      ((x, wi, var("wh3", (8, 3)), b), "(8, 3)"),
                      ((x, wi, wh, var("b7", (7,))), "(7,)")):
        with pytest.raises(ShapeMismatchError, match=r"lstm_layer.*node enc\.rnn") as e:
            call("lstm_layer", *bad, source="enc.rnn")
        assert what in str(e.value) and isinstance(e.value, CompileError)


def test_nn_lstm_instruction_of_the_compiler_ir_ila_matches_the_host():
    """func id 31 (ONNX LSTM, float32 numerics) against ``nn.lstm``'s host semantics."""
    from ila.models.relay.model import FUNC_IDS, RelayMachine
    assert FUNC_IDS["nn.lstm"] == 31
    rng = np.random.default_rng(3)
    T, I, H = 3, 2, 3
    x, w, r, b = _rand(rng, T, I), _rand(rng, 4 * H, I), _rand(rng, 4 * H, H), _rand(rng, 8 * H)
    rm = RelayMachine("float32", tensor_entries=1 << 12)
    for base, a in ((100, x), (200, w), (300, r), (400, b)):
        rm.put(base, a)
    rm.run("nn.lstm", 100, 200, 300, 400, 500, 600, T, (I << 16) | H)
    want = ops.evaluate("nn.lstm", [x[:, None], w[None], r[None], b[None]], {}).reshape(T, H)
    np.testing.assert_allclose(rm.get(500, (T, H)), want, rtol=0, atol=1e-6)


def test_lstm_fold_is_certified_exactly_and_by_the_property_test():
    from compile.rewrites.certify import certify
    cert = certify(registry()["lstm_fold"], samples=10)
    assert cert.result == "proved", cert.summary()
    assert [v.kind for _, v in cert.exact] == ["proved"] * len(rules.RULES[-1].small)


@pytest.mark.parametrize("rw", [r for r in BROKEN if r.name.startswith("lstm_fold")], ids=lambda r: r.name)
def test_seeded_wrong_lstm_folds_are_refuted_by_the_exact_check(rw):
    from compile.rewrites.certify import exact_check, property_check
    v = exact_check(rw, dict(T=2, I=1, H=1, bias="input", state="zeros"), timeout=60)
    assert v.kind == "counterexample", v
    assert property_check(rw, samples=5)[1]               # the float32 property test refutes it too


def test_lstm_fold_side_condition():
    rw = registry()["lstm_fold"]
    assert rw.build(dict(T=2, I=2, H=2, B=2, bias="input", state="absent"))[2] is None      # batch 2
    assert rw.build(dict(T=2, I=2, H=2, bias="input", state="input"))[2] is None            # h0 an input
    x, w, r = var("x", (2, 1, 2)), var("w", (1, 8, 2)), var("r", (1, 8, 2))
    b, z, one = const(np.zeros((1, 16))), const(np.zeros((1, 1, 2))), const(np.ones((1, 1, 2)))
    assert rules.lstm_fold(call("nn.lstm", x, w, r, b, z, one)) is None                    # c0 non-zero
    out = rules.lstm_fold(call("nn.lstm", x, w, r, b, z, z))
    assert out.op == "reshape" and out.args[0].op == "lstm_layer" and out.shape == (2, 1, 1, 2)


def test_lstm_fold_applies_to_lstm_wlm_and_the_gate_refuses_its_650_features(tmp_path):
    """LSTM-WLM (benchmarks/models/lstm_wlm.py: 650 embedding and hidden features) violates
    FlexASR's LSTM side conditions (I a multiple of 16, H of 64): matched, not offloaded."""
    from compile import gate
    from compile.ir.graph import Node, topological
    pytest.importorskip("torch")
    from compile.applications import load_graph
    g, _ = load_graph("lstm_wlm", 0)
    (lstm,) = [v for v in topological(g.outputs) if isinstance(v, Node) and v.op == "nn.lstm"]
    out = rules.lstm_fold(lstm)
    assert out is not None and out.shape == lstm.shape == (35, 1, 1, 650)
    layer = out.args[0]
    assert layer.op == "lstm_layer" and [a.shape for a in layer.args] == [(35, 650), (2600, 650), (2600, 650), (2600,)]
    from compile.call import Call
    from mappings.registry import get
    d = gate.decide_call(Call(get("flexasr.lstm"), layer, list(layer.args), {"T": 35, "I": 650, "H": 650}),
                         certify="none", path=tmp_path / "ledger.json")
    assert not d.allowed and "multiple of 16" in d.reason


def _small_wlm():
    """LSTM-WLM's architecture at 64 features and a 64-word vocabulary (FlexASR's LSTM: H a
    multiple of 64, I of 16). PyTorch's default LSTM init U(-1/8, 1/8) at H = 64 lies just below
    the AdaptivFloat data condition's range [2^-3, 2^5), so the LSTM weights are doubled."""
    torch = pytest.importorskip("torch")
    from benchmarks.models.lstm_wlm import LSTMWLM
    from compile.frontend import from_torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = LSTMWLM(vocab=64, emb=64, hid=64).eval()
    with torch.no_grad():
        for p in m.rnn.parameters():
            p.mul_(2)
    tokens = torch.randint(0, 64, (35, 1))
    g = from_torch(m, (tokens,))
    return g, {v.name: t.numpy().astype(v.dtype) for v, t in zip(g.inputs, (tokens,))}


@pytest.fixture(scope="module")
def small_wlm(tmp_path_factory):
    g, inputs = _small_wlm()
    ledger = with_rewrite_certificates(tmp_path_factory.mktemp("lstm") / "ledger.json")
    exact = compile_graph(g, ("flexasr.lstm",), matching="exact", ledger_path=ledger)
    flexible = compile_graph(g, ("flexasr.lstm",), matching="flexible", certify="sim", ledger_path=ledger)
    return g, inputs, exact, flexible


def test_small_lstm_wlm_offloads_its_lstm_to_flexasr_through_lstm_fold(small_wlm):
    _, _, exact, flexible = small_wlm
    assert exact.counts() == {}                        # exact matching: nn.lstm is not lstm_layer
    assert flexible.counts() == {"flexasr.lstm": 1} and flexible.rules_used.get("lstm_fold") == 1
    (off,) = flexible.offloads
    assert off.shape == "35x64x64" and off.chain == ("lstm_fold",)
    assert off.certificate["result"] == "passed" and off.certificate["method"] == "call"


def test_small_lstm_wlm_cosimulation_stays_within_flexasr_lstm_tolerance(small_wlm):
    from compile.runtime.cosim import against_host
    from mappings.registry import get
    _, inputs, _, flexible = small_wlm
    res = against_host(flexible, inputs)
    (inv,) = res["result"].invocations
    tol = get("flexasr.lstm").tolerance_at({"T": 35, "I": 64, "H": 64})
    assert inv.mapping == "flexasr.lstm" and not inv.refused
    assert inv.error < tol and res["error"] < tol, (inv.error, res["error"])


def test_flexasr_lstm_adapters_refuse_shapes_that_are_not_an_lstm_layer():
    from mappings.registry import get
    m = get("flexasr.lstm")
    ok = {"?x": (35, 64), "?w_ih": (256, 64), "?w_hh": (256, 64), "?b": (256,)}
    assert m.match_shape({}, ok, (35, 64)) == {"T": 35, "I": 64, "H": 64}
    assert m.match_shape({}, {**ok, "?x": (35, 1, 64)}, ()) is None
    assert m.match_shape({}, {**ok, "?b": (512,)}, ()) is None


def test_host_runs_the_rewritten_graph_like_the_original(small_wlm):
    """The rewritten LSTM on the host (no offload): equal to the front-end's nn.lstm within the
    rewrite's certified tolerance."""
    g, inputs, _, _ = small_wlm
    from compile.ir.graph import Node, topological
    (lstm,) = [v for v in topological(g.outputs) if isinstance(v, Node) and v.op == "nn.lstm"]
    x = lstm.args[0]
    sub = Graph([xv := var("x", x.shape)], [call("nn.lstm", xv, *lstm.args[1:])])
    folded = Graph([sub.inputs[0]], [rules.lstm_fold(sub.outputs[0])])
    feed = {"x": np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)}
    a, b = run(sub, feed)[0], run(folded, feed)[0]
    assert np.linalg.norm(a - b) / np.linalg.norm(a) <= rules.LSTM_RTOL
