"""Matching and extraction over egglog, behind the verified-only gate: exact vs flexible matching,
offloads only on certificates, stale certificates remove offloads, deep graphs, the CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from compile.compiler import compile_graph
from compile.errors import CompileError
from compile.ir.graph import Graph, call, const, var
from ledgers import with_rewrite_certificates


def _net():
    x = var("x", (4, 16))
    y = call("nn.bias_add", call("nn.dense", x, const(np.zeros((64, 16), np.float32))),
             const(np.zeros(64, np.float32)))
    k = var("k", (4, 16), "int32")                  # VTA's ALU is int32: only this relu may offload to it
    return Graph([x, k], [call("nn.dense", call("nn.relu", y), const(np.ones((64, 64), np.float32))),
                          call("nn.relu", k)])


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    """A ledger with the sim certificates and the one rewrite certificate this test needs
    (without vta.dense's: a bare float dense goes to FlexASR through dense_zero_bias, not to a tie
    between two accelerators; vta.dense has its own tests)."""
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    path = with_rewrite_certificates(tmp_path_factory.mktemp("ledger") / "l.json")
    compile_graph(_net(), ("flexasr.linear", "vta"), matching="exact", certify="sim", ledger_path=path)
    record(certify(registry()["dense_zero_bias"], samples=5), path=path)
    # the bare dense as the rewrite exposes it (a linear layer with a zero bias), certified on demand
    compile_graph(_net(), ("flexasr.linear",), matching="flexible", certify="sim", ledger_path=path)
    entries = [e for e in json.loads(path.read_text()) if not e["mapping"].startswith("vta.dense")]
    path.write_text(json.dumps(entries))
    return path


def test_empty_ledger_offloads_nothing(tmp_path):
    res = compile_graph(_net(), ("flexasr.linear", "vta"), matching="flexible", ledger_path=tmp_path / "none.json")
    assert res.counts() == {} and res.host_ops == 5
    assert set(res.rules_missing) >= {"dense_zero_bias"}
    assert any(d.mapping == "flexasr.linear" and "--certify sim" in d.describe() for d in res.refused)


def test_flexible_matching_finds_the_bare_dense(ledger):
    exact = compile_graph(_net(), ("flexasr.linear", "vta"), matching="exact", ledger_path=ledger)
    flex = compile_graph(_net(), ("flexasr.linear", "vta"), matching="flexible", ledger_path=ledger)
    assert exact.counts() == {"flexasr.linear": 1, "vta.relu": 1} and exact.host_ops == 2
    assert flex.counts() == {"flexasr.linear": 2, "vta.relu": 1} and flex.host_ops == 1   # the float relu
    relu = [o.node for o in flex.offloads if o.mapping == "vta.relu"]
    assert [n.dtype for n in relu] == ["int32"]
    via = [o.chain for o in flex.offloads if o.mapping == "flexasr.linear"]
    assert ("dense_zero_bias",) in via and all(o.certificate["result"] in ("proved", "passed") for o in flex.offloads)
    assert flex.stop_reason == "saturated" and flex.rules_used == {"dense_zero_bias": 2} and exact.stop_reason == "none"
    assert flex.egraph_size > exact.egraph_size and flex.terms >= exact.terms


def test_saturation_limits_are_reported(ledger):
    res = compile_graph(_net(), ("flexasr",), matching="flexible", ledger_path=ledger, max_iters=1)
    assert res.stop_reason == "iterations" and res.iterations == 1
    res = compile_graph(_net(), ("flexasr",), matching="flexible", ledger_path=ledger, max_terms=5)
    assert res.stop_reason == "e-nodes"


def test_a_stale_certificate_removes_exactly_its_offloads(ledger, tmp_path):
    entries = json.loads(ledger.read_text())
    for e in entries:
        if e["mapping"] == "vta.relu":
            e["digest"] = "0" * 16
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(entries))
    res = compile_graph(_net(), ("flexasr.linear", "vta"), matching="flexible", ledger_path=stale)
    assert res.counts() == {"flexasr.linear": 2}


def test_require_proved_keeps_only_proofs(ledger):
    res = compile_graph(_net(), ("flexasr.linear", "vta"), matching="flexible", require="proved", ledger_path=ledger)
    assert res.counts() == {}


def test_targets_and_options_are_checked():
    with pytest.raises(CompileError, match="unknown target"):
        compile_graph(_net(), ("tpu",))
    with pytest.raises(CompileError, match="matching must be"):
        compile_graph(_net(), ("vta",), matching="fuzzy")


def test_targets_select_mappings():
    """An accelerator selects all its mappings; a mapping name pins its accelerator to the named
    mappings (a design choice: HLSCNN's 8-bit-weight design)."""
    from compile.compiler import selected
    names = ["flexasr.linear", "flexasr.maxpool", "hlscnn.conv2d", "hlscnn.conv2d_w8", "vta.gemm"]
    assert selected(("flexasr", "hlscnn"), names) == {"flexasr.linear", "flexasr.maxpool", "hlscnn.conv2d",
                                                      "hlscnn.conv2d_w8"}
    assert selected(("flexasr", "hlscnn.conv2d_w8"), names) == {"flexasr.linear", "flexasr.maxpool", "hlscnn.conv2d_w8"}
    assert selected(("hlscnn", "hlscnn.conv2d"), names) == {"hlscnn.conv2d"}
    with pytest.raises(CompileError, match="hlscnn.conv2d_w4"):
        selected(("hlscnn.conv2d_w4",), names)


def test_deep_graph_compiles(ledger):
    x = var("x", (4, 16))
    v = x
    for _ in range(1500):
        v = call("nn.relu", v)
    res = compile_graph(Graph([x], [v]), ("vta",), matching="exact", ledger_path=ledger, certify="none")
    assert res.host_ops + sum(res.counts().values()) == 1500


@pytest.mark.slow
def test_cli(tmp_path):
    """The CLI on an application with a ledger of its own, empty (the module's ledger fixture costs a
    minute and this test needs none of its certificates): nothing is offloaded without a
    certificate, and each refusal says so."""
    env = {**os.environ, "D2A_LEDGER": str(tmp_path / "l.json")}
    r = subprocess.run([sys.executable, "-m", "compile", "benchmarks.applications:resnet20", "--json", "--targets", "vta"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ir_operators"] == 57 and out["offloads"] == {}
    assert out["refused"] and all("no current certificate" in why for why in out["refused"]), out["refused"]
    for argv, says in ((["resnet21"], "did you mean resnet20"), (["resnet20", "--targets", "tpu"], "unknown target"),
                       (["resnet20", "--time-limit", "0"], "--time-limit")):
        r = subprocess.run([sys.executable, "-m", "compile", *argv], capture_output=True, text=True, env=env)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
