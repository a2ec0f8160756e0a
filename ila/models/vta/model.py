"""ILA model of VTA (Versatile Tensor Accelerator), parameterised by a :class:`VtaConfig`.

Semantics follow the documented behavioural simulator (``SEEDS_NOTES.md`` §1.3, tvm-vta
``sim_driver.cc``); the structure follows the 3LA VTA ILA (a top-level instruction per
(opcode, memory type / ALU opcode) that latches the decoded fields, and a child ILA
``vta_child`` whose instructions run the loops).

**Execution order.** The model executes instructions in program order. The dependency flags
(pop/push prev/next) are decoded but not modelled: there are no dependency queues, no module
concurrency and hence no RAW/WAR hazards to respect (as in the 3LA VTA ILA). A program that is
correct under VTA's token protocol computes the same result here.

Interface (inputs): ``vta_top_instr_in`` (128 bits, one VTA instruction);
``vta_vir_mem_mode_in`` (3 bits, 1 = write DRAM), ``vta_vir_mem_addr_in`` (32-bit byte address),
``vta_vir_mem_data_in`` (64 bits, written little-endian to 8 bytes). A command is valid when the
instruction or the mode is non-zero (the all-zero word, a LOAD UOP with ``x_size = 0``, is a no-op
either way).

State: ``vta_dram`` (bytes), and the on-chip SRAMs as flat element-lane memories:
``vta_uop_mem[depth]`` (32-bit uops), ``vta_inp_mem[depth*BATCH*BLOCK_IN]`` (int8),
``vta_wgt_mem[depth*BLOCK_OUT*BLOCK_IN]`` (int8, each element ``[out][in]``),
``vta_acc_mem[depth*BATCH*BLOCK_OUT]`` (int32). Row ``r``, lane ``l`` of a buffer with ``L``
lanes is entry ``r*L + l``. As in the behavioural simulator, STORE reads the accumulator and
truncates each lane to the output width (the hardware's OUT buffer mirrors it).

Child instructions (one per loop iteration; each computes one whole SRAM row with vectorised
lanes): ``vta_load_<buf>_elem`` (one element of a padded 2D DMA: zero in the padding),
``vta_store_elem`` (one element, int32 -> int8 truncation), ``vta_gemm_reset_elem``,
``vta_gemm_elem`` (one output row: ``acc[d] += inp[s] @ wgt[w].T`` in wrapping int32), and
``vta_alu_<op>_elem`` for MIN, MAX, ADD, SHR, MUL with a register or sign-extended immediate
operand. GEMM and ALU iterate ``for i < iter_out: for j < iter_in: for uop in [bgn, end)``.

The simulator runs each loop through a tensor-level summary (:mod:`ila.models.vta.summaries`,
registered with ``child.set_summary``), checked bit-exact against the loop by
``tests/test_vta_summaries.py``; ``Simulator(summaries=False)`` and proofs see the loop.
"""
from __future__ import annotations

from functools import lru_cache

from ila import Ila, bv_const, concat, extract, ite, load, sext, store, zext
from ila.models.vta.isa import (ALU_ADD, ALU_MAX, ALU_MIN, ALU_MUL, ALU_OPCODES, ALU_SHR, DEFAULT_CONFIG,
                      MEM_ACC, MEM_INP, MEM_OUT, MEM_UOP, MEM_WGT, OP_ALU, OP_FINISH, OP_GEMM,
                      OP_LOAD, OP_STORE, VtaConfig, VtaIsaError, alu_layout, gemm_layout, mem_layout,
                      uop_layout)

IDX_W = 32          # width of SRAM index arithmetic
DRAM_AW = 48        # width of DRAM byte-address arithmetic (no wrap for any 32-bit dram_base)
VIR_WR_DRAM = 1

# child operation codes (state vta_child_op; 0 = idle), buffers and their states: ila.models.vta.codes
from ila.models.vta.codes import BUF_OF, C_ALU, C_GEMM, C_GEMM_RESET, C_IDLE, C_LOAD, C_STORE, CHILD_OP_W, MEM_STATE  # noqa: E402,F401


def _w(cfg: VtaConfig, buf: str) -> int:
    return {"uop": 32, "inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width,
            "out": cfg.out_width}[buf]


def _load_le(mem, addr, nbytes: int):
    """Little-endian load of ``nbytes`` bytes starting at ``addr`` (byte memory)."""
    if nbytes == 1:
        return load(mem, addr)
    parts = [load(mem, addr + b) for b in reversed(range(nbytes))]
    return concat(*parts)


