"""Application-level co-simulation (paper §4.4.2): the host runtime with every accelerator call of
a compiled program executed by its accelerator's ILA simulator.

``cosimulate(compiled, inputs)`` walks the extracted program (:mod:`compile.program`): host steps
run the IR operator in numpy (:func:`compile.ir.ops.evaluate`); a call step hands its operands to
the mapping's end-to-end runner (the MMIO stream its code generator emits, decoded by the ILA
simulator; :attr:`mappings.base.Mapping.run_accelerator`), reshaped by
:func:`compile.offload.mapping_inputs`. A chain of calls that keeps its data in the accelerator
(:mod:`compile.chains`, Figure 7 (f)) runs as one fused program: one store, the calls,
one load, on one simulator state.

Per invocation it records (:class:`Invocation`): seconds, the Frobenius relative error against the
float32 host result of the same IR term on the same operand values, input and output ranges,
``flushed`` (host value non-zero, accelerator value 0) and ``saturated`` (the accelerator value
sits at the largest magnitude it produced while the host value is larger in magnitude by more than
the mapping's tolerance). A call whose operands violate one of the mapping's data conditions is
not run on the accelerator: it runs on the host and is reported as refused, naming the condition.

Source of the statistics: the paper's §4.4.2 (per-invocation error and value ranges to locate the
cause of an application-level accuracy loss).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.ir import ops
from compile.ir.graph import Const, Node


@dataclass
class Invocation:
    step: int
    mapping: str
    shape: str
    source: str                  # the IR node's source (ONNX node name / PyTorch module path)
    seconds: float
    error: float                 # Frobenius relative error vs the float32 host result
    in_range: tuple              # (min, max) over all operands
    out_range: tuple             # (min, max) of the accelerator result
    ref_range: tuple             # (min, max) of the host result
    flushed: int
    saturated: int
    size: int                    # elements of the result
    refused: str = ""            # a violated data condition: the call ran on the host instead
    violated: str = ""           # a violated data condition, run on the accelerator anyway (guard off)
    fused: int = 0               # > 0: part of a fused chain of that many calls (one store, one load)


@dataclass
class CosimResult:
    outputs: list
    invocations: list = field(default_factory=list)
    host_seconds: float = 0.0
    accelerator_seconds: float = 0.0

    def report(self) -> str:
        """The per-invocation table (text)."""
        head = f"{'step':>5} {'mapping':<18} {'shape':<22} {'error %':>9} {'out range':>22} {'flushed':>8} " \
               f"{'satur.':>7} {'s':>7}  source"
        rows = [head]
        for v in self.invocations:
            err = "refused" if v.refused else f"{100 * v.error:.3f}"
            fused = f" [fused x{v.fused}]" if v.fused else ""
            rows.append(f"{v.step:>5} {v.mapping:<18} {v.shape:<22} {err:>9} "
                        f"{'[%.3g, %.3g]' % v.out_range:>22} {v.flushed:>8} {v.saturated:>7} {v.seconds:>7.3f}  "
                        f"{v.source}{fused}{'  (' + v.refused + ')' if v.refused else ''}"
                        f"{'  (run despite ' + v.violated + ')' if v.violated else ''}")
        return "\n".join(rows)


def _range(a) -> tuple:
    a = np.asarray(a, dtype=np.float64)
    return (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)


def term_reference(step, operands: list) -> np.ndarray:
    """The host value of the call's matched IR term with its ?variables bound to ``operands``."""
    env = {b.uid: np.asarray(a) for b, a in zip(step.bound, operands)}
    stack = [(step.value, False)]
    while stack:                                   # post-order, not entering bound operands
        v, done = stack.pop()
        if v.uid in env:
            continue
        if isinstance(v, Const):
            env[v.uid] = v.value
        elif not isinstance(v, Node):
            raise CompileError(f"{step.mapping}: the matched term reads {v!r}, which no pattern variable binds")
        elif done:
            env[v.uid] = np.asarray(ops.evaluate(v.op, [env[a.uid] for a in v.args], v.attrs))
        else:
            stack.append((v, True))
            stack.extend((a, False) for a in v.args if a.uid not in env)
    return env[step.value.uid]


def _stats(step, ref, out, operands, seconds, tol) -> Invocation:
    from mappings.base import format_shape, frobenius_relative_error
    ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
    top = np.abs(out64).max() if out64.size else 0.0
    sat = int(np.sum((np.abs(out64) == top) & (np.abs(ref64) > top * (1 + max(tol, 1e-6)) + 1e-30))) if top else 0
    ins = [np.asarray(a, np.float64) for a in operands if np.asarray(a).size]
    lo = min((float(a.min()) for a in ins), default=0.0)
    hi = max((float(a.max()) for a in ins), default=0.0)
    return Invocation(step.index, step.mapping, format_shape(step.shape), step.value.source, seconds,
                      float(frobenius_relative_error(ref64, out64)), (lo, hi), _range(out64), _range(ref64),
                      int(np.sum((ref64 != 0) & (out64 == 0))), sat, int(out64.size))


