"""LayerNorm child ILA (flexnlp-ila ``gb_layer_norm.cc``), in place over a GB large-buffer tensor.

GB_LAYER_NORM_START (write to 0x33000030 while the layer-norm config is valid) sets the child's
valid flag, FSM state TIMESTEP_PREP (0) and the timestep counter 0. Child ``Child_GBLayerNorm``:

* ``gb_layer_norm_timestep_level_op`` (0): timestep base := B + tiled(ts) (B = base_large[mem_idx],
  num_vector of the layer-norm config); clear the 24-bit sums and the 20-bit vector sums; v := 0
  -> 1.
* ``gb_layer_norm_sum_vector_level_prep`` (1): sum_x := GBNormAdd_24_20(sum_x, vector sum), the
  same for the squares; clear the vector sums; vector base := timestep base + 256 v; v += 1; ->
  MEAN_OP (3) once v >= num_vector (unsigned, after the increment of the previous pass), else
  SUM_BYTE_OP (2).
* ``gb_layer_norm_sum_byte_op`` (2): vector sum := PEActEadd(vector sum, sum of the 16
  Adptfloat2Fixed(x_i, adpbias_1)), squares likewise with PEActEmul(x_i, x_i) (coarse UFs
  ``GBNormVectorSum16`` / ``GBNormVectorSqSum16``: 20-bit wrapping, as the public model's 16
  chained PEActEadd) -> 1.
* ``gb_layer_norm_mean_op`` (3): mean := GBNormDivide_24(sum_x, 16 num_vector), E[x^2] likewise,
  var := ActSignedMinus(E[x^2], PEActEmul(mean, mean)), inv_std := SInvSqrt(var); v := 0 -> 4.
  (No epsilon: the hardware has none.)
* ``gb_layer_norm_norm_vector_prep`` (4): vector base := timestep base + 256 v, gamma address :=
  base_small_5*16 + 16 v, beta address := base_small_6*16 + 16 v; v += 1; -> NEXT (6) once
  v >= num_vector, else NORM_BYTE_OP (5).
* ``gb_layer_norm_norm_byte_op`` (5): for the 16 lanes, in place: x := Fixed2Adaptfloat(
  PEActEadd(PEActEmul(PEActEmul(ActSignedMinus(A2F(x, b1), mean), inv_std), A2F(gamma, b4)),
  A2F(beta, b3)), b1) -> 4. The output keeps the input's bias register adpbias_1.
* ``gb_layer_norm_child_next`` (6): ts += 1 -> 0; when ts >= num_timestep - 1 it clears the valid
  flag and raises the interrupt.
"""
from __future__ import annotations

from ila import bv_const, ite, load, store, zext
from ila.models.flexasr import constants as C
from ila.models.flexasr.funcs import (ACT_SIGNED_MINUS, ADPTFLOAT2FIXED, FIXED2ADAPTFLOAT, GB_NORM_ADD_24_20, GB_NORM_DIVIDE_24,
                    GB_NORM_VECTOR_SQSUM16, GB_NORM_VECTOR_SUM16, PE_ACT_EADD, PE_ACT_EMUL, SINV_SQRT)
from ila.models.flexasr.model import Flex, large_base, small_base, start_instr, tiled_addr, u32

PREFIX = "gb_layer_norm"
TS_PREP, SUM_V_PREP, SUM_BYTE, MEAN, NORM_V_PREP, NORM_BYTE, NEXT = range(7)
GAMMA_INDEX, BETA_INDEX = 5, 6          # GB_LAYER_NORM_CONFIG_GAMMA_INDEX / _BETA_INDEX