def _x(e, w=IDX_W):
    return zext(e, w)


@lru_cache(maxsize=8)
def build_vta(cfg: VtaConfig = DEFAULT_CONFIG) -> Ila:
    """Build the VTA ILA for ``cfg`` (cached per configuration; models are immutable once built)."""
    if cfg.inp_width % 8 or cfg.wgt_width % 8 or cfg.acc_width % 8 or cfg.acc_width > 32:
        raise VtaIsaError("the VTA ILA model needs byte-multiple element widths and acc_width <= 32")
    m = Ila("vta")
    instr = m.new_bv_input("vta_top_instr_in", 128)
    vmode = m.new_bv_input("vta_vir_mem_mode_in", 3)
    vaddr = m.new_bv_input("vta_vir_mem_addr_in", 32)
    vdata = m.new_bv_input("vta_vir_mem_data_in", 64)
    m.set_valid(instr.ne(0) | vmode.ne(0))
    m.set_fetch(instr)

    dram = m.new_mem_state("vta_dram", DRAM_AW, 8, size=cfg.dram_bytes)
    mems = {}
    for buf in ("uop", "inp", "wgt", "acc"):
        mems[buf] = m.new_mem_state(MEM_STATE[buf], IDX_W, _w(cfg, buf), size=cfg.depth(buf) * cfg.lanes(buf))
    finish = m.new_bv_state("vta_finish_count", 32)
    op = m.new_bv_state("vta_child_op", CHILD_OP_W)

    ml, gl, al = mem_layout(cfg), gemm_layout(cfg), alu_layout(cfg)

    def fld(f):
        return extract(instr, f.hi, f.lo)

    # latched fields (one state per distinct field; GEMM and ALU share the loop fields)
    S = {}
    for name, f in list(ml.items()) + list(gl.items()) + list(al.items()):
        if name in ("opcode", "pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep") or name in S:
            continue
        width = max(f.width, gl[name].width if name in gl else 0, al[name].width if name in al else 0)
        S[name] = m.new_bv_state(f"vta_{name}", width)
    cy, cx = m.new_bv_state("vta_cnt_y", 18), m.new_bv_state("vta_cnt_x", 18)
    sram_idx = m.new_bv_state("vta_sram_idx", IDX_W)
    ci, cj = m.new_bv_state("vta_cnt_i", 14), m.new_bv_state("vta_cnt_j", 14)
    upc = m.new_bv_state("vta_upc", 15)
    for s in [finish, op, cy, cx, sram_idx, ci, cj, upc, *S.values()]:
        m.add_init(s.eq(0))

    opcode = fld(ml["opcode"])
    is_insn = vmode.eq(0)

    def latch(ins, lay):
        for name, f in lay.items():
            if name in S:
                ins.set_update(S[name], zext(fld(f), S[name].width))

    # ---------------------------------------------------------------- top level: memory
    for mt, buf in BUF_OF.items():
        ins = m.new_instr(f"vta_load_{buf}")
        ins.set_decode(is_insn & opcode.eq(OP_LOAD) & fld(ml["memory_type"]).eq(mt))
        latch(ins, ml)
        ytot = _x(fld(ml["y_size"])) + _x(fld(ml["y_pad_0"])) + _x(fld(ml["y_pad_1"]))
        busy = fld(ml["x_size"]).ne(0) & ytot.ne(0)
        ins.set_update(op, ite(busy, bv_const(C_LOAD[mt], CHILD_OP_W), bv_const(C_IDLE, CHILD_OP_W)))
        ins.set_update(cy, bv_const(0, 18))
        ins.set_update(cx, bv_const(0, 18))
        ins.set_update(sram_idx, _x(fld(ml["sram_base"])))
    ins = m.new_instr("vta_store")
    ins.set_decode(is_insn & opcode.eq(OP_STORE) & fld(ml["memory_type"]).eq(MEM_OUT))
    latch(ins, ml)
    busy = fld(ml["x_size"]).ne(0) & fld(ml["y_size"]).ne(0)
    ins.set_update(op, ite(busy, bv_const(C_STORE, CHILD_OP_W), bv_const(C_IDLE, CHILD_OP_W)))
    ins.set_update(cy, bv_const(0, 18))
    ins.set_update(cx, bv_const(0, 18))

    # ---------------------------------------------------------------- top level: compute
    def loop_start(ins, lay, code):
        latch(ins, lay)
        busy = (fld(lay["iter_out"]).ne(0) & fld(lay["iter_in"]).ne(0)
                & _x(fld(lay["uop_bgn"]), 16).ult(_x(fld(lay["uop_end"]), 16)))
        ins.set_update(op, ite(busy, code, bv_const(C_IDLE, CHILD_OP_W)))
        ins.set_update(ci, bv_const(0, 14))
        ins.set_update(cj, bv_const(0, 14))
        ins.set_update(upc, zext(fld(lay["uop_bgn"]), 15))

    ins = m.new_instr("vta_gemm")
    ins.set_decode(is_insn & opcode.eq(OP_GEMM))
    loop_start(ins, gl, ite(fld(gl["reset"]).eq(1), bv_const(C_GEMM_RESET, CHILD_OP_W), bv_const(C_GEMM, CHILD_OP_W)))
    for aop, aname in ALU_OPCODES.items():
        ins = m.new_instr(f"vta_alu_{aname.lower()}")
        ins.set_decode(is_insn & opcode.eq(OP_ALU) & fld(al["alu_opcode"]).eq(aop))
        loop_start(ins, al, bv_const(C_ALU[aop], CHILD_OP_W))
    ins = m.new_instr("vta_finish")
    ins.set_decode(is_insn & opcode.eq(OP_FINISH))
    ins.set_update(finish, finish + 1)

    ins = m.new_instr("vta_vir_mem_wr")
    ins.set_decode(vmode.eq(VIR_WR_DRAM) & instr.eq(0))
    d = dram
    for b in range(8):
        d = store(d, zext(vaddr, DRAM_AW) + b, extract(vdata.lshr(8 * b), 7, 0))
    ins.set_update(dram, d)

    _build_child(m, cfg, S, mems, dram, op, cy, cx, sram_idx, ci, cj, upc)
    return m


