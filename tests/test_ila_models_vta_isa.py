"""VTA ISA as data: exact field layouts, encode/decode round trips under hypothesis, clear errors."""
import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from ila.models.vta import isa as V
CFG = V.DEFAULT_CONFIG


def test_default_configuration():
    c = CFG
    assert (c.inp_width, c.wgt_width, c.acc_width, c.out_width) == (8, 8, 32, 8)
    assert (c.batch, c.block_in, c.block_out) == (1, 16, 16)
    assert {b: c.depth(b) for b in ("uop", "inp", "wgt", "acc", "out")} == \
        {"uop": 8192, "inp": 2048, "wgt": 1024, "acc": 2048, "out": 2048}
    assert {b: c.elem_bytes(b) for b in ("uop", "inp", "wgt", "acc")} == {"uop": 4, "inp": 16, "wgt": 256, "acc": 64}


def _bits(lay):
    return {n: (f.hi, f.lo) for n, f in lay.items()}


def test_layouts_match_hw_spec():
    mem = _bits(V.mem_layout())
    assert mem["opcode"] == (2, 0) and mem["push_next_dep"] == (6, 6)
    assert mem["memory_type"] == (9, 7) and mem["sram_base"] == (25, 10) and mem["dram_base"] == (57, 26)
    assert mem["y_size"] == (79, 64) and mem["x_size"] == (95, 80) and mem["x_stride"] == (111, 96)
    assert mem["y_pad_0"] == (115, 112) and mem["x_pad_1"] == (127, 124)
    g = _bits(V.gemm_layout())
    assert g["reset"] == (7, 7) and g["uop_bgn"] == (20, 8) and g["uop_end"] == (34, 21)
    assert g["iter_out"] == (48, 35) and g["iter_in"] == (62, 49)
    assert g["dst_factor_out"] == (74, 64) and g["src_factor_in"] == (107, 97) and g["wgt_factor_in"] == (127, 118)
    a = _bits(V.alu_layout())
    assert a["alu_opcode"] == (110, 108) and a["use_imm"] == (111, 111) and a["imm"] == (127, 112)
    assert V.alu_layout()["imm"].signed
    assert _bits(V.uop_layout()) == {"dst_idx": (10, 0), "src_idx": (21, 11), "wgt_idx": (31, 22)}


def test_layout_follows_configuration():
    small = dataclasses.replace(CFG, log_acc_buff_size=15, log_uop_buff_size=12)
    assert small.depth("acc") == 512 and small.depth("uop") == 1024
    g = V.gemm_layout(small)
    assert g["dst_factor_out"].width == 9 and g["uop_bgn"].width == 10 and g["uop_end"].width == 11
    with pytest.raises(V.VtaIsaError, match="word 1 needs"):
        V.gemm_layout(dataclasses.replace(CFG, log_acc_buff_size=25))
    with pytest.raises(V.VtaIsaError):
        V.VtaConfig(log_acc_width=6)


def _u(f):
    return st.integers(0, (1 << f.width) - 1)


deps = st.builds(V.Deps, st.booleans(), st.booleans(), st.booleans(), st.booleans())


