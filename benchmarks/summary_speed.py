"""Simulator speed with and without the child-loop summaries (``ila.model.Ila.set_summary``).

For each summarised unit, the summarised loop alone at a realistic shape: instruction by
instruction (``Simulator(..., summaries=False)``) against the summary, and the ratio; then whole
accelerator calls through the drivers (MMIO stream, loop, read-back) both ways:

* HLSCNN convolution loop (``Accel_Conv_Child``): 3x3 conv2d 16 -> 16 channels on a 32x32 input
  with host padding 1 (32x32 output), 16-bit and 8-bit weight designs; the trigger command (which
  runs the child loop to quiescence) is timed alone.
* FlexASR PE-core loop (``PE_CORE_CHILD``: the MACs and bias steps of one timestep) and
  GB-control transfers (``Child_GB_Control``: the input vectors of one timestep sent to the PEs),
  the per-timestep summaries an RNN runs; and the whole run of a feed-forward layer (every
  timestep, PE core and activation unit at once: ``ila.models.flexasr.linear_run``): a linear
  layer 256 -> 256 over 16 timesteps, the time spent in those children's instructions (or
  summaries).
* HLSCNN conv2d call (``driver.run_job``): the whole MMIO stream on a reused simulator.
* FlexASR linear call (``driver.run_linear``, 64 -> 64, 16 timesteps), assembler included.
* VTA loops (``vta_child``: LOAD/STORE DMA, GEMM reset and accumulate, ALU), per unit: the int8
  dense 64x576x64 with a requantising epilogue (shift 8, clip: ALU SHR, MIN, MAX), each
  instruction's command (the top-level instruction and its loop) timed alone, summed by unit,
  after the DRAM image is written.
* VTA dense calls (``driver.run_on_ila``, the whole MMIO stream: DRAM writes and instructions,
  as ``mappings.vta.common.run_acc`` runs it): 64x576x64, and 35x650x384, one of the 27 passes of
  LSTM-WLM's 35x650x10000 ``vta.dense`` (instruction by instruction it runs once, not ``repeat``
  times: about 6 s).

Times are the best of ``repeat`` runs (seconds per call); every summarised result is checked
bit-exact against the instruction-level one. Usage: python -m benchmarks.summary_speed [repeat]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ila.models.hlscnn.driver import prepare_conv2d, run_job
from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn
from ila.sim import Simulator


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _row(name, slow, fast, same):
    print(f"{name:58} {slow * 1e3:9.1f} ms {fast * 1e3:9.1f} ms {slow / fast:7.1f}x   bit-exact: {same}")


def hlscnn_loop(repeat, weight_bits):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 32, 32, 16))
    w = rng.standard_normal((16, 3, 3, 16)) * np.sqrt(2 / 144)
    job = prepare_conv2d(x, w, padding=1, weight_bits=weight_bits, bias=0.25, relu=True)
    model = build_hlscnn(weight_bits, *MACHINE_LANES)
    res = {}
    for summaries in (False, True):
        sim = Simulator(model, summaries=summaries)

        def once():
            sim.reset()
            sim.run(job.commands[:-1])
            before = sim.child_steps
            t0 = time.perf_counter()
            sim.step(job.commands[-1])
            return time.perf_counter() - t0, sim.memory("scratch_pad_1").copy(), sim.child_steps - before

        runs = [once() for _ in range(repeat)]
        res[summaries] = (min(r[0] for r in runs), runs[-1][1], runs[-1][2])
    same = np.array_equal(res[False][1], res[True][1])
    _row(f"HLSCNN conv loop, w{weight_bits}, 16->16 3x3 on 32x32 ({res[False][2]} child steps)",
         res[False][0], res[True][0], same)


def _timed(sim, child: str) -> dict:
    """Accumulate the time ``sim`` spends in ``child``'s instructions and in its summary."""
    spent = {"t": 0.0}
    apply, summarise = sim._apply, sim._summarise

    def timed_apply(level, ins, S, I):
        t0 = time.perf_counter()
        try:
            return apply(level, ins, S, I)
        finally:
            if level.ila.name == child:
                spent["t"] += time.perf_counter() - t0

    def timed_summarise(level, S, budget):
        t0 = time.perf_counter()
        try:
            return summarise(level, S, budget)
        finally:
            if level.ila.name == child:
                spent["t"] += time.perf_counter() - t0

    sim._apply, sim._summarise = timed_apply, timed_summarise
    return spent


