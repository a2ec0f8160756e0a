"""The VTA ISA as data: configuration, 128-bit instruction layouts, 32-bit micro-ops, and an
encoder/decoder.

Facts from ``SEEDS_NOTES.md`` §1.2 (tvm-vta ``hw_spec.h`` / ``hw_spec_const.h`` /
``vta_config.json``, current widths). An instruction is two 64-bit words; no field straddles the
word boundary. Fields are packed from bit 0 of each word in the order listed below; the widths of
buffer indices follow the configuration, so the layout is recomputed from a :class:`VtaConfig`.

Common header (low word): ``opcode[2:0]``, ``pop_prev_dep[3]``, ``pop_next_dep[4]``,
``push_prev_dep[5]``, ``push_next_dep[6]``.

Opcodes: LOAD 0, STORE 1, GEMM 2, FINISH 3, ALU 4. Memory types: UOP 0, WGT 1, INP 2, ACC 3,
OUT 4, ACC_8BIT 5. ALU opcodes: MIN 0, MAX 1, ADD 2, SHR 3, MUL 4.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from ila.errors import D2AError
from ila.memo import register as register_memo
from ila.expr import Expr

OP_LOAD, OP_STORE, OP_GEMM, OP_FINISH, OP_ALU = 0, 1, 2, 3, 4
OPCODES = {OP_LOAD: "LOAD", OP_STORE: "STORE", OP_GEMM: "GEMM", OP_FINISH: "FINISH", OP_ALU: "ALU"}
MEM_UOP, MEM_WGT, MEM_INP, MEM_ACC, MEM_OUT, MEM_ACC_8BIT = 0, 1, 2, 3, 4, 5
MEMORY_TYPES = {MEM_UOP: "UOP", MEM_WGT: "WGT", MEM_INP: "INP", MEM_ACC: "ACC", MEM_OUT: "OUT",
                MEM_ACC_8BIT: "ACC_8BIT"}
ALU_MIN, ALU_MAX, ALU_ADD, ALU_SHR, ALU_MUL = 0, 1, 2, 3, 4
ALU_OPCODES = {ALU_MIN: "MIN", ALU_MAX: "MAX", ALU_ADD: "ADD", ALU_SHR: "SHR", ALU_MUL: "MUL"}


class VtaIsaError(D2AError, ValueError):
    """A VTA instruction or micro-op that cannot be encoded or decoded (the message names the
    field, its value and the allowed range)."""


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class VtaConfig:
    """VTA hardware parameters (``vta_config.json`` defaults), changeable with :func:`dataclasses.replace`.

    Widths are in bits; buffer sizes are log2 of bytes, as in the JSON file.
    """

    log_inp_width: int = 3        # int8 input
    log_wgt_width: int = 3        # int8 weight
    log_acc_width: int = 5        # int32 accumulator
    log_batch: int = 0            # BATCH = 1
    log_block: int = 4            # BLOCK_IN = BLOCK_OUT = 16
    log_uop_buff_size: int = 15   # 32 KiB
    log_inp_buff_size: int = 15   # 32 KiB
    log_wgt_buff_size: int = 18   # 256 KiB
    log_acc_buff_size: int = 17   # 128 KiB
    dram_bytes: int = 1 << 22     # size of the simulated DRAM (not a VTA parameter)

    # widths of ISA fields that do not depend on buffer sizes (current hw_spec_const.h)
    opcode_bits: int = field(default=3, repr=False)
    memop_id_bits: int = field(default=3, repr=False)
    alu_opcode_bits: int = field(default=3, repr=False)
    sram_addr_bits: int = field(default=16, repr=False)
    dram_addr_bits: int = field(default=32, repr=False)
    size_bits: int = field(default=16, repr=False)
    stride_bits: int = field(default=16, repr=False)
    pad_bits: int = field(default=4, repr=False)
    loop_iter_bits: int = field(default=14, repr=False)
    imm_bits: int = field(default=16, repr=False)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or v < 0:
                raise VtaIsaError(f"VtaConfig.{f.name} must be a non-negative int, got {v!r}")
        if self.log_inp_width > 5 or self.log_wgt_width > 5 or self.log_acc_width > 5:
            raise VtaIsaError("VtaConfig: element widths above 32 bits are not supported")
        for name in ("uop", "inp", "wgt", "acc"):
            if self.log_depth(name) < 0:
                raise VtaIsaError(f"VtaConfig: the {name} buffer is smaller than one element")

    # derived parameters (pkg_config.py)
    @property
    def inp_width(self) -> int: return 1 << self.log_inp_width
    @property
    def wgt_width(self) -> int: return 1 << self.log_wgt_width
    @property
    def acc_width(self) -> int: return 1 << self.log_acc_width
    @property
    def out_width(self) -> int: return self.inp_width
    @property
    def batch(self) -> int: return 1 << self.log_batch
    @property
    def block_in(self) -> int: return 1 << self.log_block
    @property
    def block_out(self) -> int: return 1 << self.log_block

    def log_depth(self, buf: str) -> int:
        """log2 of the number of SRAM rows (elements) of buffer ``uop|inp|wgt|acc|out``."""
        if buf == "uop":
            return self.log_uop_buff_size - 5 + 3
        if buf == "inp":
            return self.log_inp_buff_size - self.log_batch - self.log_block - self.log_inp_width + 3
        if buf == "wgt":
            return self.log_wgt_buff_size - 2 * self.log_block - self.log_wgt_width + 3
        if buf in ("acc", "out"):
            return self.log_acc_buff_size - self.log_batch - self.log_block - self.log_acc_width + 3
        raise VtaIsaError(f"unknown VTA buffer {buf!r}")

    def depth(self, buf: str) -> int:
        return 1 << self.log_depth(buf)

    def lanes(self, buf: str) -> int:
        """Scalar lanes in one element (SRAM row) of a buffer."""
        return {"uop": 1, "inp": self.batch * self.block_in, "wgt": self.block_out * self.block_in,
                "acc": self.batch * self.block_out, "out": self.batch * self.block_out}[buf]

    def elem_bytes(self, buf: str) -> int:
        """Bytes of one element in DRAM."""
        width = {"uop": 32, "inp": self.inp_width, "wgt": self.wgt_width, "acc": self.acc_width,
                 "out": self.out_width}[buf]
        return self.lanes(buf) * width // 8


DEFAULT_CONFIG = VtaConfig()


# --------------------------------------------------------------------------- layouts
@dataclass(frozen=True)
class Field:
    name: str
    lo: int      # bit offset in the 128-bit instruction
    width: int
    signed: bool = False

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1


def _pack(words: list[list[tuple[str, int]]], word_bits: int, what: str, signed=()) -> dict[str, Field]:
    out: dict[str, Field] = {}
    for w, items in enumerate(words):
        pos = 0
        for name, width in items:
            out[name] = Field(name, w * word_bits + pos, width, name in signed)
            pos += width
        if pos > word_bits:
            raise VtaIsaError(f"{what}: word {w} needs {pos} bits, more than {word_bits} with this VtaConfig")
    return out


_HEADER = [("opcode", None), ("pop_prev_dep", 1), ("pop_next_dep", 1), ("push_prev_dep", 1), ("push_next_dep", 1)]


def _header(cfg: VtaConfig) -> list[tuple[str, int]]:
    return [(n, cfg.opcode_bits if w is None else w) for n, w in _HEADER]


def mem_layout(cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    """VTAMemInsn (LOAD/STORE)."""
    lo = _header(cfg) + [("memory_type", cfg.memop_id_bits), ("sram_base", cfg.sram_addr_bits),
                         ("dram_base", cfg.dram_addr_bits)]
    hi = [("y_size", cfg.size_bits), ("x_size", cfg.size_bits), ("x_stride", cfg.stride_bits),
          ("y_pad_0", cfg.pad_bits), ("y_pad_1", cfg.pad_bits), ("x_pad_0", cfg.pad_bits),
          ("x_pad_1", cfg.pad_bits)]
    return _pack([lo, hi], 64, "VTA memory instruction")


def _loop_low(cfg: VtaConfig) -> list[tuple[str, int]]:
    u = cfg.log_depth("uop")
    return _header(cfg) + [("reset", 1), ("uop_bgn", u), ("uop_end", u + 1),
                           ("iter_out", cfg.loop_iter_bits), ("iter_in", cfg.loop_iter_bits)]


def gemm_layout(cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    """VTAGemInsn."""
    a, i, w = cfg.log_depth("acc"), cfg.log_depth("inp"), cfg.log_depth("wgt")
    hi = [("dst_factor_out", a), ("dst_factor_in", a), ("src_factor_out", i), ("src_factor_in", i),
          ("wgt_factor_out", w), ("wgt_factor_in", w)]
    return _pack([_loop_low(cfg), hi], 64, "VTA GEMM instruction")


def alu_layout(cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    """VTAAluInsn (the src factors index the acc buffer)."""
    a = cfg.log_depth("acc")
    hi = [("dst_factor_out", a), ("dst_factor_in", a), ("src_factor_out", a), ("src_factor_in", a),
          ("alu_opcode", cfg.alu_opcode_bits), ("use_imm", 1), ("imm", cfg.imm_bits)]
    return _pack([_loop_low(cfg), hi], 64, "VTA ALU instruction", signed=("imm",))


def finish_layout(cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    return _pack([_header(cfg), []], 64, "VTA FINISH instruction")


def uop_layout(cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    """VTAUop: dst_idx (acc), src_idx (inp for GEMM, acc for ALU), wgt_idx."""
    a, i, w = cfg.log_depth("acc"), max(cfg.log_depth("inp"), cfg.log_depth("acc")), cfg.log_depth("wgt")
    return _pack([[("dst_idx", a), ("src_idx", i), ("wgt_idx", w)]], 32, "VTA micro-op")


# --------------------------------------------------------------------------- instructions
@dataclass(frozen=True)
class Deps:
    pop_prev_dep: bool = False
    pop_next_dep: bool = False
    push_prev_dep: bool = False
    push_next_dep: bool = False


@dataclass(frozen=True)
class MemInsn:
    """LOAD (``opcode=OP_LOAD``) or STORE (``OP_STORE``); sizes, bases and stride count elements."""
    opcode: int
    memory_type: int
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 1
    x_size: int = 1
    x_stride: int = 1
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0
    deps: Deps = Deps()


@dataclass(frozen=True)
class GemmInsn:
    reset: int = 0
    uop_bgn: int = 0
    uop_end: int = 1
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    deps: Deps = Deps()
    opcode: int = field(default=OP_GEMM, init=False)


@dataclass(frozen=True)
class AluInsn:
    alu_opcode: int = ALU_ADD
    use_imm: int = 0
    imm: int = 0                   # signed, sign-extended to the accumulator width
    uop_bgn: int = 0
    uop_end: int = 1
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    reset: int = 0                 # present in the encoding, ignored by the ALU
    deps: Deps = Deps()
    opcode: int = field(default=OP_ALU, init=False)


@dataclass(frozen=True)
class FinishInsn:
    deps: Deps = Deps()
    opcode: int = field(default=OP_FINISH, init=False)


@dataclass(frozen=True)
class Uop:
    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0


Insn = MemInsn | GemmInsn | AluInsn | FinishInsn


def layout_of(insn_or_opcode, cfg: VtaConfig = DEFAULT_CONFIG) -> dict[str, Field]:
    op = insn_or_opcode if isinstance(insn_or_opcode, int) else insn_or_opcode.opcode
    if op in (OP_LOAD, OP_STORE):
        return mem_layout(cfg)
    if op == OP_GEMM:
        return gemm_layout(cfg)
    if op == OP_ALU:
        return alu_layout(cfg)
    if op == OP_FINISH:
        return finish_layout(cfg)
    raise VtaIsaError(f"unknown VTA opcode {op!r} (known: {', '.join(f'{k}={v}' for k, v in OPCODES.items())})")


def _put(word: int, f: Field, value, what: str) -> int:
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int):
        raise VtaIsaError(f"{what}: field {f.name} must be an int, got {value!r}")
    if f.signed:
        lo, hi = -(1 << (f.width - 1)), (1 << (f.width - 1)) - 1
    else:
        lo, hi = 0, (1 << f.width) - 1
    if not lo <= value <= hi:
        raise VtaIsaError(f"{what}: field {f.name}={value} out of range [{lo}, {hi}] "
                          f"({f.width} bits{' signed' if f.signed else ''}, bits {f.hi}:{f.lo})")
    return word | ((value & ((1 << f.width) - 1)) << f.lo)


def _get(word: int, f: Field) -> int:
    v = (word >> f.lo) & ((1 << f.width) - 1)
    if f.signed and v >> (f.width - 1):
        v -= 1 << f.width
    return v


_WORDS: dict = {}        # memo of encode / encode_uop: (kind, type, cfg, field values) -> word


def _clear_words() -> None:
    _WORDS.clear()


register_memo(_clear_words)    # emptied around every seeded bug (ila.memo.clear_all)


def _memo_key(kind: str, insn, cfg):
    """The memo key of an instruction or micro-op whose field values (and dependency flags) are all
    exact ints or bools (the values ``_put`` encodes as they are), else None (not memoised: another
    type, e.g. a float equal to an int, goes through the checks). Equal keys encode equally: the
    word is a function of the type, the configuration and the values."""
    vals = tuple(v for k, v in insn.__dict__.items() if k != "deps")
    deps = getattr(insn, "deps", None)
    if deps is not None:
        if type(deps) is not Deps:
            return None
        vals = vals + tuple(deps.__dict__.values())
    for v in vals:
        if type(v) is not int and type(v) is not bool:
            return None
    return (kind, type(insn), cfg, vals)


def encode(insn: Insn, cfg: VtaConfig = DEFAULT_CONFIG) -> int:
    """Encode an instruction to its 128-bit integer. Raises VtaIsaError for an unknown opcode,
    memory type or ALU opcode, or a field value that does not fit its bits. Memoised on the
    instruction's type, field values and ``cfg`` (:func:`_memo_key`)."""
    return _memoised("insn", insn, cfg, (MemInsn, GemmInsn, AluInsn, FinishInsn), _encode)


