"""Simulator throughput and SMT build time of the ILA DSL core (issue 2, must-show 6).

Prints: top-level instructions per second for a scalar instruction (``INC`` of the example
counter) and for a 16-lane memory instruction (``BUMP``: 16 loads, adds and stores in one
instruction), and the time to build (unroll + lower to pysmt) a 1,000-step path unrolling of the
4-entry FIFO with symbolic data. Aim: at least 20,000 scalar instructions per second.

Run: ``python -m benchmarks.sim_speed``
"""
from __future__ import annotations


import time

from ila.models.examples import counter_with_child, fifo4
from ila.sim import Simulator
from ila.smt import SmtEncoder
from ila.unroll import unroll_path


def rate(sim: Simulator, cmd: dict, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        sim.step(cmd)
    return n / (time.perf_counter() - t0)


def smt_build_seconds(steps: int = 1000, connect: bool = True) -> tuple[float, float]:
    m = fifo4()
    names = ["PUSH" if (k // 3) % 2 == 0 else "POP" for k in range(steps)]
    inputs = [{"push": int(n == "PUSH"), "pop": int(n == "POP")} for n in names]
    t0 = time.perf_counter()
    u = unroll_path(m, names, inputs, connect=connect)
    t1 = time.perf_counter()
    enc = SmtEncoder()
    enc.encode_all(u.conditions + [u.final["count"].eq(0)])
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main() -> None:
    m = counter_with_child()
    sim = Simulator(m)
    scalar = rate(sim, {"cmd": 1, "arg": 0}, 100_000)
    lanes = rate(sim, {"cmd": 3, "arg": 7}, 20_000)
    unroll_s, encode_s = smt_build_seconds()
    print(f"scalar instruction (INC):       {scalar:12,.0f} instructions/s  (aim >= 20,000)")
    print(f"16-lane memory instruction:     {lanes:12,.0f} instructions/s")
    print(f"1,000-step unrolling (fifo4):   {unroll_s:8.3f} s unroll + {encode_s:.3f} s pysmt lowering")


if __name__ == "__main__":
    from ila.cli import ArgumentParser
    ArgumentParser(prog="python -m benchmarks.sim_speed", description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    main()
