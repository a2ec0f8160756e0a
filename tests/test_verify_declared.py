"""Issue 26, items 5 and 6: BMC checks the declared refinement map (or says it does not), and the
all-sizes proof's counterexample search reaches the sizes where a size-dependent bug shows."""
import numpy as np
import pytest

from ila.verdict import Counterexample, Proved
from mappings.registry import get
from verify import chc, mutations, scope
from verify.bmc import check_bmc, claims_of


def test_bmc_without_a_declared_map_claims_only_the_loops_end_to_end():
    from mappings.flexasr import layer_reduce as maxpool
    ps = maxpool.proof_setup({"R": 2, "C": 16})             # the raw fragments: no declared map
    assert getattr(ps, "declared", None) is None and "model-loops" in ps.covers
    v = check_bmc(ps, scope="2x16")
    assert isinstance(v, Proved)
    assert "model-loops" not in v.covers and "loops-end-to-end" in v.covers
    assert "declared refinement map is not checked" in v.detail
    assert claims_of(ps) == ("codegen-bytes", "order", "loops-end-to-end", "read-back")
    assert scope.is_full(v.covers)                          # end to end through the read-back: the whole program


def test_bmc_with_the_declared_map_checks_it_and_claims_model_loops():
    m = get("flexasr.maxpool")
    ps = m.proof.bmc({"R": 4, "C": 16})
    assert len(ps.declared.inputs) == 64 and len(ps.declared.outputs) == 32
    v = check_bmc(ps, scope="4x16")
    assert isinstance(v, Proved) and "model-loops" in v.covers and "declared refinement map checked" in v.detail


def test_wrong_declared_map_is_refuted_by_bmc_and_replayed():
    """The program is right end to end (the plain miter proves it); the declaration is not."""
    m = get("flexasr.maxpool")
    with mutations.applied(mutations.get(m, "declared_map_stride")):
        ps = m.proof.bmc({"R": 32, "C": 16})
        from mappings.flexasr import layer_reduce as maxpool
        plain = check_bmc(maxpool.proof_setup({"R": 32, "C": 16}))
    assert isinstance(plain, Proved)
    v = mutations.check(m, {"R": 32, "C": 16}, "declared_map_stride", "bmc")
    assert isinstance(v, Counterexample) and v.replayed and v.trace["declared"] == "input"
    assert "declared refinement map violated" in v.detail
    assert ps.declared is not None


@pytest.mark.slow
def test_linear_declared_output_map_refuted():
    m = get("flexasr.linear")
    v = mutations.check(m, {"T": 1, "I": 16, "O": 64}, "declared_output_shift", "bmc")
    assert isinstance(v, Counterexample) and v.replayed and v.trace["declared"] == "output"


def test_countershapes_are_minimised_without_a_bound():
    """A clause failing only for V >= 250 (no small bound reaches it) gives the smallest such shape
    first, then each size as large as the side conditions allow with the other smallest."""
    m = get("flexasr.maxpool")
    with mutations.applied(mutations.get(m, "vector_count_near_max")):
        spec = m.proof.chc(None)
        failed = []
        status, _ = chc.check_invariants(spec, failed=failed, stop_on_failure=True)
        assert status.value == "fails" and failed[0].name == "flexasr: initiation"
        shapes = chc.countershapes(spec, failed)
    assert shapes[0] == {"R": 2, "C": 16 * 250}
    assert {"R": 2, "C": 16 * 255} in shapes                       # C as large as the 8-bit field allows
    assert any(s["R"] > 2 and s["C"] == 16 * 250 for s in shapes)   # R as large as the clause allows there


