"""ONNX's conformance suite against the compiler's host runtime, every case
(``python -m benchmarks.onnx_conformance``).

The suite is ``onnx.backend.test.BackendTest`` with :class:`compile.frontend.onnx_backend.HostBackend`:
all its node test cases (generated in memory by ``onnx.backend.test.case``, since the wheel ships
no node data) and its shipped model tests (simple, pytorch-operator, pytorch-converted). The
wheel's nine "real" models (the light model zoo, whose expected outputs the suite would compute
with ONNX's reference evaluator at run time) are measured by ``python -m benchmarks.frontends``
instead. Each case ends as:

* pass -- imported, run, outputs equal ONNX's expected ones within the case's tolerances
  ("specialised" when the importer needed graph inputs used as shapes, axes or sizes bound to
  their values: :mod:`compile.frontend.onnx_backend`);
* refused -- the importer refuses the model with a clear CompileError naming the operator and the
  node (an operator, attribute, data type or dynamic shape outside what it supports); listed by
  reason;
* FAIL -- a wrong answer or a crash (any other exception).

Writes a markdown report (``--out``, default ``paper_results/onnx_conformance.md``) with the totals,
a per-operator table and every refusal reason; exit 1 if any case fails.
"""
from __future__ import annotations

import collections
import pathlib
import re
import sys
import time
import unittest
import warnings

OUT = pathlib.Path(__file__).resolve().parents[1] / "paper_results" / "onnx_conformance.md"
KINDS = ("node", "simple", "pytorch-operator", "pytorch-converted")


def claimed_ops() -> set[str]:
    """The ONNX operators (domain-qualified outside ai.onnx) the front-end has a converter for."""
    from compile.frontend.onnx import claimed
    return {op if not dom else f"{dom}.{op}" for dom, op in claimed()}


def _ops(model) -> list[str]:
    return [n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node]


def build_suite(pattern: str | None = None):
    """(BackendTest, {test name: model}) of every case (optionally those matching ``pattern``)."""
    import onnx
    import onnx.backend.test
    from onnx.backend.test.loader import load_model_tests
    from compile.frontend.onnx_backend import HostBackend
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bt = onnx.backend.test.BackendTest(HostBackend, __name__)
        models = {}
        for kind in KINDS:
            for tc in load_model_tests(kind=kind):
                if tc.model is not None:
                    models[tc.name] = tc.model
                elif tc.model_dir and (pathlib.Path(tc.model_dir) / "model.onnx").exists():
                    models[tc.name] = onnx.load(str(pathlib.Path(tc.model_dir) / "model.onnx"))
    keep = sorted(n for n in models if pattern is None or re.search(pattern, n))
    models = {n: models[n] for n in keep}
    bt.include("^(" + "|".join(re.escape(n) for n in keep) + ")_cpu$")
    return bt, models


class _Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed, self.raised = [], {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.append(test)

