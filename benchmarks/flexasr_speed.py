"""Simulation time of FlexASR operations end to end (assembler + MMIO stream + ILA simulator).

Usage: python benchmarks/flexasr_speed.py
"""
from __future__ import annotations


import time

import numpy as np

from ila.models.flexasr import driver as D


def timeit(fn, reps=5):
    fn()                                   # warm up (model build, compilation)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        res = fn()
        best = min(best, time.perf_counter() - t0)
    return best, res


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    b = (rng.standard_normal(64) / 8).astype(np.float32)
    wi = (rng.standard_normal((256, 64)) / 8).astype(np.float32)
    wh = (rng.standard_normal((256, 64)) / 8).astype(np.float32)
    bl = (rng.standard_normal(256) / 8).astype(np.float32)
    enc = rng.standard_normal((64, 64)).astype(np.float32)
    cases = [("maxpool 16x64", lambda: D.run_pool(x, "max")),
             ("linear 64->64, 16 timesteps", lambda: D.run_linear(x, w, b)),
             ("LSTM 64->64, 16 timesteps", lambda: D.run_lstm(x, wi, wh, bl)),
             ("layernorm 16x64", lambda: D.run_layernorm(x)),
             ("attention 64 timesteps x 64", lambda: D.run_attention(enc, x[0])),
             ("zero padding 16x64 [4, 12)", lambda: D.run_zero_padding(x, 4, 12))]
    for name, fn in cases:
        dt, res = timeit(fn)
        n = len(res.fragment["program fragment"])
        print(f"{name:32} {dt * 1e3:8.1f} ms   ({n} MMIO commands, {res.child_steps} child instructions)")


if __name__ == "__main__":
    from ila.cli import ArgumentParser
    ArgumentParser(prog="python -m benchmarks.flexasr_speed", description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    main()
