"""Kill table of the seeded compiler bugs (issue 22 item 8): ``python -m benchmarks.compile_mutations``.

Each bug of :data:`compile.mutations.BUGS` sits in one claim of the compiler's certified path
(operand adapters, closed patterns, the fragment writer, a fast stream builder, chain fusion, the
gate) and is applied around a small compilation (and co-simulation) on a fresh ledger; it is
*killed* when the offending offload is refused (not offloaded, or stopped with an error naming the
call) or its certification refuted. The same scenario without the bug (the control) must offload
and run. The seeded wrong compiler-IR rewrites of :mod:`compile.rewrites.broken` (guards dropped,
wrong parameters) are killed when their certification refutes them.

Writes ``paper_results/compile_mutations.md`` (``--out``). Exit 0 when every bug is killed and
every control passes, 1 otherwise, 2 on a user error.
"""
from __future__ import annotations

import pathlib
import platform
import sys
import time

from ila.errors import D2AError, report

OUT = pathlib.Path(__file__).resolve().parents[1] / "paper_results" / "compile_mutations.md"


def _rows(names, progress: bool):
    from compile.mutations import BUGS, passes, run
    for name in names:
        bug = BUGS[name]
        ctl, t_ctl = run(bug, control=True)
        out, t = run(bug)
        killed, ok = passes(bug, out, control=False), passes(bug, ctl, control=True)
        if progress:
            print(f"{name}: {'killed' if killed else 'SURVIVED'} ({out.how}); control {ctl.how} "
                  f"({'as expected' if ok else 'expected ' + bug.control})", flush=True)
        yield bug, out, t, ctl, t_ctl, killed, ok


def _rewrites(progress: bool, samples: int):
    from compile.rewrites.broken import BROKEN
    from compile.rewrites.certify import certify
    for rw in BROKEN:
        t0 = time.perf_counter()
        cert = certify(rw, "compile.rewrites.broken", samples=samples)
        if progress:
            print(f"rewrite {rw.name}: {cert.result}", flush=True)
        yield rw, cert, time.perf_counter() - t0


def main(argv=None) -> int:
    from ila.cli import ArgumentParser, check_count, output_file
    ap = ArgumentParser(prog="python -m benchmarks.compile_mutations", description=__doc__.splitlines()[0])
    ap.add_argument("bugs", nargs="*", help="seeded compiler bugs to run (default: all)")
    ap.add_argument("--out", default=str(OUT), help="report file (markdown)")
    ap.add_argument("--no-rewrites", action="store_true", help="skip the seeded wrong rewrites")
    ap.add_argument("--samples", type=int, default=30, help="property-test cases per broken rewrite (>= 1)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from compile.mutations import BUGS
    try:
        unknown = [b for b in args.bugs if b not in BUGS]
        if unknown:
            raise D2AError(f"unknown seeded compiler bug(s) {unknown}; known: {', '.join(BUGS)}")
        check_count("--samples", args.samples, item_bytes=512, what="property-test cases")
        output_file(args.out, "--out", parents=False)
        t0 = time.perf_counter()
        rows = list(_rows(args.bugs or list(BUGS), not args.no_progress))
        rws = [] if args.no_rewrites else list(_rewrites(not args.no_progress, args.samples))
    except D2AError as exc:
        return report(exc)
    ok = all(k and c for *_, k, c in rows) and all(c.result == "refuted" for _, c, _ in rws)
    lines = ["# Seeded compiler bugs: kill table", "",
             f"Measured by `python -m benchmarks.compile_mutations` on {platform.node()} ({platform.machine()}, Python "
             f"{platform.python_version()}), {time.strftime('%Y-%m-%d')}, {time.perf_counter() - t0:.0f} s in all. "
             "Each bug is applied around a small compilation on a fresh ledger (compile.mutations); it is killed "
             "when the offending offload is refused or its certification refuted. The control runs the same "
             "scenario without the bug and must give the expected behaviour (offload and run; for the "
             "dilated convolution: no match of the closed pattern; for the gate: no certificate for the new "
             "subject; for the chain: no fusion across the shared value, host-equal outputs).", "",
             "| Seeded bug | Claim | What it does | With the bug | Seconds | Control (no bug) |",
             "|---|---|---|---|---|---|"]
    for bug, o, t, c, tc, killed, good in rows:
        res = ("killed: " if killed else "**SURVIVED**: ") + o.how + (f" — {o.detail[:220]}" if o.detail else "")
        ctl = (f"{c.how} (as expected)" if good else f"**{c.how}, expected {bug.control}**") + \
            (f": {c.detail[:120]}" if c.detail and c.how != "offloaded" else "") + f" ({tc:.1f} s)"
        lines.append(f"| `{bug.name}` | {bug.layer} | {bug.mutation.description} | {res.replace('|', '/')} | "
                     f"{t:.1f} | {ctl.replace('|', '/')} |")
    if rws:
        lines += ["", "## Seeded wrong compiler-IR rewrites (compile.rewrites.broken)", "",
                  "| Rewrite | What it does | Certification | Seconds |", "|---|---|---|---|"]
        for rw, cert, t in rws:
            res = ("killed: refuted" if cert.result == "refuted" else f"**SURVIVED**: {cert.result}")
            lines.append(f"| `{rw.name}` | {rw.text} | {res} — {cert.summary()[:200].replace('|', '/')} | {t:.1f} |")
    total = len(rows) + len(rws)
    killed = sum(k for *_, k, _ in rows) + sum(c.result == "refuted" for _, c, _ in rws)
    lines += ["", f"**{killed} of {total} seeded bugs killed**; controls as expected: "
                  f"{sum(g for *_, g in rows)} of {len(rows)}.", ""]
    pathlib.Path(args.out).write_text("\n".join(lines))
    print(f"{killed}/{total} killed; wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
