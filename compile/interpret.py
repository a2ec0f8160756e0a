"""One interpreter of extracted programs (in the style of ``torch.fx.Interpreter``).

:class:`Interpreter` walks a :class:`compile.program.Program` once, step by step, and calls one
method per kind of step: :meth:`~Interpreter.run_input`, :meth:`~Interpreter.run_const`,
:meth:`~Interpreter.run_host` (an IR operator on the host, numpy semantics of
:mod:`compile.ir.ops`), :meth:`~Interpreter.run_call` (an accelerator call) and
:meth:`~Interpreter.run_chain` (calls fused into one accelerator program). The base class runs a
call by the host semantics of its subject, so it is the host runtime; :class:`CoSimulator`
(:mod:`compile.runtime.cosim`) runs calls on the ILA simulators and records per-invocation
statistics and, when asked, the fragment of every call it executes (what ``--emit`` writes), and
Table 4's evaluation uses the same classes. Every run counts one pass (:attr:`Interpreter.passes`).

Errors: CompileError naming the input for a missing, unknown or misshaped graph input, naming the
call for operands or results of another shape than its certified subject, and naming the step for
a program that reads a value no step computed (e.g. a fused chain hiding a value another step
reads).
"""
from __future__ import annotations

import numpy as np

from compile.errors import CompileError
from compile.ir import ops


class Interpreter:
    """Runs ``program`` (:class:`compile.program.Program`) whose inputs are the graph inputs
    ``inputs`` (Var values). ``fused``: chains of call step indices (first to last) to run as one
    program each (:meth:`run_chain`). Subclasses override the ``run_*`` methods."""

    passes = 0            # counted runs of any interpreter in this process (tests count model evaluations)

    def __init__(self, program, inputs: list, *, fused: list = (), count: bool = True):
        self.program = program
        self.count = count
        self.graph_inputs = list(inputs)
        self.fused = {c[-1]: tuple(c) for c in fused}
        self.inside = {i for c in self.fused.values() for i in c[:-1]}
        self.env: dict[int, np.ndarray] = {}

    # ---------------------------------------------------------------- driver
    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the program on ``feeds`` (graph input name -> array of its shape); the outputs."""
        want = {v.name: v for v in self.graph_inputs}
        missing, extra = sorted(set(want) - set(feeds)), sorted(set(feeds) - set(want))
        if missing or extra:
            raise CompileError(("missing input(s) " + str(missing) if missing else "")
                               + ("; " if missing and extra else "") + (f"unknown input(s) {extra}" if extra else ""))
        if self.count:
            Interpreter.passes += 1
        self.env = env = {}
        self.feeds = feeds
        for s in self.program.steps:
            if s.index in self.inside:
                continue
            if s.index in self.fused:
                chain = [self.program.steps[i] for i in self.fused[s.index]]
                env[s.index] = self.run_chain(chain, self._arg(chain[0], chain[0].args[0]))
                continue
            if s.kind == "input":
                env[s.index] = self.run_input(s)
            elif s.kind == "const":
                env[s.index] = self.run_const(s)
            elif s.kind == "host":
                env[s.index] = self.run_host(s, [self._arg(s, a) for a in s.args])
            elif s.kind == "call":
                env[s.index] = self.run_call(s, [self._arg(s, a) for a in s.args])
            else:
                raise CompileError(f"step {s.index}: unknown kind {s.kind!r}")
        return [self._arg(None, o) for o in self.program.outputs]

    def _arg(self, step, i: int) -> np.ndarray:
        if i not in self.env:
            who = f"step {step.index} ({self.describe(step)})" if step is not None else "the program's output"
            why = " (it is inside a fused chain whose intermediate values stay in the accelerator)" \
                if i in self.inside else ""
            raise CompileError(f"{who} reads step {i}, which no step computed{why}")
        return self.env[i]

    @staticmethod
    def describe(step) -> str:
        if step.kind == "call":
            return step.call.where()
        if step.kind == "host":
            return f"{step.value.op}" + (f" at {step.value.source}" if step.value.source else "")
        return step.kind

    # ---------------------------------------------------------------- steps
    def run_input(self, step) -> np.ndarray:
        v = step.value
        a = np.asarray(self.feeds[v.name])
        if tuple(a.shape) != tuple(v.shape):
            raise CompileError(f"input {v.name!r}: shape {tuple(a.shape)}, the graph expects {tuple(v.shape)}")
        return a.astype(v.dtype, copy=False)

    def run_const(self, step) -> np.ndarray:
        return step.value.value

    def run_host(self, step, args: list) -> np.ndarray:
        v = step.value
        return np.asarray(ops.evaluate(v.op, args, v.attrs))

    def run_call(self, step, args: list) -> np.ndarray:
        """The host semantics of the call's subject (the base interpreter is the host runtime)."""
        return step.call.reference(args)

    def run_chain(self, steps: list, x: np.ndarray) -> np.ndarray:
        """A fused chain: the calls in turn (the base interpreter runs each on the host)."""
        for s in steps:
            x = self.run_call(s, [x])
        return x


def constant_value(program, index: int):
    """The value of step ``index`` of ``program`` when it depends on constants only (a weight, a
    transposed weight), evaluated with the host semantics of its steps; None when it reads an
    input or a call."""
    steps = program.steps
    vals: dict[int, np.ndarray] = {}
    stack = [(index, False)]
    while stack:
        i, done = stack.pop()
        if i in vals:
            continue
        s = steps[i]
        if s.kind == "const":
            vals[i] = s.value.value
        elif s.kind != "host":
            return None
        elif done:
            vals[i] = np.asarray(ops.evaluate(s.value.op, [vals[a] for a in s.args], s.value.attrs))
        else:
            stack.append((i, True))
            stack.extend((a, False) for a in s.args if a not in vals)
    return vals[index]


def host_program(graph):
    """The program of ``graph`` with every operator a host step (topological order)."""
    from compile.ir.graph import Const, Node, Var
    from compile.program import Program, Step
    index: dict[int, int] = {}
    steps = []
    for v in graph.values():
        kind = "input" if isinstance(v, Var) else "const" if isinstance(v, Const) else "host"
        args = tuple(index[a.uid] for a in v.args) if isinstance(v, Node) else ()
        steps.append(Step(len(steps), kind, v, args))
        index[v.uid] = len(steps) - 1
    return Program(steps, [index[o.uid] for o in graph.outputs])


def run_graph(graph, feeds: dict[str, np.ndarray], *, count: bool = True) -> list[np.ndarray]:
    """The host runtime on an IR graph: every operator on the host, in topological order
    (``count``: whether the run counts as an evaluation, :attr:`Interpreter.passes`; a call's
    subterm evaluated inside a pass does not)."""
    return Interpreter(host_program(graph), graph.inputs, count=count).run(feeds)


__all__ = ["Interpreter", "run_graph"]