def _linear_operands(seed: int, n: int, w_scale: float):
    """x[16, n], w[n, n] / w_scale, b[n] / 8 (float32), seeded."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((16, n)).astype(np.float32), (rng.standard_normal((n, n)) / w_scale).astype(np.float32),
            (rng.standard_normal(n) / 8).astype(np.float32))


def _flexasr_runner(summaries):
    """A FlexASR driver Runner on the shared model, its simulator with or without summaries (or
    with the ones a mapping names, as ``Simulator(summaries=...)``)."""
    from ila.models.flexasr import driver as D
    from ila.models.flexasr import shared_model
    r = D.Runner(shared_model())
    r.sim = Simulator(r.model, summaries=summaries)
    return r


FLEXASR_CHILDREN = ("Child_GB_Control", "PE_CORE_CHILD", "PE_ACT_CHILD")


def flexasr_child_loop(repeat, children: tuple, label: str, per_timestep: bool):
    """Time spent in the FlexASR ``children`` (instructions, or their summaries) during a linear
    layer 256 -> 256 over 16 timesteps; ``per_timestep``: with the per-timestep summaries (transfer
    phases and PE core, as an RNN runs them) instead of the whole-run summary of a feed-forward
    layer (``ila.models.flexasr.linear_run``)."""
    from ila.models.flexasr import driver as D
    from ila.models.flexasr.gb_control import gb_send_summary
    x, w, b = _linear_operands(3, 256, 16)
    res = {}
    for summaries in (False, {"Child_GB_Control": gb_send_summary()} if per_timestep else True):
        r = _flexasr_runner(summaries)
        best = float("inf")
        for _ in range(repeat):
            spent = [_timed(r.sim, c) for c in children]
            out = D.run_linear(x, w, b, r=r)
            best = min(best, sum(s["t"] for s in spent))
        res[bool(summaries)] = (best, out)
    _row(f"FlexASR {label}, linear 256->256, 16 timesteps", res[False][0], res[True][0],
         np.array_equal(res[False][1].codes, res[True][1].codes))


def hlscnn_call(repeat):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 32, 32, 16))
    w = rng.standard_normal((16, 3, 3, 16)) * np.sqrt(2 / 144)
    model = build_hlscnn(16, *MACHINE_LANES)
    res = {}
    for summaries in (False, True):
        sim = Simulator(model, summaries=summaries)

        def call():
            sim.reset()
            job = prepare_conv2d(x, w, padding=1, weight_bits=16)
            return run_job(job, sim=sim)[0]

        res[summaries] = _best(call, repeat)
    n = len(prepare_conv2d(x, w, padding=1, weight_bits=16).commands) + 2048
    _row(f"HLSCNN conv2d call via driver ({n} MMIO commands)", res[False][0], res[True][0],
         np.array_equal(res[False][1], res[True][1]))


def flexasr_linear(repeat):
    from ila.models.flexasr import driver as D
    x, w, b = _linear_operands(0, 64, 8)
    res = {}
    for summaries in (False, True):
        r = _flexasr_runner(summaries)
        res[summaries] = _best(lambda: D.run_linear(x, w, b, r=r), repeat)
    fast = res[True][1]
    n = len(fast.fragment["program fragment"])
    _row(f"FlexASR linear call 64->64, 16 timesteps ({n} MMIO cmds, {fast.child_steps} child steps)",
         res[False][0], res[True][0], np.array_equal(res[False][1].codes, fast.codes))


def _vta_dense(n: int, k: int, m: int, seed: int, **kw):
    from ila.models.vta.driver import dense_program
    rng = np.random.default_rng(seed)
    return dense_program(rng.integers(-128, 128, (n, k)), rng.integers(-128, 128, (m, k)), **kw)


VTA_UNITS = {"vta_load_uop": "LOAD UOP DMA", "vta_load_wgt": "LOAD WGT DMA", "vta_load_inp": "LOAD INP DMA",
             "vta_gemm": "GEMM reset + accumulate", "vta_alu_shr": "ALU SHR (imm)", "vta_alu_min": "ALU MIN (imm)",
             "vta_alu_max": "ALU MAX (imm)", "vta_store": "STORE DMA"}


def vta_units(repeat):
    """Time per VTA unit (the commands of its instructions, each run alone) in a dense program."""
    from ila.models.vta.driver import dram_write_table, instruction_commands
    from ila.models.vta.model import build_vta
    prog = _vta_dense(64, 576, 64, 4, shift=8, clip=True)
    cmds = instruction_commands(prog)
    res = {}
    for summaries in (False, True):
        sim = Simulator(build_vta(prog.cfg), summaries=summaries)
        best: dict = {}
        for _ in range(repeat if summaries else 1):
            sim.reset()
            sim.run(dram_write_table(prog.dram, upto=prog.out_addr))
            spent: dict = {}
            for c in cmds:
                before = sim.child_steps
                t0 = time.perf_counter()
                name = sim.step(c)
                dt = time.perf_counter() - t0
                t, steps = spent.get(name, (0.0, 0))
                spent[name] = (t + dt, steps + sim.child_steps - before)
            best = {k: min(v, best.get(k, v)) for k, v in spent.items()}
        res[summaries] = (best, sim.memory("vta_acc_mem").copy(), sim.memory("vta_dram").copy())
    same = all(np.array_equal(a, b) for a, b in zip(res[False][1:], res[True][1:]))
    for name, label in VTA_UNITS.items():
        (slow, steps), (fast, _) = res[False][0][name], res[True][0][name]
        _row(f"VTA {label}, dense 64x576x64 ({steps} steps)", slow, fast, same)


def vta_call(repeat, shape):
    from ila.models.vta.driver import run_on_ila
    from ila.models.vta.model import build_vta
    prog = _vta_dense(*shape, 5)
    res = {}
    for summaries in (False, True):
        sim = Simulator(build_vta(prog.cfg), summaries=summaries)

        def call():
            sim.reset()
            run_on_ila(prog, sim=sim)
            return sim.memory("vta_acc_mem").copy(), sim.child_steps

        res[summaries] = _best(call, repeat if summaries else 1)
    steps = res[False][1][1]
    _row(f"VTA dense call {shape[0]}x{shape[1]}x{shape[2]}, run_on_ila ({steps} steps)", res[False][0],
         res[True][0], np.array_equal(res[False][1][0], res[True][1][0]))


def main():
    from ila.cli import ArgumentParser, check_int
    from ila.errors import D2AError, report
    ap = ArgumentParser(prog="python -m benchmarks.summary_speed", description=__doc__.splitlines()[0])
    ap.add_argument("repeat", nargs="?", type=int, default=3)
    repeat = ap.parse_args().repeat
    try:
        check_int("repeat", repeat, 1, 2 ** 63 - 1)     # a count the machine's integers hold
    except D2AError as exc:
        sys.exit(report(exc))
    print(f"{'':58} {'instructions':>12} {'summaries':>12} {'ratio':>8}")
    hlscnn_loop(repeat, 16)
    hlscnn_loop(repeat, 8)
    flexasr_child_loop(repeat, ("PE_CORE_CHILD",), "PE-core loop (16 loops)", True)
    flexasr_child_loop(repeat, ("Child_GB_Control",), "GB-control transfers (16 loops)", True)
    flexasr_child_loop(repeat, FLEXASR_CHILDREN, "whole run (all children)", False)
    hlscnn_call(repeat)
    flexasr_linear(repeat)
    vta_units(repeat)
    vta_call(repeat, (64, 576, 64))
    vta_call(repeat, (35, 650, 384))


if __name__ == "__main__":
    main()
