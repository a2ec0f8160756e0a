"""The host runtime: executes an IR graph in numpy, operator by operator (float32; int64 indices).

``run(graph, inputs)`` runs the graph as a program of host steps through :class:`HostRuntime`, a
subclass of the one interpreter of extracted programs (:class:`compile.interpret.Interpreter`,
whose co-simulating subclass is :class:`compile.runtime.cosim.CoSimulator`): convolutions and dense
layers with the float32 kernels of :mod:`compile.runtime.kernels` (float32 sums, as onnxruntime and
PyTorch), every other operator with the IR reference semantics (:mod:`compile.ir.ops`).
A host-only program runs as its plan (:mod:`compile.runtime.plan`: each step bound once to its
kernel, convolution + activation and SiLU fused). ``kernels="reference"`` runs the reference
semantics throughout (float64 accumulation rounded
once): what rewrites, calls and proofs are certified against (:func:`compile.interpret.run_graph`).
"""
from __future__ import annotations

import numpy as np

from compile.errors import CompileError
from compile.interpret import Interpreter
from compile.ir.graph import Graph

KERNELS = ("float32", "reference")


class HostRuntime(Interpreter):
    """The interpreter with the host runtime's float32 kernels for its host steps; an elementwise
    step whose first operand is a fresh array that no other step (and no output) reads writes its
    result into that operand (:func:`compile.runtime.kernels.evaluate_in_place`)."""

    def __init__(self, program, inputs: list, **kw):
        super().__init__(program, inputs, **kw)
        self.owned = _owned(program)

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The program on ``feeds``: its plan (:func:`compile.runtime.plan.plan`) in one loop when
        every step is an input, a constant or a host step, else the interpreter's loop."""
        with np.errstate(all="ignore"):         # once per run (IEEE results, no warnings)
            if self.fused or any(s.kind not in ("input", "const", "host") for s in self.program.steps):
                return super().run(feeds)
            return self._run_plan(feeds)

    def _run_plan(self, feeds):
        from compile.runtime.plan import plan
        want = {v.name for v in self.graph_inputs}
        if set(feeds) != want:
            return super().run(feeds)            # the interpreter names the missing or unknown inputs
        if self.count:
            Interpreter.passes += 1
        self.feeds = feeds
        steps = self.program.steps
        vals: list = [None] * len(steps)
        for p in plan(self.program, self.owned):
            if p.kind == "host":
                vals[p.index] = p.fn(*[vals[a] for a in p.args])
            elif p.kind == "alias":
                vals[p.index] = vals[p.args[0]]
            elif p.kind == "const":
                vals[p.index] = steps[p.index].value.value
            else:
                vals[p.index] = self.run_input(steps[p.index])
        self.env = dict(enumerate(vals))
        return [vals[o] for o in self.program.outputs]

    def run_host(self, step, args: list) -> np.ndarray:
        from compile.runtime.kernels import evaluate_in_place, evaluate_quiet
        v = step.value
        if step.index in self.owned:
            y = evaluate_in_place(v.op, args, v.attrs)
            if y is not None:
                return y
        return np.asarray(evaluate_quiet(v.op, args, v.attrs))


def _owned(program) -> frozenset:
    """The host steps whose first operand is a fresh array (its producer in
    :data:`compile.runtime.kernels.FRESH`) that no other step and no output reads: those may compute
    in place. Computed once per program (kept on it)."""
    from compile.runtime.kernels import FRESH
    hit = getattr(program, "_owned", None)
    if hit is not None and hit[0] == (len(program.steps), FRESH):
        return hit[1]
    users = program.users()                 # an output's users include -1 (the caller)
    steps = program.steps
    owned = frozenset(s.index for s in steps if s.kind == "host" and s.args and users[s.args[0]] == [s.index]
                      and steps[s.args[0]].kind == "host" and steps[s.args[0]].value.op in FRESH)
    program._owned = ((len(steps), FRESH), owned)
    return owned


def _program(graph: Graph):
    """The host program of ``graph``, built once per graph (kept on it while its inputs and
    outputs are the same values)."""
    from compile.interpret import host_program
    key = (tuple(v.uid for v in graph.inputs), tuple(v.uid for v in graph.outputs), len(graph.nodes))
    hit = getattr(graph, "_host_program", None)
    if hit is None or hit[0] != key:
        hit = (key, host_program(graph))
        graph._host_program = hit
    return hit[1]


def run(graph: Graph, inputs: dict[str, np.ndarray], *, threads: int | None = None,
        kernels: str = "float32") -> list[np.ndarray]:
    """Execute ``graph`` on ``inputs`` (name -> array of the input's shape); return the outputs.
    ``threads``: the BLAS/OpenMP (and PyTorch) threads of the host runtime for this run
    (:func:`compile.runtime.threads.host_threads`; None leaves the libraries' setting).
    ``kernels``: "float32" (:mod:`compile.runtime.kernels` for convolutions and dense layers) or
    "reference" (:mod:`compile.ir.ops` throughout). CompileError for a missing, extra or wrongly
    shaped input (naming it) or an unknown ``kernels``."""
    from compile.runtime.threads import host_threads
    if kernels not in KERNELS:
        raise CompileError(f"kernels must be one of {', '.join(KERNELS)}, got {kernels!r}")
    cls = HostRuntime if kernels == "float32" else Interpreter
    try:
        with host_threads(threads):
            return cls(_program(graph), graph.inputs).run(inputs)
    except CompileError as exc:
        raise CompileError(f"graph {graph.name!r}: {exc}") from None
