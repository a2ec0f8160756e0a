"""python -m verify.ledger --recheck: anyone can write the ledger, so every verdict is re-run to be
believed. A hand-edited entry (a failed validation flipped to passed), a forged proof (with the
current digest from the public ``verify.ledger.digest``) and a forged refutation are each reported
(exit 1); genuine entries reproduce (exit 0); stale entries are counted, not re-run; the checker
named by an entry is imported only from the allowlist."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from mappings.registry import get
from verify import ledger
from verify.simval import run_sim

ROOT = pathlib.Path(__file__).resolve().parents[1]
W8 = get("hlscnn.conv2d_w8")
POOL = get("flexasr.maxpool")
FAILS_AT = "1x1x96x4x1x1"          # hlscnn.conv2d_w8's 8-bit weights exceed its tolerance here (paper_results/ledger.json)


def _recheck(path, *args):
    out = subprocess.run([sys.executable, "-m", "verify.ledger", "--recheck", "--path", str(path), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert "Traceback" not in out.stderr, out.stderr
    return out


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    """Entries recorded by the real checkers on today's sources: a failed validation of
    hlscnn.conv2d_w8, a passed one, a BMC proof, a CHC proof and a rewrite certificate."""
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    from verify.bmc import check_bmc
    from verify.chc import check_chc
    path = tmp_path_factory.mktemp("recheck") / "genuine.json"
    failed = ledger.record_validation(W8, run_sim(W8, shape=W8.parse_shape(FAILS_AT), samples=20, seed=0), path=path)
    assert failed["result"] == "failed"
    ledger.record_validation(POOL, run_sim(POOL, shape={"R": 4, "C": 16}, samples=5, seed=2), path=path)
    ledger.record(POOL, check_bmc(POOL.proof.bmc({"R": 2, "C": 16}, numerics="uf"), solver="z3", scope="2x16"),
                  scope="2x16", path=path)
    ledger.record(POOL, check_chc(POOL, {"R": 4, "C": 16}, solver="z3"), scope="4x16", path=path)
    record(certify(registry()["reshape_pair"], samples=3), path=path)
    entries = ledger.load(path)
    assert [e["result"] for e in entries] == ["failed", "passed", "proved", "proved", "proved"]
    return path, entries


def _write(path, entries):
    path.write_text(json.dumps(entries, indent=1))
    return path


def test_genuine_entries_reproduce(genuine):
    path, entries = genuine
    out = _recheck(path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("reproduces ") == len(entries) and "0 do not reproduce, 0 stale" in out.stdout


def test_a_hand_edited_and_forged_entries_are_reported(genuine, tmp_path):
    _, entries = genuine
    flipped = dict(entries[0], result="passed")                               # failed -> passed by hand
    forged_proof = {"mapping": "flexasr.maxpool", "digest": ledger.digest(POOL, "chc"), "method": "chc",
                    "checker": "verify.chc", "scope": "symbolic/inferred", "solver": "z3", "seconds": 3.0,
                    "result": "proved", "covers": ["model-loops"], "detail": "", "date": "2026-01-01 00:00:00"}
    no_setup = dict(forged_proof, mapping="hlscnn.conv2d", digest=ledger.digest(get("hlscnn.conv2d"), "chc"),
                    scope="16x16x16x16x3x1")                                 # hlscnn.conv2d has no CHC setup
    refutation = dict(entries[1], result="failed")                           # a forged refutation blocks an offload
    more_claims = dict(entries[2], covers=entries[2]["covers"] + ["numerics-exact"])
    path = _write(tmp_path / "forged.json", [flipped, forged_proof, no_setup, refutation, more_claims])
    out = _recheck(path, "--timeout", "2")
    assert out.returncode == 1, out.stdout + out.stderr
    bad = [ln for ln in out.stdout.splitlines() if "DOES NOT REPRODUCE" in ln]
    assert len(bad) == 5, out.stdout
    assert f"hlscnn.conv2d_w8 sim {FAILS_AT}" in bad[0] and "result: recorded passed, found failed" in bad[0]
    assert "flexasr.maxpool chc symbolic/inferred" in bad[1] and "recorded proved, found unknown" in bad[1]
    assert "no CHC setup" in bad[2]
    assert "result: recorded failed, found passed" in bad[3]
    assert "covers: recorded" in bad[4]
    assert "0 reproduce, 5 do not reproduce" in out.stdout


def test_edited_error_statistics_and_seed_are_reported(genuine, tmp_path):
    _, entries = genuine
    stats = dict(entries[0], mean_error=entries[0]["mean_error"] / 2)      # hlscnn.conv2d_w8: errors are not 0
    seeded = dict(entries[0], seed=entries[0]["seed"] + 1)
    out = _recheck(_write(tmp_path / "l.json", [stats]))
    assert out.returncode == 1 and "mean_error: recorded" in out.stdout
    out = _recheck(_write(tmp_path / "l.json", [seeded]))
    assert out.returncode == 1 and "mean_error: recorded" in out.stdout


def test_an_entry_without_a_seed_was_made_with_seed_0(genuine, tmp_path):
    _, entries = genuine
    old = {k: v for k, v in entries[0].items() if k != "seed"}
    assert entries[0]["seed"] == 0
    assert _recheck(_write(tmp_path / "l.json", [old])).returncode == 0


def test_stale_entries_are_counted_not_rerun(genuine, tmp_path):
    _, entries = genuine
    stale = dict(entries[0], result="passed", digest="0123456789abcdef")    # other sources: nothing trusts it
    out = _recheck(_write(tmp_path / "l.json", [stale, entries[2]]))
    assert out.returncode == 0, out.stdout
    assert "1 current, 1 stale" in out.stdout and "stale         hlscnn.conv2d_w8" in out.stdout
    assert "1 reproduce, 0 do not reproduce, 1 stale" in out.stdout


def test_sample_draws_among_current_entries_and_prints_its_seed(genuine, tmp_path):
    _, entries = genuine
    slow = dict(entries[3], seconds=1000.0)
    stale = dict(entries[1], digest="0" * 16)
    path = _write(tmp_path / "l.json", [entries[0], entries[1], entries[2], slow, stale])
    s = ledger.recheck(path, sample=2, seed=7, log=lambda line: None)
    assert (s["seed"], s["stale"], s["skipped_slow"], s["max_seconds"], len(s["rechecked"])) == (7, 1, 1, 60.0, 2)
    again = ledger.recheck(path, sample=2, seed=7, log=lambda line: None)
    assert [r["entry"] for r in again["rechecked"]] == [r["entry"] for r in s["rechecked"]]
    assert all(r["entry"]["seconds"] <= 60 and r["entry"]["digest"] != "0" * 16 for r in s["rechecked"])
    out = _recheck(path, "--sample", "9")
    assert out.returncode == 0 and "replay with --sample 9 --seed " in out.stdout
    assert out.stdout.count("reproduces ") == 3 and "1 stale" in out.stdout


def test_a_rewrite_certificate_is_rechecked_by_its_checker(genuine, tmp_path):
    _, entries = genuine
    rw = entries[4]
    assert rw["checker"] == "compile.rewrites.certify"
    assert ledger.recheck_entry(rw, timeout=60)["status"] == "reproduces"
    nope = dict(rw, mapping="rewrite.nope")
    nope["digest"] = ledger.current_digest(nope)
    r = ledger.recheck_entry(nope)
    assert r["status"] == "error" and "names no rewrite" in r["differences"][0]


def test_checkers_are_imported_from_the_allowlist_only(genuine, tmp_path, monkeypatch):
    _, entries = genuine
    (tmp_path / "evil_checker.py").write_text("open(__file__ + '.ran', 'w').close()\ndef recheck(e, **k): return e\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    forged = dict(entries[2], checker="evil_checker")
    r = ledger.recheck_entry(forged)
    assert r["status"] == "error" and "not one whose verdicts can be re-run" in r["differences"][0]
    assert not (tmp_path / "evil_checker.py.ran").exists()
    wrong = dict(entries[2], checker="verify.simval")                        # a bmc verdict is not simval's
    assert "not checked by" in ledger.recheck_entry(wrong)["differences"][0]


def test_bad_options_are_one_line(tmp_path):
    for args, says in ((["--sample", "0"], "--sample 0"), (["--max-seconds", "nan"], "--max-seconds nan")):
        out = _recheck(tmp_path / "none.json", *args)
        assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1, out.stderr
    out = subprocess.run([sys.executable, "-m", "verify.ledger", "--sample", "3"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 2 and "apply to --recheck only" in out.stderr


def test_recheck_sees_both_layers(genuine, tmp_path):
    _, entries = genuine
    base = _write(tmp_path / "base.json", [entries[0], dict(entries[1], result="failed")])
    env = {**os.environ, "D2A_LEDGER": str(tmp_path / "user.json"), "D2A_LEDGER_BASE": str(base)}
    _write(tmp_path / "user.json", [entries[1]])                              # the user's genuine entry hides the base one
    out = subprocess.run([sys.executable, "-m", "verify.ledger", "--recheck"], cwd=ROOT, capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[base]: failed" in out.stdout and "[user]: passed" in out.stdout
