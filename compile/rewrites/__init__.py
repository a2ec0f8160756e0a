"""Compiler-IR rewrites as data, each certified before the compiler may use it.

A :class:`Rewrite` is its egglog rules (:class:`compile.egraph.RuleSpec`: the left-hand-side
pattern, the guard as egglog conditions on attributes and shapes, the right-hand side), the object
the compiler's e-graph runs, declared beside what certifies it: instances of the left-hand side
over parameters (shapes, window sizes, attributes), a small enumerated parameter space for the exact
check, and a random-parameter generator for the property test that does not assume the guard.
:mod:`compile.rewrites.rules` holds the project's rewrites (:mod:`compile.rewrites.tiling` the
size-bounded tiling rules, :mod:`compile.rewrites.unroll` the LSTM unroll), :mod:`compile.rewrites.broken` seeded
wrong ones the certification must refute (wrong right-hand sides, dropped guards), and
:mod:`compile.rewrites.certify` the checks: the rules run in an e-graph holding the left-hand side,
the right-hand side read back as IR; BMC of the two sides lowered to the compiler-IR ILA
(:mod:`compile.rewrites.lower`) in its int32 numerics at every combination of the parameter space
the guard admits (exact, all data), plus a float32 property test on random parameters with the host
runtime (the guard filters them).

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
    """The project's rewrites by name (:mod:`compile.rewrites.rules`, the tiling rules of
    :mod:`compile.rewrites.tiling`, then the LSTM unroll of :mod:`compile.rewrites.unroll`)."""
    from compile.rewrites.rules import RULES
    from compile.rewrites.tiling import TILING
    from compile.rewrites.unroll import UNROLL
    return {r.name: r for r in RULES + TILING + UNROLL}
