"""The host runtime: executes an IR graph in numpy, operator by operator (float32; int64 indices).

``run(graph, inputs)`` is the reference path of every co-simulation: the graph as a program of host
steps run by the one interpreter of extracted programs (:class:`compile.interpret.Interpreter`,
whose co-simulating subclass is :class:`compile.runtime.cosim.CoSimulator`).
"""
from __future__ import annotations

import numpy as np

from compile.errors import CompileError
from compile.ir.graph import Graph


def run(graph: Graph, inputs: dict[str, np.ndarray], *, threads: int | None = None) -> list[np.ndarray]:
    """Execute ``graph`` on ``inputs`` (name -> array of the input's shape); return the outputs.
    ``threads``: the BLAS/OpenMP threads of the host runtime for this run
    (:func:`compile.runtime.threads.host_threads`; None leaves the libraries' setting).
    CompileError for a missing, extra or wrongly shaped input (naming it)."""
    from compile.interpret import run_graph
    from compile.runtime.threads import host_threads
    try:
        with host_threads(threads):
            return run_graph(graph, inputs)
    except CompileError as exc:
        raise CompileError(f"graph {graph.name!r}: {exc}") from None
