"""Host driver for the HLSCNN ILA: turns a conv2d (NHWC input, OHWI weights, stride, host
padding, optional bias/ReLU) into the MMIO command stream of the accelerator, runs it, reads the
result back.

Command stream (as the 3LA HLSCNN driver): VirMemWr of the activation image and of the weights
into the virtual SoC memory; per 16-byte weight beat CfgSoCMemBaseAddr + SpadWr (scratchpad 0
pulls the beat through the AXI master); the convolution registers (activation/weight/output base,
input/output/kernel size, channel config); the trigger; SpadRd of every output beat of
scratchpad 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ila import generic

from ila.errors import D2AError
from ila.numerics.fixed_point import ACT, WGT16, weight_format
from ila.sim import Simulator
from ila.models.hlscnn.model import (CHANNEL_BLOCK, REG_ID, SLAVE_BASE, SPAD0_BASE, SPAD1_BASE, SPAD_BYTES, VIR_MEM_BASE,
                     VIR_MEM_BYTES, build_hlscnn)


class HlscnnError(D2AError, ValueError):
    """A convolution HLSCNN cannot run as requested (the message says why)."""


def _beat(addr: int, data, *, write: bool = True) -> dict:
    """One 16-byte AXI-slave command; ``data``: 16 byte values (ints or 8-bit terms) of a write."""
    cmd = {"top_slave_if_wr": int(write), "top_slave_if_rd": int(not write), "top_slave_addr_in": SLAVE_BASE + addr}
    if write:
        raw = list(data)
        for i in range(16):
            cmd[f"top_slave_data_in_{i}"] = raw[i]
    return cmd


def cfg_write(reg: str, value: int) -> dict:
    """Write a 32-bit configuration register (the value sits at byte ``addr[3:0]`` of the beat)."""
    if not 0 <= value < (1 << 32):
        raise HlscnnError(f"register {reg} value {value!r} does not fit 32 bits")
    addr = 4 * REG_ID[reg]
    beat = bytearray(16)
    off = addr & 15
    beat[off:off + 4] = int(value).to_bytes(4, "little")
    return _beat(addr, beat)


def _field(name: str, value: int, bits: int) -> int:
    if not 0 <= value < (1 << bits):
        raise HlscnnError(f"{name} = {value} does not fit the {bits}-bit register field (max {(1 << bits) - 1})")
    return value


@dataclass
class ConvJob:
    commands: list              # write/config/trigger commands
    read_commands: list         # SpadRd commands, one per output beat
    out_shape: tuple            # (1, OH, OW, O)
    out_blocks: int             # filter blocks of 8
    weight_bits: int
    x_raw: np.ndarray           # quantised, host-padded input (H, W, C), ACT raw
    w_raw: np.ndarray           # quantised weights (O, KH, KW, C), raw in the design's weight format
    bias_raw: int
    stride: int
    relu: bool
    has_bias: bool = False


def prepare_conv2d(x, w, *, stride=1, padding=0, groups: int = 1, weight_bits: int = 16, bias=None,
                   relu: bool = False) -> ConvJob:
    """Quantise and lay out a conv2d for HLSCNN. ``x``: (1, H, W, C) NHWC; ``w``: (O, KH, KW, C).
    ``padding`` (int or (ph, pw)) is applied on the host; ``bias`` is one scalar (HLSCNN holds a
    single bias per convolution in ChannelConfig[15:0], in weight format)."""
    if weight_bits not in (8, 16):
        raise HlscnnError(f"HLSCNN weights are 8 or 16 bits wide, got {weight_bits!r}")
    x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    if groups != 1:
        raise HlscnnError(f"HLSCNN supports non-grouped convolution only (groups={groups})")
    if x.ndim != 4 or x.shape[0] != 1:
        raise HlscnnError(f"input must be NHWC with batch 1, got shape {x.shape}")
    if w.ndim != 4:
        raise HlscnnError(f"weights must be (O, KH, KW, C), got shape {w.shape}")
    if w.shape[3] != x.shape[3]:
        raise HlscnnError(f"weights have {w.shape[3]} input channels, input has {x.shape[3]}: a grouped "
                          f"convolution (HLSCNN supports non-grouped convolution only)")
    if isinstance(stride, (tuple, list)):
        if len(stride) != 2 or stride[0] != stride[1]:
            raise HlscnnError(f"unsupported stride {tuple(stride)}: HLSCNN has one stride for rows and columns")
        stride = stride[0]
    if not isinstance(stride, (int, np.integer)) or not 1 <= stride <= 255:
        raise HlscnnError(f"unsupported stride {stride!r}: must be an int in 1..255")
    stride = int(stride)
    ph, pw = (padding, padding) if np.isscalar(padding) else tuple(padding)
    if ph < 0 or pw < 0:
        raise HlscnnError(f"negative padding {padding!r}")
    x_raw = np.pad(ACT.quantize(x[0]), ((ph, ph), (pw, pw), (0, 0)))
    H, W, C = x_raw.shape
    O, KH, KW, _ = w.shape
    if KH > H or KW > W:
        raise HlscnnError(f"kernel {KH}x{KW} is larger than the (padded) input {H}x{W}")
    if min(KH, KW, O, C) < 1:
        raise HlscnnError(f"empty convolution: kernel {KH}x{KW}, {C} input and {O} output channels")
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    for name, v, bits in (("input channels", C, 12), ("input rows", H, 10), ("input cols", W, 10),
                          ("output channels", O, 12), ("output rows", OH, 10), ("output cols", OW, 10),
                          ("kernel rows", KH, 8), ("kernel cols", KW, 8)):
        _field(name, v, bits)
    wfmt = weight_format(weight_bits)
    w_raw = wfmt.quantize(w)
    if bias is not None and np.size(bias) != 1:
        raise HlscnnError("HLSCNN applies one bias per convolution (ChannelConfig[15:0]); "
                          f"got {np.size(bias)} values")
    bias_raw = int(WGT16.quantize(float(np.asarray(bias).reshape(-1)[0]))) if bias is not None else 0

    return conv2d_program(x_raw, w_raw, stride=stride, weight_bits=weight_bits, bias_raw=bias_raw,
                          has_bias=bias is not None, relu=relu)


def _element_bytes(v, nbytes: int) -> list:
    """The little-endian bytes of one raw element (a signed or unsigned int, or an ``8*nbytes``-bit
    term), as ints or 8-bit terms."""
    if generic.is_symbolic(v):
        return [generic.field(v, 8 * k, 8) for k in range(nbytes)]
    v = int(v) & ((1 << (8 * nbytes)) - 1)
    return [(v >> (8 * k)) & 0xFF for k in range(nbytes)]


def _image(elements: np.ndarray, nbytes: int, numeric: bool = False) -> list:
    """The byte image (ints or 8-bit terms) of ``elements`` in C order, ``nbytes`` bytes each.
    ``numeric``: the elements are known to be ints (no terms): the same bytes through numpy."""
    if numeric:
        try:
            a = np.asarray(elements, dtype=object).ravel().astype(np.int64)
        except (OverflowError, TypeError, ValueError):
            a = None
        if a is not None:
            a = (a & ((1 << (8 * nbytes)) - 1)).astype("<u8")
            return a.view(np.uint8).reshape(-1, 8)[:, :nbytes].ravel().tolist()
    return [b for v in elements.ravel() for b in _element_bytes(v, nbytes)]


def conv2d_program(x_raw, w_raw, *, stride: int, weight_bits: int, bias_raw: int = 0, has_bias: bool = False,
                   relu: bool = False) -> ConvJob:
    """The MMIO command stream of one convolution from raw operands: ``x_raw`` (H, W, C) ACT
    values (16-bit), ``w_raw`` (O, KH, KW, C) in the weight format (8 or 16 bits), as ints or as
    terms of those widths (proofs run this same code on symbolic elements). Activations go to
    the virtual SoC memory as [channel block][y][x][8 channels], weights as [filter][channel
    block][ky][kx][8 channels], both little-endian, zero-padded to 8-channel blocks; the weights
    are pulled into scratchpad 0 through the AXI master; the outputs are read back from
    scratchpad 1 ([filter block][oy][ox][8], 2 bytes each). Raises HlscnnError when a buffer
    overflows."""
    x_in, w_in = np.asarray(x_raw), np.asarray(w_raw)
    x_raw, w_raw = x_in.astype(object), w_in.astype(object)
    H, W, C = x_raw.shape
    O, KH, KW, _ = w_raw.shape
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    ncb, nfb = -(-C // CHANNEL_BLOCK), -(-O // CHANNEL_BLOCK)
    act = np.zeros((ncb * CHANNEL_BLOCK, H, W), dtype=object)
    act[:C] = x_raw.transpose(2, 0, 1)
    act_img = _image(act.reshape(ncb, CHANNEL_BLOCK, H, W).transpose(0, 2, 3, 1), 2, x_in.dtype.kind in "iub")
    wt = np.zeros((nfb * CHANNEL_BLOCK, KH, KW, ncb * CHANNEL_BLOCK), dtype=object)
    wt[:O, :, :, :C] = w_raw
    wt = wt.reshape(nfb * CHANNEL_BLOCK, KH, KW, ncb, CHANNEL_BLOCK).transpose(0, 3, 1, 2, 4)
    w_img = _image(wt, 2 if weight_bits == 16 else 1, w_in.dtype.kind in "iub")
    out_bytes = nfb * OH * OW * CHANNEL_BLOCK * 2

    act_off = 0
    w_off = -(-len(act_img) // 16) * 16
    if w_off + len(w_img) > VIR_MEM_BYTES:
        raise HlscnnError(f"buffer overflow: input and weights need {w_off + len(w_img)} bytes of SoC memory, "
                          f"the virtual SoC memory has {VIR_MEM_BYTES}")
    if len(w_img) > SPAD_BYTES:
        raise HlscnnError(f"buffer overflow: weights need {len(w_img)} bytes, scratchpad 0 has {SPAD_BYTES}")
    if out_bytes > SPAD_BYTES:
        raise HlscnnError(f"buffer overflow: outputs need {out_bytes} bytes, scratchpad 1 has {SPAD_BYTES}")

    def beats(img: list):
        img = img + [0] * (-len(img) % 16)
        return [img[i:i + 16] for i in range(0, len(img), 16)]

    cmds = [_beat(VIR_MEM_BASE + act_off + 16 * k, b) for k, b in enumerate(beats(act_img))]
    wbeats = beats(w_img)
    cmds += [_beat(VIR_MEM_BASE + w_off + 16 * k, b) for k, b in enumerate(wbeats)]
    cmds.append(cfg_write("SocMemRdWrLength", 1))
    for k in range(len(wbeats)):
        cmds.append(cfg_write("SocMemBaseAddr", VIR_MEM_BASE + w_off + 16 * k))
        cmds.append(_beat(SPAD0_BASE + 16 * k, [0] * 16))      # data comes through the AXI master
    cmds += [
        cfg_write("AccelConvActivationBaseAddr", VIR_MEM_BASE + act_off),
        cfg_write("AccelConvWeightsBaseAddr", 0),
        cfg_write("AccelConvOutputsBaseAddr", 0),
        cfg_write("AccelConvInputSizeConfig", (C << 20) | (H << 10) | W),
        cfg_write("AccelConvOutputSizeConfig", (O << 20) | (OH << 10) | OW),
        cfg_write("AccelConvKernelSizeConfig", (stride << 16) | (KH << 8) | KW),
        cfg_write("AccelConvChannelConfig", (bias_raw & 0xFFFF) | (int(has_bias) << 16) | (int(relu) << 17)),
        cfg_write("AccelConvTrigger", 1),
    ]
    reads = [_beat(SPAD1_BASE + 16 * k, None, write=False) for k in range(out_bytes // 16)]
    return ConvJob(cmds, reads, (1, OH, OW, O), nfb, weight_bits, x_in, w_in, bias_raw, stride, relu, has_bias)


READ_DATA = tuple(f"top_slave_rd_data_{i}" for i in range(16))   # the states holding an MMIO read's 16 bytes


def read_beat(state) -> np.ndarray:
    """The 16 bytes of the MMIO read that just executed, from the model state (ints in the
    simulator, terms in symbolic execution)."""
    return np.array([state[n] for n in READ_DATA], dtype=object)


def readback(job: ConvJob, reads) -> np.ndarray:
    """The raw ACT outputs (OH, OW, O) from the reads of ``job.read_commands`` in emitted order
    (16 bytes each; ints, or 8-bit terms in proofs): 2 little-endian bytes per output, layout
    [filter block][oy][ox][8]. Ints come back signed (int16 values)."""
    _, OH, OW, O = job.out_shape
    flat = [b for r in reads for b in np.asarray(r, dtype=object)]
    n = job.out_blocks * OH * OW * CHANNEL_BLOCK
    b = None if generic.is_symbolic(*flat) else np.array(flat[:2 * n], dtype=object)
    if b is not None and len(b) == 2 * n and all(isinstance(x, (int, np.integer)) and 0 <= x < 256 for x in b):
        w = b.astype(np.int64)              # ints in 0..255: the words directly (same values as below)
        w = w[0::2] | (w[1::2] << 8)
        vals = [int(x) for x in np.where(w >= 1 << 15, w - (1 << 16), w)]
    else:
        vals = [generic.bytes_le(flat[2 * k:2 * k + 2]) for k in range(n)]
        if not generic.is_symbolic(*vals):
            vals = [v - (1 << 16) if v >= 1 << 15 else v for v in vals]
    v = np.array(vals, dtype=object).reshape(job.out_blocks, OH, OW, CHANNEL_BLOCK).transpose(1, 2, 0, 3)
    return v.reshape(OH, OW, -1)[:, :, :O]


def decode_output(job: ConvJob, spad1_bytes: np.ndarray) -> np.ndarray:
    """Raw ACT outputs (1, OH, OW, O) from the bytes of scratchpad 1 (layout [fb][oy][ox][8])."""
    _, OH, OW, O = job.out_shape
    n = job.out_blocks * OH * OW * CHANNEL_BLOCK
    v = np.asarray(spad1_bytes[:2 * n], dtype=np.uint8).view("<i2").astype(np.int64)
    v = v.reshape(job.out_blocks, OH, OW, CHANNEL_BLOCK).transpose(1, 2, 0, 3).reshape(OH, OW, -1)
    return v[None, :, :, :O]


def run_job(job: ConvJob, *, col_lanes: int = 32, row_lanes: int = 4, sim: Simulator | None = None, read_mmio: bool = True):
    """Execute a prepared job on the ILA simulator; return (raw ACT output, simulator)."""
    if sim is None:
        sim = Simulator(build_hlscnn(job.weight_bits, col_lanes, row_lanes))
    sim.run(job.commands)
    if read_mmio:
        reads = []
        for cmd in job.read_commands:
            sim.step(cmd)
            reads.append(read_beat(sim.state))
        return readback(job, reads)[None].astype(np.int64), sim
    return decode_output(job, sim.memory("scratch_pad_1")), sim


def run_conv2d(x, w, *, stride=1, padding=0, groups: int = 1, weight_bits: int = 16, bias=None,
               relu: bool = False, col_lanes: int = 32, row_lanes: int = 4, read_mmio: bool = True) -> np.ndarray:
    """conv2d on the HLSCNN ILA; returns the float result (1, OH, OW, O) (ACT values)."""
    job = prepare_conv2d(x, w, stride=stride, padding=padding, groups=groups, weight_bits=weight_bits,
                         bias=bias, relu=relu)
    raw, _ = run_job(job, col_lanes=col_lanes, row_lanes=row_lanes, read_mmio=read_mmio)
    return ACT.to_float(raw)


__all__ = ["HlscnnError", "ConvJob", "prepare_conv2d", "conv2d_program", "run_job", "run_conv2d", "decode_output",
           "readback", "read_beat", "cfg_write"]
