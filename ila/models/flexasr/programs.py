"""Tensor-assembly expansions for the PE operations (linear layer, LSTM) and the GB operations
(layernorm, attention, zero padding), plus the PE weight-buffer images (16x16 weight tiling).

Registered into :data:`assembler.EXPANDERS`, so ``tensor_to_ila`` lowers e.g.
``{"name": "linear_layer", "num_ts": T, "num_v_in": ..., ...}`` to the ILA-assembly configuration
sequence of the 3LA driver (reference §4: rnn_layer_sizing, mngr, act_mngr, act_v per PE, then
the GB memory manager and GB control, then ``start``)."""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import constants as C
from ila.models.flexasr.isa import EXPANDERS, ShapeError, _cfg, _check_ts

LSTM_GATE_SLOTS = (0, 2, 1, 3)      # PE order (i, g, f, o) -> PyTorch row blocks (i, f, g, o)
LINEAR_ACT_PROGRAM = [C.act_op(C.ACT_INPE, 0), C.act_op(C.ACT_OUTGB, 0)]
LSTM_ACT_PROGRAM = [
    C.act_op(C.ACT_INPE, 0), C.act_op(C.ACT_SIGM, 0),            # A0 = sigmoid(i)
    C.act_op(C.ACT_INPE, 1), C.act_op(C.ACT_TANH, 1),            # A1 = tanh(g)
    C.act_op(C.ACT_EMUL, 0, 1),                                  # A0 = i * g
    C.act_op(C.ACT_INPE, 1), C.act_op(C.ACT_SIGM, 1),            # A1 = sigmoid(f)
    C.act_op(C.ACT_LOAD, 2), C.act_op(C.ACT_EMUL, 1, 2),         # A1 = f * c
    C.act_op(C.ACT_EADD, 0, 1), C.act_op(C.ACT_STORE, 0),        # c = A0 + A1, stored
    C.act_op(C.ACT_TANH, 0),                                     # A0 = tanh(c)
    C.act_op(C.ACT_INPE, 1), C.act_op(C.ACT_SIGM, 1),            # A1 = sigmoid(o)
    C.act_op(C.ACT_EMUL, 0, 1), C.act_op(C.ACT_OUTGB, 0),        # h = A0 * A1 -> GB
]


def _per_pe(nv_out: int, what: str) -> int:
    if nv_out % C.NUM_PE:
        raise ShapeError(f"{what} = {16 * nv_out}: its {nv_out} vectors must split evenly over the 4 PEs "
                         f"(a multiple of 64 values)")
    return nv_out // C.NUM_PE


def _tiles(w: np.ndarray, rows: np.ndarray, nv_in: int) -> np.ndarray:
    """Tiles [o][j][lane][k] = w[rows[o, lane], 16 j + k], flattened (row-major 16x16 tiles)."""
    blk = w[rows]                                   # [o, 16, in]
    blk = blk.reshape(rows.shape[0], 16, nv_in, 16).transpose(0, 2, 1, 3)
    return blk.reshape(-1)


def _codes(a: np.ndarray) -> np.ndarray:
    """uint8 codes, or an object array of 8-bit terms unchanged (proofs run this code on symbolic
    codes)."""
    return a if a.dtype == object else a.astype(np.uint8)


def linear_pe_images(w: np.ndarray, b: np.ndarray | None) -> list[np.ndarray]:
    """Weight-buffer images of the 4 PEs for a linear layer: tiles of output vectors
    p*per .. p*per+per-1, then the bias bytes of those rows. Codes are uint8 or 8-bit terms."""
    w = np.asarray(w)
    nv_out, nv_in = w.shape[0] // 16, w.shape[1] // 16
    per = nv_out // C.NUM_PE
    out = []
    for p in range(C.NUM_PE):
        rows = (p * per + np.arange(per))[:, None] * 16 + np.arange(16)[None, :]
        img = [_tiles(w, rows, nv_in)]
        img.append(np.zeros(per * 16, np.uint8) if b is None else np.asarray(b)[rows.ravel()])
        out.append(_codes(np.concatenate(img)))
    return out


def lstm_pe_images(w_ih: np.ndarray, w_hh: np.ndarray, b: np.ndarray | None) -> list[np.ndarray]:
    """Weight-buffer images for an LSTM: manager 1 (input->hidden) tiles, bias bytes, manager 2
    (hidden->hidden) tiles; core output vector o = 4 g + slot holds gate LSTM_GATE_SLOTS[slot] of
    hidden vector p*per + g."""
    H = w_hh.shape[1]
    nvh, nvi = H // 16, w_ih.shape[1] // 16
    per = nvh // C.NUM_PE
    out = []
    for p in range(C.NUM_PE):
        rows = np.array([[LSTM_GATE_SLOTS[s] * H + (p * per + g) * 16 + lane for lane in range(16)]
                         for g in range(per) for s in range(4)])
        bias = np.zeros(rows.size, np.uint8) if b is None else b[rows.ravel()]
        out.append(np.concatenate([_tiles(w_ih, rows, nvi), bias, _tiles(w_hh, rows, nvh)]).astype(np.uint8))
    return out


