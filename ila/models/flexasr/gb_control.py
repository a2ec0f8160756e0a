"""GBControl (linear layer and LSTM through the four PEs): child ILAs for the GB-side sequencing,
the PE core (MAC, bias) and the PE activation unit (micro-ops).

Granularity (coarser than flexnlp-ila, same numerics): one child instruction moves one 16-byte
vector to all four PEs, does one 16x16 MAC tile, one bias/shift/clamp of a 16-row output vector,
or one activation micro-op on a 16-lane register. The four PEs run in lockstep (the driver
configures them with identical sizes; loop bounds come from PE0's registers, addresses and
biases from each PE's own registers).

Child ``Child_GB_Control`` (state ``gb_control_child_state``):
  PREP(0) t:=0 -> SEND(1): input vector v of timestep t (GB memory index mem_idx_1, tiled with
  num_vector_1) -> every PE input buffer at base_input_1*16 + 16v; then, if is_rnn, SEND_H(2):
  hidden vector v of timestep t-1 (mem_idx_2, num_vector_2; zeros at t = 0 when is_zero_first) ->
  base_input_2*16 + 16v; then PE_START(3) -> WAIT(4) until the activation unit finishes and sets
  NEXT(5): t += 1 -> SEND or DONE(6) (clear valid, raise the interrupt).
Child ``PE_CORE_CHILD``: MAC (``pe_core_mac``), for the output vectors o..o+3 at once (a chunk of
  PE_CORE_OC = 4; vectors past num_output are inert) and input vector j: partial sum
  P[256 oo + 16 l + k] := (j == 0 ? 0 : P[...]) + ProductSum(W[o+oo][j][l][k], x[16j + k]) (32-bit
  wrap) in ``pe{p}_accum``, over the input vectors of manager 1 then (num_manager = 2) manager 2;
  BIAS (``pe_core_bias``): acc = the 16 partial sums of each (oo, l) added (AccumAdd; the same
  32-bit value as summing the 16 products per j first, addition mod 2^32 being associative), then
  core_out[16(o+oo) + l] := RunBias(acc) (manager 1, with the bias byte when is_bias) or core_out
  + RunBias(acc) (manager 2). Weight tile (o, j) of manager k starts at base_weight_k*16 +
  256*(o*num_inputs_k + j), row-major 16x16; bias bytes at base_bias_1*16 + 16*o. The bias step
  also prefetches act micro-op 0 into ``pe_act_opcode``/``pe_act_ra``/``pe_act_rb``.
Child ``PE_ACT_CHILD``: runs the num_inst-op micro-program once per output group g < num_output:
  LOAD A (act_buffer[buffer_base + 16g + l], zero at t = 0 when is_zero_first), STORE A, INPE A
  (next core output vector), OUTGB A (Fixed2Adaptfloat with adpbias_out into GB mem_idx_2 at
  timestep t, vector output_base + g), COPY/EADD/EMUL A,B, SIGM/TANH/RELU/ONEX A.

The simulator runs ``PE_CORE_CHILD``'s loop (all MACs and bias steps of one timestep) through a
tensor-level summary (:func:`pe_core_summary`, registered with ``set_summary``), checked bit-exact
against the loop by ``tests/test_sim_summaries.py``; proofs see the instructions.
"""
from __future__ import annotations

import numpy as np

from ila import TRUE, bv_const, ite, load, store, zext
from ila.models.flexasr import constants as C
from ila.models.flexasr.funcs import (FIXED2ADAPTFLOAT, PE_ACT_EADD, PE_ACT_EMUL, PE_ACT_ONEX, PE_ACT_RELU, PE_ACT_SIGMOID,
                    PE_ACT_TANH, PE_CORE_ACCUM2ACT, PRODUCT_SUM)
from ila.models.flexasr.model import Flex, large_base, start_instr, tiled_addr, u32
from ila.models.flexasr.tables import _call, _table8x8, product_factors

