"""HLSCNN's runs of SoC-memory writes and scratchpad reads applied at once
(``ila.models.hlscnn.beats``) equal stepping the same commands on the ILA simulator: every state and
memory, the step count, the bytes read; each seeded bug of a fast path is caught; where a fast path
does not apply it changes nothing; a whole convolution gives the same result with and without them."""
import numpy as np
import pytest

from ila.commands import CommandTable
from ila.models.hlscnn import beats, driver
from ila.models.hlscnn.model import SPAD0_BASE, build_hlscnn
from ila.models.hlscnn.port import PORT
from ila.sim import Simulator
from simstate import copy_of, same, snapshot


def _job(seed=0, C=9, O=10):
    rng = np.random.default_rng(seed)
    return driver.prepare_conv2d(rng.uniform(-1, 1, (1, 6, 5, C)), rng.uniform(-0.5, 0.5, (O, 3, 3, C)), padding=1)


def _sim():
    return Simulator(build_hlscnn(16))




def _soc_run(job):
    """The leading SoC-memory writes of the job's stream (activation and weight beats)."""
    return job.stream()[:job.pull[0] - 1]


def _written(cmds, bug=None):
    stepped, fast = _sim(), _sim()
    for c in (cmds.rows() if isinstance(cmds, CommandTable) else cmds):
        stepped.step(c)
    done = beats.soc_writes(fast, cmds, bug=bug)
    return done, snapshot(stepped), snapshot(fast)


@pytest.mark.parametrize("table", [True, False])
def test_soc_writes_at_once_equal_stepping_them(table):
    cmds = _soc_run(_job())
    cmds = cmds if table else cmds.rows()
    done, stepped, fast = _written(cmds)
    assert done == len(cmds) > 100
    assert same(stepped, fast) and stepped[0]["virtual_soc_memory"].any()


def test_soc_writes_stop_before_the_first_other_command():
    job = _job()
    whole = job.stream()
    sim = _sim()
    assert beats.soc_writes(sim, whole) == job.pull[0] - 1        # the SocMemRdWrLength write ends the run


def _reads_after(job, addrs=None):
    """A simulator that ran the job's writes (stepping path), and its read commands (a table)."""
    sim = _sim()
    sim.run(driver._as_table(job.commands))
    if addrs is None:
        return sim, driver._as_table(job.read_commands)
    n = len(addrs)
    return sim, CommandTable({"top_slave_if_wr": np.zeros(n, np.int64), "top_slave_if_rd": np.ones(n, np.int64),
                              "top_slave_addr_in": np.asarray(addrs, np.int64)})


def _read(job, addrs=None, bug=None):
    sim, reads = _reads_after(job, addrs)
    other = copy_of(sim)
    want = [np.asarray(v, np.uint8) for v in sim.run(reads, observe=driver.READ_DATA)[1]]
    got = beats.read_beats(other, reads, bug=bug)
    return want, got, snapshot(sim), snapshot(other)


@pytest.mark.parametrize("where", ["outputs", "both scratchpads"])
def test_reads_at_once_equal_stepping_them(where):
    job = _job()
    addrs = None
    if where == "both scratchpads":
        from ila.models.hlscnn.model import SLAVE_BASE
        addrs = SLAVE_BASE + SPAD0_BASE + 16 * np.array([3, 0, 7, 1, 2, 40, 5])
    want, got, stepped, fast = _read(job, addrs)
    assert got is not None and len(got) == len(want) >= 7
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert same(stepped, fast) and any(a.any() for a in want)


@pytest.mark.parametrize("bug", beats.BEAT_BUGS)
def test_each_seeded_fast_path_bug_is_caught(bug):
    job = _job()
    if bug.startswith("soc_write"):
        _, stepped, fast = _written(_soc_run(job), bug=bug)
        assert not same(stepped, fast)
    else:
        want, got, _, _ = _read(job, bug=bug)
        assert not all(np.array_equal(a, b) for a, b in zip(want, got))


def test_where_a_fast_path_does_not_apply_it_changes_nothing():
    job = _job()
    cmds = _soc_run(job).rows()
    sim = _sim()
    before = snapshot(sim)
    overlap = [dict(c) for c in cmds]
    overlap[1]["top_slave_addr_in"] = overlap[0]["top_slave_addr_in"] + 8      # beats 0 and 1 overlap
    wide = [dict(c) for c in cmds]
    wide[0]["top_slave_data_in_3"] = 256                                         # does not fit 8 bits
    cfg = job.commands[job.pull[0] - 1:]                                         # starts with a register write
    for case in (overlap, wide, cfg, cmds[:1], []):
        assert beats.soc_writes(sim, case) == 0
        assert same(before, snapshot(sim))
    sim.record_trace = True
    assert beats.soc_writes(sim, cmds) == 0
    sim.record_trace = False
    sim.state["accel_conv_child_valid"] = True                  # the convolution child running
    assert beats.soc_writes(sim, cmds) == 0 and beats.read_beats(sim, driver._as_table(job.read_commands)) is None
    sim.state["accel_conv_child_valid"] = False
    reads = driver._as_table(job.read_commands)
    for case in (job.read_commands, driver._as_table(job.commands[:4]), reads[:0]):   # dicts, writes, nothing
        assert beats.read_beats(sim, case) is None
        assert same(before, snapshot(sim))
    with pytest.raises(ValueError, match="unknown seeded bug"):
        beats.soc_writes(sim, cmds, bug="nope")


def test_a_convolution_gives_the_same_result_with_and_without_the_fast_paths(monkeypatch):
    job = _job(seed=3)
    fast = PORT.run(job.stream(), {"pull": job.pull})
    monkeypatch.setattr(beats, "soc_writes", lambda sim, cmds, bug=None: 0)
    monkeypatch.setattr(beats, "read_beats", lambda sim, cmds, bug=None: None)
    slow = PORT.run(job.stream(), {"pull": job.pull})
    assert len(fast) == len(slow) == len(job.read_commands)
    assert all(np.array_equal(a, b) for a, b in zip(fast, slow))
    assert np.array_equal(driver.readback(job, fast), driver.run_job(job)[0][0])
