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
from operator import itemgetter

import numpy as np

from ila import generic

from ila.errors import D2AError
from ila.numerics.fixed_point import ACT, WGT16, weight_format
from ila.commands import CommandTable
from ila.models.hlscnn.beats import BEAT_KEYS, READ_DATA, beat_rows
from ila.sim import Simulator
from ila.models.hlscnn.model import (CHANNEL_BLOCK, MACHINE_LANES, REG_ID, SLAVE_BASE, SPAD0_BASE, SPAD1_BASE, SPAD_BYTES, VIR_MEM_BASE,
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


def cfg_write(reg: str, value) -> dict:
    """Write a 32-bit configuration register: the value's 4 bytes, little-endian, at byte
    ``addr[3:0]`` of the beat, the others 0. ``value``: an int, or a 32-bit term (the all-sizes
    proof's register tail: its bytes are the term's 8-bit slices). Raises HlscnnError for an int
    outside 32 bits or a term of another width."""
    from ila.expr import Expr
    addr = 4 * REG_ID[reg]
    off = addr & 15
    if isinstance(value, Expr):
        if value.sort.is_mem or value.sort.width != 32:
            raise HlscnnError(f"register {reg} value {value.short()} is not a 32-bit term")
        from ila import extract
        from ila.simplify import Rewriter
        rw = Rewriter()
        beat = [0] * 16
        for k in range(4):
            beat[off + k] = rw.one(extract(value, 8 * k + 7, 8 * k))
        return _beat(addr, beat)
    if not 0 <= value < (1 << 32):
        raise HlscnnError(f"register {reg} value {value!r} does not fit 32 bits")
    beat = bytearray(16)
    beat[off:off + 4] = int(value).to_bytes(4, "little")
    return _beat(addr, beat)


def _field(name: str, value: int, bits: int) -> int:
    if not 0 <= value < (1 << bits):
        raise HlscnnError(f"{name} = {value} does not fit the {bits}-bit register field (max {(1 << bits) - 1})")
    return value


@dataclass
class ConvJob:
    """One convolution's MMIO stream and what its read-back needs.

    ``commands`` (write/config/trigger commands) and ``read_commands`` (one scratchpad-1 read per
    16-byte output beat) are lists of simulator command dicts. The integer path of
    :func:`conv2d_program` builds them as one (n, 19) array of rows (``rows``, columns in
    :data:`BEAT_KEYS` order; the first ``n_writes`` rows are the writes) and turns the rows into
    dicts only when ``commands`` or ``read_commands`` is first read (after which the lists are the
    job's stream, edits included). :meth:`stream` is the whole stream: the lists, or while they
    were never read, a :class:`~ila.commands.CommandTable` of the rows (the same commands row for
    row: a read's data columns are 0, the value an omitted input has)."""
    _commands: list | None      # write/config/trigger commands (None: still in ``rows``)
    _read_commands: list | None  # SpadRd commands, one per output beat (None: still in ``rows``)
    out_shape: tuple            # (1, OH, OW, O)
    out_blocks: int             # filter blocks of 8
    weight_bits: int
    x_raw: np.ndarray           # quantised, host-padded input (H, W, C), ACT raw
    w_raw: np.ndarray           # quantised weights (O, KH, KW, C), raw in the design's weight format
    bias_raw: int
    stride: int
    relu: bool
    has_bias: bool = False
    pull: tuple = (0, 0)        # commands[pull[0]:pull[1]]: the weight pull (SocMemBaseAddr / SpadWr pairs)
    rows: np.ndarray | None = None   # integer path: (n, 19) int64 rows of the whole stream
    n_writes: int = 0           # rows[:n_writes] are the writes, the rest the reads

    def _lists(self) -> None:
        if self.rows is not None:
            self._commands = _rows_to_commands(self.rows[:self.n_writes])
            self._read_commands = _read_commands((self.rows[self.n_writes:, 2] - SLAVE_BASE).tolist())
            self.rows = None

    @property
    def commands(self) -> list:
        self._lists()
        return self._commands

    @property
    def read_commands(self) -> list:
        self._lists()
        return self._read_commands

    def stream(self):
        """The whole stream, writes then reads: a CommandTable of ``rows`` while the lists were never
        read, else ``commands + read_commands``."""
        if self.rows is not None:
            return CommandTable({k: self.rows[:, j] for j, k in enumerate(BEAT_KEYS)})
        return self._commands + self._read_commands


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


def _image(elements: np.ndarray, nbytes: int) -> list:
    """The byte image (ints or 8-bit terms) of ``elements`` in C order, ``nbytes`` bytes each."""
    return [b for v in elements.ravel() for b in _element_bytes(v, nbytes)]


def _image_np(elements: np.ndarray, nbytes: int) -> np.ndarray:
    """:func:`_image` of integer ``elements`` as a uint8 array: the low ``8*nbytes`` bits of each
    (two's complement), little-endian (integer casts wrap, as ``int(v) & mask`` does)."""
    a = np.ascontiguousarray(elements.astype(np.uint8 if nbytes == 1 else "<u2"))
    return a.view(np.uint8).ravel()




def _rows_to_commands(rows: np.ndarray) -> list:
    """Write commands from a (n, 19) int array: columns in :data:`BEAT_KEYS` order (the dicts
    :func:`_beat` builds, keys in its order, Python ints)."""
    return [{"top_slave_if_wr": wr, "top_slave_if_rd": rd, "top_slave_addr_in": addr,
             "top_slave_data_in_0": d0, "top_slave_data_in_1": d1, "top_slave_data_in_2": d2,
             "top_slave_data_in_3": d3, "top_slave_data_in_4": d4, "top_slave_data_in_5": d5,
             "top_slave_data_in_6": d6, "top_slave_data_in_7": d7, "top_slave_data_in_8": d8,
             "top_slave_data_in_9": d9, "top_slave_data_in_10": d10, "top_slave_data_in_11": d11,
             "top_slave_data_in_12": d12, "top_slave_data_in_13": d13, "top_slave_data_in_14": d14,
             "top_slave_data_in_15": d15}
            for wr, rd, addr, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, d12, d13, d14, d15
            in rows.tolist()]


def _write_rows(addrs, data) -> np.ndarray:
    """(n, 19) rows of AXI-slave writes: ``addrs`` (n,) byte offsets from SLAVE_BASE, ``data``
    (n, 16) byte values."""
    addrs = np.asarray(addrs, dtype=np.int64)
    rows = np.zeros((len(addrs), 19), np.int64)
    rows[:, 0] = 1
    rows[:, 2] = SLAVE_BASE + addrs
    rows[:, 3:] = data
    return rows


def _read_commands(addrs) -> list:
    """AXI-slave reads (the dicts ``_beat(addr, None, write=False)`` builds)."""
    return [{"top_slave_if_wr": 0, "top_slave_if_rd": 1, "top_slave_addr_in": SLAVE_BASE + a} for a in addrs]


def conv2d_program(x_raw, w_raw, *, stride: int, weight_bits: int, bias_raw: int = 0, has_bias: bool = False,
                   relu: bool = False) -> ConvJob:
    """The MMIO command stream of one convolution from raw operands: ``x_raw`` (H, W, C) ACT
    values (16-bit), ``w_raw`` (O, KH, KW, C) in the weight format (8 or 16 bits), as ints or as
    terms of those widths (proofs run this same code on symbolic elements). Activations go to
    the virtual SoC memory as [channel block][y][x][8 channels], weights as [filter][channel
    block][ky][kx][8 channels], both little-endian, zero-padded to 8-channel blocks; the weights
    are pulled into scratchpad 0 through the AXI master; the outputs are read back from
    scratchpad 1 ([filter block][oy][ox][8], 2 bytes each). Raises HlscnnError when a buffer
    overflows.

    Integer arrays (numpy integer or bool dtypes) take a numpy path that emits the same command
    list as the element-by-element path (which serves object arrays: ints or terms)."""
    x_in, w_in = np.asarray(x_raw), np.asarray(w_raw)
    numeric = x_in.dtype.kind in "iub" and w_in.dtype.kind in "iub"
    H, W, C = x_in.shape
    O, KH, KW, _ = w_in.shape
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    ncb, nfb = -(-C // CHANNEL_BLOCK), -(-O // CHANNEL_BLOCK)
    wbytes = 2 if weight_bits == 16 else 1
    if numeric:
        act = np.zeros((H, W, ncb * CHANNEL_BLOCK), np.int64)
        act[:, :, :C] = x_in
        act_img = _image_np(act.reshape(H, W, ncb, CHANNEL_BLOCK).transpose(2, 0, 1, 3), 2)
        wt = np.zeros((nfb * CHANNEL_BLOCK, KH, KW, ncb * CHANNEL_BLOCK), np.int64)
        wt[:O, :, :, :C] = w_in
        w_img = _image_np(wt.reshape(nfb * CHANNEL_BLOCK, KH, KW, ncb, CHANNEL_BLOCK).transpose(0, 3, 1, 2, 4),
                          wbytes)
    else:
        x_obj, w_obj = x_in.astype(object), w_in.astype(object)
        act = np.zeros((ncb * CHANNEL_BLOCK, H, W), dtype=object)
        act[:C] = x_obj.transpose(2, 0, 1)
        act_img = _image(act.reshape(ncb, CHANNEL_BLOCK, H, W).transpose(0, 2, 3, 1), 2)
        wt = np.zeros((nfb * CHANNEL_BLOCK, KH, KW, ncb * CHANNEL_BLOCK), dtype=object)
        wt[:O, :, :, :C] = w_obj
        wt = wt.reshape(nfb * CHANNEL_BLOCK, KH, KW, ncb, CHANNEL_BLOCK).transpose(0, 3, 1, 2, 4)
        w_img = _image(wt, wbytes)
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

    nwb = -(-len(w_img) // 16)                       # weight beats
    tail = conv_tail(C, H, W, O, OH, OW, KH, KW, stride, act_base=VIR_MEM_BASE + act_off, bias_raw=bias_raw,
                     has_bias=has_bias, relu=relu)
    if numeric:
        def beats(img: np.ndarray) -> np.ndarray:
            return np.concatenate([img, np.zeros(-len(img) % 16, np.uint8)]).reshape(-1, 16)

        ab = beats(act_img)
        rows = [_write_rows(VIR_MEM_BASE + act_off + 16 * np.arange(len(ab)), ab),
                _write_rows(VIR_MEM_BASE + w_off + 16 * np.arange(nwb), beats(w_img)),
                _write_rows([4 * REG_ID["SocMemRdWrLength"]], _cfg_bytes("SocMemRdWrLength", [1]))]
        # per weight beat: CfgSoCMemBaseAddr, then the scratchpad-0 write that pulls it
        pull = np.zeros((nwb, 2, 19), np.int64)
        pull[:, 0] = _write_rows(np.full(nwb, 4 * REG_ID["SocMemBaseAddr"]),
                                 _cfg_bytes("SocMemBaseAddr", VIR_MEM_BASE + w_off + 16 * np.arange(nwb)))
        pull[:, 1] = _write_rows(SPAD0_BASE + 16 * np.arange(nwb), 0)
        rows.append(pull.reshape(-1, 19))
        rows += [_write_rows([4 * REG_ID[r]], _cfg_bytes(r, [v])) for r, v in tail]
        reads = np.zeros((out_bytes // 16, 19), np.int64)
        reads[:, 1] = 1
        reads[:, 2] = SLAVE_BASE + np.arange(SPAD1_BASE, SPAD1_BASE + out_bytes, 16)
        writes = np.concatenate(rows)
        n = len(writes)
        return ConvJob(None, None, (1, OH, OW, O), nfb, weight_bits, x_in, w_in, bias_raw, stride, relu, has_bias,
                       (n - 8 - 2 * nwb, n - 8), np.concatenate([writes, reads]), n)
    else:
        def beats(img: list):
            img = img + [0] * (-len(img) % 16)
            return [img[i:i + 16] for i in range(0, len(img), 16)]

        cmds = [_beat(VIR_MEM_BASE + act_off + 16 * k, b) for k, b in enumerate(beats(act_img))]
        cmds += [_beat(VIR_MEM_BASE + w_off + 16 * k, b) for k, b in enumerate(beats(w_img))]
        cmds.append(cfg_write("SocMemRdWrLength", 1))
        for k in range(nwb):
            cmds.append(cfg_write("SocMemBaseAddr", VIR_MEM_BASE + w_off + 16 * k))
            cmds.append(_beat(SPAD0_BASE + 16 * k, [0] * 16))      # data comes through the AXI master
    cmds += [cfg_write(r, v) for r, v in tail]
    reads = _read_commands(range(SPAD1_BASE, SPAD1_BASE + out_bytes, 16))
    pull = (len(cmds) - 8 - 2 * nwb, len(cmds) - 8)
    return ConvJob(cmds, reads, (1, OH, OW, O), nfb, weight_bits, x_in, w_in, bias_raw, stride, relu, has_bias,
                   pull)


def conv_tail(C, H, W, O, OH, OW, KH, KW, stride, *, act_base, bias_raw=0, has_bias=False, relu=False) -> list:
    """The configuration registers :func:`conv2d_program` writes after the data transfers, in its
    order, as (register name, 32-bit value): the activation base ``act_base`` (a SoC-memory
    address), weights and outputs at offset 0 of their scratchpads, the size words (input C:12 |
    H:10 | W:10, output O:12 | OH:10 | OW:10, kernel stride:8 | KH:8 | KW:8; ``config_reg.h``),
    the bias and ReLU word, then the trigger. Sizes are ints, or 32-bit terms whose values fit
    their fields (the all-sizes proof, :mod:`mappings.hlscnn.conv_allsizes`, runs this same code
    on size symbols); the integer caller checks the fields."""
    return [("AccelConvActivationBaseAddr", act_base), ("AccelConvWeightsBaseAddr", 0),
            ("AccelConvOutputsBaseAddr", 0), ("AccelConvInputSizeConfig", (C << 20) | (H << 10) | W),
            ("AccelConvOutputSizeConfig", (O << 20) | (OH << 10) | OW),
            ("AccelConvKernelSizeConfig", (stride << 16) | (KH << 8) | KW),
            ("AccelConvChannelConfig", (bias_raw & 0xFFFF) | (int(has_bias) << 16) | (int(relu) << 17)),
            ("AccelConvTrigger", 1)]


def _cfg_bytes(reg: str, values) -> np.ndarray:
    """(n, 16) beats of :func:`cfg_write` of ``reg`` for each of ``values`` (ints in 32 bits)."""
    values = np.asarray(values, dtype=np.int64)
    if values.size and not (0 <= values.min() and values.max() < (1 << 32)):
        bad = values[(values < 0) | (values >= (1 << 32))][0]
        raise HlscnnError(f"register {reg} value {int(bad)!r} does not fit 32 bits")
    off = (4 * REG_ID[reg]) & 15
    out = np.zeros((len(values), 16), np.int64)
    for k in range(4):
        out[:, off + k] = (values >> (8 * k)) & 0xFF
    return out




def read_beat(state) -> np.ndarray:
    """The 16 bytes of the MMIO read that just executed, from the model state (ints in the
    simulator, terms in symbolic execution)."""
    return np.array([state[n] for n in READ_DATA], dtype=object)


def readback(job: ConvJob, reads) -> np.ndarray:
    """The raw ACT outputs (OH, OW, O) from the reads of ``job.read_commands`` in emitted order
    (16 bytes each; ints, or 8-bit terms in proofs): 2 little-endian bytes per output, layout
    [filter block][oy][ox][8]. Ints come back signed (int16 values)."""
    _, OH, OW, O = job.out_shape
    n = job.out_blocks * OH * OW * CHANNEL_BLOCK
    w = _int_words(reads, n)
    if w is not None:                       # the same values as the element path below
        v = np.where(w >= 1 << 15, w - (1 << 16), w).astype(object)
    else:
        flat = [b for r in reads for b in np.asarray(r, dtype=object)]
        b = None if generic.is_symbolic(*flat) else np.array(flat[:2 * n], dtype=object)
        if b is not None and len(b) == 2 * n and all(isinstance(x, (int, np.integer)) and 0 <= x < 256 for x in b):
            w = b.astype(np.int64)              # ints in 0..255: the words directly (same values as below)
            w = w[0::2] | (w[1::2] << 8)
            vals = [int(x) for x in np.where(w >= 1 << 15, w - (1 << 16), w)]
        else:
            vals = [generic.bytes_le(flat[2 * k:2 * k + 2]) for k in range(n)]
            if not generic.is_symbolic(*vals):
                vals = [v - (1 << 16) if v >= 1 << 15 else v for v in vals]
        v = np.array(vals, dtype=object)
    v = v.reshape(job.out_blocks, OH, OW, CHANNEL_BLOCK).transpose(1, 2, 0, 3)
    return v.reshape(OH, OW, -1)[:, :, :O]


def _int_words(reads, n: int) -> np.ndarray | None:
    """The first ``n`` little-endian 16-bit words of ``reads`` when they form a numeric (m, 16)
    array of bytes in 0..255 holding at least ``2 * n`` bytes (int64); else None (the caller
    takes the element path)."""
    if isinstance(reads, np.ndarray):
        a = reads
    else:
        try:
            a = np.asarray(reads)
        except (ValueError, TypeError):
            return None
    if a.dtype.kind not in "iu" or a.ndim != 2 or a.shape[1] != 16 or a.size < 2 * n:
        return None
    b = a.reshape(-1)[:2 * n].astype(np.int64)
    if b.size and (b.min() < 0 or b.max() > 255):
        return None
    return b[0::2] | (b[1::2] << 8)


def decode_output(job: ConvJob, spad1_bytes: np.ndarray) -> np.ndarray:
    """Raw ACT outputs (1, OH, OW, O) from the bytes of scratchpad 1 (layout [fb][oy][ox][8])."""
    _, OH, OW, O = job.out_shape
    n = job.out_blocks * OH * OW * CHANNEL_BLOCK
    v = np.asarray(spad1_bytes[:2 * n], dtype=np.uint8).view("<i2").astype(np.int64)
    v = v.reshape(job.out_blocks, OH, OW, CHANNEL_BLOCK).transpose(1, 2, 0, 3).reshape(OH, OW, -1)
    return v[None, :, :, :O]


def run_job(job: ConvJob, *, col_lanes: int = MACHINE_LANES[0], row_lanes: int = MACHINE_LANES[1], sim: Simulator | None = None, read_mmio: bool = True):
    """Execute a prepared job on the ILA simulator; return (raw ACT output, simulator)."""
    if sim is None:
        sim = Simulator(build_hlscnn(job.weight_bits, col_lanes, row_lanes))
    _run_commands(sim, job.commands, job.pull)
    if read_mmio:
        return readback(job, _run_reads(sim, job.read_commands))[None].astype(np.int64), sim
    return decode_output(job, sim.memory("scratch_pad_1")), sim


def _run_commands(sim: Simulator, commands: list, pull: tuple) -> None:
    """``sim.run(commands)``, with ``commands[pull[0]:pull[1]]`` stepped one by one: the weight
    pull alternates two instructions, which ``Simulator.run`` cannot batch (its look-ahead for a
    batch would fail at every command). The commands before the pull (the SoC-memory writes) run
    as a :class:`~ila.commands.CommandTable` of the same commands. The same commands in the same
    order: the same result whatever ``pull`` is."""
    a, b = pull
    if not 0 <= a <= b <= len(commands):
        a = b = 0
    sim.run(_as_table(commands[:a]))
    if not pull_beats(sim, commands[a:b]):
        for cmd in commands[a:b]:
            sim.step(cmd)
    sim.run(commands[b:])


PULL_BUGS = ("pull_reads_next_beat",)    # seeded bugs of pull_beats, for its differential test


def pull_beats(sim: Simulator, commands, *, bug: str | None = None) -> bool:
    """The numeric fast path of stepping a weight pull: ``commands`` (a list of dicts or a
    :class:`~ila.commands.CommandTable`) are pairs of AXI-slave writes, the ``SocMemBaseAddr``
    configuration register (its 32-bit value little-endian at byte ``addr % 16`` of the beat, or
    at byte 12 when that is past 12: the model's ``CFG_WR_SocMemBaseAddr``) and a 16-byte write
    into scratchpad 0 (``SPAD0_DATA_WR``: bytes ``masked - SPAD0_BASE + b`` get SoC-memory bytes
    ``SocMemBaseAddr - VIR_MEM_BASE + b``, b < 16, and ``top_master_rd_addr_out`` the base).
    Applied all at once: the register and ``top_master_rd_addr_out`` end at the last base, every
    pulled beat lands in scratchpad 0, one simulator step per command. Returns False, changing
    nothing, where it does not apply (the caller steps the commands): a command of another kind or
    shape, a beat outside scratchpad 0 or the SoC memory, two pulled beats that overlap, the
    convolution child running, or a simulator recording its trace. Checked equal to stepping
    (every state and memory, the step count) by ``tests/test_hlscnn_pull.py``; ``bug`` (one of
    :data:`PULL_BUGS`) seeds a deliberate error, to show that test catches it."""
    from ila.models.hlscnn.model import CONFIG_REGS, REG_ID, reg_state
    if bug is not None and bug not in PULL_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {PULL_BUGS}")
    n = len(commands)
    if n == 0 or n % 2 or sim.record_trace or sim.state.get("accel_conv_child_valid"):
        return False
    rows = beat_rows(commands)
    if rows is None or not ((rows[:, 0] == 1) & (rows[:, 1] == 0)).all():
        return False
    cfg, spad = rows[0::2], rows[1::2]
    masked_c, masked_s = cfg[:, 2] & 0xFFFFFF, spad[:, 2] & 0xFFFFFF
    if not ((masked_c < SPAD0_BASE) & ((masked_c >> 2) % len(CONFIG_REGS) == REG_ID["SocMemBaseAddr"])).all():
        return False
    if not ((masked_s >= SPAD0_BASE) & (masked_s < SPAD0_BASE + SPAD_BYTES)).all():
        return False
    start = np.minimum(cfg[:, 2] & 15, 12)
    data = cfg[:, 3:]
    k = np.arange(len(cfg))
    soc = sum(data[k, start + j] << (8 * j) for j in range(4))
    dst, src = masked_s - SPAD0_BASE, (soc - VIR_MEM_BASE) & 0xFFFFFFFF
    if bug == "pull_reads_next_beat":
        src = src + 16
    S = sim.state
    spad0, vir = S["scratch_pad_0"], S["virtual_soc_memory"]
    if (dst + 16 > spad0.shape[0]).any() or (src + 16 > vir.shape[0]).any():
        return False
    order = np.sort(dst)
    if (np.diff(order) < 16).any():
        return False
    lanes = np.arange(16)
    spad0[(dst[:, None] + lanes).ravel()] = vir[(src[:, None] + lanes).ravel()]
    last = int(soc[-1])
    S[reg_state("SocMemBaseAddr")] = last
    S["top_master_rd_addr_out"] = last
    sim.steps += n
    return True


def _as_table(commands: list):
    """``commands`` as a :class:`~ila.commands.CommandTable` (the same commands, row for row)
    when they are dicts with one set of keys and integer values; else ``commands`` itself."""
    if isinstance(commands, CommandTable) or len(commands) < 2:
        return commands
    try:
        keys = tuple(commands[0])
        if not keys or any(len(c) != len(keys) for c in commands):
            return commands
        get = itemgetter(*keys)
        rows = np.array([get(c) for c in commands])
    except (TypeError, KeyError, ValueError, OverflowError):
        return commands
    if rows.ndim == 1:
        rows = rows[:, None]
    if rows.dtype.kind not in "iub" or rows.shape != (len(commands), len(keys)):
        return commands
    return CommandTable({k: rows[:, j] for j, k in enumerate(keys)})


def _run_reads(sim: Simulator, commands: list) -> list:
    """Execute the MMIO reads ``commands`` in order; the 16 bytes each returned (tuples)."""
    return sim.run(_as_table(commands), observe=READ_DATA)[1]


def run_conv2d(x, w, *, stride=1, padding=0, groups: int = 1, weight_bits: int = 16, bias=None,
               relu: bool = False, col_lanes: int = MACHINE_LANES[0], row_lanes: int = MACHINE_LANES[1], read_mmio: bool = True) -> np.ndarray:
    """conv2d on the HLSCNN ILA; returns the float result (1, OH, OW, O) (ACT values)."""
    job = prepare_conv2d(x, w, stride=stride, padding=padding, groups=groups, weight_bits=weight_bits,
                         bias=bias, relu=relu)
    raw, _ = run_job(job, col_lanes=col_lanes, row_lanes=row_lanes, read_mmio=read_mmio)
    return ACT.to_float(raw)


__all__ = ["HlscnnError", "ConvJob", "prepare_conv2d", "conv2d_program", "run_job", "run_conv2d", "decode_output",
           "readback", "read_beat", "cfg_write"]
