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
