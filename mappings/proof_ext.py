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

``declared`` (:class:`Declared`): the mapping's declared refinement map on the accelerator side,
which ``verify.bmc`` then checks besides the end-to-end miter: every declared input is at its
declared address when the child loop starts, and every output is at its declared address when the
stream ends (the cell the read-back reads). Without it, a BMC verdict is end to end only (claim
``loops-end-to-end``, ``verify.scope``), not against the declared map (``model-loops``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ila import concat

from .base import ProofSetup


@dataclass(frozen=True)
class Declared:
    """A mapping's declared refinement map, accelerator side, as ``verify.bmc`` checks it (one
    shape). ``inputs``: (memory, byte address, data term) -- the term the declared map puts at
    that address before the child loop starts (the inputs the loops read); ``outputs``: (output
    index k, memory, byte address) -- where output k of the setup (its k-th pair) lies when the
    stream has ended; ``wrap``: the accelerator cell's value as the IR element (identity when
    None; e.g. ``flexasr.linear``'s tagged embedding); ``tensors``: the declared tensors these
    come from (named in the verdict)."""
    inputs: tuple
    outputs: tuple
    tensors: tuple = ()
    wrap: Callable | None = None


@dataclass
class ProofSetupExt(ProofSetup):
    read_acc: Callable | None = None
    split_outputs: bool = False
    declared: Declared | None = None


def extend(ps: ProofSetup, **fields) -> ProofSetupExt:
    """``ps`` as a :class:`ProofSetupExt` with ``fields`` set (the other fields copied)."""
    import dataclasses
    base = {f.name: getattr(ps, f.name) for f in dataclasses.fields(ps)}
    return ProofSetupExt(**{**base, **fields})


def little_endian(load: Callable, where: tuple):
    """Cells ``where[0]`` (least significant) .. ``where[-1]`` concatenated."""
    return concat(*[load(a) for a in reversed(where)]) if len(where) > 1 else load(where[0])
