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

Between the certificate and the program stands the splice: which node each right-hand side
replaces, and the rebuilt users above it (:func:`expand`, :func:`substitute`). It is checked on every
expansion (:func:`check_expansion`): the right-hand side is re-derived for each replaced node on its
own, and the expanded graph's outputs must equal, by value numbering, the original graph's with
each replaced node read as its re-derived right-hand side; otherwise the compiler drops the
expansion (the folded program stays) and says why. The seeded bug only this check catches is
``expand_pairing`` in :mod:`compile.mutations`.
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple

from compile.ir.graph import Const, Graph, Node, Var, call


class Expansion(NamedTuple):
    """What :func:`expand` did: ``graph`` (the expanded graph; the input graph where nothing
    applied), ``applied`` ({rewrite name: applications}) and ``replaced`` ({uid of a replaced node:
    (the node, the rewrite, its right-hand side)})."""
    graph: Graph
    applied: dict
    replaced: dict


def expand(graph: Graph, rewrites) -> Expansion:
    """The expansions ``rewrites`` applied to ``graph``: each once to every node it matches, in one
    e-graph per rewrite (nested matches, e.g. a second LSTM layer over the first, are both
    replaced), the users above them rebuilt (:func:`substitute`). Not checked here: the compiler
    runs :func:`check_expansion` on the result."""
    from compile.rewrites.base import rules_for
    replaced, applied = {}, {}
    for rw in rewrites:
        if not rules_for(rw.rules, graph.outputs):
            continue
        nodes = [n for n in graph.nodes if n.uid not in replaced]
        for n, rhs in zip(nodes, rw.apply_many(nodes)):
            if rhs is not None and not isinstance(rhs, Exception) and rhs is not n:
                replaced[n.uid] = (n, rw, rhs)
                applied[rw.name] = applied.get(rw.name, 0) + 1
    if not replaced:
        return Expansion(graph, {}, {})
    outs = substitute(graph.outputs, {u: rhs for u, (_, _, rhs) in replaced.items()})
    return Expansion(Graph(graph.inputs, outs, graph.name), applied, replaced)


def check_expansion(graph: Graph, exp: Expansion) -> str | None:
    """None when ``exp.graph``'s outputs equal ``graph``'s with every replaced node read as the
    right-hand side its rewrite's certified rules give for that node alone (re-derived here with
    :meth:`~compile.rewrites.base.Rewrite.apply`, not taken from ``exp``); else the first
    difference, one line. Equality is by value numbering: graph inputs by identity, constants by
    dtype, shape and bytes, operators by name, attributes, result shape and dtype and their
    operands' numbers; so it holds at any size, in one pass over both graphs."""
    subst = {}
    for uid, (node, rw, _) in exp.replaced.items():
        rhs = rw.apply(node)
        if rhs is None or isinstance(rhs, Exception):
            return f"{rw.name} does not apply to the replaced {node.op} node {node.uid} on its own"
        subst[uid] = rhs
    if len(exp.graph.outputs) != len(graph.outputs):
        return f"{len(exp.graph.outputs)} outputs after the expansion, {len(graph.outputs)} before"
    if [v.uid for v in exp.graph.inputs] != [v.uid for v in graph.inputs]:
        return "the expanded graph's inputs are not the original graph's, in its order"
    table: dict = {}
    try:
        want = _numbers(graph.outputs, subst, table)
    except ValueError as exc:
        return str(exc)
    got = _numbers(exp.graph.outputs, {}, table)
    for k, (a, b) in enumerate(zip(want, got)):
        if a != b:
            v = exp.graph.outputs[k]
            return (f"output {k} of the expanded graph ({v.op if isinstance(v, Node) else 'an input or constant'}) "
                    f"is not the original output with each replaced node read as its certified right-hand side")
    return None


def _numbers(outputs: list, subst: dict, table: dict) -> list[int]:
    """Value numbers of ``outputs`` (shared ``table``: key -> number), a value whose uid is in
    ``subst`` numbered as ``subst[uid]``. ValueError where a substitute reaches the value it
    replaces."""
    num: dict[int, int] = {}
    open_: set[int] = set()
    stack = [(v, False) for v in reversed(outputs)]
    while stack:
        v, ready = stack.pop()
        if v.uid in num:
            continue
        r = subst.get(v.uid)
        deps = [r] if r is not None else (list(v.args) if isinstance(v, Node) else [])
        if not ready:
            if v.uid in open_:
                raise ValueError(f"the right-hand side of node {v.uid} ({v.op}) reads the node itself")
            open_.add(v.uid)
            stack.append((v, True))
            stack.extend((d, False) for d in deps if d.uid not in num)
            continue
        open_.discard(v.uid)
        if r is not None:
            num[v.uid] = num[r.uid]
            continue
        if isinstance(v, Node):
            key = ("node", v.op, repr(sorted(v.attrs.items())), v.shape, v.dtype, tuple(num[a.uid] for a in v.args))
        elif isinstance(v, Const):
            key = ("const", v.dtype, v.shape, hashlib.sha256(v.value.tobytes()).hexdigest())
        else:
            key = ("var", v.uid) if isinstance(v, Var) else ("value", v.uid)
        num[v.uid] = table.setdefault(key, len(table))
    return [num[v.uid] for v in outputs]


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
