"""Independent numpy references for VTA (no ILA involved), used by the tests and benchmarks.

* :func:`dense_ref`: the int8 x int8 -> int32 dense reference (``out = inp @ W.T``) with optional
  requantising shift and clip, the IR-side numerics of the paper's VTA check.
* :class:`VtaFsim`: a direct numpy transcription of the documented behavioural-simulator
  semantics (``SEEDS_NOTES.md`` §1.3, tvm-vta ``sim_driver.cc``) over decoded instructions, to
  cross-check the ILA model instruction by instruction. Program order, no dependency queues.
"""
from __future__ import annotations

import numpy as np

from ila.numerics.fixed_point import sat_int8, vta_shr, wrap, wrap_int8, wrap_int32
from ila.models.vta.isa import (ALU_ADD, ALU_MAX, ALU_MIN, ALU_MUL, ALU_SHR, DEFAULT_CONFIG, MEM_ACC, MEM_INP,
                      MEM_OUT, MEM_UOP, MEM_WGT, AluInsn, FinishInsn, GemmInsn, MemInsn, VtaConfig,
                      VtaIsaError, decode_uop)


def dense_ref(x, w, *, shift: int = 0, clip: bool = False) -> np.ndarray:
    """int8 dense: ``acc = x @ w.T`` in int32 (wrapping), then ``acc >> shift`` (arithmetic),
    then clip to [-128, 127] if ``clip`` else two's-complement truncation to int8."""
    x = np.asarray(x).astype(np.int64)
    w = np.asarray(w).astype(np.int64)
    acc = wrap_int32(x @ w.T)
    if shift:
        acc = acc >> shift
    return (sat_int8(acc) if clip else wrap_int8(acc)).astype(np.int8)


