"""Command tables (ila.commands.CommandTable), batched reads with observed states, and the FlexASR
driver's direct tensor-assembly -> MMIO path (isa.mmio_table) against the program-fragment path."""
import numpy as np
import pytest

from ila.commands import CommandTable
from ila.errors import SimulationError
from ila.sim import Simulator


def _flexasr():
    from ila.models.flexasr import shared_model
    return shared_model()


def _linear(rng, T=3, I=64, O=128, bias=True):
    from ila.models.flexasr.driver import linear_program
    xq, wq = rng.integers(0, 256, (T, I)).astype(np.uint8), rng.integers(0, 256, (O, I)).astype(np.uint8)
    bq = rng.integers(0, 256, O).astype(np.uint8) if bias else None
    return linear_program(xq, wq, bq, bx=2, bw=1, bb=3, out_bias=2)


def _programs(rng):
    """Tensor-assembly programs of every FlexASR driver operation kind."""
    from ila.models.flexasr import driver
    from ila.models.flexasr.programs import lstm_pe_images
    x = rng.integers(0, 256, (4, 32)).astype(np.uint8)
    yield _linear(rng)
    yield _linear(rng, T=1, I=16, O=64, bias=False)
    yield driver.pool_program(4, 2, "max"), {"x": x}
    yield driver.pool_chain_program(8, 2, 2, "mean"), {"x": rng.integers(0, 256, (8, 32)).astype(np.uint8)}
    imgs = lstm_pe_images(*(rng.integers(0, 256, s).astype(np.uint8) for s in ((256, 64), (256, 64), (256,))))
    lib = {"x": rng.integers(0, 256, (2, 64)).astype(np.uint8)} | {f"w{p}": imgs[p] for p in range(4)}
    prog = [{"name": "store_pe", "pe": p, "tensor": f"w{p}"} for p in range(4)]
    prog += [{"name": "store_act", "tensor": "x", "base": 0},
             {"name": "lstm_layer", "num_ts": 2, "num_v_in": 4, "num_v_out": 4, "is_bias": 1, "adpbias_wgt_i": 1,
              "adpbias_wgt_h": 2, "adpbias_inp": 3, "adpbias_bias": 4, "adpbias_out": 1, "base_in": 0,
              "base_out": 0x800},
             {"name": "load_act", "num_ts": 2, "num_v": 4, "base": 0x800},
             {"name": "store_small", "tensor": "s", "base": 4}, {"name": "load_small", "base": 4, "num_bytes": 32}]
    yield prog, lib | {"s": rng.integers(0, 256, 32).astype(np.uint8)}


def test_mmio_table_equals_the_fragment_path_command_for_command():
    from ila.models.flexasr.isa import assemble, mmio_table
    rng = np.random.default_rng(1)
    for prog, lib in _programs(rng):
        _, cmds = assemble(prog, lib)
        table, modes = mmio_table(prog, lib)
        assert len(table) == len(cmds) == len(modes)
        for k, (c, row, mode) in enumerate(zip(cmds, table.rows(), modes)):
            if c.get("wait_irq"):
                assert mode == "Q" and not any(row.values()), k
                continue
            full = {"if_axi_wr": 0, "if_axi_rd": 0, "addr_in": 0} | {f"data_in_{j}": 0 for j in range(16)} | c
            assert row == full, k
            assert mode == ("W" if c["if_axi_wr"] else "R"), k


def _equal_to_fragment_path(prog, lib) -> bool:
    from ila.models.flexasr.isa import assemble, mmio_table
    _, cmds = assemble(prog, lib)
    table, _ = mmio_table(prog, lib)
    full = [{"if_axi_wr": 0, "if_axi_rd": 0, "addr_in": 0} | {f"data_in_{j}": 0 for j in range(16)}
            | ({} if c.get("wait_irq") else c) for c in cmds]
    return len(table) == len(cmds) and list(table.rows()) == full


def test_configuration_memo_repeats_the_fragment_path_and_its_seeded_bug_is_caught(monkeypatch):
    """The configuration rows are memoised per instruction (isa._config_rows): the same program
    twice, then the same layer with other configuration fields, each equal to the fragment path;
    the seeded bug (a key without the fields) returns the first layer's words for the second."""
    from ila.models.flexasr import driver, isa
    rng = np.random.default_rng(7)
    a = driver.pool_program(4, 2, "max"), {"x": rng.integers(0, 256, (4, 32)).astype(np.uint8)}
    b = driver.pool_program(8, 2, "max"), {"x": rng.integers(0, 256, (8, 32)).astype(np.uint8)}
    monkeypatch.setattr(isa, "_CONFIG_ROWS", {})
    for prog, lib in (a, a, b):
        assert _equal_to_fragment_path(prog, lib)
    assert isa._CONFIG_ROWS                                   # the memo was used
    monkeypatch.setattr(isa, "_CONFIG_ROWS", {})
    monkeypatch.setattr(isa, "_config_bug", "key_without_fields")
    assert _equal_to_fragment_path(*a)
    assert not _equal_to_fragment_path(*b)


