"""HLSCNN ILA: convolution through the simulator equals the independent fixed-point numpy model bit
for bit (random shapes, strides, both weight widths, bias/ReLU), the MMIO interface (config
register slicing, scratchpad writes through the AXI master, reads), and bad input."""
import numpy as np
import pytest

from ila import SimulationError
from ila.models.hlscnn.model import (ADDR_IN_MAX, REG_ID, SLAVE_BASE, SPAD0_BASE, SPAD1_BASE, VIR_MEM_BASE,
                               build_hlscnn, reg_state)
from ila.models.hlscnn.driver import (HlscnnError, cfg_write, prepare_conv2d, run_conv2d, run_job)
from ila.models.hlscnn.reference import conv2d_fixed_ref, conv2d_float_ref
from ila.numerics.fixed_point import ACT, relative_error
from ila.sim import Simulator


def _check(job, raw):
    ref = conv2d_fixed_ref(job.x_raw, job.w_raw, stride=job.stride, weight_bits=job.weight_bits,
                           bias_raw=job.bias_raw if job.has_bias else None, relu=job.relu)
    assert raw.shape == ref.shape == job.out_shape
    assert np.array_equal(raw, ref), f"max diff {np.abs(raw - ref).max()}"


def _job(x, w, **kw):
    return prepare_conv2d(x, w, **kw)


@pytest.mark.parametrize("weight_bits", [8, 16])
def test_bit_exact_against_independent_model_random_shapes(weight_bits):
    rng = np.random.default_rng(weight_bits)
    for trial in range(6):
        H, W = (int(v) for v in rng.integers(3, 11, 2))
        C, O = (int(v) for v in rng.integers(1, 20, 2))
        KH, KW = int(rng.integers(1, min(H, 4) + 1)), int(rng.integers(1, min(W, 4) + 1))
        stride = int(rng.integers(1, 3))
        x = rng.normal(scale=2.0, size=(1, H, W, C))
        w = rng.normal(scale=0.5, size=(O, KH, KW, C))
        kw = dict(stride=stride, weight_bits=weight_bits, relu=bool(rng.integers(0, 2)))
        if rng.random() < 0.5:
            kw["bias"] = float(rng.normal())
        job = _job(x, w, **kw)
        raw, _ = run_job(job, read_mmio=trial % 2 == 0)
        _check(job, raw)


def test_bit_exact_with_saturation_and_wrap():
    # large activations and weights: MAC results saturate when rounded to ACT, partial sums wrap
    rng = np.random.default_rng(2)
    x = rng.uniform(-250, 250, size=(1, 6, 6, 16))
    w = rng.uniform(-1.9, 1.9, size=(9, 3, 3, 16))
    for bits in (8, 16):
        job = _job(x, w, weight_bits=bits, relu=True, bias=1.5)
        raw, _ = run_job(job, read_mmio=False)
        _check(job, raw)
        assert (raw == 0).any()                               # ReLU clipped something
        assert (np.abs(raw) > 30000).any()                    # near the int16 range


def test_fine_grained_model_equals_coarse_model():
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(1, 7, 9, 10)), rng.normal(scale=0.3, size=(11, 3, 2, 10))
    job = _job(x, w, stride=2, weight_bits=16)
    fine, sim = run_job(job, col_lanes=1, row_lanes=1, read_mmio=False)
    coarse, _ = run_job(job, col_lanes=3, row_lanes=2, read_mmio=False)
    assert np.array_equal(fine, coarse)
    _check(job, fine)
    OH, OW = job.out_shape[1:3]
    assert sim.child_steps == 2 * 2 * 3 * 2 * OH * OW          # filter blocks x channel blocks x taps x pixels


def test_accuracy_against_float32_and_host_padding():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(1, 10, 10, 16))
    w = rng.normal(scale=np.sqrt(2 / 144), size=(16, 3, 3, 16))
    f = conv2d_float_ref(x, w, padding=1)
    e16 = relative_error(f, run_conv2d(x, w, padding=1, weight_bits=16))
    e8 = relative_error(f, run_conv2d(x, w, padding=1, weight_bits=8))
    assert f.shape == (1, 10, 10, 16)
    assert 0 < e16 < 0.03 and e16 < e8 < 0.2


def test_accumulate_flag_adds_to_previous_output():
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(1, 5, 5, 8)), rng.normal(scale=0.3, size=(8, 3, 3, 8))
    job = _job(x, w)
    raw1, sim = run_job(job, read_mmio=False)
    sim.step(cfg_write("AccelConvChannelConfig", 1 << 18))     # en_accum
    sim.step(cfg_write("AccelConvTrigger", 1))
    from ila.models.hlscnn.driver import decode_output
    raw2 = decode_output(job, sim.memory("scratch_pad_1"))
    assert np.array_equal(raw2, ((2 * raw1 + 32768) % 65536) - 32768)     # same conv added onto itself


