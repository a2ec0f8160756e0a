"""Every command that reads the proof ledger, given a ledger that is not UTF-8, not JSON, or has an
entry with a missing or mistyped field: exactly one line ``error: ...`` on stderr naming the file
(and the entry), exit 2, no traceback, and the file left byte for byte as it was.

Commands that write a ledger check it before any work: benchmarks.proofs the ledger beside ``--out``,
benchmarks.regenerate the committed ``paper_results/ledger.json`` itself."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

_ENTRY = {"mapping": "flexasr.maxpool", "digest": "0123456789abcdef", "method": "bmc", "checker": "verify.bmc",
          "scope": "2x16", "solver": "z3", "seconds": 1.0, "result": "proved", "covers": [], "detail": "",
          "date": "2026-01-01 00:00:00"}
CORRUPT = {
    "not-utf8": (b'[{"mapping": "flexasr.maxpool \xff\xfe"}]\n', "not UTF-8"),
    "not-json": (b'[{"mapping": "flexasr.maxpool",\n', "corrupt"),
    "no-digest": (json.dumps([_ENTRY, {k: v for k, v in _ENTRY.items() if k != "digest"}]).encode(),
                  "entry [1] (mapping 'flexasr.maxpool') lacks the field 'digest'"),
    "seconds-x": (json.dumps([dict(_ENTRY, seconds="x")]).encode(), "entry [0] (mapping 'flexasr.maxpool') field 'seconds'"),
}

def _u(bad, tmp):          # the corrupt file is the user's ledger
    return {"D2A_LEDGER": str(bad), "D2A_LEDGER_BASE": ""}


def _b(bad, tmp):          # the corrupt file is the base layer under an empty user's ledger
    return {"D2A_LEDGER": str(tmp / "user.json"), "D2A_LEDGER_BASE": str(bad)}


# (id, argv (python -m ...), environment, seconds allowed, slow ("one": only the no-digest case is fast), xfail reason)
CLIS = [
    ("verify.ledger", lambda bad, tmp: ["verify.ledger"], _u, 60, False, None),
    ("verify.ledger-base", lambda bad, tmp: ["verify.ledger"], _b, 60, False, None),
    ("verify.ledger-path", lambda bad, tmp: ["verify.ledger", "--path", str(bad)], _b, 60, False, None),
    ("verify.ledger-recheck", lambda bad, tmp: ["verify.ledger", "--recheck", "--sample", "2"], _u, 60, False, None),
    ("verify.mapping", lambda bad, tmp: ["verify.mapping", "flexasr.maxpool", "--method", "sim", "--samples", "2",
                                         "--shape", "4x16"], _u, 120, "one", None),
    ("compile", lambda bad, tmp: ["compile", "resnet20", "--targets", "vta"], _u, 300, True, None),
    ("compile-base", lambda bad, tmp: ["compile", "resnet20", "--targets", "vta"], _b, 300, True, None),
    ("compile.rewrites", lambda bad, tmp: ["compile.rewrites", "add_bias", "--samples", "1"], _u, 300, True, None),
    ("benchmarks.figure7", lambda bad, tmp: ["benchmarks.figure7", "--side", "4", "--ledger", str(bad), "--out",
                                             str(tmp / "f7.md")], _b, 300, True, None),
    ("benchmarks.cosim", lambda bad, tmp: ["benchmarks.cosim", "--targets", "flexasr", "--images", "1", "--ledger",
                                           str(bad), "--out", str(tmp / "c.md")], _b, 300, True, None),
    ("benchmarks.table1", lambda bad, tmp: ["benchmarks.table1", "--quick", "--certify", "none", "--ledger", str(bad),
                                            "--out", str(tmp / "t1.md")], _b, 300, True, None),
    ("benchmarks.table4", lambda bad, tmp: ["benchmarks.table4", "--apps", "lstm_wlm", "--sentences", "1", "--guarded",
                                            "1", "--train-steps", "5", "--workers", "1", "--no-progress", "--ledger",
                                            str(bad), "--results", str(tmp / "t4.jsonl"), "--out",
                                            str(tmp / "t4.md")], _b, 300, True, None),
]


def _run(argv, env, cwd, seconds):
    """Run ``python -m argv`` in its own process group; on timeout kill the group (Dask workers too)."""
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=cwd, env={**os.environ, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {seconds} s: the ledger was not checked before the work began)"
    return proc.returncode, out, err


def _assert_one_line(code, err, says, bad):
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(bad) in lines[0] and says in lines[0], lines[0]


def _params():
    for name, argv, env, seconds, slow, reason in CLIS:
        for kind in CORRUPT:
            marks = ([pytest.mark.slow] if slow is True or (slow == "one" and kind != "no-digest") else []) + \
                    ([pytest.mark.xfail(strict=True, reason=reason)] if reason else [])
            yield pytest.param(argv, env, seconds, kind, id=f"{name}-{kind}", marks=marks)


@pytest.mark.parametrize("argv, env, seconds, kind", list(_params()))
def test_a_corrupt_ledger_is_one_line_and_exit_2(tmp_path, argv, env, seconds, kind):
    data, says = CORRUPT[kind]
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    code, _, err = _run(argv(bad, tmp_path), env(bad, tmp_path), ROOT, seconds)
    _assert_one_line(code, err, says, bad)
    assert bad.read_bytes() == data
    assert not (tmp_path / "user.json").exists()


@pytest.mark.slow
def test_proofs_with_a_corrupt_ledger(tmp_path):
    data, says = CORRUPT["no-digest"]
    bad = tmp_path / "ledger.json"                 # benchmarks.proofs writes the ledger beside --out
    bad.write_bytes(data)
    code, _, err = _run(["benchmarks.proofs", "--quick", "--no-mutations", "--no-progress", "--workers", "1",
                         "--results", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "proofs.md")],
                        {"D2A_LEDGER_BASE": ""}, ROOT, 90)
    assert bad.read_bytes() == data
    _assert_one_line(code, err, says, bad)


@pytest.mark.slow
def test_regenerate_with_a_corrupt_committed_ledger(tmp_path):
    tree = tmp_path / "tree"                       # a copy: regenerate writes paper_results/ of its own tree
    for pkg in ("ila", "mappings", "verify", "compile", "benchmarks"):
        shutil.copytree(ROOT / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    data, says = CORRUPT["no-digest"]
    bad = tree / "paper_results" / "ledger.json"
    bad.parent.mkdir()
    bad.write_bytes(data)
    code, _, err = _run(["benchmarks.regenerate", "--only", "figure7", "--no-progress"],
                        {"PYTHONPATH": str(tree), "D2A_LEDGER_BASE": ""}, tree, 300)
    assert bad.read_bytes() == data
    _assert_one_line(code, err, says, bad)
