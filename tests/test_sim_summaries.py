"""Loop summaries of child ILAs (simulator only) are checked equal to the loops they replace.

Differential tests (``ila.sim.compare_summaries``): the same MMIO stream runs on a simulator with
the registered summaries and on one without (every child instruction executed); after every
command where a summary ran and after the last, every state and every memory entry must be equal,
and the summary must report as many child instructions as the loop ran. Random shapes and data
(hypothesis), edge values (saturation bounds, zero, min/max codes), the unit's flags; seeded bugs
in the summaries must be reported (the check is not vacuous); summaries decline where they do not
apply (started mid-loop, out-of-range addresses, overridden datapath functions).
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ila import DecodeError, Ila, SimulationError, UndeclaredError, bv_const
from ila.models.hlscnn import numerics as HN
from ila.models.hlscnn.driver import cfg_write, conv2d_program
from ila.models.hlscnn.model import (SPAD_BYTES, SUMMARY_BUGS, VIR_MEM_BYTES, build_hlscnn, conv_loop_summary)
from ila.sim import Simulator, compare_summaries

CHILD = "Accel_Conv_Child"


# ----------------------------------------------------------------------------- the DSL and the simulator
def _counter_model():
    m = Ila("cnt")
    go = m.new_bv_input("go", 1)
    n, busy = m.new_bv_state("n", 8), m.new_bv_state("busy", 1)
    out = m.new_bv_state("out", 16)
    start = m.new_instr("start")
    start.set_decode(go.eq(1))
    start.set_update(busy, bv_const(1, 1))
    start.set_update(n, bv_const(0, 8))
    start.set_update(out, bv_const(0, 16))
    c = m.new_child("loop")
    c.set_valid(busy.eq(1))
    step = c.new_instr("loop_step")
    step.set_decode(n.ult(10))
    step.set_update(n, n + 1)
    step.set_update(out, out + 3)
    done = c.new_instr("loop_done")
    done.set_decode(n.eq(10))
    done.set_update(busy, bv_const(0, 1))
    return m, c


def _counter_summary(S, budget):
    if S["n"] != 0 or budget < 11:
        return None
    S["n"], S["out"], S["busy"] = 10, (S["out"] + 30) & 0xFFFF, 0
    return 11


def test_set_summary_only_on_a_child_once_and_callable():
    m, c = _counter_model()
    with pytest.raises(DecodeError, match="top-level"):
        m.set_summary(_counter_summary)
    with pytest.raises(DecodeError, match="callable"):
        c.set_summary(42)
    c.set_summary(_counter_summary)
    assert c.summary is _counter_summary
    with pytest.raises(DecodeError, match="already has a summary"):
        c.set_summary(_counter_summary)


def test_simulator_selects_summary_and_can_run_without():
    m, c = _counter_model()
    c.set_summary(_counter_summary)
    for summaries, runs in ((True, 1), (False, 0)):
        sim = Simulator(m, summaries=summaries)
        sim.step({"go": 1})
        assert (sim.state["out"], sim.state["busy"], sim.child_steps) == (30, 0, 11)
        assert sum(sim.summary_runs.values()) == runs
    traced = Simulator(m, record_trace=True)          # a trace names every instruction: no summary
    traced.step({"go": 1})
    assert traced.trace.count("loop_step") == 10 and not traced.summary_runs
    with pytest.raises(UndeclaredError, match="no child"):
        Simulator(m, summaries={"nope": None})
    assert compare_summaries(m, [{"go": 1}, {"go": 1}]).ok


def test_differential_check_catches_a_wrong_toy_summary():
    m, _ = _counter_model()

    def wrong(S, budget):
        S["n"], S["out"], S["busy"] = 10, (S["out"] + 31) & 0xFFFF, 0
        return 11

    def miscounted(S, budget):
        _counter_summary(S, budget)
        return 12

    r = compare_summaries(m, [{"go": 1}], summaries={"loop": wrong})
    assert not r.ok and "state out" in r.mismatches[0]
    r = compare_summaries(m, [{"go": 1}], summaries={"loop": miscounted})
    assert not r.ok and "child instructions" in r.mismatches[0]
    with pytest.raises(SimulationError, match="positive number"):
        Simulator(m, summaries={"loop": lambda S, b: 0}).step({"go": 1})


def test_summaries_are_simulator_only():
    # the model's instructions are unchanged: the SMT/BMC lowering reads ila.instrs, never the summary
    m = build_hlscnn(16, 32, 4)
    child = m.child(CHILD)
    assert child.summary is not None and [i.name for i in child.instrs] == ["conv_child_tap_row"]
    import ila.smt
    import ila.unroll
    for mod in (ila.smt, ila.unroll):
        assert "summary" not in open(mod.__file__).read()


# ----------------------------------------------------------------------------- HLSCNN convolution
EDGE16 = [-32768, -32767, -1, 0, 1, 32766, 32767]
EDGE8 = [-128, -127, -1, 0, 1, 126, 127]


def _raw(rng, shape, bits, edge_frac):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    v = rng.integers(lo, hi + 1, size=shape)
    edges = np.array(EDGE16 if bits == 16 else EDGE8)
    pick = rng.random(shape) < edge_frac
    v[pick] = rng.choice(edges, size=int(pick.sum()))
    return v


def _conv_stream(x_raw, w_raw, *, stride, weight_bits, bias_raw=0, has_bias=False, relu=False, accum=False):
    job = conv2d_program(x_raw, w_raw, stride=stride, weight_bits=weight_bits, bias_raw=bias_raw,
                         has_bias=has_bias, relu=relu)
    cmds = list(job.commands)
    if accum:                      # set en_accum (ChannelConfig bit 18), which the driver never sets
        cfg = (bias_raw & 0xFFFF) | (int(has_bias) << 16) | (int(relu) << 17) | (1 << 18)
        cmds[-2] = cfg_write("AccelConvChannelConfig", cfg)
    return cmds + job.read_commands


def _initial(rng):
    """Garbage in every memory: the loop must read only what it should, and en_accum reads
    scratchpad 1's previous contents."""
    return {"scratch_pad_1": rng.integers(0, 256, SPAD_BYTES, dtype=np.uint8),
            "virtual_soc_memory": rng.integers(0, 256, VIR_MEM_BYTES, dtype=np.uint8)}


