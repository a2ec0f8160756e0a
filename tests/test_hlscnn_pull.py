"""HLSCNN's weight pull applied at once (``ila.models.hlscnn.driver.pull_beats``) equals stepping
its commands on the ILA simulator: every state and memory, the step count; a seeded bug in the
fast path is caught; where it does not apply it changes nothing; a whole convolution gives the same
result either way."""
import numpy as np
import pytest

from ila.models.hlscnn import driver
from ila.models.hlscnn.model import build_hlscnn
from ila.sim import Simulator
from simstate import same, snapshot


def _job(seed=0, C=9, O=10, weight_bits=16):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (1, 6, 5, C))
    w = rng.uniform(-0.5, 0.5, (O, 3, 3, C))
    return driver.prepare_conv2d(x, w, padding=1, weight_bits=weight_bits)


def _before_pull(job):
    sim = Simulator(build_hlscnn(job.weight_bits))
    a, _ = job.pull
    sim.run(driver._as_table(job.commands[:a]))
    return sim




def _pulled(job, bug=None, table=False):
    """(state after stepping the pull, state after the fast path) from the same start."""
    a, b = job.pull
    cmds = job.commands[a:b]
    stepped, fast = _before_pull(job), _before_pull(job)
    for c in cmds:
        stepped.step(c)
    assert driver.pull_beats(fast, driver._as_table(cmds) if table else cmds, bug=bug)
    return snapshot(stepped), snapshot(fast)


@pytest.mark.parametrize("weight_bits", [16, 8])
@pytest.mark.parametrize("table", [False, True])
def test_the_pull_at_once_equals_stepping_it(weight_bits, table):
    job = _job(weight_bits=weight_bits)
    assert job.pull[1] - job.pull[0] >= 2 * 40                    # many beats
    stepped, fast = _pulled(job, table=table)
    assert same(stepped, fast)
    assert stepped[0]["scratch_pad_0"].any()                     # the weights did arrive


def test_the_seeded_pull_bug_is_caught():
    stepped, fast = _pulled(_job(), bug="pull_reads_next_beat")
    assert not same(stepped, fast)


def test_where_the_fast_path_does_not_apply_it_changes_nothing():
    job = _job()
    a, b = job.pull
    cmds = job.commands[a:b]
    sim = _before_pull(job)
    before = snapshot(sim)
    bad = [dict(c) for c in cmds]
    bad[3]["top_slave_addr_in"] = bad[1]["top_slave_addr_in"]     # two beats into the same scratchpad bytes
    other = [dict(c) for c in cmds]
    other[0]["top_slave_addr_in"] += 4                            # another configuration register
    for case in (cmds[:-1], bad, other, []):
        assert not driver.pull_beats(sim, case)
        assert same(before, snapshot(sim))
    sim.record_trace = True
    assert not driver.pull_beats(sim, cmds)
    with pytest.raises(ValueError, match="unknown seeded bug"):
        driver.pull_beats(sim, cmds, bug="nope")


def test_a_convolution_gives_the_same_result_with_and_without_the_fast_path(monkeypatch):
    job = _job(seed=3)
    fast, _ = driver.run_job(job)
    monkeypatch.setattr(driver, "pull_beats", lambda sim, cmds, bug=None: False)
    stepped, _ = driver.run_job(job)
    assert np.array_equal(fast, stepped)
