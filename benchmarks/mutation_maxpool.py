"""Kill table of the LayerReduce family's seeded bugs (flexasr.maxpool / flexasr.meanpool).

Each seeded bug of ``verify.mutations`` sits in one layer of the trusted path (the generator's
bytes and addresses, the command order, the configuration fields, the model's loops, the
read-back) and is checked by BMC and CHC at one shape (default 16x64) and by the all-sizes CHC
proof (``--shape symbolic``). A bug is *killed* by a counterexample the simulators replayed; the
table names the check that killed it (the output cell for BMC, the failed clause for CHC). The
all-sizes proof claims only the layers its verdict lists (``covers``); a bug in a layer it does not
claim is reported as "not claimed" there, and must be killed by the fixed-shape proofs.

``tiling_stride`` and ``declared_map_stride`` change the stride between 16-timestep groups, so they
are equivalent to the correct mapping while R <= 16: they are checked at 2R x C then (stated in
the table). ``vector_count_near_max`` and ``timestep_count_near_max`` are wrong only for C/16 >= 250
or R >= 32768: at smaller shapes the mutant is correct ("correct at this shape", not run), and the
all-sizes proof must find the sizes where it is not (its counterexample search, ``verify.chc``).

Run: ``python -m benchmarks.mutation_maxpool [--mapping flexasr.maxpool] [--shape 16x64]
[--solver z3|cvc5] [--no-symbolic] [--infer]`` (``--infer``: also the all-sizes proof with inferred
invariants). Exit status 0 when every bug is killed by every method that
claims its layer and the unmutated mapping is proved.
"""
from __future__ import annotations

import sys

from mappings.base import format_shape
from mappings.registry import get
from verify import mutations


def _shape_of(v) -> str:
    at = v.trace.get("shape") if isinstance(getattr(v, "trace", None), dict) else None
    return format_shape(at) if isinstance(at, dict) else ""


def _which(v) -> str:
    if v.kind != "counterexample":
        return ""
    failed = v.trace.get("failed_clauses")
    return failed[0] if failed else v.trace.get("output", "")


def _cell(v, claimed: bool = True) -> str:
    if v is None:
        return "correct at this shape"
    if not claimed:
        return f"not claimed ({v.kind})"
    ok = v.kind == "counterexample" and v.replayed
    return ("killed" if ok else f"SURVIVED ({v.kind})") + f" {v.seconds:.1f}s"


