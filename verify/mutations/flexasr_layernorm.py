"""Seeded bugs of flexasr.layernorm (the GB LayerNorm unit, proved against its declared numerics
term: ``mappings/flexasr/layernorm_proof.py``), one or more per claimed layer (``verify.scope``);
each must be refuted by the BMC proof with a replayed counterexample."""
from __future__ import annotations

import ila.models.flexasr.programs  # noqa: F401  (registers the layernorm expander patched below)
from verify.mutations import Mutation, Patch
from verify.mutations.layer_reduce import _asm_fields, _last_input_store_after_start, _reversed_lanes

_ISA = "ila.models.flexasr.isa"
_DRIVER = "ila.models.flexasr.driver"
_LN = "ila.models.flexasr.layer_norm"
_MODEL_CACHE = ("ila.models.flexasr:shared_model",)


def _parts(edit):
    """Wrap driver.layernorm_parts: ``edit(prog)`` changes the tensor program it returns."""
    def wrap(layernorm_parts):
        def mutated(*a, **kw):
            parts = layernorm_parts(*a, **kw)
            edit(parts.prog)
            return parts
        return mutated
    return wrap


def _swap_gamma_beta_stores(prog):
    for ins in prog:
        if ins["name"] == "store_small":
            ins["tensor"] = {"gamma": "beta", "beta": "gamma"}[ins["tensor"]]


def _readback_late(prog):
    for ins in prog:
        if ins["name"] == "load_act":
            ins["base"] += 1


def _minus_swapped(real):
    return lambda a, b: real(b, a)


def mutations() -> dict[str, Mutation]:
    M = [
        Mutation("lane_order", "codegen-bytes", "generator: the packer puts a vector's 16 codes in reversed lane order",
                 (Patch(_ISA, "pack_word", _reversed_lanes),)),
        Mutation("gamma_beta_swapped", "codegen-bytes", "generator: gamma is stored where beta belongs and beta where "
                 "gamma belongs", (Patch(_DRIVER, "layernorm_parts", _parts(_swap_gamma_beta_stores)),)),
        Mutation("store_after_start", "order", "generator: the last input store is emitted after the start",
                 (Patch(_ISA, "tensor_to_ila", _last_input_store_after_start),)),
        Mutation("gamma_beta_registers_swapped", "configuration-fields",
                 "generator: the gamma and beta exponent-bias registers are swapped in the LayerNorm configuration",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_ly_norm", adpbias_3=lambda v, i: i["adpbias_gamma"],
                                                       adpbias_4=lambda v, i: i["adpbias_beta"]), "layernorm"),)),
        Mutation("vector_count_short", "configuration-fields", "generator: num_vector configured as H/16 - 1 "
                 "when H/16 > 1 (the last vector is neither summed nor normalised)",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_ly_norm", num_vector=lambda v, i: v - 1 if v > 1 else v),
                        "layernorm"),)),
        Mutation("readback_late", "read-back", "driver: the result is read back from one 16-byte row further",
                 (Patch(_DRIVER, "layernorm_parts", _parts(_readback_late)),)),
        Mutation("centering_reversed", "model-loops", "model: the normalisation subtracts x from the mean "
                 "(ActSignedMinus operands swapped)", (Patch(_LN, "ACT_SIGNED_MINUS", _minus_swapped),), _MODEL_CACHE),
    ]
    return {m.name: m for m in M}
