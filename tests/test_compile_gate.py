"""The verified-only gate: no certificate, no offload; on-demand certification; stale entries
remove the offloads they enabled; --require proved."""
import json

import pytest

from compile.errors import CompileError
from compile.gate import decide

SHAPE = {"n": 32}


def test_empty_ledger_refuses_and_names_the_command(tmp_path):
    d = decide("vta.relu", SHAPE, path=tmp_path / "l.json")
    assert not d.allowed
    assert "python -m verify.mapping vta.relu --method bmc --shape 32" in d.reason


def test_certify_on_demand_then_stale_entry_removes_the_offload(tmp_path):
    path = tmp_path / "l.json"
    d = decide("vta.relu", SHAPE, certify="proof", path=path)
    assert d.allowed and d.certificate["result"] == "proved" and d.certificate["scope"].startswith("32")
    assert decide("vta.relu", SHAPE, require="proved", path=path).allowed
    entries = json.loads(path.read_text())
    for e in entries:
        e["digest"] = "0" * 16          # as if a file of its closure had changed since
    path.write_text(json.dumps(entries))
    assert not decide("vta.relu", SHAPE, path=path).allowed


def test_simulation_certificate_is_not_a_proof(tmp_path):
    path = tmp_path / "l.json"
    assert decide("vta.relu", SHAPE, certify="sim", path=path).allowed
    d = decide("vta.relu", SHAPE, require="proved", path=path)
    assert not d.allowed and "a proof" in d.reason


def test_bad_requests():
    with pytest.raises(CompileError, match="unknown"):
        decide("vta.nope", SHAPE)
    with pytest.raises(CompileError, match="require must be"):
        decide("vta.relu", SHAPE, require="maybe")
    d = decide("flexasr.maxpool", {"R": 3, "C": 64})
    assert not d.allowed and "side condition" in d.reason


def test_a_refutation_stands_and_is_not_re_run(tmp_path, monkeypatch):
    """A failed validation recorded for the current sources refuses the offload without running
    the (seeded, deterministic) check again; a stale one does not count. The failure is produced
    here by a seeded bug applied in memory (the sources, hence the digest, are unchanged)."""
    import verify.simval
    from mappings.registry import get
    from verify import mutations
    path = tmp_path / "l.json"
    shape = {"R": 8, "C": 16, "L": 2}
    with mutations.applied(mutations.get(get("flexasr.maxpool_chain"), "chain_readback_offset")):
        assert not decide("flexasr.maxpool_chain", shape, certify="sim", path=path).allowed
    monkeypatch.setattr(verify.simval, "run_sim", lambda *a, **k: pytest.fail("the refutation was re-run"))
    d = decide("flexasr.maxpool_chain", shape, certify="sim", path=path)
    assert not d.allowed and "refutation at 8x16x2" in d.reason
    monkeypatch.undo()
    entries = json.loads(path.read_text())
    for e in entries:
        e["digest"] = "0" * 16          # the sources changed since: the refutation no longer stands
    path.write_text(json.dumps(entries))
    assert decide("flexasr.maxpool_chain", shape, certify="sim", path=path).allowed    # validated again (a child process)
    assert [e["result"] for e in json.loads(path.read_text())][-1] == "passed"


def test_simulation_validation_abandoned_at_the_budget(tmp_path, monkeypatch):
    """A validation that outlasts the budget is abandoned (nothing recorded, the offload refused
    with the reason and the command), and not retried in this process with the same budget;
    errors of the validation reach the caller."""
    import time
    import verify.simval
    import compile.gate as gate
    monkeypatch.setattr(gate, "_ABANDONED", {})
    path = tmp_path / "l.json"
    monkeypatch.setattr(verify.simval, "run_sim", lambda *a, **k: time.sleep(30))
    t0 = time.perf_counter()
    d = decide("vta.relu", SHAPE, certify="sim", budget=0.5, path=path)
    assert time.perf_counter() - t0 < 10
    assert not d.allowed and "within its budget of 0.5 s" in d.reason and "--shape 32" in d.reason
    assert not path.exists() or json.loads(path.read_text()) == []
    t0 = time.perf_counter()
    assert not decide("vta.relu", SHAPE, certify="sim", budget=0.5, path=path).allowed
    assert time.perf_counter() - t0 < 0.4                                 # not retried

    def boom(*a, **k):
        raise CompileError("validation input rejected")
    monkeypatch.setattr(verify.simval, "run_sim", boom)
    with pytest.raises(CompileError, match="validation input rejected"):
        decide("vta.relu", {"n": 16}, certify="sim", path=path)
