"""Application co-simulation with per-invocation statistics (paper §4.4.2)
(``python -m benchmarks.cosim [--model resnet20] [--targets flexasr,hlscnn,vta] [--images N]``).

``--model``: an application (:mod:`compile.applications`), an ``.onnx`` file, or ``light_<name>``:
a model of the onnx wheel's light zoo (``light_resnet50``, ``light_vgg19``, ...) with the seeded
random weights and calibrated batch normalisation of :mod:`benchmarks.frontends` (its large
operators reach the accelerators through the tiling rewrites, :mod:`compile.rewrites.tiling`).

Compiles the application (random weights, seed 0; flexible matching, verified rules only,
certificates from ``paper_results/ledger.json``, missing ones simulated into it), co-simulates it
on N seeded standard-normal inputs with every accelerator call on its ILA simulator, and writes
the per-invocation report of the first input, the whole-model Frobenius relative error against the
host float32 run for every input, and the seconds per input beside the host's (both with one BLAS /
OpenMP thread, :data:`compile.runtime.threads.MEASURE_THREADS`, as Table 4's Dask workers run; after
one untimed warm-up co-simulation that builds the simulators and JIT-compiles the host kernels), to
``paper_results/cosim_<model>.md``.
"""
from __future__ import annotations

import pathlib
import platform
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
LEDGER = ROOT / "paper_results" / "ledger.json"
RUN_BYTES = 1 << 20          # the least memory one co-simulated input's result keeps (its per-invocation report)


