"""Table 4's aggregation (results, per-layer statistics, the root-cause sentences) on synthetic
points, the weight-format report on a compiled HLSCNN convolution, and the CLI's errors."""
import math

import numpy as np
import pytest

from benchmarks import table4 as T
from ledgers import with_rewrite_certificates


def _pt(i, label, host, acc, layers):
    return {"i": i, "label": label, "host": host, "acc": acc, "seconds": 1.0, "host_seconds": 0.01, "layers": layers}


def test_results_and_per_layer_statistics():
    pts = [_pt(0, 3, 3, 3, [["c1", "hlscnn.conv2d_w8", "8x8", 0.02, 2, 0, 100, ""],
                            ["fc", "flexasr.linear", "1x16x64", None, 0, 0, 64, "refused: x"]]),
           _pt(1, 4, 4, 7, [["c1", "hlscnn.conv2d_w8", "8x8", 0.04, 0, 1, 100, ""],
                            ["fc", "flexasr.linear", "1x16x64", 0.01, 3, 0, 64, "violated: data condition"]])]
    assert T.result("resnet20", pts, "host") == 1.0 and T.result("resnet20", pts, "acc") == 0.5
    rows = T.per_layer(pts)
    assert rows[0]["mean"] == pytest.approx(0.03) and rows[0]["max"] == pytest.approx(0.04)
    assert rows[0]["flushed"] == pytest.approx(2 / 200) and rows[0]["saturated"] == pytest.approx(1 / 200)
    assert rows[1]["refused"] == 1 and rows[1]["violated"] == 1 and rows[1]["mean"] == pytest.approx(0.01)
    text = [{"host": 2 * 35 * math.log(100), "acc": 2 * 35 * math.log(200), "tokens": 70, "layers": []}]
    assert T.result("lstm_wlm", text, "host") == pytest.approx(100) and T.result("lstm_wlm", text, "acc") == pytest.approx(200)
    assert T.fmt("lstm_wlm", 100.0).startswith("100.00") and T.fmt("resnet20", 0.5) == "50.00 %"


def test_nll_is_the_cross_entropy():
    z = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]))
    assert T._nll(z, [0, 1]) == pytest.approx(-math.log(0.5) - math.log(0.8))


def test_weight_report_quantises_the_trained_weights(tmp_path):
    """An 8-bit weight format (6 fraction bits) flushes |w| < 2**-7 to 0; 16 bits keep them."""
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((4, 2, 3, 3)) * 0.01).astype(np.float32)
    x = var("x", (1, 2, 8, 8))
    g = Graph([x], [call("nn.conv2d", x, const(w))])
    c = compile_graph(g, ("hlscnn.conv2d_w8",), matching="flexible", certify="sim",
                      ledger_path=with_rewrite_certificates(tmp_path / "l.json"))
    assert c.counts() == {"hlscnn.conv2d_w8": 1}
    (r,) = T.weight_report(c)
    want8 = np.mean(np.abs(w) < 2.0 ** -7)
    assert r["flushed8"] == pytest.approx(want8, abs=0.02) and r["flushed8"] > 0.2
    assert r["flushed16"] < 0.01 and r["error8"] > 10 * r["error16"]


def test_cli_rejects_bad_options(capsys):
    assert T.main(["--apps", "alexnet"]) == 2
    assert "alexnet" in capsys.readouterr().err
    assert T.main(["--apps", "resnet20", "--samples", "0"]) == 2
    assert T.main(["--samples", "resnet21=5"]) == 2 and "resnet21" in capsys.readouterr().err
    assert T._counts("resnet20=200,resmlp=4") == {"*": 1000, "resnet20": 200, "resmlp": 4}
    assert T._counts("50") == {"*": 50}


def test_campaign_keys_name_the_weights():
    """Results are reused only for the same weights: one changed parameter changes the digest."""
    import torch
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    d = T.weights_digest(m)
    assert d == T.weights_digest(m) and len(d) == 16
    with torch.no_grad():
        m[0].weight[1, 2] += 1e-6
    assert T.weights_digest(m) != d
    assert T.RESULTS.parent.name == "campaigns" and T.RESULTS.is_relative_to(T.ROOT)


def test_status_keeps_the_condition_name_only():
    long = "data condition 'AdaptivFloat range': max|x| of every input tensor must be 0 or within [2**-3, 2**5)"
    assert T._condition(long) == "data condition 'AdaptivFloat range'"
    assert T._condition("no data condition named") == "no data condition named"


def test_the_vta_column_and_report_come_from_the_vta_points():
    class _C:
        def counts(self):
            return {"vta.dense": 2}
    pts = [dict(_pt(0, 3, 3, 3, [["c1", "vta.dense", "1024x27x16", 0.01, 0, 0, 10, ""],
                                 ["fc", "vta.dense", "1x64x10", 0.03, 0, 0, 10, ""]]), seconds=2.0, host_seconds=0.01),
           dict(_pt(1, 4, 4, 5, [["c1", "vta.dense", "1024x27x16", 0.02, 0, 0, 10, ""],
                                 ["fc", "vta.dense", "1x64x10", 0.05, 0, 0, 10, ""]]), seconds=4.0, host_seconds=0.01)]
    rows = {("resnet20", "vta"): {"points": pts, "compiled": _C()}}
    cell = T._vta_cell("resnet20", rows)
    assert cell.startswith("50.00 % (2; host on them 100.00 %; 3.00 s, 300x)")
    assert T._vta_cell("resmlp", rows) == "–"
    text = "\n".join(T._vta_report("resnet20", rows[("resnet20", "vta")]))
    assert "| vta.dense | 1x64x10 | 1 | 4.00 / 5.00 |" in text and "| vta.dense | 1024x27x16 | 1 | 1.50 / 2.00 |" in text
    assert text.index("1x64x10") < text.index("1024x27x16")          # the worst layer first
    assert all(d[0] == "vta" and d[1] == ("vta",) for d in (T._design(a, "vta") for a in T.APPS))


def test_lstm_wlm_runs_at_the_papers_650_features_beside_the_256_feature_model():
    model, cfg = T.training_config("lstm_wlm_650")
    assert model == "lstm_wlm" and cfg.features == 650 and T.APPS["lstm_wlm_650"].text
    model, cfg = T.training_config("lstm_wlm", steps=5)
    assert model == "lstm_wlm" and cfg.features == 256 and cfg.max_steps == 5
