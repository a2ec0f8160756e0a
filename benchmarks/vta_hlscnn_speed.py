"""Simulation speed of the VTA and HLSCNN ILAs.

* VTA: 64x64x64 int8 dense (x[64,64] @ w[64,64].T, shift 8, clip) -- DRAM fill through the
  virtual-memory write instruction, then the instruction stream (LOAD uop/wgt/inp, GEMM reset,
  GEMM, ALU SHR/MIN/MAX, STORE, FINISH).
* HLSCNN: 3x3 conv2d, 16 -> 16 channels, 32x32 input, host padding 1 (32x32 output), 16-bit
  weights -- the whole MMIO stream (SoC-memory writes, scratchpad loads, configuration, trigger,
  read-back of every output beat), with the convolution trigger (the child loop) timed apart.

Model construction (cached per configuration) and simulator compilation are reported separately. Times are the best of
``repeat`` runs. Usage: python benchmarks/vta_hlscnn_speed.py [repeat]   (default 3)
"""
from __future__ import annotations


import time

import numpy as np

from ila.models.hlscnn.model import build_hlscnn
from ila.models.hlscnn.driver import decode_output, prepare_conv2d
from ila.models.hlscnn.reference import conv2d_fixed_ref
from ila.models.vta.model import build_vta
from ila.models.vta.isa import encode
from ila.models.vta.driver import dense_program, dram_write_commands, result
from ila.models.vta.reference import dense_ref
from ila.sim import Simulator


def vta(repeat: int):
    rng = np.random.default_rng(0)
    x, w = rng.integers(-128, 128, (64, 64)), rng.integers(-128, 128, (64, 64))
    t0 = time.perf_counter()
    model = build_vta()
    build = time.perf_counter() - t0
    prog = dense_program(x, w, shift=8, clip=True)
    best = None
    for _ in range(repeat):
        tc = time.perf_counter()
        sim = Simulator(model)
        t0 = time.perf_counter()
        fill = list(dram_write_commands(prog.dram, upto=prog.out_addr))
        sim.run(fill)
        t1 = time.perf_counter()
        for insn in prog.insns:
            sim.step({"vta_top_instr_in": encode(insn)})
        t2 = time.perf_counter()
        if best is None or t2 - t0 < best[0]:
            best = (t2 - t0, t1 - t0, t2 - t1, len(fill), len(prog.insns), sim.child_steps, t0 - tc)
    ok = np.array_equal(result(prog, sim.memory("vta_dram")), dense_ref(x, w, shift=8, clip=True))
    total, fill_t, run_t, n_fill, n_insn, steps, compile_t = best
    print(f"VTA 64x64x64 dense:  {total * 1e3:7.1f} ms total  (DRAM fill {n_fill} cmds {fill_t * 1e3:.1f} ms, "
          f"{n_insn} instructions / {steps} child steps {run_t * 1e3:.1f} ms); model build {build * 1e3:.0f} ms, "
          f"simulator compile {compile_t * 1e3:.0f} ms; "
          f"exact vs numpy: {ok}")


def hlscnn(repeat: int):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 32, 32, 16))
    w = rng.standard_normal((16, 3, 3, 16)) * np.sqrt(2 / 144)
    t0 = time.perf_counter()
    model = build_hlscnn(16)
    build = time.perf_counter() - t0
    job = prepare_conv2d(x, w, padding=1, weight_bits=16)
    best = None
    for _ in range(repeat):
        tc = time.perf_counter()
        sim = Simulator(model)
        t0 = time.perf_counter()
        sim.run(job.commands[:-1])
        t1 = time.perf_counter()
        sim.step(job.commands[-1])
        t2 = time.perf_counter()
        got = bytearray()
        for cmd in job.read_commands:
            sim.step(cmd)
            got += bytes(sim.state[f"top_slave_rd_data_{i}"] for i in range(16))
        t3 = time.perf_counter()
        if best is None or t3 - t0 < best[0]:
            best = (t3 - t0, t1 - t0, t2 - t1, t3 - t2, sim.child_steps, bytes(got), t0 - tc)
    total, setup, conv, read, steps, data, compile_t = best
    raw = decode_output(job, np.frombuffer(data, np.uint8))
    ok = np.array_equal(raw, conv2d_fixed_ref(job.x_raw, job.w_raw))
    print(f"HLSCNN 3x3 conv2d 16->16 on 32x32: {total * 1e3:7.1f} ms total  (setup {len(job.commands) - 1} cmds "
          f"{setup * 1e3:.1f} ms, conv trigger {steps} child steps {conv * 1e3:.1f} ms, read-back "
          f"{len(job.read_commands)} cmds {read * 1e3:.1f} ms); model build {build * 1e3:.0f} ms, "
          f"simulator compile {compile_t * 1e3:.0f} ms; "
          f"bit-exact vs numpy model: {ok}")


if __name__ == "__main__":
    import sys

    from ila.cli import ArgumentParser, check_int
    from ila.errors import D2AError, report
    _ap = ArgumentParser(prog="python -m benchmarks.vta_hlscnn_speed",
                                  description="VTA and HLSCNN simulator speed")
    _ap.add_argument("repeats", nargs="?", type=int, default=3)
    r = _ap.parse_args().repeats
    try:
        check_int("repeats", r, 1, 2 ** 63 - 1)         # a count the machine's integers hold
    except D2AError as exc:
        sys.exit(report(exc))
    vta(r)
    hlscnn(r)
