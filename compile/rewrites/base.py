"""The :class:`Rewrite` record (see :mod:`compile.rewrites`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rewrite:
    """One compiler-IR rewrite ``lhs => rhs``.

    ``build(params) -> (inputs, lhs, rhs)``: the input variables and the two sides as IR values
    (compile.ir.graph); ``guard(params) -> bool``: the side condition; ``random_params(rng)``:
    parameters satisfying the guard; ``small``: parameters of the exact check; ``bit_exact``:
    whether float32 results must be identical (else within ``rtol`` relative Frobenius error)."""
    name: str
    text: str
    build: Callable
    guard: Callable
    random_params: Callable
    small: tuple
    bit_exact: bool = True
    rtol: float = 1e-5
