"""LayerReduce (temporal max / mean / add pooling) child ILA, following flexnlp-ila
``gb_layer_reduce_fsm.cc`` as described in the reference (§2.1):

* GB_LAYER_REDUCE_START (write to 0x33000020 while the layer-reduce config is valid) sets the
  parent's child-valid flag and FSM state PREP (0), clears the interrupt.
* ``prep``: ts_cntr := 0 -> TIMESTEP_OP (2).
* ``timestep_level_op``: base0 := addr(ts), base1 := addr(ts+1), base_out := addr(ts >> 1), all at
  the same memory index (the output is written IN PLACE over the low timesteps); ts += 2,
  v_cntr := 0 -> VECTOR_OP (3).
* ``vector_level_op``: addr0/addr1/addr_out := base + 256*v; v += 1 -> VECTOR_REDUCE (4).
* ``vector_max`` / ``vector_mean`` / ``vector_add`` (mode 0 / 1 / 2): for i in 0..15,
  mem[addr_out+i] := F(mem[addr0+i], mem[addr1+i]), all 16 stores in one instruction and every
  load reading the memory as it was before the instruction. Next state: DONE (5) if
  ts > num_ts-2 and v > num_v-1, else TIMESTEP_OP if v > num_v-1, else VECTOR_OP (unsigned).
* ``done``: clears the child-valid flag, sets top_interrupt_request.

Tiled address: addr(t) = B + 16*((t mod 16) + floor(t/16)*num_v*16) with B = base_large[mem_idx]<<4
and num_v the layer-reduce config's num_vector; vector v of timestep t is at addr(t) + 256*v.
"""
from __future__ import annotations

from ila import bv_const, ite, load, store
from ila.models.flexasr import constants as C
from ila.models.flexasr.funcs import GB_ADPFLOAT_ADD, GB_ADPFLOAT_MAX, GB_ADPFLOAT_MEAN
from ila.models.flexasr.model import Flex, large_base, start_instr, tiled_addr, u32

PREFIX = "gb_layer_reduce"


def build_layer_reduce(f: Flex):
    m = f.m
    valid = f.new_bv(f"{PREFIX}_child_valid", 1)
    state = f.new_bv(f"{PREFIX}_child_state", 3)
    start_instr(f, "GB_LAYER_REDUCE_START", C.START_LAYER_REDUCE, f[f"{PREFIX}_is_valid"], valid, state, C.LR_PREP)

    c = m.new_child("GB_LAYER_REDUCE")
    c.set_valid(valid.eq(1))
    # the loop's counters and address registers are declared at the top level (the child updates
    # them), so that a proof over the top-level ILA names them (verify.phases' stream walk)
    ts = f.new_bv(f"{PREFIX}_ts_cntr", 16)
    v = f.new_bv(f"{PREFIX}_v_cntr", 8)
    base0, base1, base_out = (f.new_bv(f"{PREFIX}_{n}", 32) for n in ("base0", "base1", "base_out"))
    a0, a1, a_out = (f.new_bv(f"{PREFIX}_{n}", 32) for n in ("addr0", "addr1", "addr_out"))
    mode, mem_idx = f[f"{PREFIX}_mode"], f[f"{PREFIX}_mem_idx"]
    num_v, num_ts = f[f"{PREFIX}_num_vector"], f[f"{PREFIX}_num_timestep"]
    mem = f["gb_core_large_buffer"]

    def st(code):
        return bv_const(code, 3)

    i = c.new_instr(f"{PREFIX}_prep")
    i.set_decode(state.eq(C.LR_PREP))
    i.set_update(ts, bv_const(0, 16))
    i.set_update(state, st(C.LR_TIMESTEP_OP))

    base = large_base(f, mem_idx)
    i = c.new_instr(f"{PREFIX}_timestep_level_op")
    i.set_decode(state.eq(C.LR_TIMESTEP_OP))
    i.set_update(base0, tiled_addr(base, ts, 0, num_v))
    i.set_update(base1, tiled_addr(base, ts + 1, 0, num_v))
    i.set_update(base_out, tiled_addr(base, ts.lshr(1), 0, num_v))
    i.set_update(ts, ts + 2)
    i.set_update(v, bv_const(0, 8))
    i.set_update(state, st(C.LR_VECTOR_OP))

    i = c.new_instr(f"{PREFIX}_vector_level_op")
    i.set_decode(state.eq(C.LR_VECTOR_OP))
    off = u32(v) << 8
    i.set_update(a0, base0 + off)
    i.set_update(a1, base1 + off)
    i.set_update(a_out, base_out + off)
    i.set_update(v, v + 1)
    i.set_update(state, st(C.LR_VECTOR_REDUCE))

    vec_done = v.ugt(num_v - 1)
    nxt = ite(ts.ugt(num_ts - 2) & vec_done, st(C.LR_DONE),
              ite(vec_done, st(C.LR_TIMESTEP_OP), st(C.LR_VECTOR_OP)))
    for name, code, fn in (("max", C.LR_MAX, GB_ADPFLOAT_MAX), ("mean", C.LR_MEAN, GB_ADPFLOAT_MEAN),
                           ("add", C.LR_ADD, GB_ADPFLOAT_ADD)):
        i = c.new_instr(f"{PREFIX}_vector_{name}")
        i.set_decode(state.eq(C.LR_VECTOR_REDUCE) & mode.eq(code))
        new = mem
        for k in range(C.VEC):
            new = store(new, a_out + k, fn(load(mem, a0 + k), load(mem, a1 + k)))
        i.set_update(mem, new)
        i.set_update(state, nxt)

    i = c.new_instr(f"{PREFIX}_done")
    i.set_decode(state.eq(C.LR_DONE))
    i.set_update(valid, bv_const(0, 1))
    i.set_update(f["top_interrupt_request"], bv_const(1, 1))
    return c
