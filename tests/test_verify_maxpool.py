"""The main job: flexasr.maxpool proved by BMC and CHC from the real models; seeded bugs refuted
with replayed counterexamples; timeouts are unknown; bad input gets clear errors."""
import pytest

from mappings.registry import get
from verify.bmc import check_bmc
from verify.chc import check_chc
from verify.mapping import main

M = get("flexasr.maxpool")


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_bmc_proves_small_shape(solver):
    assert check_bmc(M.extras["proof"]({"R": 2, "C": 16}), solver=solver).kind == "proved"


def test_bmc_exact_numerics_proves():
    v = check_bmc(M.extras["proof"]({"R": 4, "C": 16}, numerics="exact"), inline_ufs=True)
    assert v.kind == "proved"


def test_chc_proves_with_relational_invariants():
    v = check_chc(M, {"R": 4, "C": 32})
    assert v.kind == "proved", v
    assert "28 clauses" in v.detail or "clauses" in v.detail


@pytest.mark.parametrize("mutation", ["wrong_mode", "wrong_vector_count", "missing_lane", "wrong_in_place_target"])
def test_seeded_bugs_are_refuted_by_bmc_and_chc(mutation):
    shape = {"R": 4, "C": 32}
    vb = check_bmc(M.extras["proof"](shape, mutation=mutation))
    assert vb.kind == "counterexample" and vb.replayed
    assert vb.trace["ir_value"] != vb.trace["acc_value"]
    vc = check_chc(M, shape, mutation=mutation)
    assert vc.kind == "counterexample" and vc.replayed


def test_cli_exit_codes_and_errors(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("D2A_LEDGER", str(tmp_path / "ledger.json"))
    assert main(["flexasr.maxpool", "--method", "chc", "--shape", "2x16"]) == 0
    assert "PROVED" in capsys.readouterr().out
    assert main(["flexasr.maxpool", "--method", "bmc", "--timeout", "0.001"]) == 2
    assert "UNKNOWN" in capsys.readouterr().out
    assert main(["flexasr.maxpol", "--method", "bmc"]) == 2
    assert "did you mean flexasr.maxpool" in capsys.readouterr().err
    assert main(["flexasr.maxpool", "--method", "bmc", "--shape", "3x16"]) == 2
    assert "'R even'" in capsys.readouterr().err
    assert main(["flexasr.maxpool", "--method", "bmc", "--shape", "4x20"]) == 2
    assert "'C multiple of 16'" in capsys.readouterr().err
    from verify import ledger
    entries = ledger.load()
    assert any(e["method"] == "chc" and e["result"] == "proved" and e["scope"] == "2x16" for e in entries)
    assert ledger.certified("flexasr.maxpool")
