"""VTA ILA through the simulator: semantics from the documented behavioural simulator (padding on
load, int8 wrap on store, GEMM reset, ALU immediates, negative shift), generated operators against
numpy references, random programs against the independent numpy fsim, and bad input."""
import numpy as np
import pytest

from ila import SimulationError
from ila.models.vta import isa as V
from ila.models.vta.model import build_vta
from ila.models.vta.driver import (dense_program, elementwise_program, result, run_on_fsim, run_on_ila)
from ila.models.vta.reference import VtaFsim, dense_ref
from ila.sim import Simulator

CFG = V.DEFAULT_CONFIG
L = 16


def _sim():
    return Simulator(build_vta(CFG), record_trace=True)


def _step(sim, insn):
    return sim.step({"vta_top_instr_in": V.encode(insn)})


def _acc(sim, row):
    a = sim.memory("vta_acc_mem")[row * L:(row + 1) * L].astype(np.int64)
    return np.where(a >= 1 << 31, a - (1 << 32), a)


def _set_acc(sim, rows: dict):
    acc = sim.memory("vta_acc_mem").copy()
    for r, vals in rows.items():
        acc[r * L:(r + 1) * L] = np.asarray(vals, dtype=np.int64).astype(np.uint32)
    sim.set_state("vta_acc_mem", acc)


def _set_uops(sim, uops):
    mem = sim.memory("vta_uop_mem").copy()
    for k, u in enumerate(uops):
        mem[k] = V.encode_uop(u)
    sim.set_state("vta_uop_mem", mem)


def test_load_pads_with_zeros():
    sim = _sim()
    dram = np.zeros(CFG.dram_bytes, np.uint8)
    dram[5 * 16:(5 + 6) * 16] = np.arange(1, 97, dtype=np.uint8)      # inp elements 5..10
    sim.set_state("vta_dram", dram)
    inp = np.full(CFG.depth("inp") * L, 0xAB, np.uint8)                  # garbage to be overwritten
    sim.set_state("vta_inp_mem", inp)
    # 2 rows x 3 elements from DRAM element 5 with row stride 3, padded 1 row above/below and 1 col left/2 right
    _step(sim, V.MemInsn(V.OP_LOAD, V.MEM_INP, sram_base=4, dram_base=5, y_size=2, x_size=3, x_stride=3,
                         y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=2))
    got = sim.memory("vta_inp_mem").reshape(-1, L)
    xt, yt = 6, 4
    expect = np.zeros((yt, xt, L), np.uint8)
    src = dram[5 * 16:11 * 16].reshape(2, 3, L)
    expect[1:3, 1:4] = src
    assert np.array_equal(got[4:4 + xt * yt], expect.reshape(-1, L))
    assert (got[:4] == 0xAB).all() and (got[4 + xt * yt] == 0xAB).all()       # nothing else touched
    assert sim.trace[0] == "vta_load_inp" and sim.trace.count("vta_load_inp_elem") == xt * yt


def test_store_wraps_int32_to_int8():
    sim = _sim()
    vals = np.array([127, 128, 255, 256, -1, -128, -129, 1000, -1000, 2 ** 31 - 1, -2 ** 31, 0, 1, 2, 3, 300])
    _set_acc(sim, {3: vals})
    _step(sim, V.MemInsn(V.OP_STORE, V.MEM_OUT, sram_base=3, dram_base=7, y_size=1, x_size=1, x_stride=1))
    out = sim.memory("vta_dram")[7 * 16:8 * 16].view(np.int8)
    assert out.tolist() == [((v + 128) % 256) - 128 for v in vals.tolist()]


def _gemm_setup(sim, rng):
    inp = rng.integers(-128, 128, CFG.depth("inp") * L).astype(np.int8).view(np.uint8)
    wgt = rng.integers(-128, 128, CFG.depth("wgt") * 256).astype(np.int8).view(np.uint8)
    sim.set_state("vta_inp_mem", inp)
    sim.set_state("vta_wgt_mem", wgt)
    return inp.view(np.int8).reshape(-1, L).astype(np.int64), wgt.view(np.int8).reshape(-1, 16, 16).astype(np.int64)


