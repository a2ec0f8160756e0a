"""FlexASR's runs of buffer stores and global-buffer loads applied at once
(``ila.models.flexasr.beats``) equal stepping the same commands on the ILA simulator: every state and
memory, the step count, the bytes read; the decode the fast paths assume (window addresses decode
the store or load, no configuration register or start trigger in a window) holds on the model; each
seeded bug is caught; where a fast path does not apply it changes nothing; whole programs give the
same reads and final state with and without the fast paths."""
import numpy as np
import pytest

from ila.commands import CommandTable
from ila.models.flexasr import beats, constants as C
from ila.models.flexasr import driver
from ila.sim import Simulator
from mappings import registry
from simstate import copy_of, same, snapshot


def _program(name="flexasr.linear", shape="4x32x64", seed=0):
    m = registry.get(name)
    s = m.parse_shape(shape)
    return m.program(s, m.random_inputs(s, np.random.default_rng(seed)))


def _sim():
    return Simulator(driver.runner().model)





def _stores(cmds) -> CommandTable:
    """The first run of buffer stores in ``cmds``."""
    addr = np.asarray(cmds.columns["addr_in"])
    hit = np.zeros(len(cmds), bool)
    for lo, last, _ in beats.STORE_WINDOWS:
        hit |= (addr >= lo) & (addr <= last) & (np.asarray(cmds.columns["if_axi_wr"]) == 1)
    i = int(np.argmax(hit))
    j = i + int(np.argmin(hit[i:])) if not hit[i:].all() else len(cmds)
    return cmds[i:j]


def _stored(cmds, bug=None):
    stepped, fast = _sim(), _sim()
    for c in cmds.rows():
        stepped.step(c)
    done = beats.store_writes(fast, cmds, bug=bug)
    return done, snapshot(stepped), snapshot(fast)


def test_stores_at_once_equal_stepping_them():
    cmds = _stores(_program().commands)
    done, stepped, fast = _stored(cmds)
    assert done == len(cmds) >= 32
    assert same(stepped, fast)
    assert any(isinstance(v, np.ndarray) and v.any() for v in stepped[0].values())


def _loads(addrs):
    """A simulator holding random global-buffer contents, and reads of ``addrs``."""
    sim = _sim()
    rng = np.random.default_rng(1)
    for lo, last, mem in beats.LOAD_WINDOWS:
        sim.state[mem][:] = rng.integers(0, 256, sim.state[mem].shape, dtype=np.uint8)
    n = len(addrs)
    return sim, CommandTable({"if_axi_wr": np.zeros(n, np.uint8), "if_axi_rd": np.ones(n, np.uint8),
                              "addr_in": np.asarray(addrs, np.int64)})


def _loaded(bug=None):
    addrs = [C.GB_LARGE_BASE + 16 * k for k in (5, 0, 9)] + [C.GB_SMALL_BASE + 3, C.GB_LARGE_LAST,
                                                           C.GB_SMALL_LAST]
    sim, cmds = _loads(addrs if bug is None else addrs[:4])   # (the seeded bug reads past the last beat)
    other = copy_of(sim)
    want = [np.asarray(v, np.uint8) for v in sim.run(cmds, observe=beats.READ_DATA)[1]]
    got = beats.load_reads(other, cmds, bug=bug)
    return want, got, snapshot(sim), snapshot(other)


def test_loads_at_once_equal_stepping_them():
    want, got, stepped, fast = _loaded()
    assert got is not None and len(got) == len(want) == 6
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert same(stepped, fast)


@pytest.mark.parametrize("bug", beats.BEAT_BUGS)
def test_each_seeded_fast_path_bug_is_caught(bug):
    if bug.startswith("store"):
        _, stepped, fast = _stored(_stores(_program().commands), bug=bug)
        assert not same(stepped, fast)
    else:
        want, got, _, _ = _loaded(bug=bug)
        assert not all(np.array_equal(a, b) for a, b in zip(want, got))


