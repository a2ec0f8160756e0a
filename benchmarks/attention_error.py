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
   AdaptivFloat output);
5. the tolerance by shape: in every cell of the mapping's tolerance table (H band x T band; the
   band H >= 64 measured at H = 64, 128 and 256), random and edge inputs at shapes drawn uniformly
   from the T band, with two derivation seeds (``--seed``, ``--seed`` + 1, pooled) and a held-out
   seed (``--seed`` + 2). The tolerance a cell needs is MARGIN x its worst derivation error, rounded
   up to 0.5 %, then made monotone (never smaller at a smaller H band or in a later T band); the
   report says whether the mapping's TOLERANCES table equals it, and how the held-out inputs fare.

Every input is checked against the mapping's data conditions first; refused inputs are counted.
Writes ``paper_results/attention_error.md``.

Usage: python -m benchmarks.attention_error [--samples N] [--sweep M] [--tol-shapes K] [--jobs J]
       [--seed S] [--out PATH]
"""
from __future__ import annotations

import math
import multiprocessing
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
KINDS = ["random", "zero rows", "dec -0", "saturating enc"]
ROUND = 0.005               # tolerances are rounded up to 0.5 %
WORKER_BYTES = 256 << 20    # the least memory a worker process of section 5 needs (--jobs bound)


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


def _shape_errors(m, shape, rng):
    """(input kind, error or None when a data condition refuses it) for random_inputs and each edge
    case at ``shape``."""
    cands = [m.random_inputs(shape, rng)] + m.edge_inputs(shape, rng)
    return [(kind, _checked_error(m, shape, inputs)) for kind, inputs in zip(KINDS, cands)]


def sims(m, samples, seed):
    rows = []
    for T, H in SHAPES:
        rep = run_sim(m, shape={"T": T, "H": H}, samples=samples, seed=seed)
        rows.append((f"{T}x{H}", rep))
        print(f"sim {T}x{H}: {_stats(rep.errors)}  {'PASS' if rep.passed else 'FAIL'}", flush=True)
    return rows


def sweep(m, n, seed):
    """n shapes from the fuzz domain; random_inputs and each edge case at each shape. Returns
    (errors by H, errors by input kind, refused count); each error as (error, tolerance at its shape)."""
    rng = np.random.default_rng(seed)
    by_h: dict[int, list[tuple[float, float]]] = {}
    by_kind: dict[str, list[tuple[float, float]]] = {}
    refused = 0
    for _ in range(n):
        shape = {"T": int(rng.integers(1, 41)), "H": 16 * int(rng.integers(1, 5))}
        tol = m.tolerance_at(shape)
        for kind, err in _shape_errors(m, shape, rng):
            if err is None:
                refused += 1
                continue
            by_h.setdefault(shape["H"], []).append((err, tol))
            by_kind.setdefault(kind, []).append((err, tol))
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


def _tol_chunk(job):
    """Errors of random and edge inputs at n shapes {T uniform in [lo, hi], H}; one worker's share."""
    H, lo, hi, n, seed, chunk = job
    m = A.MAPPING
    rng = np.random.default_rng([seed, H, lo, chunk])
    errs, refused, worst = [], 0, (-1.0, 0, "")
    for _ in range(n):
        shape = {"T": int(rng.integers(lo, hi + 1)), "H": H}
        for kind, err in _shape_errors(m, shape, rng):
            if err is None:
                refused += 1
                continue
            errs.append(err)
            if err > worst[0]:
                worst = (err, shape["T"], kind)
    return H, lo, errs, refused, worst


