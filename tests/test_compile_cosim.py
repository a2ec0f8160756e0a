"""Code generation and co-simulation of compiled programs: Figure 7 (a 2-D max-pool as four chained
FlexASR temporal pools, one store and one load on the chain mapping's certificate, bit-exact), the
gate on fusion (no, stale or failing chain certificate: no fusion), the per-invocation report, the
emitted fragments, refusals on data conditions, and the CLI's --emit/--cosim."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from compile.chains import chains
from compile.codegen import emit
from compile.compiler import compile_graph
from compile.errors import CompileError
from compile.ir.graph import Graph, call, const, var
from compile.runtime import run
from compile.runtime.cosim import cosimulate
from ila.numerics import adaptivfloat as af
from ledgers import with_rewrite_certificates

FIG7_RULES = ("maxpool_windows", "maxpool_halve", "pool_pad_columns")


def _pool_graph(side=32):
    x = var("x", (1, 1, side, side))
    return Graph([x], [call("nn.max_pool2d", x, pool_size=(4, 4), strides=(2, 2))], "fig7")


@pytest.fixture(scope="module")
def fig7_ledger(tmp_path_factory):
    """Certificates for the Figure 7 rewrites, the four FlexASR pool calls (15 x 15 windows of 16
    elements, padded to 240 columns) and the fused chain call (flexasr.maxpool_chain at 16x240x4),
    obtained on demand by a compilation."""
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    path = with_rewrite_certificates(tmp_path_factory.mktemp("ledger") / "l.json")
    for name in FIG7_RULES:
        cert = certify(registry()[name], samples=5)
        assert cert.result == "proved"
        record(cert, path=path)
    res = compile_graph(_pool_graph(), ("flexasr",), matching="flexible", ledger_path=path, certify="sim", budget=300)
    assert res.counts() == {"flexasr.maxpool": 4} and len(res.fused) == 1, [d.describe() for d in res.refused]
    return path


@pytest.fixture(scope="module")
def fig7(fig7_ledger):
    return compile_graph(_pool_graph(), ("flexasr",), matching="flexible", ledger_path=fig7_ledger)


def test_figure7_compiles_to_four_chained_temporal_pools(fig7):
    assert fig7.counts() == {"flexasr.maxpool": 4} and fig7.host_ops == 0
    shapes = [dict(s.shape) for s in fig7.program.calls()]
    assert shapes == [{"R": r, "C": 240} for r in (16, 8, 4, 2)]
    assert len(chains(fig7.program)) == 1 and len(chains(fig7.program)[0]) == 4
    ((chain, d),) = fig7.fused
    assert chain == chains(fig7.program)[0] and d.mapping == "flexasr.maxpool_chain" and d.shape == "16x240x4"
    assert fig7.transfers() == 2                   # one store, one load (Figure 7 (f)) instead of 8


def _without_chain_certificate(src, dst, how: str):
    entries = json.loads(src.read_text())
    for e in entries:
        if e["mapping"] == "flexasr.maxpool_chain":
            e["digest"] = "0" * 16                 # as if a file of its closure had changed since
    if how == "drop":
        entries = [e for e in entries if e["mapping"] != "flexasr.maxpool_chain"]
    dst.write_text(json.dumps(entries))
    return dst


@pytest.mark.parametrize("how", ["drop", "stale"])
def test_no_current_chain_certificate_no_fusion(fig7_ledger, tmp_path, how):
    """The single pools keep their certificates, but without a current certificate of the fused
    program the compiler runs the four calls one by one (8 transfers) and says why."""
    path = _without_chain_certificate(fig7_ledger, tmp_path / "l.json", how)
    res = compile_graph(_pool_graph(), ("flexasr",), matching="flexible", ledger_path=path)
    assert res.counts() == {"flexasr.maxpool": 4} and res.fused == [] and res.transfers() == 8
    (why,) = [d for d in res.refused if d.mapping == "flexasr.maxpool_chain"]
    assert why.shape == "16x240x4" and "no current certificate" in why.reason and "--certify sim" in why.reason
    rng = np.random.default_rng(4)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 32, 32)), 3).astype(np.float32)
    out = cosimulate(res, {"x": x})
    assert np.array_equal(out.outputs[0], run(res.graph, {"x": x})[0])
    assert [v.fused for v in out.invocations] == [0, 0, 0, 0]


def test_a_wrong_fused_program_fails_its_certificate_and_is_not_fused(fig7_ledger, tmp_path, monkeypatch):
    """Seeded bug in the fused program only (the chain reads its result back one timestep late):
    the single pools are unaffected, the chain mapping's simulation validation fails, so the gate
    refuses the fusion."""
    from verify import mutations
    from mappings.registry import get
    path = _without_chain_certificate(fig7_ledger, tmp_path / "l.json", "drop")
    bug = mutations.get(get("flexasr.maxpool_chain"), "chain_readback_offset")
    with mutations.applied(bug):
        res = compile_graph(_pool_graph(), ("flexasr",), matching="flexible", ledger_path=path, certify="sim")
    assert res.counts() == {"flexasr.maxpool": 4} and res.fused == []
    assert any(d.mapping == "flexasr.maxpool_chain" for d in res.refused)


def test_figure7_cosimulates_bit_exact(fig7):
    rng = np.random.default_rng(1)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 32, 32)), 3).astype(np.float32)
    res = cosimulate(fig7, {"x": x})
    want = run(fig7.graph, {"x": x})[0]
    assert np.array_equal(res.outputs[0], want)
    last = res.invocations[-1]
    assert last.fused == 4 and last.error == 0.0
    # an input that is not AdaptivFloat-representable: equal to the host pool of its quantisation
    y = rng.standard_normal((1, 1, 32, 32)).astype(np.float32)
    codes, bias = af.quantize(y)
    assert np.array_equal(cosimulate(fig7, {"x": y}).outputs[0],
                          run(fig7.graph, {"x": af.dequantize(codes, bias).astype(np.float32)})[0])


def test_cosimulation_without_the_host_pass_runs_the_same_calls(fig7):
    rng = np.random.default_rng(3)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 32, 32)), 4).astype(np.float32)
    a, b = cosimulate(fig7, {"x": x}), cosimulate(fig7, {"x": x}, host=False)
    assert np.array_equal(a.outputs[0], b.outputs[0]) and len(a.reference) == 1 and b.reference == []
    assert [(v.mapping, v.shape, repr(v.error)) for v in a.invocations] == \
        [(v.mapping, v.shape, repr(v.error)) for v in b.invocations]        # nan: a fused chain's inner steps


def test_unfused_cosimulation_agrees_and_chains_need_the_sole_user(fig7):
    rng = np.random.default_rng(2)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 32, 32)), 5).astype(np.float32)
    a, b = cosimulate(fig7, {"x": x}), cosimulate(fig7, {"x": x}, fuse=False)
    assert np.array_equal(a.outputs[0], b.outputs[0])
    assert [v.fused for v in b.invocations] == [0, 0, 0, 0]


def test_emitted_fragments(fig7, tmp_path):
    rng = np.random.default_rng(3)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 32, 32)), 2).astype(np.float32)
    files = emit(fig7, {"x": x}, tmp_path / "out")
    assert [f.name for f in files] == [f"{fig7.program.calls()[0].index:04d}_flexasr.maxpool_chain.json"]
    frag = json.loads(files[0].read_text())
    assert len(frag["fused_steps"]) == 4 and frag["certificate"]["result"] == "passed"
    assert frag["mapping"] == "flexasr.maxpool_chain" and frag["shape"] == "16x240x4" and frag["machine"] == "flexasr"
    assert "(pool_size (2 1))" in frag["subject"] and frag["subject"].count("nn.max_pool2d") == 4
    entries = frag["program fragment"]
    assert {e["mode"] for e in entries} <= {"W", "R", "Q"}
    stores = [e for e in entries if e["mode"] == "W" and len(e["data"]) == 34]
    reads = [e for e in entries if e["mode"] == "R"]
    assert len(reads) == 240 // 16                  # the last pool's single timestep, 15 vectors
    assert len(stores) >= 16 * 240 // 16            # the 16 x 240 input, stored once
    # the text is one entry per line, readable
    assert files[0].read_text().count("\n") > len(entries)


def test_cosimulation_report_and_data_condition_refusal(tmp_path):
    """A FlexASR linear layer whose weights are too small for the 3-bit exponent-bias register is
    refused at run time (it runs on the host and says why); a representable one runs."""
    rng = np.random.default_rng(0)
    path = tmp_path / "l.json"
    x = var("x", (4, 16))

    def net(scale):
        w = const((rng.standard_normal((64, 16)) * scale).astype(np.float32))
        return Graph([x], [call("nn.bias_add", call("nn.dense", x, w), const(np.full(64, 0.5, np.float32)))])
    inp = {"x": rng.standard_normal((4, 16)).astype(np.float32)}
    ok = compile_graph(net(1.0), ("flexasr.linear",), ledger_path=path, certify="sim", budget=300)
    assert ok.counts() == {"flexasr.linear": 1}
    r = cosimulate(ok, inp)
    (inv,) = r.invocations
    assert not inv.refused and 0 < inv.error < 0.05 and inv.size == 256
    assert inv.out_range[0] < 0 < inv.out_range[1]
    tiny = compile_graph(net(1e-3), ("flexasr.linear",), ledger_path=path)
    r = cosimulate(tiny, inp)
    assert "AdaptivFloat range" in r.invocations[0].refused
    assert np.allclose(r.outputs[0], run(tiny.graph, inp)[0])
    assert "refused" in r.report()
    # guard off (the design as it is, Table 4): the same call runs on the accelerator, flagged
    forced = cosimulate(tiny, inp, guard=False)
    (inv,) = forced.invocations
    assert not inv.refused and "AdaptivFloat range" in inv.violated and inv.error > 0
    assert not np.allclose(forced.outputs[0], r.outputs[0])
    assert "run despite" in forced.report()
    with pytest.raises(CompileError, match="missing input"):
        cosimulate(ok, {})


def _replayed_reads(path):
    """The reads of an emitted fragment replayed by its machine's fragment runner (a subprocess)."""
    frag = json.loads(path.read_text())
    mod = {"flexasr": "ila.models.flexasr.run", "hlscnn": "ila.models.hlscnn.run", "vta": "ila.models.vta.run"}
    args = [sys.executable, "-m", mod[frag["machine"]], str(path), "--json"]
    if frag["mapping"].endswith("_w8"):
        args.insert(3, "--weight-bits=8")
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["reads"]


