"""The front-ends on the paper's six applications and on the onnx wheel's light model zoo ->
``paper_results/frontends.md``.

Per application: the number of IR operators beside the paper's Relay operator count (Table 1,
row 3), the operator histogram, the import time, the maximum relative difference between our host
runtime and onnxruntime and torch over random inputs through both front-ends (``from_torch``, and
``from_onnx`` of an exported ``.onnx`` file), and the host runtime's CPU seconds per inference beside
onnxruntime's in the same process, one thread each (``compile.runtime.threads``; the careful speed
comparison is ``python -m benchmarks.host_speed``).

The zoo (nine models in ``onnx/backend/test/data/light``): their large weights are constant fills
(``ConstantOfShape``), so their outputs do not depend on the input and the shipped outputs say
little. Each model is therefore also imported with every floating-point fill replaced by seeded
random weights (:func:`randomised`: He-scaled convolution and dense weights, batch-norm scales in
[0.5, 1.5], small biases; batch-norm variances then :func:`calibrated` on a random input), run on
another seeded random input, and **every intermediate tensor** is
compared with onnxruntime's (graph optimisations off, one thread): the maximum over tensors of
max|ours - onnxruntime| / max|onnxruntime|. Each randomised model is also compiled for FlexASR,
HLSCNN and VTA with flexible matching (``compile.compiler.compile_graph``, certificates from the
committed ledger only, none obtained on demand), and its offloads counted.

Run: ``python -m benchmarks.frontends [--quick] [--inputs N] [--zoo NAMES] [--no-compile] [--out PATH]``
(``--quick``: ResNet-20, LSTM-WLM and two zoo models, 2 inputs).
"""
from __future__ import annotations

import os
import pathlib
import platform
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "paper_results" / "frontends.md"
LEDGER = ROOT / "paper_results" / "ledger.json"
PAPER_RELAY_OPS = {"efficientnet_b0": 232, "lstm_wlm": 578, "mobilenet_v2": 757, "resmlp": 343, "resnet20": 494,
                   "transformer": 872}
LIGHT = ["squeezenet", "shufflenet", "resnet50", "densenet121", "inception_v2", "vgg19", "bvlc_alexnet",
         "inception_v1", "zfnet512"]
TARGETS = ("flexasr", "hlscnn", "vta")
TOLERANCE = 1e-5          # per-tensor relative error the zoo must stay within


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0 and b.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _feeds(graph, rng):
    return {v.name: (rng.integers(0, 10000, v.shape) if v.dtype.startswith("int") else
                     rng.standard_normal(v.shape)).astype(v.dtype) for v in graph.inputs}