    def addError(self, test, err):
        super().addError(test, err)
        self.raised[test.id()] = err[1]

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.raised[test.id()] = err[1]


def _name(test) -> str:
    return test.id().rsplit(".", 1)[-1].removesuffix("_cpu")


def run(pattern: str | None = None):
    """Run the suite; return ({case: (status, detail)}, {case: model}) with status pass /
    specialised / refused / FAIL."""
    from compile.errors import CompileError
    from compile.frontend.onnx import DataDependentShapeError, from_onnx
    from compile.frontend.onnx_backend import refusal
    bt, models = build_suite(pattern)
    suite = bt.test_suite
    with warnings.catch_warnings(), open("/dev/null", "w") as devnull:
        warnings.simplefilter("ignore")
        res = unittest.TextTestRunner(stream=devnull, resultclass=_Result, verbosity=0).run(suite)
    out = {}
    for t in res.passed:
        try:
            from_onnx(models[_name(t)])
            out[_name(t)] = ("pass", "")
        except DataDependentShapeError as exc:
            out[_name(t)] = ("specialised", f"bound {', '.join(exc.inputs)}")
    for t, why in res.skipped:
        if not t.id().endswith("_cpu") or _name(t) not in models:
            continue                          # other devices, or a case not selected
        out[_name(t)] = ("refused", refusal(models[_name(t)]) or why)
    for t, tb in res.failures + res.errors:
        exc = res.raised.get(t.id())
        if isinstance(exc, CompileError):    # a refusal raised by prepare or by a specialised import
            out[_name(t)] = ("refused", f"{type(exc).__name__}: {exc}")
        else:
            out[_name(t)] = ("FAIL", tb.strip().splitlines()[-1][:300])
    return out, models


def run_modules(modules, pattern: str | None = None):
    """The node cases that ``onnx.backend.test.case.node.<module>`` generates (optionally those
    matching ``pattern``), each run as ``BackendTest`` runs a node case (prepare, run every data
    set, ``Runner.assert_similar_outputs`` with the case's tolerances), without generating the
    rest of the suite: ({case: (status, detail)}, {case: model})."""
    import importlib
    import onnx.backend.test.case.node as node_cases
    from onnx import numpy_helper
    from onnx.backend.test.runner import Runner
    from compile.errors import CompileError
    from compile.frontend.onnx import DataDependentShapeError, from_onnx
    from compile.frontend.onnx_backend import HostBackend
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in modules:
            importlib.import_module(f"onnx.backend.test.case.node.{m}")
    norm = lambda v: numpy_helper.to_array(v) if hasattr(v, "dims") else v     # noqa: E731
    out, models = {}, {}
    for tc in list(node_cases._NodeTestCases):
        if pattern is not None and not re.search(pattern, tc.name):
            continue
        models[tc.name] = tc.model
        try:
            rep = HostBackend.prepare(tc.model)
            for ins, want in tc.data_sets:
                got = rep.run([norm(v) for v in ins])
                Runner.assert_similar_outputs([norm(v) for v in want], got, rtol=tc.rtol, atol=tc.atol)
        except CompileError as exc:
            out[tc.name] = ("refused", f"{type(exc).__name__}: {exc}")
            continue
        except Exception as exc:                      # a wrong answer or a crash
            out[tc.name] = ("FAIL", f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}")
            continue
        try:
            from_onnx(tc.model)
            out[tc.name] = ("pass", "")
        except DataDependentShapeError as exc:
            out[tc.name] = ("specialised", f"bound {', '.join(exc.inputs)}")
    return out, models


def _short(reason: str) -> str:
    reason = re.sub(r"\s+", " ", reason)
    reason = re.sub(r"node '[^']*'", "node", reason)
    reason = re.sub(r"node #\d+", "node", reason)
    reason = re.sub(r"\(node\(s\) [^)]*\)", "", reason)
    reason = re.sub(r"input '[^']*'", "input", reason)
    reason = re.sub(r"^(\w+Error): [^:]*: ", r"\1: ", reason)
    return reason[:170]


def blamed(reason: str) -> list[str]:
    """The operators a refusal names (an unsupported operator list, or 'Op node ...')."""
    m = re.search(r"unsupported ONNX operator\(s\): (.*)$", reason)
    if m:
        return [re.sub(r" \(opset \d+\)", "", part.split(" (node")[0].strip()) for part in m.group(1).split("; ")]
    m = re.search(r": ([A-Za-z.]+) node (?:'|#)", reason)
    return [m.group(1)] if m else []


def report(out, models, seconds: float) -> str:
    claimed = claimed_ops()
    per_op = collections.defaultdict(collections.Counter)
    blame = collections.defaultdict(collections.Counter)
    for name, (status, detail) in out.items():
        for op in set(_ops(models[name])):
            per_op[op][status] += 1
        if status == "refused":
            for op in blamed(detail):
                blame[op][_short(detail)] += 1
    tot = collections.Counter(s for s, _ in out.values())
    passed = tot["pass"] + tot["specialised"]
    lines = ["# ONNX conformance suite against the host runtime", "",
             "Written by `python -m benchmarks.onnx_conformance`. The suite is `onnx.backend.test.BackendTest`"
             " with `compile.frontend.onnx_backend.HostBackend` (from_onnx + compile.runtime.run) on every case of"
             f" its node tests and shipped model tests ({', '.join(KINDS)}); the {len(claimed)} ONNX operators the"
             " front-end has converters for are listed at the end. The onnx wheel's nine light-zoo models are measured"
             " by `python -m benchmarks.frontends` (paper_results/frontends.md).", "",
             f"**{len(out)} cases: {passed} pass ({tot['specialised']} of them specialised to input values used as "
             f"shapes, axes or sizes), {tot['refused']} refused with a clear error naming the operator and node, "
             f"{tot['FAIL']} wrong** (wrong answer or crash); {seconds:.0f} s.", "",
             "| cases | pass | of which specialised | refused | wrong | operators with a converter |",
             "|---:|---:|---:|---:|---:|---:|",
             f"| {len(out)} | {passed} | {tot['specialised']} | {tot['refused']} | {tot['FAIL']} | {len(claimed)} |", "",
             "A case counts under every operator it contains; *refused here* counts the refusals that name that"
             " operator (with the most frequent reason).", "",
             "| operator | claimed | cases | pass | of which specialised | refused | wrong | refused here: reason |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for op in sorted(per_op):
        c = per_op[op]
        b = blame.get(op)
        why = f"{sum(b.values())}: {b.most_common(1)[0][0]}" if b else ""
        lines.append(f"| {op} | {'yes' if op in claimed else 'no'} | {sum(c.values())} | "
                     f"{c['pass'] + c['specialised']} | {c['specialised']} | {c['refused']} | {c['FAIL']} | "
                     f"{why.replace('|', '/')} |")
    fails = sorted((n, d) for n, (s, d) in out.items() if s == "FAIL")
    if fails:
        lines += ["", "## Wrong answers and crashes", ""] + [f"- `{n}`: {d}" for n, d in fails]
    reasons = collections.defaultdict(list)
    for n, (s, d) in out.items():
        if s == "refused":
            reasons[_short(d)].append(n)
    lines += ["", "## Refusals, by reason", ""]
    for why, names in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(f"`{n}`" for n in sorted(names)[:4]) + (", ..." if len(names) > 4 else "")
        lines.append(f"- {len(names)} x {why} ({shown})")
    lines += ["", "## Claimed operators", "", ", ".join(sorted(claimed)) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m benchmarks.onnx_conformance", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT), help="the markdown report (default paper_results/onnx_conformance.md)")
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regular expression")
    args = ap.parse_args(argv)
    from ila.errors import D2AError, report as report_error
    try:                                    # every argument checked before any work
        import re

        from ila.cli import ArgumentError, output_file
        if args.pattern is not None:
            try:
                re.compile(args.pattern)
            except re.error as exc:
                raise ArgumentError(f"-k {args.pattern!r}: not a regular expression ({exc})") from None
        output_file(args.out, "--out", parents=False)
    except D2AError as exc:
        return report_error(exc)
    t0 = time.perf_counter()
    out, models = run(args.pattern)
    text = report(out, models, time.perf_counter() - t0)
    pathlib.Path(args.out).write_text(text)
    tot = collections.Counter(s for s, _ in out.values())
    print(f"{len(out)} cases: {tot['pass'] + tot['specialised']} pass ({tot['specialised']} specialised), "
          f"{tot['refused']} refused, {tot['FAIL']} wrong -> {args.out}")
    for n, (s, d) in sorted(out.items()):
        if s == "FAIL":
            print(f"FAIL {n}: {d}")
    return 1 if tot["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
