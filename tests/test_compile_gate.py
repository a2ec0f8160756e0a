"""The verified-only gate: no certificate about the call's own subject, no offload; on-demand
certification of the whole call; stale entries remove the offloads they enabled; --require proved;
a refutation stands; a certification abandoned at its budget."""
import json

import numpy as np
import pytest

from compile.call import at_match
from compile.errors import CompileError
from compile.gate import decide_call
from compile.ir.graph import call, var
from compile.patterns import mapping_patterns, match, variables
from mappings.registry import get


def _relu(n=32):
    pat = mapping_patterns(["vta.relu"])["vta.relu"]
    node = call("nn.relu", var("a", (n,), "int32"))
    return at_match(get("vta.relu"), node, match(pat, node), variables(pat))


def _pool(r, c, m=None):
    pat = mapping_patterns(["flexasr.maxpool"])["flexasr.maxpool"]
    node = call("nn.max_pool2d", var("x", (1, 1, r, c)), pool_size=(2, 1), strides=(2, 1))
    return at_match(m or get("flexasr.maxpool"), node, match(pat, node), variables(pat))


def test_empty_ledger_refuses_and_says_how_to_certify(tmp_path):
    d = decide_call(_relu(), path=tmp_path / "l.json")
    assert not d.allowed and "no current certificate" in d.reason and "--certify sim" in d.reason


def test_certify_on_demand_then_stale_entry_removes_the_offload(tmp_path):
    path = tmp_path / "l.json"
    c = _relu()
    d = decide_call(c, certify="proof", path=path, budget=120)
    assert d.allowed and d.certificate["result"] == "proved", d.certificate
    assert d.certificate["subject_digest"] == c.subject.digest and d.certificate["scope"] == "32"
    assert decide_call(c, require="proved", path=path).allowed
    assert not decide_call(_relu(48), path=path).allowed          # another subject: not covered
    entries = json.loads(path.read_text())
    for e in entries:
        e["digest"] = "0" * 16          # as if a file of its closure had changed since
    path.write_text(json.dumps(entries))
    assert not decide_call(c, path=path).allowed


def test_a_validation_is_not_a_proof(tmp_path):
    path = tmp_path / "l.json"
    assert decide_call(_relu(), certify="sim", path=path, budget=120).allowed
    d = decide_call(_relu(), require="proved", path=path)
    assert not d.allowed and "a proof of the whole call" in d.reason


def test_bad_requests():
    with pytest.raises(CompileError, match="require must be"):
        decide_call(_relu(), require="maybe")
    with pytest.raises(CompileError, match="budget"):
        decide_call(_relu(), budget=0)
    d = decide_call(_pool(3, 64))
    assert not d.allowed and "side condition" in d.reason


def test_a_refutation_stands_and_is_not_re_run(tmp_path, monkeypatch):
    """A failed call validation recorded for the current sources refuses the offload without
    running the (seeded, deterministic) check again; a stale one does not count. The failure comes
    from a seeded bug applied in memory (the sources, hence the digest, are unchanged)."""
    import compile.certify
    path = tmp_path / "l.json"
    m = get("flexasr.maxpool")

    def wrong(shape, inputs):                 # the read-back halves every value
        prog = m.program(shape, inputs)
        rb = prog.readback
        prog.readback = lambda reads: rb(reads) / 2
        return prog
    import dataclasses
    bad = dataclasses.replace(m, program=wrong)
    assert not decide_call(_pool(8, 16, bad), certify="sim", path=path, budget=120).allowed
    monkeypatch.setattr(compile.certify, "validate", lambda *a, **k: pytest.fail("the refutation was re-run"))
    d = decide_call(_pool(8, 16, bad), certify="sim", path=path, budget=120)
    assert not d.allowed and "current refutation" in d.reason
    monkeypatch.undo()
    entries = json.loads(path.read_text())
    for e in entries:
        e["digest"] = "0" * 16          # the sources changed since: the refutation no longer stands
    path.write_text(json.dumps(entries))
    assert decide_call(_pool(8, 16), certify="sim", path=path, budget=120).allowed    # the real mapping passes
    assert [e["result"] for e in json.loads(path.read_text())][-1] == "passed"


def test_certification_abandoned_at_the_budget(tmp_path, monkeypatch):
    """A certification that outlasts the budget is abandoned (nothing recorded, the offload refused
    with the reason), and not retried in this process with the same budget; errors of the
    certification reach the caller."""
    import time
    import compile.certify
    import compile.gate as gate
    monkeypatch.setattr(gate, "_ABANDONED_CALLS", {})
    path = tmp_path / "l.json"
    monkeypatch.setattr(compile.certify, "validate", lambda *a, **k: time.sleep(30))
    t0 = time.perf_counter()
    d = decide_call(_relu(), certify="sim", budget=0.5, path=path)
    assert time.perf_counter() - t0 < 10
    assert not d.allowed and "within its budget of 0.5 s" in d.reason
    assert not path.exists() or json.loads(path.read_text()) == []
    t0 = time.perf_counter()
    assert not decide_call(_relu(), certify="sim", budget=0.5, path=path).allowed
    assert time.perf_counter() - t0 < 0.4                                 # not retried

    def boom(*a, **k):
        raise CompileError("validation input rejected")
    monkeypatch.setattr(compile.certify, "validate", boom)
    with pytest.raises(CompileError, match="validation input rejected"):
        decide_call(_relu(16), certify="sim", path=path)


def test_operands_of_another_shape_are_refused_naming_the_call():
    c = _relu(32)
    with pytest.raises(CompileError, match=r"vta.relu at 32.*operand %0 has shape \(16,\)"):
        c.check_operands([np.zeros(16, np.int32)])
