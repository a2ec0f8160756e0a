"""The main job: flexasr.maxpool proved by BMC and CHC from the real models, over the exact MMIO
stream the code generator emits; seeded bugs in every layer of that path refuted with replayed
counterexamples; timeouts are unknown; bad input gets clear errors."""
import pytest

from ila.verdict import Counterexample, Proved
from mappings.registry import get
from verify import mutations, scope
from verify.bmc import check_bmc
from verify.chc import check_chc
from verify.mapping import main

M = get("flexasr.maxpool")


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_bmc_proves_small_shape(solver):
    v = check_bmc(M.proof.bmc({"R": 2, "C": 16}), solver=solver, scope="2x16")
    assert isinstance(v, Proved) and v.scope == "2x16"
    assert scope.is_full(v.covers) and "numerics-uf" in v.covers


def test_bmc_exact_numerics_proves():
    v = check_bmc(M.proof.bmc({"R": 4, "C": 16}, numerics="exact"), inline_ufs=True)
    assert v.kind == "proved" and "numerics-exact" in v.covers


def test_chc_proves_with_relational_invariants():
    v = check_chc(M, {"R": 4, "C": 32})
    assert isinstance(v, Proved), v
    assert v.scope == "4x32" and scope.is_full(v.covers)


def test_proof_fragment_is_the_emitted_stream_with_symbolic_bytes():
    """The accelerator side executes the generator's own MMIO stream: its store data are terms
    over the input symbols built by the real packer (not elements substituted afterwards), and
    it ends with the emitted read-back."""
    from ila.generic import is_symbolic
    ps = M.proof.bmc({"R": 2, "C": 16})
    cmds = ps.acc.commands
    stores = [c for c in cmds if any(is_symbolic(v) for k, v in c.items() if k.startswith("data_in"))]
    assert len(stores) == 2, "the 2x16 input is two 16-byte stores of terms over the input symbols"
    assert ps.readback is not None and ps.acc.port.is_read(cmds[-1])


# one bug per claim, refuted at a small shape by BMC and by CHC (the 16x64 and all-sizes table is
# benchmarks/mutation_maxpool.py and the slow test below)
@pytest.mark.parametrize("mutation", ["lane_order", "generator_address_permutation", "store_after_start",
                                      "wrong_mode", "wrong_readback_base", "model_address_permutation"])
def test_seeded_bugs_are_refuted_by_bmc_and_chc(mutation):
    shape = {"R": 4, "C": 32}
    vb = mutations.check(M, shape, mutation, "bmc")
    assert isinstance(vb, Counterexample) and vb.replayed
    assert vb.trace["ir_value"] != vb.trace["acc_value"]
    vc = mutations.check(M, shape, mutation, "chc")
    assert isinstance(vc, Counterexample) and vc.replayed, vc


def test_permuting_packer_fails_every_proof_method():
    """Must-show 3 of the soundness issue: if a proof setup substituted tensor elements into the
    emitted bytes, a packer that permutes lanes would go unnoticed."""
    shape = {"R": 2, "C": 16}
    for method in ("bmc", "chc"):
        v = mutations.check(M, shape, "lane_order", method)
        assert isinstance(v, Counterexample), (method, v)


@pytest.mark.slow
def test_the_all_sizes_proof_never_claims_the_bytes_a_permuting_packer_breaks():
    """The all-sizes proof claims the configuration fields and the model's loops for every size;
    the generator's bytes, the command order and the read-back it leaves to the fixed-shape proofs
    and their stream lemmas (``verify.scope``), and says so. A packer that reverses lanes is a
    codegen-bytes bug: the all-sizes verdict on it must not claim codegen-bytes (it is refuted, or
    proved without that claim, as the unmutated proof is); the fixed-shape proofs refute it
    (test_permuting_packer_fails_every_proof_method, and at 16x64 below)."""
    assert mutations.layers(M)["lane_order"] == "codegen-bytes"
    clean = mutations.check(M, None, None, "chc")
    assert isinstance(clean, Proved) and clean.scope == "symbolic", clean
    assert "codegen-bytes" not in clean.covers and not scope.is_full(clean.covers)
    assert "not covered for every size within the side conditions: codegen-bytes" in clean.detail
    v = mutations.check(M, None, "lane_order", "chc")
    if isinstance(v, Counterexample):
        assert v.replayed, v
    else:
        assert isinstance(v, Proved) and "codegen-bytes" not in v.covers, v
        assert set(v.covers) == set(clean.covers), (v.covers, clean.covers)


# as in the kill table (benchmarks.mutation_maxpool): the stride bugs are equivalent to the correct
# mapping while R <= 16, so they are checked at 32x64; a bug that shows only near the largest sizes
# is correct at 16x64, where the fixed-shape proofs rightly prove it whole (the all-sizes proof finds
# the sizes where it is wrong: tests/test_verify_declared.py)
STRIDE_BUGS = ("tiling_stride", "declared_map_stride")


@pytest.mark.slow
@pytest.mark.parametrize("mutation", sorted(mutations.names(M)))
def test_every_seeded_bug_is_refuted_at_16x64(mutation):
    from benchmarks.mutation_maxpool import SHOWS
    shape = {"R": 32 if mutation in STRIDE_BUGS else 16, "C": 64}
    shows = SHOWS.get(mutation, lambda s: True)(shape)
    for method in ("bmc", "chc"):
        v = mutations.check(M, shape, mutation, method)
        if shows:
            assert isinstance(v, Counterexample) and v.replayed, (method, v)
        else:
            assert isinstance(v, Proved) and scope.is_full(v.covers), (method, v)


def test_unknown_mutation_is_refused():
    from mappings.base import MappingError
    with pytest.raises(MappingError, match="unknown mutation 'nope'"):
        mutations.check(M, {"R": 2, "C": 16}, "nope")


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
