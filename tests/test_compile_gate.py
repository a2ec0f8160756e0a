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
    runs = []
    real = verify.simval.run_sim
    monkeypatch.setattr(verify.simval, "run_sim", lambda *a, **k: runs.append(a) or real(*a, **k))
    d = decide("flexasr.maxpool_chain", shape, certify="sim", path=path)
    assert not d.allowed and "refutation at 8x16x2" in d.reason and runs == []
    entries = json.loads(path.read_text())
    for e in entries:
        e["digest"] = "0" * 16          # the sources changed since: the refutation no longer stands
    path.write_text(json.dumps(entries))
    assert decide("flexasr.maxpool_chain", shape, certify="sim", path=path).allowed and len(runs) == 1
