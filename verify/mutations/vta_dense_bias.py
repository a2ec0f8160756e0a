"""Seeded bugs of ``vta.dense_bias`` (issue 26, item 7): one per lemma that ties vta.dense's proof
of the int8 core to this mapping's program (``mappings.vta.dense_bias_proof``), each refuted by
``--method chc`` with a counterexample found by simulation against the declared term
(``dense_bias.reference_term``), and one bug of the shared core (vta.dense's tiling) that the
composite's own lemmas refute. The read-back bugs change the host epilogue only: vta.dense's
pieces and lemmas all hold under them, so only the ``epilogue`` lemma sees them; the codegen bug
changes the codes the stream carries, which only the ``stream`` lemma sees.
"""
from __future__ import annotations

import numpy as np

from verify.mutations import Mutation, Patch

_DB = "mappings.vta.dense_bias"


def _bias_reversed(epilogue):
    """The epilogue adds b[M - 1 - m] to column m."""
    return lambda acc, sx, sw, b: epilogue(acc, sx, sw, np.asarray(b)[::-1])


def _scale_of_x_twice(epilogue):
    """The epilogue dequantises at s_x * s_x."""
    return lambda acc, sx, sw, b: epilogue(acc, sx, sx, b)


def _bias_before_dequantisation(epilogue):
    """The epilogue adds b to the int32 accumulator before scaling: float32((A + b) * s_x * s_w)."""
    return lambda acc, sx, sw, b: epilogue(np.asarray(acc, np.float64) + np.asarray(b, np.float64), sx, sw, 0.0)


def _last_code_of_w_zeroed(operands):
    """The host sends w's codes with the last column zeroed (the emitted stream carries other codes
    than vta.dense's quantisation gives)."""
    def mutated(shape, inputs):
        (qx, sx), (qw, sw), b = operands(shape, inputs)
        qw = np.array(qw)
        qw[:, -1] = 0
        return (qx, sx), (qw, sw), b
    return mutated


def mutations() -> dict[str, Mutation]:
    from verify.mutations.vta import dense_mutations
    M = [
        Mutation("bias_reversed", "read-back", "epilogue: column m gets the bias of column M - 1 - m",
                 (Patch(_DB, "epilogue", _bias_reversed),)),
        Mutation("scale_of_x_twice", "read-back", "epilogue: dequantised at s_x * s_x instead of s_x * s_w",
                 (Patch(_DB, "epilogue", _scale_of_x_twice),)),
        Mutation("bias_before_dequantisation", "read-back",
                 "epilogue: the bias added to the int32 result before the scale",
                 (Patch(_DB, "epilogue", _bias_before_dequantisation),)),
        Mutation("last_code_of_w_zeroed", "codegen-bytes",
                 "host: the stream carries w's codes with the last column zeroed",
                 (Patch(_DB, "_operands", _last_code_of_w_zeroed),)),
        dense_mutations()["last_pass_row_short"],
    ]
    return {m.name: m for m in M}
