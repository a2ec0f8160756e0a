"""Chain mappings (flexasr.maxpool_chain, flexasr.meanpool_chain): the fused program of L pools
(one store, L pools in place, one load) proved by BMC over the exact stream it emits, its own
seeded bugs refuted, equal to the unfused calls on data, and never matched by the compiler."""
import numpy as np
import pytest

from ila.verdict import Counterexample, Proved
from mappings.base import MappingError
from mappings.registry import get
from verify import mutations, scope
from verify.bmc import check_bmc

MAX, MEAN = get("flexasr.maxpool_chain"), get("flexasr.meanpool_chain")
SMALL = {"R": 8, "C": 16, "L": 2}


@pytest.mark.parametrize("m", [MAX, MEAN], ids=lambda m: m.name)
def test_bmc_proves_the_fused_stream(m):
    v = check_bmc(m.proof.bmc(SMALL), scope="8x16x2")
    assert isinstance(v, Proved), v
    assert scope.is_full(v.covers)


@pytest.mark.parametrize("bug", ["chain_short_pool", "chain_readback_offset", "chain_load_before_last_pool",
                                 "lane_order"])
def test_seeded_chain_bugs_are_refuted(bug):
    v = mutations.check(MAX, SMALL, bug, "bmc")
    assert isinstance(v, Counterexample) and v.replayed, v


def test_chain_bugs_leave_the_single_pool_proved():
    """The fused-program bugs live in ``pool_chain_program`` only: a single pool's proof is
    unaffected, so only the chain's certificate can catch them."""
    single = get("flexasr.maxpool")
    v = mutations.check(single, {"R": 4, "C": 16}, None, "bmc")
    assert isinstance(v, Proved)
    with mutations.applied(mutations.get(MAX, "chain_readback_offset")):
        assert isinstance(check_bmc(single.proof.bmc({"R": 4, "C": 16})), Proved)


def test_fused_run_equals_the_unfused_calls_on_representable_data():
    from ila.models.flexasr.driver import run_pool, run_pool_chain
    rng = np.random.default_rng(0)
    shape = {"R": 32, "C": 32, "L": 3}
    x = MAX.random_inputs(shape, rng)["x"]
    y = x
    for _ in range(3):
        y = run_pool(y, "max").out
    assert np.array_equal(run_pool_chain(x, 3, "max").out, y)
    assert np.array_equal(MAX.run_accelerator(shape, {"x": x}), MAX.reference(shape, {"x": x}))


def test_side_conditions_and_tolerance_by_length():
    with pytest.raises(MappingError, match="R divisible by 2"):
        MAX.check_shape({"R": 12, "C": 16, "L": 3})
    with pytest.raises(MappingError, match="L >= 2"):
        MAX.check_shape({"R": 16, "C": 16, "L": 1})
    with pytest.raises(MappingError, match="L <= 6"):
        MEAN.check_shape({"R": 128, "C": 16, "L": 7})
    assert MAX.tolerance_at({"R": 16, "C": 16, "L": 4}) == 0.0
    assert MEAN.tolerance_at({"R": 8, "C": 16, "L": 2}) < MEAN.tolerance_at({"R": 32, "C": 16, "L": 5})


def test_the_compiler_never_matches_a_chain_mapping():
    from compile.patterns import mapping_patterns
    pats = mapping_patterns()
    assert "flexasr.maxpool" in pats and not any(get(n).fuses for n in pats)
