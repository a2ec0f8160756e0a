"""Figure 7: a (4,4)/(2,2) 2-D max-pool over 128x128 offloaded to FlexASR's temporal max-pool
(``python -m benchmarks.figure7 [--side N] [--out PATH] [--ledger PATH]``).

Compiles the pool with flexible matching (certified rewrites only: ``maxpool_windows``,
``maxpool_halve``, ``pool_pad_columns``) under both extraction costs, prints the extracted
program, the calls, and the host<->accelerator transfers without and with store/load cancellation
(Figure 7 (d) vs (f)), then co-simulates it (the fused program: one store, four pools, one load)
and checks the result bit for bit against the host max-pool of the AdaptivFloat-quantised input.
Certificates come from (and missing ones are simulated into) ``paper_results/ledger.json``.
"""
from __future__ import annotations

import pathlib
import platform
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "paper_results" / "figure7.md"
LEDGER = ROOT / "paper_results" / "ledger.json"


def main(argv=None) -> int:
    from ila.cli import ArgumentParser, check_int, check_memory, output_file
    from ila.errors import D2AError, report
    ap = ArgumentParser(prog="python -m benchmarks.figure7", description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=128, help="input height and width (>= 4)")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--ledger", default=str(LEDGER))
    args = ap.parse_args(argv)
    try:                                    # every argument and file checked before any work
        from verify.ledger import load
        check_int("--side", args.side, 4)
        check_memory(args.side * args.side * 4, f"--side {args.side} (a {args.side}x{args.side} float32 input)")
        output_file(args.out, "--out")
        output_file(args.ledger, "--ledger")
        load(args.ledger)
        return _main(args)
    except D2AError as exc:
        return report(exc)


def _main(args) -> int:
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, var
    from compile.runtime import run
    from compile.runtime.cosim import cosimulate
    from ila.numerics import adaptivfloat as af
    x = var("x", (1, 1, args.side, args.side))
    g = Graph([x], [call("nn.max_pool2d", x, pool_size=(4, 4), strides=(2, 2))], "maxpool")
    lines = [f"# Figure 7: 2-D max-pool (4,4)/(2,2) over {args.side}x{args.side} on FlexASR", "",
             f"Command: `python -m benchmarks.figure7 --side {args.side}`; machine: {platform.machine()}, "
             f"{platform.python_version()}.", ""]
    for cost in ("offloads", "data-movement"):
        t0 = time.perf_counter()
        res = compile_graph(g, ("flexasr",), matching="flexible", certify="sim", ledger_path=args.ledger, cost=cost)
        t = time.perf_counter() - t0
        calls = res.program.calls()
        ch = res.chains()
        lines += [f"## cost = {cost}", "", "```", res.program.text(), "```", "",
                  f"- calls: {len(calls)} ({', '.join(f'{s.mapping.name}[{s.shape.text}]' for s in calls)})",
                  f"- rewrites applied (egglog's applications, in the e-graph): {res.rules_used}; saturation: "
                  f"{res.stop_reason} after {res.iterations} iterations, {res.egraph_size} e-nodes",
                  f"- chains kept in the accelerator: {[len(c) for c in ch]}, on "
                  + (", ".join(d.describe() for _, d in res.fused) or "no certificate"),
                  f"- host<->accelerator transfers: {2 * len(calls)} without store/load cancellation "
                  f"(Figure 7 (d)), {res.transfers()} with it (Figure 7 (f))",
                  f"- compile seconds (incl. on-demand certification): {t:.2f}; breakdown "
                  f"{ {k: round(v, 3) for k, v in res.seconds.items()} }", ""]
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, 1, args.side, args.side)).astype(np.float32)
    codes, bias = af.quantize(xv)
    xq = af.dequantize(codes, bias).astype(np.float32)
    t0 = time.perf_counter()
    out = cosimulate(res, {"x": xv})
    t_co = time.perf_counter() - t0
    t0 = time.perf_counter()
    want = run(g, {"x": xq})[0]
    t_host = time.perf_counter() - t0
    exact = bool(np.array_equal(out.outputs[0], want))
    lines += ["## Co-simulation", "", "```", out.report(), "```", "",
              f"- output equals the host max-pool of the AdaptivFloat-quantised input bit for bit: **{exact}**",
              f"- co-simulation {t_co:.3f} s (host float32 {t_host:.4f} s)", ""]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
