"""Graph-level expansions and the cost of an extracted program.

An expansion is a certified compiler-IR rewrite whose right-hand side shares its values many times
over (``Rewrite.expands``: the LSTM unroll, :mod:`compile.rewrites.unroll`, where every step's
states feed the next step's gates several times). egglog's extractor sums costs over terms as
trees, so inside the e-graph such a form would be priced (and read back) as exponentially large.
The compiler instead applies the expansion's rules to the graph itself (:func:`expand`: each node
they apply to is replaced by the right-hand side, read back as IR from the same rules the
certification checks), compiles the expanded graph like any other, and keeps whichever program
costs less (:func:`program_cost`: the extraction's own costs, summed over the program's steps, each
step once).
"""
from __future__ import annotations

from compile.ir.graph import Graph, Node, call


def expand(graph: Graph, rewrites) -> tuple[Graph, dict]:
    """``(expanded graph, {rewrite name: applications})`` for the expansions ``rewrites`` (each
    applied once to every node of ``graph`` it matches, in one e-graph per rewrite; nested matches,
    e.g. a second LSTM layer over the first, are both replaced). ``({}`` applications: ``graph``
    itself) where none applies."""
    from compile.rewrites.base import rules_for
    repl, applied = {}, {}
    for rw in rewrites:
        if not rules_for(rw.rules, graph.outputs):
            continue
        nodes = [n for n in graph.nodes if n.uid not in repl]
        for n, rhs in zip(nodes, rw.apply_many(nodes)):
            if rhs is not None and not isinstance(rhs, Exception) and rhs is not n:
                repl[n.uid] = rhs
                applied[rw.name] = applied.get(rw.name, 0) + 1
    if not repl:
        return graph, {}
    return Graph(graph.inputs, substitute(graph.outputs, repl), graph.name), applied


def substitute(outputs: list, repl: dict) -> list:
    """``outputs`` with every value whose uid is in ``repl`` replaced by ``repl[uid]`` (itself
    substituted: a replacement may read other replaced values), and every node above a replacement
    rebuilt (iterative; shapes are inferred again, so a replacement of another shape is an error)."""
    done: dict[int, object] = {}

    def children(v):
        r = repl.get(v.uid)
        if r is not None:
            return [r]
        return list(v.args) if isinstance(v, Node) else []
    stack = [(v, False) for v in reversed(outputs)]
    while stack:
        v, ready = stack.pop()
        if v.uid in done:
            continue
        if not ready:
            stack.append((v, True))
            stack.extend((c, False) for c in children(v) if c.uid not in done)
            continue
        r = repl.get(v.uid)
        if r is not None:
            done[v.uid] = done[r.uid]
        elif isinstance(v, Node) and any(done[a.uid] is not a for a in v.args):
            done[v.uid] = call(v.op, *[done[a.uid] for a in v.args], source=v.source, **v.attrs)
        else:
            done[v.uid] = v
    return [done[v.uid] for v in outputs]


def program_cost(program, cost: str = "offloads", transfers: int = 0) -> int:
    """The extraction's objective of an extracted program (:mod:`compile.program`), every step
    counted once: :data:`~compile.egraph.HOST` per host compute operator (an LSTM layer
    :func:`~compile.egraph.lstm_host_cost` of its steps), ``MOVE`` per data-movement operator,
    ``CALL`` per call, and with ``cost='data-movement'`` ``TRANSFER`` per store or load
    (``transfers``)."""
    from compile.egraph import CALL, HOST, MOVE, TRANSFER, lstm_host_cost
    from compile.rewrites.lower import DATA_MOVEMENT
    total = 0
    for s in program.steps:
        if s.kind == "call":
            total += CALL
        elif s.kind == "host":
            op = s.value.op
            if op in DATA_MOVEMENT:
                total += MOVE
            elif op in ("nn.lstm", "lstm_layer"):
                total += lstm_host_cost(int(s.value.shape[0]))
            else:
                total += HOST
    return total + (TRANSFER * transfers if cost == "data-movement" else 0)
