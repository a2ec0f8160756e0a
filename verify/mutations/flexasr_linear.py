"""Seeded bugs of flexasr.linear (y = x @ w.T + b on FlexASR's PEs), one or more per layer of the
trusted path (``verify.scope``); each must be refuted by the BMC proof.

No generator timestep permutation here: the layer is row-wise, so a permutation applied alike to
the input stores and to the read-back (as a permuted tiling helper does) is a correct mapping.
"""
from __future__ import annotations

import numpy as np

import ila.models.flexasr.programs  # noqa: F401  (registers the linear_layer expander patched below)
from verify.mutations import Mutation, Patch
from verify.mutations.layer_reduce import _asm_fields, _reversed_lanes

_ISA = "ila.models.flexasr.isa"
_PROG = "ila.models.flexasr.programs"
_DRIVER = "ila.models.flexasr.driver"


def _images(change):
    def wrap(linear_pe_images):
        def mutated(w, b):
            return change(linear_pe_images(w, b), np.asarray(w).shape)
        return mutated
    return wrap


def _per_image(edit):
    """A change of every PE image: ``edit(img, n)`` with n the bytes of the weight tiles (the bias
    bytes follow them)."""
    def change(imgs, wshape):
        n = wshape[0] // 64 * (wshape[1] // 16) * 256
        return [edit(img.copy(), n) for img in imgs]
    return change


def _transpose_tiles(img, n):
    img[:n] = img[:n].reshape(-1, 16, 16).transpose(0, 2, 1).reshape(-1)
    return img


def _bias_off_by_one(img, n):
    img[n:] = np.roll(img[n:], -1)
    return img


def _program(change):
    """Wrap driver.linear_program: ``change(kwargs)`` edits its keyword arguments, or (with
    ``after``) the tensor program it returns."""
    def wrap(linear_program):
        def mutated(xq, wq, bq, **kw):
            return linear_program(xq, wq, bq, **change(dict(kw)))
        return mutated
    return wrap


def _readback_base(delta: int):
    def wrap(linear_program):
        def mutated(*a, **kw):
            prog, lib = linear_program(*a, **kw)
            for ins in prog:
                if ins["name"] == "load_act":
                    ins["base"] += delta
            return prog, lib
        return mutated
    return wrap


def _declared_out_shift(refinement):
    """The declared map with y one 16-byte row further than the program leaves it."""
    def mutated(shape):
        ref = dict(refinement(shape))
        mem, off = ref["out"]
        ref["out"] = (mem, off + 16)
        return ref
    return mutated


def mutations() -> dict[str, Mutation]:
    M = [
        Mutation("lane_order", "codegen-bytes", "generator: the packer puts a vector's 16 codes in reversed lane order",
                 (Patch(_ISA, "pack_word", _reversed_lanes),)),
        Mutation("transposed_weight_tiles", "codegen-bytes", "generator: every 16x16 weight tile is stored transposed",
                 (Patch(_PROG, "linear_pe_images", _images(_per_image(_transpose_tiles))),)),
        Mutation("weights_of_next_pe", "codegen-bytes",
                 "generator: PE p receives the weight image of PE p+1 (other output rows)",
                 (Patch(_PROG, "linear_pe_images", _images(lambda imgs, s: imgs[1:] + imgs[:1])),)),
        Mutation("bias_off_by_one", "codegen-bytes", "generator: the bias byte of output row r is that of row r+1",
                 (Patch(_PROG, "linear_pe_images", _images(_per_image(_bias_off_by_one))),)),
        Mutation("swapped_input_and_bias_registers", "configuration-fields",
                 "generator: the input and bias exponent-bias registers are swapped",
                 (Patch(_DRIVER, "linear_program", _program(lambda kw: {**kw, "bx": kw["bb"], "bb": kw["bx"]})),)),
        Mutation("output_vector_off_by_one", "configuration-fields",
                 "generator: each PE's activation unit writes one output vector too far",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("pe_cfg_act_mngr", output_base=lambda v, i: v + 1),
                        "linear_layer"),)),
        Mutation("wrong_input_base", "configuration-fields",
                 "generator: the GB memory manager's base of x is one 16-byte row off",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_mmngr_gb_large", base_large_0=lambda v, i: v + 1),
                        "linear_layer"),)),
        Mutation("wrong_readback_base", "read-back", "driver: the results are read back from one 16-byte row further",
                 (Patch(_DRIVER, "linear_program", _readback_base(1)),)),
        Mutation("declared_output_shift", "model-loops", "declared refinement map: y declared one 16-byte row "
                 "further than the program leaves (and reads) it; the program is right end to end",
                 (Patch("mappings.flexasr.linear", "refinement", _declared_out_shift),)),
    ]
    return {m.name: m for m in M}