LANES = [(32, 4), (3, 2), (1, 1)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), weight_bits=st.sampled_from([8, 16]), lanes=st.sampled_from(LANES),
       C=st.integers(1, 19), O=st.integers(1, 19), H=st.integers(1, 9), W=st.integers(1, 9),
       KH=st.integers(1, 3), KW=st.integers(1, 3), stride=st.integers(1, 3),
       edge_frac=st.sampled_from([0.0, 0.2, 1.0]), relu=st.booleans(), has_bias=st.booleans(),
       accum=st.booleans())
def test_hlscnn_conv_summary_equals_loop_random(seed, weight_bits, lanes, C, O, H, W, KH, KW, stride, edge_frac,
                                                 relu, has_bias, accum):
    KH, KW = min(KH, H), min(KW, W)
    rng = np.random.default_rng(seed)
    x = _raw(rng, (H, W, C), 16, edge_frac)
    w = _raw(rng, (O, KH, KW, C), weight_bits, edge_frac)
    bias = int(rng.choice(EDGE16)) if rng.random() < 0.5 else int(rng.integers(-32768, 32768))
    cmds = _conv_stream(x, w, stride=stride, weight_bits=weight_bits, bias_raw=bias, has_bias=has_bias,
                        relu=relu, accum=accum)
    r = compare_summaries(build_hlscnn(weight_bits, *lanes), cmds, state=_initial(rng))
    assert r.ok, r.mismatches
    assert r.summary_runs == {CHILD: 1}


def _edge_case(weight_bits=16, bias=-32768):
    """Saturating MACs (every product at the int16 extremes), partial sums that wrap, a last tap that
    overflows int16 under ReLU, a MAC that rounds an exact half, en_accum over non-zero previous
    outputs, an extreme bias."""
    rng = np.random.default_rng(7)
    H = W = 5
    C, O = 16, 9
    hi, lo = (32767, -32768) if weight_bits == 16 else (127, -128)
    x = _raw(rng, (H, W, C), 16, 0.5)
    x[0, 0, :] = 0
    w = _raw(rng, (O, 3, 3, C), weight_bits, 0.5)
    w[2:4] = np.where(rng.random((2, 3, 3, C)) < 0.5, hi, lo)
    w[0] = hi                                     # filter 0 with x > 0 saturates positive
    x[1:, 1:, :8] = 32767
    w[1, :, :, :8], w[1, :, :, 8:] = hi, 0        # filter 1: 18 taps of +32767 wrap, last overflows
    w[4] = 0                                      # filter 4: one product of exactly 256 (half an ACT LSB)
    w[4, 0, 0, 0] = 1
    x[1:, :, 0] = 8192 if weight_bits == 16 else 32
    state = _initial(rng)
    return _conv_stream(x, w, stride=1, weight_bits=weight_bits, bias_raw=bias, has_bias=True, relu=True,
                        accum=True), state


