"""ONNX's conformance suite against the compiler's host runtime, for every operator the ONNX
front-end claims (``python -m benchmarks.onnx_conformance``).

The suite is ``onnx.backend.test.BackendTest`` with :class:`compile.frontend.onnx_backend.HostBackend`:
its node test cases (generated in memory by ``onnx.backend.test.case``, since the wheel ships no
node data) and its shipped model tests (simple, pytorch-operator, pytorch-converted, real), kept
where every node of the test model is an operator the front-end claims. Each case ends as:

* pass — imported, run, outputs equal ONNX's expected ones within the case's tolerances;
* refused — the importer refuses the model with a clear error (an attribute, data type or
  dynamic shape outside what the operator's converter supports); the reason is listed;
* FAIL — a wrong answer or a crash (the claim is broken).

Writes a markdown report (``--out``, default ``paper_results/onnx_conformance.md``); exit 1 if
any case fails.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys
import time
import unittest
import warnings

OUT = pathlib.Path(__file__).resolve().parents[1] / "paper_results" / "onnx_conformance.md"


def claimed_ops() -> set[str]:
    from compile.frontend.onnx import _CONV
    return set(_CONV)


def _ops(model) -> list[str]:
    return [n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in model.graph.node]


def build_suite(pattern: str | None = None):
    """(BackendTest, {test name: model}) restricted to cases whose operators are all claimed."""
    import onnx
    import onnx.backend.test
    from onnx.backend.test.loader import load_model_tests
    from compile.frontend.onnx_backend import HostBackend
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bt = onnx.backend.test.BackendTest(HostBackend, __name__)
        node_cases = load_model_tests(kind="node")     # generated in memory (the wheel has no node data)
    claimed = claimed_ops()
    models = {tc.name: tc.model for tc in node_cases}
    for kind in ("simple", "pytorch-operator", "pytorch-converted", "real"):
        for tc in load_model_tests(kind=kind):
            if tc.model_dir:
                path = pathlib.Path(tc.model_dir) / "model.onnx"
                if path.exists():
                    models[tc.name] = onnx.load(str(path))
    keep = sorted(n for n, m in models.items() if set(_ops(m)) <= claimed and _ops(m)
                  and (pattern is None or re.search(pattern, n)))
    models = {n: models[n] for n in keep}
    bt.include("^(" + "|".join(re.escape(n) for n in keep) + ")_cpu$")
    return bt, models


class _Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.append(test)


def _name(test) -> str:
    return test.id().rsplit(".", 1)[-1].removesuffix("_cpu")


def run(pattern: str | None = None):
    """Run the suite; return {case: (status, detail)} with status pass/refused/FAIL and models."""
    from compile.frontend.onnx_backend import refusal
    bt, models = build_suite(pattern)
    suite = bt.test_suite
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = unittest.TextTestRunner(stream=open("/dev/null", "w"), resultclass=_Result, verbosity=0).run(suite)
    out = {}
    for t in res.passed:
        out[_name(t)] = ("pass", "")
    for t, why in res.skipped:
        if not t.id().endswith("_cpu") or _name(t) not in models:
            continue                          # other devices, or a case not selected
        out[_name(t)] = ("refused", refusal(models[_name(t)]) or why)
    for t, tb in res.failures + res.errors:
        why = refusal(models[_name(t)])      # node cases call prepare without is_compatible
        out[_name(t)] = ("refused", why) if why else ("FAIL", tb.strip().splitlines()[-1][:300])
    return out, models


def _short(reason: str) -> str:
    reason = re.sub(r"\s+", " ", reason)
    reason = re.sub(r"node '[^']*'", "node", reason)
    reason = re.sub(r"^(\w+Error): [^:]*: ", r"\1: ", reason)
    return reason[:160]


def report(out, models, seconds: float) -> str:
    claimed = claimed_ops()
    per_op = collections.defaultdict(collections.Counter)
    for name, (status, _) in out.items():
        for op in set(_ops(models[name])):
            per_op[op][status] += 1
    tot = collections.Counter(s for s, _ in out.values())
    lines = ["# ONNX conformance suite against the host runtime", "",
             "Written by `python -m benchmarks.onnx_conformance`. The suite is `onnx.backend.test.BackendTest`"
             " with `compile.frontend.onnx_backend.HostBackend` (from_onnx + compile.runtime.run), restricted to the"
             f" cases whose every node is one of the {len(claimed)} ONNX operators the front-end claims"
             " (node cases generated by `onnx.backend.test.case`, plus the wheel's shipped model tests).", "",
             f"**{len(out)} cases: {tot['pass']} pass, {tot['refused']} refused with a clear error, "
             f"{tot['FAIL']} fail** (wrong answer or crash); {seconds:.1f} s.", "",
             "A case counts under every operator it contains.", "",
             "| operator | cases | pass | refused | FAIL |", "|---|---:|---:|---:|---:|"]
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(f"| {op} | {sum(c.values())} | {c['pass']} | {c['refused']} | {c['FAIL']} |")
    untested = sorted(claimed - set(per_op))
    if untested:
        lines += ["", f"Claimed operators without a case of their own here: {', '.join(untested)}."]
    fails = sorted((n, d) for n, (s, d) in out.items() if s == "FAIL")
    if fails:
        lines += ["", "## Failures", ""] + [f"- `{n}`: {d}" for n, d in fails]
    reasons = collections.defaultdict(list)
    for n, (s, d) in out.items():
        if s == "refused":
            reasons[_short(d)].append(n)
    lines += ["", "## Refusals, by reason", ""]
    for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(f"`{n}`" for n in sorted(names)[:6]) + (", ..." if len(names) > 6 else "")
        lines.append(f"- {len(names)} x {why} ({shown})")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.onnx_conformance", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT), help="the markdown report (default paper_results/onnx_conformance.md)")
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regular expression")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out, models = run(args.pattern)
    text = report(out, models, time.perf_counter() - t0)
    pathlib.Path(args.out).write_text(text)
    tot = collections.Counter(s for s, _ in out.values())
    print(f"{len(out)} cases: {tot['pass']} pass, {tot['refused']} refused, {tot['FAIL']} FAIL -> {args.out}")
    for n, (s, d) in sorted(out.items()):
        if s == "FAIL":
            print(f"FAIL {n}: {d}")
    return 1 if tot["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
