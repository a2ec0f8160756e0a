"""Where the error of ``flexasr.attention`` comes from, and how it depends on shape and data.

Measures (seeded, through the mapping's own runners; reference float32 on the original inputs;
error = Frobenius relative error ‖ref − acc‖_F / ‖ref‖_F per input):

1. ``verify.simval.run_sim`` (100 inputs, the mapping's ``random_inputs``) at the default shape
   64x64 and at other shapes, against the mapping's TOLERANCE;
2. the fuzz domain (``shape_strategy``: T in 1..40, H in {16, 32, 48, 64}) with ``random_inputs``
   and every ``edge_inputs`` case, by H;
3. another data model within the data preconditions: enc, dec ~ N(0, 1) (scores with std sqrt(H));
4. a decomposition at a few shapes: the error of the exact softmax on the AdaptivFloat-quantised
   enc and dec (input quantisation alone), of the unit's probabilities (as read back) applied to
   the quantised enc in float64 (adds GBAttentionDiv's 4-fraction-bit operands, the 8-bit quotient
   and the AdaptivFloat probabilities), and of the full run (adds the accumulation and the
   AdaptivFloat output).

Every input is checked against the mapping's data conditions first; refused inputs are counted.
Writes ``paper_results/attention_error.md``.

Usage: python -m benchmarks.attention_error [--samples N] [--sweep M] [--seed S] [--out PATH]
"""
from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import time

import numpy as np

from ila.models.flexasr.driver import run_attention
from ila.numerics import adaptivfloat as af
from mappings.base import MappingError, format_shape, frobenius_relative_error
from mappings.flexasr import attention as A
from mappings.flexasr import common as F
from verify.simval import run_sim

SHAPES = [(64, 64), (16, 16), (40, 16), (128, 16), (40, 32), (256, 32), (16, 64), (256, 64)]


def _stats(errs) -> str:
    e = 100 * np.asarray(errs)
    return f"{e.mean():.2f}% | {e.std():.2f}% | {e.max():.2f}%" if e.size else "– | – | –"


def _checked_error(m, shape, inputs):
    """Frobenius relative error of one input, or None when a data condition refuses it."""
    try:
        m.check_data(shape, inputs)
    except MappingError:
        return None
    return frobenius_relative_error(m.reference(shape, inputs), m.run_accelerator(shape, inputs))


def sims(m, samples, seed):
    rows = []
    for T, H in SHAPES:
        rep = run_sim(m, shape={"T": T, "H": H}, samples=samples, seed=seed)
        rows.append((f"{T}x{H}", rep))
        print(f"sim {T}x{H}: {_stats(rep.errors)}  {'PASS' if rep.passed else 'FAIL'}", flush=True)
    return rows


def sweep(m, n, seed):
    """n shapes from the fuzz domain; random_inputs and each edge case at each shape."""
    rng = np.random.default_rng(seed)
    by_h: dict[int, list[float]] = {}
    by_kind: dict[str, list[float]] = {}
    refused = 0
    kinds = ["random", "zero rows", "dec -0", "saturating enc"]
    for _ in range(n):
        shape = {"T": int(rng.integers(1, 41)), "H": 16 * int(rng.integers(1, 5))}
        cands = [m.random_inputs(shape, rng)] + m.edge_inputs(shape, rng)
        for kind, inputs in zip(kinds, cands):
            err = _checked_error(m, shape, inputs)
            if err is None:
                refused += 1
                continue
            by_h.setdefault(shape["H"], []).append(err)
            by_kind.setdefault(kind, []).append(err)
    print(f"sweep: {n} shapes, refused {refused}", flush=True)
    return by_h, by_kind, refused


def other_data(m, samples, seed, shape=(64, 64)):
    """enc, dec ~ N(0, 1): a less controlled softmax that still mostly satisfies sum_exp < 4."""
    rng = np.random.default_rng(seed)
    T, H = shape
    sh = {"T": T, "H": H}
    errs, refused = [], 0
    for _ in range(samples):
        inputs = {"enc": F.normal(rng, (T, H)), "dec": F.normal(rng, (H,))}
        err = _checked_error(m, sh, inputs)
        if err is None:
            refused += 1
        else:
            errs.append(err)
    return errs, refused