def _expand_linear(ins: dict) -> list[dict]:
    T, nvi, nvo = ins["num_ts"], ins["num_v_in"], ins["num_v_out"]
    _check_ts(T)
    per = _per_pe(nvo, "linear-layer output size")
    asm = []
    for p in range(C.NUM_PE):
        asm += [
            {"name": "pe_cfg_rnn_layer_sizing", "pe": p, "is_valid": 1, "is_zero_first": 0, "is_cluster": 0,
             "is_bias": ins["is_bias"], "num_manager": 1, "num_output": per},
            {"name": "pe_cfg_mngr", "pe": p, "mngr": 1, "num_inputs": nvi, "base_weight": 0,
             "base_bias": per * nvi * 16, "base_input": 0, "adpbias_weight": ins["adpbias_wgt"],
             "adpbias_bias": ins["adpbias_bias"], "adpbias_input": ins["adpbias_inp"]},
            {"name": "pe_cfg_act_mngr", "pe": p, "is_valid": 1, "is_zero_first": 0,
             "adpbias_out": ins["adpbias_out"], "num_inst": len(LINEAR_ACT_PROGRAM), "num_output": per,
             "buffer_base": 0, "output_base": p * per},
            {"name": "pe_cfg_act_v", "pe": p, "idx": 0, "ops": LINEAR_ACT_PROGRAM}]
    asm += [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_in"], num_vector_0=nvi,
                 base_large_1=ins["base_out"], num_vector_1=nvo),
            _cfg("cfg_gb_ctrl", is_valid=1, mode=0, is_rnn=0, mem_idx_1=0, mem_idx_2=1,
                 num_vector_1=nvi, num_vector_2=nvo, num_timestep=T),
            {"name": "start", "op": 1}, {"name": "wait_irq"}]
    return asm


def _expand_lstm(ins: dict) -> list[dict]:
    T, nvi, nvh = ins["num_ts"], ins["num_v_in"], ins["num_v_out"]
    _check_ts(T)
    per = _per_pe(nvh, "LSTM hidden size")
    if 4 * per * 16 > C.PE_CORE_OUT_SIZE:
        raise ShapeError(f"LSTM hidden size {16 * nvh} overflows the PE core output buffer")
    bias1 = 4 * per * nvi * 16
    asm = []
    for p in range(C.NUM_PE):
        asm += [
            {"name": "pe_cfg_rnn_layer_sizing", "pe": p, "is_valid": 1, "is_zero_first": 1, "is_cluster": 0,
             "is_bias": ins["is_bias"], "num_manager": 2, "num_output": 4 * per},
            {"name": "pe_cfg_mngr", "pe": p, "mngr": 1, "num_inputs": nvi, "base_weight": 0, "base_bias": bias1,
             "base_input": 0, "adpbias_weight": ins["adpbias_wgt_i"], "adpbias_bias": ins["adpbias_bias"],
             "adpbias_input": ins["adpbias_inp"]},
            {"name": "pe_cfg_mngr", "pe": p, "mngr": 2, "num_inputs": nvh, "base_weight": bias1 + 4 * per,
             "base_bias": 0, "base_input": nvi, "adpbias_weight": ins["adpbias_wgt_h"], "adpbias_bias": 0,
             "adpbias_input": ins["adpbias_out"]},
            {"name": "pe_cfg_act_mngr", "pe": p, "is_valid": 1, "is_zero_first": 1,
             "adpbias_out": ins["adpbias_out"], "num_inst": len(LSTM_ACT_PROGRAM), "num_output": per,
             "buffer_base": 0, "output_base": p * per},
            {"name": "pe_cfg_act_v", "pe": p, "idx": 0, "ops": LSTM_ACT_PROGRAM}]
    asm += [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_in"], num_vector_0=nvi,
                 base_large_1=ins["base_out"], num_vector_1=nvh),
            _cfg("cfg_gb_ctrl", is_valid=1, mode=0, is_rnn=1, mem_idx_1=0, mem_idx_2=1,
                 num_vector_1=nvi, num_vector_2=nvh, num_timestep=T),
            {"name": "start", "op": 1}, {"name": "wait_irq"}]
    return asm