def ort_session(model, optimise: bool = True):
    """An onnxruntime CPU session of ``model`` on one intra-op and one inter-op thread."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if not optimise:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


# ----------------------------------------------------------------------------- the six applications
TIMED_RUNS = 3          # alternating host / onnxruntime runs per input; the medians are compared
def application(name: str, inputs: int):
    import onnx
    import torch
    from benchmarks.models import get
    from compile.frontend import from_onnx
    from compile.frontend.torch import to_onnx
    from compile.runtime import run
    from compile.runtime.threads import MEASURE_THREADS, host_threads
    torch.set_num_threads(1)
    m, ex = get(name)
    t0 = time.perf_counter()
    proto = to_onnx(m, ex)
    g = from_onnx(proto, name=name)                     # = from_torch(m, ex)
    t_import = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:            # the ONNX front-end on a file exported by torch
        path = os.path.join(d, f"{name}.onnx")
        onnx.save(proto, path)
        g_file = from_onnx(path)
    sess = ort_session(proto)
    names = [i.name for i in sess.get_inputs()]
    rng = np.random.default_rng(0)
    worst = {"ort": 0.0, "torch": 0.0, "file": 0.0}
    t_host, t_ort = [], []
    warm = _feeds(g, np.random.default_rng(1))                # one untimed run each: caches and first calls
    with host_threads(MEASURE_THREADS):
        run(g, warm)
    sess.run(None, {n: warm[v.name] for n, v in zip(names, g.inputs)})
    # everything on one thread, the checks between timed runs too: a library pool of two threads
    # left spinning after a check (OpenBLAS, OpenMP) would be counted in the next run's CPU time
    with host_threads(MEASURE_THREADS):
        for _ in range(inputs):
            feeds = _feeds(g, rng)
            ofeeds = {n: feeds[v.name] for n, v in zip(names, g.inputs)}
            for _ in range(TIMED_RUNS):                       # alternating runs on this input, both sides
                t0 = time.process_time()
                got = run(g, feeds)[0]
                t_host.append(time.process_time() - t0)
                t0 = time.process_time()
                ref = sess.run(None, ofeeds)[0]
                t_ort.append(time.process_time() - t0)
            with torch.no_grad():
                want = m(*[torch.from_numpy(feeds[v.name]) for v in g.inputs])
            worst["ort"] = max(worst["ort"], _rel(got, ref))
            worst["torch"] = max(worst["torch"], _rel(got, want.numpy()))
            worst["file"] = max(worst["file"], _rel(run(g_file, {v.name: feeds[w.name] for v, w in
                                                                 zip(g_file.inputs, g.inputs)})[0], want.numpy()))
    return {"ops": len(g), "hist": g.op_histogram(), "import": t_import, "worst": worst,
            "host": float(np.median(t_host)), "ort": float(np.median(t_ort))}


NOTES = {
    "lstm_wlm": "the LSTM is one nn.lstm operator (Relay unrolls the 35 steps: 566 of its 578 operators)",
    "transformer": "attention as dense/matmul/softmax/layer_norm; shape arithmetic folded at import",
    "resnet20": "batch-norm folded into the convolutions by the exporter; Relay keeps nn.batch_norm and "
                "separate bias/relu/pad operators",
    "mobilenet_v2": "batch-norm folded; ReLU6 is one clip",
    "efficientnet_b0": "batch-norm folded; SiLU as sigmoid and multiply",
    "resmlp": "affine layers as multiply/add; GELU one operator",
}


# ----------------------------------------------------------------------------- the light model zoo
def light_path(name: str) -> str:
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")


def _consumer(model, name):
    """(node, input index) of the operator that finally uses value ``name``, through layout-only
    nodes (Unsqueeze, Reshape, Identity, Cast); (None, -1) if nothing does."""
    users = {}
    for nd in model.graph.node:
        for k, i in enumerate(nd.input):
            users.setdefault(i, []).append((nd, k))
    seen = 0
    while name in users and seen < 8:
        nd, k = users[name][0]
        if nd.op_type in ("Unsqueeze", "Reshape", "Identity", "Cast") and k == 0:
            name, seen = nd.output[0], seen + 1
            continue
        return nd, k
    return None, -1


def _draw(rng, node, k, shape):
    op = node.op_type if node is not None else ""
    normal = rng.standard_normal(shape)
    if op == "Conv" and k == 1:
        return normal * np.sqrt(2.0 / max(int(np.prod(shape[1:])), 1))
    if op == "Gemm" and k == 1:
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        return normal * np.sqrt(1.0 / max(shape[1] if trans_b else shape[0], 1))
    if (op == "BatchNormalization" and k in (1, 4)) or op == "Mul":
        return rng.uniform(0.5, 1.5, shape)
    return normal * 0.1


def randomised(model, seed: int = 0):
    """A copy of ``model`` with every floating-point ``ConstantOfShape`` of a constant shape
    replaced by an initializer of seeded random values, drawn by what uses it (:func:`_draw`)."""
    import onnx
    from onnx import numpy_helper
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    keep, added = [], []
    for nd in m.graph.node:
        if nd.op_type == "ConstantOfShape" and nd.input and nd.input[0] in inits:
            value = next((numpy_helper.to_array(a.t) for a in nd.attribute if a.name == "value"),
                         np.zeros(1, np.float32))
            if value.dtype.kind == "f":
                shape = tuple(int(v) for v in inits[nd.input[0]])
                user, k = _consumer(m, nd.output[0])
                added.append(numpy_helper.from_array(_draw(rng, user, k, shape).astype(value.dtype), nd.output[0]))
                continue
        keep.append(nd)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    m.graph.initializer.extend(added)
    return m


def calibrated(model, seed: int = 1):
    """``model`` with the variance of every batch normalisation whose statistics are named
    initializers set to its input's mean square (over all channels: a channel that ReLUs left
    nearly dead is not blown up) on a seeded random input, the mean kept (small random), so random
    weights keep activations at unit scale through deep residual stacks and the output depends on
    the input, without subtracting a large common part (which would amplify float32 rounding
    geometrically with depth in any implementation). One pass of the IR's own operators."""
    from onnx import numpy_helper
    from compile.frontend import from_onnx
    from compile.ir import ops
    from compile.ir.graph import Const, Var
    g = from_onnx(model)
    rng = np.random.default_rng(seed)
    env, stats = {}, {}
    for v in g.values():
        if isinstance(v, Var):
            env[v.uid] = rng.standard_normal(v.shape).astype(v.dtype)
        elif isinstance(v, Const):
            env[v.uid] = v.value
        else:
            args = [env[a.uid] for a in v.args]
            if v.op == "nn.batch_norm" and all(isinstance(a, Const) and a.name for a in v.args[3:5]):
                x = args[0].astype(np.float64)
                ms = np.full(args[4].shape, (x * x).mean())
                args[4] = stats[v.args[4].name] = ms.astype(args[4].dtype)
            env[v.uid] = ops.evaluate(v.op, args, v.attrs)
    for init in model.graph.initializer:
        if init.name in stats:
            init.CopyFrom(numpy_helper.from_array(stats[init.name], init.name))
    return model