def test_gemm_reset_then_accumulate():
    rng = np.random.default_rng(3)
    sim = _sim()
    inp, wgt = _gemm_setup(sim, rng)
    _set_acc(sim, {r: rng.integers(-1000, 1000, L) for r in range(8)})
    _set_uops(sim, [V.Uop(0, 2, 1), V.Uop(0, 5, 3)])
    # reset rows 0..5 (iter_out 3 x iter_in 2, dst = 2i + j) using uop 0 only
    _step(sim, V.GemmInsn(reset=1, uop_bgn=0, uop_end=1, iter_out=3, iter_in=2, dst_factor_out=2, dst_factor_in=1))
    for r in range(6):
        assert (_acc(sim, r) == 0).all()
    before6 = _acc(sim, 6)
    # accumulate with both uops: acc[2i+j] += inp[src+i] @ wgt[w+j].T for each uop
    _step(sim, V.GemmInsn(uop_bgn=0, uop_end=2, iter_out=3, iter_in=2, dst_factor_out=2, dst_factor_in=1,
                          src_factor_out=1, wgt_factor_in=1))
    for i in range(3):
        for j in range(2):
            want = inp[2 + i] @ wgt[1 + j].T + inp[5 + i] @ wgt[3 + j].T
            assert _acc(sim, 2 * i + j).tolist() == want.tolist()
    assert _acc(sim, 6).tolist() == before6.tolist()
    assert sim.trace.count("vta_gemm_elem") == 3 * 2 * 2


def test_gemm_accumulator_wraps_at_32_bits():
    sim = _sim()
    inp = np.zeros(CFG.depth("inp") * L, np.int8)
    inp[:L] = -128
    wgt = np.zeros(CFG.depth("wgt") * 256, np.int8)
    wgt[:256] = -128
    sim.set_state("vta_inp_mem", inp.view(np.uint8))
    sim.set_state("vta_wgt_mem", wgt.view(np.uint8))
    _set_acc(sim, {0: np.full(L, 2 ** 31 - 100)})
    _set_uops(sim, [V.Uop(0, 0, 0)])
    _step(sim, V.GemmInsn(uop_bgn=0, uop_end=1))
    want = ((2 ** 31 - 100 + 16 * 128 * 128 + 2 ** 31) % 2 ** 32) - 2 ** 31
    assert (_acc(sim, 0) == want).all()


@pytest.mark.parametrize("op,imm,fn", [
    (V.ALU_ADD, -5, lambda x: x - 5),
    (V.ALU_MAX, 0, lambda x: np.maximum(x, 0)),
    (V.ALU_MIN, -32768, lambda x: np.minimum(x, -32768)),        # sign-extended, not 0x8000
    (V.ALU_SHR, 3, lambda x: x >> 3),
    (V.ALU_SHR, -4, lambda x: ((x << 4) + 2 ** 31) % 2 ** 32 - 2 ** 31),   # negative shift = left shift
    (V.ALU_MUL, -3, lambda x: x * -3),
])
def test_alu_immediates(op, imm, fn):
    sim = _sim()
    x = np.array([0, 1, -1, 7, -7, 100000, -100000, 2 ** 20, -2 ** 20, 12345, -54321, 40000, -40000, 5, -5, 3])
    _set_acc(sim, {2: x, 3: x[::-1]})
    _set_uops(sim, [V.Uop(2, 0, 0)])
    _step(sim, V.AluInsn(alu_opcode=op, use_imm=1, imm=imm, iter_out=2, dst_factor_out=1))
    assert _acc(sim, 2).tolist() == fn(x).tolist()
    assert _acc(sim, 3).tolist() == fn(x[::-1]).tolist()


def test_alu_register_operand_and_shift_by_register():
    sim = _sim()
    x = np.arange(-8, 8) * 1000
    y = np.array([1, -1, 2, -2, 0, 31, -31, 32, -32, 40, 3, -3, 5, -5, 7, -7])
    _set_acc(sim, {0: x, 9: y})
    _set_uops(sim, [V.Uop(0, 9, 0)])
    _step(sim, V.AluInsn(alu_opcode=V.ALU_SHR, use_imm=0))
    from ila.numerics.fixed_point import vta_shr
    assert _acc(sim, 0).tolist() == vta_shr(x, y).tolist()
    _step(sim, V.AluInsn(alu_opcode=V.ALU_ADD, use_imm=0))
    assert _acc(sim, 0).tolist() == (vta_shr(x, y) + y).tolist()


