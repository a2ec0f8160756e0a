"""``python -m compile.run MODEL``: import a model and run one random input on the host runtime.

MODEL is an application's short name (:mod:`compile.applications`: the paper's six,
efficientnet_b0, lstm_wlm, mobilenet_v2, resmlp, resnet20, transformer, registered as entry
points), a PyTorch factory reference ``package.module:function`` (imported with ``from_torch``, or
with ``--frontend onnx`` through an exported ONNX file), or a path to an ``.onnx`` file. Prints the
number of IR operators, the output shapes and first values, the import and run times (seconds),
and the maximum relative difference to onnxruntime (and to torch for an application). Any user
error (unknown model, unreadable file, unsupported operator) is one ``error: ...`` line, exit 2.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from ila.errors import D2AError, report


def _random_inputs(graph, rng):
    out = {}
    for v in graph.inputs:
        if v.dtype.startswith("int"):
            out[v.name] = rng.integers(0, 100, v.shape).astype(v.dtype)
        else:
            out[v.name] = rng.standard_normal(v.shape).astype(v.dtype)
    return out


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def main(argv=None) -> int:
    """The CLI; returns the exit code (2 for a user error)."""
    from ila.cli import ArgumentParser, check_int
    ap = ArgumentParser(prog="python -m compile.run", description=__doc__.splitlines()[0])
    ap.add_argument("model", help="application name (compile.applications), package.module:function, or .onnx path")
    ap.add_argument("--frontend", choices=["torch", "onnx"], default="torch",
                    help="for an application: import from PyTorch directly, or through an exported ONNX file")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        check_int("--seed", args.seed, 0, 2 ** 64 - 1)
    except D2AError as exc:
        return report(exc)
    from compile.frontend import from_onnx
    from compile.runtime import run
    rng = np.random.default_rng(args.seed)
    try:
        t0 = time.perf_counter()
        module = proto = None
        if args.model.endswith(".onnx") or os.path.sep in args.model:
            graph = from_onnx(args.model)
            import onnx
            proto = onnx.load(args.model)
        else:
            from compile.applications import load
            module, ex = load(args.model, args.seed)
            import torch
            torch.set_num_threads(1)
            from compile.frontend.torch import to_onnx
            proto = to_onnx(module, ex)                    # what from_torch does, kept for onnxruntime
            if args.frontend == "onnx":                    # through a file, as a user with an .onnx would
                import tempfile
                import onnx
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "model.onnx")
                    onnx.save(proto, path)
                    graph = from_onnx(path)
            else:
                graph = from_onnx(proto, name=args.model.rpartition(":")[2])
        t_import = time.perf_counter() - t0
        from compile.applications import check_inputs_fit
        check_inputs_fit(graph)
        feeds = _random_inputs(graph, rng)
        t0 = time.perf_counter()
        outs = run(graph, feeds)
        t_run = time.perf_counter() - t0
    except D2AError as exc:
        return report(exc)
    print(f"{args.model}: {len(graph)} IR operators; import {t_import:.2f} s, host run {t_run:.3f} s")
    for k, o in enumerate(outs):
        print(f"output {k}: shape {tuple(o.shape)} first values {np.round(o.ravel()[:5], 5).tolist()}")
    if proto is not None:
        import onnxruntime as ort
        sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        ref = sess.run(None, {n: feeds[v.name] for n, v in zip(names, graph.inputs)})
        print(f"max relative difference to onnxruntime: {max(_rel(a, b) for a, b in zip(outs, ref)):.2e}")
    if module is not None:
        import torch
        with torch.no_grad():
            want = module(*[torch.from_numpy(feeds[v.name]) for v in graph.inputs])
        want = want if isinstance(want, (tuple, list)) else (want,)
        print(f"max relative difference to torch: {max(_rel(a, b.numpy()) for a, b in zip(outs, want)):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
