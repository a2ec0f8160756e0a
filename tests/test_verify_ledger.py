"""verify.ledger: the digest covers the computed import closure of a verdict (editing any file of
it makes the entry stale, an unrelated file does not); writes are locked and atomic (concurrent
recorders lose nothing); a corrupt or empty ledger is a clear error, never replaced; an unknown
never replaces a proved entry."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ila.verdict import Proved, Unknown
from mappings.registry import get
from verify import ledger

ROOT = pathlib.Path(__file__).resolve().parents[1]
M = get("flexasr.maxpool")


def test_closure_covers_the_mapping_its_proof_modules_models_and_checker():
    files = {str(f.relative_to(ROOT)) for f in ledger.closure_files(M, "chc")}
    for must in ["mappings/flexasr/maxpool.py", "mappings/flexasr/layer_reduce_chc.py",   # named by a string ref
                 "ila/models/flexasr/layer_reduce.py", "ila/models/flexasr/isa.py", "ila/sim.py", "ila/expr.py",
                 "verify/chc.py", "verify/clauses.py", "verify/houdini.py", "mappings/base.py"]:
        assert must in files, must
    assert "benchmarks/table3.py" not in files and "ila/models/vta/model.py" not in files
    mean = {str(f.relative_to(ROOT)) for f in ledger.closure_files(get("flexasr.meanpool"), "bmc")}
    assert "mappings/flexasr/maxpool.py" in mean and "verify/bmc.py" in mean
    vta_add = {str(f.relative_to(ROOT)) for f in ledger.closure_files(get("vta.add"), "bmc")}
    assert {"mappings/vta/elementwise.py", "mappings/vta/common.py", "ila/models/vta/model.py"} <= vta_add


_PROBE = """
import sys
from mappings.registry import get
from verify import ledger
print(ledger.digest(get(sys.argv[1]), sys.argv[2]))
"""


def _digest_in(tree, name="flexasr.maxpool", method="chc"):
    out = subprocess.run([sys.executable, "-c", _PROBE, name, method], cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_editing_any_file_of_the_closure_makes_the_entry_stale(tmp_path):
    tree = tmp_path / "repo"
    for pkg in ("ila", "mappings", "verify", "compile", "benchmarks"):
        shutil.copytree(ROOT / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    base = _digest_in(tree)
    assert base == ledger.digest(M, "chc")
    for rel in ["mappings/flexasr/layer_reduce_chc.py", "ila/models/flexasr/layer_reduce.py", "ila/simplify.py",
                "verify/chc.py", "verify/houdini.py"]:
        f = tree / rel
        old = f.read_text()
        f.write_text(old + "\n# edited\n")
        assert _digest_in(tree) != base, rel
        f.write_text(old)
    for rel in ["benchmarks/table3.py", "ila/models/vta/model.py", "mappings/hlscnn/conv2d.py"]:
        f = tree / rel
        f.write_text(f.read_text() + "\n# edited\n")
        assert _digest_in(tree) == base, rel


def test_editing_a_closure_file_invalidates_certified(tmp_path, monkeypatch):
    path = tmp_path / "l.json"
    ledger.record(M, Proved("bmc", "z3", 1.0, "ok", scope="2x16"), scope="2x16", path=path)
    assert ledger.certified("flexasr.maxpool", path=path)
    monkeypatch.setattr(ledger, "digest", lambda m, method="bmc": "0" * 16)   # as if a file changed
    assert ledger.certified("flexasr.maxpool", path=path) == []


def test_entries_carry_scope_and_covers(tmp_path):
    path = tmp_path / "l.json"
    e = ledger.record(M, Proved("chc", "z3", 2.0, "ok", scope="16x64", covers=("codegen-bytes", "order")),
                      scope="16x64", path=path)
    assert e["covers"] == ["codegen-bytes", "order"] and e["checker"] == "verify.chc"
    assert ledger.certificates("flexasr.maxpool", "16x64", path=path)[0]["scope"] == "16x64"
    assert ledger.certificates("flexasr.maxpool", "4x16", path=path) == []


def test_unknown_never_replaces_proved(tmp_path):
    path = tmp_path / "l.json"
    ledger.record(M, Proved("bmc", "z3", 1.0, "ok", scope="2x16"), scope="2x16", path=path)
    kept = ledger.record(M, Unknown("bmc", "z3", 0.01, reason="timeout"), scope="2x16", path=path)
    assert kept["result"] == "proved"
    assert [e["result"] for e in ledger.load(path)] == ["proved"]


@pytest.mark.parametrize("text", ["", "   \n", "{not json", json.dumps({"a": 1}), json.dumps([1, 2])])
def test_corrupt_or_empty_ledger_is_a_clear_error_and_left_alone(tmp_path, text):
    path = tmp_path / "l.json"
    path.write_text(text)
    with pytest.raises(ledger.LedgerError, match=str(path)):
        ledger.load(path)
    with pytest.raises(ledger.LedgerError):
        ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope="2x16", path=path)
    assert path.read_text() == text


def test_location(monkeypatch, tmp_path):
    monkeypatch.delenv("D2A_LEDGER", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert ledger.ledger_path() == tmp_path / "d2a" / "ledger.json"
    monkeypatch.setenv("D2A_LEDGER", "")
    with pytest.raises(ledger.LedgerError, match="empty"):
        ledger.ledger_path()
    assert not (ROOT / "verify" / "ledger.json").exists(), "the ledger must not live inside the package"


_WRITER = """
import sys
from ila.verdict import Proved
from mappings.registry import get
from verify import ledger
m = get("flexasr.maxpool")
for k in range(5):
    ledger.record(m, Proved("bmc", "z3", 1.0, "ok"), scope=f"w{sys.argv[1]}-{k}", path=sys.argv[2])
"""


def test_concurrent_recorders_lose_nothing(tmp_path):
    path = tmp_path / "l.json"
    for k in range(6):                                   # existing entries
        ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope=f"old{k}", path=path)
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(i), str(path)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for i in range(6)]
    assert all(p.wait() == 0 for p in procs)
    scopes = {e["scope"] for e in ledger.load(path)}
    assert scopes == {f"old{k}" for k in range(6)} | {f"w{i}-{k}" for i in range(6) for k in range(5)}
