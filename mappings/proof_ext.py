"""Proof setups that need more than :class:`mappings.base.ProofSetup` says.

``ProofSetup`` compares IR tensor cell ``a`` with accelerator memory cell ``b`` of the same width.
:class:`ProofSetupExt` adds ``read_acc(load, where)``, read by ``verify.fragments`` and
``verify.bmc``: the accelerator side of an output pair, an expression of the IR element's width
built from ``load(addr)`` (one accelerator cell) and the pair's accelerator part ``where`` (an int
or a tuple of ints, as the mapping chooses). Needed for an IR element spanning several accelerator
cells (HLSCNN keeps a 16-bit activation as two bytes, little-endian: :func:`little_endian`), and
for an IR element type wider than the accelerator's cell (the ``flexasr.linear`` proof computes
the IR in FlexASR's PE numerics, where an element is an AdaptivFloat code *or* a 32-bit
accumulator, told apart by a tag bit). It must use bit-vector operators only (no uninterpreted
functions): a counterexample replay evaluates it on the simulator's concrete memory.

``split_outputs`` asks ``verify.bmc`` for one solver query per output cell instead of one over the
disjunction of all cells' disequalities (the same verdict). With uninterpreted products feeding
bit-vector sums, a joint query that is satisfiable (a broken mapping) makes the solver relate
every pair of the thousand-odd product applications; per cell it relates a few dozen.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ila import concat

from .base import ProofSetup


@dataclass
class ProofSetupExt(ProofSetup):
    read_acc: Callable | None = None
    split_outputs: bool = False


def little_endian(load: Callable, where: tuple):
    """Cells ``where[0]`` (least significant) .. ``where[-1]`` concatenated."""
    return concat(*[load(a) for a in reversed(where)]) if len(where) > 1 else load(where[0])
