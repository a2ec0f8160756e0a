"""Application-level co-simulation (paper §4.4.2): the program's host steps in numpy and every
accelerator call executed by its accelerator's ILA simulator, in one pass of the interpreter.

:class:`CoSimulator` is the :class:`compile.interpret.Interpreter` whose calls run their certified
artefact (:class:`compile.call.Call`): the operand adapters, the exact MMIO stream of the call's
code generator executed from the machine's reset state, the read-back and the output adapter. A
call runs only on a certificate about its own subject (checked at run time). A fused chain
(:mod:`compile.chains`, Figure 7 (f)) runs as its chain mapping's call: one store, the calls, one
load. With ``record`` it keeps, for every call it executes, the program it ran and the data of its
reads: what ``--emit`` writes (:mod:`compile.codegen`), so emission never runs the model again.

The same pass also evaluates the source program on the host (every call by the host semantics of
its subject on host operands): the whole-model reference the co-simulated outputs are compared
with (``CosimResult.reference``), so ``--cosim`` evaluates the model once. Host steps and these
references run the host runtime's float32 kernels (:mod:`compile.runtime.kernels`, the operators
as a deployment's host computes them; each subject's host program built once per call step), not
the float64-accumulating reference semantics the certificates are about.

Per invocation it records (:class:`Invocation`): seconds, the Frobenius relative error against the
float32 host result of the same subterm on the same operand values, input and output ranges,
``flushed`` (host value non-zero, accelerator value 0) and ``saturated`` (the accelerator value
sits at the largest magnitude it produced while the host value is larger in magnitude by more than
the mapping's tolerance). A call whose operands violate one of the mapping's data conditions is
not run on the accelerator: it runs on the host and is reported as refused, naming the condition
(``guard=False`` runs it anyway and flags it: the design as it is, for Table 4's design study).

Source of the statistics: the paper's §4.4.2 (per-invocation error and value ranges to locate the
cause of an application-level accuracy loss).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.interpret import Interpreter


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
class Record:
    """One executed call, as ``--emit`` writes it: the step, the call (or chain call), its program,
    the data of its reads, the certificate it ran on, and the fused steps of a chain."""
    step: object
    call: object
    program: object
    reads: list
    certificate: dict
    fused: tuple = ()


@dataclass
class CosimResult:
    outputs: list
    invocations: list = field(default_factory=list)
    host_seconds: float = 0.0
    accelerator_seconds: float = 0.0
    reference: list = field(default_factory=list)       # the host evaluation of the source program
    records: list = field(default_factory=list)          # Record of every executed call (record=True)

    def error(self) -> float:
        """Frobenius relative error of the outputs against the host reference (root-sum-square)."""
        from mappings.base import frobenius_relative_error
        return float(np.sqrt(sum(frobenius_relative_error(a, b) ** 2 for a, b in zip(self.reference, self.outputs))))

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


def _stats(step, call, ref, out, operands, seconds, tol) -> Invocation:
    from mappings.base import frobenius_relative_error
    ref64, out64 = np.asarray(ref, np.float64), np.asarray(out, np.float64)
    top = np.abs(out64).max() if out64.size else 0.0
    sat = int(np.sum((np.abs(out64) == top) & (np.abs(ref64) > top * (1 + max(tol, 1e-6)) + 1e-30))) if top else 0
    ins = [a for a in map(np.asarray, operands) if a.size]          # min / max exact in the operand's own dtype
    lo = min((float(a.min()) for a in ins), default=0.0)
    hi = max((float(a.max()) for a in ins), default=0.0)
    return Invocation(step.index, call.mapping.name, call.shape.text, call.term.source, seconds,
                      float(frobenius_relative_error(ref64, out64)), (lo, hi), _range(out64), _range(ref64),
                      int(np.sum((ref64 != 0) & (out64 == 0))), sat, int(out64.size))


class CoSimulator(Interpreter):
    """The co-simulating interpreter (module docstring) of ``compiled``
    (:class:`compile.compiler.Compiled`)."""

    def __init__(self, compiled, *, fuse: bool = True, guard: bool = True, record: bool = False,
                 host: bool = True):
        super().__init__(compiled.program, compiled.graph.inputs, fused=compiled.chains() if fuse else ())
        self.chain_calls = {c[-1]: d for c, d in compiled.fused} if fuse else {}
        self.guard, self.record, self.host = guard, record, host
        self.result = CosimResult([])
        self.host_env: dict[int, np.ndarray] = {}
        self.references = compiled.__dict__.setdefault("_host_references", {})   # step -> (call, graph, program)

    def reference(self, index: int, call, operands: list) -> np.ndarray:
        """The call's subject on ``operands`` by the host runtime (float32 kernels,
        :mod:`compile.runtime`): the per-invocation reference and the host evaluation of the source
        program. Its host program is built once per call step (kept on the compiled program)."""
        from compile.interpret import host_program
        from compile.runtime import HostRuntime
        hit = self.references.get(index)
        if hit is None or hit[0] is not call:
            g = call.graph()
            hit = self.references[index] = (call, g, host_program(g))
        ops = call.check_operands(operands)
        with np.errstate(all="ignore"):
            return HostRuntime(hit[2], hit[1].inputs, count=False).run({f"v{k}": a for k, a in enumerate(ops)})[0]

    # the host evaluation of the source program rides along every step (one pass)
    def _host_args(self, step, args) -> list:
        return [self.host_env.get(a, x) for a, x in zip(step.args, args)] if self.host else args

    def run_input(self, step):
        out = super().run_input(step)
        self.host_env[step.index] = out
        return out

    def run_const(self, step):
        out = super().run_const(step)
        self.host_env[step.index] = out
        return out

    def run_host(self, step, args):
        from compile.runtime.kernels import evaluate
        t0 = time.perf_counter()
        v = step.value
        out = np.asarray(evaluate(v.op, args, v.attrs))
        if self.host:
            hargs = self._host_args(step, args)
            self.host_env[step.index] = out if all(a is b for a, b in zip(hargs, args)) else \
                np.asarray(evaluate(v.op, hargs, v.attrs))
        self.result.host_seconds += time.perf_counter() - t0
        return out

    def run_call(self, step, args):
        call = step.call
        call.check_certificate(step.certificate)
        t0 = time.perf_counter()
        args = call.check_operands(args)
        ref = self.reference(step.index, call, args)
        if self.host:
            hargs = self._host_args(step, args)
            self.host_env[step.index] = ref if all(a is b for a, b in zip(hargs, args)) else self.reference(step.index, call, hargs)
        named = call.inputs(args)
        bad = call.violated(named)
        tol = call.mapping.tolerance_at(call.shape)
        if bad is not None and self.guard:
            inv = _stats(step, call, ref, ref, args, time.perf_counter() - t0, tol)
            inv.refused = f"data condition {bad.name!r}: {bad.text}"
            self.result.invocations.append(inv)
            return ref
        prog = call.program(args, named)
        out, reads = call.execute(prog)
        inv = _stats(step, call, ref, out, args, time.perf_counter() - t0, tol)
        if bad is not None:
            inv.violated = f"data condition {bad.name!r}"
        self.result.accelerator_seconds += inv.seconds
        self.result.invocations.append(inv)
        if self.record:
            self.result.records.append(Record(step, call, prog, reads, step.certificate))
        return out

    def run_chain(self, steps, x):
        """A fused chain runs as its chain mapping's call (the intermediate values never leave the
        accelerator, so one invocation per call is recorded and only the last carries values)."""
        decision = self.chain_calls[steps[-1].index]
        call = decision.call
        call.check_certificate(decision.certificate)
        t0 = time.perf_counter()
        x = call.check_operands([x])[0]
        prog = call.program([x])
        out, reads = call.execute(prog)
        seconds = time.perf_counter() - t0
        ref = self.reference(steps[-1].index, call, [x])
        if self.host:
            hx = self.host_env.get(steps[0].args[0], x)
            self.host_env[steps[-1].index] = ref if hx is x else self.reference(steps[-1].index, call, [hx])
        for s in steps[:-1]:
            self.result.invocations.append(Invocation(
                s.index, s.call.mapping.name, s.call.shape.text, s.call.term.source, 0.0, float("nan"),
                _range(x) if s is steps[0] else (np.nan, np.nan), (np.nan, np.nan), (np.nan, np.nan), 0, 0,
                int(np.prod(s.value.shape)), fused=len(steps)))
        inv = _stats(steps[-1], call, ref, out, [x], seconds, call.mapping.tolerance_at(call.shape))
        inv.fused = len(steps)
        self.result.invocations.append(inv)
        self.result.accelerator_seconds += seconds
        if self.record:
            self.result.records.append(Record(steps[0], call, prog, reads, decision.certificate, tuple(steps)))
        return out

    def run(self, feeds):
        self.host_env = {}
        outs = super().run(feeds)
        self.result.outputs = outs
        if self.host:
            self.result.reference = [self.host_env.get(o, v) for o, v in zip(self.program.outputs, outs)]
        return outs


def cosimulate(compiled, inputs: dict[str, np.ndarray], *, fuse: bool = True, keep: dict | None = None,
               guard: bool = True, record: bool = False, threads: int | None = None,
               host: bool = True) -> CosimResult:
    """Run ``compiled`` (:class:`compile.compiler.Compiled`) on ``inputs`` (graph input name ->
    array of its shape): host steps in numpy, calls on the ILA simulators (module docstring).
    ``fuse``: run the certified fused chains as one program each; ``keep``: filled with every
    step's value (step index -> array); ``guard``: data conditions refuse a call (it runs on the
    host); ``record``: keep every executed call's program and reads (for ``--emit``); ``threads``:
    the host's BLAS/OpenMP threads (:func:`compile.runtime.threads.host_threads`); ``host``: also
    evaluate the source program on the host in the same pass (``CosimResult.reference``; off when
    the caller runs the host itself, e.g. Table 4, which times the two apart: the per-invocation
    reference of each call is computed either way).
    CompileError for missing or misshaped inputs and for a call whose certificate is about another
    subject, naming them."""
    from compile.runtime.threads import host_threads
    sim = CoSimulator(compiled, fuse=fuse, guard=guard, record=record, host=host)
    with host_threads(threads):
        sim.run(inputs)
    if keep is not None:
        keep.update(sim.env)
    return sim.result


def against_host(compiled, inputs: dict, *, record: bool = False, threads: int | None = None) -> dict:
    """Co-simulate ``compiled`` on ``inputs`` with the host evaluation of the source program in the
    same pass: ``{"result": CosimResult, "reference": host outputs, "error": Frobenius relative
    error of the outputs (root-sum-square over outputs), "seconds": the pass, "host_seconds": the
    host steps' share}``."""
    t0 = time.perf_counter()
    r = cosimulate(compiled, inputs, record=record, threads=threads)
    t = time.perf_counter() - t0
    if len(r.reference) != len(r.outputs):
        raise CompileError("the host reference of the co-simulation is incomplete")
    return {"result": r, "reference": r.reference, "error": r.error(), "seconds": t, "host_seconds": r.host_seconds}


__all__ = ["CoSimulator", "CosimResult", "Invocation", "Record", "cosimulate", "against_host"]