@pytest.mark.parametrize("weight_bits,bias", [(8, -32768), (16, -32768), (16, 32767)])
def test_hlscnn_conv_summary_equals_loop_edge_values(weight_bits, bias):
    cmds, state = _edge_case(weight_bits, bias)
    r = compare_summaries(build_hlscnn(weight_bits, 32, 4), cmds, state=state)
    assert r.ok, r.mismatches
    assert r.summary_runs == {CHILD: 1}


@pytest.mark.parametrize("bug", SUMMARY_BUGS)
def test_seeded_bug_in_hlscnn_summary_is_caught(bug):
    broken = conv_loop_summary(16, 32, 4, bug=bug)
    found = []
    for bias in (-32768, 32767):
        cmds, state = _edge_case(16, bias)
        r = compare_summaries(build_hlscnn(16, 32, 4), cmds, state=state, summaries={CHILD: broken})
        found += r.mismatches
    assert found, f"seeded bug {bug!r} not detected"
    assert "scratch_pad_1" in found[0]
    with pytest.raises(ValueError, match="unknown seeded bug"):
        conv_loop_summary(16, 32, 4, bug="nope")


def test_hlscnn_summary_declines_mid_loop_and_out_of_range():
    rng = np.random.default_rng(3)
    x, w = _raw(rng, (4, 4, 8), 16, 0.1), _raw(rng, (8, 2, 2, 8), 16, 0.1)
    cmds = _conv_stream(x, w, stride=1, weight_bits=16)
    m = build_hlscnn(16, 1, 1)
    # start the loop, stop after a few child steps, resume from there: the summary must decline
    sim = Simulator(m, summaries=False, max_child_steps=3)
    for c in cmds:
        try:
            sim.step(c)
        except SimulationError:
            break
    assert sim.state["accel_conv_child_valid"] and sim.state["conv_child_col_tile"]
    mid = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in sim.state.items()}
    resume = [{"top_slave_if_wr": 1, "top_slave_if_rd": 0, "top_slave_addr_in": 0x32000000 + 4 * 2,
               **{f"top_slave_data_in_{i}": 0 for i in range(16)}}]     # any command: children run after it
    r = compare_summaries(m, resume, state=mid)
    assert r.ok and r.summary_runs == {}
    # activation base beyond the SoC memory: the loop raises, the summary declines (same error)
    bad = [cfg_write("AccelConvActivationBaseAddr", 0x7FFF0) if c == cfg_write("AccelConvActivationBaseAddr", 0x50000)
           else c for c in cmds]
    r = compare_summaries(m, bad)
    assert r.ok and r.summary_runs == {}
    with pytest.raises(SimulationError, match="beyond"):
        Simulator(m).run(bad)


def test_hlscnn_summary_declines_under_overridden_datapath():
    # a counterexample replay overrides the functions' bodies: the summary (which hard-codes the
    # default numerics) must decline and the loop run with the overridden bodies
    rng = np.random.default_rng(4)
    cmds = _conv_stream(_raw(rng, (3, 3, 8), 16, 0), _raw(rng, (8, 1, 1, 8), 16, 0), stride=1, weight_bits=16)
    saved = HN.PSUM_RELU.body
    HN.PSUM_RELU.body = lambda p: p * 0
    try:
        r = compare_summaries(build_hlscnn(16, 32, 4), cmds)
    finally:
        HN.PSUM_RELU.body = saved
    assert r.ok and r.summary_runs == {}