def cosimulate(compiled, inputs: dict[str, np.ndarray], *, fuse: bool = True, keep: dict | None = None,
               guard: bool = True) -> CosimResult:
    """Run ``compiled`` (:class:`compile.compiler.Compiled`) on ``inputs`` (graph input name ->
    array of its shape): host steps in numpy, calls on the ILA simulators. ``fuse``: run the
    chains the compiler fused on a certificate (``compiled.chains()``, :mod:`compile.chains`) as
    one program each; ``keep``: filled with every step's value (step index -> array); ``guard``:
    a call whose operands violate a data condition of its mapping runs on the host (the compiler's
    sound default); ``guard=False`` runs it on the accelerator anyway and records the violated
    condition (``Invocation.violated``): the design as it is, for design-space exploration (the
    paper's Table 4 experiment), outside what its certificate covers.
    CompileError for missing or misshaped inputs, naming them."""
    from mappings.registry import get
    program = compiled.program
    want = {v.name: v for v in compiled.graph.inputs}
    missing = sorted(set(want) - set(inputs))
    if missing:
        raise CompileError(f"missing input(s) {missing}")
    env: dict[int, np.ndarray] = {}
    res = CosimResult([])
    fused = {c[-1]: c for c in compiled.chains()} if fuse else {}
    inside = {i for c in fused.values() for i in c[:-1]}
    for s in program.steps:
        t0 = time.perf_counter()
        if s.kind == "input":
            a = np.asarray(inputs[s.value.name])
            if tuple(a.shape) != tuple(s.value.shape):
                raise CompileError(f"input {s.value.name!r}: shape {tuple(a.shape)}, the graph expects "
                                   f"{tuple(s.value.shape)}")
            env[s.index] = a.astype(s.value.dtype, copy=False)
            continue
        if s.kind == "const":
            env[s.index] = s.value.value
            continue
        if s.index in inside:
            continue                                  # runs as part of the chain ending later
        if s.index in fused:
            _run_chain(program, fused[s.index], env, res)
            continue
        args = [env[a] for a in s.args]
        if s.kind == "host":
            env[s.index] = np.asarray(ops.evaluate(s.value.op, args, s.value.attrs))
            res.host_seconds += time.perf_counter() - t0
            continue
        m = get(s.mapping)
        from compile.offload import mapping_inputs
        named = mapping_inputs(s.mapping, s.shape, args)
        ref = term_reference(s, args)
        bad = [c for c in m.data_conditions if not c.holds(s.shape, named)]
        if bad and guard:
            out = ref
            inv = _stats(s, ref, out, args, time.perf_counter() - t0, m.tolerance_at(s.shape))
            inv.refused = f"data condition {bad[0].name!r}: {bad[0].text}"
        else:
            out = np.asarray(m.run_accelerator(s.shape, named)).reshape(s.value.shape).astype(s.value.dtype)
            inv = _stats(s, ref, out, args, time.perf_counter() - t0, m.tolerance_at(s.shape))
            if bad:
                inv.violated = f"data condition {bad[0].name!r}"
        res.accelerator_seconds += inv.seconds
        res.invocations.append(inv)
        env[s.index] = out
    res.outputs = [env[o] for o in program.outputs]
    if keep is not None:
        keep.update(env)
    return res


def _run_chain(program, chain: tuple, env: dict, res: CosimResult) -> None:
    """Run the calls ``chain`` (step indices, first to last; each reads only its predecessor)
    as one fused accelerator program. The intermediate results stay in the accelerator (they are
    never read back), so one invocation per call is recorded and only the last carries values: the
    chain's result against the host terms composed on the chain's input."""
    from compile.chains import run_chain
    from mappings.base import format_shape
    from mappings.registry import get
    steps = [program.steps[i] for i in chain]
    t0 = time.perf_counter()
    x = env[steps[0].args[0]]
    out = run_chain(steps, x)
    seconds = time.perf_counter() - t0
    ref = x
    for s in steps:
        ref = term_reference(s, [ref])
    last = steps[-1]
    out = np.asarray(out).reshape(last.value.shape).astype(last.value.dtype)
    for s in steps[:-1]:
        res.invocations.append(Invocation(s.index, s.mapping, format_shape(s.shape), s.value.source, 0.0, float("nan"),
                                          _range(env[s.args[0]]) if s is steps[0] else (np.nan, np.nan),
                                          (np.nan, np.nan), (np.nan, np.nan), 0, 0, int(np.prod(s.value.shape)),
                                          fused=len(steps)))
    inv = _stats(last, ref, out, [x], seconds, get(last.mapping).tolerance_at(last.shape))
    inv.fused = len(steps)
    res.invocations.append(inv)
    res.accelerator_seconds += seconds
    env[last.index] = out


def against_host(compiled, inputs: dict) -> dict:
    """Co-simulate ``compiled`` on ``inputs`` and run its source graph on the host: ``{"result":
    CosimResult, "reference": host outputs, "error": Frobenius relative error of the outputs
    (root-sum-square over outputs), "seconds": co-simulation, "host_seconds": host float32 run}``."""
    from compile.runtime import run
    from mappings.base import frobenius_relative_error
    t0 = time.perf_counter()
    ref = run(compiled.graph, inputs)
    t_host = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = cosimulate(compiled, inputs)
    t = time.perf_counter() - t0
    err = float(np.sqrt(sum(frobenius_relative_error(a, b) ** 2 for a, b in zip(ref, r.outputs))))
    return {"result": r, "reference": ref, "error": err, "seconds": t, "host_seconds": t_host}