def main(argv=None) -> int:
    from ila.cli import ArgumentParser, check_count, output_file
    from ila.errors import D2AError, report
    ap = ArgumentParser(prog="python -m benchmarks.cosim", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet20")
    ap.add_argument("--targets", default="flexasr,hlscnn,vta")
    ap.add_argument("--images", type=int, default=3, help="inputs to co-simulate (>= 1)")
    ap.add_argument("--ledger", default=str(LEDGER))
    ap.add_argument("--max-terms", type=int, default=50_000,
                    help="e-nodes at which saturation stops (the tilings of a large model need more)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds of rewriting")
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args(argv)
    try:                                    # every argument and file checked before any work
        from compile.compiler import selected
        from mappings.registry import names
        from verify.ledger import load
        check_count("--images", args.images, item_bytes=RUN_BYTES, what="co-simulated inputs")
        if args.max_terms < 1 or not args.time_limit > 0:
            from ila.cli import ArgumentError
            raise ArgumentError(f"--max-terms must be >= 1 and --time-limit > 0 (got {args.max_terms}, "
                                f"{args.time_limit})")
        if args.model.startswith("light_"):
            from benchmarks.frontends import LIGHT
            from ila.cli import check_names
            check_names("--model", [args.model.removeprefix("light_")], LIGHT, what="light zoo model")
        selected(tuple(t for t in args.targets.split(",") if t), names())
        output_file(args.out or ROOT / "paper_results" / f"cosim_{args.model}.md", "--out")
        output_file(args.ledger, "--ledger")
        load(args.ledger)
        return _main(args)
    except D2AError as exc:
        return report(exc)


def load_model(model: str, seed: int = 0):
    """``(IR graph, example inputs)`` of ``model`` (module docstring): ``light_<name>`` randomised
    and calibrated as in :func:`benchmarks.frontends.zoo_model`, its input seeded standard normal;
    otherwise :func:`compile.applications.load_graph`."""
    if not model.startswith("light_"):
        from compile.applications import load_graph
        return load_graph(model, seed)
    import onnx
    from benchmarks.frontends import calibrated, light_path, randomised
    from compile.frontend import from_onnx
    name = model.removeprefix("light_")
    g = from_onnx(calibrated(randomised(onnx.load(light_path(name)), seed), seed + 1), name=name)
    rng = np.random.default_rng(seed)
    return g, {v.name: rng.standard_normal(v.shape).astype(v.dtype) for v in g.inputs}


def _main(args) -> int:
    from compile.compiler import compile_graph
    from compile.runtime.cosim import against_host
    targets = tuple(t for t in args.targets.split(",") if t)
    t0 = time.perf_counter()
    graph, example = load_model(args.model, 0)
    res = compile_graph(graph, targets, matching="flexible", certify="sim", ledger_path=args.ledger,
                        max_terms=args.max_terms, time_limit=args.time_limit)
    t_compile = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    runs = []
    from compile.runtime import run
    from compile.runtime.threads import MEASURE_THREADS, host_threads
    t0 = time.perf_counter()
    against_host(res, example, threads=MEASURE_THREADS)      # untimed warm-up: simulators built, host kernels JIT-compiled
    t_warm = time.perf_counter() - t0
    for k in range(args.images):
        inputs = example if k == 0 else {n: rng.standard_normal(a.shape).astype(a.dtype) if a.dtype.kind == "f"
                                         else a for n, a in example.items()}
        r = against_host(res, inputs, threads=MEASURE_THREADS)     # as the host run below (and Table 4's workers)
        with host_threads(MEASURE_THREADS):
            t0 = time.perf_counter()
            run(graph, inputs)                          # the host float32 run alone, for the ratio
            r["host_seconds"] = time.perf_counter() - t0
        runs.append(r)
    first = runs[0]["result"]
    refused = sum(1 for v in first.invocations if v.refused)
    lines = [f"# Co-simulation of {args.model} on {', '.join(targets)} (random weights)", "",
             f"Command: `python -m benchmarks.cosim --model {args.model} --targets {args.targets} "
             f"--images {args.images}"
             + (f" --max-terms {args.max_terms} --time-limit {args.time_limit:g}"
                if (args.max_terms, args.time_limit) != (50_000, 5.0) else "")
             + f"`; machine: {platform.machine()}, Python {platform.python_version()}, "
             "one process, one host thread.", "",
             f"- offloads: {res.counts()}; host compute operators left: {res.host_ops}; "
             f"compile (incl. on-demand certification) {t_compile:.1f} s",
             f"- rewrites applied in the e-graph: {res.rules_used}; saturation stop: {res.stop_reason} "
             f"({res.iterations} iterations, {res.egraph_size} e-nodes); host data-movement operators: "
             f"{res.host_moves}",
             f"- one untimed warm-up co-simulation of input 0 before the timed ones (building the simulators, "
             f"JIT-compiling the host kernels): {t_warm:.2f} s",
             f"- calls refused at run time by a data condition (run on the host): {refused}", "",
             "| input | whole-model error (Frobenius, %) | co-simulation s | host float32 s | ratio |",
             "|---|---|---|---|---|"]
    for k, r in enumerate(runs):
        lines.append(f"| {k} | {100 * r['error']:.3f} | {r['seconds']:.2f} | {r['host_seconds']:.4f} | "
                     f"{r['seconds'] / max(r['host_seconds'], 1e-9):.0f}x |")
    lines += _left_on_host(res)
    lines += ["", "Per-invocation report of input 0 (error against the float32 host result of the same "
              "IR term on the same operands; flushed: host non-zero, accelerator 0; saturated: at the "
              "largest magnitude produced while the host value is larger):", "", "```", first.report(), "```", ""]
    text = "\n".join(lines)
    print(text)
    out = args.out or ROOT / "paper_results" / f"cosim_{args.model}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


def _why(reason: str) -> str:
    """The gate's reason without the shape: the violated side condition's name, or its first clause."""
    if "violates " in reason:
        return reason.split("violates ", 1)[1].split(":")[0]
    return reason.split(":")[0][:90]


def _left_on_host(res, top: int = 12) -> list[str]:
    """Report lines: the convolutions and dense layers the extracted program runs on the host (by
    shape), and the gate's refusals counted by mapping and reason (matches in the e-graph: tiles at
    every level, so counts of matches, not of operators)."""
    import collections
    ops = collections.Counter()
    for s in res.program.steps:
        if s.kind == "host" and s.value.op in ("nn.conv2d", "nn.dense"):
            ops[f"{s.value.op} {'x'.join(map(str, s.value.args[0].shape))} * "
                f"{'x'.join(map(str, s.value.args[1].shape))}"] += 1
    why = collections.Counter((d.mapping, _why(d.reason)) for d in res.refused)
    out = ["", f"Convolutions and dense layers left on the host: {sum(ops.values())}"
           + ("" if not ops else " (" + "; ".join(f"{k}: {n}" for k, n in ops.most_common(top)) + ")"), "",
           "Refused matches by mapping and reason (most frequent first):", ""]
    out += [f"- {m}: {r} ({n})" for (m, r), n in why.most_common(top)] or ["- none"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