# ----------------------------------------------------------------------------- the MMIO fast path
def test_inline_scalar_codegen_equals_table_calls_on_random_expressions():
    # the scalar fast path of ila.compile_np against the TABLE call of every node, on the random
    # well-sorted expressions of the numpy-vs-SMT test (every op, widths 1..100, memories, UFs)
    from test_ila_semantics import BOOL, BV, WIDTHS, draw_env, gen, witnesses, random_env
    from ila.compile_np import compile_exprs

    def both(e, env):
        S = {v.name: (np.array(val, dtype=np.uint8 if v.sort.data_width <= 8 else object) if v.sort.is_mem else val)
             for v, val in env.items()}
        outs = [compile_exprs([e], vectorize=False, inline=flag)(S, {})[0] for flag in (True, False)]
        return [bool(o) if e.sort.is_bool else int(o) for o in outs]

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        e = gen(data, data.draw(st.sampled_from([BOOL] + [BV(w) for w in WIDTHS])), data.draw(st.integers(1, 4)))
        fast, slow = both(e, draw_env(data, e))
        assert fast == slow, e

    check()
    rng = np.random.default_rng(5)
    for e in witnesses():
        for _ in range(4):
            fast, slow = both(e, random_env(rng, e))
            assert fast == slow, e


def _plain_run(ila, cmds, state=None):
    """A reference execution without the simulator's fast paths: no decode index, no shared
    decode functions, no inline scalar code, no summaries; every instruction of the hierarchy has
    its valid and decode evaluated on its own, and children run one instruction at a time."""
    import ila.sim as sim_mod
    from ila.compile_np import compile_exprs
    saved_cache, saved_compile = sim_mod._LEVELS, sim_mod.compile_exprs
    sim_mod._LEVELS = type(saved_cache)()
    sim_mod.compile_exprs = lambda *a, **k: saved_compile(*a, **{**k, "inline": False})
    try:
        sim = Simulator(ila, state, summaries=False)
    finally:
        sim_mod._LEVELS, sim_mod.compile_exprs = saved_cache, saved_compile
    memo = {}

    def holds(e, I):
        fn = memo.get(e.uid) or memo.setdefault(e.uid, compile_exprs([e], vectorize=False, inline=False))
        return bool(fn(sim.state, I)[0])

    names = []
    for cmd in cmds:
        I = {v.name: (False if v.sort.is_bool else 0) for v in ila.all_inputs()} | dict(cmd)
        top = [i for i in ila.instrs if holds(ila.valid, I) and holds(i.get_decode(), I)]
        assert len(top) == 1, [i.name for i in top]
        sim.fire(top[0].name, cmd)
        names.append(top[0].name)
        while True:
            kids = [i for c in ila.walk() if c is not ila and holds(c.valid, I)
                    for i in c.instrs if holds(i.get_decode(), I)]
            if not kids:
                break
            assert len(kids) == 1
            sim.fire(kids[0].name, cmd)
    return sim, names


def _assert_same(fast, slow):
    from ila.sim import _diff_state
    assert _diff_state(fast, slow, limit=4) == []


def test_mmio_fast_path_equals_plain_execution_hlscnn():
    rng = np.random.default_rng(6)
    x, w = _raw(rng, (5, 4, 9), 16, 0.2), _raw(rng, (9, 2, 3, 9), 8, 0.2)
    cmds = _conv_stream(x, w, stride=1, weight_bits=8, bias_raw=-5, has_bias=True, relu=True)
    cmds.insert(3, cfg_write("AccelFCSizeConfig", 0x12345678))                # CFG_WR_OTHER
    m = build_hlscnn(8, 2, 2)
    ref, names = _plain_run(m, cmds)
    for summaries in (False, True):
        sim = Simulator(m, summaries=summaries)
        assert sim.run(cmds) == names
        _assert_same(sim, ref)


def test_mmio_fast_path_equals_plain_execution_flexasr():
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.driver import linear_program
    from ila.models.flexasr.isa import assemble
    rng = np.random.default_rng(8)
    xq, wq, bq = (rng.integers(0, 256, s).astype(np.uint8) for s in ((2, 16), (64, 16), (64,)))
    prog, lib = linear_program(xq, wq, bq, bx=2, bw=1, bb=3, out_bias=2)
    _, cmds = assemble(prog, lib)
    cmds = [c for c in cmds if not c.get("wait_irq")]
    m = shared_model()
    ref, names = _plain_run(m, cmds)
    sim = Simulator(m)
    assert sim.run(cmds) == names
    _assert_same(sim, ref)


# ----------------------------------------------------------------------------- FlexASR PE core
PE = "PE_CORE_CHILD"
GB = "Child_GB_Control"
ACT = "PE_ACT_CHILD"
AF_EDGE = [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81]     # zero, negative zero, max/min codes, smallest magnitudes


def _codes(rng, shape, edge_frac):
    v = rng.integers(0, 256, size=shape)
    pick = rng.random(shape) < edge_frac
    v[pick] = rng.choice(AF_EDGE, size=int(pick.sum()))
    return v.astype(np.uint8)


