"""Every command-line entry point given malformed input: one line ``error: ...`` on stderr naming the
bad value (with ``--json``: one JSON object ``{"error": ...}`` on stdout), exit 2, no traceback,
nothing on stdout, and no file changed (``paper_results/``, the fixtures, the cache and the user's
ledger are compared before and after).

Kinds of input: missing files, directories where files are expected, non-UTF-8, 0-byte and 100,000-deep
JSON, 0-byte ONNX models and models whose input needs more memory than the machine has, unwritable
output paths, negative / zero / inf / nan / huge numbers, unknown names, garbage scheduler addresses,
corrupt campaign results files. One representative case per CLI runs in the fast suite; the whole
table is ``slow``.

Run as a script (``python tests/test_cli_malformed.py [-k ID]``) it prints the table of outcomes
(exit status, stderr lines, traceback) without asserting: the survey of issue 25, item 5.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HUGE = "99999999999999999999"
PROC = "/proc/nope/x"

_BAD_LEDGER = [{"mapping": "flexasr.maxpool", "method": "bmc", "checker": "verify.bmc", "scope": "2x16",
                "solver": "z3", "seconds": 1.0, "result": "proved", "covers": [], "detail": "",
                "date": "2026-01-01 00:00:00"}]                      # no digest


def make_fixtures(d: pathlib.Path) -> dict:
    """The malformed inputs, in directory ``d``; returns the placeholders of the table."""
    d.mkdir(parents=True, exist_ok=True)
    f = {"tmp": d, "missing": d / "missing.json", "missing_onnx": d / "missing.onnx", "dir": d / "adir",
         "dir_onnx": d / "adir.onnx", "nonutf8": d / "nonutf8.json", "deep": d / "deep.json",
         "empty_json": d / "empty.json", "empty_onnx": d / "empty.onnx", "huge_onnx": d / "huge.onnx",
         "corrupt_jsonl": d / "corrupt.jsonl", "deep_jsonl": d / "deep.jsonl", "bad_ledger": d / "badledger.json",
         "file": d / "plain.txt", "list_json": d / "list.json", "out": d / "out" / "report.md",
         "garbage_onnx": d / "garbage.onnx"}
    f["dir"].mkdir(exist_ok=True)
    f["out"].parent.mkdir(exist_ok=True)
    f["dir_onnx"].mkdir(exist_ok=True)
    f["nonutf8"].write_bytes(b'{"program fragment": [{"addr": "0x\xff\xfe"}]}\n')
    f["deep"].write_text("[" * 100_000 + "]" * 100_000)
    f["empty_json"].write_bytes(b"")
    f["empty_onnx"].write_bytes(b"")
    f["garbage_onnx"].write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xff\xff")
    f["corrupt_jsonl"].write_text('{"key": "a", "ok": true, "result": 1}\nnot json at all\n{"key": "b", "ok": true}\n')
    f["deep_jsonl"].write_text("[" * 100_000 + "]" * 100_000 + "\n")
    f["bad_ledger"].write_text(json.dumps(_BAD_LEDGER))
    f["file"].write_text("a plain file\n")
    f["list_json"].write_text("[1, 2, 3]\n")
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [99999999, 99999999])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [99999999, 99999999])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "huge", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(f["huge_onnx"]))
    return {k: str(v) for k, v in f.items()}


# (id, argv of python -m, fragments the error line must contain, fast)
# {name} in an argv item or a fragment is a fixture of make_fixtures.
CASES = [
    # ---------------------------------------------------------------- ila.models.*.run
    ("flexasr.run-nonutf8", ["ila.models.flexasr.run", "{nonutf8}"], ["{nonutf8}", "not UTF-8"], True),
    ("flexasr.run-deep", ["ila.models.flexasr.run", "{deep}"], ["{deep}", "nested"], False),
    ("flexasr.run-empty", ["ila.models.flexasr.run", "{empty_json}"], ["{empty_json}", "not JSON"], False),
    ("flexasr.run-missing", ["ila.models.flexasr.run", "{missing}"], ["{missing}"], False),
    ("flexasr.run-dir", ["ila.models.flexasr.run", "{dir}"], ["{dir}"], False),
    ("flexasr.run-list", ["ila.models.flexasr.run", "{list_json}"], ["entry 0"], False),
    ("flexasr.run-no-arg", ["ila.models.flexasr.run"], ["fragment"], False),
    ("flexasr.run-json", ["ila.models.flexasr.run", "--json", "{deep}"], ["{deep}"], False),
    ("hlscnn.run-deep", ["ila.models.hlscnn.run", "{deep}"], ["{deep}", "nested"], True),
    ("hlscnn.run-bits", ["ila.models.hlscnn.run", "--weight-bits", "7", "{file}"], ["--weight-bits", "7"], False),
    ("hlscnn.run-dir", ["ila.models.hlscnn.run", "{dir}"], ["{dir}"], False),
    ("vta.run-empty", ["ila.models.vta.run", "{empty_json}"], ["{empty_json}"], True),
    ("vta.run-nonutf8", ["ila.models.vta.run", "{nonutf8}"], ["{nonutf8}"], False),
    ("vta.run-bad-flag", ["ila.models.vta.run", "--bogus", "{file}"], ["--bogus"], False),
    # ---------------------------------------------------------------- verify
    ("verify.mapping-unknown", ["verify.mapping", "nope.op", "--method", "sim"], ["nope.op"], True),
    ("verify.mapping-samples-huge", ["verify.mapping", "flexasr.maxpool", "--method", "sim", "--samples", HUGE],
     [f"--samples {HUGE}", "at most"], False),
    ("verify.mapping-timeout-neg", ["verify.mapping", "flexasr.maxpool", "--method", "bmc", "--timeout", "-1"],
     ["--timeout -1"], False),
    ("verify.mapping-timeout-inf", ["verify.mapping", "flexasr.maxpool", "--method", "bmc", "--timeout", "inf"],
     ["--timeout inf"], False),
    ("verify.mapping-emit-proc", ["verify.mapping", "flexasr.maxpool", "--method", "bmc", "--emit-smt", PROC],
     [PROC], False),
    ("verify.mapping-emit-file", ["verify.mapping", "flexasr.maxpool", "--method", "bmc", "--emit-smt", "{file}"],
     ["{file}"], False),
    ("verify.mapping-method", ["verify.mapping", "flexasr.maxpool", "--method", "bogus"], ["bogus"], False),
    ("verify.mapping-samples-abc", ["verify.mapping", "flexasr.maxpool", "--method", "sim", "--samples", "abc"],
     ["--samples", "abc"], False),
    ("verify.mapping-shape", ["verify.mapping", "flexasr.maxpool", "--method", "sim", "--shape", "99999999x99999999"],
     ["99999999x99999999"], False),
    ("verify.mapping-json", ["verify.mapping", "nope.op", "--json"], ["nope.op"], False),
    ("verify.mapping-json-argparse", ["verify.mapping", "flexasr.maxpool", "--json", "--method", "bogus"],
     ["bogus"], False),
    ("verify.ledger-dir", ["verify.ledger", "--path", "{dir}"], ["{dir}"], True),
    ("verify.ledger-nonutf8", ["verify.ledger", "--path", "{nonutf8}"], ["{nonutf8}", "not UTF-8"], False),
    ("verify.ledger-deep", ["verify.ledger", "--path", "{deep}"], ["{deep}"], False),
    ("verify.ledger-empty", ["verify.ledger", "--path", "{empty_json}"], ["{empty_json}"], False),
    ("verify.ledger-missing", ["verify.ledger", "--path", "{missing}"], ["{missing}"], False),
    ("verify.ledger-sample-0", ["verify.ledger", "--recheck", "--sample", "0"], ["--sample 0"], False),
    ("verify.ledger-timeout", ["verify.ledger", "--recheck", "--timeout", "-1"], ["--timeout -1"], False),
    ("verify.ledger-max-nan", ["verify.ledger", "--recheck", "--max-seconds", "nan"], ["--max-seconds nan"], False),
    ("verify.ledger-sample-abc", ["verify.ledger", "--recheck", "--sample", "abc"], ["--sample", "abc"], False),
    ("verify.ledger-json", ["verify.ledger", "--json", "--path", "{deep}"], ["{deep}"], False),
    # ---------------------------------------------------------------- compile
    ("compile-empty-onnx", ["compile", "{empty_onnx}"], ["{empty_onnx}"], True),
    ("compile-garbage-onnx", ["compile", "{garbage_onnx}"], ["{garbage_onnx}"], False),
    ("compile-huge-onnx", ["compile", "{huge_onnx}"], ["99999999", "memory"], False),
    ("compile-missing", ["compile", "{missing_onnx}"], ["{missing_onnx}"], False),
    ("compile-dir", ["compile", "{dir_onnx}"], ["{dir_onnx}"], False),
    ("compile-unknown", ["compile", "nope"], ["nope"], False),
    ("compile-budget-inf", ["compile", "resnet20", "--budget", "inf"], ["--budget inf"], False),
    ("compile-budget-neg", ["compile", "resnet20", "--budget", "-1"], ["--budget -1"], False),
    ("compile-iters-neg", ["compile", "resnet20", "--max-iters", "-1"], ["--max-iters -1"], False),
    ("compile-unknown-rewrite", ["compile", "resnet20", "--rewrites", "im2col_nope"], ["im2col_nope"], False),
    ("compile-time-nan", ["compile", "resnet20", "--time-limit", "nan"], ["--time-limit nan"], False),
    ("compile-targets", ["compile", "resnet20", "--targets", "nope"], ["nope"], False),
    ("compile-emit-proc", ["compile", "resnet20", "--emit", PROC], [PROC], False),
    ("compile-emit-file", ["compile", "resnet20", "--emit", "{file}"], ["{file}"], False),
    ("compile-matching", ["compile", "resnet20", "--matching", "bogus"], ["bogus"], False),
    ("compile-json", ["compile", "{empty_onnx}", "--json"], ["{empty_onnx}"], False),
    ("compile-json-budget", ["compile", "resnet20", "--json", "--budget", "nan"], ["--budget nan"], False),
    ("compile.run-empty-onnx", ["compile.run", "{empty_onnx}"], ["{empty_onnx}"], True),
    ("compile.run-huge-onnx", ["compile.run", "{huge_onnx}"], ["99999999", "memory"], False),
    ("compile.run-missing", ["compile.run", "{missing_onnx}"], ["{missing_onnx}"], False),
    ("compile.run-dir", ["compile.run", "{dir_onnx}"], ["{dir_onnx}"], False),
    ("compile.run-unknown", ["compile.run", "nope"], ["nope"], False),
    ("compile.run-seed", ["compile.run", "resnet20", "--seed", "-1"], ["--seed -1"], False),
    ("compile.run-frontend", ["compile.run", "resnet20", "--frontend", "bogus"], ["bogus"], False),
    ("compile.rewrites-unknown", ["compile.rewrites", "nope"], ["nope"], True),
    ("compile.rewrites-samples-0", ["compile.rewrites", "--samples", "0"], ["--samples 0"], False),
    ("compile.rewrites-samples-huge", ["compile.rewrites", "--samples", HUGE], [f"--samples {HUGE}"], False),
    ("compile.rewrites-timeout-inf", ["compile.rewrites", "--timeout", "inf"], ["--timeout inf"], False),
    ("compile.rewrites-timeout-neg", ["compile.rewrites", "--timeout", "-1"], ["--timeout -1"], False),
    ("compile.rewrites-json", ["compile.rewrites", "--json", "nope"], ["nope"], False),
    # ---------------------------------------------------------------- benchmarks: speed and small tables
    ("sim_speed-flag", ["benchmarks.sim_speed", "--bogus"], ["--bogus"], True),
    ("flexasr_speed-flag", ["benchmarks.flexasr_speed", "--bogus"], ["--bogus"], True),
    ("summary_speed-0", ["benchmarks.summary_speed", "0"], ["repeat 0"], True),
    ("summary_speed-huge", ["benchmarks.summary_speed", HUGE], [HUGE], False),
    ("summary_speed-abc", ["benchmarks.summary_speed", "abc"], ["abc"], False),
    ("vta_hlscnn_speed-0", ["benchmarks.vta_hlscnn_speed", "0"], ["repeats 0"], True),
    ("vta_hlscnn_speed-neg", ["benchmarks.vta_hlscnn_speed", "-5"], ["-5"], False),
    ("vta_hlscnn_speed-huge", ["benchmarks.vta_hlscnn_speed", HUGE], [HUGE], False),
    ("flexasr_table2-0", ["benchmarks.flexasr_table2", "0"], ["samples 0"], True),
    ("flexasr_table2-huge", ["benchmarks.flexasr_table2", HUGE], [HUGE, "at most"], False),
    ("flexasr_table2-abc", ["benchmarks.flexasr_table2", "abc"], ["abc"], False),
    ("table2_vta_hlscnn-neg", ["benchmarks.table2_vta_hlscnn", "-1"], ["samples -1"], True),
    ("table2_vta_hlscnn-huge", ["benchmarks.table2_vta_hlscnn", HUGE], [HUGE, "at most"], False),
    ("mutation_maxpool-shape", ["benchmarks.mutation_maxpool", "--shape", "3x16"], ["3x16"], True),
    ("mutation_maxpool-shape-abc", ["benchmarks.mutation_maxpool", "--shape", "abc"], ["abc"], False),
    ("mutation_maxpool-mapping", ["benchmarks.mutation_maxpool", "--mapping", "nope"], ["nope"], False),
    ("mutation_maxpool-out-proc", ["benchmarks.mutation_maxpool", "--out", PROC], [PROC], False),
    ("mutation_maxpool-out-dir", ["benchmarks.mutation_maxpool", "--out", "{dir}"], ["{dir}"], False),
    ("table2-samples-0", ["benchmarks.table2", "--samples", "0"], ["--samples 0"], True),
    ("table2-samples-huge", ["benchmarks.table2", "--samples", HUGE], [f"--samples {HUGE}", "at most"], False),
    ("table2-out-proc", ["benchmarks.table2", "--out", PROC], [PROC], False),
    ("table2-out-dir", ["benchmarks.table2", "--out", "{dir}"], ["{dir}"], False),
    ("table2-seed", ["benchmarks.table2", "--seed", "-1"], ["--seed -1"], False),
    ("attention_error-samples-0", ["benchmarks.attention_error", "--samples", "0"], ["--samples 0"], True),
    ("attention_error-jobs-0", ["benchmarks.attention_error", "--jobs", "0"], ["--jobs 0"], False),
    ("attention_error-sweep-neg", ["benchmarks.attention_error", "--sweep", "-1"], ["--sweep -1"], False),
    ("attention_error-tol-huge", ["benchmarks.attention_error", "--tol-shapes", HUGE], [f"--tol-shapes {HUGE}"],
     False),
    ("attention_error-out-proc", ["benchmarks.attention_error", "--out", PROC], [PROC], False),
    ("compile_mutations-unknown", ["benchmarks.compile_mutations", "nope"], ["nope"], True),
    ("compile_mutations-samples-0", ["benchmarks.compile_mutations", "--samples", "0"], ["--samples 0"], False),
    ("compile_mutations-samples-huge", ["benchmarks.compile_mutations", "--samples", HUGE], [f"--samples {HUGE}"],
     False),
    ("compile_mutations-out-proc", ["benchmarks.compile_mutations", "--out", PROC], [PROC], False),
    # ---------------------------------------------------------------- benchmarks: proofs and table 3
    ("table3-timeout-neg", ["benchmarks.table3", "--timeout", "-1"], ["--timeout -1"], True),
    ("table3-timeout-inf", ["benchmarks.table3", "--timeout", "inf"], ["--timeout inf"], False),
    ("table3-symbolic-nan", ["benchmarks.table3", "--symbolic-timeout", "nan"], ["--symbolic-timeout nan"], False),
    ("table3-sizes", ["benchmarks.table3", "--sizes", "3x16", "--out", "{out}"], ["3x16"], False),
    ("table3-sizes-garbage", ["benchmarks.table3", "--sizes", "nope", "--out", "{out}"], ["nope"], False),
    ("table3-infer-sizes", ["benchmarks.table3", "--infer-sizes", "2x17", "--out", "{out}"], ["2x17"], False),
    ("table3-out-proc", ["benchmarks.table3", "--out", PROC], [PROC], False),
    ("proofs-timeout-neg", ["benchmarks.proofs", "--timeout", "-1"], ["--timeout -1"], True),
    ("proofs-timeout-nan", ["benchmarks.proofs", "--timeout", "nan"], ["--timeout nan"], False),
    ("proofs-results-dir", ["benchmarks.proofs", "--quick", "--results", "{dir}", "--out", "{out}"], ["{dir}"], False),
    ("proofs-results-corrupt", ["benchmarks.proofs", "--quick", "--results", "{corrupt_jsonl}", "--out", "{out}"],
     ["{corrupt_jsonl}", "line 2"], False),
    ("proofs-results-deep", ["benchmarks.proofs", "--quick", "--results", "{deep_jsonl}", "--out", "{out}"],
     ["{deep_jsonl}", "line 1"], False),
    ("proofs-workers-0", ["benchmarks.proofs", "--quick", "--workers", "0", "--out", "{out}"], ["--workers 0"], False),
    ("proofs-workers-huge", ["benchmarks.proofs", "--quick", "--workers", HUGE, "--out", "{out}"],
     [f"--workers {HUGE}"], False),
    ("proofs-scheduler", ["benchmarks.proofs", "--quick", "--scheduler", "garbage://", "--out", "{out}"],
     ["garbage://"], False),
    ("proofs-out-proc", ["benchmarks.proofs", "--quick", "--out", PROC], [PROC], False),
    ("proofs-out-dir", ["benchmarks.proofs", "--quick", "--out", "{dir}"], ["{dir}"], False),
    ("proofs-offloads-missing", ["benchmarks.proofs", "--application-shapes", "--offloads", "{dir}/none.txt", "--out",
                                 "{out}"], ["--offloads", "none.txt"], False),
    ("offloads-tables", ["benchmarks.offloads", "--tables", "2"], ["--tables", "2"], True),
    ("offloads-apps", ["benchmarks.offloads", "--apps", "nope"], ["nope"], False),
    ("offloads-out-proc", ["benchmarks.offloads", "--out", PROC], [PROC], False),
    # ---------------------------------------------------------------- benchmarks: front-ends
    ("frontends-inputs-0", ["benchmarks.frontends", "--inputs", "0"], ["--inputs 0"], True),
    ("frontends-inputs-huge", ["benchmarks.frontends", "--inputs", HUGE], [f"--inputs {HUGE}"], False),
    ("frontends-zoo", ["benchmarks.frontends", "--zoo", "nope"], ["nope"], False),
    ("frontends-out-proc", ["benchmarks.frontends", "--out", PROC], [PROC], False),
    ("onnx_conformance-regex", ["benchmarks.onnx_conformance", "-k", "("], ["-k", "("], True),
    ("onnx_conformance-out-proc", ["benchmarks.onnx_conformance", "--out", PROC], [PROC], False),
    ("onnx_conformance-out-dir", ["benchmarks.onnx_conformance", "--out", "{dir}"], ["{dir}"], False),
    ("host_speed-runs-0", ["benchmarks.host_speed", "--runs", "0"], ["--runs 0"], True),
    ("host_speed-runs-huge", ["benchmarks.host_speed", "--runs", HUGE], [f"--runs {HUGE}"], False),
    ("host_speed-models", ["benchmarks.host_speed", "--models", "nope"], ["nope"], False),
    ("host_speed-out-proc", ["benchmarks.host_speed", "--out", PROC], [PROC], False),
    # ---------------------------------------------------------------- benchmarks: compilation and co-simulation
    ("table1-budget-inf", ["benchmarks.table1", "--budget", "inf"], ["--budget inf"], True),
    ("table1-budget-nan", ["benchmarks.table1", "--budget", "nan"], ["--budget nan"], False),
    ("table1-budget-neg", ["benchmarks.table1", "--budget", "-1"], ["--budget -1"], False),
    ("table1-ledger-nonutf8", ["benchmarks.table1", "--ledger", "{nonutf8}", "--out", "{out}"], ["{nonutf8}"], False),
    ("table1-ledger-dir", ["benchmarks.table1", "--ledger", "{dir}", "--out", "{out}"], ["{dir}"], False),
    ("table1-ledger-deep", ["benchmarks.table1", "--ledger", "{deep}", "--out", "{out}"], ["{deep}"], False),
    ("table1-ledger-bad", ["benchmarks.table1", "--ledger", "{bad_ledger}", "--out", "{out}"], ["{bad_ledger}"],
     False),
    ("table1-out-proc", ["benchmarks.table1", "--out", PROC], [PROC], False),
    ("table1-out-dir", ["benchmarks.table1", "--out", "{dir}"], ["{dir}"], False),
    ("table1-certify", ["benchmarks.table1", "--certify", "bogus"], ["bogus"], False),
    ("figure7-side-3", ["benchmarks.figure7", "--side", "3"], ["--side 3"], True),
    ("figure7-side-huge", ["benchmarks.figure7", "--side", "99999999", "--out", "{out}"], ["99999999", "memory"],
     False),
    ("figure7-out-proc", ["benchmarks.figure7", "--out", PROC], [PROC], False),
    ("figure7-out-dir", ["benchmarks.figure7", "--out", "{dir}"], ["{dir}"], False),
    ("figure7-ledger-dir", ["benchmarks.figure7", "--ledger", "{dir}", "--out", "{out}"], ["{dir}"], False),
    ("cosim-images-0", ["benchmarks.cosim", "--images", "0"], ["--images 0"], True),
    ("cosim-images-huge", ["benchmarks.cosim", "--images", HUGE], [f"--images {HUGE}"], False),
    ("cosim-model", ["benchmarks.cosim", "--model", "nope", "--out", "{out}"], ["nope"], False),
    ("cosim-model-empty-onnx", ["benchmarks.cosim", "--model", "{empty_onnx}", "--out", "{out}"], ["{empty_onnx}"],
     False),
    ("cosim-model-huge-onnx", ["benchmarks.cosim", "--model", "{huge_onnx}", "--out", "{out}"],
     ["99999999", "memory"], False),
    ("cosim-targets", ["benchmarks.cosim", "--targets", "nope", "--out", "{out}"], ["nope"], False),
    ("cosim-ledger-dir", ["benchmarks.cosim", "--ledger", "{dir}", "--out", "{out}"], ["{dir}"], False),
    ("cosim-out-proc", ["benchmarks.cosim", "--out", PROC], [PROC], False),
    # ---------------------------------------------------------------- benchmarks: training and table 4
    ("train-unknown", ["benchmarks.train", "nope"], ["nope"], True),
    ("train-epochs-0", ["benchmarks.train", "resnet20", "--epochs", "0"], ["--epochs 0"], False),
    ("train-threads-0", ["benchmarks.train", "resnet20", "--threads", "0"], ["--threads 0"], False),
    ("train-threads-huge", ["benchmarks.train", "resnet20", "--threads", HUGE], [f"--threads {HUGE}"], False),
    ("train-steps-0", ["benchmarks.train", "resnet20", "--max-steps", "0"], ["--max-steps 0"], False),
    ("train-data", ["benchmarks.train", "resnet20", "--data", "nope"], ["nope"], False),
    ("train-out-proc", ["benchmarks.train", "resnet20", "--out", PROC], [PROC], False),
    ("table4-workers-0", ["benchmarks.table4", "--workers", "0", "--out", "{out}"], ["--workers 0"], True),
    ("table4-report-only-corrupt", ["benchmarks.table4", "--report-only", "--results", "{corrupt_jsonl}", "--out",
                                    "{out}"], ["{corrupt_jsonl}", "line 2"], False),
    ("table4-samples-huge", ["benchmarks.table4", "--samples", HUGE, "--out", "{out}"], [HUGE, "at most"], False),
    ("table4-samples-app-huge", ["benchmarks.table4", "--samples", f"resnet20={HUGE}", "--out", "{out}"],
     [HUGE, "at most"], False),
    ("table4-apps", ["benchmarks.table4", "--apps", "nope", "--out", "{out}"], ["nope"], False),
    ("table4-block-0", ["benchmarks.table4", "--block", "0", "--out", "{out}"], ["--block 0"], False),
    ("table4-sentences-neg", ["benchmarks.table4", "--sentences", "-1", "--out", "{out}"], ["--sentences -1"], False),
    ("table4-dataset", ["benchmarks.table4", "--dataset", "nope", "--out", "{out}"], ["nope"], False),
    ("table4-train-steps-0", ["benchmarks.table4", "--train-steps", "0", "--out", "{out}"], ["--train-steps 0"],
     False),
    ("table4-scheduler", ["benchmarks.table4", "--scheduler", "garbage://", "--out", "{out}"], ["garbage://"], False),
    ("table4-results-dir", ["benchmarks.table4", "--results", "{dir}", "--out", "{out}"], ["{dir}"], False),
    ("table4-ledger-nonutf8", ["benchmarks.table4", "--ledger", "{nonutf8}", "--out", "{out}"], ["{nonutf8}"], False),
    ("table4-out-proc", ["benchmarks.table4", "--out", PROC], [PROC], False),
    ("table4-report-only-scheduler", ["benchmarks.table4", "--report-only", "--scheduler", "tcp://127.0.0.1:1",
                                      "--out", "{out}"], ["--scheduler", "--report-only"], False),
    ("regenerate-scheduler", ["benchmarks.regenerate", "--scheduler", "garbage://"], ["garbage://"], True),
    ("regenerate-workers-0", ["benchmarks.regenerate", "--workers", "0"], ["--workers 0"], False),
    ("regenerate-workers-huge", ["benchmarks.regenerate", "--workers", HUGE], [f"--workers {HUGE}"], False),
    ("regenerate-only", ["benchmarks.regenerate", "--only", "nope"], ["nope"], False),
    ("regenerate-unreachable", ["benchmarks.regenerate", "--scheduler", "tcp://127.0.0.1:1"],
     ["tcp://127.0.0.1:1"], False),
]

CLIS = sorted({argv[0] for _, argv, _, _ in CASES})


def _fill(s: str, fx: dict) -> str:
    for k, v in fx.items():
        s = s.replace("{" + k + "}", v)
    return s


def _snapshot(*roots) -> dict:
    """(path -> size, mtime) of every file and directory under ``roots``."""
    out = {}
    for r in roots:
        r = pathlib.Path(r)
        if not r.exists():
            continue
        for p in [r, *r.rglob("*")]:
            st = p.lstat()
            out[str(p)] = (st.st_size, st.st_mtime_ns) if not p.is_dir() else ("dir",)
    return out


def run_case(argv, fx: dict, timeout: float = 240):
    """Run ``python -m argv`` (fixtures filled in) in its own session; returns (exit, stdout, stderr,
    files changed)."""
    tmp = pathlib.Path(fx["tmp"])
    env = {**os.environ, "D2A_LEDGER": str(tmp / "user-ledger.json"), "D2A_LEDGER_BASE": "",
           "D2A_CACHE": str(tmp / "cache"), "PYTHONWARNINGS": "ignore"}
    args = [_fill(a, fx) for a in argv]
    watched = (ROOT / "paper_results", tmp)
    before = _snapshot(*watched)
    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {timeout} s)"
    after = _snapshot(*watched)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return proc.returncode, out, err, changed


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return make_fixtures(tmp_path_factory.mktemp("malformed"))


def _params():
    for cid, argv, says, fast in CASES:
        yield pytest.param(argv, says, id=cid, marks=[] if fast else [pytest.mark.slow])


@pytest.mark.parametrize("argv, says", list(_params()))
def test_malformed_input_is_one_line_and_exit_2(fixtures, argv, says):
    code, out, err, changed = run_case(argv, fixtures)
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert code == 2, (code, err[-2000:])
    if "--json" in argv:
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 1, out
        line = json.loads(lines[0])["error"]
        assert not err.strip(), err
    else:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        line = lines[0]
        assert not out.strip(), out[-2000:]
    for s in says:
        assert _fill(s, fixtures) in line, (s, line)
    assert not changed, changed


def test_every_cli_is_in_the_table():
    """Every module with a ``__main__`` block under ila/, verify/, compile/, benchmarks/ has cases,
    and one of them is in the fast suite."""
    mains = set()
    for pkg in ("ila", "verify", "compile", "benchmarks"):
        for f in (ROOT / pkg).rglob("*.py"):
            if 'if __name__ == "__main__"' in f.read_text():
                parts = list(f.relative_to(ROOT).with_suffix("").parts)
                mains.add(".".join(parts[:-1] if parts[-1] == "__main__" else parts))
    assert mains == set(CLIS), (sorted(mains - set(CLIS)), sorted(set(CLIS) - mains))
    fast = {argv[0] for _, argv, _, f in CASES if f}
    assert fast == set(CLIS), sorted(set(CLIS) - fast)


def test_every_cli_parses_and_prints_through_the_one_printer():
    """No module builds a plain argparse parser (its errors are a usage text and a second line) or
    prints its own ``error:`` line: ila.cli.ArgumentParser and ila.errors.report do both."""
    bad = []
    for pkg in ("ila", "verify", "compile", "benchmarks"):
        for f in (ROOT / pkg).rglob("*.py"):
            src = f.read_text()
            if "argparse.ArgumentParser(" in src and f.name != "cli.py":
                bad.append(f"{f.relative_to(ROOT)}: argparse.ArgumentParser")
            if ('print(f"error:' in src or "print('error:" in src or 'print("error:' in src) and f.name != "errors.py":
                bad.append(f"{f.relative_to(ROOT)}: prints its own error line")
    assert not bad, bad


if __name__ == "__main__":                      # the survey: outcomes without assertions
    import argparse
    import tempfile
    import time
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    fx = make_fixtures(pathlib.Path(tempfile.mkdtemp(prefix="malformed-")))
    for cid, argv, says, _ in CASES:
        if a.k not in cid:
            continue
        t0 = time.perf_counter()
        code, out, err, changed = run_case(argv, fx, a.timeout)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        tb = "Traceback" in err
        last = (lines[-1] if lines else (out.strip().splitlines() or [""])[-1])[:150]
        ok = code == 2 and not tb and len(lines) == 1 and lines[0].startswith("error:") and not changed
        if "--json" in argv:
            ok = code == 2 and not tb and not err.strip() and out.strip().startswith('{"error"') and not changed
        print(f"{cid:34} {'ok ' if ok else 'BAD'} exit {code!s:4} lines {len(lines):3} tb {int(tb)} "
              f"changed {len(changed)} {time.perf_counter() - t0:5.1f}s | {last}", flush=True)