def test_countershapes_reach_the_largest_sizes_past_a_spurious_small_failure():
    """meanpool's inferred invariant fails its exit clause at small sizes too (where the program
    is right): the minimised shape is small, and the maximised ones reach the sizes where the bug
    shows (R up to 65534, C up to 4080)."""
    from verify.houdini import infer_invariants
    m = get("flexasr.meanpool")
    with mutations.applied(mutations.get(m, "timestep_count_near_max")):
        spec, _ = infer_invariants(m.proof.chc(None), timeout=30)
        failed = []
        status, _ = chc.check_invariants(spec, failed=failed, stop_on_failure=True)
        assert status.value == "fails"
        shapes = chc.countershapes(spec, failed)
    assert shapes[0]["R"] < 32768
    assert {"R": 65534, "C": 16} in shapes and {"R": 2, "C": 4080} in shapes


def test_the_counterexample_search_probes_the_end_of_each_axis():
    """Boundary probes: after the random inputs, one input per axis with data only in the last two
    positions along it; a program that ignores the last two timesteps is refuted by the probe of
    axis 0 and by no random input at R = 4096 (its error is below the tolerance there)."""
    m = get("flexasr.meanpool")
    shape = {"R": 4096, "C": 16}
    tried = list(chc._search_inputs(m, shape, np.random.default_rng(0), 2))
    assert [how for _, how in tried][:2] == ["random inputs"] * 2 and len(tried) == 4
    x1, x0 = tried[2][0]["x"], tried[3][0]["x"]
    assert np.any(x1[-2:]) and not np.any(x1[:-2]) and np.any(x0[:, -2:]) and not np.any(x0[:, :-2])
    R = shape["R"]

    def tail_dropped(inputs):       # the mean over the first R-2 timestep pairs' worth of rows
        x = np.asarray(inputs["x"], np.float64)
        return np.concatenate([x[:-2], np.zeros((2, x.shape[1]))]).reshape(R // 2, 2, -1).mean(axis=1)
    from mappings.base import frobenius_relative_error
    errs = [frobenius_relative_error(np.asarray(m.reference(shape, i), np.float64), tail_dropped(i))
            for i, _ in tried]
    tol = m.tolerance_at(shape)
    assert max(errs[:2]) <= tol < errs[2]


def test_all_sizes_refutes_a_field_wrong_only_near_the_largest_vector_count():
    m = get("flexasr.maxpool")
    v = mutations.check(m, None, "vector_count_near_max", "chc")
    assert isinstance(v, Counterexample) and v.replayed and v.trace["shape"] == {"R": 2, "C": 4000}


@pytest.mark.slow
def test_all_sizes_refutes_a_field_wrong_only_for_the_upper_half_of_the_timesteps():
    """num_timestep wrong only for R >= 32768: found at 32768x16 by simulation (the fragments are
    too large for BMC there), replayed in both ILA simulators; about 35 s."""
    m = get("flexasr.maxpool")
    v = mutations.check(m, None, "timestep_count_near_max", "chc")
    assert isinstance(v, Counterexample) and v.replayed
    assert v.trace["shape"] == {"R": 32768, "C": 16} and v.trace["found_by"] == "simulation"


@pytest.mark.slow
@pytest.mark.parametrize("bug, shape", [("timestep_count_near_max", {"R": 65534, "C": 16}),
                                        ("vector_count_near_max", {"R": 2, "C": 4080})])
def test_meanpool_all_sizes_refutes_the_fields_wrong_only_near_the_largest_sizes(bug, shape):
    """meanpool's inferred invariant also fails at small sizes, where the program is right; the
    search goes on to the largest sizes (the maximised counter-shapes) and finds the bug there by
    simulation, with a boundary probe where random data averages it away; about 35-100 s each."""
    m = get("flexasr.meanpool")
    v = mutations.check(m, None, bug, "chc")
    assert isinstance(v, Counterexample) and v.replayed
    assert v.trace["shape"] == shape and v.trace["found_by"] == "simulation"


@pytest.mark.slow
def test_all_sizes_refutes_a_wrong_declared_map():
    m = get("flexasr.maxpool")
    v = mutations.check(m, None, "declared_map_stride", "chc", timeout=120)
    assert isinstance(v, Counterexample) and v.replayed