# ----------------------------------------------------------------------------- interface
def test_config_register_slicing_and_other_registers():
    sim = Simulator(build_hlscnn(16))
    sim.step(cfg_write("AccelConvInputSizeConfig", 0xDEADBEEF))
    assert sim.state[reg_state("AccelConvInputSizeConfig")] == 0xDEADBEEF
    # the 32-bit value is taken from byte addr[3:0] of the beat: reg 21 is at 0x54 -> bytes 4..7
    beat = {f"top_slave_data_in_{i}": i + 1 for i in range(16)}
    sim.step({"top_slave_if_wr": 1, "top_slave_addr_in": SLAVE_BASE + 4 * REG_ID["SocMemBaseAddr"], **beat})
    assert sim.state[reg_state("SocMemBaseAddr")] == 0x04030201        # reg 4 at 0x10: bytes 0..3
    sim.step(cfg_write("AccelFCSizeConfig", 0x1234))                    # shares CFG_WR_OTHER
    assert sim.state[reg_state("AccelFCSizeConfig")] == 0x1234
    assert sim.state[reg_state("AccelReductionBiasConfig")] == 0
    # the top byte of the address is the device offset and is ignored
    sim.step({**cfg_write("AccelConvOutputsBaseAddr", 77), "top_slave_addr_in": 0x7F000000 + 4 * 20})
    assert sim.state[reg_state("AccelConvOutputsBaseAddr")] == 77


def test_spad_write_goes_through_soc_memory_and_reads_back():
    sim = Simulator(build_hlscnn(8), record_trace=True)
    payload = bytes(range(100, 116))
    sim.step({"top_slave_if_wr": 1, "top_slave_addr_in": SLAVE_BASE + VIR_MEM_BASE + 0x40,
              **{f"top_slave_data_in_{i}": b for i, b in enumerate(payload)}})
    sim.step(cfg_write("SocMemBaseAddr", VIR_MEM_BASE + 0x40))
    sim.step({"top_slave_if_wr": 1, "top_slave_addr_in": SLAVE_BASE + SPAD1_BASE + 0x30,
              **{f"top_slave_data_in_{i}": 0 for i in range(16)}})   # data comes from SoC memory
    assert bytes(sim.memory("scratch_pad_1")[0x30:0x40]) == payload
    assert sim.state["top_master_rd_addr_out"] == VIR_MEM_BASE + 0x40
    sim.step({"top_slave_if_rd": 1, "top_slave_addr_in": SLAVE_BASE + SPAD1_BASE + 0x30})
    assert bytes(sim.state[f"top_slave_rd_data_{i}"] for i in range(16)) == payload
    assert sim.trace == ["VIR_MEM_WR", "CFG_WR_SocMemBaseAddr", "SPAD1_DATA_WR", "SPAD1_DATA_RD"]


def test_invalid_commands_decode_nothing():
    sim = Simulator(build_hlscnn(16))
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step({"top_slave_if_wr": 1, "top_slave_if_rd": 1, "top_slave_addr_in": SLAVE_BASE})
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step({"top_slave_if_wr": 1, "top_slave_addr_in": SLAVE_BASE + ADDR_IN_MAX})
    with pytest.raises(SimulationError, match="no instruction"):      # hole between spad1 and SoC memory
        sim.step({"top_slave_if_rd": 1, "top_slave_addr_in": SLAVE_BASE + 0x48000})
    with pytest.raises(SimulationError, match="no instruction"):      # trigger with an inconsistent config
        sim.step(cfg_write("AccelConvTrigger", 1))


def test_trigger_rejects_inconsistent_hardware_config():
    rng = np.random.default_rng(6)
    job = _job(rng.normal(size=(1, 6, 6, 8)), rng.normal(size=(8, 3, 3, 8)), stride=2)
    sim = Simulator(build_hlscnn(16))
    sim.run(job.commands[:-1])
    sim.step(cfg_write("AccelConvKernelSizeConfig", (1 << 16) | (3 << 8) | 3))   # stride 1: output size mismatch
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step(job.commands[-1])
    sim.step(cfg_write("AccelConvKernelSizeConfig", (0 << 16) | (3 << 8) | 3))   # stride 0
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step(job.commands[-1])
    sim.step(cfg_write("AccelConvKernelSizeConfig", (2 << 16) | (3 << 8) | 3))
    sim.step(job.commands[-1])
    assert not sim.state["accel_conv_child_valid"]
    from ila.models.hlscnn.driver import decode_output
    _check(job, decode_output(job, sim.memory("scratch_pad_1")))


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("xs,ws,kw,match", [
    ((1, 3, 3, 4), (4, 5, 2, 4), {}, "kernel 5x2 is larger than the"),
    ((1, 8, 8, 4), (8, 3, 3, 2), {}, "grouped"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"groups": 2}, "non-grouped"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"stride": (1, 2)}, "unsupported stride"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"stride": 0}, "unsupported stride"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"stride": 300}, "unsupported stride"),
    ((2, 8, 8, 4), (8, 3, 3, 4), {}, "batch 1"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"weight_bits": 4}, "8 or 16"),
    ((1, 8, 8, 4), (8, 3, 3, 4), {"bias": [1.0, 2.0]}, "one bias"),
    ((1, 120, 120, 16), (8, 1, 1, 16), {}, "buffer overflow: input and weights"),
    ((1, 60, 60, 8), (64, 1, 1, 8), {}, "buffer overflow: outputs"),
    ((1, 4, 4, 1024), (72, 3, 3, 1024), {}, "buffer overflow: weights|buffer overflow: input"),
    ((1, 4, 2000, 1), (1, 1, 1, 1), {}, "input cols = 2000"),
])
def test_bad_input_is_a_clear_error(xs, ws, kw, match):
    with pytest.raises(HlscnnError, match=match):
        prepare_conv2d(np.zeros(xs), np.zeros(ws), **kw)