@pytest.mark.parametrize("targets,graph", [
    ("flexasr", lambda rng: _pool_graph(16)),
    ("hlscnn", lambda rng: Graph([x := var("x", (1, 5, 7, 3))], [call(
        "nn.conv2d", x, const((rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32)), data_layout="NHWC",
        kernel_layout="OHWI")])),
    ("vta", lambda rng: Graph([x := var("x", (3, 40))], [call(
        "nn.relu", call("nn.dense", x, const(rng.standard_normal((20, 40)).astype(np.float32))))]))])
def test_emitted_fragments_replay_to_the_cosimulated_reads(tmp_path, targets, graph):
    """``--emit`` with ``--cosim``: one pass; each fragment replayed by its accelerator's fragment
    runner gives exactly the reads the co-simulation observed for that call."""
    from compile.interpret import Interpreter
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    from compile.runtime.cosim import against_host
    from ila.models.port import read_hex
    rng = np.random.default_rng(5)
    path = with_rewrite_certificates(tmp_path / "l.json")
    if targets == "flexasr":
        for name in FIG7_RULES:
            record(certify(registry()[name], samples=3), path=path)
    g = graph(rng)
    res = compile_graph(g, (targets,), matching="flexible", ledger_path=path, certify="sim", budget=300)
    assert res.program.calls(), [d.describe() for d in res.refused]
    xs = {v.name: af.dequantize(rng.integers(0, 256, v.shape), 3).astype(np.float32) for v in g.inputs}
    before = Interpreter.passes
    cos = against_host(res, xs, record=True)
    files = emit(res, xs, tmp_path / "frags", result=cos["result"])
    assert Interpreter.passes == before + 1                  # one evaluation of the model
    assert len(files) == len(cos["result"].records) >= 1
    for f, rec in zip(files, cos["result"].records):
        assert _replayed_reads(f) == [read_hex(r) for r in rec.reads], f.name


def test_cli_emit_and_cosim(tmp_path):
    env = {**os.environ, "D2A_LEDGER": str(tmp_path / "l.json")}
    out = subprocess.run([sys.executable, "-m", "compile", "resnet20", "--targets", "vta", "--cosim", "--json",
                          "--emit", str(tmp_path / "frags")], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["offloads"] == {} and obj["cosim"]["error"] == 0.0       # nothing certified: all on the host
    bad = subprocess.run([sys.executable, "-m", "compile", "resnet20", "--emit", "/proc/nope/x"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 2 and "--emit" in bad.stderr + bad.stdout