def _memoised(kind: str, obj, cfg, types: tuple, encoder):
    """``encoder(obj, cfg)`` through the memo :data:`_WORDS` when ``obj`` is one of ``types`` with a
    memo key (:func:`_memo_key`)."""
    key = _memo_key(kind, obj, cfg) if isinstance(obj, types) else None
    got = _WORDS.get(key) if key is not None else None
    if got is None:
        got = encoder(obj, cfg)
        if key is not None:
            _WORDS[key] = got
    return got


def _encode(insn: Insn, cfg: VtaConfig = DEFAULT_CONFIG) -> int:
    """:func:`encode` without the memo."""
    if not isinstance(insn, (MemInsn, GemmInsn, AluInsn, FinishInsn)):
        raise VtaIsaError(f"not a VTA instruction: {insn!r}")
    lay = layout_of(insn.opcode, cfg)
    what = f"VTA {OPCODES[insn.opcode]}"
    if isinstance(insn, MemInsn):
        if insn.opcode not in (OP_LOAD, OP_STORE):
            raise VtaIsaError(f"MemInsn opcode must be LOAD (0) or STORE (1), got {insn.opcode!r}")
        if insn.memory_type not in MEMORY_TYPES:
            raise VtaIsaError(f"{what}: unknown memory_type {insn.memory_type!r} (known: {MEMORY_TYPES})")
    if isinstance(insn, AluInsn) and insn.alu_opcode not in ALU_OPCODES:
        raise VtaIsaError(f"{what}: unknown alu_opcode {insn.alu_opcode!r} (known: {ALU_OPCODES})")
    word = 0
    for name, f in lay.items():
        if name in ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep"):
            value = getattr(insn.deps, name)
        else:
            value = getattr(insn, name)
        word = _put(word, f, value, what)
    return word