def test_the_windows_decode_as_the_fast_paths_assume():
    """A write at a store window's first and last address fires that window's store; a read in a
    load window its load; every configuration register and start trigger lies outside the windows."""
    for lo, last, mem in beats.STORE_WINDOWS:
        for a in (lo, last):
            sim = _sim()
            name = sim.step({"if_axi_wr": 1, "addr_in": a, **{f"data_in_{k}": k + 1 for k in range(16)}})
            assert "STORE" in name and sim.state[mem][a - lo:a - lo + 16].tolist() == list(range(1, 17)), (name, mem)
    for lo, last, mem in beats.LOAD_WINDOWS:
        assert "LOAD" in _sim().step({"if_axi_rd": 1, "addr_in": last})
    fixed = [v for k, v in vars(C).items() if (k.startswith("CFG_") or k.startswith("START_")) and isinstance(v, int)]
    fixed += [C.pe_base(p) + off for p in range(C.NUM_PE) for off in
              (C.PE_CFG_RNN_LAYER_SIZING, *C.PE_CFG_MEM_MNGR.values(), C.PE_CFG_ACT_MNGR, *C.PE_CFG_ACT_VECTOR.values())]
    assert len(fixed) >= 20
    for lo, last, _ in beats.STORE_WINDOWS + beats.LOAD_WINDOWS:
        assert not any(lo - 15 <= a <= last for a in fixed)


def test_where_a_fast_path_does_not_apply_it_changes_nothing():
    cmds = _stores(_program().commands)
    sim = _sim()
    before = snapshot(sim)
    cols = {k: np.array(v) for k, v in cmds.columns.items()}
    overlap = {**cols, "addr_in": cols["addr_in"].copy()}
    overlap["addr_in"][1] = overlap["addr_in"][0] + 4
    cfg = {**cols, "addr_in": cols["addr_in"].copy()}
    cfg["addr_in"][0] = C.CFG_GB_CONTROL
    wide = {**cols, "data_in_3": cols["data_in_3"].astype(np.int64) + 256}
    for case in (CommandTable(overlap), CommandTable(cfg), CommandTable(wide), cmds[:1], cmds.rows()):
        assert beats.store_writes(sim, case) == 0
        assert same(before, snapshot(sim))
    sim.state["gb_control_child_valid"] = 1                      # a child running
    assert beats.store_writes(sim, cmds) == 0 and beats.load_reads(sim, _loads([C.GB_SMALL_BASE])[1]) is None
    sim.state["gb_control_child_valid"] = 0
    _, reads = _loads([C.GB_SMALL_BASE, C.CFG_GB_CONTROL])       # not a load
    assert beats.load_reads(sim, reads) is None and beats.load_reads(sim, cmds) is None
    assert same(before, snapshot(sim))
    with pytest.raises(ValueError, match="unknown seeded bug"):
        beats.store_writes(sim, cmds, bug="nope")


@pytest.mark.parametrize("name, shape", [("flexasr.linear", "4x32x64"), ("flexasr.lstm", "2x16x64"),
                                         ("flexasr.maxpool", "4x64")])
def test_whole_programs_give_the_same_reads_and_state_with_and_without_the_fast_paths(monkeypatch, name, shape):
    prog = _program(name, shape)
    fast, slow = _sim(), _sim()
    got = driver.execute(fast, prog.commands, prog.hints.get("modes"))
    monkeypatch.setattr(beats, "store_writes", lambda sim, cmds, bug=None: 0)
    monkeypatch.setattr(beats, "load_reads", lambda sim, cmds, bug=None: None)
    want = driver.execute(slow, prog.commands, prog.hints.get("modes"))
    assert len(got) == len(want) > 0 and all(np.array_equal(a, b) for a, b in zip(got, want))
    assert same(snapshot(fast), snapshot(slow))