PREFIX = "gb_control"
PREP, SEND, SEND_H, PE_START, WAIT, NEXT, DONE = range(7)


def _c(v, w):
    return bv_const(v, w)


def build(f: Flex):
    m = f.m
    valid = f.new_bv(f"{PREFIX}_child_valid", 1)
    state = f.new_bv(f"{PREFIX}_child_state", 4)
    start_instr(f, "GB_CONTROL_START", C.START_GB_CONTROL, f[f"{PREFIX}_is_valid"], valid, state, PREP)
    core_valid = f.new_bv("pe_core_child_valid", 1)
    act_valid = f.new_bv("pe_act_child_valid", 1)
    cfg = {k: f[f"{PREFIX}_{k}"] for k in ("is_rnn", "mem_idx_1", "mem_idx_2", "num_vector_1",
                                            "num_vector_2", "num_timestep")}

    # ------------------------------------------------------------------ GB side
    g = m.new_child("Child_GB_Control")
    g.set_valid(valid.eq(1))
    t = f.new_bv(f"{PREFIX}_ts_cntr", 16)
    v = f.new_bv(f"{PREFIX}_v_cntr", 8)
    big = f["gb_core_large_buffer"]
    first = t.eq(0) & f["pe0_rnn_layer_sizing_is_zero_first"].eq(1)

    i = g.new_instr("gb_control_prep")
    i.set_decode(state.eq(PREP))
    i.set_update(t, _c(0, 16))
    i.set_update(v, _c(0, 8))
    i.set_update(state, _c(SEND, 4))

    def send(name, code, mem_idx, nv, ts, mngr, zero):
        ins = g.new_instr(name)
        ins.set_decode(state.eq(code))
        src = tiled_addr(large_base(f, mem_idx), ts, v, nv)
        for p in range(C.NUM_PE):
            buf = f[f"pe{p}_input_buffer"]
            dst = (u32(f[f"pe{p}_mem_mngr_{mngr}_base_input"]) << 4) + (u32(v) << 4)
            new = buf
            for k in range(C.VEC):
                byte = load(big, src + k)
                new = store(new, dst + k, byte if zero is None else ite(zero, _c(0, 8), byte))
            ins.set_update(buf, new)
        last = (v + 1).eq(nv)
        ins.set_update(v, ite(last, _c(0, 8), v + 1))
        return ins, last

    ins, last = send("gb_control_send", SEND, cfg["mem_idx_1"], cfg["num_vector_1"], t, 1, None)
    ins.set_update(state, ite(last, ite(cfg["is_rnn"].eq(1), _c(SEND_H, 4), _c(PE_START, 4)), _c(SEND, 4)))
    prev_t = ite(t.eq(0), _c(0, 16), t - 1)          # (no load beyond the buffer at t = 0)
    ins, last = send("gb_control_send_h", SEND_H, cfg["mem_idx_2"], cfg["num_vector_2"], prev_t, 2, first)
    ins.set_update(state, ite(last, _c(PE_START, 4), _c(SEND_H, 4)))

    core_state = f.new_bv("pe_core_state", 1)
    o, j, mngr = f.new_bv("pe_core_o_cntr", 8), f.new_bv("pe_core_j_cntr", 8), f.new_bv("pe_core_mngr", 1)
    i = g.new_instr("gb_control_pe_start")
    i.set_decode(state.eq(PE_START))
    i.set_update(core_valid, _c(1, 1))
    i.set_update(core_state, _c(0, 1))
    i.set_update(o, _c(0, 8))
    i.set_update(j, _c(0, 8))
    i.set_update(mngr, _c(0, 1))
    i.set_update(state, _c(WAIT, 4))

    i = g.new_instr("gb_control_next")
    i.set_decode(state.eq(NEXT))
    i.set_update(t, t + 1)
    i.set_update(state, ite((t + 1).eq(cfg["num_timestep"]), _c(DONE, 4), _c(SEND, 4)))

    i = g.new_instr("gb_control_done")
    i.set_decode(state.eq(DONE))
    i.set_update(valid, _c(0, 1))
    i.set_update(f["top_interrupt_request"], _c(1, 1))

    g.set_summary(gb_control_summary(), name="flexasr_gb_control_loop")

    fetched = (f.new_bv("pe_act_opcode", 4), f.new_bv("pe_act_ra", 2), f.new_bv("pe_act_rb", 2))
    _build_core(f, core_valid, core_state, o, j, mngr, act_valid, fetched)
    _build_act(f, act_valid, state, t, cfg, first, fetched)


