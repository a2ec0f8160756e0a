"""Attention child ILA (flexnlp-ila ``gb_attention.cc``): one decoder vector attends over the
encoder timesteps, out = softmax(enc @ dec) @ enc, in the 32-bit/20-fraction attention fixed point.

Data: the encoder matrix enc[T, 16 num_vector] is in the GB large buffer at memory index mem_idx_1
(tiled layout); the decoder vector dec[16 num_vector] is in the GB small buffer at base_small
[mem_idx_2]; the result OVERWRITES the decoder vector there; the softmax probabilities (AdaptivFloat,
bias register adpbias_3) go to the small buffer at base_small_7 + t (GB_ATTENTION_SOFTMAX_INDEX).
Bias registers: adpbias_1 encoder, adpbias_2 decoder, adpbias_3 probabilities, adpbias_4 output.

GB_ATTENTION_START (write to 0x33000050 while the attention config is valid) sets the valid flag
and FSM state IDLE. Child ``GB_ATTENTION_CHILD`` (state codes of the public model):

* ``gb_attention_child_idle`` (0): sum_exp := 0, max := 0xC0000000, counters := 0 -> PREP (1).
* ``gb_attention_child_prep`` (1): the 16 accumulators := 0 -> BMM_MV (4).
* ``gb_attention_child_bmm_mv`` (4, bmm_cntr = 0; the public bmm_rd + bmm_mv): for the 16
  timesteps ts+i of the current group, accum[i] += sum_j ProductSum(enc[ts+i][16v+j], dec[16v+j])
  (32-bit wrapping AccumAdd) -> BMM_NEXT (19).
* ``gb_attention_child_bmm_tp_mv`` (4, bmm_cntr = 1; the public bmm_rd + bmm_tp + bmm_mv):
  accum[i] += sum_j ProductSum(enc[ts+j][16v+i], p[ts+j]) -> BMM_NEXT.
* ``gb_attention_child_bmm_next`` (19): as the public model: phase 0 steps v (then NEXT_SH),
  phase 1 steps ts by 16 (then OUT1); otherwise back to BMM_MV.
* ``gb_attention_child_next_shift`` (5; the public next_shift for all 16 scores at once): score[ts+i]
  := accum[i] == 0 ? 0xFC000000 : accum[i] shifted by adpbias_1 + adpbias_2 - 8 (GBAttentionLSH
  if positive, GBAttentionRSH by 8 - (adpbias_1 + adpbias_2) otherwise) -> NEXT_MAX (6).
* ``gb_attention_child_next_max`` (6; public next_max + next_wr): max := GBAttentionMax over the
  16 new scores; next group: ts += 16, v := 0 -> PREP, or after the last group ts := 0 -> SFM1 (9).
* ``gb_attention_child_sfm1_comp`` (9; public sfm1_rd + sfm1_comp): sum_exp += sum over the group
  of GBAttentionExp(GBAttentionSub(score, max)); last group -> SFM2 (11).
* ``gb_attention_sfm2_comp`` (11; public sfm2_rd + sfm2_comp0..3 + sfm3): p[ts+i] :=
  GBAttentionCompress(GBAttentionDiv(GBAttentionExp(GBAttentionSub(score, max)), sum_exp),
  adpbias_3) stored to the small buffer; after the last group bmm_cntr := 1, ts := 0, v := 0 -> PREP.
* ``gb_attention_child_out1`` (16; public out1 + out2): out[16v+i] := GBAttentionCompress(accum[i]
  shifted by adpbias_1 + adpbias_3 - 8, adpbias_4) into the small buffer over dec; v += 1 -> PREP,
  or FIN (18) after the last vector.
* ``gb_attention_child_fin`` (18): clear the valid flag, raise the interrupt -> IDLE.

Deviations (ours, numerically neutral): the 256 DP0 / 16 DP1 byte registers are not modelled (the
MAC reads the buffers directly); the zero-DP1 skip is omitted (a zero operand adds nothing); the
32-bit scores live in a scratch memory ``gb_attention_score_buffer`` instead of 4-byte groups in
small-buffer index 7, and are processed 16 at a time rather than 4. The FSM handles timesteps in
groups of 16, so num_timestep must be a multiple of 16 (the assembler checks).
"""
from __future__ import annotations

