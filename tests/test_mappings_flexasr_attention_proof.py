"""flexasr.attention's proof against its declared numerics term (issue 26, items 1 and 4)."""
import warnings

import numpy as np
import pytest

from ila.verdict import Counterexample, Proved
from mappings.flexasr import attention_proof as P
from mappings.registry import get
from verify import mutations
from verify.bmc import check_bmc


def test_proved_against_the_declared_term_with_both_parts_stated():
    v = check_bmc(P.proof_setup({"T": 4, "H": 16}), scope="4x16")
    assert isinstance(v, Proved) and "model-loops" in v.covers
    assert "equal to the declared numerics term" in v.detail and "Frobenius relative error" in v.detail


def test_the_program_depends_on_the_data_only_through_the_registers():
    from ila.models.flexasr.driver import attention_parts
    rng = np.random.default_rng(2)
    progs = []
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = attention_parts(rng.normal(size=(20, 32)).astype(np.float32),
                                   rng.normal(size=32).astype(np.float32)).prog
        progs.append([{k: v for k, v in ins.items() if not k.startswith("adpbias")} for ins in prog])
    assert progs[0] == progs[1] == progs[2]
    prog, lib = P.parts(20, 32, P.Biases())
    assert [ins["name"] for ins in prog] == [ins["name"] for ins in progs[0]] and lib["enc"].shape == (32, 32)


def test_the_term_matches_the_simulator_on_concrete_codes():
    from ila.compile_np import compile_exprs
    from ila.models.flexasr import driver
    from mappings.base import symbolic_data
    T, H, bz = 20, 32, P.Biases()
    prog, lib = P.parts(T, H, bz)
    rng = np.random.default_rng(0)
    enc = np.array(lib["enc"])
    enc[:T] = rng.integers(0, 256, (T, H))
    dec = rng.integers(0, 256, H).astype(np.uint8)
    es = np.array(symbolic_data(enc.size, 8, "te"), dtype=object).reshape(enc.shape)
    ds = symbolic_data(H, 8, "td")
    fn = compile_exprs(list(P.numerics_term(es, ds, bz)), vectorize=False)
    env = {d.name: int(c) for d, c in zip(list(es.ravel()) + ds, list(enc.ravel()) + list(dec))}
    term = np.array([int(v) for v in fn(env, {})])
    program, reads = driver.runner().run(prog, {"enc": enc.astype(np.uint8), "dec": dec})
    assert np.array_equal(np.concatenate(reads[:H // 16]).astype(np.int64), term)


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(mutations.names(get("flexasr.attention"))))
def test_every_seeded_bug_is_refuted(bug):
    v = mutations.check(get("flexasr.attention"), {"T": 20, "H": 32}, bug, "bmc")
    assert isinstance(v, Counterexample) and v.replayed