def _act_fetch(f: Flex, pc):
    """(opcode, A, B) of PE0's activation micro-op number ``pc`` (the PEs run in lockstep)."""
    inst = f["pe0_act_inst_0"]
    for k in range(1, 32):
        inst = ite(pc.eq(k), f[f"pe0_act_inst_{k}"], inst)
    return inst[7:4], inst[3:2], inst[1:0]


def _mngr(f, p, mngr, field):
    a, b = f[f"pe{p}_mem_mngr_1_{field}"], f[f"pe{p}_mem_mngr_2_{field}"]
    return ite(mngr.eq(0), a, b)


OC = C.PE_CORE_OC   # output vectors per PE_CORE_CHILD instruction (lanes past num_output are inert)


def _build_core(f: Flex, core_valid, core_state, o, j, mngr, act_valid, fetched):
    """PE core: ``pe_core_mac`` for output vectors o..o+OC-1 and input vector j, ``pe_core_bias``
    once per output chunk and manager (see the module docstring)."""
    c = f.m.new_child("PE_CORE_CHILD")
    c.set_valid(core_valid.eq(1))
    nin = _mngr(f, 0, mngr, "num_inputs")
    nout = f["pe0_rnn_layer_sizing_num_output"]
    o9, nout9 = zext(o, 9), zext(nout, 9)                             # no wrap-around near 255
    live = [(o9 + oo).ult(nout9) for oo in range(OC)]
    o_eff = [ite(live[oo], o + oo, o) for oo in range(OC)]           # clamped: loads stay in range

    i = c.new_instr("pe_core_mac")
    i.set_decode(core_state.eq(0))
    for p in range(C.NUM_PE):
        wbuf, ibuf, part = f[f"pe{p}_weight_buffer"], f[f"pe{p}_input_buffer"], f[f"pe{p}_accum"]
        n_p = u32(_mngr(f, p, mngr, "num_inputs"))
        wb = u32(_mngr(f, p, mngr, "base_weight")) << 4
        ibase = (u32(_mngr(f, p, mngr, "base_input")) << 4) + (u32(j) << 4)
        new = part
        for oo in range(OC):
            wbase = wb + ((u32(o_eff[oo]) * n_p + u32(j)) << 8)
            for lane in range(C.VEC):
                for k in range(C.VEC):
                    cell = _c(256 * oo + 16 * lane + k, 16)
                    prev = ite(j.eq(0), _c(0, 32), load(part, cell))
                    prod = PRODUCT_SUM(load(wbuf, wbase + (16 * lane + k)), load(ibuf, ibase + k))
                    new = store(new, cell, prev + prod)
        i.set_update(part, new)
    last_j = (j + 1).eq(nin)
    i.set_update(j, ite(last_j, _c(0, 8), j + 1))
    i.set_update(core_state, ite(last_j, _c(1, 1), _c(0, 1)))

    i = c.new_instr("pe_core_bias")
    i.set_decode(core_state.eq(1))
    first_mngr = mngr.eq(0)
    for p in range(C.NUM_PE):
        part, out, wbuf = f[f"pe{p}_accum"], f[f"pe{p}_core_out"], f[f"pe{p}_weight_buffer"]
        rs, m1, m2 = f"pe{p}_rnn_layer_sizing", f"pe{p}_mem_mngr_1", f"pe{p}_mem_mngr_2"
        bw = ite(first_mngr, f[f"{m1}_adpbias_weight"], f[f"{m2}_adpbias_weight"])
        bi = ite(first_mngr, f[f"{m1}_adpbias_input"], f[f"{m2}_adpbias_input"])
        bb = ite(first_mngr, f[f"{m1}_adpbias_bias"], _c(0, 3))
        is_bias = ite(first_mngr, f[f"{rs}_is_bias"], _c(0, 1))
        new = out
        for oo in range(OC):
            valid = live[oo]
            bias_base = (u32(f[f"{m1}_base_bias"]) << 4) + (u32(o_eff[oo]) << 4)
            obase = u32(o + oo) << 4
            for lane in range(C.VEC):
                acc = load(part, _c(256 * oo + 16 * lane, 16))
                for k in range(1, C.VEC):                       # AccumAdd over the 16 products
                    acc = acc + load(part, _c(256 * oo + 16 * lane + k, 16))
                bias_byte = ite(first_mngr, load(wbuf, bias_base + lane), _c(0, 8))
                r = PE_CORE_ACCUM2ACT(acc, bias_byte, bw, bi, bb, is_bias)
                old = load(out, obase + lane)
                new = store(new, obase + lane, ite(valid, ite(first_mngr, r, PE_ACT_EADD(old, r)), old))
        i.set_update(out, new)
    second = first_mngr & f["pe0_rnn_layer_sizing_num_manager"].eq(2)
    last_o = (o9 + OC).uge(nout9)
    done = ~second & last_o
    i.set_update(mngr, ite(second, _c(1, 1), _c(0, 1)))
    i.set_update(o, ite(second, o, ite(last_o, _c(0, 8), o + OC)))
    i.set_update(core_state, _c(0, 1))
    i.set_update(core_valid, ite(done, _c(0, 1), _c(1, 1)))
    i.set_update(act_valid, ite(done, _c(1, 1), _c(0, 1)))
    for reg, val in zip(fetched, _act_fetch(f, _c(0, 5))):        # prefetch micro-op 0
        i.set_update(reg, ite(done, val, reg))
    c.set_summary(pe_core_summary(), name="flexasr_pe_core_loop")


