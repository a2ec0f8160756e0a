"""ILA model of HLSCNN, a 2D-convolution accelerator with 16-bit fixed-point activations and 8-bit
(original design) or 16-bit (updated design) fixed-point weights.

Facts from ``ILA_AND_ACCELERATORS.md`` §2.2 (PrincetonUniversity/hlscnn-ila). Interface: an AXI
slave (``top_slave_if_wr``, ``top_slave_if_rd``, ``top_slave_addr_in`` (32 bits),
``top_slave_data_in_0..15`` (one 16-byte beat)). The low 24 address bits are decoded; a command is
valid when exactly one of rd/wr is set and the address is below :data:`ADDR_IN_MAX`.

Address map (24-bit offsets from ``SLAVE_BASE`` 0x32000000):

* ``[0, 0x4000)``: 30 configuration registers, 32 bits each, ``reg_id = (addr >> 2) mod 30`` in
  the order of ``config_reg.h`` (:data:`CONFIG_REGS`); the 32-bit value is the 4 bytes of the beat
  starting at byte ``addr[3:0]``. Writing register ``AccelConvTrigger`` (17) starts a convolution.
* ``[0x4000, 0x24000)``: scratchpad 0 (weights); ``[0x24000, 0x44000)``: scratchpad 1 (outputs).
  A write copies one 16-byte beat from the SoC memory at ``SocMemBaseAddr`` into the scratchpad
  (the AXI master read, abstracted as in the 3LA model; ``SocMemRdWrLength`` is taken as 1); a read
  returns 16 bytes in the states ``top_slave_rd_data_0..15``.
* ``[0x50000, 0x80000)``: the virtual SoC memory (host DRAM abstraction), written 16 bytes at a time.

Register fields: InputSize / OutputSize ``[chan 31:20 | rows 19:10 | cols 9:0]``; KernelSize
``[stride 23:16 | rows 15:8 | cols 7:0]``; ChannelConfig ``[bias 15:0 | en_bias 16 | en_relu 17 |
en_accum 18]`` (one bias for the whole convolution, weight format). Base addresses: activations
are a SoC address (>= 0x50000), weights a scratchpad-0 offset, outputs a scratchpad-1 offset.

Layouts (NHWC, batch 1, CHANNEL_BLOCK_SIZE = 8, 2 bytes per activation, little-endian):
activation ``(cb, r, c, i)`` at ``((cb*H + r)*W + c)*8 + i``; weight of filter ``o`` at
``(((o*NCB + cb)*KH + ky)*KW + kx)*8 + i`` (1 byte each in the 8-bit design, where the datapath
widens it to 16 bits by appending a zero byte; 2 bytes in the 16-bit design); output
``(fb, oy, ox, f)`` at ``((fb*OH + oy)*OW + ox)*8 + f``. Channel counts are padded to multiples
of 8 by the host. The hardware does no padding ("valid" convolution, ``OH = (H-KH)/stride + 1``),
non-grouped only; the trigger decodes only for a consistent configuration.

The convolution child ``Accel_Conv_Child`` runs the filter-block, channel-block, kernel-row,
kernel-column and output-tile loops; one child instruction ``conv_child_tap_row`` applies one
kernel tap of one channel block to a tile of up to ``row_lanes x col_lanes`` output pixels x 8
filters at once (a coarser step than the hardware's, chosen for simulation speed, with identical
arithmetic; ``row_lanes = col_lanes = 1`` is one pixel per step, :data:`MACHINE_LANES`, the model
the machine port runs and the proofs reason about). Per output value: the
8-channel MAC into PSUM (``ConvMac``), rounding to ACT (``ConvMacPsum2Act``), addition to the
partial output held in scratchpad 1 (``ActAdd2Psum``; the first tap starts from zero unless
``en_accum``), bias and ReLU after the last tap, and the store (``Psum2Act``). Rows/columns beyond
the output's end (tiles of more than one lane) are clamped to the last row/column, which they
recompute and rewrite with identical data. The output word's address is built as
``((out_base >> 4) + pixel) * 16 + ((out_base & 15) + 2 f + b)`` (equal to ``out_base + 16 pixel +
2 f + b`` mod 2**32), keeping the byte within the pixel a constant of its own. The order over taps (channel block, kernel row, kernel column) is the hardware's,
so every partial output sees the same roundings.

The simulator runs the child loop through a tensor-level summary (:func:`conv_loop_summary`,
registered with ``child.set_summary``): the whole convolution at once in the unit's fixed point,
checked bit-exact against the loop by ``tests/test_sim_summaries.py``; proofs see the loop.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ila import Ila, TRUE, FALSE, bv_const, concat, extract, ite, load, store, zext
from ila.models.hlscnn import numerics as N
SLAVE_BASE = 0x32000000
SPAD0_BASE, SPAD_BYTES = 0x4000, 0x20000
SPAD1_BASE = SPAD0_BASE + SPAD_BYTES
MEM_ADDR_MAX = SPAD1_BASE + SPAD_BYTES
VIR_MEM_BASE, VIR_MEM_BYTES = 0x50000, 0x30000
ADDR_IN_MAX = VIR_MEM_BASE + VIR_MEM_BYTES
CHANNEL_BLOCK = 8
# (col_lanes, row_lanes) of the ILA the machine port runs (``ila.models.hlscnn.port``) and every HLSCNN
# proof reasons about: one output pixel x 8 filters per child instruction, so a step's stores are 16
# bytes at addresses linear in the loop counters (the simulator runs the loop through its summary)
MACHINE_LANES = (1, 1)

CONFIG_REGS = [
    "ConfigReg1", "ConfigReg2", "ConfigReg3", "ConfigReg4", "SocMemBaseAddr", "SocMemRdWrLength",
    "AccelSpadCFG", "AxiMasterSelfTestTrigger", "AxiMasterSelfTestRemoteBaseAddr",
    "AcpMasterSelfTestTrigger", "AcpMasterSelfTestRemoteBaseAddr", "AxiAttrConfig", "AccelStartFlagReg",
    "AccelFCWeightsBase", "AccelFCActivationBase", "AccelFCSizeConfig", "AccelBiasActivationConfig",
    "AccelConvTrigger", "AccelConvActivationBaseAddr", "AccelConvWeightsBaseAddr",
    "AccelConvOutputsBaseAddr", "AccelConvInputSizeConfig", "AccelConvOutputSizeConfig",
    "AccelConvKernelSizeConfig", "AccelConvChannelConfig", "AccelReductionTrigger",
    "AccelReductionInputBaseAddr", "AccelReductionOutputBaseAddr", "AccelReductionInputSizeConfig",
    "AccelReductionBiasConfig",
]
REG_ID = {name: i for i, name in enumerate(CONFIG_REGS)}
CONV_TRIGGER = REG_ID["AccelConvTrigger"]
# registers with their own CFG_WR instruction; the others (FC, reduction, self-test) share
# CFG_WR_OTHER, which updates the addressed one of them
CONV_REGS = ["SocMemBaseAddr", "SocMemRdWrLength", "AccelSpadCFG", "AccelConvActivationBaseAddr",
             "AccelConvWeightsBaseAddr", "AccelConvOutputsBaseAddr", "AccelConvInputSizeConfig",
             "AccelConvOutputSizeConfig", "AccelConvKernelSizeConfig", "AccelConvChannelConfig"]


def reg_state(name: str) -> str:
    return "cfg_reg_" + "".join("_" + ch.lower() if ch.isupper() else ch for ch in name).lstrip("_")


def _le16(mem, addr):
    return concat(load(mem, addr + 1), load(mem, addr))


@lru_cache(maxsize=8)
def build_hlscnn(weight_bits: int = 16, col_lanes: int = 32, row_lanes: int = 4) -> Ila:
    """Build the HLSCNN ILA. ``weight_bits`` is 8 (original design) or 16 (updated design);
    ``col_lanes`` x ``row_lanes`` is the output tile (x 8 filters) one child instruction computes;
    ``col_lanes = row_lanes = 1`` gives a fine-grained model (one output pixel per step)."""
    if weight_bits not in (8, 16):
        raise ValueError(f"HLSCNN weight width must be 8 or 16 bits, got {weight_bits!r}")
    for name, v in (("col_lanes", col_lanes), ("row_lanes", row_lanes)):
        if not isinstance(v, int) or not 1 <= v <= 256:
            raise ValueError(f"{name} must be an int in 1..256, got {v!r}")
    m = Ila(f"hlscnn_w{weight_bits}")
    wr, rd = m.new_bv_input("top_slave_if_wr", 1), m.new_bv_input("top_slave_if_rd", 1)
    addr = m.new_bv_input("top_slave_addr_in", 32)
    data = [m.new_bv_input(f"top_slave_data_in_{i}", 8) for i in range(16)]
    masked = zext(extract(addr, 23, 0), 32)
    m.set_valid((wr ^ rd).eq(1) & masked.ult(ADDR_IN_MAX))
    is_wr, is_rd = wr.eq(1), rd.eq(1)

    regs = {name: m.new_bv_state(reg_state(name), 32) for name in CONFIG_REGS}
    spad0 = m.new_mem_state("scratch_pad_0", 32, 8, size=SPAD_BYTES)
    spad1 = m.new_mem_state("scratch_pad_1", 32, 8, size=SPAD_BYTES)
    vir = m.new_mem_state("virtual_soc_memory", 32, 8, size=VIR_MEM_BYTES)
    rd_addr = m.new_bv_state("top_master_rd_addr_out", 32)
    rd_data = [m.new_bv_state(f"top_slave_rd_data_{i}", 8) for i in range(16)]
    for s in [*regs.values(), rd_addr, *rd_data]:
        m.add_init(s.eq(0))

    # ------------------------------------------------------------ configuration registers
    start = extract(addr, 3, 0)
    aligned = concat(data[15], data[14], data[13], data[12])
    for s in reversed(range(12)):
        aligned = ite(start.eq(s), concat(data[s + 3], data[s + 2], data[s + 1], data[s]), aligned)
    is_cfg = masked.ult(SPAD0_BASE)
    reg_id = masked.lshr(2).urem(len(CONFIG_REGS))
    for name in CONV_REGS:
        ins = m.new_instr(f"CFG_WR_{name}")
        ins.set_decode(is_wr & is_cfg & reg_id.eq(REG_ID[name]))
        ins.set_update(regs[name], aligned)
    others = [n for n in CONFIG_REGS if n not in CONV_REGS and n != "AccelConvTrigger"]
    ins = m.new_instr("CFG_WR_OTHER")
    hit_other = reg_id.eq(REG_ID[others[0]])
    for n in others[1:]:
        hit_other = hit_other | reg_id.eq(REG_ID[n])
    ins.set_decode(is_wr & is_cfg & hit_other)
    for n in others:
        ins.set_update(regs[n], ite(reg_id.eq(REG_ID[n]), aligned, regs[n]))

    # ------------------------------------------------------------ scratchpads and SoC memory
    soc = regs["SocMemBaseAddr"]
    for k, (spad, base) in enumerate(((spad0, SPAD0_BASE), (spad1, SPAD1_BASE))):
        in_range = masked.uge(base) & masked.ult(base + SPAD_BYTES)
        ins = m.new_instr(f"SPAD{k}_DATA_WR")
        ins.set_decode(is_wr & in_range)
        new = spad
        for b in range(16):
            new = store(new, masked - base + b, load(vir, soc - VIR_MEM_BASE + b))
        ins.set_update(spad, new)
        ins.set_update(rd_addr, soc)
        ins = m.new_instr(f"SPAD{k}_DATA_RD")
        ins.set_decode(is_rd & in_range)
        for b in range(16):
            ins.set_update(rd_data[b], load(spad, masked - base + b))
    ins = m.new_instr("VIR_MEM_WR")
    ins.set_decode(is_wr & masked.uge(VIR_MEM_BASE))
    new = vir
    for b in range(16):
        new = store(new, masked - VIR_MEM_BASE + b, data[b])
    ins.set_update(vir, new)

    _conv(m, regs, spad0, spad1, vir, is_wr, is_cfg, reg_id, weight_bits, col_lanes, row_lanes)
    return m


def _conv(m, regs, spad0, spad1, vir, is_wr, is_cfg, reg_id, weight_bits, T, R):
    st = {}

    def new(name, w):
        st[name] = m.new_bv_state(name, w)
        m.add_init(st[name].eq(0))
        return st[name]

    fields = {  # name: (register, hi, lo)
        "conv_in_chan": ("AccelConvInputSizeConfig", 31, 20), "conv_in_rows": ("AccelConvInputSizeConfig", 19, 10),
        "conv_in_cols": ("AccelConvInputSizeConfig", 9, 0), "conv_out_chan": ("AccelConvOutputSizeConfig", 31, 20),
        "conv_out_rows": ("AccelConvOutputSizeConfig", 19, 10), "conv_out_cols": ("AccelConvOutputSizeConfig", 9, 0),
        "conv_stride": ("AccelConvKernelSizeConfig", 23, 16), "conv_k_rows": ("AccelConvKernelSizeConfig", 15, 8),
        "conv_k_cols": ("AccelConvKernelSizeConfig", 7, 0), "conv_chan_bias": ("AccelConvChannelConfig", 15, 0),
        "conv_en_bias": ("AccelConvChannelConfig", 16, 16), "conv_en_relu": ("AccelConvChannelConfig", 17, 17),
        "conv_en_accum": ("AccelConvChannelConfig", 18, 18),
    }
    bases = {"conv_act_base": "AccelConvActivationBaseAddr", "conv_wgt_base": "AccelConvWeightsBaseAddr",
             "conv_out_base": "AccelConvOutputsBaseAddr"}
    for name, (reg, hi, lo) in fields.items():
        new(name, hi - lo + 1)
    for name in bases:
        new(name, 32)
    counters = {"conv_child_filter_blk": 9, "conv_child_chan_blk": 9, "conv_child_k_row": 8,
                "conv_child_k_col": 8, "conv_child_row_tile": 10, "conv_child_col_tile": 10}
    for name, w in counters.items():
        new(name, w)
    busy = m.new_bool_state("accel_conv_child_valid")
    m.add_init(~busy)

    # ---- trigger: latch the configuration when it is consistent
    def f32(name):
        reg, hi, lo = fields[name]
        return zext(extract(regs[reg], hi, lo), 32)

    H, W, KH, KW, S = (f32(n) for n in ("conv_in_rows", "conv_in_cols", "conv_k_rows", "conv_k_cols", "conv_stride"))
    ok = (S.ne(0) & KH.ne(0) & KW.ne(0) & f32("conv_in_chan").ne(0) & f32("conv_out_chan").ne(0)
          & KH.ule(H) & KW.ule(W)
          & f32("conv_out_rows").eq((H - KH).udiv(S) + 1) & f32("conv_out_cols").eq((W - KW).udiv(S) + 1))
    trig = m.new_instr("ACCEL_CONV_TRIGGER")
    trig.set_decode(is_wr & is_cfg & reg_id.eq(CONV_TRIGGER) & ok)
    for name, (reg, hi, lo) in fields.items():
        trig.set_update(st[name], extract(regs[reg], hi, lo))
    for name, reg in bases.items():
        trig.set_update(st[name], regs[reg])
    for name, w in counters.items():
        trig.set_update(st[name], bv_const(0, w))
    trig.set_update(busy, TRUE)

    # ---- the child loop
    child = m.new_child("Accel_Conv_Child")
    child.set_valid(busy)
    x = {n: zext(v, 32) for n, v in st.items()}
    H, W, C, O = x["conv_in_rows"], x["conv_in_cols"], x["conv_in_chan"], x["conv_out_chan"]
    OH, OW, KH, KW, S = x["conv_out_rows"], x["conv_out_cols"], x["conv_k_rows"], x["conv_k_cols"], x["conv_stride"]
    fb, cb, ky, kx = x["conv_child_filter_blk"], x["conv_child_chan_blk"], x["conv_child_k_row"], x["conv_child_k_col"]
    rtile, tile = x["conv_child_row_tile"], x["conv_child_col_tile"]
    ncb = (C + (CHANNEL_BLOCK - 1)).udiv(CHANNEL_BLOCK)
    nfb = (O + (CHANNEL_BLOCK - 1)).udiv(CHANNEL_BLOCK)
    ntile = (OW + (T - 1)).udiv(T)
    nrtile = (OH + (R - 1)).udiv(R)
    tap = ((cb * KH + ky) * KW + kx) * 8
    fstride = ncb * KH * KW * 8
    first = cb.eq(0) & ky.eq(0) & kx.eq(0) & st["conv_en_accum"].eq(0)
    last = (cb + 1).eq(ncb) & (ky + 1).eq(KH) & (kx + 1).eq(KW)
    do_bias = last & st["conv_en_bias"].eq(1)
    do_relu = last & st["conv_en_relu"].eq(1)
    zero16 = bv_const(0, 16)
    wb = weight_bits // 8

    ins = child.new_instr("conv_child_tap_row")
    ins.set_decode(TRUE)
    out = spad1
    for r, j in ((r, j) for r in range(R) for j in range(T)):
        row, col = rtile * R + r, tile * T + j
        oy = ite(row.ult(OH), row, OH - 1)
        ox = ite(col.ult(OW), col, OW - 1)
        act = x["conv_act_base"] - VIR_MEM_BASE + (((cb * H + oy * S + ky) * W) + ox * S + kx) * 16
        # the output word's address as ((base >> 4) + pixel) * 16 + (base & 15) + 2 f + b (= base + 16 pixel
        # + 2 f + b mod 2**32): the byte offset within the 16-byte pixel stays a separate constant
        out_px = (x["conv_out_base"].lshr(4) + (fb * OH + oy) * OW + ox) << 4
        out_lo = x["conv_out_base"] & 15
        for f in range(CHANNEL_BLOCK):
            wbase = x["conv_wgt_base"] + ((fb * 8 + f) * fstride + tap) * wb
            psum = bv_const(0, 32)
            for i in range(CHANNEL_BLOCK):
                a = _le16(vir, act + 2 * i)
                if weight_bits == 16:
                    w = _le16(spad0, wbase + 2 * i)
                else:
                    w = concat(load(spad0, wbase + i), bv_const(0, 8))
                psum = N.CONV_MAC(psum, w, a)
            contrib = N.PSUM_TO_ACT_RND(psum)
            oaddr = out_px + (out_lo + 2 * f)
            p = N.ACT_ADD_PSUM(contrib, ite(first, zero16, _le16(spad1, oaddr)))
            p = ite(do_bias, N.PSUM_ADD_BIAS(p, st["conv_chan_bias"]), p)
            p = ite(do_relu, N.PSUM_RELU(p), p)
            v = N.PSUM_TO_ACT_TRN(p)
            for b in range(2):
                out = store(out, out_px + (out_lo + (2 * f + b)), extract(v.lshr(8 * b), 7, 0))
    ins.set_update(spad1, out)

    # advance: col tile -> row tile -> k_col -> k_row -> chan_blk -> filter_blk
    order = [("conv_child_col_tile", ntile), ("conv_child_row_tile", nrtile), ("conv_child_k_col", KW),
             ("conv_child_k_row", KH), ("conv_child_chan_blk", ncb), ("conv_child_filter_blk", nfb)]
    carry = TRUE
    for name, limit in order:
        s = st[name]
        wraps = (x[name] + 1).eq(limit)
        ins.set_update(s, ite(carry, ite(wraps, bv_const(0, s.width), s + 1), s))
        carry = carry & wraps
    ins.set_update(busy, ite(carry, FALSE, TRUE))
    child.set_summary(conv_loop_summary(weight_bits, T, R), name="hlscnn_conv_loop")
    return child


# ----------------------------------------------------------------------------- loop summary
COUNTERS = ("conv_child_filter_blk", "conv_child_chan_blk", "conv_child_k_row", "conv_child_k_col",
            "conv_child_row_tile", "conv_child_col_tile")
_DEFAULT_BODIES = {f: f.body for f in N.ALL}
SUMMARY_BUGS = ("round", "saturation", "accum", "last_tap")    # seeded bugs, for the differential tests


def conv_loop_summary(weight_bits: int, col_lanes: int, row_lanes: int, *, bug: str | None = None):
    """The tensor-level summary of ``Accel_Conv_Child`` (simulator only; see
    :meth:`ila.model.Ila.set_summary`): the state the loop of ``conv_child_tap_row`` reaches at
    quiescence, computed for the whole convolution at once.

    Semantics (the child instruction's, with the default bodies of :mod:`.numerics`): for output
    ``(o, oy, ox)`` (``o < 8*nfb``, ``oy < OH``, ``ox < OW``) and each tap ``t = (cb, ky, kx)`` in
    loop order, ``c_t = clip((sum_i floor(w_i*a_i / 32) + 256) >> 9, -32768, 32767)`` over the 8
    channels ``i`` (w: 16-bit weight, 14 fraction bits, an 8-bit weight shifted left by 8; a: 16-bit
    ACT, 7 fraction bits; the psum of 16 fraction bits never wraps: ``|sum| < 2**28``); the partial
    output is ``(p0 + sum_{t<last} c_t) mod 2**16`` (two's complement; ``p0`` is 0, or the 16-bit
    value already in scratchpad 1 when ``en_accum``); the last tap gives
    ``P = (partial + c_last) * 512 (+ 4*bias)``, ReLU keeps ``P > 0``, and the stored output is
    ``floor(P / 512) mod 2**16``, little-endian in scratchpad 1 at ``out_base +
    ((fb*OH + oy)*OW + ox)*16 + 2*f``. The loop counters end at 0 and ``accel_conv_child_valid``
    false; no other state changes. Returns the number of child instructions
    (``nfb*ncb*KH*KW*ceil(OH/row_lanes)*ceil(OW/col_lanes)``).

    Declines (None: the simulator runs the loop) unless the loop starts from its first step
    (busy, all counters 0), every loop bound is >= 1, every address the loop touches lies in its
    memory without 32-bit wrap-around, the steps fit ``budget``, and the datapath functions have
    their default bodies (a counterexample replay may override them). ``bug`` (one of
    :data:`SUMMARY_BUGS`) seeds a deliberate error, to show the differential tests catch it.
    """
    if bug is not None and bug not in SUMMARY_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {SUMMARY_BUGS}")
    wb, T, R = weight_bits // 8, col_lanes, row_lanes
    hi = 32766 if bug == "saturation" else 32767
    half = 255 if bug == "round" else 256

    from ila.models.hlscnn.kernels import tap_psums

    def hlscnn_conv_loop(S, budget):
        if not S["accel_conv_child_valid"] or any(S[c] for c in COUNTERS):
            return None
        if any(f.body is not b for f, b in _DEFAULT_BODIES.items()):
            return None
        C, H, W, O = S["conv_in_chan"], S["conv_in_rows"], S["conv_in_cols"], S["conv_out_chan"]
        OH, OW, KH, KW, st = (S["conv_out_rows"], S["conv_out_cols"], S["conv_k_rows"], S["conv_k_cols"],
                              S["conv_stride"])
        ncb, nfb = -(-C // CHANNEL_BLOCK), -(-O // CHANNEL_BLOCK)
        if min(ncb, nfb, OH, OW, KH, KW) < 1:
            return None
        steps = nfb * ncb * KH * KW * (-(-OH // R)) * (-(-OW // T))
        if steps > budget:
            return None
        act0 = (S["conv_act_base"] - VIR_MEM_BASE) & 0xFFFFFFFF
        act_span = 16 * (((ncb - 1) * H + (OH - 1) * st + KH - 1) * W + (OW - 1) * st + KW - 1) + 16
        taps = ncb * KH * KW
        w0, w_span = S["conv_wgt_base"], nfb * 8 * taps * 8 * wb
        o0, o_span = S["conv_out_base"], nfb * OH * OW * 16
        vir, spad0, spad1 = S["virtual_soc_memory"], S["scratch_pad_0"], S["scratch_pad_1"]
        if act0 + act_span > vir.shape[0] or w0 + w_span > spad0.shape[0] or o0 + o_span > spad1.shape[0]:
            return None
        # activations (ncb, KH, KW, OH, OW, 8) and weights (Opad, ncb, KH, KW, 8), signed ints
        a16 = vir[act0:act0 + act_span].view("<i2").astype(np.int32)
        cb, ky, kx, oy, ox, i = np.ix_(range(ncb), range(KH), range(KW), range(OH), range(OW), range(8))
        A = a16[((cb * H + oy * st + ky) * W + ox * st + kx) * 8 + i]
        if wb == 2:
            Wt = spad0[w0:w0 + w_span].view("<i2").astype(np.int32)
        else:
            Wt = spad0[w0:w0 + w_span].view(np.int8).astype(np.int32) << 8
        Wt = Wt.reshape(nfb * 8, taps, 8)
        A = A.reshape(taps, OH * OW, 8)
        # per tap: the 8-channel MAC (each product truncated to 16 fraction bits), rounding half up
        # to 7 fraction bits, saturation to int16; the sum over the non-last taps wraps at 16 bits
        c = np.clip((tap_psums(Wt, A) + half) >> 9, -32768, hi)          # (filters, taps, pixels)
        if bug != "last_tap":
            acc, last = c[:, :-1].sum(axis=1, dtype=np.int64), c[:, -1].astype(np.int64)
        else:
            acc, last = c.sum(axis=1, dtype=np.int64), None
        out16 = spad1[o0:o0 + o_span].view("<i2").reshape(nfb, OH, OW, 8)
        if S["conv_en_accum"] and bug != "accum":
            acc += out16.transpose(0, 3, 1, 2).reshape(nfb * 8, OH * OW)
        part = ((acc + 32768) & 0xFFFF) - 32768
        if last is None:                      # seeded bug: the last tap accumulated like the others
            last, part = part * 0, part
        P = (part + last) * 512
        if S["conv_en_bias"]:
            b = S["conv_chan_bias"]
            P = P + 4 * (b - 65536 if b >= 32768 else b)
        if S["conv_en_relu"]:
            P = np.where(P > 0, P, 0)
        v = ((P >> 9) & 0xFFFF).astype(np.uint16)
        out16[...] = v.reshape(nfb, 8, OH, OW).transpose(0, 2, 3, 1).view(np.int16)
        S["accel_conv_child_valid"] = False
        return steps

    return hlscnn_conv_loop


__all__ = ["build_hlscnn", "MACHINE_LANES", "CONFIG_REGS", "REG_ID", "CONV_REGS", "reg_state", "SLAVE_BASE", "SPAD0_BASE",
           "SPAD1_BASE", "SPAD_BYTES", "VIR_MEM_BASE", "VIR_MEM_BYTES", "ADDR_IN_MAX", "CHANNEL_BLOCK",
           "conv_loop_summary", "SUMMARY_BUGS"]
