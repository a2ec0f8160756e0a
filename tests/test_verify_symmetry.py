"""verify.symmetry: per-output BMC with one solver call per class of alpha-equivalent goals. The key
identifies goals exactly up to a bijective renaming of variables; the checker proves what
verify.bmc proves with fewer solver calls, refutes the seeded bugs, and its own seeded bug (the
symmetry assumed, not checked) turns a broken read-back into "proved" that the check refutes; the
ledger records its verdicts as BMC by checker verify.symmetry, with that checker in the digest."""
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ila.expr import bv_const
from ila.sorts import BvSort
from ila.unroll import symbol
from mappings.registry import get
from verify import ledger, mutations
from verify.symmetry import BUGS, alpha_key, check_bmc_symmetric

LINEAR = get("flexasr.linear")


def test_the_key_is_alpha_equivalence():
    x, y, z, u = (symbol(f"sym_{n}", BvSort(8)) for n in "xyzu")
    one, two = bv_const(1, 8), bv_const(2, 8)
    assert alpha_key([(x + y).eq(one)]) == alpha_key([(z + u).eq(one)])          # renamed
    assert alpha_key([(x + x).eq(one)]) != alpha_key([(x + y).eq(one)])          # one variable vs two
    assert alpha_key([(x + y).eq(one)]) != alpha_key([(x + y).eq(two)])          # another constant
    assert alpha_key([(x + y).eq(one)]) != alpha_key([(x - y).eq(one)])          # another operator
    assert alpha_key([(x - y).eq(one)]) == alpha_key([(y - x).eq(one)])          # x <-> y is a renaming
    assert alpha_key([(x - y).eq(one), x.eq(two)]) != alpha_key([(x - y).eq(one), y.eq(two)])
    assert alpha_key([(x + y).eq(one)], bug="unchecked") == alpha_key([(x - y).eq(two)], bug="unchecked")
    with pytest.raises(ValueError, match="nope"):
        alpha_key([x.eq(one)], bug="nope")
    assert BUGS == ("unchecked",)


def test_linear_is_proved_with_one_solver_call():
    v = check_bmc_symmetric(LINEAR.proof.bmc(LINEAR.proof.shape), scope="1x16x64", rewrite=False)
    assert v.kind == "proved", v
    assert "64 output cells equal for all data (1 solver calls" in v.detail
    assert "the other 63 goals are variable renamings" in v.detail
    assert set(v.covers) >= {"codegen-bytes", "order", "model-loops", "read-back", "numerics-uf"}


def _swapped_readback(ps):
    """A seeded read-back bug that leaves y[0, 0] right: outputs y[0, 1] and y[0, 2] swapped (the
    declared map dropped, so that only the output goals can see it)."""
    def swapped(reads, rb=ps.readback):
        flat = np.asarray(rb(reads), dtype=object).ravel().copy()
        flat[[1, 2]] = flat[[2, 1]]
        return flat
    return dataclasses.replace(ps, readback=swapped, declared=None)


def test_the_symmetry_check_alone_refutes_a_bug_the_unchecked_reduction_proves():
    bad = _swapped_readback(LINEAR.proof.bmc(LINEAR.proof.shape))
    v = check_bmc_symmetric(bad, falsify=False, rewrite=False)
    assert v.kind == "counterexample" and v.replayed, v
    assert check_bmc_symmetric(bad, falsify=False, bug="unchecked", rewrite=False).kind == "proved"
    # with rewriting, the right goals are discharged and the swapped ones still reach the solver
    v = check_bmc_symmetric(bad, falsify=False)
    assert v.kind == "counterexample" and v.replayed, v


@pytest.mark.slow
@pytest.mark.parametrize("name", ["flexasr.linear", "flexasr.linear_pad"])
def test_every_seeded_bug_is_refuted_by_the_solver(name):
    m = get(name)
    for mut in mutations.names(m):
        with mutations.applied(mutations.get(m, mut)):
            v = check_bmc_symmetric(m.proof.bmc(m.proof.shape), falsify=False, timeout=300)
        assert v.kind == "counterexample" and v.replayed, (mut, v)


def test_the_ledger_records_it_as_bmc_by_its_own_checker(tmp_path):
    from verify.ledger import ROOT
    files = {str(f.relative_to(ROOT)) for f in ledger.closure_files(LINEAR, "bmc", "verify.symmetry")}
    assert {"verify/symmetry.py", "verify/bmc.py", "mappings/flexasr/linear.py"} <= files
    assert "verify/symmetry.py" not in {str(f.relative_to(ROOT)) for f in ledger.closure_files(LINEAR, "bmc")}
    v = check_bmc_symmetric(LINEAR.proof.bmc(LINEAR.proof.shape), scope="1x16x64")
    path = tmp_path / "ledger.json"
    e = ledger.record(LINEAR, v, scope="1x16x64", path=path, checker="verify.symmetry")
    assert e["method"] == "bmc" and e["checker"] == "verify.symmetry"
    assert e["digest"] == ledger.digest(LINEAR, "bmc", "verify.symmetry") != ledger.digest(LINEAR, "bmc")
    assert ledger.current(ledger.load(path)) == [e]
    assert [x["scope"] for x in ledger.certified("flexasr.linear", path=path)] == ["1x16x64"]
    # an entry naming a checker that does not record its method is not current
    forged = dict(e, checker="verify.chc", digest=ledger.digest(LINEAR, "chc"))
    assert ledger.current([forged]) == []
    with pytest.raises(ledger.LedgerError, match="verify.chc"):
        ledger.record(LINEAR, v, scope="1x16x64", path=path, checker="verify.chc")
    found = ledger.recheck_entry(e)
    assert found["status"] == "reproduces", found
    assert "64 goals discharged by rewriting" in found["found"]["detail"]


def test_the_cli_records_symmetric_proofs_and_refuses_the_option_elsewhere(tmp_path):
    env_ledger = tmp_path / "user.json"
    env = {**os.environ, "D2A_LEDGER": str(env_ledger)}
    run = subprocess.run([sys.executable, "-m", "verify.mapping", "flexasr.linear", "--method", "bmc", "--symmetry",
                          "--shape", "1x16x64", "--json"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "64 goals discharged by rewriting" in json.loads(run.stdout)["detail"]
    assert json.loads(env_ledger.read_text())[0]["checker"] == "verify.symmetry"
    bad = subprocess.run([sys.executable, "-m", "verify.mapping", "flexasr.linear", "--method", "chc", "--symmetry"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "--symmetry does not apply to --method chc" in bad.stderr