def _build_act(f: Flex, act_valid, gb_state, t, cfg, first, fetched):
    c = f.m.new_child("PE_ACT_CHILD")
    c.set_valid(act_valid.eq(1))
    pc, grp, cur = f.new_bv("pe_act_pc", 5), f.new_bv("pe_act_group", 8), f.new_bv("pe_act_cursor", 8)
    opcode, ra, rb = fetched          # micro-op pc, fetched by the previous instruction
    am0 = "pe0_act_mngr"
    end_prog = (pc + 1).eq(f[f"{am0}_num_inst"])
    end_all = end_prog & (grp + 1).eq(f[f"{am0}_num_output"])

    def advance(ins, cursor_next=None):
        next_pc = ite(end_prog, _c(0, 5), pc + 1)
        ins.set_update(pc, next_pc)
        for reg, val in zip(fetched, _act_fetch(f, next_pc)):
            ins.set_update(reg, val)
        ins.set_update(grp, ite(end_prog, ite(end_all, _c(0, 8), grp + 1), grp))
        ins.set_update(cur, ite(end_all, _c(0, 8), cur if cursor_next is None else cursor_next))
        ins.set_update(act_valid, ite(end_all, _c(0, 1), _c(1, 1)))
        ins.set_update(gb_state, ite(end_all, _c(NEXT, 4), gb_state))

    def reg_addr(r, lane):
        return (r.zext(8) << 4) + lane

    def lanes(p, fn):
        regs = f[f"pe{p}_act_regs"]
        new = regs
        for lane in range(C.VEC):
            new = store(new, reg_addr(ra, lane), fn(regs, lane))
        return regs, new

    def op(name, code, fn, cursor_next=None):
        ins = c.new_instr(f"pe_act_op_{name}")
        ins.set_decode(opcode.eq(code))
        for p in range(C.NUM_PE):
            regs, new = lanes(p, lambda regs, lane, p=p: fn(p, regs, lane))
            ins.set_update(regs, new)
        advance(ins, cursor_next)
        return ins

    def A(regs, lane):
        return load(regs, reg_addr(ra, lane))

    def B(regs, lane):
        return load(regs, reg_addr(rb, lane))

    def buf_addr(p, lane):
        return u32(f[f"pe{p}_act_mngr_buffer_base"]) + (u32(grp) << 4) + lane

    zero_first = first & f[f"{am0}_is_zero_first"].eq(1)
    op("load", C.ACT_LOAD, lambda p, r, l: ite(zero_first, _c(0, 20), load(f[f"pe{p}_act_buffer"], buf_addr(p, l))))
    op("inpe", C.ACT_INPE, lambda p, r, l: load(f[f"pe{p}_core_out"], (u32(cur) << 4) + l), cursor_next=cur + 1)
    op("copy", C.ACT_COPY, lambda p, r, l: B(r, l))
    op("eadd", C.ACT_EADD, lambda p, r, l: PE_ACT_EADD(A(r, l), B(r, l)))
    op("emul", C.ACT_EMUL, lambda p, r, l: PE_ACT_EMUL(A(r, l), B(r, l)))
    for name, code, fn in (("sigm", C.ACT_SIGM, PE_ACT_SIGMOID), ("tanh", C.ACT_TANH, PE_ACT_TANH),
                           ("relu", C.ACT_RELU, PE_ACT_RELU), ("onex", C.ACT_ONEX, PE_ACT_ONEX)):
        op(name, code, lambda p, r, l, fn=fn: fn(A(r, l)))

    ins = c.new_instr("pe_act_op_store")
    ins.set_decode(opcode.eq(C.ACT_STORE))
    for p in range(C.NUM_PE):
        regs, buf = f[f"pe{p}_act_regs"], f[f"pe{p}_act_buffer"]
        new = buf
        for lane in range(C.VEC):
            new = store(new, buf_addr(p, lane), A(regs, lane))
        ins.set_update(buf, new)
    advance(ins)

    ins = c.new_instr("pe_act_op_outgb")
    ins.set_decode(opcode.eq(C.ACT_OUTGB))
    big = f["gb_core_large_buffer"]
    gbase = large_base(f, cfg["mem_idx_2"])
    new = big
    for p in range(C.NUM_PE):
        regs = f[f"pe{p}_act_regs"]
        dst = tiled_addr(gbase, t, f[f"pe{p}_act_mngr_output_base"][7:0] + grp, cfg["num_vector_2"])
        for lane in range(C.VEC):
            new = store(new, dst + lane, FIXED2ADAPTFLOAT(A(regs, lane), f[f"pe{p}_act_mngr_adpbias_out"]))
        new = ite(TRUE, new, new)       # chain boundary: each PE's 16 stores vectorise on their own
    ins.set_update(big, new)
    advance(ins)
    from ila.models.flexasr.act_run import act_summary
    c.set_summary(act_summary(), name="flexasr_act_loop")