def decode(word: int, cfg: VtaConfig = DEFAULT_CONFIG) -> Insn:
    """Decode a 128-bit instruction. Raises VtaIsaError for an unknown opcode, memory type or
    ALU opcode, or a value that is not a 128-bit unsigned integer."""
    if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < (1 << 128):
        raise VtaIsaError(f"a VTA instruction is a 128-bit unsigned int, got {word!r}")
    op = word & ((1 << cfg.opcode_bits) - 1)
    if op not in OPCODES:
        raise VtaIsaError(f"unknown VTA opcode {op} in instruction {word:#034x} "
                          f"(known: {', '.join(f'{k}={v}' for k, v in OPCODES.items())})")
    lay = layout_of(op, cfg)
    vals = {name: _get(word, f) for name, f in lay.items()}
    deps = Deps(*(bool(vals.pop(n)) for n in ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")))
    vals.pop("opcode")
    if op in (OP_LOAD, OP_STORE):
        if vals["memory_type"] not in MEMORY_TYPES:
            raise VtaIsaError(f"unknown VTA memory_type {vals['memory_type']} in {OPCODES[op]} {word:#034x}")
        return MemInsn(opcode=op, deps=deps, **vals)
    if op == OP_GEMM:
        return GemmInsn(deps=deps, **vals)
    if op == OP_ALU:
        if vals["alu_opcode"] not in ALU_OPCODES:
            raise VtaIsaError(f"unknown VTA alu_opcode {vals['alu_opcode']} in ALU {word:#034x}")
        return AluInsn(deps=deps, **vals)
    return FinishInsn(deps=deps)


def encode_uop(uop: Uop, cfg: VtaConfig = DEFAULT_CONFIG) -> int:
    """Encode a micro-op to its 32-bit word (VtaIsaError for a field that does not fit); memoised
    as :func:`encode`."""
    return _memoised("uop", uop, cfg, (Uop,), _encode_uop)


def _encode_uop(uop: Uop, cfg: VtaConfig = DEFAULT_CONFIG) -> int:
    """:func:`encode_uop` without the memo."""
    word = 0
    for name, f in uop_layout(cfg).items():
        word = _put(word, f, getattr(uop, name), "VTA micro-op")
    return word


def _word_term(obj, lay: dict[str, Field], bits: int, what: str):
    """The ``bits``-bit word of ``obj`` as a bit-vector term, fields that are ints checked and
    encoded as :func:`_put` does, fields that are terms (bit-vector expressions of any width)
    placed as their low ``width`` bits. Returns (word, [fits]): each ``fits`` is the Bool term
    "this field's term value fits its bits (unsigned)", which an all-sizes proof takes as a side
    condition (the integer encoder refuses a value that does not fit). Raises VtaIsaError for a
    term in a signed field or an int out of range."""
    from ila.expr import bv_const, concat, extract, zext
    parts, fits, pos = [], [], 0
    for name, f in sorted(lay.items(), key=lambda kv: kv[1].lo):
        value = getattr(obj.deps, name) if name.endswith("_dep") else getattr(obj, name)
        if f.lo > pos:
            parts.append(bv_const(0, f.lo - pos))
        if isinstance(value, Expr):
            if f.signed or not value.sort.is_bv:
                raise VtaIsaError(f"{what}: field {f.name} takes no {'signed ' if f.signed else ''}term: {value.short()}")
            w = value.sort.width
            if w > f.width:
                fits.append(value.ult(1 << f.width))
                parts.append(extract(value, f.width - 1, 0))
            else:
                parts.append(value if w == f.width else zext(value, f.width))
        else:
            parts.append(bv_const(_put(0, f, value, what) >> f.lo, f.width))
        pos = f.lo + f.width
    if pos < bits:
        parts.append(bv_const(0, bits - pos))
    return concat(*reversed(parts)), fits


def encode_term(insn: Insn, cfg: VtaConfig = DEFAULT_CONFIG):
    """:func:`encode` for an instruction whose fields may be bit-vector terms (an all-sizes proof
    runs the generator on size terms): (the 128-bit word as a term, [Bool side conditions: every
    term field fits its bits]). Equal to ``encode`` on int fields (``tests/test_vta_isa.py``)."""
    if not isinstance(insn, (MemInsn, GemmInsn, AluInsn, FinishInsn)):
        raise VtaIsaError(f"not a VTA instruction: {insn!r}")
    return _word_term(insn, layout_of(insn.opcode, cfg), 128, f"VTA {OPCODES[insn.opcode]}")


def encode_uop_term(uop: Uop, cfg: VtaConfig = DEFAULT_CONFIG):
    """:func:`encode_uop` for a micro-op whose fields may be terms: (32-bit word term, [fits])."""
    return _word_term(uop, uop_layout(cfg), 32, "VTA micro-op")


def decode_uop(word: int, cfg: VtaConfig = DEFAULT_CONFIG) -> Uop:
    if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < (1 << 32):
        raise VtaIsaError(f"a VTA micro-op is a 32-bit unsigned int, got {word!r}")
    return Uop(**{name: _get(word, f) for name, f in uop_layout(cfg).items()})


def describe(insn: Insn) -> str:
    """A one-line human-readable rendering."""
    if isinstance(insn, MemInsn):
        return (f"{OPCODES[insn.opcode]} {MEMORY_TYPES.get(insn.memory_type, insn.memory_type)} "
                f"sram={insn.sram_base} dram={insn.dram_base} y={insn.y_size} x={insn.x_size} "
                f"stride={insn.x_stride} pad=({insn.y_pad_0},{insn.y_pad_1},{insn.x_pad_0},{insn.x_pad_1})")
    if isinstance(insn, GemmInsn):
        return (f"GEMM reset={insn.reset} uops=[{insn.uop_bgn},{insn.uop_end}) iters={insn.iter_out}x{insn.iter_in}")
    if isinstance(insn, AluInsn):
        src = f"imm={insn.imm}" if insn.use_imm else "src"
        return (f"ALU {ALU_OPCODES.get(insn.alu_opcode, insn.alu_opcode)} {src} uops=[{insn.uop_bgn},{insn.uop_end}) "
                f"iters={insn.iter_out}x{insn.iter_in}")
    return "FINISH"


__all__ = [
    "VtaConfig", "DEFAULT_CONFIG", "VtaIsaError", "Field", "Deps", "MemInsn", "GemmInsn", "AluInsn",
    "FinishInsn", "Uop", "encode", "decode", "encode_uop", "decode_uop", "encode_term", "encode_uop_term", "mem_layout", "gemm_layout",
    "alu_layout", "finish_layout", "uop_layout", "layout_of", "describe", "replace",
    "OP_LOAD", "OP_STORE", "OP_GEMM", "OP_FINISH", "OP_ALU", "OPCODES",
    "MEM_UOP", "MEM_WGT", "MEM_INP", "MEM_ACC", "MEM_OUT", "MEM_ACC_8BIT", "MEMORY_TYPES",
    "ALU_MIN", "ALU_MAX", "ALU_ADD", "ALU_SHR", "ALU_MUL", "ALU_OPCODES",
]