def _linear_cmds(rng, T, I, O, bias, edge_frac, regs):
    from ila.models.flexasr.driver import linear_program
    from ila.models.flexasr.isa import assemble
    xq, wq = _codes(rng, (T, I), edge_frac), _codes(rng, (O, I), edge_frac)
    bq = _codes(rng, (O,), edge_frac) if bias else None
    bx, bw, bb, bo = regs
    prog, lib = linear_program(xq, wq, bq, bx=bx, bw=bw, bb=bb, out_bias=bo)
    return [c for c in assemble(prog, lib)[1] if not c.get("wait_irq")]


def _lstm_cmds(rng, T, I, H, edge_frac, regs):
    from ila.models.flexasr.isa import assemble
    from ila.models.flexasr.programs import lstm_pe_images
    xq, wiq, whq = _codes(rng, (T, I), edge_frac), _codes(rng, (4 * H, I), edge_frac), _codes(rng, (4 * H, H), edge_frac)
    bq = _codes(rng, (4 * H,), edge_frac)
    imgs = lstm_pe_images(wiq, whq, bq)
    lib = {"x": xq} | {f"w{p}": imgs[p] for p in range(4)}
    prog = [{"name": "store_pe", "pe": p, "tensor": f"w{p}"} for p in range(4)]
    prog += [{"name": "store_act", "tensor": "x", "base": 0},
             {"name": "lstm_layer", "num_ts": T, "num_v_in": I // 16, "num_v_out": H // 16, "is_bias": 1,
              "adpbias_wgt_i": regs[0], "adpbias_wgt_h": regs[1], "adpbias_inp": regs[2], "adpbias_bias": regs[3],
              "adpbias_out": regs[0], "base_in": 0, "base_out": 0x8000},
             {"name": "load_act", "num_ts": T, "num_v": H // 16, "base": 0x8000}]
    return [c for c in assemble(prog, lib)[1] if not c.get("wait_irq")]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), T=st.integers(1, 3), I=st.sampled_from([16, 32, 64]),
       O=st.sampled_from([64, 128, 320, 512]), bias=st.booleans(), edge_frac=st.sampled_from([0.0, 0.3, 1.0]),
       regs=st.tuples(*[st.integers(0, 7)] * 4))
def test_flexasr_pe_core_summary_equals_loop_random_linear(seed, T, I, O, bias, edge_frac, regs):
    # the per-timestep summaries (transfer phases, PE core), which an RNN runs; a feed-forward
    # layer runs by the whole-run summary when it is registered (below)
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.gb_control import gb_send_summary
    rng = np.random.default_rng(seed)
    r = compare_summaries(shared_model(), _linear_cmds(rng, T, I, O, bias, edge_frac, regs),
                          summaries={GB: gb_send_summary()})
    assert r.ok, r.mismatches
    assert r.summary_runs == {PE: T, GB: T, ACT: T}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), T=st.integers(1, 40), I=st.sampled_from([16, 32, 64, 144]),
       O=st.sampled_from([64, 128, 320, 512]), bias=st.booleans(), edge_frac=st.sampled_from([0.0, 0.3, 1.0]),
       regs=st.tuples(*[st.integers(0, 7)] * 4))
def test_flexasr_linear_run_summary_equals_loop_random(seed, T, I, O, bias, edge_frac, regs):
    # the whole run of a feed-forward layer (every timestep, PE core and activation at once)
    from ila.models.flexasr import shared_model
    rng = np.random.default_rng(seed)
    r = compare_summaries(shared_model(), _linear_cmds(rng, T, I, O, bias, edge_frac, regs))
    assert r.ok, r.mismatches
    assert r.summary_runs == {GB: 1}


