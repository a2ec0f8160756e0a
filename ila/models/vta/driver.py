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

**One path from tensor to bytes.** The generators run on integer tensors (simulation) and on
tensors of bit-vector terms (proofs: int8 elements as 8-bit terms, int32 as 32-bit terms) alike:
:func:`pack_element` turns the lanes of one SRAM element into its DRAM bytes (ints or 8-bit terms,
through :mod:`ila.generic`), :class:`_Dram` keeps the bytes that are terms beside the integer
image (``VtaProgram.terms``), and :func:`dram_word` / :func:`dram_write_commands` /
:func:`program_commands` emit the MMIO stream (8-byte virtual-memory writes of the image, then one
command per encoded instruction) that :func:`run_on_ila` runs and a proof executes symbolically.
Instructions and micro-ops never depend on tensor data; they are always ints.

Read-back: the driver reads the int8 result from DRAM after the program (:func:`result`); the VTA
model has no read command, so a read-back is the final DRAM image, not an MMIO read.

**Numeric fast paths** (simulation only; each checked equal to the path above by
``tests/test_vta_summaries.py``, with a seeded bug that check must catch): integer tensors are
packed all at once by :func:`pack_elements` (byte for byte :func:`pack_element` of every element),
the DRAM writes of a program without terms are built from the image's 64-bit words at once
(:func:`dram_write_commands`, equal to the word-by-word path), :func:`run_on_ila` sends them as one
:class:`~ila.commands.CommandTable` (:func:`dram_write_table`, row for row the same commands), and
the VTA port's runner (``ila.models.vta.port``) runs long runs of writes in a stream as tables
(:func:`write_runs`). An integer program's stream is a :class:`Stream` (:func:`program_stream`: its
DRAM writes one table; ``compile.certify`` checks it row for row against the word-by-word path,
:func:`word_commands`), and the runner applies a table of disjoint DRAM writes at once
(:func:`fill_dram`, checked equal to the simulator's run of the table). Tensors holding terms
always take the element path, so the streams proofs execute (:func:`program_commands` on symbolic
data) are built as before; there, the packer passes an 8-bit term in an 8-bit lane through whole
and :func:`dram_word` concatenates 8 byte variables as they are (the terms ``ila.generic`` builds,
checked equal by the same tests).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ila import generic
from ila.commands import CommandTable
from ila.expr import Expr, concat
from ila.ops import Op
from ila.sim import Simulator
from ila.models.vta.model import MEM_STATE, VIR_WR_DRAM, build_vta
from ila.models.vta.isa import (ALU_ADD, ALU_MAX, ALU_MIN, ALU_SHR, DEFAULT_CONFIG, MEM_ACC, MEM_INP, MEM_OUT,
                      MEM_UOP, MEM_WGT, OP_LOAD, OP_STORE, AluInsn, FinishInsn, GemmInsn, MemInsn, Uop,
                      VtaConfig, VtaIsaError, encode, encode_uop)


@dataclass
class VtaProgram:
    insns: list
    dram: np.ndarray                 # initial DRAM image (uint8): its first bytes, every byte beyond is 0
    out_addr: int                    # byte address of the int8 result in DRAM
    out_shape: tuple
    cfg: VtaConfig = field(default=DEFAULT_CONFIG)
    terms: dict = field(default_factory=dict)    # DRAM byte address -> 8-bit term (symbolic data; 0 in ``dram``)

    def full_dram(self) -> np.ndarray:
        """The whole initial DRAM image: ``cfg.dram_bytes`` bytes (uint8)."""
        full = np.zeros(self.cfg.dram_bytes, dtype=np.uint8)
        full[:self.dram.size] = self.dram
        return full

    def read_output(self, dram) -> np.ndarray:
        n = int(np.prod(self.out_shape))
        return np.asarray(dram[self.out_addr:self.out_addr + n], dtype=np.uint8).view(np.int8).reshape(self.out_shape)


def elem_width(cfg: VtaConfig, buf: str) -> int:
    """Bits of one lane of buffer ``buf`` in DRAM (uop 32, inp/wgt/out 8, acc 32 by default)."""
    return {"uop": 32, "inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width, "out": cfg.out_width}[buf]


def pack_element(lanes, width: int) -> list:
    """The packer: the DRAM bytes of one SRAM element (the unit a LOAD moves: an input row of
    BATCH*BLOCK_IN lanes, a weight tile of BLOCK_OUT*BLOCK_IN lanes ``[out][in]``, an accumulator
    row of BATCH*BLOCK_OUT lanes, one micro-op), lane 0 at the lowest address, each lane's
    ``width`` bits little-endian (two's complement). Lanes are ints of either sign or
    ``width``-bit terms; the bytes are ints in [0, 256) or 8-bit terms (:func:`ila.generic.field`)."""
    out = []
    for v in lanes:
        if isinstance(v, Expr):
            if v.sort.width != width:
                raise VtaIsaError(f"a {v.sort.width}-bit term cannot fill a {width}-bit lane: {v.short()}")
            if width == 8:                 # the whole lane: field(v, 0, 8) simplifies to v itself
                out.append(v)
                continue
        for j in range(width // 8):
            out.append(generic.field(v, 8 * j, 8))
    return out


PACK_BUGS = ("big_endian",)          # seeded bugs of pack_elements, for its differential test


def pack_elements(lanes: np.ndarray, width: int, *, bug: str | None = None) -> np.ndarray:
    """The numeric fast path of :func:`pack_element`: ``lanes`` an integer array (any shape, its
    lanes in C order, values of either sign), ``width`` 8, 16 or 32; returns the uint8 array of
    every lane's low ``width`` bits, little-endian two's complement, lane 0 first: the
    concatenation of :func:`pack_element` over the lanes. ``bug`` (one of :data:`PACK_BUGS`) seeds a
    deliberate error, to show the differential test catches it."""
    if bug is not None and bug not in PACK_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {PACK_BUGS}")
    arr = np.asarray(lanes)
    if arr.dtype.kind not in "iu":
        raise VtaIsaError(f"pack_elements needs an integer array, got {arr.dtype}")
    nb = width // 8
    words = arr.reshape(-1).astype(np.int64).astype("<u8")       # two's complement, low bytes kept
    out = words.view(np.uint8).reshape(-1, 8)[:, :nb]
    if bug == "big_endian":
        out = out[:, ::-1]
    return np.ascontiguousarray(out).reshape(-1)


def dram_word(parts) -> int | Expr:
    """The 64-bit data of one virtual-memory write from its 8 bytes (ints or 8-bit terms), byte 0
    at the lowest address: the model stores the word little-endian (:func:`ila.generic.bytes_le`;
    8 distinct 8-bit variables, the bytes of symbolic tensor data, concatenate as they are, which
    is what simplifying their concatenation returns)."""
    parts = list(parts)
    if len(parts) == 8 and all(isinstance(p, Expr) and p.op is Op.VAR and p.sort.width == 8 for p in parts):
        return concat(*reversed(parts))
    return generic.bytes_le(parts, 8)


class _Dram:
    """A bump allocator over a DRAM image of ``cfg.dram_bytes`` bytes: integer bytes in ``image``,
    bytes that are terms (symbolic tensor data) in ``terms`` (their ``image`` byte is 0). ``image``
    holds the image's first bytes only (every byte beyond it is 0): it grows as regions are
    allocated or written, so a small program does not build (and a simulator does not copy) the
    whole DRAM."""

    _MIN_BYTES = 1 << 16

    def __init__(self, cfg: VtaConfig):
        self.cfg = cfg
        self.image = np.zeros(0, dtype=np.uint8)
        self.terms: dict = {}
        self.top = 0

    def _cover(self, end: int) -> None:
        """Grow ``image`` to hold bytes ``[0, end)`` (``end <= cfg.dram_bytes``)."""
        if end > self.image.size:
            size = min(self.cfg.dram_bytes, max(end, 2 * self.image.size, self._MIN_BYTES))
            grown = np.zeros(size, dtype=np.uint8)
            grown[:self.image.size] = self.image
            self.image = grown

    def alloc(self, buf: str, n_elems: int) -> int:
        """Reserve ``n_elems`` elements of buffer type ``buf``; return the element index."""
        eb = self.cfg.elem_bytes(buf)
        start = -(-self.top // eb)
        end = (start + n_elems) * eb
        if end > self.cfg.dram_bytes:
            raise VtaIsaError(f"program needs {end} bytes of DRAM, more than the {self.cfg.dram_bytes} configured")
        self._cover(end)
        self.top = end
        return start

    def put(self, buf: str, elem: int, data) -> None:
        """Write ``data`` (its lanes in C order, a whole number of ``buf`` elements) from element
        ``elem`` on, each element through :func:`pack_element`."""
        lanes, eb = self.cfg.lanes(buf), self.cfg.elem_bytes(buf)
        arr = np.asarray(data)
        if arr.dtype.kind in "iu":                 # integers: the numeric fast path (module docstring)
            if arr.size % lanes:
                raise VtaIsaError(f"{arr.size} lanes are not a whole number of {buf} elements ({lanes} lanes each)")
            packed = pack_elements(arr, elem_width(self.cfg, buf))
            off = elem * eb
            if off + packed.size > self.cfg.dram_bytes:
                raise VtaIsaError(f"{buf} data at element {elem} runs past the {self.cfg.dram_bytes}-byte DRAM image")
            self._cover(off + packed.size)
            self.image[off:off + packed.size] = packed
            for a in [a for a in self.terms if off <= a < off + packed.size]:
                del self.terms[a]
            return
        flat = np.asarray(data, dtype=object).reshape(-1)
        if flat.size % lanes:
            raise VtaIsaError(f"{flat.size} lanes are not a whole number of {buf} elements ({lanes} lanes each)")
        off = elem * eb
        self._cover(min(self.cfg.dram_bytes, off + flat.size // lanes * eb))
        for e in range(flat.size // lanes):
            for i, b in enumerate(pack_element(flat[e * lanes:(e + 1) * lanes], elem_width(self.cfg, buf))):
                self.set_byte(off + e * eb + i, b)

    def set_byte(self, addr: int, b) -> None:
        if addr >= self.image.size:
            if addr >= self.cfg.dram_bytes:
                raise VtaIsaError(f"DRAM byte {addr} is outside the {self.cfg.dram_bytes}-byte DRAM image")
            self._cover(addr + 1)
        if isinstance(b, Expr) and not b.is_const:
            self.terms[addr] = b
            self.image[addr] = 0
        else:
            self.terms.pop(addr, None)
            self.image[addr] = generic.to_int(b)


def _check_ints(name, a, bits: int):
    """``a`` as a numpy array of ``bits``-bit signed ints, or, when any element is a term, as an
    object array whose terms are ``bits`` wide (and whose ints are in range)."""
    arr = np.asarray(a, dtype=object) if _has_terms(a) else np.asarray(a)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if arr.dtype == object:
        for v in arr.reshape(-1):
            ok = (v.sort.is_bv and v.sort.width == bits) if isinstance(v, Expr) else \
                isinstance(v, (int, np.integer)) and lo <= int(v) <= hi
            if not ok:
                raise VtaIsaError(f"{name} must hold int{bits} values or {bits}-bit terms, got "
                                  f"{v.short() if isinstance(v, Expr) else repr(v)}")
        return arr
    if not np.issubdtype(arr.dtype, np.integer) or arr.size and (arr.min() < lo or arr.max() > hi):
        raise VtaIsaError(f"{name} must hold int{bits} values")
    return arr.astype(np.int8 if bits == 8 else np.int32)


def _has_terms(a) -> bool:
    arr = np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a
    return arr.dtype == object and any(isinstance(v, Expr) for v in arr.reshape(-1))


def _zeros(shape, like: np.ndarray) -> np.ndarray:
    """Zero padding of ``like``'s kind: ints in an object array when it holds terms."""
    return np.zeros(shape, dtype=like.dtype)


def _check_int8(name, a):
    return _check_ints(name, a, 8)


def _check_int32(name, a):
    return _check_ints(name, a, 32)


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


def weight_tiles(wp: np.ndarray, cfg: VtaConfig = DEFAULT_CONFIG) -> np.ndarray:
    """The padded weight matrix ``wp[mb*BLOCK_OUT, kb*BLOCK_IN]`` as the weight buffer's elements,
    in DRAM order: ``[mb][kb][out][in]`` (tile (m, k) is element ``m * kb + k``)."""
    bo, bi = cfg.block_out, cfg.block_in
    mb, kb = wp.shape[0] // bo, wp.shape[1] // bi
    return np.ascontiguousarray(wp.reshape(mb, bo, kb, bi).transpose(0, 2, 1, 3))


def acc_rows(t: np.ndarray, rows: int, lanes: int) -> np.ndarray:
    """An int32 tensor flattened and zero-padded to ``rows`` accumulator rows of ``lanes`` lanes
    (row-major: element k in row k // lanes, lane k % lanes)."""
    buf = _zeros(rows * lanes, t)
    buf[:t.size] = t.reshape(-1)
    return buf.reshape(rows, lanes)


def _ceil_div(a, eb: int):
    """ceil(a / eb) of an int, or of a bit-vector term when ``eb`` is a power of two."""
    if not isinstance(a, Expr):
        return -(-a // eb)
    if eb & (eb - 1):
        raise VtaIsaError(f"a symbolic DRAM allocation needs power-of-two element sizes, got {eb} bytes")
    return (a + (eb - 1)).lshr(eb.bit_length() - 1)


class SymbolicDram:
    """The bump allocator of :class:`_Dram` on sizes that are bit-vector terms (an all-sizes proof
    runs the generator's layout on size symbols): ``alloc`` returns the element index as a term
    (32-bit arithmetic; the caller bounds the sizes so nothing wraps); there is no image."""

    def __init__(self, cfg: VtaConfig):
        self.cfg, self.top = cfg, 0

    def alloc(self, buf: str, n_elems) -> "int | Expr":
        eb = self.cfg.elem_bytes(buf)
        start = _ceil_div(self.top, eb)
        self.top = (start + n_elems) * eb
        return start


def dense_layout(d, n, kb, mb) -> tuple:
    """The DRAM regions of a dense program, allocated in order from ``d`` (a :class:`_Dram`, or a
    :class:`SymbolicDram` for size terms): kb + 1 micro-ops, n x kb input rows, mb x kb weight
    tiles, n x mb output rows. Returns their element indices (u, x, w, o)."""
    return d.alloc("uop", kb + 1), d.alloc("inp", n * kb), d.alloc("wgt", mb * kb), d.alloc("out", n * mb)


def dense_uop(r, kb) -> Uop:
    """Micro-op ``r`` of a dense program (ints, or terms): ``Uop(0, r, r)`` for r < kb (input row r
    and weight tile r of a K block), the all-zero micro-op at r = kb (the reset and ALU loops')."""
    if isinstance(r, Expr) or isinstance(kb, Expr):
        from ila.expr import bv_const, ite
        r = r if isinstance(r, Expr) else bv_const(r, 32)
        sel = ite(r.ult(kb), r, bv_const(0, r.sort.width))
        return Uop(0, sel, sel)
    return Uop(0, r, r) if r < kb else Uop(0, 0, 0)


def dense_instructions(kb, mb, bases: tuple, chunks: list, *, shift: int = 0, clip: bool = False,
                       relu: bool = False) -> list:
    """The instructions of a dense program (sizes ints, or terms in an all-sizes proof): LOAD UOP
    (kb + 1 micro-ops), LOAD WGT (mb x kb tiles), then per chunk ``(r0, rows)`` of x's rows LOAD INP,
    GEMM reset, GEMM over the kb micro-ops, the requantising ALU epilogue, STORE; then FINISH.
    ``bases``: the DRAM element indices of :func:`dense_layout`."""
    u_addr, x_addr, w_addr, o_addr = bases
    nu = kb + 1
    zero_u = kb
    insns = [MemInsn(OP_LOAD, MEM_UOP, 0, u_addr, 1, nu, nu), MemInsn(OP_LOAD, MEM_WGT, 0, w_addr, mb, kb, kb)]
    for r0, rows in chunks:
        insns.append(MemInsn(OP_LOAD, MEM_INP, 0, x_addr + r0 * kb if r0 else x_addr, rows, kb, kb))
        insns.append(_loop(GemmInsn, zero_u, zero_u + 1, rows, mb, reset=1, dst_factor_out=mb, dst_factor_in=1))
        insns.append(_loop(GemmInsn, 0, kb, rows, mb, dst_factor_out=mb, dst_factor_in=1,
                           src_factor_out=kb, src_factor_in=0, wgt_factor_out=0, wgt_factor_in=kb))
        _requant(insns, rows, mb, zero_u, shift=shift, clip=clip, relu=relu)
        insns.append(MemInsn(OP_STORE, MEM_OUT, 0, o_addr + r0 * mb if r0 else o_addr, rows, mb, mb))
    insns.append(FinishInsn())
    return insns


def dense_program(x, w, *, shift: int = 0, clip: bool = False, relu: bool = False,
                  cfg: VtaConfig = DEFAULT_CONFIG) -> VtaProgram:
    """Blocked dense ``x[N,K] @ w[M,K].T`` on VTA (BATCH must be 1). K and M are zero-padded to
    multiples of BLOCK_IN/BLOCK_OUT; rows are processed in chunks that fit the SRAMs. ``x`` and
    ``w`` hold int8 values or 8-bit terms (module docstring)."""
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
    xp = _zeros((n, kb * bi), x)
    xp[:, :k] = x
    wp = _zeros((mb * bo, kb * bi), w)
    wp[:mo, :k] = w
    d = _Dram(cfg)
    u_addr, x_addr, w_addr, o_addr = bases = dense_layout(d, n, kb, mb)
    d.put("uop", u_addr, np.array([encode_uop(dense_uop(r, kb), cfg) for r in range(kb + 1)], dtype="<u4"))
    d.put("inp", x_addr, xp)
    d.put("wgt", w_addr, weight_tiles(wp, cfg))
    chunks = [(r0, min(chunk, n - r0)) for r0 in range(0, n, chunk)]
    insns = dense_instructions(kb, mb, bases, chunks, shift=shift, clip=clip, relu=relu)
    out_bytes = o_addr * cfg.elem_bytes("out")
    prog = VtaProgram(insns, d.image, out_bytes, (n, mb * bo), cfg, d.terms)
    prog.crop = (slice(None), slice(0, mo))
    return prog


def elementwise_layout(d, op: str, rows) -> tuple:
    """The DRAM regions of an element-wise program, allocated in order from ``d`` (a :class:`_Dram`,
    or a :class:`SymbolicDram` for a size term): one micro-op, ``rows`` accumulator rows of a,
    ``rows`` of b (``add`` only; None otherwise), ``rows`` output rows. Returns their element
    indices (u, a, b, o)."""
    u = d.alloc("uop", 1)
    a = d.alloc("acc", rows)
    b = d.alloc("acc", rows) if op == "add" else None
    return u, a, b, d.alloc("out", rows)


def elementwise_uop(op: str, rows) -> Uop:
    """The one micro-op of an element-wise program: destination row 0, source row ``rows`` (b's
    first row) for ``add``, 0 otherwise (``rows`` an int or a term)."""
    return Uop(0, rows if op == "add" else 0, 0)


def elementwise_instructions(op: str, rows, bases: tuple, *, imm: int = 0) -> list:
    """The instructions of an element-wise program over ``rows`` accumulator rows (an int, or a
    term in an all-sizes proof): LOAD UOP, LOAD ACC a (rows 0..rows-1), for ``add`` LOAD ACC b
    (rows ``rows``..2 rows - 1) and ALU ADD (row i += row rows + i), for ``relu`` ALU MAX with
    immediate 0, for ``shr`` ALU SHR by ``imm`` then the int8 clip; STORE of the rows; FINISH.
    ``bases``: the DRAM element indices of :func:`elementwise_layout`."""
    u_addr, a_addr, b_addr, o_addr = bases
    insns = [MemInsn(OP_LOAD, MEM_UOP, 0, u_addr, 1, 1, 1), MemInsn(OP_LOAD, MEM_ACC, 0, a_addr, 1, rows, rows)]
    if op == "add":
        insns.append(MemInsn(OP_LOAD, MEM_ACC, rows, b_addr, 1, rows, rows))
        insns.append(_loop(AluInsn, 0, 1, rows, 1, alu_opcode=ALU_ADD, dst_factor_out=1, src_factor_out=1))
    elif op == "relu":
        _requant(insns, rows, 1, 0, relu=True)
    else:
        insns.append(_loop(AluInsn, 0, 1, rows, 1, alu_opcode=ALU_SHR, use_imm=1, imm=imm,
                           dst_factor_out=1, src_factor_out=1))
        _requant(insns, rows, 1, 0, clip=True)
    insns.append(MemInsn(OP_STORE, MEM_OUT, 0, o_addr, 1, rows, rows))
    insns.append(FinishInsn())
    return insns


def elementwise_program(op: str, a, b=None, *, imm: int = 0, cfg: VtaConfig = DEFAULT_CONFIG) -> VtaProgram:
    """Element-wise op on int32 tensors (any shape; flattened and padded to BLOCK_OUT lanes):
    ``add`` (a + b, int32 wrap), ``relu`` (max(a, 0)), ``shr`` (a >> imm, negative imm shifts
    left, then clip to int8). Results are truncated to int8 on store. ``a`` and ``b`` hold int32
    values or 32-bit terms (module docstring)."""
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
    bases = elementwise_layout(d, op, rows)
    u_addr, a_addr, b_addr, o_addr = bases
    d.put("uop", u_addr, np.array([encode_uop(elementwise_uop(op, rows), cfg)], dtype="<u4"))
    d.put("acc", a_addr, acc_rows(a, rows, lanes))
    if op == "add":
        d.put("acc", b_addr, acc_rows(b, rows, lanes))
    insns = elementwise_instructions(op, rows, bases, imm=imm)
    prog = VtaProgram(insns, d.image, o_addr * cfg.elem_bytes("out"), (rows * lanes,), cfg, d.terms)
    prog.crop = slice(0, a.size)
    prog.final_shape = shape
    return prog


def result(prog: VtaProgram, dram) -> np.ndarray:
    """The int8 result of a generated program, cropped to the operator's output shape."""
    out = prog.read_output(dram)[prog.crop]
    return out.reshape(prog.final_shape) if hasattr(prog, "final_shape") else out


# --------------------------------------------------------------------------- running
def dram_write_commands(image: np.ndarray, upto: int | None = None, terms: dict | None = None, *,
                        bug: str | None = None) -> list[dict]:
    """Virtual-memory write commands (8 bytes each, :func:`dram_word`) that load ``image[:upto]``
    into DRAM, with the bytes of ``terms`` (address -> 8-bit term) in place of the image's,
    skipping all-zero words (DRAM starts zeroed: the simulator's reset, and a proof's). Without
    terms the numeric fast path builds them from the image's 64-bit words at once (equal to the
    word-by-word path, :func:`_word_commands`; ``bug`` as for :func:`dram_write_table`)."""
    upto = image.size if upto is None else upto
    terms = {a: t for a, t in (terms or {}).items() if a < upto}
    if terms:
        return _word_commands(image, upto, terms)
    addr, data = _dram_words(image, upto, bug)
    return [{"vta_vir_mem_mode_in": VIR_WR_DRAM, "vta_vir_mem_addr_in": a, "vta_vir_mem_data_in": d}
            for a, d in zip(addr.tolist(), data.tolist())]


def _padded(image: np.ndarray, upto: int) -> np.ndarray:
    """``image[:upto]`` zero-padded to whole 8-byte words (uint8; an image holds its first bytes,
    every byte beyond it is 0)."""
    buf = np.zeros(-(-upto // 8) * 8, np.uint8)
    have = min(upto, image.size)
    buf[:have] = image[:have]
    return buf


def _word_commands(image: np.ndarray, upto: int, terms: dict) -> list[dict]:
    """The word-by-word path of :func:`dram_write_commands` (the packer's :func:`dram_word` of each
    8 bytes, ints or terms)."""
    buf = _padded(image, upto)
    words = set(np.nonzero(buf.view("<u8"))[0].tolist()) | {a // 8 for a in terms}
    out = []
    for idx in sorted(words):
        parts = [terms.get(8 * idx + b, int(buf[8 * idx + b])) for b in range(8)]
        out.append({"vta_vir_mem_mode_in": VIR_WR_DRAM, "vta_vir_mem_addr_in": idx * 8,
                    "vta_vir_mem_data_in": dram_word(parts)})
    return out


TABLE_BUGS = ("drops_last_word",)    # seeded bugs of the numeric DRAM-write paths, for their differential test


def _dram_words(image: np.ndarray, upto: int, bug: str | None):
    """(byte addresses, 64-bit little-endian data) of the non-zero words of ``image[:upto]``."""
    if bug is not None and bug not in TABLE_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {TABLE_BUGS}")
    words = _padded(image, upto).view("<u8")
    idx = np.nonzero(words)[0]
    if bug == "drops_last_word":
        idx = idx[:-1]
    return (idx * 8).astype(np.uint64), words[idx].astype(np.uint64)


def dram_write_table(image: np.ndarray, upto: int | None = None, *, bug: str | None = None) -> CommandTable:
    """The numeric fast path of :func:`dram_write_commands` (no terms): the same commands, row for
    row, as a :class:`~ila.commands.CommandTable` (columns ``vta_vir_mem_mode_in``,
    ``vta_vir_mem_addr_in``, ``vta_vir_mem_data_in``; the 64-bit data little-endian from the
    image). ``bug`` (one of :data:`TABLE_BUGS`) seeds a deliberate error, to show the
    differential test catches it."""
    upto = image.size if upto is None else upto
    addr, data = _dram_words(image, upto, bug)
    return CommandTable({"vta_vir_mem_mode_in": np.full(addr.size, VIR_WR_DRAM, np.uint8),
                         "vta_vir_mem_addr_in": addr, "vta_vir_mem_data_in": data})


_WRITE_KEYS = ("vta_vir_mem_mode_in", "vta_vir_mem_addr_in", "vta_vir_mem_data_in")
RUN_BUGS = ("drops_last_write",)     # seeded bugs of write_runs, for its differential test


def write_runs(cmds: list, *, bug: str | None = None, min_run: int = 64) -> list:
    """A stream of simulator commands as pieces to run one after the other: each maximal run of
    at least ``min_run`` virtual-memory writes (commands of exactly the three write inputs, each a
    Python int in [0, 2**64)) as a :class:`~ila.commands.CommandTable` holding the same commands
    row for row, the other commands as lists. ``Simulator.run`` of the pieces in order equals
    ``Simulator.run(cmds)`` (a table means its rows); the table is the numeric fast path of a
    DRAM fill. A run whose values are not all such ints stays a list. ``bug`` (one of
    :data:`RUN_BUGS`) seeds a deliberate error, to show the differential test catches it."""
    if bug is not None and bug not in RUN_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {RUN_BUGS}")
    data_key = _WRITE_KEYS[2]
    write = [len(c) == 3 and data_key in c for c in cmds]       # the other two keys: checked by _write_table
    pieces, rest, k, n = [], [], 0, len(cmds)
    while k < n:
        j = k
        while j < n and write[j]:
            j += 1
        table = _write_table(cmds[k:j - 1] if bug == "drops_last_write" else cmds[k:j]) if j - k >= min_run else None
        if table is None:
            rest.extend(cmds[k:max(j, k + 1)])
            k = max(j, k + 1)
            continue
        if rest:
            pieces.append(rest)
            rest = []
        pieces.append(table)
        k = j
    if rest:
        pieces.append(rest)
    return pieces


FILL_BUGS = ("byte_order_reversed",)  # seeded bugs of fill_dram, for its differential test


def fill_dram(sim: Simulator, table: CommandTable, *, bug: str | None = None) -> bool:
    """The numeric fast path of ``sim.run(table)`` for a table of virtual-memory writes: DRAM bytes
    ``addr .. addr + 7`` get the 64-bit data little-endian (the model's ``vta_vir_mem_wr``), one
    simulator step per command, all at once. Returns False, changing nothing, where it does not
    apply (the caller runs the table): a column other than the three write inputs, a mode other
    than write-DRAM, an address past the DRAM or not 32 bits, two writes that overlap, a child
    loop running, or a simulator recording its trace. Checked equal to ``sim.run`` (every state and
    memory, the step count) by ``tests/test_vta_summaries.py``; ``bug`` (one of :data:`FILL_BUGS`)
    seeds a deliberate error, to show that test catches it."""
    if bug is not None and bug not in FILL_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {FILL_BUGS}")
    from ila.models.vta.codes import C_IDLE
    cols = table.columns
    n = len(table)
    if n == 0 or set(cols) != set(_WRITE_KEYS) or sim.record_trace or sim.state.get("vta_child_op") != C_IDLE:
        return False
    mode, addr, data = (np.asarray(cols[k]) for k in _WRITE_KEYS)
    if any(a.dtype.kind not in "iu" for a in (mode, addr, data)) or (addr.dtype.kind == "i" and addr.min() < 0) \
            or (data.dtype.kind == "i" and data.min() < 0) or not (mode == VIR_WR_DRAM).all():
        return False
    dram = sim.state["vta_dram"]
    addr = addr.astype(np.int64)
    if addr.max() > min((1 << 32) - 1, dram.shape[0] - 8):
        return False
    # two writes overlap iff, in address order, two neighbours are less than 8 bytes apart; a table
    # already in increasing order with such gaps (the driver's) needs no sort
    if n > 1:
        gaps = np.diff(addr)
        if not (gaps >= 8).all() and (np.diff(np.sort(addr)) < 8).any():
            return False
    words = data.astype("<u8")
    if bug == "byte_order_reversed":
        words = words.byteswap()
    if dram.dtype == np.uint8 and dram.flags.c_contiguous and dram.size % 8 == 0 and not (addr & 7).any():
        dram.view("<u8")[addr >> 3] = words             # 8-byte aligned writes: one 64-bit word each
    else:
        dram[addr[:, None] + np.arange(8)] = words.view(np.uint8).reshape(n, 8)
    sim.steps += n
    return True


def _write_table(run: list) -> CommandTable | None:
    """The commands of ``run`` (virtual-memory writes) as a table, or None when a value is not a
    Python int in [0, 2**64)."""
    cols = {}
    for key in _WRITE_KEYS:
        try:
            col = [c[key] for c in run]
        except KeyError:
            return None
        if set(map(type, col)) != {int}:
            return None
        try:
            cols[key] = np.array(col, dtype=np.uint64)
        except OverflowError:
            return None
    return CommandTable(cols)


class Stream:
    """A VTA command stream held as pieces in order: :class:`~ila.commands.CommandTable` pieces
    (virtual-memory writes, the numeric fast path of :func:`dram_write_commands`) and lists of
    commands. It means the list of its rows (iteration, ``len``, :meth:`rows`), exactly; the VTA
    port's runner executes the tables as they are, so a program's DRAM writes never become dicts
    unless a fragment is written or a check compares the stream (``compile.certify`` compares it
    with the word-by-word path, :func:`word_commands`)."""

    __slots__ = ("pieces",)

    def __init__(self, pieces):
        out: list = []
        for p in pieces:
            for q in (p.pieces if isinstance(p, Stream) else (p,)):
                if not len(q):
                    continue
                if isinstance(q, CommandTable):
                    out.append(q)
                elif out and isinstance(out[-1], list):
                    out[-1] = out[-1] + list(q)
                else:
                    out.append(list(q))
        self.pieces = tuple(out)

    def __len__(self) -> int:
        return sum(len(p) for p in self.pieces)

    def __iter__(self):
        for p in self.pieces:
            yield from (p.rows() if isinstance(p, CommandTable) else p)

    def rows(self) -> list[dict]:
        """The commands as a list of dicts."""
        return list(self)

    def count(self, key: str) -> int:
        """Commands holding input or host key ``key`` (a table holds only its own columns)."""
        return sum((len(p) if key in p.columns else 0) if isinstance(p, CommandTable) else
                   sum(1 for c in p if key in c) for p in self.pieces)

    def __repr__(self) -> str:
        return f"Stream({len(self)} commands in {len(self.pieces)} pieces)"


def program_stream(prog: VtaProgram, tail: list | None = None):
    """:func:`program_commands` of ``prog`` followed by the commands ``tail``: a :class:`Stream`
    (the DRAM writes as one table, :func:`dram_write_table`) for an integer program, the list for a
    program over terms (what proofs run)."""
    tail = list(tail or [])
    if prog.terms:
        return program_commands(prog) + tail
    return Stream([dram_write_table(prog.dram, upto=prog.out_addr), instruction_commands(prog) + tail])


def word_commands(prog: VtaProgram) -> list[dict]:
    """:func:`program_commands` of an integer program through the word-by-word path (the packer's
    :func:`dram_word` of every 8 bytes, as a program over terms is emitted): what the fast paths
    (:func:`dram_write_commands`' numeric path, :func:`program_stream`'s table) are compared with."""
    return _word_commands(prog.dram, prog.out_addr, dict(prog.terms)) + instruction_commands(prog)


def instruction_commands(prog: VtaProgram) -> list[dict]:
    """One command per instruction, in program order: the encoded 128-bit word."""
    return [{"vta_top_instr_in": encode(insn, prog.cfg)} for insn in prog.insns]


def program_commands(prog: VtaProgram) -> list[dict]:
    """The MMIO stream the driver emits for ``prog``: the DRAM image below the output region
    (every byte the program can read) as 8-byte writes, then the instructions. Runs on integer
    programs and on programs over terms alike (the data of a write is then a 64-bit term)."""
    return list(dram_write_commands(prog.dram, upto=prog.out_addr, terms=prog.terms)) + instruction_commands(prog)


def run_on_ila(prog: VtaProgram, *, via_mmio: bool = True, sim: Simulator | None = None,
               record_trace: bool = False) -> Simulator:
    """Run a program on the VTA ILA simulator: the stream of :func:`program_commands` when
    ``via_mmio`` (its DRAM writes as the table of :func:`dram_write_table`), else the DRAM image
    set as state, then the instructions."""
    cfg = prog.cfg
    if prog.terms:
        raise VtaIsaError(f"the program's DRAM image holds {len(prog.terms)} symbolic bytes; it cannot be simulated")
    if sim is None:
        sim = Simulator(build_vta(cfg), record_trace=record_trace)
    if via_mmio:
        sim.run(dram_write_table(prog.dram, upto=prog.out_addr))
        sim.run(instruction_commands(prog))
        return sim
    sim.set_state("vta_dram", prog.full_dram())
    sim.run(instruction_commands(prog))
    return sim


def run_on_fsim(prog: VtaProgram):
    """Run a program on the independent numpy behavioural simulator."""
    from ila.models.vta.reference import VtaFsim
    if prog.terms:
        raise VtaIsaError(f"the program's DRAM image holds {len(prog.terms)} symbolic bytes; it cannot be simulated")
    fs = VtaFsim(prog.cfg)
    fs.dram[:] = prog.full_dram()
    fs.run(prog.insns)
    return fs


__all__ = ["VtaProgram", "dense_program", "elementwise_program", "result", "run_on_ila", "run_on_fsim",
           "dram_write_commands", "dram_write_table", "write_runs", "instruction_commands", "program_commands",
           "Stream", "program_stream", "word_commands", "fill_dram", "FILL_BUGS",
           "pack_element", "pack_elements", "dram_word", "PACK_BUGS", "TABLE_BUGS", "RUN_BUGS",
           "weight_tiles", "acc_rows", "elem_width", "MEM_STATE"]