def _build_child(m, cfg, S, mems, dram, op, cy, cx, sram_idx, ci, cj, upc):
    child = m.new_child("vta_child")
    child.set_valid(op.ne(C_IDLE))
    idle = bv_const(C_IDLE, CHILD_OP_W)

    # ------------------------------------------------------------ 2D DMA loops (LOAD / STORE)
    xsize, ysize = _x(S["x_size"]), _x(S["y_size"])
    xp0, xp1, yp0, yp1 = (_x(S[n]) for n in ("x_pad_0", "x_pad_1", "y_pad_0", "y_pad_1"))
    y, x = _x(cy), _x(cx)

    def advance_2d(ins, xtot, ytot):
        last_x = (x + 1).eq(xtot)
        ins.set_update(cx, ite(last_x, bv_const(0, 18), cx + 1))
        ins.set_update(cy, ite(last_x, cy + 1, cy))
        ins.set_update(op, ite(last_x & (y + 1).eq(ytot), idle, op))

    xtot, ytot = xsize + xp0 + xp1, ysize + yp0 + yp1
    inside = y.uge(yp0) & y.ult(yp0 + ysize) & x.uge(xp0) & x.ult(xp0 + xsize)
    elem = (zext(S["dram_base"], DRAM_AW) + zext((y - yp0) * _x(S["x_stride"]), DRAM_AW)
            + zext(x - xp0, DRAM_AW))
    for mt, buf in BUF_OF.items():
        ins = child.new_instr(f"vta_load_{buf}_elem")
        ins.set_decode(op.eq(C_LOAD[mt]))
        lanes, width = cfg.lanes(buf), _w(cfg, buf)
        nb = width // 8
        base = ite(inside, elem * cfg.elem_bytes(buf), bv_const(0, DRAM_AW))
        mem = mems[buf]
        new = mem
        for lane in range(lanes):
            data = _load_le(dram, base + lane * nb, nb)
            new = store(new, sram_idx * lanes + lane, ite(inside, data, bv_const(0, width)))
        ins.set_update(mem, new)
        ins.set_update(sram_idx, sram_idx + 1)
        advance_2d(ins, xtot, ytot)

    ins = child.new_instr("vta_store_elem")
    ins.set_decode(op.eq(C_STORE))
    lanes, ow = cfg.lanes("out"), cfg.out_width
    src = _x(S["sram_base"]) + y * xsize + x
    dst = zext(S["dram_base"], DRAM_AW) + zext(y * _x(S["x_stride"]) + x, DRAM_AW)
    new = dram
    for lane in range(lanes):
        val = extract(load(mems["acc"], src * lanes + lane), ow - 1, 0)
        for b in range(ow // 8):
            new = store(new, dst * (lanes * ow // 8) + (lane * ow // 8 + b), extract(val.lshr(8 * b), 7, 0))
    ins.set_update(dram, new)
    advance_2d(ins, xsize, ysize)

    # ------------------------------------------------------------ micro-coded loops (GEMM / ALU)
    ul = uop_layout(cfg)
    uop = load(mems["uop"], zext(upc, IDX_W))
    u = {n: _x(extract(uop, f.hi, f.lo)) for n, f in ul.items()}
    i, j = _x(ci), _x(cj)
    acc_idx = u["dst_idx"] + i * _x(S["dst_factor_out"]) + j * _x(S["dst_factor_in"])
    src_idx = u["src_idx"] + i * _x(S["src_factor_out"]) + j * _x(S["src_factor_in"])
    wgt_idx = u["wgt_idx"] + i * _x(S["wgt_factor_out"]) + j * _x(S["wgt_factor_in"])

    def advance_loops(ins):
        last_u = (zext(upc, 16) + 1).eq(zext(S["uop_end"], 16))
        last_j = (cj + 1).eq(S["iter_in"])
        last_i = (ci + 1).eq(S["iter_out"])
        ins.set_update(upc, ite(last_u, zext(S["uop_bgn"], 15), upc + 1))
        ins.set_update(cj, ite(last_u, ite(last_j, bv_const(0, 14), cj + 1), cj))
        ins.set_update(ci, ite(last_u & last_j, ci + 1, ci))
        ins.set_update(op, ite(last_u & last_j & last_i, idle, op))

    acc, aw = mems["acc"], cfg.acc_width
    la, li, lw = cfg.lanes("acc"), cfg.lanes("inp"), cfg.lanes("wgt")
    bo, bi = cfg.block_out, cfg.block_in

    ins = child.new_instr("vta_gemm_reset_elem")
    ins.set_decode(op.eq(C_GEMM_RESET))
    new = acc
    for lane in range(la):
        new = store(new, acc_idx * la + lane, bv_const(0, aw))
    ins.set_update(acc, new)
    advance_loops(ins)

    ins = child.new_instr("vta_gemm_elem")
    ins.set_decode(op.eq(C_GEMM))
    new = acc
    for b in range(cfg.batch):
        for o in range(bo):
            lane = b * bo + o
            s = load(acc, acc_idx * la + lane)
            for k in range(bi):
                a = sext(load(mems["inp"], src_idx * li + (b * bi + k)), aw)
                w = sext(load(mems["wgt"], wgt_idx * lw + (o * bi + k)), aw)
                s = s + a * w
            new = store(new, acc_idx * la + lane, s)
    ins.set_update(acc, new)
    advance_loops(ins)

    imm = sext(S["imm"], aw)
    use_imm = S["use_imm"].eq(1)
    sidx = ite(use_imm, acc_idx, src_idx)     # no read of an unused (possibly garbage) source row
    for aop, aname in ALU_OPCODES.items():
        ins = child.new_instr(f"vta_alu_{aname.lower()}_elem")
        ins.set_decode(op.eq(C_ALU[aop]))
        new = acc
        for lane in range(la):
            xv = load(acc, acc_idx * la + lane)
            yv = ite(use_imm, imm, load(acc, sidx * la + lane))
            if aop == ALU_MIN:
                r = ite(xv.slt(yv), xv, yv)
            elif aop == ALU_MAX:
                r = ite(xv.sgt(yv), xv, yv)
            elif aop == ALU_ADD:
                r = xv + yv
            elif aop == ALU_SHR:
                r = ite(yv.sge(0), xv.ashr(yv), xv.shl(-yv))
            elif aop == ALU_MUL:
                r = xv * yv
            new = store(new, acc_idx * la + lane, r)
        ins.set_update(acc, new)
        advance_loops(ins)
    from ila.models.vta.summaries import loop_summary     # simulator only: proofs see the loops above
    child.set_summary(loop_summary(cfg), name="vta_loops")
    return child


__all__ = ["build_vta", "VIR_WR_DRAM", "MEM_STATE", "IDX_W", "DRAM_AW"]