# ----------------------------------------------------------------------------- loop summary
PE_CORE_BUGS = ("off_by_one", "bias_pass2", "last_chunk")      # seeded bugs, for the differential tests


def pe_core_summary(*, bug: str | None = None):
    """The tensor-level summary of ``PE_CORE_CHILD`` (simulator only; see
    :meth:`ila.model.Ila.set_summary`): from its first step (valid, ``pe_core_state`` 0, counters
    0), the state at the loop's quiescence, with the datapath functions' own numpy bodies.

    For each output chunk ``o = 0, 4, ...`` (while ``o + 4 < num_output`` of PE0) and manager pass
    (1, then 2 when PE0's ``num_manager`` is 2), for each PE ``p``: the partial sums
    ``P[256 oo + 16 l + k] = sum_j ProductSum(W[o_eff+oo][j][l][k], x[16 j + k]) mod 2**32`` over
    ``j < num_inputs`` (PE0's count for the loop, PE ``p``'s for the weight address; ``o_eff`` the
    clamped chunk row as in ``pe_core_mac``), left in ``pe{p}_accum``; then the bias step:
    ``acc = sum_k P[.. k] mod 2**32``, ``r = PECoreAccum2Act(acc, bias byte, ...)`` and
    ``core_out[16 (o+oo) + l] := r`` (pass 1) or ``PEActEadd(core_out, r)`` (pass 2) for live rows.
    Ends with the counters and ``pe_core_state`` 0, ``pe_core_child_valid`` 0,
    ``pe_act_child_valid`` 1 and micro-op 0 of PE0 prefetched. Returns the child instruction count
    (``sum over passes of num_inputs + 1``). Declines (None) off its first step, for a zero input
    count, an address beyond a buffer or a count beyond ``budget``. ``bug`` (one of
    :data:`PE_CORE_BUGS`) seeds a deliberate error for the differential tests.
    """
    if bug is not None and bug not in PE_CORE_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {PE_CORE_BUGS}")
    from ila.models.flexasr.funcs import PE_ACT_EADD as EADD, PE_CORE_ACCUM2ACT as A2A, PRODUCT_SUM as PS
    M32 = np.uint64(0xFFFFFFFF)
    lane16, cell256 = np.arange(16), np.arange(256)
    ps = _table8x8(PS)            # ProductSum of every (weight code, input code) pair

    def flexasr_pe_core_loop(S, budget):
        if not (S["pe_core_child_valid"] == 1 and S["pe_core_state"] == 0 and S["pe_core_o_cntr"] == 0
                and S["pe_core_j_cntr"] == 0 and S["pe_core_mngr"] == 0):
            return None
        nout = S["pe0_rnn_layer_sizing_num_output"]
        mngrs = (1, 2) if S["pe0_rnn_layer_sizing_num_manager"] == 2 else (1,)
        chunks = [0]
        while chunks[-1] + C.PE_CORE_OC < nout:
            chunks.append(chunks[-1] + C.PE_CORE_OC)
        if bug == "last_chunk" and len(chunks) > 1:
            chunks.pop()
        D = product_factors(PS)
        nin = {k: S[f"pe0_mem_mngr_{k}_num_inputs"] for k in mngrs}
        if min(nin.values()) == 0:
            return None
        steps = len(chunks) * sum(nin[k] + 1 for k in mngrs)
        if steps > budget:
            return None
        cfg = {}
        for p in range(C.NUM_PE):                               # addresses first: decline before any write
            for k in mngrs:
                mm = f"pe{p}_mem_mngr_{k}"
                n_p, wb = S[f"{mm}_num_inputs"], S[f"{mm}_base_weight"] << 4
                ib, bbase = S[f"{mm}_base_input"] << 4, S[f"pe{p}_mem_mngr_1_base_bias"] << 4
                top_o = min(chunks[-1] + C.PE_CORE_OC - 1, max(nout - 1, chunks[-1]))
                if (wb + ((top_o * n_p + nin[k] - 1) << 8) + 255 >= C.PE_WEIGHT_SIZE
                        or ib + 16 * nin[k] + 15 >= C.PE_INPUT_SIZE or bbase + (top_o << 4) + 15 >= C.PE_WEIGHT_SIZE):
                    return None
                cfg[p, k] = (n_p, wb, ib, bbase)
        # every chunk at once (their rows and core outputs are disjoint; the passes of a chunk run
        # in order, manager 1 then 2); the partial sums left are those of the last chunk and pass
        rows = np.array([o + oo for o in chunks for oo in range(C.PE_CORE_OC) if o + oo < nout], np.int64)
        last = chunks[-1]
        o_last = np.array([last + oo if last + oo < nout else last for oo in range(C.PE_CORE_OC)])
        at = {int(g): i for i, g in enumerate(rows)}
        for k in mngrs:
            first = k == 1
            jj = np.arange(nin[k] - (bug == "off_by_one"))
            for p in range(C.NUM_PE):
                n_p, wb, ib, bbase = cfg[p, k]
                wbuf, ibuf = S[f"pe{p}_weight_buffer"], S[f"pe{p}_input_buffer"]
                waddr = (wb + ((rows[:, None] * n_p + jj[None, :]) << 8))[..., None] + cell256
                W = wbuf[waddr].reshape(len(rows), len(jj), 16, 16).astype(np.intp)
                X = ibuf[(ib + 16 * jj)[:, None] + lane16].astype(np.intp)     # (j, k)
                if D is not None:                 # ProductSum factors (product_factors)
                    part = (np.einsum("rjlk,jk->rlk", D[W], D[X]) & 0xFFFFFFFF).astype(np.uint64)
                else:
                    part = ps[(W << 8) | X[None, :, None, :]].sum(axis=1) & M32
                if k == mngrs[-1]:
                    S[f"pe{p}_accum"][:256 * C.PE_CORE_OC] = part[[at[int(g)] for g in o_last]].reshape(-1)
                acc = part.sum(axis=-1) & M32                                         # (row, lane)
                bias = wbuf[bbase + (rows[:, None] << 4) + lane16]
                rs, mm = f"pe{p}_rnn_layer_sizing", f"pe{p}_mem_mngr_{k}"
                if first or bug == "bias_pass2":
                    args = (bias, S[f"{mm}_adpbias_weight"], S[f"{mm}_adpbias_input"],
                            S[f"{mm}_adpbias_bias"], S[f"{rs}_is_bias"])
                else:
                    args = (0, S[f"{mm}_adpbias_weight"], S[f"{mm}_adpbias_input"], 0, 0)
                r = _call(A2A, acc, *args)
                out = S[f"pe{p}_core_out"]
                oaddr = ((rows & 0xFF) << 4)[:, None] + lane16
                out[oaddr] = r if first else _call(EADD, out[oaddr].astype(np.uint64), r)
        inst0 = S["pe0_act_inst_0"]
        S["pe_act_opcode"], S["pe_act_ra"], S["pe_act_rb"] = (inst0 >> 4) & 0xF, (inst0 >> 2) & 3, inst0 & 3
        S["pe_core_child_valid"], S["pe_act_child_valid"] = 0, 1
        return steps

    return flexasr_pe_core_loop