def test_flexasr_linear_run_summary_without_product_factors(monkeypatch):
    # where ProductSum does not factor as D[a] * D[b] (checked on its whole table), the summary
    # sums table lookups instead of matrix products; both equal the loop
    from ila.models.flexasr import gb_control, shared_model, tables
    monkeypatch.setitem(tables._TABLES, ("factors", "ProductSum"), None)
    rng = np.random.default_rng(15)
    cmds = _linear_cmds(rng, 5, 48, 320, True, 0.3, (2, 5, 1, 3))
    r = compare_summaries(shared_model(), cmds)
    assert r.ok, r.mismatches
    assert r.summary_runs == {GB: 1}
    r = compare_summaries(shared_model(), cmds, summaries={GB: gb_control.gb_send_summary()})   # per timestep
    assert r.ok, r.mismatches
    assert r.summary_runs == {GB: 5, PE: 5, ACT: 5}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flexasr_linear_run_summary_equals_loop_other_micro_programs(seed, monkeypatch):
    # micro-programs beyond the linear layer's INPE, OUTGB: every supported operation, two INPEs
    # per group (the cursor runs past the written core outputs), several OUTGBs to one address
    from ila.models.flexasr import constants as C
    from ila.models.flexasr import programs, shared_model
    rng = np.random.default_rng(seed)
    ops = [C.act_op(C.ACT_INPE, 0), C.act_op(C.ACT_SIGM, 0), C.act_op(C.ACT_INPE, 1), C.act_op(C.ACT_EMUL, 0, 1),
           C.act_op(C.ACT_OUTGB, 0), C.act_op(C.ACT_COPY, 2, 0), C.act_op(C.ACT_TANH, 2), C.act_op(C.ACT_EADD, 2, 1),
           C.act_op(C.ACT_RELU, 2), C.act_op(C.ACT_ONEX, 1), C.act_op(C.ACT_EADD, 3, 1), C.act_op(C.ACT_OUTGB, 2)]
    # seed 0: EADD 3, 1 reads register 3 before the group writes it (the previous group's value):
    # the whole-run summary declines and the per-timestep summaries run
    ops[10] = C.act_op(C.ACT_COPY, 3, 1) if seed == 1 else ops[10]
    monkeypatch.setattr(programs, "LINEAR_ACT_PROGRAM", ops[:10] + [ops[11]] if seed == 2 else ops)
    T = int(rng.integers(1, 20))
    cmds = _linear_cmds(rng, T, 32, 128, True, 0.3, tuple(int(v) for v in rng.integers(0, 8, 4)))
    r = compare_summaries(shared_model(), cmds, state=_initial_flexasr(rng))
    assert r.ok, r.mismatches
    assert r.summary_runs == ({GB: T, PE: T} if seed == 0 else {GB: 1})     # (the act summary declines too)


@pytest.mark.parametrize("bug", ["input_of_first_timestep", "cursor_stuck", "accum_first_chunk"])
def test_seeded_bug_in_flexasr_linear_run_summary_is_caught(bug):
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.gb_control import gb_control_summary
    from ila.models.flexasr.linear_run import LINEAR_RUN_BUGS
    assert bug in LINEAR_RUN_BUGS
    rng = np.random.default_rng(12)
    cmds = _linear_cmds(rng, 3, 32, 512, True, 0.3, (1, 2, 3, 4))       # 2 chunks and 8 groups per PE
    r = compare_summaries(shared_model(), cmds, summaries={GB: gb_control_summary(run_bug=bug)})
    assert not r.ok, f"seeded bug {bug!r} not detected"


def test_seeded_bug_in_flexasr_act_summary_is_caught():
    # the LSTM's micro-program stores the cell state at timestep 0 and loads it at timestep 1
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.act_run import ACT_BUGS, act_summary
    assert ACT_BUGS == ("store_ignored",)
    rng = np.random.default_rng(14)
    r = compare_summaries(shared_model(), _lstm_cmds(rng, 2, 32, 64, 0.3, (1, 2, 3, 4)),
                          summaries={ACT: act_summary(bug="store_ignored")})
    assert not r.ok, "seeded bug 'store_ignored' not detected"


