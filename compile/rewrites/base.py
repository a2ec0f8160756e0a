"""The :class:`Rewrite` record (see :mod:`compile.rewrites`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rewrite:
    """One compiler-IR rewrite ``lhs => rhs``, used by the compiler exactly as certified.

    ``apply(node) -> Value | None``: the right-hand side for an IR node the rewrite matches
    (built from the node's operands), None where the left-hand side or the side condition does not
    hold; ``lhs(params) -> (inputs, node)``: an instance of the left-hand side over fresh input
    variables, for the checks; ``random_params(rng)``: parameters of the property test; ``small``:
    parameters of the exact check; ``bit_exact``: whether float32 results must be equal (else
    within ``rtol`` relative Frobenius error)."""
    name: str
    text: str
    apply: Callable
    lhs: Callable
    random_params: Callable
    small: tuple
    bit_exact: bool = True
    rtol: float = 1e-5

    def build(self, params: dict):
        """``(inputs, lhs, rhs)`` at ``params``; rhs is None where the rewrite does not apply."""
        inputs, lhs = self.lhs(params)
        return inputs, lhs, self.apply(lhs)
