"""ZeroPadding child ILA (flexnlp-ila ``gb_zero_padding.cc``): zero timesteps
num_timestep_1 .. num_timestep_2 - 1 of a tiled GB large-buffer tensor (memory index mem_idx,
num_vector vectors per timestep).

GB_ZEROPADDING_START (write to 0x33000040 while the config is valid) sets the valid flag and FSM
state PREP (0). Child ``Child_GBZeroPadding``:

* ``gb_zero_padding_child_prep`` (0): ts := 0 -> TIMESTEP (1).
* ``gb_zero_padding_child_timestep`` (1): timestep address := B + tiled(num_timestep_1 + ts);
  v := 0; ts += 1 -> VECTOR (2).
* ``gb_zero_padding_child_vector`` (2): vector address := timestep address + 256 v; v += 1 -> BYTE (3).
* ``gb_zero_padding_child_byte`` (3): the 16 bytes at the vector address := 0 -> NEXT (4).
* ``gb_zero_padding_child_state_next`` (4): -> VECTOR if v < num_vector, else TIMESTEP if
  ts < num_timestep_2 - num_timestep_1, else done: clear the valid flag, raise the interrupt.

Deviation: the public vector step adds 256 v to the *previous vector's* address (so vectors 0, 1,
3, 6, ... are cleared for num_vector >= 3, which looks like a slip); we keep a separate timestep
address and clear vector v at timestep address + 256 v.
"""
from __future__ import annotations

from ila import bv_const, ite, store
from ila.models.flexasr import constants as C
from ila.models.flexasr.model import Flex, large_base, start_instr, tiled_addr, u32

PREFIX = "gb_zero_padding"
PREP, TIMESTEP, VECTOR, BYTE, NEXT = range(5)


def build(f: Flex):
    m = f.m
    valid = f.new_bv(f"{PREFIX}_child_valid_flag", 1)
    state = f.new_bv(f"{PREFIX}_child_state", 3)
    start_instr(f, "GB_ZEROPADDING_START", C.START_ZERO_PADDING, f[f"{PREFIX}_is_valid"], valid, state, PREP)

    c = m.new_child("Child_GBZeroPadding")
    c.set_valid(valid.eq(1))
    ts, v = f.new_bv(f"{PREFIX}_timestep_cntr", 16), f.new_bv(f"{PREFIX}_vector_cntr", 8)
    ts_addr = f.new_bv(f"{PREFIX}_timestep_base_addr", 32)
    addr = f.new_bv(f"{PREFIX}_mem_base_addr", 32)
    t1, t2, nv = f[f"{PREFIX}_num_timestep_1"], f[f"{PREFIX}_num_timestep_2"], f[f"{PREFIX}_num_vector"]
    big = f["gb_core_large_buffer"]

    def st(code):
        return bv_const(code, 3)

    i = c.new_instr(f"{PREFIX}_child_prep")
    i.set_decode(state.eq(PREP))
    i.set_update(ts, bv_const(0, 16))
    i.set_update(state, st(TIMESTEP))

    i = c.new_instr(f"{PREFIX}_child_timestep")
    i.set_decode(state.eq(TIMESTEP))
    i.set_update(ts_addr, tiled_addr(large_base(f, f[f"{PREFIX}_mem_idx"]), t1 + ts, 0, nv))
    i.set_update(v, bv_const(0, 8))
    i.set_update(ts, ts + 1)
    i.set_update(state, st(VECTOR))

    i = c.new_instr(f"{PREFIX}_child_vector")
    i.set_decode(state.eq(VECTOR))
    i.set_update(addr, ts_addr + (u32(v) << 8))
    i.set_update(v, v + 1)
    i.set_update(state, st(BYTE))

    i = c.new_instr(f"{PREFIX}_child_byte")
    i.set_decode(state.eq(BYTE))
    new = big
    for k in range(C.VEC):
        new = store(new, addr + k, bv_const(0, 8))
    i.set_update(big, new)
    i.set_update(state, st(NEXT))

    i = c.new_instr(f"{PREFIX}_child_state_next")
    i.set_decode(state.eq(NEXT))
    more_v = v.ult(nv)
    more_t = ts.ult(t2 - t1)
    done = ~more_v & ~more_t
    i.set_update(state, ite(more_v, st(VECTOR), ite(more_t, st(TIMESTEP), st(PREP))))
    i.set_update(valid, ite(done, bv_const(0, 1), bv_const(1, 1)))
    i.set_update(f["top_interrupt_request"], ite(done, bv_const(1, 1), bv_const(0, 1)))
    return c