def test_flexasr_linear_run_summary_declines():
    from ila.models.flexasr import constants as C
    from ila.models.flexasr import funcs as Fn
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.linear_run import linear_run_summary
    rng = np.random.default_rng(13)
    cmds = _linear_cmds(rng, 2, 32, 64, True, 0.3, (1, 2, 3, 4))
    start = next(k for k, c in enumerate(cmds) if int(c.get("addr_in", 0)) == C.START_GB_CONTROL)
    sim = Simulator(shared_model(), summaries=False)
    sim.run(cmds[:start])
    fn = linear_run_summary()
    S = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in sim.state.items()}
    S["gb_control_child_valid"] = 1                                      # as GB_CONTROL_START leaves it
    assert fn(dict(S, gb_control_is_rnn=1), 10 ** 6) is None             # an RNN: timesteps depend on each other
    assert fn(dict(S, gb_control_child_state=1), 10 ** 6) is None        # mid run
    assert fn(dict(S, gb_control_num_timestep=0), 10 ** 6) is None       # the 16-bit counter would wrap
    assert fn(dict(S, pe0_act_inst_0=C.act_op(C.ACT_LOAD, 0)), 10 ** 6) is None    # state across timesteps
    assert fn(dict(S, pe0_act_inst_1=C.act_op(C.ACT_OUTGB, 3)), 10 ** 6) is None   # reads an unwritten register
    assert fn(S, 10) is None                                             # over budget
    same = S["gb_core_mem_mngr_large_base_large_0"]                      # outputs over the inputs a later SEND reads
    assert fn(dict(S, gb_core_mem_mngr_large_base_large_1=same), 10 ** 6) is None
    saved = Fn.PE_ACT_RELU.body                                          # a replay's overridden datapath
    Fn.PE_ACT_RELU.body = lambda a: a * 0
    try:
        assert fn(S, 10 ** 6) is None
    finally:
        Fn.PE_ACT_RELU.body = saved
    assert fn(S, 10 ** 6) > 0 and S["gb_control_child_valid"] == 0 and S["top_interrupt_request"] == 1


def test_flexasr_pe_core_summary_equals_loop_lstm_two_managers():
    from ila.models.flexasr import shared_model
    rng = np.random.default_rng(11)
    r = compare_summaries(shared_model(), _lstm_cmds(rng, 2, 32, 64, 0.3, (1, 2, 3, 4)))
    assert r.ok, r.mismatches
    assert r.summary_runs == {PE: 2, GB: 2, ACT: 2}


@pytest.mark.parametrize("child,bug", [(PE, "off_by_one"), (PE, "bias_pass2"), (PE, "last_chunk"),
                                       (GB, "skip_last"), (GB, "zero_first_ignored"), (GB, "wrong_tile")])
def test_seeded_bug_in_flexasr_summary_is_caught(child, bug):
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.gb_control import GB_SEND_BUGS, PE_CORE_BUGS, gb_send_summary, pe_core_summary
    make, known = {PE: (pe_core_summary, PE_CORE_BUGS), GB: (gb_send_summary, GB_SEND_BUGS)}[child]
    assert bug in known
    rng = np.random.default_rng(12)
    # bias_pass2 needs a second manager (LSTM); zero_first an RNN at t = 0 over a non-zero hidden
    # buffer; the transfer tile t >= 16
    cmds = {"bias_pass2": lambda: _lstm_cmds(rng, 1, 16, 64, 0.3, (1, 2, 3, 4)),
            "zero_first_ignored": lambda: _lstm_cmds(rng, 2, 32, 64, 0.3, (1, 2, 3, 4)),
            "wrong_tile": lambda: _linear_cmds(rng, 18, 32, 64, False, 0.3, (1, 2, 3, 4)),
            "skip_last": lambda: _linear_cmds(rng, 2, 32, 64, False, 0.3, (1, 2, 3, 4))}.get(
        bug, lambda: _linear_cmds(rng, 1, 16, 512, True, 0.3, (1, 2, 3, 4)))()
    state = _initial_flexasr(rng) if bug == "zero_first_ignored" else None
    # the per-timestep summaries only (a feed-forward layer would otherwise run by the whole-run summary)
    r = compare_summaries(shared_model(), cmds, summaries={GB: gb_send_summary(), child: make(bug=bug)}, state=state)
    assert not r.ok, f"seeded bug {bug!r} not detected"


def _initial_flexasr(rng):
    """Garbage in the GB large buffer (so a transfer that should send zeros is visible)."""
    from ila.models.flexasr import constants as C
    return {"gb_core_large_buffer": rng.integers(0, 256, C.GB_LARGE_SIZE).astype(np.uint8)}


def test_flexasr_gb_send_summary_declines_out_of_range_and_mid_phase():
    from ila.models.flexasr import shared_model
    from ila.models.flexasr.gb_control import PE_START, SEND, gb_send_summary
    fn = gb_send_summary()
    sim = Simulator(shared_model())
    S = dict(sim.state)
    S.update({"gb_control_child_valid": 1, "gb_control_child_state": SEND, "gb_control_num_vector_1": 2})
    assert fn(dict(S, gb_control_v_cntr=1), 100) is None                 # mid phase
    assert fn(dict(S, gb_control_num_vector_1=0), 100) is None           # the counter would wrap
    assert fn(S, 1) is None                                              # over budget
    assert fn(dict(S, pe_core_child_valid=1), 100) is None               # another child active
    assert fn(dict(S, gb_core_mem_mngr_large_base_large_0=0xFFFFFFF), 100) is None   # beyond the buffer
    assert fn(dict(S, pe0_mem_mngr_1_base_input=0xFFFF), 100) is None    # beyond a PE input buffer
    S2 = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in S.items()}
    assert fn(S2, 100) == 2 and S2["gb_control_child_state"] == PE_START