from ila import bv_const, ite, load, store
from ila.models.flexasr import constants as C
from ila.models.flexasr.funcs import (GB_ATTENTION_COMPRESS, GB_ATTENTION_DIV, GB_ATTENTION_EXP, GB_ATTENTION_LSH, GB_ATTENTION_MAX,
                    GB_ATTENTION_RSH, GB_ATTENTION_SUB, PE_PRODUCT_SUM16)
from ila.models.flexasr.model import Flex, large_base, small_base, start_instr, tiled_addr, u32

PREFIX = "gb_attention"
IDLE, PREP, BMM_MV, NEXT_SH, NEXT_MAX, SFM1, SFM2, OUT1, FIN, BMM_NEXT = 0, 1, 4, 5, 6, 9, 11, 16, 18, 19
SOFTMAX_INDEX = 7
WORD_MIN, HIGH_NEG = 0xC0000000, 0xFC000000
SHIFT_CONST = 2 * 4 + 2 * 10 - 20          # 2*man + 2*|offset| - kAttentionNumFrac = 8
SCORE_BUF_SIZE = 4096


def _c(v, w):
    return bv_const(v, w)


def _small_base_idx(f: Flex, idx):
    out = small_base(f, 3)
    for k in (2, 1, 0):
        out = ite(idx.eq(k), small_base(f, k), out)
    return out


def _shift(acc, b_a, b_b):
    sb = u32(b_a) + u32(b_b)
    left = sb.ugt(SHIFT_CONST)
    amount = ite(left, sb - SHIFT_CONST, _c(SHIFT_CONST, 32) - sb)
    return ite(left, GB_ATTENTION_LSH(acc, amount), GB_ATTENTION_RSH(acc, amount))