@st.composite
def mem_insns(draw):
    lay = V.mem_layout()
    kw = {n: draw(_u(lay[n])) for n in ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                                        "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
    return V.MemInsn(draw(st.sampled_from([V.OP_LOAD, V.OP_STORE])), draw(st.sampled_from(sorted(V.MEMORY_TYPES))),
                     deps=draw(deps), **kw)


def _loop_kw(draw, lay, names):
    return {n: draw(_u(lay[n])) for n in names}


LOOP = ("reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
        "src_factor_out", "src_factor_in")


@st.composite
def gemm_insns(draw):
    lay = V.gemm_layout()
    return V.GemmInsn(deps=draw(deps), **_loop_kw(draw, lay, LOOP + ("wgt_factor_out", "wgt_factor_in")))


@st.composite
def alu_insns(draw):
    lay = V.alu_layout()
    return V.AluInsn(alu_opcode=draw(st.sampled_from(sorted(V.ALU_OPCODES))), use_imm=draw(st.integers(0, 1)),
                     imm=draw(st.integers(-(1 << 15), (1 << 15) - 1)), deps=draw(deps), **_loop_kw(draw, lay, LOOP))


insns = st.one_of(mem_insns(), gemm_insns(), alu_insns(), st.builds(V.FinishInsn, deps))


@settings(max_examples=400, deadline=None)
@given(insns)
def test_instruction_round_trip(insn):
    word = V.encode(insn)
    assert 0 <= word < 1 << 128
    assert word & 7 == insn.opcode
    assert V.decode(word) == insn
    assert V.encode(V.decode(word)) == word


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 11) - 1), st.integers(0, (1 << 11) - 1), st.integers(0, (1 << 10) - 1))
def test_uop_round_trip(d, s, w):
    u = V.Uop(d, s, w)
    word = V.encode_uop(u)
    assert word == d | (s << 11) | (w << 22)
    assert V.decode_uop(word) == u


@settings(max_examples=100, deadline=None)
@given(st.integers(0, (1 << 128) - 1))
def test_decode_any_word_is_total_or_clear_error(word):
    try:
        insn = V.decode(word)
    except V.VtaIsaError as e:
        assert "unknown VTA" in str(e)
    else:
        # re-encoding keeps every decoded field (unused bits are dropped)
        assert V.decode(V.encode(insn)) == insn


@pytest.mark.parametrize("insn,match", [
    (V.MemInsn(V.OP_LOAD, V.MEM_INP, sram_base=1 << 16), r"sram_base=65536 out of range \[0, 65535\]"),
    (V.MemInsn(V.OP_LOAD, V.MEM_INP, x_pad_0=16), r"x_pad_0=16 out of range \[0, 15\]"),
    (V.MemInsn(V.OP_LOAD, 7), "unknown memory_type 7"),
    (V.MemInsn(V.OP_GEMM, V.MEM_INP), "MemInsn opcode"),
    (V.GemmInsn(uop_bgn=8192), r"uop_bgn=8192 out of range \[0, 8191\]"),
    (V.GemmInsn(wgt_factor_in=1024), "wgt_factor_in=1024"),
    (V.GemmInsn(iter_out=-1), "iter_out=-1"),
    (V.AluInsn(imm=1 << 15), r"imm=32768 out of range \[-32768, 32767\]"),
    (V.AluInsn(alu_opcode=6), "unknown alu_opcode 6"),
    (V.Uop(dst_idx=2048), None),
])
def test_out_of_range_fields_are_clear_errors(insn, match):
    with pytest.raises(V.VtaIsaError, match=match or "dst_idx=2048"):
        V.encode_uop(insn) if isinstance(insn, V.Uop) else V.encode(insn)


@pytest.mark.parametrize("opcode", [5, 6, 7])
def test_unknown_opcode_is_clear_error(opcode):
    with pytest.raises(V.VtaIsaError, match=f"unknown VTA opcode {opcode}"):
        V.decode(opcode | (1 << 70))
    with pytest.raises(V.VtaIsaError, match="unknown VTA opcode"):
        V.layout_of(opcode)


def test_decode_rejects_bad_words():
    with pytest.raises(V.VtaIsaError, match="128-bit"):
        V.decode(1 << 128)
    with pytest.raises(V.VtaIsaError, match="unknown VTA memory_type 6"):
        V.decode(V.OP_LOAD | (6 << 7))
    with pytest.raises(V.VtaIsaError, match="unknown VTA alu_opcode 7"):
        V.decode(V.OP_ALU | (7 << 108))
    assert "SHR imm=-3" in V.describe(V.AluInsn(alu_opcode=V.ALU_SHR, use_imm=1, imm=-3))
