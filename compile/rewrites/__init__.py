"""Compiler-IR rewrites as data, each certified before the compiler may use it.

A :class:`Rewrite` states its two sides as IR builders over parameters (shapes, window sizes),
the side condition under which it applies, random parameters for the property test, and small
parameters for the exact check. :mod:`compile.rewrites.rules` holds the project's rewrites,
:mod:`compile.rewrites.broken` seeded wrong ones the certification must refute, and
:mod:`compile.rewrites.certify` the checks: BMC of the two sides lowered to the compiler-IR ILA
(:mod:`compile.rewrites.lower`) in its int32 numerics at the small parameters (exact, all data),
plus a float32 property test on random parameters with the host runtime.

Why int32 for the exact check: in int32 the ILA's ``add``/``multiply`` are the ring Z/2^32 and
``max`` is a total order (signed). Both sides of every rewrite here compute, per output element,
a max over input elements or a sum of products with coefficients 0/1 of a few terms, so equality
for all int32 data implies the same identity over the reals and over any total order; The recurrent rewrite
(``lstm_fold``) also composes sigmoid and tanh: the exact check's ILA (``int32_uf`` numerics) keeps
them uninterpreted, so both sides must apply them to equal arguments and combine the results
alike, which proves the identity for every activation function. Float32
rounding (summation order) is what the property test measures (``bit_exact`` rewrites must agree
bit for bit, others within ``rtol``).
"""
from __future__ import annotations

from compile.rewrites.base import Rewrite


def registry() -> dict[str, Rewrite]:
    """The project's rewrites by name."""
    from compile.rewrites.rules import RULES
    return {r.name: r for r in RULES}