def gb_control_summary(*, send_bug: str | None = None, run_bug: str | None = None):
    """The summary registered for ``Child_GB_Control``: from ``gb_control_prep`` of a feed-forward
    layer, the whole run at once (:func:`ila.models.flexasr.linear_run.linear_run_summary`);
    otherwise (an RNN, or where that declines) each timestep's transfer phases
    (:func:`gb_send_summary`), the PE core and activation loops then running by their own
    summary or instruction by instruction. ``send_bug`` / ``run_bug`` seed errors for the tests."""
    from ila.models.flexasr.linear_run import linear_run_summary
    run, send = linear_run_summary(bug=run_bug), gb_send_summary(bug=send_bug)

    def flexasr_gb_control(S, budget):
        n = run(S, budget)
        return send(S, budget) if n is None else n
    return flexasr_gb_control


GB_SEND_BUGS = ("skip_last", "zero_first_ignored", "wrong_tile")   # seeded bugs, for the differential tests
M32 = 0xFFFFFFFF


def gb_send_summary(*, bug: str | None = None):
    """The tensor-level summary of ``Child_GB_Control``'s transfer phases (simulator only; see
    :meth:`ila.model.Ila.set_summary`): from the first ``gb_control_send`` of a timestep (child
    state SEND, ``v_cntr`` 0), the state after the whole SEND phase and, when ``is_rnn``, the
    whole SEND_H phase, i.e. at ``gb_control_pe_start``. Only this child is active meanwhile
    (the PE core and activation children are idle; the transfers write no state their valids read).

    SEND: for v < ``num_vector_1``, each PE's input buffer gets, at ``base_input_1*16 + 16v + k``,
    the GB large-buffer byte at ``tiled_addr(large_base(mem_idx_1), t, v, num_vector_1) + k``
    (32-bit addresses, as in the instruction); SEND_H likewise with manager 2, ``mem_idx_2``,
    ``num_vector_2`` and timestep ``t - 1`` (0 at t = 0), zero bytes at t = 0 when PE0's
    ``is_zero_first``. Ends with ``v_cntr`` 0 and the state PE_START. Returns the instruction count
    (``num_vector_1`` (+ ``num_vector_2``)). Declines (None) off the first send, with another
    child valid, for a zero vector count (the 8-bit counter would wrap), an address beyond a
    memory, or a count beyond ``budget``. ``bug`` (one of :data:`GB_SEND_BUGS`) seeds a
    deliberate error for the differential tests.
    """
    if bug is not None and bug not in GB_SEND_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {GB_SEND_BUGS}")
    lane16 = np.arange(16)

    def phase(S, mem_idx, nv, ts, mngr, zero):
        """(reads, writes) of one transfer phase, or None when an address is out of range."""
        base = (S[f"gb_core_mem_mngr_large_base_large_{mem_idx}"] << 4) & M32
        tile = 16 * (ts & 15) + ((ts >> 4) * nv << 8) if bug != "wrong_tile" else 16 * (ts & 15)
        v = np.arange(nv - (bug == "skip_last"), dtype=np.int64)
        src = ((base + (tile & M32) + (v << 8)) & M32)[:, None] + lane16           # (v, k)
        big = S["gb_core_large_buffer"]
        if src.size and src.max() >= big.shape[0]:
            return None
        data = np.zeros(src.shape, big.dtype) if zero else big[src]
        writes = []
        for p in range(C.NUM_PE):
            dst = (((S[f"pe{p}_mem_mngr_{mngr}_base_input"] << 4) + (v << 4)) & M32)[:, None] + lane16
            if dst.size and dst.max() >= S[f"pe{p}_input_buffer"].shape[0]:
                return None
            writes.append((f"pe{p}_input_buffer", dst, data))
        return writes

    def flexasr_gb_send_loop(S, budget):
        if not (S["gb_control_child_valid"] == 1 and S["gb_control_child_state"] == SEND
                and S["gb_control_v_cntr"] == 0 and S["pe_core_child_valid"] == 0 and S["pe_act_child_valid"] == 0):
            return None
        t, rnn = S["gb_control_ts_cntr"], S["gb_control_is_rnn"] == 1
        n1, n2 = S["gb_control_num_vector_1"], S["gb_control_num_vector_2"]
        if n1 == 0 or (rnn and n2 == 0) or n1 + (n2 if rnn else 0) > budget:
            return None
        plans = [phase(S, S["gb_control_mem_idx_1"], n1, t, 1, False)]
        if rnn:
            first = t == 0 and S["pe0_rnn_layer_sizing_is_zero_first"] == 1 and bug != "zero_first_ignored"
            plans.append(phase(S, S["gb_control_mem_idx_2"], n2, t - 1 if t else 0, 2, first))
        if any(pl is None for pl in plans):
            return None
        for writes in plans:
            for name, dst, data in writes:
                S[name][dst] = data
        S["gb_control_v_cntr"], S["gb_control_child_state"] = 0, PE_START
        return n1 + (n2 if rnn else 0)

    return flexasr_gb_send_loop
