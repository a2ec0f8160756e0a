"""Regenerate everything in ``paper_results/`` with one command
(``python -m benchmarks.regenerate [--only STEP,...] [--scheduler ADDRESS] [--workers N]``).

Runs each benchmark script in order, in its own process (so its timings are its own), with a
progress bar over the steps; the two campaigns (the proofs benchmark and the Table 4 evaluation)
run on Dask (``--scheduler`` / ``--workers`` are handed to them; default a ``LocalCluster`` on this
machine) and resume where an interrupted run stopped. Then writes ``paper_results/README.md``: for
every result, the paper's numbers, the measured table copied from the result file (numbers only
from files the scripts wrote), and what differs and why.

A step that fails is reported and the run goes on; the exit status is 1 if any step failed.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "paper_results"


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple              # python -m <argv...>
    outputs: tuple           # files in paper_results/ it writes
    campaign: bool = False   # takes --scheduler / --workers / --no-progress
    paper: str = ""          # what the paper reports (quoted figures)
    differs: str = ""        # what differs from the paper and why


STEPS = (
    Step("rewrites", ("compile.rewrites",), ("ledger.json",),
         paper="The paper verified none of its compiler-IR rewrites.",
         differs="Every compiler-IR rewrite is certified (BMC through the compiler-IR ILA at small shapes plus a "
                 "property test) before the compiler uses it; the verdicts are in the ledger."),
    Step("proofs", ("benchmarks.proofs", "--quick"), ("proofs.md",), campaign=True,
         paper="Formal verification of FlexASR's MaxPool mapping only (Table 3).",
         differs="Every mapping with a proof setup is proved (BMC / CHC) and each proof's claims are checked "
                 "against seeded bugs that only that claim catches. The quick plan (every mapping at its proof "
                 "shape, every seeded bug) is regenerated here; `python -m benchmarks.proofs` without `--quick` "
                 "adds the larger shapes of benchmarks/proofs.py's PLAN, a campaign of its own (resumable)."),
    Step("table1", ("benchmarks.table1",), ("table1.md",),
         paper="Static accelerator invocations per application with exact / flexible matching (e.g. ResNet-20 "
               "FlexASR 2/22, HLSCNN 21/21, VTA 2/22).",
         differs="Offloads are counted only on current certificates in the ledger; the explanations of each "
                 "difference are in table1.md."),
    Step("table2", ("benchmarks.table2",), ("table2.md",),
         paper="Simulation-based validation: mean Frobenius relative error per mapping (100 random inputs).",
         differs="Same method; inputs are seeded so the table is reproducible."),
    Step("table3", ("benchmarks.table3",), ("table3.md", "table3.png"),
         paper="BMC vs CHC seconds for FlexASR's MaxPool (CHC 5177 s at 16x64; BMC timed out at 3 h).",
         differs="The CHC encoding with relational invariants and abstract AdaptivFloat arithmetic proves the "
                 "mapping in seconds and for all sizes; table3.png plots the times on a log scale."),
    Step("table4", ("benchmarks.table4",), ("table4.md", "table4.png", "table4_resnet20_layers.png"), campaign=True,
         paper="Application-level co-simulation: LSTM-WLM 122.15 / 257.39 ppl; ResMLP 69.65 % / 10.65 %; ResNet-20 "
               "91.55 % / 29.15 % / 91.85 %; MobileNet-V2 92.40 % / 10.35 % / 91.20 %; 1 min 10 s, 19 min 15 s, "
               "14 min 23 s, 42 min 26 s per data point.",
         differs="Offline data (MNIST-5k padded to 3x32x32, gensim's Lee corpus) instead of CIFAR-10 and WikiText-2, "
                 "models trained on the CPU for minutes; results are comparable between host and designs, not with "
                 "the paper's absolute accuracies. A VTA column (each application on VTA alone) the paper did not "
                 "have."),
    Step("figure7", ("benchmarks.figure7",), ("figure7.md",),
         paper="A (4,4)/(2,2) max-pool over 128x128 offloaded to FlexASR as temporal pools (Figure 7).",
         differs="The fused chain (one store, four pools, one load) is a mapping of its own with its own "
                 "certificate, and co-simulates bit-exactly."),
    Step("cosim_resnet20", ("benchmarks.cosim", "--model", "resnet20"), ("cosim_resnet20.md",),
         paper="Per-invocation statistics guided the HLSCNN root cause (§4.4.2).",
         differs="Random weights, all three accelerators; the trained-model experiment is Table 4."),
    Step("cosim_resnet20_vta", ("benchmarks.cosim", "--model", "resnet20", "--targets", "vta", "--images", "10",
                                "--out", "paper_results/cosim_resnet20_vta.md"), ("cosim_resnet20_vta.md",),
         differs="Not in the paper (it co-simulated no VTA application): ResNet-20 with every convolution and "
                 "dense layer on VTA, seconds per image against the host's (issue 24's target: under 0.2 s)."),
    Step("frontends", ("benchmarks.frontends",), ("frontends.md",),
         paper="TVM's Relay front-ends import the six applications.",
         differs="Own PyTorch (torch.export) and ONNX front-ends, checked against the framework's own outputs."),
    Step("onnx_conformance", ("benchmarks.onnx_conformance",), ("onnx_conformance.md",),
         differs="Not in the paper: ONNX's conformance suite against the host runtime."),
    Step("attention_error", ("benchmarks.attention_error",), ("attention_error.md",),
         differs="Not in the paper: the error of FlexASR's attention mapping by shape (its shape-dependent tolerance)."),
    Step("mutation_maxpool", ("benchmarks.mutation_maxpool", "--out", "paper_results/mutation_maxpool.md"),
         ("mutation_maxpool.md",),
         differs="Not in the paper: the kill table of the LayerReduce family's seeded bugs."),
    Step("compile_mutations", ("benchmarks.compile_mutations", "--no-progress"), ("compile_mutations.md",),
         differs="Not in the paper: seeded compiler bugs (adapters, patterns, the fragment writer, fast paths, chain "
                 "fusion, the gate, rewrite guards), each refused or refuted by the check of its claim."),
    Step("host_speed", ("benchmarks.host_speed",), ("host_speed.md",),
         differs="Not in the paper: the host runtime's CPU time against onnxruntime's, one thread each."),
)


def _first_table(text: str) -> str:
    """The first markdown table of ``text`` (header, separator and rows)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-|: ]+\|$", lines[i + 1].strip()):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            return "\n".join(lines[i:j])
    return ""


