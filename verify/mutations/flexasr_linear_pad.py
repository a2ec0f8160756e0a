"""Seeded bugs of ``flexasr.linear_pad`` (issue 26, item 7): the host padding and the read-back's cut,
which only this mapping's proof has inside its subject (``mappings.flexasr.linear_pad_proof``), and
flexasr.linear's generator bugs at the padded shape (one per claimed layer), each refuted by BMC
with a replayed counterexample at the proof shape 1x10x10 (padded to 1x16x64).
"""
from __future__ import annotations

import numpy as np

from verify.mutations import Mutation, Patch

_LP = "mappings.flexasr.linear_pad"


def _x_one_column_right(pad_operands):
    """The host pads x with its columns one position to the right (column 0 holds zeros)."""
    def mutated(shape, x, w, b):
        xp, wp, bp = pad_operands(shape, x, w, b)
        return np.roll(xp, 1, axis=1), wp, bp
    return mutated


def _bias_of_next_output(pad_operands):
    """The host pads b with every bias one output early (b[o + 1] at o)."""
    def mutated(shape, x, w, b):
        xp, wp, bp = pad_operands(shape, x, w, b)
        return xp, wp, np.roll(bp, -1)
    return mutated


def _pads_with_ones(pad_operands):
    """The host pads the extra input lanes of x and of w with 1.0 instead of 0.0 (each output gains
    the products of ones)."""
    def mutated(shape, x, w, b):
        xp, wp, bp = pad_operands(shape, x, w, b)
        I = shape["I"]
        xp, wp = xp.copy(), wp.copy()
        xp[:, I:] = 1.0
        wp[:, I:] = 1.0
        return xp, wp, bp
    return mutated


def _cut_from_column_one(cut):
    """The read-back keeps y[:, 1:O + 1] of the padded result."""
    return lambda y, shape: np.asarray(y)[:, 1:shape["O"] + 1]


def mutations() -> dict[str, Mutation]:
    from verify.mutations.flexasr_linear import mutations as linear
    own = [
        Mutation("x_one_column_right", "codegen-bytes", "host padding: x's columns placed one position right",
                 (Patch(_LP, "pad_operands", _x_one_column_right),)),
        Mutation("bias_of_next_output", "codegen-bytes", "host padding: output o gets the bias of output o + 1",
                 (Patch(_LP, "pad_operands", _bias_of_next_output),)),
        Mutation("pads_with_ones", "codegen-bytes", "host padding: the extra input lanes of x and w hold 1.0, not 0.0",
                 (Patch(_LP, "pad_operands", _pads_with_ones),)),
        Mutation("cut_from_column_one", "read-back", "read-back: the cut keeps columns 1..O of the padded result",
                 (Patch(_LP, "cut", _cut_from_column_one),)),
    ]
    lin = linear()
    shared = [lin[k] for k in ("lane_order", "swapped_input_and_bias_registers", "wrong_readback_base")]
    return {m.name: m for m in own + shared}
