"""Seeded bugs of hlscnn.conv2d_nchw / conv2d_nchw_w8 (declared by the mapping, ``Mapping.mutations``):
the host layout and padding the mapping does inside its program, and its read-back order, plus
the HLSCNN driver bugs of :mod:`verify.mutations.hlscnn` (the same stream underneath). Each must be
refuted by the BMC proof (P >= 1, square H = W so that an H/W swap keeps the shapes) with a replayed
counterexample: at one input channel (the proof against the IR fragment) and at C = 9 (two channel
blocks; the proof against the declared numerics term), except ``weight_channels_reversed``, which is
equal to the mapping at C = 1 and checked at C = 9 only."""
from __future__ import annotations

import numpy as np

from verify.mutations import Mutation, Patch
from verify.mutations.hlscnn import conv2d_mutations

_M = "mappings.hlscnn.conv2d_nchw"


def _pad_wrong_side(host_image):
    def mutated(x_chw, pad):
        img = host_image(x_chw, pad)
        return np.roll(img, (-pad, -pad), axis=(0, 1))       # all 2P zero rows/columns after the data
    return mutated


def _pad_value(host_image):
    def mutated(x_chw, pad):
        img = host_image(x_chw, pad)
        out = np.full(img.shape, 1, dtype=img.dtype)           # ACT raw 1 (2^-7) instead of 0 in the border
        out[pad:img.shape[0] - pad, pad:img.shape[1] - pad] = img[pad:img.shape[0] - pad, pad:img.shape[1] - pad]
        return out
    return mutated


def _image_hw_swapped(host_image):
    return lambda x_chw, pad: host_image(x_chw, pad).transpose(1, 0, 2)


def _kernel_hw_swapped(host_weights):
    return lambda w: host_weights(w).transpose(0, 2, 1, 3)


def _weight_channels_reversed(host_weights):
    return lambda w: host_weights(np.asarray(w)[:, ::-1])      # input channel c of every filter gets C-1-c's weights


def _nchw_hw_swapped(to_nchw):
    return lambda out: to_nchw(out).transpose(0, 2, 1)     # [O, OW, OH] read as [O, OH, OW]


def _nchw_channel_minor(to_nchw):
    def mutated(out):
        a = np.asarray(out)                                    # [OH, OW, O] reshaped, not transposed
        return a.reshape(a.shape[2], a.shape[0], a.shape[1])
    return mutated


def conv2d_nchw_mutations() -> dict[str, Mutation]:
    mine = [
        Mutation("padding_wrong_side", "codegen-bytes",
                 "host layout: the 2P zero rows and columns all go after the data (none before)",
                 (Patch(_M, "host_image", _pad_wrong_side),)),
        Mutation("padding_value_nonzero", "codegen-bytes",
                 "host layout: the padded border holds ACT raw 1 (2^-7) instead of zero",
                 (Patch(_M, "host_image", _pad_value),)),
        Mutation("image_hw_transposed", "codegen-bytes",
                 "host layout: the activation image is written W x H (rows and columns swapped)",
                 (Patch(_M, "host_image", _image_hw_swapped),)),
        Mutation("kernel_hw_transposed", "codegen-bytes",
                 "host layout: OIHW -> OWHI instead of OHWI (each kernel transposed)",
                 (Patch(_M, "host_weights", _kernel_hw_swapped),)),
        Mutation("weight_channels_reversed", "codegen-bytes",
                 "host layout: OIHW -> OHWI with the input channels reversed (equal at C = 1; wrong for C > 1)",
                 (Patch(_M, "host_weights", _weight_channels_reversed),)),
        Mutation("readback_hw_transposed", "read-back",
                 "read-back: [OH, OW, O] -> [O, OW, OH] (rows and columns of every output plane swapped)",
                 (Patch(_M, "to_nchw", _nchw_hw_swapped),)),
        Mutation("readback_reshaped_not_transposed", "read-back",
                 "read-back: the driver's [OH, OW, O] reshaped to [O, OH, OW] instead of transposed",
                 (Patch(_M, "to_nchw", _nchw_channel_minor),)),
    ]
    return {**conv2d_mutations(), **{m.name: m for m in mine + allsizes_mutations()}}


def _short_where(value, size, at_least: int):
    """``value - 1`` where ``size >= at_least``, else ``value``: ints decided now, 32-bit terms as an
    ite (the all-sizes proof runs the generator on size symbols)."""
    from ila.expr import Expr, ite
    if isinstance(size, Expr):
        return ite(size.uge(at_least), value - 1, value)
    return value - 1 if size >= at_least else value


def _out_cols_short(at_least: int):
    """The generator's register tail (``driver.conv_tail``) with the output-size word's OW field one
    short where OW >= ``at_least``."""
    def wrap(conv_tail):
        def mutated(C, H, W, O, OH, OW, *args, **kw):
            return [(r, _short_where(v, OW, at_least) if r == "AccelConvOutputSizeConfig" else v)
                    for r, v in conv_tail(C, H, W, O, OH, OW, *args, **kw)]
        return mutated
    return wrap


def _in_cols_short(at_least: int):
    """``driver.conv_tail`` with the input-size word's W field (the padded image's width) one short
    where it is >= ``at_least``."""
    def wrap(conv_tail):
        def mutated(C, H, W, *args, **kw):
            return [(r, _short_where(v, W, at_least) if r == "AccelConvInputSizeConfig" else v)
                    for r, v in conv_tail(C, H, W, *args, **kw)]
        return mutated
    return wrap


_DRIVER = "ila.models.hlscnn.driver"


def allsizes_mutations() -> list[Mutation]:
    """Configuration fields the generator gets wrong only at sizes the fixed-shape proofs do not
    reach (their outputs are at most 2 x 2): refuted by the all-sizes proof (``--shape symbolic``),
    whose counterexample search finds a shape where the field is wrong and replays it."""
    return [
        Mutation("out_cols_short_some_sizes", "configuration-fields",
                 "generator: the output-size word's OW field is one short from 5 output columns on: the last "
                 "output column of every row is not computed and the rows shift",
                 (Patch(_DRIVER, "conv_tail", _out_cols_short(5)),)),
        Mutation("in_cols_short_near_max", "configuration-fields",
                 "generator: the input-size word's W field is one short from a padded width of 500 on (near the "
                 "largest, 511, the claim allows): every image row after the first is read from the wrong place",
                 (Patch(_DRIVER, "conv_tail", _in_cols_short(500)),)),
    ]


# bugs only the all-sizes proof reaches (the fixed proof shapes' outputs are too narrow to show them)
ALLSIZES_ONLY = tuple(m.name for m in allsizes_mutations())
