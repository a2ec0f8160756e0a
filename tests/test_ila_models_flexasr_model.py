"""FlexASR ILA model: LayerReduce tiling and in-place semantics, MaxPool bit-exactness, the
assembler levels, bad input, and end-to-end PE operations."""
import json

import numpy as np
import pytest

from ila import FuncRef
from ila.models.flexasr import reference as ref
from ila.models.flexasr import build_flexasr, constants as C, driver as D
from ila.models.flexasr.isa import (ShapeError, assemble, fragment_to_mmio, ila_to_fragment,
                                          tiled_offsets)
from ila.models.flexasr.funcs import GB_ADPFLOAT_MAX
from ila.numerics import adaptivfloat as af
from ila.sim import Simulator


def independent_addr(B, t, v, i, num_v):
    """The layout formula, written independently of the model and assembler."""
    return B + 16 * ((t % 16) + (t // 16) * num_v * 16) + 256 * v + i


def independent_layer_reduce(mem, B, num_ts, num_v, op):
    """Numpy LayerReduce from the layout formula: out[t/2] = op(in[t], in[t+1]) in place."""
    mem = mem.copy()
    orig = mem.copy()
    for t in range(0, num_ts, 2):
        for v in range(num_v):
            for i in range(16):
                a = orig[independent_addr(B, t, v, i, num_v)]
                b = orig[independent_addr(B, t + 1, v, i, num_v)]
                mem[independent_addr(B, t // 2, v, i, num_v)] = op(a, b)
    return mem


@pytest.mark.parametrize("num_ts,num_v", [(2, 1), (16, 4), (34, 3), (48, 2)])
def test_tiled_offsets_match_formula(num_ts, num_v):
    offs = tiled_offsets(num_ts, num_v)
    for t in range(num_ts):
        for v in range(num_v):
            for i in (0, 7, 15):
                assert offs[t, v, i] == independent_addr(0, t, v, i, num_v)
    # a bijection onto whole 16-timestep groups: no two elements share a byte
    assert len(np.unique(offs)) == offs.size


def _lr_sim(num_ts, num_v, mode, base_units, data):
    sim = Simulator(D.runner().model)
    mem = sim.memory("gb_core_large_buffer")
    mem[:data.size] = data

    def w(addr, word):
        cmd = {"if_axi_wr": 1, "addr_in": addr} | {f"data_in_{k}": (word >> 8 * k) & 0xFF for k in range(16)}
        return sim.step(cmd)
    w(C.CFG_MEM_MNGR_LARGE, C.pack_fields(C.GB_FIELDS["mem_mngr_large"],
                                          {"num_vector_1": num_v, "base_large_1": base_units}))
    w(C.CFG_LAYER_REDUCE, C.pack_fields(C.GB_FIELDS["layer_reduce"], {
        "is_valid": 1, "mode": mode, "mem_idx": 1, "num_vector": num_v, "num_timestep": num_ts}))
    assert w(C.START_LAYER_REDUCE, 1) == "GB_LAYER_REDUCE_START"
    return sim


@pytest.mark.parametrize("num_ts,num_v,mode", [(4, 1, C.LR_MAX), (34, 3, C.LR_MAX), (20, 2, C.LR_MEAN),
                                               (18, 1, C.LR_ADD)])
def test_in_place_layer_reduce_against_independent_numpy(num_ts, num_v, mode):
    rng = np.random.default_rng(num_ts * 7 + mode)
    base_units = 5                       # memory index 1 at byte 80: exercises the base register
    B = 16 * base_units
    size = B + 16 * 16 * num_v * ((num_ts + 15) // 16) + 64
    data = rng.integers(0, 256, size=size, dtype=np.uint8)
    sim = _lr_sim(num_ts, num_v, mode, base_units, data)
    op = {C.LR_MAX: af.af_max, C.LR_MEAN: af.af_mean, C.LR_ADD: af.af_add}[mode]
    expected = independent_layer_reduce(data, B, num_ts, num_v, lambda a, b: int(op(a, b)))
    got = sim.memory("gb_core_large_buffer")[:size]
    assert np.array_equal(got, expected)
    assert sim.state["top_interrupt_request"] == 1 and sim.state["gb_layer_reduce_child_valid"] == 0


def test_layer_reduce_child_trace_and_single_vector_instruction():
    data = np.arange(2 * 2 * 16, dtype=np.uint8)
    sim = Simulator(D.runner().model, record_trace=True)
    sim.memory("gb_core_large_buffer")[:data.size] = data
    cmds = fragment_to_mmio(ila_to_fragment([
        {"name": "cfg_mmngr_gb_large", "num_vector_0": 2},
        {"name": "cfg_ly_reduce", "is_valid": 1, "mode": 0, "mem_idx": 0, "num_vector": 2, "num_timestep": 2},
        {"name": "start", "op": 2}]))
    sim.run(cmds)
    lr = [n for n in sim.trace if n.startswith("gb_layer_reduce")]
    assert lr == ["gb_layer_reduce_prep", "gb_layer_reduce_timestep_level_op",
                  "gb_layer_reduce_vector_level_op", "gb_layer_reduce_vector_max",
                  "gb_layer_reduce_vector_level_op", "gb_layer_reduce_vector_max", "gb_layer_reduce_done"]


def test_max_funcref_has_axioms_and_bit_precise_body():
    from ila.compile_np import evaluate
    from ila import bv_const
    assert isinstance(GB_ADPFLOAT_MAX, FuncRef) and len(GB_ADPFLOAT_MAX.axioms) >= 3
    codes = list(range(0, 256, 3)) + [0x80, 0x00, 0x7F, 0xFF]
    for a in codes[::4]:
        for b in codes:
            e = GB_ADPFLOAT_MAX.expr_body(bv_const(a, 8), bv_const(b, 8))
            assert evaluate([e], {})[0] == af.af_max(a, b)


@pytest.mark.parametrize("shape", [(2, 16), (16, 64), (64, 256)])
def test_maxpool_bit_exact_against_adpfloat_max_of_quantised_input(shape):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32) * 3
    res = D.run_pool(x, "max")
    q, br = res.inputs["x"]
    assert np.array_equal(res.codes, af.af_max(q[0::2], q[1::2]))
    assert np.array_equal(res.out, af.dequantize(af.af_max(q[0::2], q[1::2]), br))


def test_program_fragment_format_and_mmio_bytes():
    lib = {"x": np.arange(32, dtype=np.uint8).reshape(2, 16)}
    frag, cmds = assemble([{"name": "store_act", "tensor": "x", "base": 0},
                           {"name": "maxp", "num_ts": 2, "num_v": 1},
                           {"name": "load_act", "num_ts": 1, "num_v": 1, "base": 0}], lib)
    entries = json.loads(json.dumps(frag))["program fragment"]
    assert entries[0] == {"instr_No.": 0, "addr": "0x33500000",
                          "data": "0x0F0E0D0C0B0A09080706050403020100", "mode": "W"}
    assert entries[1]["addr"] == "0x33500010" and all(len(e["data"]) == 34 for e in entries)
    assert [e["mode"] for e in entries] == ["W", "W", "W", "W", "W", "Q", "R"]
    assert entries[3]["addr"] == "0x33800010"          # layer-reduce config
    # byte k of the beat = hex digits [30-2k : 32-2k]
    assert cmds[0]["data_in_0"] == 0x00 and cmds[0]["data_in_15"] == 0x0F
    assert cmds[5] == {"wait_irq": True} and cmds[6]["if_axi_rd"] == 1
    cfg = cmds[3]
    assert (cfg["data_in_0"], cfg["data_in_1"], cfg["data_in_6"], cfg["data_in_8"]) == (1, 0, 1, 2)


def test_bad_shapes_are_rejected_clearly():
    with pytest.raises(ShapeError, match="even number of timesteps"):
        D.run_pool(np.zeros((3, 16), np.float32))
    with pytest.raises(ShapeError, match="multiple of 16"):
        D.run_pool(np.zeros((4, 20), np.float32))
    with pytest.raises(ShapeError, match="GB large buffer overflows"):
        D.run_pool(np.zeros((4096, 512), np.float32))
    with pytest.raises(ShapeError, match="4 PEs"):
        D.run_linear(np.zeros((2, 16), np.float32), np.zeros((32, 16), np.float32))
    with pytest.raises(ShapeError, match="multiple of 16"):
        D.run_linear(np.zeros((2, 24), np.float32), np.zeros((64, 24), np.float32))


def test_unmapped_mmio_address_raises_clear_error():
    r = D.Runner(D.runner().model)
    for addr in (0x33000060, 0x33C00000, 0x34100000, 0x20000000):
        with pytest.raises(D.FlexASRError, match=f"unmapped address {addr:#010x}"):
            r.execute([{"if_axi_wr": 1, "addr_in": addr}])


def test_config_write_sets_registers_and_start_needs_valid_config():
    sim = Simulator(build_flexasr())
    word = C.pack_fields(C.GB_FIELDS["layer_reduce"], {"is_valid": 0, "mode": 1, "mem_idx": 2,
                                                       "num_vector": 9, "num_timestep": 0x1234})
    cmd = {"if_axi_wr": 1, "addr_in": C.CFG_LAYER_REDUCE} | {f"data_in_{k}": (word >> 8 * k) & 0xFF for k in range(16)}
    assert sim.step(cmd) == "CONFIG_GB_LAYER_REDUCE"
    assert (sim.state["gb_layer_reduce_mode"], sim.state["gb_layer_reduce_mem_idx"],
            sim.state["gb_layer_reduce_num_vector"], sim.state["gb_layer_reduce_num_timestep"]) == (1, 2, 9, 0x1234)
    # config not valid -> the start trigger decodes nothing
    assert sim.step({"if_axi_wr": 1, "addr_in": C.START_LAYER_REDUCE}, allow_idle=True) is None


def test_gb_store_and_load_round_trip():
    sim = Simulator(D.runner().model)
    cmd = {"if_axi_wr": 1, "addr_in": C.GB_LARGE_BASE + 0x1230} | {f"data_in_{k}": 100 + k for k in range(16)}
    assert sim.step(cmd) == "GB_CORE_STORE_LARGE"
    assert sim.step({"if_axi_rd": 1, "addr_in": C.GB_LARGE_BASE + 0x1230}) == "GB_CORE_LOAD_LARGE"
    assert [sim.state[f"data_out_{k}"] for k in range(16)] == [100 + k for k in range(16)]


def test_linear_layer_end_to_end_close_to_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = (rng.standard_normal((64, 32)) * 0.2).astype(np.float32)
    b = (rng.standard_normal(64) * 0.2).astype(np.float32)
    res = D.run_linear(x, w, b)
    assert res.out.shape == (4, 64)
    assert ref.frobenius_rel_error(ref.linear_layer(x, w, b), res.out) < 0.05
    # against the reference on the dequantised inputs, the error is AdaptivFloat output rounding
    xq, bx = res.inputs["x"]
    wq, bw = res.inputs["w"]
    bq, bb = res.inputs["b"]
    yq = ref.linear_layer(af.dequantize(xq, bx), af.dequantize(wq, bw), af.dequantize(bq, bb))
    assert ref.frobenius_rel_error(yq, res.out) < 0.04


def test_lstm_end_to_end_close_to_reference():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    H = 64
    wi = (rng.standard_normal((4 * H, 16)) * 0.3).astype(np.float32)
    wh = (rng.standard_normal((4 * H, H)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(4 * H) * 0.3).astype(np.float32)
    res = D.run_lstm(x, wi, wh, b)
    assert ref.frobenius_rel_error(ref.lstm_layer(x, wi, wh, b), res.out) < 0.06
