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
    assert "mappings/flexasr/layer_reduce.py" in mean and "verify/bmc.py" in mean
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
    monkeypatch.setattr(ledger, "digest", lambda m, method="bmc", checker=None: "0" * 16)   # as if a file changed
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


# ----------------------------------------------------------------------------- the two layers
def _entry(scope="2x16", result="proved", digest=None, **kw):
    return {"mapping": "flexasr.maxpool", "digest": digest or ledger.digest(M, "bmc"), "method": "bmc",
            "checker": "verify.bmc", "scope": scope, "solver": "z3", "seconds": 1.0, "result": result,
            "covers": [], "detail": "", "date": "2026-01-01 00:00:00", **kw}


@pytest.fixture
def layered(tmp_path, monkeypatch):
    """A user's ledger (not yet written) over a base layer holding two current proofs."""
    user, base = tmp_path / "user" / "l.json", tmp_path / "base.json"
    base.write_text(json.dumps([_entry("2x16"), _entry("4x16")]))
    monkeypatch.setenv("D2A_LEDGER", str(user))
    monkeypatch.setenv("D2A_LEDGER_BASE", str(base))
    return user, base


def test_readers_see_the_base_layer_under_the_users_ledger(layered):
    user, base = layered
    assert [e["scope"] for e in ledger.certified("flexasr.maxpool")] == ["2x16", "4x16"]
    assert ledger.certificates("flexasr.maxpool", "4x16")[0]["scope"] == "4x16"
    assert not user.exists()                                   # reading creates nothing
    # the user's entry of the same key and digest hides the base one (a refutation recorded by the user)
    ledger.record(M, Unknown("bmc", "z3", 1.0, reason="x"), scope="2x16")      # never over a proved (base) one
    assert not user.exists()
    ledger.store(_entry("2x16", result="counterexample"))
    assert ledger.refutations("flexasr.maxpool", "2x16") and [e["scope"] for e in ledger.certified("flexasr.maxpool")] == ["4x16"]
    assert [e["scope"] for e in ledger.load(user)] == ["2x16"]               # writes go to the user's file only
    assert [e["result"] for e in ledger.load(base)] == ["proved", "proved"]
    # an explicit path is one file, no base layer
    assert ledger.load(user) == [e for e in ledger.load() if e["scope"] == "2x16"]
    assert ledger.certified("flexasr.maxpool", path=user) == []


def test_a_stale_user_entry_does_not_hide_a_current_base_certificate(layered):
    user, _ = layered
    ledger.store(_entry("4x16", result="failed", digest="0" * 16))           # made from other sources
    assert [e["scope"] for e in ledger.certified("flexasr.maxpool")] == ["2x16", "4x16"]
    assert ledger.refutations("flexasr.maxpool", "4x16") == []


def test_where_the_base_layer_is(monkeypatch, tmp_path):
    monkeypatch.delenv("D2A_LEDGER_BASE")
    monkeypatch.setenv("D2A_LEDGER", str(tmp_path / "l.json"))
    assert ledger.base_path() == ROOT / "paper_results" / "ledger.json" == ledger.committed_path()
    assert ledger.base_path(tmp_path / "x.json") is None                      # explicit path: one file
    monkeypatch.setenv("D2A_LEDGER", str(ROOT / "paper_results" / "ledger.json"))
    assert ledger.base_path() is None                                         # the user's ledger is the committed one
    monkeypatch.setenv("D2A_LEDGER_BASE", "")
    monkeypatch.setenv("D2A_LEDGER", str(tmp_path / "l.json"))
    assert ledger.base_path() is None and ledger.layers() == [("user", tmp_path / "l.json")]
    monkeypatch.setenv("D2A_LEDGER_BASE", str(tmp_path / "nope.json"))
    with pytest.raises(ledger.LedgerError, match="D2A_LEDGER_BASE.*nope.json"):
        ledger.load()


def test_the_test_suite_never_touches_the_users_ledger():
    assert os.environ["D2A_LEDGER_BASE"] == ""
    assert pathlib.Path(os.environ["D2A_LEDGER"]) != ledger.default_path()
    assert not str(ledger.ledger_path()).startswith(str(ROOT))


# ----------------------------------------------------------------------------- every entry is checked
@pytest.mark.parametrize("edit, says", [
    (lambda e: e.pop("digest"), "lacks the field 'digest'"),
    (lambda e: e.update(seconds="x"), "field 'seconds' must be a finite number"),
    (lambda e: e.update(result="proven"), "field 'result' must be one of"),
    (lambda e: e.update(covers="order"), "field 'covers' must be a list of strings"),
    (lambda e: e.update(mapping=7), "field 'mapping' must be a non-empty string"),
    (lambda e: e.update(samples=2.5), "field 'samples' must be an integer"),
    (lambda e: e.update(seconds=True), "field 'seconds'"),
])
def test_an_entry_with_a_missing_or_mistyped_field_is_named(tmp_path, edit, says):
    path = tmp_path / "l.json"
    entries = [_entry("2x16"), _entry("4x16")]
    edit(entries[1])
    text = json.dumps(entries, indent=1)
    path.write_text(text)
    with pytest.raises(ledger.LedgerError) as err:
        ledger.load(path)
    msg = str(err.value)
    assert str(path) in msg and "entry [1]" in msg and says in msg and "\n" not in msg, msg
    with pytest.raises(ledger.LedgerError):                                   # nothing is written next to it
        ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope="8x16", path=path)
    assert path.read_text() == text