def _with_all_outputs(model, names, dtypes):
    """``model`` with the values ``names`` as its outputs (typed by ONNX shape inference, else by
    ``dtypes``: {name: numpy dtype name})."""
    import onnx
    from onnx import helper
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    m.graph.output.extend(types[n] if n in types else
                          helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dtypes[n])), None)
                          for n in names)
    return m


def _tensors(model):
    """Every node output to compare (not the unused extra outputs of Dropout, MaxPool, BatchNorm)."""
    out = []
    for nd in model.graph.node:
        extra_ok = nd.op_type not in ("Dropout", "MaxPool", "BatchNormalization")
        out += [o for k, o in enumerate(nd.output) if o and (k == 0 or extra_ok)]
    return out


def local_errors(graph, names, ref, feeds) -> list[float]:
    """Per ONNX tensor, the relative difference of our value computed from onnxruntime's values of
    the node's inputs (each IR operator fed onnxruntime's tensors wherever an ONNX tensor flows in):
    the operators' own error, without the float32 rounding a deep network carries forward."""
    from compile.ir import ops
    from compile.ir.graph import Const, Node, Var
    at = {}
    for k, v in enumerate(graph.outputs):
        at.setdefault(v.uid, k)
    env = {}
    for v in graph.values():
        if isinstance(v, Var):
            env[v.uid] = feeds[v.name]
        elif isinstance(v, Const):
            env[v.uid] = v.value
        elif isinstance(v, Node):
            args = [ref[at[a.uid]] if a.uid in at and isinstance(a, Node) else env[a.uid] for a in v.args]
            env[v.uid] = ops.evaluate(v.op, args, v.attrs)
    return [_rel(env[v.uid], r) if isinstance(v, Node) else _rel(env[v.uid], r) for v, r in zip(graph.outputs, ref)]


