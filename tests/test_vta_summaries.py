"""The VTA child-loop summaries (``ila.models.vta.summaries``) are checked equal to the loops.

Differential tests (``ila.sim.compare_summaries``): the same command stream runs with the summary
and instruction by instruction; after every command where the summary ran and after the last,
every state and every memory entry must be equal, and the summary must report as many child
instructions as the loop ran. Random programs over several configurations (BATCH 1 and 2, int8
and int32 operands, the default one) from garbage SRAMs and DRAM: LOAD of every buffer with
padding and strides (0, smaller and larger than x_size), STORE with overlapping rows, GEMM with
and without reset over uop ranges and loop extents, separable and general index factors, ALU
MIN/MAX/ADD/SHR/MUL with immediates at the edges (sign extension, shifts of 31/32/33 either way)
and register operands whose steps depend on each other; the driver's dense and element-wise
programs. Seeded bugs (``SUMMARY_BUGS``) must be reported; the summary declines mid-loop, over
budget and out of range; counterexample replay (``verify.bmc.replay``) never calls it.
"""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ila import SimulationError
from ila.models.vta import isa as V
from ila.models.vta.driver import dense_program, elementwise_program, program_commands
from ila.models.vta.model import build_vta
from ila.models.vta.summaries import SUMMARY_BUGS, loop_summary
from ila.sim import Simulator, compare_summaries

CHILD = "vta_child"
D = V.DEFAULT_CONFIG
SMALL = dataclasses.replace(D, log_block=2, log_uop_buff_size=7, log_inp_buff_size=8, log_wgt_buff_size=10,
                            log_acc_buff_size=10, dram_bytes=1 << 13)
BATCH2 = dataclasses.replace(D, log_batch=1, log_block=1, log_uop_buff_size=7, log_inp_buff_size=8,
                             log_wgt_buff_size=8, log_acc_buff_size=10, dram_bytes=1 << 13)
WIDE = dataclasses.replace(SMALL, log_inp_width=5, log_wgt_width=5, log_inp_buff_size=10, log_wgt_buff_size=12)
CONFIGS = {"small": SMALL, "batch2": BATCH2, "wide": WIDE}
ACC_EDGES = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFF00, 0x80000100, 127, 128, 0xFFFFFF80],
                     dtype=np.uint64)
IMM_EDGES = [-32768, -33, -32, -31, -5, -1, 0, 1, 5, 31, 32, 33, 127, -128, 32767]


def _insn(insn, cfg):
    return {"vta_top_instr_in": V.encode(insn, cfg)}


