"""Tensor-assembly expansions for the PE operations (linear layer, LSTM) and the GB operations
(layernorm, attention, zero padding), plus the PE weight-buffer images (16x16 weight tiling).

Registered into :data:`assembler.EXPANDERS`, so ``tensor_to_ila`` lowers e.g.
``{"name": "linear_layer", "num_ts": T, "num_v_in": ..., ...}`` to the ILA-assembly configuration
sequence of the 3LA driver (reference §4: rnn_layer_sizing, mngr, act_mngr, act_v per PE, then
the GB memory manager and GB control, then ``start``)."""
from __future__ import annotations

import numpy as np

from . import constants as C
from .assembler import EXPANDERS, ShapeError, _cfg, _check_ts

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


def linear_pe_images(w: np.ndarray, b: np.ndarray | None) -> list[np.ndarray]:
    """Weight-buffer images of the 4 PEs for a linear layer: tiles of output vectors
    p*per .. p*per+per-1, then the bias bytes of those rows."""
    nv_out, nv_in = w.shape[0] // 16, w.shape[1] // 16
    per = nv_out // C.NUM_PE
    out = []
    for p in range(C.NUM_PE):
        rows = (p * per + np.arange(per))[:, None] * 16 + np.arange(16)[None, :]
        img = [_tiles(w, rows, nv_in)]
        img.append(np.zeros(per * 16, np.uint8) if b is None else b[rows.ravel()])
        out.append(np.concatenate(img).astype(np.uint8))
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
    T, nv = ins["num_ts"], ins["num_v"]
    _check_ts(T)
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_in"], num_vector_0=nv),
            _cfg("cfg_mmngr_gb_small", base_small_0=ins["base_gamma"], base_small_1=ins["base_beta"]),
            _cfg("cfg_ly_norm", is_valid=1, mode=0, mem_idx=0, num_vector=nv, num_timestep=T,
                 adpbias_1=ins["adpbias_inp"], adpbias_3=ins["adpbias_beta"], adpbias_4=ins["adpbias_gamma"]),
            {"name": "start", "op": 3}, {"name": "wait_irq"}]


def _expand_attention(ins: dict) -> list[dict]:
    T, nv = ins["num_ts"], ins["num_v"]
    _check_ts(T)
    if T > 4096:
        raise ShapeError(f"attention over {T} timesteps: the score buffer holds 4096")
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base_enc"], num_vector_0=nv,
                 base_large_1=ins["base_dec"], num_vector_1=nv),
            _cfg("cfg_attention", is_valid=1, mem_idx_1=0, mem_idx_2=1, num_vector=nv, num_timestep=T,
                 adpbias_1=ins["adpbias_enc"], adpbias_2=ins["adpbias_dec"], adpbias_3=ins["adpbias_prob"],
                 adpbias_4=ins["adpbias_out"]),
            {"name": "start", "op": 5}, {"name": "wait_irq"}]


def _expand_zero_padding(ins: dict) -> list[dict]:
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins["base"], num_vector_0=ins["num_v"]),
            _cfg("cfg_zeropadding", is_valid=1, mem_idx=0, num_vector=ins["num_v"],
                 num_timestep_1=ins["num_ts_1"], num_timestep_2=ins["num_ts_2"]),
            {"name": "start", "op": 4}, {"name": "wait_irq"}]


EXPANDERS.update({"linear_layer": _expand_linear, "lstm_layer": _expand_lstm, "layernorm": _expand_layernorm,
                  "attention": _expand_attention, "zero_padding": _expand_zero_padding})