def readme(folder: pathlib.Path = RESULTS) -> str:
    """paper_results/README.md: per step, the paper's numbers, the measured table (copied from the
    result file), what differs and why, and the command."""
    L = ["# Measured results beside the paper's", "",
         "Regenerated by `python -m benchmarks.regenerate` (each file below names the exact command, the "
         "machine and the date it was measured). Every number here is copied from a result file a script "
         "wrote; the paper's numbers are quoted from the D2A/3LA paper.", ""]
    for s in STEPS:
        files = [folder / o for o in s.outputs if o.endswith(".md")]
        L += [f"## {s.name}: `python -m {' '.join(s.argv)}`", ""]
        if s.paper:
            L += [f"**Paper:** {s.paper}", ""]
        for f in files:
            if not f.exists():
                L += [f"_{f.name}: not generated yet._", ""]
                continue
            text = f.read_text()
            first = next((ln for ln in text.splitlines() if ln.startswith("Measured") or ln.startswith("Produced")
                          or ln.startswith("Command")), "")
            L += [f"**Measured** ([{f.name}]({f.name})){': ' + first if first else ''}", ""]
            table = _first_table(text)
            if table:
                L += [table, ""]
        pngs = [o for o in s.outputs if o.endswith(".png") and (folder / o).exists()]
        L += [f"![{p}]({p})" for p in pngs] + ([""] if pngs else [])
        if s.differs:
            L += [f"**What differs and why:** {s.differs}", ""]
    return "\n".join(L)


def _check_arguments(args) -> None:
    """The campaign options the steps are given, the committed ledger the steps read and write, and
    the committed campaign results they resume (D2AError naming the value or the file)."""
    from benchmarks import campaign
    from ila.cli import check_count, output_file
    from verify.ledger import load
    check_count("--workers", args.workers, 1, item_bytes=campaign.WORKER_BYTES, what="worker processes")
    if args.scheduler is not None:
        campaign.check_scheduler(args.scheduler)
    output_file(RESULTS / "ledger.json", "the committed ledger")
    load(str(RESULTS / "ledger.json"))
    for f in sorted((RESULTS / "campaigns").glob("*.jsonl")):
        campaign.load(f)


def main(argv=None) -> int:
    from tqdm import tqdm

    from ila.cli import ArgumentParser
    from ila.errors import D2AError, report
    ap = ArgumentParser(prog="python -m benchmarks.regenerate", description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"comma-separated steps (default all): {', '.join(s.name for s in STEPS)}")
    ap.add_argument("--scheduler", help="a Dask scheduler address for the campaigns (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, help="LocalCluster workers for the campaigns")
    ap.add_argument("--readme-only", action="store_true", help="only rewrite paper_results/README.md")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    steps = list(STEPS)
    try:                                    # every argument and input checked before any step runs
        if args.only:
            want = [w.strip() for w in args.only.split(",") if w.strip()]
            bad = [w for w in want if w not in {s.name for s in STEPS}]
            if bad or not want:
                raise D2AError(f"--only {args.only!r}: unknown step(s) {bad or want}; steps: "
                               f"{', '.join(s.name for s in STEPS)}")
            steps = [s for s in STEPS if s.name in want]
        if not args.readme_only:
            _check_arguments(args)
    except D2AError as exc:
        return report(exc)
    failed = []
    if not args.readme_only:
        bar = tqdm(steps, desc="paper_results", unit="step", disable=args.no_progress)
        for s in bar:
            bar.set_postfix(step=s.name)
            cmd = [sys.executable, "-m", *s.argv]
            if s.campaign:
                cmd += (["--scheduler", args.scheduler] if args.scheduler else []) + \
                       (["--workers", str(args.workers)] if args.workers else []) + \
                       (["--no-progress"] if args.no_progress else [])
            t0 = time.perf_counter()
            rc = subprocess.run(cmd, cwd=ROOT).returncode
            tqdm.write(f"{s.name}: exit {rc} after {time.perf_counter() - t0:.0f} s")
            if rc != 0:
                failed.append(s.name)
    (RESULTS / "README.md").write_text(readme())
    print(f"wrote {RESULTS / 'README.md'}" + (f"; failed steps: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
