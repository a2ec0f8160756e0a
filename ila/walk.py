"""Iterative, memoised traversal of expression DAGs (never recursive: unrolled formulas are deep)."""
from __future__ import annotations

from typing import Callable, Iterable

from .expr import Expr


def toposort(roots: Iterable[Expr], children: Callable[[Expr], Iterable[Expr]] | None = None) -> list[Expr]:
    """All nodes reachable from ``roots``, each once, children before parents. ``children``
    overrides a node's successors (default: its arguments)."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node.uid in seen:
            continue
        seen.add(node.uid)
        stack.append((node, True))
        for a in reversed(list(node.args if children is None else children(node))):
            if a.uid not in seen:
                stack.append((a, False))
    return order


def variables(roots: Iterable[Expr]) -> list[Expr]:
    """The VAR leaves reachable from ``roots``, in traversal order."""
    from .ops import Op
    return [n for n in toposort(roots) if n.op is Op.VAR]


def applications(roots: Iterable[Expr]) -> list[Expr]:
    """The uninterpreted-function applications reachable from ``roots``."""
    from .ops import Op
    return [n for n in toposort(roots) if n.op is Op.APPLY]
