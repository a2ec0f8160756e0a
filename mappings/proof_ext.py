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

``reference`` (:class:`NumericsTerm`): the mapping's declared numerics, a term the emitted
program must compute exactly; it replaces the compiler-IR fragment (``ir`` is None) where the
accelerator's accumulation order or rounding differs from the IR's.

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


@dataclass(frozen=True)
class NumericsTerm:
    """A mapping's declared numerics (issue 26, item 4): the IR operator computed in the
    accelerator's order and rounding, as a term over the setup's data symbols with the
    accelerator's arithmetic as uninterpreted functions (their numpy bodies give its values).

    ``outputs()``: the term of every output element, indexed as the setup's output pairs' first
    component; ``describe``: one sentence saying what the term computes and how it differs from
    the float IR operator; ``gap()``: a sentence with the measured distance between the term,
    evaluated with the functions' numpy bodies on random quantised inputs, and the float32 IR
    operator on the same inputs (Frobenius relative error against the mapping's tolerance).
    ``verify.bmc`` proves the emitted program equal to the term for all data and all
    interpretations of the functions, and states both parts in its verdict."""
    describe: str
    outputs: Callable[[], list]
    gap: Callable[[], str] | None = None


@dataclass
class ProofSetupExt(ProofSetup):
    read_acc: Callable | None = None
    split_outputs: bool = False
    declared: Declared | None = None
    reference: NumericsTerm | None = None     # declared numerics instead of an IR fragment (``ir`` None)
    # the IR fragment itself computes in the accelerator's numerics (e.g. flexasr.linear's PE
    # numerics): what it computes and its simulated distance to the float32 IR (``outputs`` unused)
    numerics_note: NumericsTerm | None = None


def extend(ps: ProofSetup, **fields) -> ProofSetupExt:
    """``ps`` as a :class:`ProofSetupExt` with ``fields`` set (the other fields copied)."""
    import dataclasses
    base = {f.name: getattr(ps, f.name) for f in dataclasses.fields(ps)}
    return ProofSetupExt(**{**base, **fields})


def little_endian(load: Callable, where: tuple):
    """Cells ``where[0]`` (least significant) .. ``where[-1]`` concatenated."""
    return concat(*[load(a) for a in reversed(where)]) if len(where) > 1 else load(where[0])
