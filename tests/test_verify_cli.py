"""python -m verify.mapping and python -m verify.ledger given bad input of every kind: one clear
line, exit 2, no traceback; with --json the error is JSON; the verdict is printed before the ledger
is written, so a broken ledger cannot swallow it."""
import json
import os
import subprocess
import sys

import pytest

from verify.mapping import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def scratch_ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("D2A_LEDGER", str(tmp_path / "ledger.json"))


@pytest.mark.parametrize("argv, says", [
    (["flexasr.maxpool", "--method", "bmc", "--timeout", "nan"], "--timeout nan"),
    (["flexasr.maxpool", "--method", "bmc", "--timeout", "inf"], "--timeout inf"),
    (["flexasr.maxpool", "--method", "bmc", "--timeout", "0"], "--timeout 0"),
    (["flexasr.maxpool", "--method", "bmc", "--timeout", "-1"], "--timeout -1"),
    (["flexasr.maxpool", "--method", "chc", "--spacer", "-1"], "--spacer -1"),
    (["flexasr.maxpool", "--method", "sim", "--seed", "-1"], "--seed -1"),
    (["flexasr.maxpool", "--method", "sim", "--samples", "0"], "--samples 0"),
    (["flexasr.maxpool", "--method", "bmc", "--infer"], "--infer does not apply"),
    (["flexasr.maxpool", "--method", "bmc", "--spacer", "5"], "--spacer does not apply"),
    (["flexasr.maxpool", "--method", "fuzz", "--shape", "4x16"], "--shape does not apply"),
    (["flexasr.maxpool", "--method", "sim", "--timeout", "5"], "--timeout does not apply"),
    (["flexasr.maxpool", "--method", "bmc", "--shape", ""], "--shape ''"),
    (["flexasr.maxpool", "--method", "bmc", "--shape", "4by16"], "not of the form"),
    (["flexasr.maxpool", "--method", "bmc", "--shape", "3x16"], "'R even'"),
    (["flexasr.maxpol", "--method", "bmc"], "did you mean"),
    (["flexasr.maxpool", "--method", "bmc", "--emit-smt", "/nonexistent/dir/x"], "does not exist"),
    (["flexasr.maxpool", "--method", "bmc", "--emit-smt", __file__], "not a directory"),
    (["flexasr.maxpool", "--method", "bmc", "--shape", "symbolic"], "symbolic needs --method chc"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("error: ") and err.count("\n") == 1, err


def test_json_errors_are_json(capsys):
    assert main(["flexasr.maxpol", "--method", "bmc", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert "did you mean" in out["error"]


def test_corrupt_ledger_prints_the_verdict_then_the_error(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    monkeypatch.setenv("D2A_LEDGER", str(bad))
    assert main(["flexasr.maxpool", "--method", "bmc", "--shape", "2x16"]) == 2
    cap = capsys.readouterr()
    assert "PROVED" in cap.out and "corrupt" in cap.err and str(bad) in cap.err
    assert bad.read_text() == "{oops"
    monkeypatch.setenv("D2A_LEDGER", "")
    assert main(["flexasr.maxpool", "--method", "sim", "--samples", "2"]) == 2
    assert "D2A_LEDGER is set but empty" in capsys.readouterr().err


def test_a_model_error_inside_a_run_is_a_clear_refusal(monkeypatch, capsys):
    from ila.errors import SimulationError
    from mappings.registry import get
    m = get("flexasr.maxpool")

    def broken(shape, inputs):
        raise SimulationError("command 3: no instruction of 'flexasr' decodes {...}")
    import dataclasses
    monkeypatch.setattr("mappings.registry.get", lambda name: dataclasses.replace(m, run_accelerator=broken))
    assert main(["flexasr.maxpool", "--method", "sim", "--samples", "1"]) == 2
    assert "no instruction of 'flexasr' decodes" in capsys.readouterr().err


def test_sim_validations_are_recorded(tmp_path, monkeypatch, capsys):
    from verify import ledger
    assert main(["flexasr.maxpool", "--method", "sim", "--samples", "3", "--shape", "4x16"]) == 0
    e = ledger.load()[-1]
    assert (e["method"], e["scope"], e["result"], e["samples"]) == ("sim", "4x16", "passed", 3)
    assert ledger.certificates("flexasr.maxpool", "4x16")


def test_timeout_bounds_invariant_inference(capsys):
    import time
    t = time.perf_counter()
    code = main(["flexasr.meanpool", "--method", "chc", "--shape", "4x32", "--timeout", "0.5", "--no-ledger"])
    assert code == 2 and time.perf_counter() - t < 60
    assert "UNKNOWN" in capsys.readouterr().out


def test_ledger_cli_on_a_corrupt_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("")
    out = subprocess.run([sys.executable, "-m", "verify.ledger", "--path", str(bad)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "is empty" in out.stderr
