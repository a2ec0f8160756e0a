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

from ila.errors import D2AError
from ila.numerics.fixed_point import ACT, WGT16, weight_format
from ila.sim import Simulator
from ila.models.hlscnn.model import (CHANNEL_BLOCK, REG_ID, SLAVE_BASE, SPAD0_BASE, SPAD1_BASE, SPAD_BYTES, VIR_MEM_BASE,
                     VIR_MEM_BYTES, build_hlscnn)


class HlscnnError(D2AError, ValueError):
    """A convolution HLSCNN cannot run as requested (the message says why)."""


def _beat(addr: int, data: bytes | np.ndarray, *, write: bool = True) -> dict:
    cmd = {"top_slave_if_wr": int(write), "top_slave_if_rd": int(not write), "top_slave_addr_in": SLAVE_BASE + addr}
    if write:
        raw = bytes(data)
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

    ncb, nfb = -(-C // CHANNEL_BLOCK), -(-O // CHANNEL_BLOCK)
    act = np.zeros((ncb * CHANNEL_BLOCK, H, W), np.int16)
    act[:C] = x_raw.transpose(2, 0, 1)
    act_img = act.reshape(ncb, CHANNEL_BLOCK, H, W).transpose(0, 2, 3, 1).astype("<i2").tobytes()
    wt = np.zeros((nfb * CHANNEL_BLOCK, KH, KW, ncb * CHANNEL_BLOCK), np.int64)
    wt[:O, :, :, :C] = w_raw
    wt = wt.reshape(nfb * CHANNEL_BLOCK, KH, KW, ncb, CHANNEL_BLOCK).transpose(0, 3, 1, 2, 4)
    w_img = wt.astype("<i2" if weight_bits == 16 else "i1").tobytes()
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

    def beats(img: bytes):
        img = img + bytes(-len(img) % 16)
        return [img[i:i + 16] for i in range(0, len(img), 16)]

    cmds = [_beat(VIR_MEM_BASE + act_off + 16 * k, b) for k, b in enumerate(beats(act_img))]
    wbeats = beats(w_img)
    cmds += [_beat(VIR_MEM_BASE + w_off + 16 * k, b) for k, b in enumerate(wbeats)]
    cmds.append(cfg_write("SocMemRdWrLength", 1))
    for k in range(len(wbeats)):
        cmds.append(cfg_write("SocMemBaseAddr", VIR_MEM_BASE + w_off + 16 * k))
        cmds.append(_beat(SPAD0_BASE + 16 * k, bytes(16)))      # data comes through the AXI master
    cmds += [
        cfg_write("AccelConvActivationBaseAddr", VIR_MEM_BASE + act_off),
        cfg_write("AccelConvWeightsBaseAddr", 0),
        cfg_write("AccelConvOutputsBaseAddr", 0),
        cfg_write("AccelConvInputSizeConfig", (C << 20) | (H << 10) | W),
        cfg_write("AccelConvOutputSizeConfig", (O << 20) | (OH << 10) | OW),
        cfg_write("AccelConvKernelSizeConfig", (stride << 16) | (KH << 8) | KW),
        cfg_write("AccelConvChannelConfig", (bias_raw & 0xFFFF) | (int(bias is not None) << 16) | (int(relu) << 17)),
        cfg_write("AccelConvTrigger", 1),
    ]
    reads = [_beat(SPAD1_BASE + 16 * k, b"", write=False) for k in range(out_bytes // 16)]
    return ConvJob(cmds, reads, (1, OH, OW, O), nfb, weight_bits, x_raw, w_raw, bias_raw, stride, relu,
                   bias is not None)


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
        got = bytearray()
        for cmd in job.read_commands:
            sim.step(cmd)
            got += bytes(sim.state[f"top_slave_rd_data_{i}"] for i in range(16))
        data = np.frombuffer(bytes(got), dtype=np.uint8)
    else:
        data = sim.memory("scratch_pad_1")
    return decode_output(job, data), sim


def run_conv2d(x, w, *, stride=1, padding=0, groups: int = 1, weight_bits: int = 16, bias=None,
               relu: bool = False, col_lanes: int = 32, row_lanes: int = 4, read_mmio: bool = True) -> np.ndarray:
    """conv2d on the HLSCNN ILA; returns the float result (1, OH, OW, O) (ACT values)."""
    job = prepare_conv2d(x, w, stride=stride, padding=padding, groups=groups, weight_bits=weight_bits,
                         bias=bias, relu=relu)
    raw, _ = run_job(job, col_lanes=col_lanes, row_lanes=row_lanes, read_mmio=read_mmio)
    return ACT.to_float(raw)


__all__ = ["HlscnnError", "ConvJob", "prepare_conv2d", "run_job", "run_conv2d", "decode_output", "cfg_write"]