def decomposition(m, shape, samples, seed):
    rng = np.random.default_rng(seed)
    cols = [[], [], []]
    for _ in range(samples):
        inputs = m.random_inputs(shape, rng)
        m.check_data(shape, inputs)
        enc, dec = inputs["enc"], inputs["dec"]
        y = m.reference(shape, inputs)
        s = enc @ dec
        p = np.exp(s - s.max())
        res = run_attention(enc, dec, prob_bias=F.out_bias(p / p.sum()), out_bias=F.out_bias(y))
        eq = af.dequantize(*res.inputs["enc"], np.float64)
        dq = af.dequantize(*res.inputs["dec"], np.float64)
        sq = eq @ dq
        pq = np.exp(sq - sq.max())
        pq /= pq.sum()
        pu = af.dequantize(*res.inputs["p"], np.float64)
        cols[0].append(frobenius_relative_error(y, pq @ eq))
        cols[1].append(frobenius_relative_error(y, pu @ eq))
        cols[2].append(frobenius_relative_error(y, res.out))
    return cols


def render(m, sim_rows, by_h, by_kind, refused, n_sweep, other, decomp, argv, samples, seed) -> str:
    cmd = "python -m benchmarks.attention_error" + ("" if not argv else " " + " ".join(argv))
    L = [
        "# flexasr.attention: error by shape and data, and where it comes from",
        "",
        f"Produced by `{cmd}` (seed {seed}; Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}).",
        "Error = ‖Out_ref − Out_acc‖_F / ‖Out_ref‖_F per input, reference float32 on the original inputs. "
        f"Data: the mapping's `random_inputs` (a decoder state matching one encoder state, score {A.GAP:g}) "
        "unless stated; every input is checked against the mapping's data conditions first.",
        f"Mapping TOLERANCE: {100 * m.tolerance:.1f}%.",
        "",
        f"## 1. `run_sim`, {samples} inputs per shape",
        "",
        "| Shape (TxH) | Mean | Std | Max | Within tolerance |",
        "|---|---|---|---|---|",
    ]
    for sh, rep in sim_rows:
        L.append(f"| {sh} | {_stats(rep.errors)} | {'yes' if rep.passed else 'NO'} |")
    L += ["", f"## 2. Fuzz domain: {n_sweep} shapes (T in 1..40, H in 16..64), random and edge inputs "
              f"({refused} refused by a data condition)", "",
          "| Subset | Inputs | Mean | Std | Max | Above tolerance |", "|---|---|---|---|---|---|"]
    for h in sorted(by_h):
        e = np.asarray(by_h[h])
        L.append(f"| H = {h} | {e.size} | {_stats(e)} | {int((e > m.tolerance).sum())} |")
    for k, v in by_kind.items():
        e = np.asarray(v)
        L.append(f"| {k} | {e.size} | {_stats(e)} | {int((e > m.tolerance).sum())} |")
    oe, oref = other
    L += ["", "## 3. enc, dec ~ N(0, 1) at 64x64 (scores with std 8)", "",
          f"{len(oe)} inputs accepted, {oref} refused; error mean | std | max: {_stats(oe)}.", "",
          "## 4. Decomposition (cumulative: each column adds stages of the unit)", "",
          "| Shape | Exact softmax on quantised enc, dec | + unit's probabilities | Full run |",
          "|---|---|---|---|"]
    for sh, cols in decomp:
        L.append(f"| {format_shape(sh)} | " + " | ".join(
            f"{100 * np.mean(c):.2f}% (max {100 * np.max(c):.2f}%)" for c in cols) + " |")
    L += ["", "Notes (written by the benchmark, not measured):",
          "- The unit's probabilities are floor(16 e_t) / floor(16 sum_exp) truncated to 8 fraction bits "
          "(GBAttentionDiv), e_t = exp(s_t - max): every exponential is resolved in steps of 1/16, so a "
          "timestep with e_t < 1/16 gets probability 0 and one with e_t in (1/16, 1) loses up to 1/16 of "
          "it. With one dominant timestep this costs little (section 4, 64x64); when a second timestep "
          "competes (frequent with random keys in H = 16 dimensions or many timesteps, rarer at larger H) "
          "it dominates (the H = 16 rows).",
          "- Column 1 of section 4 isolates the 8-bit AdaptivFloat encoding of enc and dec; column 2 adds "
          "the division's 4-fraction-bit operands, its 8-bit quotient and the AdaptivFloat probabilities.",
          ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m benchmarks.attention_error")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--sweep", type=int, default=500, help="fuzz-domain shapes (4 inputs each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "paper_results" /
                                        "attention_error.md"))
    a = p.parse_args(argv)
    m = A.MAPPING
    sim_rows = sims(m, a.samples, a.seed)
    by_h, by_kind, refused = sweep(m, a.sweep, a.seed)
    other = other_data(m, a.samples, a.seed)
    decomp = [(sh, decomposition(m, sh, a.samples, a.seed)) for sh in ({"T": 64, "H": 64}, {"T": 40, "H": 16})]
    pathlib.Path(a.out).write_text(render(m, sim_rows, by_h, by_kind, refused, a.sweep, other, decomp, argv,
                                          a.samples, a.seed))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