def build(f: Flex):
    m = f.m
    valid = f.new_bv(f"{PREFIX}_child_valid_flag", 1)
    state = f.new_bv(f"{PREFIX}_child_state", 5)
    start_instr(f, "GB_ATTENTION_START", C.START_ATTENTION, f[f"{PREFIX}_is_valid"], valid, state, IDLE)

    c = m.new_child("GB_ATTENTION_CHILD")
    c.set_valid(valid.eq(1))
    sum_exp, max_val = f.new_bv(f"{PREFIX}_sum_exp", 32), f.new_bv(f"{PREFIX}_max_value", 32)
    v, ts = f.new_bv(f"{PREFIX}_vector_cntr", 8), f.new_bv(f"{PREFIX}_timestep_cntr", 16)
    bmm = f.new_bv(f"{PREFIX}_bmm_cntr", 1)
    accum = f.new_mem(f"{PREFIX}_accum_vector", 8, 32, 16)
    scores = f.new_mem(f"{PREFIX}_score_buffer", 32, 32, SCORE_BUF_SIZE)
    nv, nts = f[f"{PREFIX}_num_vector"], f[f"{PREFIX}_num_timestep"]
    b1, b2, b3, b4 = (f[f"{PREFIX}_adpbias_{k}"] for k in (1, 2, 3, 4))
    big, small = f["gb_core_large_buffer"], f["gb_core_small_buffer"]
    enc_base = tiled_addr(large_base(f, f[f"{PREFIX}_mem_idx_1"]), ts, v, nv)   # row ts of vector v
    dec_base = _small_base_idx(f, f[f"{PREFIX}_mem_idx_2"]) + (u32(v) << 4)
    prob_base = small_base(f, SOFTMAX_INDEX) + u32(ts)
    end_ts = (u32(ts) + 16).uge(u32(nts))
    end_v = v.uge(nv - 1)

    def st(code):
        return _c(code, 5)

    i = c.new_instr(f"{PREFIX}_child_idle")
    i.set_decode(state.eq(IDLE))
    i.set_update(sum_exp, _c(0, 32))
    i.set_update(max_val, _c(WORD_MIN, 32))
    i.set_update(v, _c(0, 8))
    i.set_update(ts, _c(0, 16))
    i.set_update(bmm, _c(0, 1))
    i.set_update(state, st(PREP))

    i = c.new_instr(f"{PREFIX}_child_prep")
    i.set_decode(state.eq(PREP))
    new = accum
    for k in range(C.VEC):
        new = store(new, _c(k, 8), _c(0, 32))
    i.set_update(accum, new)
    i.set_update(state, st(BMM_MV))

    for name, phase in (("bmm_mv", 0), ("bmm_tp_mv", 1)):
        i = c.new_instr(f"{PREFIX}_child_{name}")
        i.set_decode(state.eq(BMM_MV) & bmm.eq(phase))
        new = accum
        for lane in range(C.VEC):
            if phase == 0:       # row = timestep ts+lane, columns 16v..16v+15; decoder vector v
                ws = [load(big, enc_base + (16 * lane + k)) for k in range(C.VEC)]
                xs = [load(small, dec_base + k) for k in range(C.VEC)]
            else:                # column 16v+lane of rows ts..ts+15; probabilities of those rows
                ws = [load(big, enc_base + (16 * k + lane)) for k in range(C.VEC)]
                xs = [load(small, prob_base + k) for k in range(C.VEC)]
            new = store(new, _c(lane, 8), load(accum, _c(lane, 8)) + PE_PRODUCT_SUM16(*ws, *xs))
        i.set_update(accum, new)
        i.set_update(state, st(BMM_NEXT))

    i = c.new_instr(f"{PREFIX}_child_bmm_next")
    i.set_decode(state.eq(BMM_NEXT))
    first = bmm.eq(0)
    i.set_update(v, ite(first, ite(end_v, _c(0, 8), v + 1), v))
    i.set_update(ts, ite(first, ts, ite(end_ts, _c(0, 16), ts + 16)))
    i.set_update(state, ite(first, ite(end_v, st(NEXT_SH), st(BMM_MV)), ite(end_ts, st(OUT1), st(BMM_MV))))

    i = c.new_instr(f"{PREFIX}_child_next_shift")
    i.set_decode(state.eq(NEXT_SH))
    new = scores
    for lane in range(C.VEC):
        a = load(accum, _c(lane, 8))
        new = store(new, u32(ts) + lane, ite(a.eq(0), _c(HIGH_NEG, 32), _shift(a, b1, b2)))
    i.set_update(scores, new)
    i.set_update(state, st(NEXT_MAX))

    i = c.new_instr(f"{PREFIX}_child_next_max")
    i.set_decode(state.eq(NEXT_MAX))
    mx = max_val
    for lane in range(C.VEC):
        mx = GB_ATTENTION_MAX(mx, load(scores, u32(ts) + lane))
    i.set_update(max_val, mx)
    i.set_update(ts, ite(end_ts, _c(0, 16), ts + 16))
    i.set_update(v, _c(0, 8))
    i.set_update(state, ite(end_ts, st(SFM1), st(PREP)))

    def exp_of(lane):
        return GB_ATTENTION_EXP(GB_ATTENTION_SUB(load(scores, u32(ts) + lane), max_val))

    i = c.new_instr(f"{PREFIX}_child_sfm1_comp")
    i.set_decode(state.eq(SFM1))
    total = sum_exp
    for lane in range(C.VEC):
        total = total + exp_of(lane)
    i.set_update(sum_exp, total)
    i.set_update(ts, ite(end_ts, _c(0, 16), ts + 16))
    i.set_update(state, ite(end_ts, st(SFM2), st(SFM1)))

    i = c.new_instr(f"{PREFIX}_sfm2_comp")
    i.set_decode(state.eq(SFM2))
    new = small
    for lane in range(C.VEC):
        new = store(new, prob_base + lane, GB_ATTENTION_COMPRESS(GB_ATTENTION_DIV(exp_of(lane), sum_exp), b3))
    i.set_update(small, new)
    i.set_update(ts, ite(end_ts, _c(0, 16), ts + 16))
    i.set_update(bmm, ite(end_ts, _c(1, 1), bmm))
    i.set_update(v, _c(0, 8))
    i.set_update(state, ite(end_ts, st(PREP), st(SFM2)))

    i = c.new_instr(f"{PREFIX}_child_out1")
    i.set_decode(state.eq(OUT1))
    new = small
    for lane in range(C.VEC):
        out = GB_ATTENTION_COMPRESS(_shift(load(accum, _c(lane, 8)), b1, b3), b4)
        new = store(new, dec_base + lane, out)
    i.set_update(small, new)
    i.set_update(v, ite(end_v, _c(0, 8), v + 1))
    i.set_update(bmm, ite(end_v, _c(0, 1), bmm))
    i.set_update(state, ite(end_v, st(FIN), st(PREP)))

    i = c.new_instr(f"{PREFIX}_child_fin")
    i.set_decode(state.eq(FIN))
    i.set_update(state, st(IDLE))
    i.set_update(valid, _c(0, 1))
    i.set_update(f["top_interrupt_request"], _c(1, 1))
    return c