@pytest.mark.parametrize("n,k,m", [(1, 16, 16), (5, 20, 7), (17, 33, 40), (32, 64, 48)])
def test_dense_matches_int8_reference(n, k, m):
    rng = np.random.default_rng(n * 100 + k)
    x, w = rng.integers(-128, 128, (n, k)), rng.integers(-128, 128, (m, k))
    for kw in ({}, {"shift": 7, "clip": True}, {"relu": True, "shift": 9}):
        prog = dense_program(x, w, **kw)
        sim = run_on_ila(prog)
        ref = dense_ref(x, w, shift=kw.get("shift", 0), clip=kw.get("clip", False))
        if kw.get("relu"):        # SHR, MAX 0, then int8 truncation on store
            acc = (x.astype(np.int64) @ w.T.astype(np.int64)) >> kw["shift"]
            ref = ((np.maximum(acc, 0) + 128) % 256 - 128).astype(np.int8)
        assert np.array_equal(result(prog, sim.memory("vta_dram")), ref), kw


def test_dense_chunks_rows_when_sram_is_small():
    import dataclasses
    small = dataclasses.replace(CFG, log_inp_buff_size=10, log_acc_buff_size=12, log_wgt_buff_size=14)
    rng = np.random.default_rng(4)
    x, w = rng.integers(-128, 128, (40, 32)), rng.integers(-128, 128, (20, 32))
    prog = dense_program(x, w, cfg=small)
    assert sum(isinstance(i, V.GemmInsn) for i in prog.insns) > 2           # several row chunks
    sim = run_on_ila(prog, via_mmio=False)
    assert np.array_equal(result(prog, sim.memory("vta_dram")), dense_ref(x, w))


