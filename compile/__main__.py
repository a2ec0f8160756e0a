"""``python -m compile MODEL``: offload a model onto accelerators, on verified rules only.

MODEL is an application name (:mod:`compile.applications`, e.g. ``resnet20``), a
``package.module:function`` PyTorch factory, or an ``.onnx`` file. Prints the static accelerator
invocations per mapping and accelerator, the host operators left, and with ``--explain`` each
offload with its certificate and the rewrites that produced it, and each refused offload with
how it could be certified, and the extracted program. ``--emit DIR`` writes each call's program
fragment (:mod:`compile.codegen`: exactly the stream the co-simulation executes); ``--cosim``
co-simulates the program on the model's example inputs (:mod:`compile.runtime.cosim`) and prints
the per-invocation report and the error against the host; with both, the model is evaluated once
(one pass of the interpreter records the fragments, co-simulates and evaluates the host reference).
``--json`` prints one object (``offloads``: mapping -> count). Default targets: every accelerator the
mapping registry names. Exit 0, or 2 on a user error (one line).
"""
from __future__ import annotations

import json
import sys
import time

from ila.errors import D2AError


def _names(text: str) -> tuple[str, ...]:
    """The names of a comma-separated option value, blanks dropped."""
    return tuple(t.strip() for t in text.split(",") if t.strip())


def main(argv=None) -> int:
    from compile.compiler import COSTS, MATCHING
    from compile.gate import CERTIFY, REQUIRE
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m compile", description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--targets", default=None, help="comma-separated accelerators (all their mappings) or mapping "
                    "names (only those of their accelerator, e.g. hlscnn.conv2d_w8 for the original 8-bit-weight "
                    "design); default: every accelerator of the registered mappings")
    ap.add_argument("--matching", choices=MATCHING, default="flexible")
    ap.add_argument("--certify", choices=CERTIFY, default="none",
                    help="obtain missing certificates (mappings at their shapes, rewrites) and record them")
    ap.add_argument("--require", choices=REQUIRE, default="any", help="'proved': formally proved offloads only")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per on-demand certification: the solver timeout of a proof, the wall-clock bound of a simulation validation (> 0)")
    ap.add_argument("--max-iters", type=int, default=6, help="rewrite rounds (>= 0)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds of rewriting (> 0)")
    ap.add_argument("--cost", choices=COSTS, default="offloads",
                    help="extraction cost: the paper's (most offloads) or data-movement-aware")
    ap.add_argument("--rewrites", default=None,
                    help="comma-separated compiler-IR rewrites flexible matching may use (default: all certified; "
                         "python -m compile.rewrites --list)")
    ap.add_argument("--emit", metavar="DIR", help="write each call's program fragment (3LA JSON), one file per call")
    ap.add_argument("--cosim", action="store_true",
                    help="co-simulate on the example inputs: per-invocation report, error against the host")
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        from ila.cli import check_int, check_seconds, output_dir
        check_int("--max-iters", args.max_iters, 0)
        check_seconds("--time-limit", args.time_limit)
        check_seconds("--budget", args.budget)
        check_int("--seed", args.seed, 0, 2 ** 64 - 1)
        if args.emit:
            output_dir(args.emit, "--emit")
        from compile.compiler import compile_graph, selected
        if args.targets is not None:
            from mappings.registry import names
            selected(_names(args.targets), names())
        t0 = time.perf_counter()
        from compile.applications import load_graph
        graph, example = load_graph(args.model, args.seed)
        t_front = time.perf_counter() - t0
        from compile.compiler import default_targets
        targets = default_targets() if args.targets is None else _names(args.targets)
        res = compile_graph(graph, targets, matching=args.matching, require=args.require, certify=args.certify,
                            budget=args.budget, max_iters=args.max_iters, time_limit=args.time_limit,
                            cost=args.cost, rewrites=None if args.rewrites is None else _names(args.rewrites))
        files, cos = [], None
        if args.emit or args.cosim:
            from compile.runtime.cosim import against_host
            t0 = time.perf_counter()
            cos = against_host(res, example, record=bool(args.emit))
            res.seconds["cosim"] = time.perf_counter() - t0
        if args.emit:
            from compile.codegen import emit
            t0 = time.perf_counter()
            files = emit(res, example, args.emit, result=cos["result"])
            res.seconds["codegen"] = time.perf_counter() - t0
        if not args.cosim:
            cos = None
    except D2AError as exc:
        from compile.errors import report
        return report(exc, args.json)
    seconds = {"front-end": round(t_front, 3), **{k: round(v, 3) for k, v in res.seconds.items()}}
    if args.json:
        print(json.dumps({"model": args.model, "matching": args.matching, "ir_operators": len(graph),
                          "offloads": res.counts(), "per_accelerator": res.per_accelerator(),
                          "host_operators": res.host_ops, "host_data_movement": res.host_moves, "refused": [d.describe() for d in res.refused],
                          "rewrites_applied": res.rules_used, "rewrites_uncertified": res.rules_missing,
                          "expansions_refused": res.expansions_refused,
                          "transfers": res.transfers(), "emitted": [str(f) for f in files],
                          "fused_chains": [{"steps": list(c), "certificate": d.describe()} for c, d in res.fused],
                          "cosim": None if cos is None else {
                              "error": cos["error"], "seconds": cos["seconds"], "host_seconds": cos["host_seconds"],
                              "invocations": [vars(v) for v in cos["result"].invocations]},
                          "stop_reason": res.stop_reason, "seconds": seconds}, indent=1, default=float))
        return 0
    print(f"{args.model}: {len(graph)} IR operators, {args.matching} matching onto {', '.join(targets)}")
    print(f"  rewriting: {res.stop_reason} after {res.iterations} egglog iteration(s), {res.egraph_size} e-nodes")
    for m, n in res.counts().items():
        print(f"  {m:20} {n:4} invocations")
    print(f"  host compute operators left: {res.host_ops}, data-movement operators: {res.host_moves}; "
          f"per accelerator: {res.per_accelerator() or 'none'}; host<->accelerator transfers: {res.transfers()}")
    if res.rules_missing:
        print(f"  rewrites not used (no current certificate; python -m compile.rewrites): {', '.join(res.rules_missing)}")
    for why in res.expansions_refused:
        print(f"  expansion dropped (its splice is not the certified rewrite): {why}")
    if res.refused:
        print(f"  {len(res.refused)} offload(s) refused by the gate" + ("" if args.explain else " (--explain)"))
    if args.explain:
        for o in res.offloads:
            c = o.certificate
            print(f"  offload {o.mapping} at {o.shape} (node {o.node.source or o.node.op}): call {c['result']} "
                  f"(subject {c['subject_digest']}, {c['date']})" + (f"; via {' -> '.join(o.chain)}" if o.chain else ""))
        for c, d in res.fused:
            print(f"  fused chain of steps {list(c)} (one store, one load): {d.describe()}")
        for d in res.refused:
            print(f"  refused: {d.describe()}")
        print("  extracted program:\n    " + res.program.text().replace("\n", "\n    "))
    if files:
        print(f"  wrote {len(files)} program fragment(s) to {args.emit}")
    if cos is not None:
        print(cos["result"].report())
        print(f"  co-simulation: Frobenius relative error against the host {100 * cos['error']:.3f}%, "
              f"{cos['seconds']:.2f} s (host float32 {cos['host_seconds']:.4f} s)")
    print(f"  seconds: {seconds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
