"""The data of a loop induction (issue 26): what :mod:`verify.induction` proves about a child loop
whose iterations are alike, from one symbolic iteration (the lemmas and their soundness argument
are in that module's docstring). A mapping builds a :class:`LoopInduction` and hands it to
:func:`composite_checks`, whose checks go into a :class:`mappings.phases.Composite` as its lemmas.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ila.expr import Expr

# the checker, named as a lazy reference (mappings do not import verify; verify.closure counts the
# string, so a ledger digest of a mapping that uses it covers the checker)
CHECKER = "verify.induction:checks"
MAX_STEPS = 2_000_000           # child steps of one iteration, or of the loop's exit


@dataclass
class LoopInduction:
    """What the induction proves (module docstring). ``side``: the accelerator side (ILA, emitted
    commands, tracked memory ``side.memory``, MMIO port); ``counter``: the iteration counter's
    scalar state; ``cut(state)`` / ``stop(state)``: whether a state (names -> Expr, control
    concrete) is an iteration's start / its last state before the counter advances;
    ``stop_states``: the scalar states that may differ from the start state at ``stop``;
    ``free_states``: scalar states left arbitrary at an iteration's start (a fresh symbol each: an
    iteration must write them before it reads them, else its outputs or its control depend on
    them and a lemma fails), e.g. registers the first iteration finds at their reset values;
    ``in_cells`` [count, n_in] / ``out_cells`` [count, n_out]: addresses (ints) in the tracked
    memory; ``in_values`` [count, n_in]: the terms the stream writes to the input cells;
    ``claimed``: the output columns claimed; ``term(o, X)``: output o's declared value from its
    row's input values X (a list of n_in terms); ``axioms``: equations ``l = r`` (l an application of
    an uninterpreted function, true of the real function) used as rewrite rules in that comparison;
    ``readback(reads)``: the driver's read-back of
    the stream's reads, an array [count, len(claimed)] of terms."""
    side: object
    counter: str
    cut: Callable[[dict], bool]
    stop: Callable[[dict], bool]
    stop_states: tuple
    in_cells: np.ndarray
    in_values: np.ndarray
    out_cells: np.ndarray
    claimed: Sequence[int]
    term: Callable[[int, list], Expr]
    readback: Callable[[list], np.ndarray]
    free_states: tuple = ()
    axioms: list = field(default_factory=list)
    max_steps: int = MAX_STEPS
    notes: list = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(self.in_cells.shape[0])



def composite_checks(build: Callable[[], LoopInduction], count: int) -> list:
    """The induction's lemmas as named checks for a :class:`mappings.phases.Composite`
    (``verify.induction.checks``): ``build()`` makes the :class:`LoopInduction` when the first
    check runs, ``count`` is its iterations."""
    from mappings.base import _resolve
    return _resolve(CHECKER)(build, count)
