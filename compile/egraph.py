"""The one adapter over egglog (``egglog==13.2.0``): IR terms in an e-graph, unions, extraction.

Terms: ``Term.leaf(uid)`` (a graph input or constant), ``Term.op(key, args)`` (a host operator:
``key`` names the operator with its attributes, output shape and dtype), ``Term.move(key, args)``
(a host data-movement operator: transpose, reshape, padding, im2col, ...), ``Term.call(key, args)``
(an accelerator call: ``key`` names the mapping and the node it replaces); operand lists are
``TermList`` cons lists. Static constructor costs drive egglog's built-in extractor (no Python
cost callback, which is quadratic): a host compute operator costs :data:`HOST`, a data-movement
operator :data:`MOVE`, an accelerator call :data:`CALL`, a leaf 0, so the tree cost of a program is
dominated by its host compute and extraction maximises offloads (the paper's cost: accelerator
calls are free, layout operators cheap, host compute expensive).

egglog objects may only be used on the thread that created them, and deep terms need a deep
stack: :func:`on_big_stack` runs a whole session on a worker thread with a 512 MiB stack and a
high recursion limit (the notes' workaround), every IR node is ``let``-bound, and extracted terms
are walked iteratively.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable

from egglog import EGraph, Expr, StringLike, get_callable_args, get_callable_fn, i64Like, method, union

HOST = 100
MOVE = 2
CALL = 1


class Term(Expr):
    @method(cost=0)
    @classmethod
    def leaf(cls, uid: i64Like) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def op(cls, key: StringLike, args: TermList) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def move(cls, key: StringLike, args: TermList) -> Term: ...

    @method(cost=CALL)
    @classmethod
    def call(cls, key: StringLike, args: TermList) -> Term: ...


class TermList(Expr):
    @method(cost=0)
    @classmethod
    def nil(cls) -> TermList: ...

    @method(cost=0)
    @classmethod
    def cons(cls, head: Term, tail: TermList) -> TermList: ...


def terms(*xs: Term) -> TermList:
    out = TermList.nil()
    for x in reversed(xs):
        out = TermList.cons(x, out)
    return out


def on_big_stack(fn: Callable, *args, stack_mb: int = 512):
    """Run ``fn(*args)`` on a fresh thread with a large stack; return its result (or raise)."""
    box: dict = {}

    def work():
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 ** 6))
        try:
            box["value"] = fn(*args)
        except BaseException as exc:     # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)
    prev = threading.stack_size(stack_mb * 1024 * 1024)
    try:
        t = threading.Thread(target=work, name="egglog")
        t.start()
        t.join()
    finally:
        threading.stack_size(prev)
    if "error" in box:
        raise box["error"]
    return box["value"]


class Session:
    """One e-graph (create and use on one thread: inside :func:`on_big_stack`)."""

    def __init__(self):
        self.eg = EGraph()
        self._names = 0

    def let(self, term: Term) -> Term:
        self._names += 1
        return self.eg.let(f"t{self._names}", term)

    def union(self, a: Term, b: Term) -> None:
        self.eg.register(union(a).with_(b))

    def rebuild(self) -> None:
        """Restore congruence after unions (egglog rebuilds when it runs)."""
        self.eg.run(1)

    def extract(self, t: Term) -> tuple[Term, int]:
        e, cost = self.eg.extract(t, include_cost=True)
        return e, int(cost)

    def size(self) -> int:
        return int(sum(n for _, n in self.eg.all_function_sizes()))


def walk(t: Term):
    """The (constructor name, literal arguments, child terms) of every node of an extracted term,
    each shared subterm once, children before parents (iterative)."""
    out, seen, stack = [], set(), [(t, False)]
    while stack:
        x, done = stack.pop()
        key = str(x) if not done else None
        if done:
            out.append(_node(x))
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack.append((x, True))
        for k in reversed(_children(x)):
            stack.append((k, False))
        del key
    return out


def _flatten(lst) -> list:
    items = []
    while True:
        fn = get_callable_fn(lst)
        if fn is None or "nil" in str(fn):
            return items
        head, lst = get_callable_args(lst)
        items.append(head)


def _children(x) -> list:
    name = str(get_callable_fn(x))
    if name.endswith("leaf"):
        return []
    return _flatten(get_callable_args(x)[1])


def _node(x):
    name = str(get_callable_fn(x)).rsplit(".", 1)[-1]
    args = get_callable_args(x)
    lit = args[0].value if hasattr(args[0], "value") else args[0]
    return name, lit, x
