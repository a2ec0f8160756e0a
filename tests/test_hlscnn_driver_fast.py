"""HLSCNN driver fast paths equal the element-by-element paths: the numpy command builder of
``conv2d_program`` (integer operands) emits the same command list as the path that also serves
terms (random shapes, both weight widths, dtypes, negative, edge and out-of-width values); the
numeric read-back equals the element read-back; ``run_job`` (weight pull stepped, reads observed)
leaves the simulator in the state of stepping every command in turn."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ila.models.hlscnn.driver import (READ_DATA, HlscnnError, cfg_write, conv2d_program, prepare_conv2d, read_beat,
                                      readback, run_job)
from ila.models.hlscnn.model import SPAD0_BASE, SLAVE_BASE, build_hlscnn
from ila.sim import Simulator

EDGE16 = [-32768, -32767, -1, 0, 1, 32766, 32767, 32768, 65535, -65536, 70000]   # beyond 16 bits: masked
EDGE8 = [-128, -127, -1, 0, 1, 126, 127, 128, 255, -300]
DTYPES = [np.int64, np.int32, np.int16, np.uint16, np.int8, np.uint8, np.uint64, np.bool_]


def _raw(rng, shape, edges, dtype, lo, hi):
    v = rng.integers(lo, hi, size=shape)
    pick = rng.random(shape) < 0.3
    v[pick] = rng.choice(np.array(edges), size=int(pick.sum()))
    return v.astype(dtype)          # integer casts wrap: the low bits stay those of the value


def _exact(a: list, b: list) -> bool:
    """Equal dicts with the same key order and Python-int values of the same types."""
    return len(a) == len(b) and all(list(x.items()) == list(y.items()) and
                                    all(type(v) is type(w) for v, w in zip(x.values(), y.values()))
                                    for x, y in zip(a, b))


@st.composite
def _programs(draw):
    k, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    H, W = draw(st.integers(k, 9)), draw(st.integers(k, 9))
    C, O = draw(st.integers(1, 19)), draw(st.integers(1, 19))
    bits = draw(st.sampled_from([8, 16]))
    xdt, wdt = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    bias = draw(st.integers(-40000, 70000))
    return dict(H=H, W=W, C=C, O=O, KH=k, KW=draw(st.integers(1, k)), S=s, bits=bits, xdt=xdt, wdt=wdt,
                seed=seed, bias=bias, has_bias=draw(st.booleans()), relu=draw(st.booleans()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_numeric_commands_equal_element_path(p):
    rng = np.random.default_rng(p["seed"])
    x = _raw(rng, (p["H"], p["W"], p["C"]), EDGE16, p["xdt"], -32768, 32768)
    w = _raw(rng, (p["O"], p["KH"], p["KW"], p["C"]), EDGE16 if p["bits"] == 16 else EDGE8, p["wdt"],
             -(1 << (p["bits"] - 1)), 1 << (p["bits"] - 1))
    kw = dict(stride=p["S"], weight_bits=p["bits"], bias_raw=p["bias"], has_bias=p["has_bias"], relu=p["relu"])
    fast = conv2d_program(x, w, **kw)
    slow = conv2d_program(x.astype(object), w.astype(object), **kw)
    assert _exact(fast.commands, slow.commands)
    assert _exact(fast.read_commands, slow.read_commands)
    assert fast.pull == slow.pull
    assert (fast.out_shape, fast.out_blocks) == (slow.out_shape, slow.out_blocks)
    # the pull range is exactly the SocMemBaseAddr / scratchpad-0 write pairs
    a, b = fast.pull
    soc = SLAVE_BASE + 4 * 4
    assert (b - a) % 2 == 0 and b == len(fast.commands) - 8
    assert all(c["top_slave_addr_in"] == soc for c in fast.commands[a:b:2])
    assert all(c["top_slave_addr_in"] == SLAVE_BASE + SPAD0_BASE + 16 * i
               for i, c in enumerate(fast.commands[a + 1:b:2]))
    assert fast.commands[a - 1] == cfg_write("SocMemRdWrLength", 1)


def test_numeric_commands_are_fresh_dicts():
    # consumers (seeded bugs, fragment editors) edit commands in place: no dict may be shared
    x, w = np.zeros((4, 4, 3), np.int64), np.zeros((2, 1, 1, 3), np.int64)
    job = conv2d_program(x, w, stride=1, weight_bits=16)
    every = job.commands + job.read_commands
    assert len({id(c) for c in every}) == len(every)


def test_numeric_program_refuses_overflow_like_element_path():
    x, w = np.zeros((200, 200, 8), np.int64), np.zeros((8, 1, 1, 8), np.int64)
    for a, b in ((x, w), (x.astype(object), w.astype(object))):
        with pytest.raises(HlscnnError, match="buffer overflow"):
            conv2d_program(a, b, stride=1, weight_bits=16)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 12), st.integers(0, 2 ** 32 - 1))
def test_numeric_readback_equals_element_path(oh, ow, o, seed):
    rng = np.random.default_rng(seed)
    job = conv2d_program(np.zeros((oh, ow, 1), np.int64), np.zeros((o, 1, 1, 1), np.int64), stride=1,
                         weight_bits=16)
    data = rng.integers(0, 256, size=(len(job.read_commands), 16))
    data[rng.random(data.shape) < 0.2] = 255
    tuples = [tuple(int(v) for v in r) for r in data]
    objs = [np.array(r, dtype=object) for r in tuples]
    fast, slow = readback(job, tuples), readback(job, objs)
    assert fast.dtype == slow.dtype == object
    assert fast.shape == slow.shape == (oh, ow, o)
    assert all(type(a) is int and a == b for a, b in zip(fast.ravel(), slow.ravel()))
    assert np.array_equal(readback(job, data), slow)


def test_readback_out_of_range_bytes_take_element_path():
    from ila.errors import WidthError
    job = conv2d_program(np.zeros((1, 1, 1), np.int64), np.zeros((1, 1, 1, 1), np.int64), stride=1, weight_bits=16)
    bad = [tuple([256] + [0] * 15)]
    with pytest.raises(WidthError):
        readback(job, bad)


@pytest.mark.parametrize("bits", [8, 16])
def test_run_job_equals_stepping_every_command(bits):
    rng = np.random.default_rng(bits)
    x, w = rng.normal(size=(1, 6, 7, 11)), rng.normal(scale=0.4, size=(10, 3, 2, 11))
    job = prepare_conv2d(x, w, stride=2, weight_bits=bits, bias=0.25, relu=True)
    raw, sim = run_job(job, sim=Simulator(build_hlscnn(bits, 32, 4)))
    ref = Simulator(build_hlscnn(bits, 32, 4))
    names = [ref.step(c) for c in job.commands]
    assert names[job.pull[0]:job.pull[1]] == ["CFG_WR_SocMemBaseAddr", "SPAD0_DATA_WR"] * (
        (job.pull[1] - job.pull[0]) // 2)
    reads = []
    for c in job.read_commands:
        ref.step(c)
        reads.append(read_beat(ref.state))
    assert np.array_equal(raw, readback(job, reads)[None].astype(np.int64))
    for name, v in ref.state.items():
        assert np.array_equal(np.asarray(sim.state[name]), np.asarray(v)), name
    assert sim.steps == ref.steps
    assert tuple(sim.state[n] for n in READ_DATA) == tuple(ref.state[n] for n in READ_DATA)


def test_run_job_with_a_bad_pull_range_is_still_the_stream():
    # the pull range only chooses how commands are driven: a wrong one changes nothing
    rng = np.random.default_rng(5)
    job = prepare_conv2d(rng.normal(size=(1, 5, 5, 9)), rng.normal(scale=0.4, size=(9, 3, 3, 9)), weight_bits=16)
    good, _ = run_job(job, sim=Simulator(build_hlscnn(16, 32, 4)))
    for pull in ((0, 0), (3, 7), (0, len(job.commands)), (10 ** 6, 5)):
        job.pull = pull
        got, _ = run_job(job, sim=Simulator(build_hlscnn(16, 32, 4)))
        assert np.array_equal(got, good)


def test_as_table_is_the_same_commands_or_the_list_itself():
    from ila.commands import CommandTable
    from ila.models.hlscnn.driver import _as_table
    job = conv2d_program(np.arange(-40, 40).reshape(4, 4, 5), np.ones((3, 1, 1, 5), np.int64), stride=1,
                         weight_bits=16)
    for cmds in (job.commands, job.read_commands):
        t = _as_table(cmds)
        assert isinstance(t, CommandTable) and t.rows() == cmds
    base = [dict(c) for c in job.commands[:3]]
    odd = [
        base[:1],                                                        # too short to matter
        [base[0], {**base[1], "top_slave_data_in_0": 1.5}],              # a float: the dicts decide
        [base[0], {k: v for k, v in base[1].items() if k != "top_slave_data_in_3"}],   # other keys
        [base[0], {**base[1], "extra": 1}],
        [base[0], {**base[1], "top_slave_data_in_0": 1 << 70}],          # beyond int64
        [base[0], None],
    ]
    for cmds in odd:
        assert _as_table(cmds) is cmds


def test_run_job_reports_a_bad_command_like_the_simulator():
    # a command the ILA refuses inside the SoC-memory writes (run as a table) raises as when stepped
    from ila import SimulationError
    job = prepare_conv2d(np.ones((1, 3, 3, 8)), np.ones((8, 1, 1, 8)) * 0.5, weight_bits=16)
    job.commands[2] = {**job.commands[2], "top_slave_data_in_5": 300}
    with pytest.raises(SimulationError, match="top_slave_data_in_5"):
        run_job(job, sim=Simulator(build_hlscnn(16, 32, 4)))
    ref = Simulator(build_hlscnn(16, 32, 4))
    with pytest.raises(SimulationError, match="top_slave_data_in_5"):
        ref.run(job.commands)