class VtaFsim:
    """numpy VTA behavioural simulator. Buffers are int64 arrays shaped ``[depth, lanes]``; the
    DRAM is a flat uint8 array. Weight elements are stored ``[BLOCK_OUT][BLOCK_IN]``."""

    def __init__(self, cfg: VtaConfig = DEFAULT_CONFIG, dram_bytes: int | None = None):
        self.cfg = cfg
        self.dram = np.zeros(dram_bytes or cfg.dram_bytes, dtype=np.uint8)
        self.uop = np.zeros((cfg.depth("uop"), 1), dtype=np.int64)
        self.inp = np.zeros((cfg.depth("inp"), cfg.lanes("inp")), dtype=np.int64)
        self.wgt = np.zeros((cfg.depth("wgt"), cfg.lanes("wgt")), dtype=np.int64)
        self.acc = np.zeros((cfg.depth("acc"), cfg.lanes("acc")), dtype=np.int64)
        self.finish_count = 0

    # ------------------------------------------------------------------ DRAM views
    def _read(self, buf: str, elem: int) -> np.ndarray:
        cfg = self.cfg
        nb = cfg.elem_bytes(buf)
        raw = self.dram[elem * nb:(elem + 1) * nb]
        if raw.size != nb:
            raise VtaIsaError(f"DRAM read of {buf} element {elem} beyond the {self.dram.size}-byte DRAM")
        width = {"uop": 32, "inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width}[buf]
        if width == 8:
            vals = raw.view(np.uint8).astype(np.int64)
        elif width == 16:
            vals = raw.view("<u2").astype(np.int64)
        elif width == 32:
            vals = raw.view("<u4").astype(np.int64)
        else:
            raise VtaIsaError(f"unsupported element width {width}")
        return vals if buf == "uop" else wrap(vals, width)

    # ------------------------------------------------------------------ execution
    def run(self, insns) -> None:
        for insn in insns:
            self.execute(insn)

    def execute(self, insn) -> None:
        if isinstance(insn, MemInsn):
            (self._load if insn.opcode == 0 else self._store)(insn)
        elif isinstance(insn, GemmInsn):
            self._gemm(insn)
        elif isinstance(insn, AluInsn):
            self._alu(insn)
        elif isinstance(insn, FinishInsn):
            self.finish_count += 1
        else:
            raise VtaIsaError(f"not a VTA instruction: {insn!r}")

    def _load(self, i: MemInsn) -> None:
        names = {MEM_UOP: "uop", MEM_WGT: "wgt", MEM_INP: "inp", MEM_ACC: "acc"}
        if i.memory_type not in names:
            raise VtaIsaError(f"LOAD to memory type {i.memory_type} is not modelled")
        if i.x_size == 0:
            return
        buf = names[i.memory_type]
        sram = getattr(self, buf)
        xt = i.x_size + i.x_pad_0 + i.x_pad_1
        yt = i.y_size + i.y_pad_0 + i.y_pad_1
        if i.sram_base + xt * yt > sram.shape[0]:
            raise VtaIsaError(f"LOAD {buf}: sram_base {i.sram_base} + {xt}x{yt} elements exceeds depth {sram.shape[0]}")
        idx = i.sram_base
        for y in range(yt):
            for x in range(xt):
                inside = i.y_pad_0 <= y < i.y_pad_0 + i.y_size and i.x_pad_0 <= x < i.x_pad_0 + i.x_size
                if inside:
                    elem = i.dram_base + (y - i.y_pad_0) * i.x_stride + (x - i.x_pad_0)
                    sram[idx] = self._read(buf, elem)
                else:
                    sram[idx] = 0
                idx += 1

    def _store(self, i: MemInsn) -> None:
        if i.memory_type != MEM_OUT:
            raise VtaIsaError(f"STORE from memory type {i.memory_type}: only OUT (4) is allowed")
        lanes = self.cfg.lanes("out")
        for y in range(i.y_size):
            for x in range(i.x_size):
                src = self.acc[i.sram_base + y * i.x_size + x]
                dst = (i.dram_base + y * i.x_stride + x) * lanes
                self.dram[dst:dst + lanes] = wrap_int8(src).astype(np.int8).view(np.uint8)

    def _loops(self, i):
        for a in range(i.iter_out):
            for b in range(i.iter_in):
                for k in range(i.uop_bgn, i.uop_end):
                    yield a, b, decode_uop(int(self.uop[k, 0]), self.cfg)

    def _gemm(self, i: GemmInsn) -> None:
        bo, bi, nb = self.cfg.block_out, self.cfg.block_in, self.cfg.batch
        for a, b, u in self._loops(i):
            d = u.dst_idx + a * i.dst_factor_out + b * i.dst_factor_in
            if i.reset:
                self.acc[d] = 0
                continue
            s = u.src_idx + a * i.src_factor_out + b * i.src_factor_in
            w = u.wgt_idx + a * i.wgt_factor_out + b * i.wgt_factor_in
            x = self.inp[s].reshape(nb, bi)
            W = self.wgt[w].reshape(bo, bi)
            self.acc[d] = wrap_int32(self.acc[d] + (x @ W.T).reshape(-1))

    def _alu(self, i: AluInsn) -> None:
        for a, b, u in self._loops(i):
            d = u.dst_idx + a * i.dst_factor_out + b * i.dst_factor_in
            s = u.src_idx + a * i.src_factor_out + b * i.src_factor_in
            x = self.acc[d]
            y = np.full_like(x, i.imm) if i.use_imm else self.acc[s]
            if i.alu_opcode == ALU_MIN:
                r = np.minimum(x, y)
            elif i.alu_opcode == ALU_MAX:
                r = np.maximum(x, y)
            elif i.alu_opcode == ALU_ADD:
                r = x + y
            elif i.alu_opcode == ALU_SHR:
                r = vta_shr(x, y)
            elif i.alu_opcode == ALU_MUL:
                r = x * y
            else:
                raise VtaIsaError(f"unknown ALU opcode {i.alu_opcode}")
            self.acc[d] = wrap_int32(r)


__all__ = ["dense_ref", "VtaFsim"]
