"""Table 2 (VTA and HLSCNN rows): Frobenius relative error of the ILA simulators against the IR
references, mean and standard deviation over N random inputs, beside the paper's numbers.

* VTA GEMM: int8 dense ``x[16,64] @ w[64,64].T`` on the VTA ILA (blocked GEMM, requantising
  shift by 8 and clip to int8) against the int8/int32 numpy reference with the same requantisation.
* HLSCNN Conv2D: 3x3 convolution, 16 -> 16 channels, 16x16 input with host padding 1 (a ResNet-20
  style layer), activations ~ N(0, 1), weights ~ N(0, 2/fan_in), on the 8-bit-weight (original)
  and the 16-bit-weight (updated) design, against float32 on the original inputs ("vs float") and
  against float32 on the quantised inputs and weights the accelerator received ("vs quantised in",
  which isolates the accelerator's own arithmetic).

Usage: python benchmarks/table2_vta_hlscnn.py [N]   (default 100)
"""
from __future__ import annotations


import time

import numpy as np

from ila.models.hlscnn.driver import prepare_conv2d, run_job
from ila.models.hlscnn.reference import conv2d_float_ref
from ila.models.vta.driver import dense_program, result, run_on_ila
from ila.models.vta.reference import dense_ref
from ila.numerics.fixed_point import ACT, relative_error, weight_format

PAPER = {"VTA GEMM": (0.00, 0.00), "HLSCNN Conv2D": (1.78, 0.16)}


def vta_case(rng):
    x = rng.integers(-128, 128, (16, 64))
    w = rng.integers(-128, 128, (64, 64))
    prog = dense_program(x, w, shift=8, clip=True)
    out = result(prog, run_on_ila(prog).memory("vta_dram"))
    ref = dense_ref(x, w, shift=8, clip=True)
    e = relative_error(ref, out)
    return e, e


def hlscnn_case(rng, bits):
    x = rng.standard_normal((1, 16, 16, 16))
    w = rng.standard_normal((16, 3, 3, 16)) * np.sqrt(2 / (9 * 16))
    job = prepare_conv2d(x, w, padding=1, weight_bits=bits)
    raw, _ = run_job(job)
    out = ACT.to_float(raw)
    ref = conv2d_float_ref(x, w, padding=1)
    xq = ACT.to_float(job.x_raw)[None]
    wq = weight_format(bits).to_float(job.w_raw)
    ref_q = conv2d_float_ref(xq, wq)
    return relative_error(ref, out), relative_error(ref_q, out)


def main(n: int = 100):
    rng = np.random.default_rng(2022)
    print(f"VTA / HLSCNN simulation-based validation, {n} random inputs per row")
    print(f"{'Accelerator':8} {'Operation':22} {'vs ref: mean':>13} {'std':>7} {'vs quantised in: mean':>22} "
          f"{'std':>7}   {'paper mean':>10} {'std':>6}   time/run")
    rows = [("VTA", "GEMM (int8, 16x64x64)", "VTA GEMM", vta_case),
            ("HLSCNN", "Conv2D, 8-bit weights", "HLSCNN Conv2D", lambda r: hlscnn_case(r, 8)),
            ("HLSCNN", "Conv2D, 16-bit weights", "HLSCNN Conv2D", lambda r: hlscnn_case(r, 16))]
    for acc, op, key, fn in rows:
        fn(np.random.default_rng(0))                       # build (and cache) the model outside the timing
        e1, e2 = [], []
        t0 = time.perf_counter()
        for _ in range(n):
            a, b = fn(rng)
            e1.append(a)
            e2.append(b)
        dt = (time.perf_counter() - t0) / n
        e1, e2 = 100 * np.array(e1), 100 * np.array(e2)
        pm, ps = PAPER[key]
        print(f"{acc:8} {op:22} {e1.mean():12.2f}% {e1.std():6.2f}% {e2.mean():21.2f}% {e2.std():6.2f}%"
              f"   {pm:9.2f}% {ps:5.2f}%   {dt * 1e3:7.1f} ms")
    print("VTA reference: int8 inputs/weights, int32 accumulation, >> 8, clip to int8 (exact match expected).")
    print("HLSCNN 'vs ref' = float32 conv2d on the original float inputs (the paper's IR reference).")


if __name__ == "__main__":
    import sys

    from ila.cli import ArgumentParser, check_count
    from ila.errors import D2AError, report
    _ap = ArgumentParser(prog="python -m benchmarks.table2_vta_hlscnn",
                                  description="VTA / HLSCNN simulation-based validation (Table 2 rows)")
    _ap.add_argument("samples", nargs="?", type=int, default=100, help="random inputs per row")
    _n = _ap.parse_args().samples
    try:
        check_count("samples", _n, item_bytes=64, what="samples")     # two errors kept per sample
    except D2AError as exc:
        sys.exit(report(exc))
    main(_n)
