"""Table 2 (FlexASR rows): Frobenius relative error of the ILA simulator vs the float32 reference,
mean and standard deviation over N random inputs per operation, beside the paper's numbers.

Two references: "vs float" runs the float32 reference on the original inputs; "vs quantised input"
runs it on the AdaptivFloat-quantised (dequantised) inputs the accelerator actually received, which
isolates the accelerator's own arithmetic (MaxPool is then exactly 0, as in the paper).

Inputs are standard normal throughout (weights scaled by 1/8, LayerNorm gamma = 1 + N/8, beta = N/8).
See NOTES (printed after the table) for why LayerNorm and Attention differ from the paper.

Usage: python benchmarks/flexasr_table2.py [N]   (default 100)
"""
from __future__ import annotations


import time

import numpy as np

from ila.models.flexasr import reference as ref
from ila.models.flexasr import driver as D
from ila.numerics import adaptivfloat as af

PAPER = {"LinearLayer": (0.84, 0.29), "LSTM": (1.21, 0.19), "LayerNorm": (0.27, 0.20),
         "MaxPool": (0.00, 0.0), "MeanPool": (1.79, 0.28), "Attention": (4.22, 0.09)}


NOTES = {
    "LayerNorm": "the model (like flexnlp-ila) sums the squares of each 16-value vector in a 20-bit ACT register "
                 "(range +-32) before the 24-bit timestep sum: a vector with sum x^2 >= 32 wraps and ruins its "
                 "timestep (with N(0,1) inputs ~1 vector in 100); without a wrap the error is the ~2.4% "
                 "AdaptivFloat<8,3> output rounding (the output reuses the input's bias register)",
    "Attention": "GBAttentionDiv reduces exp and sum_exp to ac_fixed<6,2> (4 fraction bits, integer part modulo "
                 "4), so probabilities below 1/16 vanish and sum_exp >= 4 wraps: with N(0,1) enc/dec the scores "
                 "(std 8) give a peaked softmax, sum_exp < 4; with dec/8 (scaled dot product) sum_exp wraps "
                 "and the error is ~250%",
}


def _dq(res, name):
    q, b = res.inputs[name]
    return af.dequantize(q, b)


def case(op: str, rng):
    if op in ("MaxPool", "MeanPool"):
        x = rng.standard_normal((16, 64)).astype(np.float32)
        mode = "max" if op == "MaxPool" else "mean"
        res = D.run_pool(x, mode)
        f = ref.maxpool if mode == "max" else ref.meanpool
        return f(x), f(_dq(res, "x")), res.out
    if op == "LinearLayer":
        x = rng.standard_normal((16, 64)).astype(np.float32)
        w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
        b = (rng.standard_normal(64) / 8).astype(np.float32)
        res = D.run_linear(x, w, b)
        return ref.linear_layer(x, w, b), ref.linear_layer(_dq(res, "x"), _dq(res, "w"), _dq(res, "b")), res.out
    if op == "LSTM":
        T, I, H = 8, 64, 64
        x = rng.standard_normal((T, I)).astype(np.float32)
        wi = (rng.standard_normal((4 * H, I)) / 8).astype(np.float32)
        wh = (rng.standard_normal((4 * H, H)) / 8).astype(np.float32)
        b = (rng.standard_normal(4 * H) / 8).astype(np.float32)
        res = D.run_lstm(x, wi, wh, b)
        xq = af.dequantize(*af.quantize(x))
        wiq, whq, bq = (af.dequantize(*af.quantize(a)) for a in (wi, wh, b))
        return ref.lstm_layer(x, wi, wh, b), ref.lstm_layer(xq, wiq, whq, bq), res.out
    if op == "LayerNorm":
        T, H = 16, 64
        x = rng.standard_normal((T, H)).astype(np.float32)
        g = (1 + rng.standard_normal(H) / 8).astype(np.float32)
        b = (rng.standard_normal(H) / 8).astype(np.float32)
        res = D.run_layernorm(x, g, b)
        return ref.layernorm(x, g, b), ref.layernorm(_dq(res, "x"), _dq(res, "gamma"), _dq(res, "beta")), res.out
    if op == "Attention":
        T, H = 64, 64
        enc = rng.standard_normal((T, H)).astype(np.float32)
        dec = rng.standard_normal(H).astype(np.float32)
        res = D.run_attention(enc, dec)
        return ref.attention(enc, dec), ref.attention(_dq(res, "enc"), _dq(res, "dec")), res.out
    raise NotImplementedError(op)


def main(n: int = 100):
    rng = np.random.default_rng(2022)
    print(f"FlexASR simulation-based validation, {n} random inputs per operation")
    print(f"{'Operation':12} {'vs float: mean':>15} {'std':>7} {'vs quantised in: mean':>22} {'std':>7}"
          f"   {'paper mean':>10} {'std':>6}   time/run")
    for op in ("LinearLayer", "LSTM", "LayerNorm", "MaxPool", "MeanPool", "Attention"):
        pm, ps = PAPER[op]
        try:
            e1, e2 = [], []
            t0 = time.perf_counter()
            for _ in range(n):
                r_float, r_q, acc = case(op, rng)
                e1.append(ref.frobenius_rel_error(r_float, acc))
                e2.append(ref.frobenius_rel_error(r_q, acc))
            dt = (time.perf_counter() - t0) / n
            e1, e2 = 100 * np.array(e1), 100 * np.array(e2)
            print(f"{op:12} {e1.mean():14.2f}% {e1.std():6.2f}% {e2.mean():21.2f}% {e2.std():6.2f}%"
                  f"   {pm:9.2f}% {ps:5.2f}%   {dt * 1e3:7.1f} ms")
        except NotImplementedError:
            print(f"{op:12} {'(not modelled yet)':>53}   {pm:9.2f}% {ps:5.2f}%")
    print()
    for op, note in NOTES.items():
        print(f"{op}: {note}")


if __name__ == "__main__":
    import sys

    from ila.cli import ArgumentParser, check_count
    from ila.errors import D2AError, report
    _ap = ArgumentParser(prog="python -m benchmarks.flexasr_table2",
                                  description="FlexASR simulation-based validation (Table 2 rows)")
    _ap.add_argument("samples", nargs="?", type=int, default=100, help="random inputs per operation")
    _n = _ap.parse_args().samples
    try:
        check_count("samples", _n, item_bytes=64, what="samples")     # two errors kept per sample
    except D2AError as exc:
        sys.exit(report(exc))
    main(_n)