# ----------------------------------------------------------------------------- batched runs of data writes
def _run_vs_steps(m, cmds, state=None):
    """Simulator.run (batched) against step() per command: same names, same error at the same
    command, same state."""
    a, b = Simulator(m, state), Simulator(m, state)
    names_a = err_a = names_b = err_b = None
    try:
        names_a = a.run(cmds)
    except SimulationError as e:
        err_a = (type(e).__name__, a.steps)
    names_b = []
    try:
        for c in cmds:
            names_b.append(b.step(c))
    except SimulationError as e:
        err_b = (type(e).__name__, b.steps)
    assert err_a == err_b
    if err_a is None:
        assert names_a == names_b
    _assert_same(a, b)
    return a


def _vir(addr, data):
    return {"top_slave_if_wr": 1, "top_slave_if_rd": 0, "top_slave_addr_in": 0x32000000 + 0x50000 + addr,
            **{f"top_slave_data_in_{i}": int(data[i]) for i in range(16)}}


def test_batched_data_writes_equal_steps_hlscnn():
    rng = np.random.default_rng(9)
    m = build_hlscnn(16, 32, 4)
    beats = [rng.integers(0, 256, 16) for _ in range(300)]
    plain = [_vir(16 * k, beats[k]) for k in range(300)]
    assert _run_vs_steps(m, plain).steps == 300
    overlap = [_vir(16 * k + (8 if k % 7 == 3 else 0), beats[k]) for k in range(300)]   # later beats overwrite
    _run_vs_steps(m, overlap)
    unaligned = [_vir(3 * k, beats[k]) for k in range(300)]
    _run_vs_steps(m, unaligned)
    oob = plain[:150] + [_vir(0x30000 - 8, beats[0])] + plain[150:]                       # beyond the memory
    _run_vs_steps(m, oob)
    bad = plain[:100] + [dict(plain[100], top_slave_data_in_3=256)] + plain[101:]          # invalid input
    _run_vs_steps(m, bad)
    mixed = plain[:50] + [cfg_write("SocMemBaseAddr", 0x50000)] + plain[50:120] + \
        [{**plain[0], "top_slave_addr_in": 0x32000000 + 0x4000}] + plain[120:]             # other instructions
    _run_vs_steps(m, mixed)
    idle = plain[:10] + [{"top_slave_if_wr": 0, "top_slave_if_rd": 0}] + plain[10:]        # decodes nothing
    _run_vs_steps(m, idle)
    # the conv stream (SoC-memory runs, scratchpad loads, trigger, loop, reads) with garbage memories
    x, w = _raw(rng, (6, 5, 9), 16, 0.2), _raw(rng, (10, 3, 2, 9), 16, 0.2)
    _run_vs_steps(m, _conv_stream(x, w, stride=2, weight_bits=16, relu=True), state=_initial(rng))


def test_batched_data_writes_equal_steps_flexasr():
    from ila.models.flexasr import shared_model
    rng = np.random.default_rng(10)
    _run_vs_steps(shared_model(), _lstm_cmds(rng, 2, 32, 64, 0.3, (1, 2, 3, 4)))
    _run_vs_steps(shared_model(), _linear_cmds(rng, 3, 64, 128, True, 0.3, (2, 1, 3, 2)))


def test_hlscnn_driver_numeric_image_equals_element_path():
    # the numpy byte image of int operands == the per-element path (which also serves terms)
    rng = np.random.default_rng(13)
    for bits in (8, 16):
        x, w = _raw(rng, (5, 6, 11), 16, 0.3), _raw(rng, (9, 2, 3, 11), bits, 0.3)
        fast = conv2d_program(x, w, stride=1, weight_bits=bits, bias_raw=-3, has_bias=True)
        slow = conv2d_program(x.astype(object), w.astype(object), stride=1, weight_bits=bits, bias_raw=-3,
                              has_bias=True)
        assert fast.commands == slow.commands and fast.read_commands == slow.read_commands