def _uops(rng, cfg, n):
    q = lambda b: max(1, cfg.depth(b) // 4)
    return [V.Uop(int(rng.integers(0, q("acc"))), int(rng.integers(0, q("inp"))), int(rng.integers(0, q("wgt"))))
            for _ in range(n)]


def _initial(rng, cfg, uops):
    """Garbage everywhere (accumulator rows at the int32 edges), valid uops in the uop SRAM and
    at the start of DRAM (a LOAD UOP reloads them)."""
    def mem(buf, width):
        return rng.integers(0, 1 << width, cfg.depth(buf) * cfg.lanes(buf), dtype=np.uint64)
    acc = mem("acc", cfg.acc_width)
    pick = rng.random(acc.size) < 0.3
    acc[pick] = rng.choice(ACC_EDGES, int(pick.sum()))
    dram = rng.integers(0, 256, cfg.dram_bytes, dtype=np.uint8)
    words = np.array([V.encode_uop(u, cfg) for u in uops], dtype="<u4")
    dram[:words.nbytes] = words.view(np.uint8)
    uop = np.zeros(cfg.depth("uop"), np.uint64)
    uop[:len(uops)] = words
    return {"vta_dram": dram, "vta_uop_mem": uop, "vta_inp_mem": mem("inp", cfg.inp_width),
            "vta_wgt_mem": mem("wgt", cfg.wgt_width), "vta_acc_mem": acc}


def _random_insn(rng, cfg, n_uops):
    """One instruction, mostly within the buffers (sometimes running past one: an error both ways)."""
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))
    kind = rng.choice(["load", "load", "store", "gemm", "gemm", "alu", "alu", "alu", "finish"])
    if kind == "load":
        mt = int(rng.choice([V.MEM_UOP, V.MEM_WGT, V.MEM_INP, V.MEM_ACC]))
        buf = {V.MEM_UOP: "uop", V.MEM_WGT: "wgt", V.MEM_INP: "inp", V.MEM_ACC: "acc"}[mt]
        if mt == V.MEM_UOP:
            return V.MemInsn(V.OP_LOAD, mt, 0, 0, 1, n_uops, n_uops)
        pads = [r(0, 2) if rng.random() < 0.8 else r(0, 15) for _ in range(4)]
        ys, xs = r(0, 3), r(0, 4)
        elems = cfg.dram_bytes // cfg.elem_bytes(buf)
        return V.MemInsn(V.OP_LOAD, mt, r(0, cfg.depth(buf) - 1 if rng.random() < 0.1 else cfg.depth(buf) // 2),
                         r(0, max(0, elems - 20)), ys, xs, r(0, 6), *pads)
    if kind == "store":
        elems = cfg.dram_bytes // cfg.elem_bytes("out")
        return V.MemInsn(V.OP_STORE, V.MEM_OUT, r(0, cfg.depth("acc") // 2), r(0, elems - 20), r(1, 3), r(1, 4), r(0, 6))
    if kind == "finish":
        return V.FinishInsn()
    bgn = r(0, n_uops - 1)
    loop = dict(uop_bgn=bgn, uop_end=min(n_uops, bgn + r(1, 3)) if rng.random() < 0.95 else bgn,
                iter_out=r(1, 4), iter_in=r(1, 3), dst_factor_out=r(0, 4), dst_factor_in=r(0, 3),
                src_factor_out=r(0, 4), src_factor_in=r(0, 2) if rng.random() < 0.5 else 0)
    if kind == "gemm":
        return V.GemmInsn(reset=int(rng.random() < 0.3), wgt_factor_out=r(0, 2) if rng.random() < 0.5 else 0,
                          wgt_factor_in=r(0, 3), **loop)
    imm = int(rng.choice(IMM_EDGES)) if rng.random() < 0.6 else r(-32768, 32767)
    return V.AluInsn(alu_opcode=r(0, 4), use_imm=int(rng.random() < 0.5), imm=imm, **loop)


def _random_stream(rng, cfg, n=10):
    uops = _uops(rng, cfg, 6)
    cmds = []
    for _ in range(n):
        if rng.random() < 0.1:
            cmds.append({"vta_vir_mem_mode_in": 1, "vta_vir_mem_addr_in": int(rng.integers(0, cfg.dram_bytes - 8)),
                         "vta_vir_mem_data_in": int(rng.integers(0, 1 << 63))})
        else:
            cmds.append(_insn(_random_insn(rng, cfg, len(uops)), cfg))
    return cmds, _initial(rng, cfg, uops)


def _spy(cfg, bug=None):
    """The summary, recording the child operation of every loop it ran (not declined)."""
    fn, ran = loop_summary(cfg, bug=bug), []

    def spy(S, budget):
        op = S["vta_child_op"]
        n = fn(S, budget)
        if n is not None:
            ran.append(op)
        return n
    return spy, ran


# ----------------------------------------------------------------------------- random programs
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), config=st.sampled_from(sorted(CONFIGS)), n=st.integers(1, 12))
def test_vta_summary_equals_loop_random_programs(seed, config, n):
    cfg = CONFIGS[config]
    cmds, state = _random_stream(np.random.default_rng(seed), cfg, n)
    r = compare_summaries(build_vta(cfg), cmds, state=state, allow_idle=True)
    assert r.ok, r.mismatches


def test_vta_random_programs_run_every_unit_through_the_summary():
    # deterministic seeds: every child operation (4 loads, store, reset, gemm, 5 ALU ops) is
    # summarised somewhere, and every run agrees with the loop
    from ila.models.vta.model import C_ALU, C_GEMM, C_GEMM_RESET, C_LOAD, C_STORE
    seen = set()
    for seed in range(30):
        cfg = CONFIGS[sorted(CONFIGS)[seed % 3]]
        cmds, state = _random_stream(np.random.default_rng(1000 + seed), cfg, 12)
        spy, ran = _spy(cfg)
        r = compare_summaries(build_vta(cfg), cmds, state=state, summaries={CHILD: spy}, allow_idle=True)
        assert r.ok, (seed, r.mismatches)
        seen |= set(ran)
    assert seen >= {*C_LOAD.values(), C_STORE, C_GEMM_RESET, C_GEMM, *C_ALU.values()}, sorted(seen)


# ----------------------------------------------------------------------------- edge cases
EDGE_UOPS = [V.Uop(0, 0, 0), V.Uop(1, 2, 3), V.Uop(5, 1, 7), V.Uop(9, 4, 2), V.Uop(1, 0, 0), V.Uop(20, 3, 1),
             V.Uop(3, 21, 0), V.Uop(30, 30, 0)]


def _edge_stream(cfg, seed=5):
    """Every unit at its edges, each seeded bug's trigger included (comments name them)."""
    rng = np.random.default_rng(seed)
    state = _initial(rng, cfg, EDGE_UOPS)
    acc = state["vta_acc_mem"]
    la = cfg.lanes("acc")
    acc[:40 * la] = np.resize(ACC_EDGES, 40 * la)                 # GEMM/ALU/STORE rows at the int32 edges
    M, L, G, A = V.MemInsn, V.OP_LOAD, V.GemmInsn, V.AluInsn
    insns = [
        M(L, V.MEM_UOP, 0, 0, 1, len(EDGE_UOPS), len(EDGE_UOPS)),
        M(L, V.MEM_INP, 2, 100, 3, 2, 5, 1, 1, 1, 2),             # padding (pad_keeps_old), stride 5 != 2
        M(L, V.MEM_INP, 40, 7, 0, 3, 3, 2, 1, 0, 0),              # y_size 0: padding rows only
        M(L, V.MEM_WGT, 0, 50, 2, 3, 3),
        M(L, V.MEM_WGT, 6, 11, 4, 2, 0),                          # stride 0: the same row four times
        M(L, V.MEM_ACC, 44, 30, 2, 3, 4, 0, 1, 2, 0),
        G(reset=0, uop_bgn=1, uop_end=4, iter_out=2, iter_in=3, dst_factor_out=4, dst_factor_in=1,
          src_factor_out=1, wgt_factor_in=2),                     # separable; several uops; int32 wrap
        G(reset=0, uop_bgn=0, uop_end=3, iter_out=3, iter_in=2, dst_factor_out=0, dst_factor_in=1,
          src_factor_out=1, src_factor_in=1, wgt_factor_out=1, wgt_factor_in=1),   # general; repeated dst
        G(reset=1, uop_bgn=5, uop_end=7, iter_out=2, iter_in=2, dst_factor_out=2, dst_factor_in=1),
        A(alu_opcode=V.ALU_ADD, use_imm=1, imm=-5, uop_bgn=0, uop_end=2, iter_out=4, iter_in=1, dst_factor_out=2),
        A(alu_opcode=V.ALU_MIN, use_imm=0, uop_bgn=1, uop_end=3, iter_out=3, iter_in=2, dst_factor_out=3,
          dst_factor_in=1, src_factor_out=5, src_factor_in=2),    # mixed signs (unsigned compare)
        A(alu_opcode=V.ALU_MAX, use_imm=1, imm=-128, uop_bgn=0, uop_end=1, iter_out=6, iter_in=1, dst_factor_out=1),
        A(alu_opcode=V.ALU_SHR, use_imm=1, imm=-3, uop_bgn=0, uop_end=1, iter_out=5, iter_in=1, dst_factor_out=1),
        A(alu_opcode=V.ALU_SHR, use_imm=1, imm=33, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=2),
        A(alu_opcode=V.ALU_SHR, use_imm=1, imm=-32, uop_bgn=3, uop_end=4, iter_out=2, iter_in=1, dst_factor_out=1),
        A(alu_opcode=V.ALU_SHR, use_imm=0, uop_bgn=1, uop_end=2, iter_out=4, iter_in=1, dst_factor_out=1,
          src_factor_out=2),                                      # shift amounts from int32 edge values
        A(alu_opcode=V.ALU_MUL, use_imm=0, uop_bgn=4, uop_end=5, iter_out=5, iter_in=1, dst_factor_out=1,
          src_factor_out=1),                                      # chained: step i reads row i, written by i-1
        A(alu_opcode=V.ALU_ADD, use_imm=0, uop_bgn=4, uop_end=5, iter_out=6, iter_in=1, dst_factor_out=1,
          src_factor_out=1),                                      # prefix sums (ignores_order)
        A(alu_opcode=V.ALU_ADD, use_imm=1, imm=7, uop_bgn=0, uop_end=1, iter_out=1, iter_in=4),   # one row 4x
        A(alu_opcode=V.ALU_MIN, use_imm=1, imm=127, uop_bgn=0, uop_end=1, iter_out=8, iter_in=1, dst_factor_out=1),
        V.MemInsn(V.OP_STORE, V.MEM_OUT, 0, 200, 3, 4, 2),        # overlapping rows (first_wins), |acc| > 127
        V.MemInsn(V.OP_STORE, V.MEM_OUT, 10, 300, 2, 3, 9),
        V.FinishInsn(),
    ]
    return [_insn(i, cfg) for i in insns], state


@pytest.mark.parametrize("config", ["small", "batch2", "wide", "default"])
def test_vta_summary_equals_loop_edge_cases(config):
    cfg = CONFIGS.get(config, D)
    cmds, state = _edge_stream(cfg)
    spy, ran = _spy(cfg)
    r = compare_summaries(build_vta(cfg), cmds, state=state, summaries={CHILD: spy})
    assert r.ok, r.mismatches
    assert len(ran) == len(cmds) - 1                             # every loop summarised (FINISH has none)


BUG_MEMORY = {"load": "vta_inp_mem", "store": "vta_dram", "gemm": "vta_acc_mem", "alu": "vta_acc_mem"}


@pytest.mark.parametrize("bug", SUMMARY_BUGS)
def test_seeded_bug_in_vta_summary_is_caught(bug):
    cmds, state = _edge_stream(SMALL)
    r = compare_summaries(build_vta(SMALL), cmds, state=state, summaries={CHILD: loop_summary(SMALL, bug=bug)})
    assert not r.ok, f"seeded bug {bug!r} not detected"
    assert BUG_MEMORY[bug.split("_")[0]] in r.mismatches[0], r.mismatches
    with pytest.raises(ValueError, match="unknown seeded bug"):
        loop_summary(SMALL, bug="nope")


def test_vta_summary_equals_loop_on_driver_programs():
    rng = np.random.default_rng(8)
    m = build_vta(D)
    progs = [dense_program(rng.integers(-128, 128, (7, 40)), rng.integers(-128, 128, (33, 40)), shift=5, clip=True,
                           relu=True),
             dense_program(rng.integers(-128, 128, (3, 16)), rng.integers(-128, 128, (16, 16)))]
    a, b = rng.integers(-2 ** 31, 2 ** 31, 70), rng.integers(-2 ** 31, 2 ** 31, 70)
    progs += [elementwise_program("add", a, b), elementwise_program("relu", a), elementwise_program("shr", a, imm=-3)]
    for prog in progs:
        r = compare_summaries(m, program_commands(prog))
        assert r.ok, r.mismatches
        assert r.summary_runs[CHILD] == len(prog.insns) - 1


# ----------------------------------------------------------------------------- declines
def test_vta_summary_declines_mid_loop_over_budget_and_out_of_range():
    cfg = SMALL
    m = build_vta(cfg)
    rng = np.random.default_rng(9)
    state = _initial(rng, cfg, EDGE_UOPS)
    gemm = _insn(V.GemmInsn(uop_bgn=1, uop_end=4, iter_out=2, iter_in=3, dst_factor_out=4, dst_factor_in=1,
                            src_factor_out=1, wgt_factor_in=2), cfg)                # 18 steps
    load = _insn(V.MemInsn(V.OP_LOAD, V.MEM_INP, 3, 10, 3, 4, 4, 1, 0, 1, 0), cfg)   # 20 steps
    for cmd in (gemm, load):
        # over budget: the summary declines, the loop raises its own error at the same command
        r = compare_summaries(m, [cmd], state=state, max_child_steps=10)
        assert r.ok and r.summary_runs == {}
        with pytest.raises(SimulationError, match="quiesce"):
            Simulator(m, state, max_child_steps=10).step(cmd)
        # stopped mid-loop, then resumed by another command: the summary declines, the loop finishes
        sim = Simulator(m, state, summaries=False, max_child_steps=5)
        with pytest.raises(SimulationError):
            sim.step(cmd)
        mid = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in sim.state.items()}
        assert mid["vta_child_op"] != 0
        r = compare_summaries(m, [_insn(V.FinishInsn(), cfg)], state=mid)
        assert r.ok and r.summary_runs == {} and r.child_steps[1] > 0
    # beyond a buffer: the loop raises part-way, the summary declines (same error, same state)
    bad = [_insn(V.MemInsn(V.OP_LOAD, V.MEM_INP, cfg.depth("inp") - 2, 10, 2, 3, 3), cfg),
           _insn(V.MemInsn(V.OP_STORE, V.MEM_OUT, cfg.depth("acc") - 1, 0, 1, 2, 2), cfg),
           _insn(V.GemmInsn(uop_bgn=0, uop_end=1, iter_out=40, dst_factor_out=2), cfg),
           _insn(V.AluInsn(alu_opcode=V.ALU_ADD, uop_bgn=7, uop_end=8, iter_out=40, src_factor_out=1), cfg),
           _insn(V.MemInsn(V.OP_STORE, V.MEM_OUT, 0, cfg.dram_bytes // cfg.elem_bytes("out") - 1, 1, 2, 2), cfg)]
    for cmd in bad:
        r = compare_summaries(m, [cmd], state=state)
        assert r.ok and r.summary_runs == {}, r.mismatches
        with pytest.raises(SimulationError, match="beyond"):
            Simulator(m, state).step(cmd)


def test_vta_summary_is_simulator_only():
    m = build_vta(D)
    child = m.child(CHILD)
    assert child.summary is not None
    assert sorted(i.name for i in child.instrs) == sorted(
        [f"vta_load_{b}_elem" for b in ("uop", "wgt", "inp", "acc")] + ["vta_store_elem", "vta_gemm_reset_elem",
                                                                        "vta_gemm_elem"]
        + [f"vta_alu_{n.lower()}_elem" for n in V.ALU_OPCODES.values()])
    rng = np.random.default_rng(2)
    prog = dense_program(rng.integers(-128, 128, (4, 20)), rng.integers(-128, 128, (20, 20)))
    for kw, runs in (({}, 1), ({"summaries": False}, 0), ({"record_trace": True}, 0)):
        sim = Simulator(m, **kw)
        sim.run(program_commands(prog))
        assert bool(sim.summary_runs) == bool(runs)
        assert sim.child_steps > 0


def test_counterexample_replay_runs_vta_loops_instruction_by_instruction(monkeypatch):
    # verify.bmc.replay runs both sides with summaries=False; a summary that raises would show
    from mappings import registry
    from verify.bmc import replay
    m = registry.get("vta.gemm")
    ps = m.proof.bmc(dict(m.proof.shape))
    child = ps.acc.ila.child(CHILD)
    calls = []

    def spy(S, budget):
        calls.append(S["vta_child_op"])
        return None
    monkeypatch.setattr(child, "_summary", spy)
    rng = np.random.default_rng(3)
    data = {d: int(rng.integers(0, 1 << d.width)) for d in ps.data}
    assert replay(ps, data, {}, {}) is None
    assert calls == []
    Simulator(ps.acc.ila).run([{"vta_top_instr_in": V.encode(V.GemmInsn(reset=1))}])
    assert calls                                    # the spy is the one a default simulator calls


# ----------------------------------------------------------------------------- the driver's numeric fast paths
def _pack_paths_agree(arr, width, bug=None) -> bool:
    """pack_elements (numeric) against pack_element lane by lane, and a _Dram image filled by the
    numeric path against one filled by the element path (an object array)."""
    from ila.models.vta import driver
    slow = [b for v in arr.reshape(-1) for b in driver.pack_element([int(v)], width)]
    if driver.pack_elements(arr, width, bug=bug).tolist() != slow:
        return False
    return True


def test_numeric_packing_equals_the_element_path():
    from ila.models.vta import driver
    rng = np.random.default_rng(21)
    for width, dt in ((8, np.int8), (16, np.int16), (32, np.int32), (32, np.uint32)):
        info = np.iinfo(dt)
        arr = rng.integers(info.min, int(info.max) + 1, (5, 7), dtype=np.int64)
        arr.reshape(-1)[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
        assert _pack_paths_agree(arr.astype(dt), width) and _pack_paths_agree(arr, width)
    for cfg in (D, SMALL, WIDE):
        for buf in ("uop", "inp", "wgt", "acc"):
            w = driver.elem_width(cfg, buf)
            lo = -(1 << (w - 1)) if buf != "uop" else 0
            data = rng.integers(lo, lo + (1 << w), (3, cfg.lanes(buf)), dtype=np.int64)
            fast, slow = driver._Dram(cfg), driver._Dram(cfg)
            for d in (fast, slow):
                at = d.alloc(buf, 4) + 1
                d.terms[at * cfg.elem_bytes(buf) + 1] = "stale"            # a term overwritten both ways
            fast.put(buf, at, data)
            slow.put(buf, at, data.astype(object))
            assert np.array_equal(fast.image, slow.image) and fast.terms == slow.terms == {}
    x, w = rng.integers(-128, 128, (9, 40)), rng.integers(-128, 128, (20, 40))
    a, b = dense_program(x, w), dense_program(x.astype(object), w.astype(object))
    assert np.array_equal(a.dram, b.dram)


def test_the_driver_image_holds_the_first_bytes_of_the_dram():
    """_Dram grows its image as regions are allocated or written (a small program does not build
    the whole DRAM); the image means the whole DRAM with zeros beyond it (VtaProgram.full_dram), a
    write past the allocated regions grows it, one past the DRAM is refused naming the byte."""
    from ila.models.vta import driver
    rng = np.random.default_rng(24)
    x, w = rng.integers(-128, 128, (9, 40)), rng.integers(-128, 128, (20, 40))
    prog = dense_program(x, w)
    assert prog.out_addr <= prog.dram.size < D.dram_bytes
    full = prog.full_dram()
    assert full.size == D.dram_bytes and np.array_equal(full[:prog.dram.size], prog.dram) and not full[prog.dram.size:].any()
    d = driver._Dram(SMALL)
    d.put("inp", d.alloc("inp", 1) + 5, np.ones(SMALL.lanes("inp"), np.int64))       # past the allocated region
    assert d.image.size >= 6 * SMALL.elem_bytes("inp") and d.image[5 * SMALL.elem_bytes("inp")] == 1
    with pytest.raises(driver.VtaIsaError, match=f"{SMALL.dram_bytes}-byte DRAM"):
        d.put("inp", SMALL.dram_bytes // SMALL.elem_bytes("inp"), np.ones(SMALL.lanes("inp"), np.int64))
    with pytest.raises(driver.VtaIsaError, match="outside the"):
        d.set_byte(SMALL.dram_bytes, 1)


def test_seeded_bug_in_numeric_packing_is_caught():
    from ila.models.vta.driver import PACK_BUGS, pack_elements
    rng = np.random.default_rng(22)
    arr = rng.integers(-2 ** 31, 2 ** 31, 20)
    for bug in PACK_BUGS:
        assert not _pack_paths_agree(arr, 32, bug=bug), bug
    with pytest.raises(ValueError, match="unknown seeded bug"):
        pack_elements(arr, 32, bug="nope")


def _dram_paths_agree(image, upto, bug=None) -> bool:
    """The numeric DRAM-write commands (list and table) against the word-by-word path."""
    from ila.models.vta.driver import _word_commands, dram_write_commands, dram_write_table
    slow = _word_commands(image, image.size if upto is None else upto, {})
    return dram_write_commands(image, upto, bug=bug) == slow and dram_write_table(image, upto, bug=bug).rows() == slow


def test_dram_write_commands_equal_the_word_by_word_path():
    from ila.models.vta.driver import run_on_ila
    rng = np.random.default_rng(23)
    image = rng.integers(0, 256, 4000, dtype=np.uint8)
    image[rng.random(4000) < 0.7] = 0                      # many all-zero words (skipped)
    image[:64] = 0
    image[-8:] = 0xFF                                      # a word of all ones (2**64 - 1)
    for upto in (0, 1, 7, 8, 9, 1001, 4000, None):
        assert _dram_paths_agree(image, upto), upto
    x, w = rng.integers(-128, 128, (6, 50)), rng.integers(-128, 128, (21, 50))
    prog = dense_program(x, w, shift=4, clip=True)
    fast = run_on_ila(prog)
    slow = Simulator(build_vta(D))
    slow.run(program_commands(prog))
    from ila.sim import _diff_state
    assert _diff_state(fast, slow) == [] and fast.steps == slow.steps


def test_seeded_bug_in_dram_write_paths_is_caught():
    from ila.models.vta.driver import TABLE_BUGS, dram_write_table
    image = np.random.default_rng(24).integers(0, 256, 200, dtype=np.uint8)
    for bug in TABLE_BUGS:
        assert not _dram_paths_agree(image, 200, bug=bug), bug
    with pytest.raises(ValueError, match="unknown seeded bug"):
        dram_write_table(image, bug="nope")


def _runs_agree(cmds, bug=None, min_run=4) -> bool:
    """Simulator.run of write_runs' pieces in order against Simulator.run of the list: the same
    instruction names, the same state, the same rows."""
    from ila.commands import CommandTable
    from ila.models.vta.driver import write_runs
    from ila.sim import _diff_state
    pieces = write_runs(cmds, bug=bug, min_run=min_run)
    rows = [r for p in pieces for r in (p.rows() if isinstance(p, CommandTable) else p)]
    a, b = Simulator(build_vta(SMALL)), Simulator(build_vta(SMALL))
    names = [nm for p in pieces for nm in a.run(p)]
    return rows == cmds and names == b.run(cmds) and _diff_state(a, b) == []


def test_write_runs_run_like_the_command_list():
    rng = np.random.default_rng(25)
    from ila.models.vta.driver import instruction_commands
    cmds = instruction_commands(dense_program(rng.integers(-128, 128, (5, 30)), rng.integers(-128, 128, (9, 30)),
                                              shift=2, clip=True, cfg=SMALL))
    writes = [{"vta_vir_mem_mode_in": 1, "vta_vir_mem_addr_in": int(a), "vta_vir_mem_data_in": int(d)}
              for a, d in zip(rng.integers(0, SMALL.dram_bytes - 8, 40), rng.integers(0, 1 << 64, 40, dtype=np.uint64))]
    writes[3]["vta_vir_mem_addr_in"] = writes[2]["vta_vir_mem_addr_in"] + 3          # overlapping writes
    odd = [dict(writes[0], vta_vir_mem_data_in=np.uint64(5)), dict(writes[1], vta_vir_mem_mode_in=True),
           {"vta_top_instr_in": V.encode(V.FinishInsn(), SMALL), "vta_vir_mem_addr_in": 8, "vta_vir_mem_data_in": 1}]
    stream = writes[:10] + cmds[:3] + writes[10:12] + cmds[3:] + writes[12:] + odd + writes[:5]
    for min_run in (1, 3, 4, 64):
        assert _runs_agree(stream, min_run=min_run), min_run
    from ila.commands import CommandTable
    from ila.models.vta.driver import write_runs
    kinds = [type(p) for p in write_runs(stream, min_run=4)]
    assert kinds.count(CommandTable) == 1                  # the run of 10; the run of 36 holds odd commands: a list
    clean = writes[12:] + cmds[:1] + writes[:5]
    assert [type(p) for p in write_runs(clean, min_run=4)] == [CommandTable, list, CommandTable]
    assert _runs_agree(clean)
    assert not any(isinstance(p, CommandTable) for p in write_runs(stream, min_run=64))


def test_seeded_bug_in_write_runs_is_caught():
    from ila.models.vta.driver import RUN_BUGS, write_runs
    rng = np.random.default_rng(26)
    writes = [{"vta_vir_mem_mode_in": 1, "vta_vir_mem_addr_in": 8 * k, "vta_vir_mem_data_in": int(d)}
              for k, d in enumerate(rng.integers(1, 1 << 63, 20))]
    for bug in RUN_BUGS:
        assert not _runs_agree(writes, bug=bug), bug
    with pytest.raises(ValueError, match="unknown seeded bug"):
        write_runs(writes, bug="nope")


def test_vta_port_runs_streams_like_the_simulator():
    # the port's runner (write runs as tables, host reads and resets) against plain Simulator runs
    from ila.models.vta.port import port_for
    rng = np.random.default_rng(27)
    p1 = dense_program(rng.integers(-128, 128, (5, 40)), rng.integers(-128, 128, (20, 40)), cfg=SMALL)
    p2 = dense_program(rng.integers(-128, 128, (3, 24)), rng.integers(-128, 128, (9, 24)), cfg=SMALL)
    stream = program_commands(p1) + [{"vta_read_acc": 1}, {"vta_reset": True}] + program_commands(p2) + \
        [{"vta_read_acc": 0}, {"vta_read_acc": 2}]
    reads = port_for(SMALL).run(stream)
    expect = []
    for prog, rows in ((p1, [1]), (p2, [0, 2])):
        sim = Simulator(build_vta(SMALL))
        sim.run(program_commands(prog))
        acc = sim.memory("vta_acc_mem").astype(np.uint32).view(np.int32).reshape(-1, SMALL.lanes("acc"))
        expect += [acc[r] for r in rows]
    assert len(reads) == 3 and all(np.array_equal(a, b) for a, b in zip(reads, expect))


def test_term_shortcuts_of_the_packer_equal_the_generic_path():
    """pack_element's whole-lane shortcut (an 8-bit term in an 8-bit lane) and dram_word's
    shortcut (8 byte variables concatenated as they are) build the very terms of ila.generic's
    path (field / bytes_le, simplified), on variables, repeated variables, constants and mixes."""
    from ila import generic
    from ila.expr import bv_const, extract
    from ila.models.vta import driver
    from ila.sorts import BvSort
    from ila.unroll import symbol
    rng = np.random.default_rng(26)
    xs = [symbol(f"pk_{k}", BvSort(8)) for k in range(6)]
    wide = symbol("pk_w", BvSort(32))
    pool = xs + [bv_const(0, 8), bv_const(200, 8), extract(wide, 15, 8), xs[0] + xs[1]]
    for _ in range(200):
        lanes = [pool[i] for i in rng.integers(0, len(pool), 8)]
        assert driver.pack_element(lanes, 8) == [generic.field(v, 0, 8) for v in lanes]
        mixed = [v if rng.random() < 0.8 else int(rng.integers(0, 256)) for v in lanes]
        got, want = driver.dram_word(mixed), generic.bytes_le(mixed, 8)
        assert got is want or got == want, (mixed, got, want)
    assert driver.dram_word(xs[:4] + xs[:4]) is generic.bytes_le(xs[:4] + xs[:4], 8)


def test_port_reads_runs_of_accumulator_rows_like_one_at_a_time():
    """The VTA runner's reads (a run of consecutive row reads taken from one look at the
    accumulator) against reading each row alone: the same data, in order, for runs, single
    reads, reads after a reset, and a row out of range named in the error."""
    from ila.errors import SimulationError
    from ila.models.vta.port import PORT
    rng = np.random.default_rng(27)
    x, w = rng.integers(-128, 128, (5, 20)), rng.integers(-128, 128, (18, 20))
    body = program_commands(dense_program(x, w))
    rows = [0, 3, 1, 1, 9]
    stream = body + [{"vta_read_acc": r} for r in rows[:3]] + [{"vta_reset": True}] + body + \
        [{"vta_read_acc": rows[3]}] + body + [{"vta_read_acc": rows[4]}]
    got = PORT.run(stream)
    sim = Simulator(build_vta(D))
    sim.run(body)
    acc = sim.memory("vta_acc_mem").astype(np.uint32).view(np.int32)
    want = [acc[16 * r:16 * r + 16] for r in rows]
    assert len(got) == len(want) and all(np.array_equal(a, b) and a.dtype == np.int32 for a, b in zip(got, want))
    depth = sim.memory("vta_acc_mem").shape[0] // 16
    with pytest.raises(SimulationError, match=f"command {len(body) + 1}: accumulator row {depth}"):
        PORT.run(body + [{"vta_read_acc": 0}, {"vta_read_acc": depth}])


def _fill_agrees(sim_state, table, bug=None):
    """fill_dram (or, where it declines, Simulator.run) against Simulator.run of the table from the
    same state: every state and memory, the step count; returns (applied, agree)."""
    from ila.models.vta.driver import fill_dram
    from ila.sim import _diff_state
    a, b = Simulator(build_vta(SMALL)), Simulator(build_vta(SMALL))
    for s in (a, b):
        for k, v in sim_state.items():
            s.set_state(k, v)
    applied = fill_dram(a, table, bug=bug)
    errors = []
    for sim, go in ((a, not applied), (b, True)):
        try:
            if go:
                sim.run(table)
            errors.append(None)
        except SimulationError as exc:                  # both runs must fail alike
            errors.append(str(exc))
    return applied, errors[0] == errors[1] and _diff_state(a, b) == [] and a.steps == b.steps


def test_fill_dram_equals_running_the_write_table():
    """driver.fill_dram (the DRAM-fill fast path of the VTA runner) against the ILA's vta_vir_mem_wr
    run by the simulator: random disjoint writes (applied), and every case it must decline
    (overlapping writes, an address past the DRAM, another mode, an extra column, a running child
    loop), where the simulator's own run decides."""
    from ila.commands import CommandTable
    from ila.models.vta.driver import FILL_BUGS, fill_dram
    rng = np.random.default_rng(28)
    size = SMALL.dram_bytes
    words = rng.choice(size // 8, 50, replace=False)
    addr = (words * 8 + rng.integers(0, 2, 50) * 4).astype(np.uint64)        # some unaligned, none overlap
    addr = addr[np.concatenate([[True], np.diff(np.sort(addr)) >= 8])[np.argsort(np.argsort(addr))]]
    data = rng.integers(0, 1 << 64, addr.size, dtype=np.uint64)
    good = CommandTable({"vta_vir_mem_mode_in": np.ones(addr.size, np.uint8), "vta_vir_mem_addr_in": addr,
                         "vta_vir_mem_data_in": data})
    assert _fill_agrees({}, good) == (True, True)
    over = CommandTable({k: np.concatenate([v, v[:1]]) for k, v in good.columns.items()})
    over.columns["vta_vir_mem_data_in"][-1] = 7
    assert _fill_agrees({}, over) == (False, True)                         # overlapping: the last write wins
    past = CommandTable(dict(good.columns, vta_vir_mem_addr_in=np.where(np.arange(addr.size) == 3, size - 4, addr)))
    assert _fill_agrees({}, past) == (False, True)                         # the simulator names the write
    other = CommandTable(dict(good.columns, vta_vir_mem_mode_in=np.full(addr.size, 2, np.uint8)))
    assert _fill_agrees({}, other) == (False, True)
    extra = CommandTable(dict(good.columns, vta_top_instr_in=np.zeros(addr.size, np.uint64)))
    assert _fill_agrees({}, extra) == (False, True)
    assert _fill_agrees({"vta_child_op": 1}, good)[0] is False           # a LOAD loop would run first
    aligned = CommandTable(dict(good.columns, vta_vir_mem_addr_in=(words[:addr.size] * 8).astype(np.uint64)))
    assert _fill_agrees({}, aligned) == (True, True)                      # every write 8-byte aligned: 64-bit words
    for bug in FILL_BUGS:
        assert _fill_agrees({}, good, bug=bug) == (True, False), bug
        assert _fill_agrees({}, aligned, bug=bug) == (True, False), bug
    with pytest.raises(ValueError, match="unknown seeded bug"):
        fill_dram(Simulator(build_vta(SMALL)), good, bug="nope")


def test_vta_streams_mean_their_rows_and_run_like_them():
    """The numeric fast path of a VTA program's stream (driver.Stream: its DRAM writes one table)
    holds, row for row, the word-by-word path's commands (the AccProgram's ``canonical``), and the
    VTA runner gives the same reads on either; vta.dense's passes concatenate their streams."""
    from ila.models.port import AccProgram
    from ila.models.vta.driver import Stream
    from ila.models.vta.port import PORT
    from mappings import registry
    from mappings.base import Shape
    rng = np.random.default_rng(29)
    m = registry.get("vta.dense")
    shape = Shape({"N": 700, "K": 40, "M": 40})                # several passes
    named = m.bind_operands(shape, [rng.standard_normal((700, 40)).astype(np.float32),
                                    rng.standard_normal((40, 40)).astype(np.float32)])
    prog = m.program(shape, named)
    assert isinstance(prog.commands, Stream) and prog.commands.count("vta_reset") >= 1
    rows = prog.command_list()
    assert rows == prog.canonical() and len(prog.commands) == len(rows)
    assert prog.commands.count("vta_read_acc") == sum(1 for c in rows if "vta_read_acc" in c)
    fast, _ = PORT.run_program(prog)
    slow, _ = PORT.run_program(AccProgram(rows, prog.readback))
    assert np.array_equal(fast, slow) and np.isfinite(fast).all()
    assert Stream([prog.commands, [], rows[:2]]).rows() == rows + rows[:2]
