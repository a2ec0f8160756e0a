"""The :class:`Rewrite` record (see :mod:`compile.rewrites`)."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable


class RuleFamily(Sequence):
    """A rewrite's rules indexed by a key of the node they match (e.g. an LSTM's sequence length:
    one rule per length), built on demand: ``build(keys)`` gives the rules of those keys, each of
    which can match only nodes whose ``key_of(node)`` is its key (None: no rule of the family
    matches ``node``). As a sequence it is every key's rules (all built on first use); the compiler
    and the checks run :func:`rules_for` a graph's nodes, the rules of the keys present, which are
    the same RuleSpec objects (built once per key)."""

    def __init__(self, build: Callable, keys, key_of: Callable):
        self._build, self.keys, self.key_of = build, tuple(keys), key_of
        self._by_key: dict = {}

    def of_keys(self, keys) -> tuple:
        """The rules of ``keys`` (in the family's key order)."""
        want = set(keys)
        for k in self.keys:
            if k in want and k not in self._by_key:
                self._by_key[k] = tuple(self._build([k]))
        return tuple(r for k in self.keys if k in want for r in self._by_key[k])

    def _all(self) -> tuple:
        return self.of_keys(self.keys)

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i):
        return self._all()[i]


def rules_for(rules, nodes) -> tuple:
    """The rules of ``rules`` (a tuple, or a :class:`RuleFamily`) that can match the IR values
    ``nodes`` and their operands: a family's rules of the keys present, else all of them."""
    if not isinstance(rules, RuleFamily):
        return tuple(rules)
    from compile.ir.graph import Node, topological
    keys = {rules.key_of(v) for v in topological(list(nodes), nodes_only=False) if isinstance(v, Node)}
    return rules.of_keys(keys - {None})


@dataclass(frozen=True)
class Rewrite:
    """One compiler-IR rewrite ``lhs => rhs``, used by the compiler exactly as certified.

    ``rules``: its egglog rules (:class:`compile.egraph.RuleSpec`: pattern, guard as egglog
    conditions, right-hand side), the object the compiler runs and the certification checks (a
    :class:`RuleFamily` where there is a rule per size: both run the rules of the sizes present);
    ``lhs(params) -> (inputs, node)``: an instance of the left-hand-side operator over fresh input
    variables (it may violate the guard; CompileError where the parameters make no valid node);
    ``random_params(rng)``: parameters of the property test, drawn without assuming the guard;
    ``space``: the small parameter space of the exact check, ``{name: values}`` (every combination)
    or a list of parameter dicts; ``bit_exact``: whether float32 results must be equal (else within
    ``rtol`` relative Frobenius error).

    A size-bounded rewrite (the tiling rules, :mod:`compile.rewrites.tiling`) also gives
    ``checked``: its rules without their last conditions, a bound on the operator's size
    (``size_guard`` says which) that keeps the compiler's e-graph small but excludes every instance
    small enough for the exact check. The checks run ``checked`` (:meth:`apply`), and the
    certification checks that ``rules`` are exactly ``checked`` with conditions appended
    (:func:`compile.rewrites.certify.bound_check`), so the compiler's applications are a subset of
    the checked rules'.

    ``expands``: an expansion (the LSTM unroll), whose right-hand side shares its values many times
    over, which the e-graph's tree-cost extraction cannot price. The compiler does not saturate with
    it: it applies the rules to the graph itself and compiles that graph as an alternative program,
    kept when it costs less (:func:`compile.compiler.compile_graph`)."""
    name: str
    text: str
    rules: tuple
    lhs: Callable
    random_params: Callable
    space: object
    bit_exact: bool = True
    rtol: float = 1e-5
    checked: tuple = ()
    size_guard: str = ""
    expands: bool = False

    @property
    def checked_rules(self) -> tuple:
        """The rules the certification's checks run (``checked``, or ``rules`` when not size-bounded)."""
        return self.checked or self.rules

    def apply(self, node):
        """The right-hand side the rules (:attr:`checked_rules`) give for IR node ``node`` (read back
        as IR, shapes inferred again), or None where they do not apply."""
        return self.apply_many([node])[0]

    def apply_many(self, nodes: list) -> list:
        """:meth:`apply` on several nodes, in one e-graph."""
        from compile.egraph import apply_rules
        return apply_rules(rules_for(self.checked_rules, nodes), list(nodes))

    def build(self, params: dict):
        """``(inputs, lhs, rhs)`` at ``params``; rhs is None where the rewrite does not apply."""
        inputs, lhs = self.lhs(params)
        return inputs, lhs, self.apply(lhs)

    def combinations(self) -> list[dict]:
        """Every parameter combination of :attr:`space`."""
        if isinstance(self.space, dict):
            keys = list(self.space)
            return [dict(zip(keys, vals)) for vals in itertools.product(*(self.space[k] for k in keys))]
        return [dict(p) for p in self.space]

    def applications(self) -> list[tuple]:
        """``(params, rhs)`` at every combination of :attr:`space` with a valid left-hand side: rhs is
        the right-hand side, None where the guard refuses, or the EGraphError of a right-hand side
        the e-graph refuses (sides of different shapes or dtypes, or one without a shape)."""
        got = _SMALL.get(self.name)
        if got is None or got[0] is not self:
            from compile.egraph import EGraphError
            from compile.errors import CompileError
            cases = []
            for p in self.combinations():
                try:
                    cases.append((p, self.lhs(p)[1]))
                except CompileError:
                    continue
            try:
                rhs = self.apply_many([n for _, n in cases])
            except EGraphError:               # find the combinations the e-graph refuses, one by one
                rhs = []
                for _, n in cases:
                    try:
                        rhs.append(self.apply(n))
                    except EGraphError as exc:
                        rhs.append(exc)
            got = _SMALL[self.name] = (self, [(p, r) for (p, _), r in zip(cases, rhs)])
        return list(got[1])

    @property
    def small(self) -> list[dict]:
        """The combinations of :attr:`space` where the rules apply (the exact check runs at each)."""
        return [p for p, r in self.applications() if r is not None and not isinstance(r, Exception)]


_SMALL: dict = {}
