"""The LSTM unroll (compile.rewrites.unroll): the folded ``nn.lstm`` as its cell's operators per
step, so that VTA's dense mapping takes the recurrent layer's dense layers (paper Table 1:
LSTM-WLM, 36 VTA invocations). Here: the compiler-IR ILA's activation instructions against the host,
the rule family and its certification (exact check including the applications' length, the seeded
wrong variants refuted), the cost that decides when the unrolled program is kept, the graph-level
expansion, and a small LSTM-WLM compiled and co-simulated on VTA."""
import numpy as np
import pytest

from compile.compiler import compile_graph
from compile.egraph import lstm_host_cost
from compile.expand import Expansion, check_expansion, expand, program_cost, substitute
from compile.interpret import run_graph as run
from compile.ir.graph import Graph, Node, call, const, topological, var
from compile.rewrites import registry
from compile.rewrites.broken import BROKEN
from compile.rewrites.lower import DATA_MOVEMENT
from compile.rewrites.unroll import MAX_T, SPACE, lstm_unroll, lstm_unroll_rules
from ledgers import with_rewrite_certificates


def _lstm(T, I, H, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    x = var("x", (T, 1, I))
    args = [x, const(rng.standard_normal((1, 4 * H, I))), const(rng.standard_normal((1, 4 * H, H)))]
    if bias:
        args.append(const(rng.standard_normal((1, 8 * H))))
    return x, call("nn.lstm", *args)


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
def test_activation_instructions_of_the_compiler_ir_ila_match_the_host(op):
    from compile.ir import ops
    from ila.models.relay.activations import ACTIVATION_IDS, FUNC_IDS, relay_ila_with_activations
    from ila.models.relay.numerics import FLOAT32
    from ila.sim import Simulator
    assert FUNC_IDS[op] == ACTIVATION_IDS[op]
    sim = Simulator(relay_ila_with_activations("float32", tensor_entries=1 << 10))
    x = np.random.default_rng(1).standard_normal(37).astype(np.float32) * 3
    sim.memory("tensor")[100:137] = FLOAT32.from_float(x)
    sim.step({"func_id": FUNC_IDS[op], "arg_0": 100, "arg_1": 300, "arg_2": 37})
    got = FLOAT32.to_float(sim.memory("tensor")[300:337].astype(np.uint64))
    np.testing.assert_allclose(got, ops.evaluate(op, [x], {}), rtol=2e-7, atol=1e-7)
    assert relay_ila_with_activations("int32").unsupported_ops[-2:] == ("sigmoid", "tanh")


def test_the_unrolled_form_is_the_cell_per_step_and_its_host_cost_is_lstm_host_cost():
    _, n = _lstm(4, 3, 2)
    y = lstm_unroll(n)
    assert y.shape == n.shape == (4, 1, 1, 2)
    nodes = [v for v in topological([y]) if isinstance(v, Node)]
    ops = [v.op for v in nodes]
    assert ops.count("nn.dense") == 4 and ops.count("nn.bias_add") == 4          # projection + 3 recurrences
    assert ops.count("sigmoid") == 11 and ops.count("tanh") == 8 and ops.count("multiply") == 11
    compute = [v for v in nodes if v.op not in DATA_MOVEMENT and not (v.op == "add" and
                                                                      all(not isinstance(a, Node) or a.op in DATA_MOVEMENT
                                                                          for a in v.args))]
    assert len(compute) * 10_000 == lstm_host_cost(4)          # the bias halves' add is a constant add
    assert lstm_unroll(_lstm(MAX_T + 1, 1, 1)[1]) is None       # no rule beyond MAX_T
    assert lstm_unroll(call("nn.lstm", var("x", (2, 2, 1)), *_lstm(2, 1, 1)[1].args[1:])) is None   # batch 2


def test_unrolled_lstm_equals_the_folded_operator_on_the_host():
    x, n = _lstm(6, 3, 4, seed=3)
    feed = {"x": np.random.default_rng(4).standard_normal(x.shape).astype(np.float32)}
    a = run(Graph([x], [n]), feed)[0]
    b = run(Graph([x], [lstm_unroll(n)]), feed)[0]
    assert np.linalg.norm(a - b) / np.linalg.norm(a) <= registry()["lstm_unroll"].rtol


def test_lstm_unroll_rules_are_built_per_length_on_demand():
    fam = registry()["lstm_unroll"].rules
    assert fam.keys == tuple(range(1, MAX_T + 1))
    (x, n) = _lstm(3, 1, 1)
    from compile.rewrites.base import rules_for
    got = rules_for(fam, [n])
    assert len(got) == 4 and all(r.label.startswith("T3/") for r in got)
    assert rules_for(fam, [n]) == got                          # the same RuleSpec objects (built once)
    assert [r.label for r in lstm_unroll_rules([2])] == [f"T2/{k}-operands" for k in (3, 4, 5, 6)]


def test_lstm_unroll_exact_space_covers_the_applications_length():
    rw = registry()["lstm_unroll"]
    assert {p["T"] for p in rw.small} >= {1, 2, 3, 35}


@pytest.mark.slow
def test_lstm_unroll_is_certified_exactly_and_by_the_property_test():
    from compile.rewrites.certify import certify
    rw = registry()["lstm_unroll"]
    cert = certify(rw, samples=10)
    assert cert.result == "proved", cert.summary()
    assert [v.kind for _, v in cert.exact] == ["proved"] * len(rw.small)
    assert len(rw.small) < len(SPACE)                          # the guard refuses batch 2 and non-zero states


@pytest.mark.parametrize("rw", [r for r in BROKEN if "lstm_unroll" in r.name and not r.name.startswith("unguarded")],
                         ids=lambda r: r.name)
def test_seeded_wrong_lstm_unrolls_are_refuted_by_the_exact_check(rw):
    from compile.rewrites.certify import exact_check
    v = exact_check(rw, dict(T=2, I=1, H=1, bias="input", state="zeros"), timeout=60)
    assert v.kind == "counterexample", v


def test_substitute_rebuilds_users_and_nested_replacements():
    x = var("x", (2, 3))
    a = call("nn.relu", x)
    b = call("add", a, a)
    c = call("multiply", b, x)
    a2 = call("tanh", x)
    b2 = call("add", a, a2)                                     # the replacement of b reads a, itself replaced
    (out,) = substitute([c], {a.uid: a2, b.uid: b2})
    assert out.op == "multiply" and out.args[0].op == "add" and out.args[1] is x
    assert [v.op for v in out.args[0].args] == ["tanh", "tanh"]
    assert substitute([c], {})[0] is c


def test_expand_applies_the_certified_expansion_and_leaves_other_graphs_alone():
    x, n = _lstm(3, 2, 2)
    y = call("nn.relu", n)
    g = Graph([x], [y])
    rw = registry()["lstm_unroll"]
    exp = expand(g, [rw])
    g2 = exp.graph
    assert exp.applied == {"lstm_unroll": 1} and g2.outputs[0].op == "nn.relu"
    assert "nn.lstm" not in g2.op_histogram() and g2.op_histogram()["nn.dense"] == 3
    assert check_expansion(g, exp) is None
    g3 = Graph([x], [call("nn.relu", x)])
    assert expand(g3, [rw]) == (g3, {}, {})


def _two_layers():
    x, n = _lstm(3, 2, 2)
    x2 = var("x2", x.shape)
    n2 = call("nn.lstm", x2, *n.args[1:])
    return Graph([x, x2], [call("nn.relu", n), call("tanh", n2)])


def test_the_expansion_check_refuses_a_splice_that_is_not_the_certified_rewrite():
    """check_expansion re-derives each replaced node's right-hand side on its own and compares the
    expanded graph by value numbering: right-hand sides swapped between two layers of one shape,
    a rebuilt user reading the wrong operand, or a replacement left out are refused."""
    g = _two_layers()
    rw = registry()["lstm_unroll"]
    exp = expand(g, [rw])
    assert exp.applied == {"lstm_unroll": 2} and check_expansion(g, exp) is None
    (u1, (n1, _, r1)), (u2, (n2, _, r2)) = exp.replaced.items()
    swapped = {u1: (n1, rw, r2), u2: (n2, rw, r1)}
    outs = substitute(g.outputs, {u1: r2, u2: r1})
    assert "not the original output" in check_expansion(g, Expansion(Graph(g.inputs, outs), exp.applied, swapped))
    wrong_user = [call("nn.relu", exp.graph.outputs[1].args[0]), exp.graph.outputs[1]]
    assert "output 0" in check_expansion(g, Expansion(Graph(g.inputs, wrong_user), exp.applied, exp.replaced))
    reordered = Graph(g.inputs[::-1], exp.graph.outputs)
    assert "inputs" in check_expansion(g, Expansion(reordered, exp.applied, exp.replaced))
    half = substitute(g.outputs, {u1: r1})
    assert check_expansion(g, Expansion(Graph(g.inputs, half), exp.applied, exp.replaced)).startswith("output 1")


def test_program_cost_prices_an_lstm_on_the_host_as_its_unrolled_form():
    x, n = _lstm(35, 2, 2)
    g = Graph([x], [n])
    out = compile_graph(g, ("hlscnn",), matching="exact")
    assert program_cost(out.program) == lstm_host_cost(35)
    assert program_cost(out.program, "data-movement", 3) == lstm_host_cost(35) + 3_000


def _small_wlm(hid=16, vocab=32):
    torch = pytest.importorskip("torch")
    from benchmarks.models.lstm_wlm import LSTMWLM
    from compile.frontend import from_torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = LSTMWLM(vocab=vocab, emb=hid, hid=hid).eval()
    tokens = torch.randint(0, vocab, (35, 1))
    g = from_torch(m, (tokens,))
    return g, {v.name: t.numpy().astype(v.dtype) for v, t in zip(g.inputs, (tokens,))}


@pytest.fixture(scope="module")
def small_wlm_vta(tmp_path_factory):
    g, inputs = _small_wlm()
    ledger = with_rewrite_certificates(tmp_path_factory.mktemp("unroll") / "ledger.json")
    out = compile_graph(g, ("vta",), matching="flexible", certify="sim", ledger_path=ledger)
    host = compile_graph(g, ("hlscnn",), matching="flexible", certify="sim", ledger_path=ledger)
    return g, inputs, out, host


@pytest.mark.slow
def test_small_lstm_wlm_offloads_every_dense_layer_of_its_lstm_to_vta(small_wlm_vta):
    """35 steps: the input projection and 34 recurrences as vta.dense_bias, the decoder as
    vta.dense_bias; no nn.lstm left on the host. Targets without a dense mapping keep the folded
    layer (its unrolled form would cost more on the host)."""
    g, _, out, host = small_wlm_vta
    assert out.rules_used.get("lstm_unroll") == 1
    assert out.per_accelerator() == {"vta": 36}
    assert out.counts()["vta.dense_bias"] >= 35
    assert not any(s.kind == "host" and s.value.op == "nn.lstm" for s in out.program.steps)
    assert host.counts() == {} and any(s.kind == "host" and s.value.op == "nn.lstm" for s in host.program.steps)
    shapes = {o.shape for o in out.offloads if o.mapping == "vta.dense_bias"}
    assert {"35x16x64", "1x16x64"} <= shapes


@pytest.mark.slow
def test_small_lstm_wlm_on_vta_cosimulates_close_to_the_host(small_wlm_vta):
    from compile.runtime.cosim import against_host
    _, inputs, out, _ = small_wlm_vta
    res = against_host(out, inputs)
    assert len(res["result"].invocations) == 36 and not any(i.refused for i in res["result"].invocations)
    assert res["error"] < 0.1, res["error"]


def test_a_graph_without_an_lstm_neither_certifies_nor_runs_the_unroll(tmp_path):
    x = var("x", (4, 16))
    g = Graph([x], [call("nn.relu", call("nn.dense", x, const(np.ones((8, 16), np.float32))))])
    out = compile_graph(g, ("vta",), matching="flexible", certify="none", ledger_path=tmp_path / "l.json")
    assert "lstm_unroll" not in out.rules_missing and "lstm_fold" in out.rules_missing
    _, n = _lstm(2, 1, 1)
    out = compile_graph(Graph([n.args[0]], [n]), ("vta",), matching="flexible", certify="none",
                        ledger_path=tmp_path / "l.json")
    assert "lstm_unroll" in out.rules_missing