def test_a_ledger_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "l.json"
    path.write_bytes(b'[{"mapping": "\xff"}]')
    with pytest.raises(ledger.LedgerError, match=r"not UTF-8 text \(byte 0xff at offset 14\)"):
        ledger.load(path)
    assert path.read_bytes() == b'[{"mapping": "\xff"}]'


def test_a_corrupt_base_layer_is_named_too(layered):
    _, base = layered
    base.write_text("[{}]")
    with pytest.raises(ledger.LedgerError, match=f"{base}: entry \\[0\\] lacks the field 'mapping'"):
        ledger.certificates("flexasr.maxpool", "2x16")


def test_validations_record_their_seed(tmp_path):
    from verify.simval import run_sim
    e = ledger.record_validation(M, run_sim(M, shape={"R": 2, "C": 16}, samples=2, seed=3), path=tmp_path / "l.json")
    assert (e["seed"], e["samples"], e["scope"]) == (3, 2, "2x16")
    assert ledger.load(tmp_path / "l.json") == [e]


# ----------------------------------------------------------------------------- interrupted writes
_KILLED = """
import os, sys, time
from ila.verdict import Proved
from mappings.registry import get
from verify import ledger
def stall(src, dst):
    print("temporary file written", flush=True)
    time.sleep(600)
ledger.os.replace = stall
ledger.record(get("flexasr.maxpool"), Proved("bmc", "z3", 1.0, "ok"), scope="killed", path=sys.argv[1])
"""


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_write(tmp_path):
    path = tmp_path / "l.json"
    ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope="2x16", path=path)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == "temporary file written"
    finally:
        proc.kill()                                                            # SIGKILL mid-write
        proc.wait()
    left = ledger._tmp_files(path)
    assert len(left) == 1 and left[0].name.startswith("l.json.") and left[0].read_text().startswith("[")
    assert [e["scope"] for e in ledger.load(path)] == ["2x16"]                # the ledger is intact
    ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope="4x16", path=path)  # the lock was released by the kill
    assert ledger._tmp_files(path) == [] and [e["scope"] for e in ledger.load(path)] == ["2x16", "4x16"]
    other = tmp_path / "notes.json.12345678.tmp"                              # another file's: left alone
    other.write_text("x")
    ledger.record(M, Proved("bmc", "z3", 1.0, "ok"), scope="8x16", path=path)
    assert other.exists()


def test_the_compiler_offloads_on_the_base_layer_with_an_empty_users_ledger(tmp_path, monkeypatch):
    """A new user (no ledger of their own) compiles on the committed certificates: here a base layer
    holding a rewrite certificate and the two linear layers' call certificates, as
    paper_results/ledger.json does."""
    import numpy as np

    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    x = var("x", (4, 16))
    y = call("nn.bias_add", call("nn.dense", x, const(np.zeros((64, 16), np.float32))), const(np.zeros(64, np.float32)))
    g = Graph([x], [call("nn.dense", call("nn.relu", y), const(np.ones((64, 64), np.float32)))])
    base, user = tmp_path / "committed.json", tmp_path / "user" / "ledger.json"
    record(certify(registry()["dense_zero_bias"], samples=3), path=base)
    got = compile_graph(g, ("flexasr.linear",), matching="flexible", certify="sim", ledger_path=base, budget=300,
                        rewrites=("dense_zero_bias",))            # the base layer's one rewrite certificate
    assert got.counts() == {"flexasr.linear": 2}
    before = base.read_bytes()
    monkeypatch.setenv("D2A_LEDGER", str(user))
    monkeypatch.setenv("D2A_LEDGER_BASE", str(base))
    res = compile_graph(g, ("flexasr.linear",), matching="flexible")
    assert res.counts() == {"flexasr.linear": 2} and "dense_zero_bias" in res.rules_used
    assert not user.exists() and base.read_bytes() == before
    monkeypatch.setenv("D2A_LEDGER_BASE", "")                                  # without the base layer: nothing
    assert compile_graph(g, ("flexasr.linear",), matching="flexible").counts() == {}


def test_source_digests_follow_edits_within_one_process(tmp_path, monkeypatch):
    """The digest cache (keyed by the files' inode, size and times) sees a source edited in place
    to other bytes of the same size, as an editor saves it (a later modification time)."""
    monkeypatch.setattr(ledger, "ROOT", tmp_path)
    f = tmp_path / "m.py"
    f.write_text("x = 1\n")
    first = ledger._hash([f])
    assert ledger._hash([f]) == first
    st = f.stat()
    f.write_text("x = 2\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert ledger._hash([f]) != first


def test_a_ledger_file_rewritten_is_read_again(tmp_path):
    """The parse cache is keyed by the file's bytes: the same size and time, other entries."""
    p = tmp_path / "l.json"
    e = {"mapping": "flexasr.maxpool", "method": "bmc", "scope": "16x64", "digest": "a" * 16, "checker": "verify.bmc",
         "result": "proved", "seconds": 1.0, "covers": [], "date": ""}
    p.write_text(json.dumps([e]))
    assert ledger.load(p)[0]["digest"] == "a" * 16
    st = p.stat()
    p.write_text(json.dumps([dict(e, digest="b" * 16)]))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    got = ledger.load(p)
    assert got[0]["digest"] == "b" * 16
    got[0]["digest"] = "c" * 16                 # callers get their own dicts
    assert ledger.load(p)[0]["digest"] == "b" * 16