def zoo_model(name: str, compile_it: bool = True, seed: int = 0):
    """The zoo row of ``name``: the original against its shipped output, the randomised model's
    every tensor against onnxruntime, its offloads."""
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.runner import Runner
    from compile.frontend import from_onnx
    from compile.runtime import run
    from compile.runtime.threads import MEASURE_THREADS, host_threads
    path = light_path(name)
    original = onnx.load(path)
    inits = {i.name for i in original.graph.initializer}
    row = {"name": name}
    feeds = {i.name: Runner.generate_dummy_data(i, seed=0, name=f"light_{name}", random=False)
             for i in original.graph.input if i.name not in inits}
    shipped = numpy_helper.to_array(onnx.load_tensor(path.replace(".onnx", "_output_0.pb")))
    g0 = from_onnx(original, name=name)
    with host_threads(MEASURE_THREADS):
        row["shipped"] = _rel(run(g0, feeds)[0], shipped)
    model = calibrated(randomised(original, seed), seed + 1)
    names = _tensors(model)
    t0 = time.perf_counter()
    g = from_onnx(model, name=name, outputs=names)
    row["import"] = time.perf_counter() - t0
    row["ops"] = len(from_onnx(model, name=name))
    rng = np.random.default_rng(seed)
    feeds = {v.name: rng.standard_normal(v.shape).astype(v.dtype) for v in g.inputs}
    with host_threads(MEASURE_THREADS):
        ours = run(g, feeds)
    dtypes = {n: v.dtype for n, v in zip(names, g.outputs)}
    ref = ort_session(_with_all_outputs(model, names, dtypes), optimise=False).run(names, feeds)
    errs = [(_rel(a, b), n) for a, b, n in zip(ours, ref, names)]
    bad_shape = [n for a, b, n in zip(ours, ref, names) if np.shape(a) != np.shape(b)]
    row["tensors"], row["worst"], row["worst_tensor"] = len(names), *max(errs)
    with host_threads(MEASURE_THREADS):
        row["local"], row["local_tensor"] = max(zip(local_errors(g, names, ref, feeds), names))
    row["shape_mismatch"] = bad_shape
    row["output_changes"] = _rel(run(g, {k: np.zeros_like(v) for k, v in feeds.items()})[-1], ours[-1]) > 0
    if compile_it:
        from compile.compiler import compile_graph
        t0 = time.perf_counter()
        res = compile_graph(from_onnx(model, name=name), TARGETS, matching="flexible", certify="none",
                            ledger_path=str(LEDGER))
        row["compile"] = time.perf_counter() - t0
        row["offloads"] = res.counts()
        row["per_acc"] = res.per_accelerator()
        row["host_ops"] = res.host_ops
        row["refused"] = len(res.refused)
    return row


def main(argv=None) -> int:
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m benchmarks.frontends", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="ResNet-20, LSTM-WLM and two zoo models, 2 inputs")
    ap.add_argument("--inputs", type=int, default=10, help="random inputs per application")
    ap.add_argument("--zoo", help="comma-separated zoo models (default all nine)")
    ap.add_argument("--no-compile", action="store_true", help="do not compile the zoo models")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    from ila.errors import D2AError, report
    try:                                    # every argument checked before any work
        from ila.cli import check_count, check_names, output_file
        check_count("--inputs", args.inputs, item_bytes=4096, what="random inputs")
        if args.zoo is not None:
            check_names("--zoo", [z for z in args.zoo.split(",") if z.strip()], LIGHT, what="zoo model")
        output_file(args.out, "--out")
        return _main(args)
    except D2AError as exc:
        return report(exc)