def tolerance_cells(shapes: int):
    """(H band, T band index, H measured, shapes drawn) of section 5: every H band at its smallest
    H with ``shapes`` shapes in the first T band and shapes / 6 in the second; the band H >= 64
    also at H = 128 and 256 with shapes / 6 and shapes / 15."""
    cells = []
    for k in range(len(A.T_BANDS)):
        for hb in sorted(A.TOLERANCES):
            cells.append((hb, k, hb, shapes if k == 0 else max(1, shapes // 6)))
        for H in (128, 256):
            cells.append((64, k, H, max(1, shapes // 6) if k == 0 else max(1, shapes // 15)))
    return cells


DERIVATION = (0, 1)          # section 5: derivation seeds are --seed + these; the held-out seed is --seed + HELD_OUT
HELD_OUT = 2


def tolerance_section(shapes: int, seed: int, jobs: int, chunk: int = 25):
    """Section 5: for the derivation seeds and the held-out seed, the errors of every cell of
    ``tolerance_cells``. Returns {(seed, H, T band index): (errors, refused, worst)}."""
    work = []
    for sd in [seed + d for d in DERIVATION] + [seed + HELD_OUT]:
        for hb, k, H, n in tolerance_cells(shapes):
            lo, hi = A.T_BANDS[k]
            for c in range(math.ceil(n / chunk)):
                work.append((sd, k, (H, lo, hi, min(chunk, n - c * chunk), sd, c)))
    out: dict = {}
    t0 = time.perf_counter()
    with multiprocessing.Pool(jobs) as pool:
        for (sd, k, job), (H, _, errs, refused, worst) in zip(work, pool.imap(_tol_chunk, [w[2] for w in work])):
            e, r, w = out.get((sd, H, k), ([], 0, (-1.0, 0, "")))
            out[(sd, H, k)] = (e + errs, r + refused, max(w, worst))
    print(f"tolerance cells: {len(work)} chunks in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def needed_tolerance(worst: float) -> float:
    """MARGIN x worst, rounded up to ROUND (0.5 %)."""
    return math.ceil(round(A.MARGIN * worst / ROUND, 6)) * ROUND


def tolerance_rows(res, shapes: int, seed: int):
    """Per (H band, T band): the measured cells, the derivation worst (both derivation seeds), the
    tolerance it needs (monotone: at least the need of every larger H band and of every earlier T
    band), the module's tolerance and the held-out worst. Also returns whether the module's table
    equals the needed tolerances."""
    cells = tolerance_cells(shapes)
    hbs = sorted(A.TOLERANCES)
    raw = {}
    for k in range(len(A.T_BANDS)):
        for hb in hbs:
            Hs = [H for b, kk, H, _ in cells if b == hb and kk == k]
            der = [res[(seed + d, H, k)] for d in DERIVATION for H in Hs]
            held = [res[(seed + HELD_OUT, H, k)] for H in Hs]
            raw[(hb, k)] = (Hs, der, held)
    need = {}
    for hb in reversed(hbs):                     # larger H bands first, so the envelope sees them
        for k in range(len(A.T_BANDS)):
            own = needed_tolerance(max(w for *_, w in raw[(hb, k)][1])[0])
            need[(hb, k)] = max([own] + [need[(hb2, k)] for hb2 in hbs if hb2 > hb] +
                                [need[(hb, k2)] for k2 in range(k)])
    rows, matches = [], True
    for k, (lo, hi) in enumerate(A.T_BANDS):
        for hb in hbs:
            Hs, der, held = raw[(hb, k)]
            have = A.TOLERANCES[hb][k]
            matches &= math.isclose(need[(hb, k)], have)
            der_errs = np.concatenate([np.asarray(e) for e, *_ in der])
            held_errs = np.concatenate([np.asarray(e) for e, *_ in held])
            rows.append(dict(h_band=hb, t_band=(lo, hi), Hs=Hs, inputs=der_errs.size,
                             refused=sum(r for _, r, _ in der), mean=float(der_errs.mean()),
                             worst=max(w for *_, w in der), need=need[(hb, k)], have=have,
                             held_worst=max(w for *_, w in held), held_inputs=held_errs.size,
                             held_refused=sum(r for _, r, _ in held),
                             held_above=int((held_errs > have).sum())))
    return rows, matches


def render(m, sim_rows, by_h, by_kind, refused, n_sweep, other, decomp, tol, argv, samples, seed) -> str:
    cmd = "python -m benchmarks.attention_error" + ("" if not argv else " " + " ".join(argv))
    L = [
        "# flexasr.attention: error by shape and data, and where it comes from",
        "",
        f"Produced by `{cmd}` (seed {seed}; Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}).",
        "Error = ‖Out_ref − Out_acc‖_F / ‖Out_ref‖_F per input, reference float32 on the original inputs. "
        f"Data: the mapping's `random_inputs` (a decoder state matching one encoder state, score {A.GAP:g}) "
        "unless stated; every input is checked against the mapping's data conditions first.",
        "Mapping tolerance: by shape (`tolerance_for`, the table TOLERANCES derived in section 5); "
        f"{100 * m.tolerance_at(m.default_shape):.1f}% at the default shape {format_shape(m.default_shape)}.",
        "",
        f"## 1. `run_sim`, {samples} inputs per shape",
        "",
        "| Shape (TxH) | Mean | Std | Max | Tolerance | Within tolerance |",
        "|---|---|---|---|---|---|",
    ]
    for sh, rep in sim_rows:
        L.append(f"| {sh} | {_stats(rep.errors)} | {100 * rep.tolerance:.1f}% | {'yes' if rep.passed else 'NO'} |")
    L += ["", f"## 2. Fuzz domain: {n_sweep} shapes (T in 1..40, H in 16..64), random and edge inputs "
              f"({refused} refused by a data condition)", "",
          "| Subset | Inputs | Mean | Std | Max | Above tolerance (at its shape) |", "|---|---|---|---|---|---|"]
    for label, groups in ((lambda h: f"H = {h}", {h: by_h[h] for h in sorted(by_h)}), (str, by_kind)):
        for key, v in groups.items():
            e, t = np.asarray(v).T
            L.append(f"| {label(key)} | {e.size} | {_stats(e)} | {int((e > t).sum())} |")
    oe, oref = other
    L += ["", "## 3. enc, dec ~ N(0, 1) at 64x64 (scores with std 8)", "",
          f"{len(oe)} inputs accepted, {oref} refused; error mean | std | max: {_stats(oe)}.", "",
          "## 4. Decomposition (cumulative: each column adds stages of the unit)", "",
          "| Shape | Exact softmax on quantised enc, dec | + unit's probabilities | Full run |",
          "|---|---|---|---|"]
    for sh, cols in decomp:
        L.append(f"| {format_shape(sh)} | " + " | ".join(
            f"{100 * np.mean(c):.2f}% (max {100 * np.max(c):.2f}%)" for c in cols) + " |")
    rows, matches, shapes = tol
    L += ["", "## 5. Tolerance by shape: derivation and held-out check", "",
          f"Shapes drawn uniformly from each T band ({shapes} shapes per seed in T band 1 at each H band's smallest H, "
          "fewer elsewhere; 4 inputs per shape: random and the 3 edge cases). Derivation seeds "
          f"{', '.join(str(seed + d) for d in DERIVATION)} (pooled), held-out seed {seed + HELD_OUT}. Needed tolerance "
          f"= MARGIN ({A.MARGIN:g}) x derivation max, rounded up to {100 * ROUND:g}%, and at least the needed "
          "tolerance of every larger H band and of the earlier T band.", "",
          "| H band | T band | H measured | Inputs (refused) | Mean | Max (at T, input) | Needed tolerance | "
          "TOLERANCES | Held-out inputs (refused) | Held-out max (at T, input) | Held-out above |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hb = f"{r['h_band']}" if r["h_band"] < 64 else ">= 64"
        (w, wt, wk), (hw, hwt, hwk) = r["worst"], r["held_worst"]
        L.append(f"| {hb} | {r['t_band'][0]}..{r['t_band'][1]} | {', '.join(map(str, r['Hs']))} | "
                 f"{r['inputs']} ({r['refused']}) | {100 * r['mean']:.2f}% | {100 * w:.2f}% (T = {wt}, {wk}) | "
                 f"{100 * r['need']:.1f}% | {100 * r['have']:.1f}% | {r['held_inputs']} ({r['held_refused']}) | "
                 f"{100 * hw:.2f}% (T = {hwt}, {hwk}) | {r['held_above']} |")
    L += ["", f"The mapping's TOLERANCES table {'equals' if matches else 'DIFFERS FROM'} the needed tolerances "
              "derived here."]
    L += ["", "Notes (written by the benchmark, not measured):",
          "- The unit's probabilities are floor(16 e_t) / floor(16 sum_exp) truncated to 8 fraction bits "
          "(GBAttentionDiv), e_t = exp(s_t - max): every exponential is resolved in steps of 1/16, so a "
          "timestep with e_t < 1/16 gets probability 0 and one with e_t in (1/16, 1) loses up to 1/16 of "
          "it. With one dominant timestep this costs little (section 4, 64x64); when a second timestep "
          "competes (frequent with random keys in H = 16 dimensions or many timesteps, rarer at larger H) "
          "it dominates (the H = 16 rows).",
          "- Column 1 of section 4 isolates the 8-bit AdaptivFloat encoding of enc and dec; column 2 adds "
          "the division's 4-fraction-bit operands, its 8-bit quotient and the AdaptivFloat probabilities.",
          "- Why the error grows as H shrinks (section 5): with dec a noisy copy of encoder row k scaled to score "
          f"{A.GAP:g}, the other scores are about N(0, {A.GAP:g}^2 (1 + {A.NOISE:g}^2) / H): standard deviation "
          + ", ".join(f"{A.GAP * math.sqrt((1 + A.NOISE ** 2) / h):.1f} at H = {h}" for h in (16, 32, 48, 64))
          + f". A timestep t competes with the attended one k when exp(s_t - s_k) >= 1/16, the quantum of the "
          f"unit's exponentials (s_t >= {A.GAP:g} - ln 16 = {A.GAP - math.log(16):.1f}): a "
          + ", ".join(f"{(A.GAP - math.log(16)) / (A.GAP * math.sqrt((1 + A.NOISE ** 2) / h)):.1f}-sigma event at "
                      f"H = {h}" for h in (16, 64))
          + "; the more timesteps, the likelier one (the T bands). Its probability is then off by up to "
          "1/16 / sum_exp, and the output by that weight times the distance between the two encoder rows.",
          "- The scores' tails are heavier than this Gaussian estimate (each is a sum of products), so a competing "
          "timestep is rare at H >= 64 but does occur in thousands of inputs; it then costs up to about 1/16 of "
          "the attended weight, and the worst errors of section 5 at H >= 64 (several times the typical error) "
          "are such events. The tolerance covers them; it is a statement about this data model (a peaked "
          "attention): data within the preconditions but flatter errs more (section 3).",
          ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from ila.cli import ArgumentParser
    from ila.errors import D2AError, report
    p = ArgumentParser(prog="python -m benchmarks.attention_error")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--sweep", type=int, default=500, help="fuzz-domain shapes (4 inputs each)")
    p.add_argument("--tol-shapes", type=int, default=1500,
                   help="section 5: shapes per (H band, T band 1) cell and seed (fewer in the other cells)")
    p.add_argument("--jobs", type=int, default=2, help="section 5: worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "paper_results" /
                                        "attention_error.md"))
    a = p.parse_args(argv)
    try:                                    # every argument checked before any work
        _check_arguments(a)
        return _main(a, argv)
    except D2AError as exc:
        return report(exc)


def _check_arguments(a) -> None:
    from ila.cli import check_count, check_int, output_file
    for opt in ("samples", "sweep", "tol_shapes"):
        check_count(f"--{opt.replace('_', '-')}", getattr(a, opt), item_bytes=64, what="samples")
    check_count("--jobs", a.jobs, item_bytes=WORKER_BYTES, what="worker processes")
    check_int("--seed", a.seed, 0)
    output_file(a.out, "--out", parents=False)


def _main(a, argv) -> int:
    m = A.MAPPING
    sim_rows = sims(m, a.samples, a.seed)
    by_h, by_kind, refused = sweep(m, a.sweep, a.seed)
    other = other_data(m, a.samples, a.seed)
    decomp = [(sh, decomposition(m, sh, a.samples, a.seed)) for sh in ({"T": 64, "H": 64}, {"T": 40, "H": 16})]
    rows, matches = tolerance_rows(tolerance_section(a.tol_shapes, a.seed, a.jobs), a.tol_shapes, a.seed)
    for r in rows:
        print(f"H band {r['h_band']}, T {r['t_band']}: max {100 * r['worst'][0]:.2f}% -> needs "
              f"{100 * r['need']:.1f}% (TOLERANCES {100 * r['have']:.1f}%); held-out max "
              f"{100 * r['held_worst'][0]:.2f}%, {r['held_above']} above", flush=True)
    pathlib.Path(a.out).write_text(render(m, sim_rows, by_h, by_kind, refused, a.sweep, other, decomp,
                                          (rows, matches, a.tol_shapes), argv, a.samples, a.seed))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
