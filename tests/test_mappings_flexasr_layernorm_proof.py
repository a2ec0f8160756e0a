"""flexasr.layernorm's proof against its declared numerics term (issue 26, items 1 and 4)."""
import numpy as np
import pytest

from ila.verdict import Counterexample, Proved
from mappings.flexasr import layernorm_proof as P
from mappings.registry import get
from verify import mutations
from verify.bmc import check_bmc


def test_proved_against_the_declared_term_with_both_parts_stated():
    v = check_bmc(P.proof_setup({"T": 2, "H": 16}), scope="2x16")
    assert isinstance(v, Proved) and "model-loops" in v.covers
    assert "equal to the declared numerics term" in v.detail and "Frobenius relative error" in v.detail
    assert "declared refinement map checked" in v.detail


def test_the_program_depends_on_the_data_only_through_the_three_registers():
    from ila.models.flexasr.driver import layernorm_parts
    rng = np.random.default_rng(1)
    progs = []
    for _ in range(3):
        x, g, b = rng.normal(0, 0.5, (2, 32)).astype(np.float32), rng.normal(1, 0.1, 32).astype(np.float32), \
            rng.normal(0, 0.1, 32).astype(np.float32)
        prog = layernorm_parts(x, g, b).prog
        progs.append([{k: v for k, v in ins.items() if not k.startswith("adpbias")} for ins in prog])
    assert progs[0] == progs[1] == progs[2]
    assert [ins["name"] for ins in P.program(2, 32, P.Biases())] == [ins["name"] for ins in progs[0]]


def test_the_term_matches_the_simulator_on_concrete_codes():
    """The declared term, evaluated with the functions' numpy bodies, equals the emitted program run
    on the FlexASR simulator (as the proof says it must, for one interpretation)."""
    from ila.compile_np import compile_exprs
    from ila.models.flexasr import driver
    from ila.sorts import BvSort
    from ila.unroll import symbol
    T, H, bz = 2, 32, P.Biases()
    rng = np.random.default_rng(0)
    xq, gq, bq = rng.integers(0, 256, (T, H)), rng.integers(0, 256, H), rng.integers(0, 256, H)
    xs = np.array([symbol(f"tx{k}", BvSort(8)) for k in range(T * H)], dtype=object).reshape(T, H)
    gs = [symbol(f"tg{k}", BvSort(8)) for k in range(H)]
    bs = [symbol(f"tb{k}", BvSort(8)) for k in range(H)]
    fn = compile_exprs(list(P.numerics_term(xs, gs, bs, bz).ravel()), vectorize=False)
    env = {d.name: int(c) for d, c in zip(list(xs.ravel()) + gs + bs, list(xq.ravel()) + list(gq) + list(bq))}
    term = np.array([int(v) for v in fn(env, {})]).reshape(T, H)
    parts = driver.Parts(P.program(T, H, bz), {"x": xq.astype(np.uint8), "gamma": gq.astype(np.uint8),
                                               "beta": bq.astype(np.uint8)}, T, H // 16, bz.x, {})
    res = parts.run()
    assert np.array_equal(np.asarray(res.codes, dtype=np.int64).reshape(T, H), term)


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(mutations.names(get("flexasr.layernorm"))))
def test_every_seeded_bug_is_refuted(bug):
    v = mutations.check(get("flexasr.layernorm"), {"T": 2, "H": 32}, bug, "bmc")
    assert isinstance(v, Counterexample) and v.replayed