def _main(args) -> int:
    from benchmarks.models import NAMES
    names = ["resnet20", "lstm_wlm"] if args.quick else list(NAMES)
    inputs = 2 if args.quick else args.inputs
    zoo = args.zoo.split(",") if args.zoo else (["squeezenet", "bvlc_alexnet"] if args.quick else LIGHT)
    rows = {}
    for n in names:
        rows[n] = r = application(n, inputs)
        print(f"{n:16} {r['ops']:5} ops  import {r['import']:6.2f} s  rel ort {r['worst']['ort']:.1e} torch "
              f"{r['worst']['torch']:.1e} file {r['worst']['file']:.1e}  host {r['host'] * 1e3:.2f} ms  ort {r['ort'] * 1e3:.2f} ms",
              flush=True)
    zrows = []
    for n in zoo:
        zrows.append(r := zoo_model(n, compile_it=not args.no_compile))
        print(f"{n:14} {r['ops']:4} ops  {r['tensors']:4} tensors  worst rel {r['worst']:.1e} ({r['worst_tensor']})  "
              f"shipped {r['shipped']:.1e}  offloads {r.get('offloads', '-')}", flush=True)
    L = ["# Front-ends on the paper's applications and the ONNX light model zoo", "",
         f"Measured by `python -m benchmarks.frontends{' --quick' if args.quick else ''}` on "
         f"{platform.node() or 'this machine'} ({platform.machine()}, {os.cpu_count()} cores, Python "
         f"{platform.python_version()}), {time.strftime('%Y-%m-%d')}; {inputs} random inputs per application, seeded; "
         "the host runtime, torch and onnxruntime on 1 thread each; CPU time per inference after one untimed run, "
         f"the median of {TIMED_RUNS} alternating host / onnxruntime runs on each input (`time.process_time`: the "
         "machine is shared, wall time is not comparable; more runs and the zoo: `python -m benchmarks.host_speed`, "
         "paper_results/host_speed.md). Models defined in `benchmarks/models/` with seeded random weights (not "
         "trained).", "",
         "| Application | IR ops (here) | Relay ops (paper) | Import (s) | Max rel. diff vs onnxruntime | vs torch | "
         "via .onnx file vs torch | Host CPU ms/inference | onnxruntime CPU ms/inference | Ratio |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in rows.items():
        L.append(f"| {n} | {r['ops']} | {PAPER_RELAY_OPS[n]} | {r['import']:.2f} | {r['worst']['ort']:.1e} | "
                 f"{r['worst']['torch']:.1e} | {r['worst']['file']:.1e} | {r['host'] * 1e3:.2f} | {r['ort'] * 1e3:.2f} | "
                 f"{r['host'] / max(r['ort'], 1e-9):.1f} |")
    L += ["", "Why the counts differ from the paper's Relay counts (the script states, it does not measure this):", ""]
    L += [f"- {n}: {NOTES[n]}" for n in rows]
    L += ["", "Operator histograms:", ""]
    L += [f"- {n}: " + ", ".join(f"{op} {c}" for op, c in r["hist"].items()) for n, r in rows.items()]
    if zrows:
        ok = sum(r["worst"] <= TOLERANCE and not r["shape_mismatch"] for r in zrows)
        L += ["", "## The onnx wheel's light model zoo with random weights, every tensor against onnxruntime", "",
              f"**{len(zrows)}/{len(LIGHT)} zoo models imported; {ok}/{len(zrows)} with every intermediate tensor "
              f"within {TOLERANCE:g} (relative) of onnxruntime.** Weights: each floating-point `ConstantOfShape` fill "
              "replaced by seeded random values (`benchmarks.frontends.randomised`), batch-norm variances set to "
              "the layer's mean square on a random input (`calibrated`); input: another seeded standard normal. "
              "Per tensor: max |ours - onnxruntime| / max |onnxruntime| (onnxruntime with graph optimisations off), "
              "end to end (our run vs onnxruntime's) and per operator (each IR operator fed onnxruntime's values of "
              "the ONNX tensors it reads: the operators' own error, `benchmarks.frontends.local_errors`). "
              "*Shipped*: the original constant-fill model against the wheel's expected output (input-independent, "
              "so it shows little). *Output depends on input*: the randomised model's output changes when the "
              "input is zeroed. Offloads: `compile_graph(graph, ('flexasr', 'hlscnn', 'vta'), "
              "matching='flexible', certify='none')` with the committed ledger (no certificate obtained on demand: "
              "a model is offloaded where earlier runs certified its calls, e.g. the tiles of resnet50 and vgg19 "
              "certified by `python -m benchmarks.cosim --model light_<model>`; the others' tile shapes have no "
              "certificate yet).", "",
              "| Model | IR ops | Tensors compared | Max rel. diff, end to end (worst tensor) | Max rel. diff per "
              "operator (worst tensor) | Output depends on input | Shipped output, original model | Offloads "
              "(flexasr / hlscnn / vta) | Host compute ops left | Gate refusals | Compile (s) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in zrows:
            pa = r.get("per_acc")
            off = "–" if pa is None else " / ".join(str(pa.get(t, 0)) for t in TARGETS)
            tail = (f"{off} | {r.get('host_ops', '–')} | {r.get('refused', '–')} | {r['compile']:.1f} |"
                    if "compile" in r else "– | – | – | – |")
            L.append(f"| {r['name']} | {r['ops']} | {r['tensors']} | {r['worst']:.1e} (`{r['worst_tensor']}`) | "
                     f"{r['local']:.1e} (`{r['local_tensor']}`) | {'yes' if r['output_changes'] else 'no'} | "
                     f"{r['shipped']:.1e} | " + tail)
        mapped = sorted({m for r in zrows for m in r.get("offloads", {})})
        if mapped:
            L += ["", "Offloads by mapping: " + "; ".join(
                f"{r['name']}: " + ", ".join(f"{m} {c}" for m, c in r["offloads"].items())
                for r in zrows if r.get("offloads"))]
    L.append("")
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text("\n".join(L))
    print(f"wrote {args.out}")
    bad = [n for n, r in rows.items() if max(r["worst"].values()) > 1e-4]
    bad += [r["name"] for r in zrows if r["worst"] > TOLERANCE or r["shape_mismatch"]]
    if bad:
        print(f"over tolerance: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