def test_configuration_memo_follows_seeded_bugs_applied_in_the_same_process(monkeypatch):
    """A seeded bug replaces a function or table entry of the fragment path in place
    (verify.mutations.applied); the memo must answer with the patched path while it is applied and
    with the original one after (a memo keyed by the fields alone returned one mutant's words for
    another mutant, and a counterexample at the wrong shape)."""
    from ila.models.flexasr import driver, isa
    from verify import mutations
    monkeypatch.setattr(isa, "_CONFIG_ROWS", {})
    rng = np.random.default_rng(9)
    prog, lib = driver.pool_program(4, 2, "max"), {"x": rng.integers(0, 256, (4, 32)).astype(np.uint8)}
    table = mutations._table("flexasr.maxpool")
    plain, _ = isa.mmio_table(prog, lib)
    for name in ("timestep_off_by_one", "wrong_mode", "wrong_vector_count", "timestep_count_near_max"):
        with mutations.applied(table[name]):
            assert _equal_to_fragment_path(prog, lib)
            mutant, _ = isa.mmio_table(prog, lib)
        again, _ = isa.mmio_table(prog, lib)
        assert list(again.rows()) == list(plain.rows())
        if name != "timestep_count_near_max":          # that one changes nothing at 4 timesteps
            assert list(mutant.rows()) != list(plain.rows()), name


def test_mmio_table_raises_the_fragment_paths_errors():
    from ila.models.flexasr.isa import ShapeError, mmio_table, tensor_to_ila
    prog = [{"name": "store_small", "tensor": "s", "base": 0}]
    for lib in ({"s": np.zeros(20, np.uint8)}, {"s": np.zeros(1 << 15, np.uint8)}, {}):
        with pytest.raises(ShapeError) as a:
            mmio_table(prog, lib)
        with pytest.raises(ShapeError) as b:
            tensor_to_ila(prog, lib)
        assert str(a.value) == str(b.value)
    with pytest.raises(ShapeError, match="unknown tensor-assembly instruction 'storeact'"):
        mmio_table([{"name": "storeact"}], {})


def test_driver_results_and_fragment_equal_the_fragment_path():
    """A driver call (table path) reads back what the fragment's MMIO stream reads back, and its
    (lazily built) fragment is the one of levels 2-3."""
    from ila.models.flexasr.driver import Runner, run_linear
    from ila.models.flexasr.isa import fragment_to_mmio
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(3, 64)).astype(np.float32), rng.normal(size=(64, 64)).astype(np.float32)
    res = run_linear(x, w, r=Runner())
    reads = Runner().execute(fragment_to_mmio(res.fragment))
    assert np.array_equal(np.concatenate(reads).reshape(res.codes.shape), res.codes)


def test_command_table_runs_like_the_list_of_dicts():
    from ila.models.flexasr.isa import assemble, mmio_table
    rng = np.random.default_rng(3)
    prog, lib = _linear(rng)
    _, cmds = assemble(prog, lib)
    table, modes = mmio_table(prog, lib)
    keep = modes != "Q"
    a, b = Simulator(_flexasr()), Simulator(_flexasr())
    names_a = a.run([c for c in cmds if not c.get("wait_irq")])
    names_b = b.run(CommandTable({k: v[keep] for k, v in table.columns.items()}))
    assert names_a == names_b
    from ila.sim import _diff_state
    assert _diff_state(a, b) == []


def test_observed_reads_batched_equal_steps():
    m = _flexasr()
    rng = np.random.default_rng(4)
    from ila.models.flexasr import constants as C
    from ila.models.flexasr.driver import READ_DATA
    state = {"gb_core_large_buffer": rng.integers(0, 256, C.GB_LARGE_SIZE).astype(np.uint8)}
    addrs = C.GB_LARGE_BASE + 16 * rng.permutation(300)
    reads = [{"if_axi_rd": 1, "addr_in": int(a)} for a in addrs]
    a = Simulator(m, state)
    names, seen = a.run(reads, observe=READ_DATA)
    b = Simulator(m, state)
    expect, stepped = [], []
    for c in reads:
        stepped.append(b.step(c))
        expect.append(tuple(b.state[o] for o in READ_DATA))
    assert seen == expect and names == stepped
    assert a.steps == b.steps == 300
    big = state["gb_core_large_buffer"]
    assert list(seen[7]) == list(big[addrs[7] - C.GB_LARGE_BASE:][:16])
    t = CommandTable({"if_axi_rd": np.ones(300, np.uint8), "addr_in": addrs})
    assert Simulator(m, state).run(t, observe=READ_DATA)[1] == expect


def test_command_table_bad_values_raise_at_their_command():
    m = _flexasr()
    from ila.models.flexasr import constants as C
    addr = C.GB_LARGE_BASE + 16 * np.arange(40)
    data = np.zeros(40, np.int64)
    data[25] = 256                                              # does not fit data_in_0 (8 bits)
    t = CommandTable({"if_axi_wr": np.ones(40, np.uint8), "addr_in": addr, "data_in_0": data})
    sim = Simulator(m)
    with pytest.raises(SimulationError, match="data_in_0"):
        sim.run(t)
    assert sim.steps == 25
    with pytest.raises(SimulationError, match="unknown input 'bogus'"):
        Simulator(m).run(CommandTable({"if_axi_wr": [1, 1], "addr_in": addr[:2], "bogus": [0, 0]}))
    with pytest.raises(SimulationError, match="cannot observe 'gb_core_large_buffer'"):
        Simulator(m).run(t, observe=("gb_core_large_buffer",))


def test_command_table_shape_errors_and_concat():
    with pytest.raises(SimulationError, match="'b' has 2 values"):
        CommandTable({"a": [1, 2, 3], "b": [1, 2]})
    with pytest.raises(SimulationError, match="'a' must be 1-D"):
        CommandTable({"a": [[1]]})
    with pytest.raises(SimulationError, match="'a' must hold integers"):
        CommandTable({"a": [0.5]})
    t = CommandTable.concat([CommandTable({"a": [1, 2]}), CommandTable({"b": [7]})])
    assert t.rows() == [{"a": 1, "b": 0}, {"a": 2, "b": 0}, {"a": 0, "b": 7}]
    assert t[1:].rows() == t.rows()[1:] and len(t) == 3
