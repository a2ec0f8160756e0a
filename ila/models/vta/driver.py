"""VTA instruction-sequence generators and a runner for the VTA ILA (and the numpy fsim).

Generators return a :class:`VtaProgram`: the instruction list, the micro-ops, a DRAM image and
where the result lands. Supported operators (as the 3LA prototype: fixed instruction sequences):

* :func:`dense_program` -- blocked int8 matrix multiply ``out = x @ w.T`` (nn.dense convention)
  with int32 accumulation, optional requantising shift (ALU SHR) and clip (ALU MIN/MAX), int8 out;
* :func:`elementwise_program` -- on int32 tensors loaded into the accumulator: ``add`` (ALU ADD
  with a register operand), ``relu`` (MAX with immediate 0), ``shr`` (requantising shift by an
  immediate, then clip to int8).

DRAM layout (element-indexed regions, each aligned to its element size): uops, inputs, weights,
accumulator (bias/operand) data, outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ila.numerics.fixed_point import wrap_int8
from ila.sim import Simulator
from ila.models.vta.model import MEM_STATE, VIR_WR_DRAM, build_vta
from ila.models.vta.isa import (ALU_ADD, ALU_MAX, ALU_MIN, ALU_SHR, DEFAULT_CONFIG, MEM_ACC, MEM_INP, MEM_OUT,
                      MEM_UOP, MEM_WGT, OP_LOAD, OP_STORE, AluInsn, FinishInsn, GemmInsn, MemInsn, Uop,
                      VtaConfig, VtaIsaError, encode, encode_uop)


@dataclass
class VtaProgram:
    insns: list
    dram: np.ndarray                 # initial DRAM image (uint8)
    out_addr: int                    # byte address of the int8 result in DRAM
    out_shape: tuple
    cfg: VtaConfig = field(default=DEFAULT_CONFIG)

    def read_output(self, dram) -> np.ndarray:
        n = int(np.prod(self.out_shape))
        return np.asarray(dram[self.out_addr:self.out_addr + n], dtype=np.uint8).view(np.int8).reshape(self.out_shape)


class _Dram:
    """A bump allocator over a DRAM image."""

    def __init__(self, cfg: VtaConfig):
        self.cfg = cfg
        self.image = np.zeros(cfg.dram_bytes, dtype=np.uint8)
        self.top = 0

    def alloc(self, buf: str, n_elems: int) -> int:
        """Reserve ``n_elems`` elements of buffer type ``buf``; return the element index."""
        eb = self.cfg.elem_bytes(buf)
        start = -(-self.top // eb)
        end = (start + n_elems) * eb
        if end > self.image.size:
            raise VtaIsaError(f"program needs {end} bytes of DRAM, more than the {self.image.size} configured")
        self.top = end
        return start

    def put(self, buf: str, elem: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        off = elem * self.cfg.elem_bytes(buf)
        self.image[off:off + raw.size] = raw


def _check_int8(name, a):
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.integer) or a.size and (a.min() < -128 or a.max() > 127):
        raise VtaIsaError(f"{name} must hold int8 values")
    return a.astype(np.int8)


def _check_int32(name, a):
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.integer) or a.size and (a.min() < -(1 << 31) or a.max() >= (1 << 31)):
        raise VtaIsaError(f"{name} must hold int32 values")
    return a.astype(np.int32)


def _loop(kind, uop_bgn, uop_end, iter_out, iter_in, **kw):
    return kind(uop_bgn=uop_bgn, uop_end=uop_end, iter_out=iter_out, iter_in=iter_in, **kw)


def _requant(insns, rows, cols, u0, *, shift=0, clip=False, relu=False):
    """ALU epilogue over ``rows x cols`` accumulator elements at 0, using uop ``u0`` (all zero)."""
    common = dict(dst_factor_out=cols, dst_factor_in=1, src_factor_out=cols, src_factor_in=1)
    if shift:
        insns.append(_loop(AluInsn, u0, u0 + 1, rows, cols, alu_opcode=ALU_SHR, use_imm=1, imm=shift, **common))
    if relu:
        insns.append(_loop(AluInsn, u0, u0 + 1, rows, cols, alu_opcode=ALU_MAX, use_imm=1, imm=0, **common))
    if clip:
        insns.append(_loop(AluInsn, u0, u0 + 1, rows, cols, alu_opcode=ALU_MIN, use_imm=1, imm=127, **common))
        insns.append(_loop(AluInsn, u0, u0 + 1, rows, cols, alu_opcode=ALU_MAX, use_imm=1, imm=-128, **common))


def dense_program(x, w, *, shift: int = 0, clip: bool = False, relu: bool = False,
                  cfg: VtaConfig = DEFAULT_CONFIG) -> VtaProgram:
    """Blocked dense ``x[N,K] @ w[M,K].T`` on VTA (BATCH must be 1). K and M are zero-padded to
    multiples of BLOCK_IN/BLOCK_OUT; rows are processed in chunks that fit the SRAMs."""
    if cfg.batch != 1:
        raise VtaIsaError("dense_program supports BATCH = 1 only")
    x, w = _check_int8("x", x), _check_int8("w", w)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise VtaIsaError(f"dense needs x[N,K] and w[M,K], got {x.shape} and {w.shape}")
    n, k = x.shape
    mo = w.shape[0]
    bi, bo = cfg.block_in, cfg.block_out
    kb, mb = -(-k // bi), -(-mo // bo)
    if mb * kb > cfg.depth("wgt"):
        raise VtaIsaError(f"weights need {mb * kb} weight-buffer elements, more than the depth {cfg.depth('wgt')}")
    chunk = min(cfg.depth("inp") // kb, cfg.depth("acc") // mb, n, (1 << cfg.loop_iter_bits) - 1)
    if chunk < 1:
        raise VtaIsaError(f"one row of x ({kb} blocks) or out ({mb} blocks) does not fit the SRAM")
    xp = np.zeros((n, kb * bi), np.int8)
    xp[:, :k] = x
    wp = np.zeros((mb * bo, kb * bi), np.int8)
    wp[:mo, :k] = w
    d = _Dram(cfg)
    uops = [Uop(0, kk, kk) for kk in range(kb)] + [Uop(0, 0, 0)]
    u_addr = d.alloc("uop", len(uops))
    d.put("uop", u_addr, np.array([encode_uop(u, cfg) for u in uops], dtype="<u4"))
    x_addr = d.alloc("inp", n * kb)
    d.put("inp", x_addr, xp)
    w_addr = d.alloc("wgt", mb * kb)
    tiles = wp.reshape(mb, bo, kb, bi).transpose(0, 2, 1, 3)       # [mb][kb][o][k]
    d.put("wgt", w_addr, np.ascontiguousarray(tiles))
    o_addr = d.alloc("out", n * mb)
    zero_u = len(uops) - 1
    insns = [MemInsn(OP_LOAD, MEM_UOP, 0, u_addr, 1, len(uops), len(uops)),
             MemInsn(OP_LOAD, MEM_WGT, 0, w_addr, mb, kb, kb)]
    for r0 in range(0, n, chunk):
        rows = min(chunk, n - r0)
        insns.append(MemInsn(OP_LOAD, MEM_INP, 0, x_addr + r0 * kb, rows, kb, kb))
        insns.append(_loop(GemmInsn, zero_u, zero_u + 1, rows, mb, reset=1, dst_factor_out=mb, dst_factor_in=1))
        insns.append(_loop(GemmInsn, 0, kb, rows, mb, dst_factor_out=mb, dst_factor_in=1,
                           src_factor_out=kb, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=kb))
        _requant(insns, rows, mb, zero_u, shift=shift, clip=clip, relu=relu)
        insns.append(MemInsn(OP_STORE, MEM_OUT, 0, o_addr + r0 * mb, rows, mb, mb))
    insns.append(FinishInsn())
    out_bytes = o_addr * cfg.elem_bytes("out")
    prog = VtaProgram(insns, d.image, out_bytes, (n, mb * bo), cfg)
    prog.crop = (slice(None), slice(0, mo))
    return prog


def elementwise_program(op: str, a, b=None, *, imm: int = 0, cfg: VtaConfig = DEFAULT_CONFIG) -> VtaProgram:
    """Element-wise op on int32 tensors (any shape; flattened and padded to BLOCK_OUT lanes):
    ``add`` (a + b, int32 wrap), ``relu`` (max(a, 0)), ``shr`` (a >> imm, negative imm shifts
    left, then clip to int8). Results are truncated to int8 on store."""
    if op not in ("add", "relu", "shr"):
        raise VtaIsaError(f"unknown element-wise op {op!r} (add, relu, shr)")
    a = _check_int32("a", a)
    shape = a.shape
    lanes = cfg.lanes("acc")
    rows = -(-a.size // lanes)
    if op == "add":
        if b is None:
            raise VtaIsaError("add needs a second operand b")
        b = _check_int32("b", b)
        if b.shape != shape:
            raise VtaIsaError(f"add operands differ in shape: {shape} vs {b.shape}")
    need = rows * (2 if op == "add" else 1)
    if need > cfg.depth("acc"):
        raise VtaIsaError(f"element-wise {op} needs {need} accumulator rows, more than the depth {cfg.depth('acc')}")
    d = _Dram(cfg)
    u_addr = d.alloc("uop", 1)
    d.put("uop", u_addr, np.array([encode_uop(Uop(0, rows if op == "add" else 0, 0), cfg)], dtype="<u4"))

    def put_acc(t):
        buf = np.zeros(rows * lanes, np.int32)
        buf[:t.size] = t.reshape(-1)
        addr = d.alloc("acc", rows)
        d.put("acc", addr, buf)
        return addr

    a_addr = put_acc(a)
    insns = [MemInsn(OP_LOAD, MEM_UOP, 0, u_addr, 1, 1, 1), MemInsn(OP_LOAD, MEM_ACC, 0, a_addr, 1, rows, rows)]
    if op == "add":
        b_addr = put_acc(b)
        insns.append(MemInsn(OP_LOAD, MEM_ACC, rows, b_addr, 1, rows, rows))
        insns.append(_loop(AluInsn, 0, 1, rows, 1, alu_opcode=ALU_ADD, dst_factor_out=1, src_factor_out=1))
    elif op == "relu":
        _requant(insns, rows, 1, 0, relu=True)
    else:
        insns.append(_loop(AluInsn, 0, 1, rows, 1, alu_opcode=ALU_SHR, use_imm=1, imm=imm,
                           dst_factor_out=1, src_factor_out=1))
        _requant(insns, rows, 1, 0, clip=True)
    o_addr = d.alloc("out", rows)
    insns.append(MemInsn(OP_STORE, MEM_OUT, 0, o_addr, 1, rows, rows))
    insns.append(FinishInsn())
    prog = VtaProgram(insns, d.image, o_addr * cfg.elem_bytes("out"), (rows * lanes,), cfg)
    prog.crop = slice(0, a.size)
    prog.final_shape = shape
    return prog


def result(prog: VtaProgram, dram) -> np.ndarray:
    """The int8 result of a generated program, cropped to the operator's output shape."""
    out = prog.read_output(dram)[prog.crop]
    return out.reshape(prog.final_shape) if hasattr(prog, "final_shape") else out