def test_elementwise_ops():
    rng = np.random.default_rng(5)
    a = rng.integers(-2 ** 31, 2 ** 31, (3, 21))
    b = rng.integers(-2 ** 31, 2 ** 31, (3, 21))
    wrap8 = lambda v: ((np.asarray(v, np.int64) + 128) % 256 - 128).astype(np.int8)
    wrap32 = lambda v: (np.asarray(v, np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31
    cases = [("add", dict(b=b), wrap8(wrap32(a + b))), ("relu", {}, wrap8(np.maximum(a, 0))),
             ("shr", dict(imm=20), np.clip(a >> 20, -128, 127).astype(np.int8)),
             ("shr", dict(imm=-2), np.clip(wrap32(a << 2), -128, 127).astype(np.int8))]
    for op, kw, want in cases:
        prog = elementwise_program(op, a, **kw)
        sim = run_on_ila(prog)
        assert np.array_equal(result(prog, sim.memory("vta_dram")), want), op


def _random_program(rng):
    """Random in-bounds LOAD/GEMM/ALU/STORE sequence over small index ranges."""
    insns = [V.MemInsn(V.OP_LOAD, V.MEM_UOP, 0, 0, 1, 8, 8)]
    for _ in range(8):
        kind = rng.integers(0, 5)
        if kind == 0:
            mt = int(rng.choice([V.MEM_INP, V.MEM_WGT, V.MEM_ACC]))
            insns.append(V.MemInsn(V.OP_LOAD, mt, int(rng.integers(0, 40)), int(rng.integers(0, 100)),
                                   int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(1, 5)),
                                   *(int(v) for v in rng.integers(0, 3, 4))))
        elif kind in (1, 2):
            f = [int(v) for v in rng.integers(0, 4, 6)]
            bgn = int(rng.integers(0, 5))
            loop = dict(uop_bgn=bgn, uop_end=bgn + int(rng.integers(0, 4)),
                        iter_out=int(rng.integers(0, 4)) if rng.random() < 0.2 else int(rng.integers(1, 4)),
                        iter_in=int(rng.integers(1, 4)))
            if kind == 1:
                insns.append(V.GemmInsn(reset=int(rng.random() < 0.3), dst_factor_out=f[0], dst_factor_in=f[1],
                                        src_factor_out=f[2], src_factor_in=f[3], wgt_factor_out=f[4],
                                        wgt_factor_in=f[5], **loop))
            else:
                insns.append(V.AluInsn(alu_opcode=int(rng.integers(0, 5)), use_imm=int(rng.integers(0, 2)),
                                       imm=int(rng.integers(-300, 300)), dst_factor_out=f[0], dst_factor_in=f[1],
                                       src_factor_out=f[2], src_factor_in=f[3], **loop))
        elif kind == 3:
            insns.append(V.MemInsn(V.OP_STORE, V.MEM_OUT, int(rng.integers(0, 40)), int(rng.integers(0, 100)),
                                   int(rng.integers(0, 4)), int(rng.integers(0, 4)), int(rng.integers(3, 6))))
        else:
            insns.append(V.FinishInsn())
    return insns


def test_random_programs_match_numpy_fsim():
    rng = np.random.default_rng(11)
    fired = []
    for trial in range(25):
        dram = rng.integers(0, 256, 64 * 1024, dtype=np.uint8)
        uops = [V.Uop(int(rng.integers(0, 32)), int(rng.integers(0, 32)), int(rng.integers(0, 16))) for _ in range(8)]
        dram[:32] = np.array([V.encode_uop(u) for u in uops], dtype="<u4").view(np.uint8)
        insns = _random_program(rng)
        sim = Simulator(build_vta(CFG), record_trace=True)
        full = np.zeros(CFG.dram_bytes, np.uint8)
        full[:dram.size] = dram
        sim.set_state("vta_dram", full)
        for insn in insns:
            if V.encode(insn) != 0:
                _step(sim, insn)
        fs = VtaFsim(CFG)
        fs.dram[:] = full
        fs.run(insns)
        assert np.array_equal(sim.memory("vta_dram"), fs.dram), trial
        assert np.array_equal(_acc_all(sim), fs.acc.reshape(-1)), trial
        assert np.array_equal(sim.memory("vta_inp_mem").view(np.int8), fs.inp.reshape(-1).astype(np.int8)), trial
        assert sim.state["vta_finish_count"] == fs.finish_count
        fired += sim.trace
    for name in ("vta_gemm_elem", "vta_gemm_reset_elem", "vta_store_elem", "vta_load_acc_elem",
                 "vta_load_wgt_elem", "vta_alu_shr_elem", "vta_alu_add_elem"):
        assert fired.count(name) > 0, name                 # the random programs exercise each path


def _acc_all(sim):
    a = sim.memory("vta_acc_mem").astype(np.int64)
    return np.where(a >= 1 << 31, a - (1 << 32), a)


def test_fsim_runs_generated_programs():
    rng = np.random.default_rng(6)
    x, w = rng.integers(-128, 128, (9, 30)), rng.integers(-128, 128, (18, 30))
    prog = dense_program(x, w, shift=6, clip=True)
    assert np.array_equal(result(prog, run_on_fsim(prog).dram), dense_ref(x, w, shift=6, clip=True))


# ----------------------------------------------------------------------------- bad input
def test_unknown_opcode_has_no_instruction():
    sim = _sim()
    for op in (5, 6, 7):
        with pytest.raises(SimulationError, match="no instruction"):
            sim.step({"vta_top_instr_in": op})
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step({"vta_top_instr_in": V.OP_LOAD | (6 << 7)})          # unknown memory type
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step({"vta_top_instr_in": V.OP_STORE | (V.MEM_INP << 7)})  # STORE only from OUT


def test_buffer_overflow_is_an_error():
    sim = _sim()
    with pytest.raises(SimulationError, match="vta_inp_mem.*beyond"):
        _step(sim, V.MemInsn(V.OP_LOAD, V.MEM_INP, sram_base=2047, y_size=1, x_size=2, x_stride=2))
    fs = VtaFsim(CFG)
    with pytest.raises(V.VtaIsaError, match="exceeds depth"):
        fs.execute(V.MemInsn(V.OP_LOAD, V.MEM_INP, sram_base=2047, y_size=1, x_size=2, x_stride=2))
    with pytest.raises(V.VtaIsaError, match="weight-buffer elements"):
        dense_program(np.zeros((1, 16 * 33), int), np.zeros((16 * 32, 16 * 33), int))


def test_generators_reject_bad_operands():
    with pytest.raises(V.VtaIsaError, match="int8"):
        dense_program(np.full((2, 2), 300), np.zeros((2, 2), int))
    with pytest.raises(V.VtaIsaError, match=r"x\[N,K\] and w\[M,K\]"):
        dense_program(np.zeros((2, 3), int), np.zeros((2, 4), int))
    with pytest.raises(V.VtaIsaError, match="unknown element-wise"):
        elementwise_program("sub", np.zeros(4, int))
