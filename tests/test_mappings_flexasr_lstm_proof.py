"""flexasr.lstm's proof against its declared numerics term (issue 26, items 1 and 4)."""
import warnings

import numpy as np
import pytest

from ila.verdict import Counterexample, Proved
from mappings.flexasr import lstm_proof as P
from mappings.registry import get
from verify import mutations
from verify.bmc import check_bmc


def test_lifted_images_equal_the_generator_on_concrete_codes():
    from ila.models.flexasr.programs import lstm_pe_images
    rng = np.random.default_rng(0)
    wi, wh, b = rng.integers(0, 256, (256, 32)), rng.integers(0, 256, (256, 64)), rng.integers(0, 256, 256)
    lifted = P.lifted_images(wi.astype(object), wh.astype(object), b.astype(object))
    for got, want in zip(lifted, lstm_pe_images(wi.astype(np.uint8), wh.astype(np.uint8), b.astype(np.uint8))):
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64))


def test_lifting_refuses_an_image_builder_that_computes_bytes(monkeypatch):
    from ila.models.flexasr import programs
    real = programs.lstm_pe_images
    monkeypatch.setattr(programs, "lstm_pe_images", lambda *a: [img ^ 1 for img in real(*a)])
    with pytest.raises(Exception, match="not a rearrangement"):
        P.lifted_images(np.zeros((256, 16), object), np.zeros((256, 64), object), np.zeros(256, object))


def test_the_program_depends_on_the_data_only_through_the_registers():
    from ila.models.flexasr.driver import lstm_parts
    rng = np.random.default_rng(3)
    progs = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = lstm_parts(rng.normal(size=(2, 16)).astype(np.float32), rng.normal(size=(256, 16)).astype(np.float32),
                              rng.normal(size=(256, 64)).astype(np.float32), rng.normal(size=256).astype(np.float32)).prog
        progs.append([{k: v for k, v in ins.items() if not k.startswith("adpbias")} for ins in prog])
    assert progs[0] == progs[1]
    assert [ins["name"] for ins in P.parts(2, 16, 64, P.Biases())] == [ins["name"] for ins in progs[0]]


@pytest.mark.slow
def test_proved_against_the_declared_term_with_both_parts_stated():
    """One timestep (about 1 min here); the recurrence is proved at the proof shape 2x16x64 by the
    campaign (benchmarks.proofs)."""
    v = check_bmc(P.proof_setup({"T": 1, "I": 16, "H": 64}), scope="1x16x64")
    assert isinstance(v, Proved) and "model-loops" in v.covers
    assert "equal to the declared numerics term" in v.detail and "Frobenius relative error" in v.detail


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(mutations.names(get("flexasr.lstm"))))
def test_every_seeded_bug_is_refuted(bug):
    v = mutations.check(get("flexasr.lstm"), {"T": 2, "I": 16, "H": 64}, bug, "bmc")
    assert isinstance(v, Counterexample) and v.replayed