# --------------------------------------------------------------------------- running
def dram_write_commands(image: np.ndarray, upto: int | None = None):
    """Virtual-memory write commands (8 bytes each) that load ``image[:upto]`` into DRAM,
    skipping all-zero words (DRAM starts zeroed)."""
    upto = image.size if upto is None else upto
    n8 = -(-upto // 8)
    buf = np.zeros(n8 * 8, np.uint8)
    buf[:upto] = image[:upto]
    words = buf.view("<u8")
    for idx in np.nonzero(words)[0]:
        yield {"vta_vir_mem_mode_in": VIR_WR_DRAM, "vta_vir_mem_addr_in": int(idx) * 8,
               "vta_vir_mem_data_in": int(words[idx])}


def run_on_ila(prog: VtaProgram, *, via_mmio: bool = True, sim: Simulator | None = None,
               record_trace: bool = False) -> Simulator:
    """Run a program on the VTA ILA simulator: fill DRAM (through the virtual-memory write
    instruction when ``via_mmio``, else by setting the state), then one command per instruction."""
    cfg = prog.cfg
    if sim is None:
        sim = Simulator(build_vta(cfg), record_trace=record_trace)
    if via_mmio:
        sim.run(dram_write_commands(prog.dram, upto=prog.out_addr))
    else:
        sim.set_state("vta_dram", prog.dram)
    for insn in prog.insns:
        sim.step({"vta_top_instr_in": encode(insn, cfg)})
    return sim


def run_on_fsim(prog: VtaProgram):
    """Run a program on the independent numpy behavioural simulator."""
    from ila.models.vta.reference import VtaFsim
    fs = VtaFsim(prog.cfg)
    fs.dram[:] = prog.dram
    fs.run(prog.insns)
    return fs


__all__ = ["VtaProgram", "dense_program", "elementwise_program", "result", "run_on_ila", "run_on_fsim",
           "dram_write_commands", "MEM_STATE"]
