"""A fourth accelerator declared outside the project (tests/toy_accel.py: ILA model, machine port,
mapping with code generator, proof setup and a seeded bug) compiles, is certified, emitted,
co-simulated and replayed with no edit of compile/: the compiler reads everything machine-specific
from the mapping and its machine port."""
import json

import numpy as np
import pytest

from compile.codegen import emit
from compile.compiler import compile_graph, default_targets
from compile.ir.graph import Graph, call, var
from compile.runtime.cosim import against_host
from mappings import registry


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry.MODULES, "toy.relu", "toy_accel")
    import toy_accel
    return toy_accel


def test_the_toy_accelerator_is_a_target_from_the_registry(toy):
    assert "toy" in default_targets()


def test_the_toy_mapping_is_proved_and_its_seeded_bug_refuted(toy):
    from verify import mutations
    from verify.bmc import check_bmc
    m = registry.get("toy.relu")
    assert check_bmc(m.proof.bmc({"n": 4}), solver="z3").kind == "proved"
    v = mutations.check(m, {"n": 4}, "address_off_by_one", "bmc", solver="z3")
    assert v.kind == "counterexample" and v.replayed


def test_compile_certify_emit_cosimulate_and_replay(toy, tmp_path):
    a = var("a", (2, 8), "int32")
    g = Graph([a], [call("nn.relu", a)])
    path = tmp_path / "l.json"
    res = compile_graph(g, ("toy",), ledger_path=path, certify="proof", budget=120)
    assert res.counts() == {"toy.relu": 1}, [d.describe() for d in res.refused]
    (off,) = res.offloads
    assert off.certificate["result"] == "proved" and off.shape == "16"
    x = np.random.default_rng(0).integers(-100, 100, (2, 8)).astype(np.int32)
    cos = against_host(res, {"a": x}, record=True)
    assert np.array_equal(cos["result"].outputs[0], np.maximum(x, 0)) and cos["error"] == 0.0
    (f,) = emit(res, {"a": x}, tmp_path / "frags", result=cos["result"])
    frag = json.loads(f.read_text())
    assert frag["machine"] == "toy" and frag["mapping"] == "toy.relu"
    replay = toy.PORT.run_fragment(frag)
    (rec,) = cos["result"].records
    from ila.models.port import read_hex
    assert replay["reads"] == [read_hex(r) for r in rec.reads]
