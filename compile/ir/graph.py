"""The tensor IR graph: a DAG of operator nodes over typed variables and constants.

Every value has a static shape and a dtype (``float32`` for activations and weights, ``int64`` for
indices), checked when its node is built (:func:`compile.ir.ops.infer`). Nodes are shared, so
common sub-expressions are one node; every traversal is iterative (no recursion limit on deep
models). ``source`` records where a node came from (the ONNX node name, or the PyTorch module
path).
"""
from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.ir import ops

_ids = itertools.count()


@dataclass(eq=False)
class Value:
    """Base of graph values: ``shape`` (tuple of ints), ``dtype`` (numpy dtype name)."""
    shape: tuple
    dtype: str
    source: str = ""
    uid: int = field(default_factory=lambda: next(_ids), init=False)


@dataclass(eq=False)
class Var(Value):
    """A graph input."""
    name: str = ""


@dataclass(eq=False)
class Const(Value):
    """A constant tensor (weights, biases, folded shape arithmetic)."""
    value: np.ndarray = None
    name: str = ""


@dataclass(eq=False)
class Node(Value):
    """One operator application."""
    op: str = ""
    args: tuple = ()
    attrs: dict = field(default_factory=dict)


def var(name: str, shape, dtype: str = "float32", source: str = "") -> Var:
    if any((not isinstance(d, (int, np.integer))) or d < 0 for d in shape):
        raise CompileError(f"input {name!r}: shape {tuple(shape)} must be static non-negative ints")
    return Var(tuple(int(d) for d in shape), str(np.dtype(dtype)), source, name=name)


def const(value, name: str = "", source: str = "") -> Const:
    a = np.asarray(value)
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
    elif a.dtype.kind in "iub":
        a = a.astype(np.int64)
    return Const(tuple(a.shape), str(a.dtype), source, value=a, name=name)


def call(op: str, *args: Value, source: str = "", **attrs) -> Node:
    """Build a node; the shape is inferred and checked now (ShapeMismatchError naming the
    operator, the operand shapes and ``source``)."""
    full = ops.normalise_attrs(op, attrs, source)
    shape = ops.infer(op, [a.shape for a in args], full, source)
    dtype = args[0].dtype if op == "take" else next((a.dtype for a in args if a.dtype == "float32"), args[0].dtype)
    return Node(shape, dtype, source, op=op, args=tuple(args), attrs=full)


class Graph:
    """A function of named inputs to a list of outputs.

    ``inputs``: the :class:`Var` nodes in order; ``outputs``: values; ``nodes``: every operator
    node reachable from the outputs, in topological order (computed iteratively)."""

    def __init__(self, inputs: list[Var], outputs: list[Value], name: str = "main"):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.name = name
        self.nodes = topological(self.outputs)
        missing = {v.name for v in self.values() if isinstance(v, Var)} - {v.name for v in self.inputs}
        if missing:
            raise CompileError(f"graph {name!r}: the outputs depend on undeclared input(s) {sorted(missing)}")

    def values(self) -> list[Value]:
        """Every value reachable from the outputs (inputs, constants, nodes), topological order."""
        return topological(self.outputs, nodes_only=False)

    def __len__(self) -> int:
        return len(self.nodes)

    def op_histogram(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_text(self) -> str:
        """The Relay-style text form (:mod:`compile.ir.text` parses it back)."""
        return to_text(self)

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.inputs)} inputs, {len(self.nodes)} operators)"


def topological(roots: list[Value], nodes_only: bool = True) -> list:
    """Values reachable from ``roots`` with every operand before its user (iterative DFS)."""
    seen: set[int] = set()
    order = []
    for root in roots:
        if root.uid in seen:
            continue
        stack = [(root, False)]
        while stack:
            v, done = stack.pop()
            if done:
                order.append(v)
                continue
            if v.uid in seen:
                continue
            seen.add(v.uid)
            stack.append((v, True))
            if isinstance(v, Node):
                stack.extend((a, False) for a in reversed(v.args) if a.uid not in seen)
    return [v for v in order if isinstance(v, Node)] if nodes_only else order


# ----------------------------------------------------------------------------- the text form (printer)
def _attr(v) -> str:
    return repr(tuple(v)) if isinstance(v, tuple) else repr(v)


def _src(s: str) -> str:
    return f" /* {s.replace('*/', '* /')} */" if s else ""


def to_text(g: Graph) -> str:
    """The Relay-style text form of ``g`` (format: :mod:`compile.ir.text`)."""
    names: dict[int, str] = {}
    for v in g.inputs:
        names[v.uid] = f"%{v.name}"
    head = ", ".join(f"%{v.name}: Tensor[{tuple(v.shape)}, {v.dtype}]" for v in g.inputs)
    lines = [f"def @{g.name}({head}) {{"]
    consts = [v for v in topological(g.outputs, nodes_only=False) if isinstance(v, Const)]
    for k, c in enumerate(consts):
        names[c.uid] = f"%c{k}"
        data = base64.b64encode(np.ascontiguousarray(c.value).astype(c.value.dtype.newbyteorder("<")).tobytes())
        lines.append(f"  %c{k} = const[{tuple(c.shape)}, {c.dtype}] \"{data.decode()}\"{_src(c.source)};")
    for k, n in enumerate(g.nodes, 1):
        names[n.uid] = f"%{k}"
        args = [names[a.uid] for a in n.args] + [f"{a}={_attr(v)}" for a, v in n.attrs.items()]
        lines.append(f"  %{k} = {n.op}({', '.join(args)}){_src(n.source)};")
    lines.append(f"  ({', '.join(names[o.uid] for o in g.outputs)})")
    lines.append("}")
    return "\n".join(lines) + "\n"