def _expand_layernorm(ins: dict) -> list[dict]:
    """layernorm [num_ts, num_v]: in place over GB memory index 0; gamma / beta at small-buffer
    bases 5 / 6 (GB_LAYER_NORM_CONFIG_GAMMA_INDEX / _BETA_INDEX), in 16-byte units."""
    T, nv = ins["num_ts"], ins["num_v"]
    _check_ts(T)
    _check_nv(nv)
    for what in ("base_gamma", "base_beta"):
        if (ins[what] + nv) * 16 > C.GB_SMALL_SIZE:
            raise ShapeError(f"layernorm {what} = {ins[what]} (16-byte units) + {nv} vectors overflows the "
                             f"16 KiB GB small buffer")
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_in"], num_vector_0=nv),
            _cfg("cfg_mmngr_gb_small", base_small_5=ins["base_gamma"], base_small_6=ins["base_beta"]),
            _cfg("cfg_ly_norm", is_valid=1, mode=0, mem_idx=0, num_vector=nv, num_timestep=T,
                 adpbias_1=ins["adpbias_inp"], adpbias_3=ins["adpbias_beta"], adpbias_4=ins["adpbias_gamma"]),
            {"name": "start", "op": 3}, {"name": "wait_irq"}]


ATTENTION_MAX_TS = 4096          # 32-bit score scratch of the attention child (ours)


def _expand_attention(ins: dict) -> list[dict]:
    """attention [num_ts, num_v]: encoder at GB large memory index 0 (base_enc), decoder vector at
    small-buffer base 0 (base_dec, overwritten by the result), probabilities at small-buffer base 7
    (base_prob); bases in 16-byte units."""
    T, nv = ins["num_ts"], ins["num_v"]
    _check_ts(T)
    _check_nv(nv)
    if T % 16:
        raise ShapeError(f"attention over {T} timesteps: the attention unit processes timesteps in groups of "
                         f"16, so the number of timesteps must be a multiple of 16 (pad with zero rows)")
    if T > ATTENTION_MAX_TS:
        raise ShapeError(f"attention over {T} timesteps: the score buffer holds {ATTENTION_MAX_TS}")
    dec, prob = ins["base_dec"] * 16, ins["base_prob"] * 16
    if dec + 16 * nv > C.GB_SMALL_SIZE or prob + T > C.GB_SMALL_SIZE:
        raise ShapeError(f"attention: decoder ({16 * nv} bytes at {dec:#x}) or probabilities ({T} bytes at "
                         f"{prob:#x}) overflow the 16 KiB GB small buffer")
    if max(dec, prob) < min(dec + 16 * nv, prob + T):
        raise ShapeError("attention: the decoder vector and the probabilities overlap in the GB small buffer")
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_enc"], num_vector_0=nv),
            _cfg("cfg_mmngr_gb_small", base_small_0=ins["base_dec"], base_small_7=ins["base_prob"]),
            _cfg("cfg_attention", is_valid=1, mem_idx_1=0, mem_idx_2=0, num_vector=nv, num_timestep=T,
                 adpbias_1=ins["adpbias_enc"], adpbias_2=ins["adpbias_dec"], adpbias_3=ins["adpbias_prob"],
                 adpbias_4=ins["adpbias_out"]),
            {"name": "start", "op": 5}, {"name": "wait_irq"}]


def _expand_zero_padding(ins: dict) -> list[dict]:
    """zero_padding [num_v, num_ts_1, num_ts_2]: zero timesteps num_ts_1 .. num_ts_2 - 1 in place."""
    nv, t1, t2 = ins["num_v"], ins["num_ts_1"], ins["num_ts_2"]
    _check_nv(nv)
    if not 0 <= t1 < t2 <= 0xFFFF:
        raise ShapeError(f"zero padding of timesteps [{t1}, {t2}): need 0 <= num_ts_1 < num_ts_2 <= 65535")
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base"], num_vector_0=nv),
            _cfg("cfg_zeropadding", is_valid=1, mem_idx=0, num_vector=nv, num_timestep_1=t1, num_timestep_2=t2),
            {"name": "start", "op": 4}, {"name": "wait_irq"}]


def _check_nv(nv: int):
    if not 1 <= nv <= 255:
        raise ShapeError(f"num_v = {nv}: must be in 1..255 (8-bit num_vector register)")


EXPANDERS.update({"linear_layer": _expand_linear, "lstm_layer": _expand_lstm, "layernorm": _expand_layernorm,
                  "attention": _expand_attention, "zero_padding": _expand_zero_padding})