# bugs that show only at some sizes: at a shape where the mutant is correct, the fixed-shape
# proofs rightly prove it (not run; "correct here"), and the all-sizes proof must find the sizes
SHOWS = {"vector_count_near_max": lambda s: s["C"] // 16 >= 250,
         "timestep_count_near_max": lambda s: s["R"] >= 32768,
         "size_field_some_sizes": lambda s: s["C"] // 16 > 3}


def kill_table(name: str, shape_text: str, solver: str, symbolic: bool, inferred: bool = False):
    """Yield one row per seeded bug: (bug, layer, shape, {method: (verdict, claimed)}); with
    ``inferred`` also the all-sizes proof with inferred invariants (column "inferred")."""
    m = get(name)
    shape = m.parse_shape(shape_text)
    sym_covers = None
    if symbolic or inferred:
        clean = mutations.check(m, None, None, "chc", solver=solver)
        sym_covers = set(getattr(clean, "covers", ()))
    for bug, layer in mutations.layers(m).items():
        at = dict(shape)
        if bug in ("tiling_stride", "declared_map_stride") and at["R"] <= 16:
            at["R"] *= 2
        shows = SHOWS.get(bug, lambda s: True)(at)
        res = {meth: (mutations.check(m, at, bug, meth, solver=solver) if shows else None, shows)
               for meth in ("bmc", "chc")}
        if symbolic:
            res["symbolic"] = (mutations.check(m, None, bug, "chc", solver=solver), layer in sym_covers)
        if inferred:
            res["inferred"] = (mutations.check(m, None, bug, "chc", solver=solver, infer=True), layer in sym_covers)
        yield bug, layer, format_shape(at), res


def main(argv=None) -> int:
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m benchmarks.mutation_maxpool", description=__doc__.splitlines()[0])
    ap.add_argument("--mapping", default="flexasr.maxpool", choices=["flexasr.maxpool", "flexasr.meanpool"])
    ap.add_argument("--shape", default="16x64")
    ap.add_argument("--solver", default="z3", choices=["z3", "cvc5"])
    ap.add_argument("--no-symbolic", action="store_true", help="skip the all-sizes CHC proof")
    ap.add_argument("--infer", action="store_true",
                    help="also the all-sizes proof with inferred invariants (column 'inferred')")
    ap.add_argument("--out", help="also write the table as markdown to this file "
                                  "(paper_results/mutation_maxpool.md for the committed record)")
    args = ap.parse_args(argv)
    from ila.errors import D2AError, report
    try:                                    # every argument checked before any work
        from ila.cli import output_file
        try:
            get(args.mapping).parse_shape(args.shape)
        except D2AError as exc:
            raise D2AError(f"--shape {args.shape!r}: {exc}") from None
        if args.out:
            output_file(args.out, "--out", parents=False)
        return _main(args, argv)
    except D2AError as exc:
        return report(exc)


def _main(args, argv) -> int:
    md = []
    cols = ["bmc", "chc"] + ([] if args.no_symbolic else ["symbolic"]) + (["inferred"] if args.infer else [])
    print(f"{'bug':30} {'layer':21} {'shape':6} " + " ".join(f"{c:24}" for c in cols) + " killed by")
    killed = claimed = 0
    for bug, layer, at, res in kill_table(args.mapping, args.shape, args.solver, not args.no_symbolic, args.infer):
        cells = []
        by = []
        for c in cols:
            v, cl = res[c]
            cells.append(f"{_cell(v, cl):24}")
            if cl:
                claimed += 1
                killed += v.kind == "counterexample" and v.replayed
                if v.kind == "counterexample":
                    by.append(f"{c}: {_which(v)}" + (f" at {_shape_of(v)}" if c in ("symbolic", "inferred")
                                                     and _shape_of(v) else ""))
        print(f"{bug:30} {layer:21} {at:6} " + " ".join(cells) + " " + "; ".join(by), flush=True)
        md.append(f"| {bug} | {layer} | {at} | " + " | ".join(c.strip() for c in cells) + " | " + "; ".join(by) + " |")
    m = get(args.mapping)
    shape = m.parse_shape(args.shape)
    clean = [mutations.check(m, shape, None, meth, solver=args.solver) for meth in ("bmc", "chc")]
    print(f"{'(unmutated)':30} {'':21} {args.shape:6} " + " ".join(f"{v.kind:24}" for v in clean))
    print(f"kill rate: {killed}/{claimed} = {100 * killed / max(claimed, 1):.0f}% of the claimed checks "
          f"({args.mapping}, {args.shape}, {args.solver})")
    if args.out:
        import pathlib
        import platform
        import time
        cmd = "python -m benchmarks.mutation_maxpool " + " ".join(argv if argv is not None else sys.argv[1:])
        head = ["# Kill table of the seeded bugs of " + args.mapping, "",
                f"Measured by `{cmd.strip()}` on {platform.node() or 'this machine'} ({platform.machine()}, 2 cores), "
                f"{args.solver}, {time.strftime('%Y-%m-%d')}. A bug is killed by a counterexample the simulators "
                "replayed; 'not claimed' = the all-sizes proof does not claim that layer (its verdict says so) and "
                "the fixed-shape proofs must kill the bug. 'killed by' names the output cell (BMC) or the failed "
                "clause or stream lemma (CHC).", "",
                "| Bug | Layer | Shape | " + " | ".join(cols) + " | Killed by |",
                "|---|---|---|" + "---|" * len(cols) + "---|"]
        tail = ["", f"Unmutated mapping at {args.shape}: " + ", ".join(f"{m_}: {v.kind}" for m_, v in zip(("bmc", "chc"), clean))
                + ".", "", f"Kill rate: {killed}/{claimed} of the claimed checks.", ""]
        pathlib.Path(args.out).write_text("\n".join(head + md + tail))
        print(f"wrote {args.out}")
    return 0 if killed == claimed and all(v.kind == "proved" for v in clean) else 1


if __name__ == "__main__":
    raise SystemExit(main())
