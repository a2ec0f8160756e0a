"""The host runtime: executes an IR graph in numpy, operator by operator (float32; int64 indices).

``run(graph, inputs)`` is the reference path of every co-simulation: later, accelerator calls are
attached through the per-node ``hooks``. A hook is called as ``hook(node, args, result)`` after each
operator; if it returns an array, that array replaces the node's result (this is how an
accelerator call takes over a node).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from compile.errors import CompileError
from compile.ir import ops
from compile.ir.graph import Const, Graph, Node, Var


def run(graph: Graph, inputs: dict[str, np.ndarray], hooks: list[Callable] | None = None) -> list[np.ndarray]:
    """Execute ``graph`` on ``inputs`` (name -> array of the input's shape); return the outputs.
    CompileError for a missing, extra or wrongly shaped input (naming it)."""
    want = {v.name: v for v in graph.inputs}
    missing, extra = sorted(set(want) - set(inputs)), sorted(set(inputs) - set(want))
    if missing or extra:
        raise CompileError(f"graph {graph.name!r}: " + (f"missing input(s) {missing}" if missing else "")
                           + ("; " if missing and extra else "") + (f"unknown input(s) {extra}" if extra else ""))
    env: dict[int, np.ndarray] = {}
    for name, v in want.items():
        a = np.asarray(inputs[name])
        if tuple(a.shape) != tuple(v.shape):
            raise CompileError(f"input {name!r}: shape {tuple(a.shape)}, the graph expects {tuple(v.shape)}")
        env[v.uid] = a.astype(v.dtype, copy=False)
    for v in graph.values():
        if isinstance(v, Const):
            env[v.uid] = v.value
        elif isinstance(v, Node):
            args = [env[a.uid] for a in v.args]
            out = ops.evaluate(v.op, args, v.attrs)
            for h in hooks or ():
                r = h(v, args, out)
                if r is not None:
                    out = r
            env[v.uid] = np.asarray(out)
        elif isinstance(v, Var) and v.uid not in env:
            raise CompileError(f"input {v.name!r} is not a declared graph input")
    return [env[o.uid] for o in graph.outputs]