def build(f: Flex):
    m = f.m
    valid = f.new_bv(f"{PREFIX}_child_valid_flag", 1)
    state = f.new_bv(f"{PREFIX}_child_state", 4)
    ts = f.new_bv(f"{PREFIX}_cntr_timestep", 16)
    start = start_instr(f, "GB_LAYER_NORM_START", C.START_LAYER_NORM, f[f"{PREFIX}_is_valid"], valid, state, TS_PREP)
    start.set_update(ts, bv_const(0, 16))

    c = m.new_child("Child_GBLayerNorm")
    c.set_valid(valid.eq(1))
    base_ts = f.new_bv(f"{PREFIX}_timestep_level_base_addr", 32)
    base_v = f.new_bv(f"{PREFIX}_vector_base_addr", 32)
    sum_x, sum_sq = f.new_bv(f"{PREFIX}_sum_X", 24), f.new_bv(f"{PREFIX}_sum_X_SQ", 24)
    vsum_x, vsum_sq = f.new_bv(f"{PREFIX}_vector_sum_x", 20), f.new_bv(f"{PREFIX}_vector_sum_x_sq", 20)
    mean, inv_std = f.new_bv(f"{PREFIX}_mean", 20), f.new_bv(f"{PREFIX}_inv_std", 20)
    a_gamma = f.new_bv(f"{PREFIX}_vector_level_base_addr_gamma", 32)
    a_beta = f.new_bv(f"{PREFIX}_vector_level_base_addr_beta", 32)
    v = f.new_bv(f"{PREFIX}_cntr_vector", 8)
    nv, nts = f[f"{PREFIX}_num_vector"], f[f"{PREFIX}_num_timestep"]
    b_in, b_beta, b_gamma = f[f"{PREFIX}_adpbias_1"], f[f"{PREFIX}_adpbias_3"], f[f"{PREFIX}_adpbias_4"]
    big, small = f["gb_core_large_buffer"], f["gb_core_small_buffer"]

    def st(code):
        return bv_const(code, 4)

    i = c.new_instr(f"{PREFIX}_timestep_level_op")
    i.set_decode(state.eq(TS_PREP))
    i.set_update(base_ts, tiled_addr(large_base(f, f[f"{PREFIX}_mem_idx"]), ts, 0, nv))
    for r, w in ((sum_x, 24), (sum_sq, 24), (vsum_x, 20), (vsum_sq, 20)):
        i.set_update(r, bv_const(0, w))
    i.set_update(v, bv_const(0, 8))
    i.set_update(state, st(SUM_V_PREP))

    i = c.new_instr(f"{PREFIX}_sum_vector_level_prep")
    i.set_decode(state.eq(SUM_V_PREP))
    i.set_update(v, v + 1)
    i.set_update(base_v, base_ts + (u32(v) << 8))
    i.set_update(sum_x, GB_NORM_ADD_24_20(sum_x, vsum_x))
    i.set_update(sum_sq, GB_NORM_ADD_24_20(sum_sq, vsum_sq))
    i.set_update(vsum_x, bv_const(0, 20))
    i.set_update(vsum_sq, bv_const(0, 20))
    i.set_update(state, ite(v.uge(nv), st(MEAN), st(SUM_BYTE)))

    i = c.new_instr(f"{PREFIX}_sum_byte_op")
    i.set_decode(state.eq(SUM_BYTE))
    xs = [load(big, base_v + k) for k in range(C.VEC)]
    i.set_update(vsum_x, PE_ACT_EADD(vsum_x, GB_NORM_VECTOR_SUM16(*xs, b_in)))
    i.set_update(vsum_sq, PE_ACT_EADD(vsum_sq, GB_NORM_VECTOR_SQSUM16(*xs, b_in)))
    i.set_update(state, st(SUM_V_PREP))

    i = c.new_instr(f"{PREFIX}_mean_op")
    i.set_decode(state.eq(MEAN))
    divisor = zext(nv, 24) << 4
    mean_next = GB_NORM_DIVIDE_24(sum_x, divisor)
    var = ACT_SIGNED_MINUS(GB_NORM_DIVIDE_24(sum_sq, divisor), PE_ACT_EMUL(mean_next, mean_next))
    i.set_update(mean, mean_next)
    i.set_update(inv_std, SINV_SQRT(var))
    i.set_update(v, bv_const(0, 8))
    i.set_update(state, st(NORM_V_PREP))

    i = c.new_instr(f"{PREFIX}_norm_vector_prep")
    i.set_decode(state.eq(NORM_V_PREP))
    i.set_update(v, v + 1)
    i.set_update(base_v, base_ts + (u32(v) << 8))
    i.set_update(a_gamma, small_base(f, GAMMA_INDEX) + (u32(v) << 4))
    i.set_update(a_beta, small_base(f, BETA_INDEX) + (u32(v) << 4))
    i.set_update(state, ite(v.uge(nv), st(NEXT), st(NORM_BYTE)))

    i = c.new_instr(f"{PREFIX}_norm_byte_op")
    i.set_decode(state.eq(NORM_BYTE))
    new = big
    for k in range(C.VEC):
        x = ADPTFLOAT2FIXED(load(big, base_v + k), b_in)
        g = ADPTFLOAT2FIXED(load(small, a_gamma + k), b_gamma)
        b = ADPTFLOAT2FIXED(load(small, a_beta + k), b_beta)
        y = PE_ACT_EADD(PE_ACT_EMUL(PE_ACT_EMUL(ACT_SIGNED_MINUS(x, mean), inv_std), g), b)
        new = store(new, base_v + k, FIXED2ADAPTFLOAT(y, b_in))
    i.set_update(big, new)
    i.set_update(state, st(NORM_V_PREP))

    i = c.new_instr(f"{PREFIX}_child_next")
    i.set_decode(state.eq(NEXT))
    done = ts.uge(nts - 1)
    i.set_update(state, st(TS_PREP))
    i.set_update(ts, ts + 1)
    i.set_update(valid, ite(done, bv_const(0, 1), bv_const(1, 1)))
    i.set_update(f["top_interrupt_request"], ite(done, bv_const(1, 1), bv_const(0, 1)))
    return c
