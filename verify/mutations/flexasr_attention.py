"""Seeded bugs of flexasr.attention (the GB attention unit, proved against its declared numerics
term: ``mappings/flexasr/attention_proof.py``), one or more per claimed layer (``verify.scope``);
each must be refuted by the BMC proof with a replayed counterexample (at 20x32: two timestep
groups, two vectors)."""
from __future__ import annotations

import ila.models.flexasr.programs  # noqa: F401  (registers the attention expander patched below)
from verify.mutations import Mutation, Patch
from verify.mutations.layer_reduce import _asm_fields, _last_input_store_after_start, _reversed_lanes

_ISA = "ila.models.flexasr.isa"
_DRIVER = "ila.models.flexasr.driver"
_ATT = "ila.models.flexasr.attention"
_MODEL_CACHE = ("ila.models.flexasr:shared_model",)


def _parts(edit):
    """Wrap driver.attention_parts: ``edit(prog)`` changes the tensor program it returns."""
    def wrap(attention_parts):
        def mutated(*a, **kw):
            parts = attention_parts(*a, **kw)
            edit(parts.prog)
            return parts
        return mutated
    return wrap


def _enc_row_late(prog):
    for ins in prog:
        if ins["name"] == "store_act":
            ins["base"] += 1


def _out_read_late(prog):
    first = next(ins for ins in prog if ins["name"] == "load_small")
    first["base"] += 1


def _max_ignores_scores(real):
    return lambda a, b: real(a, a)


def mutations() -> dict[str, Mutation]:
    M = [
        Mutation("lane_order", "codegen-bytes", "generator: the packer puts a vector's 16 codes in reversed lane order",
                 (Patch(_ISA, "pack_word", _reversed_lanes),)),
        Mutation("encoder_row_off_by_one", "codegen-bytes", "generator: the encoder is stored one 16-byte row "
                 "further in the GB large buffer", (Patch(_DRIVER, "attention_parts", _parts(_enc_row_late)),)),
        Mutation("store_after_start", "order", "generator: the last input store is emitted after the start",
                 (Patch(_ISA, "tensor_to_ila", _last_input_store_after_start),)),
        Mutation("prob_out_registers_swapped", "configuration-fields",
                 "generator: the probability and output exponent-bias registers are swapped",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_attention", adpbias_3=lambda v, i: i["adpbias_out"],
                                                       adpbias_4=lambda v, i: i["adpbias_prob"]), "attention"),)),
        Mutation("timestep_groups_short", "configuration-fields", "generator: num_timestep configured one group "
                 "(16 timesteps) short when there are several groups",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_attention", num_timestep=lambda v, i: v - 16 if v > 16
                                                       else v), "attention"),)),
        Mutation("vector_count_short", "configuration-fields", "generator: num_vector configured as H/16 - 1 "
                 "when H/16 > 1", (Patch(_ISA, "EXPANDERS", _asm_fields(
                     "cfg_attention", num_vector=lambda v, i: v - 1 if v > 1 else v), "attention"),)),
        Mutation("out_read_late", "read-back", "driver: out is read back from one 16-byte row further in the small "
                 "buffer", (Patch(_DRIVER, "attention_parts", _parts(_out_read_late)),)),
        Mutation("max_ignores_scores", "model-loops", "model: the running max never takes a group's scores "
                 "(GBAttentionMax given the old max twice)", (Patch(_ATT, "GB_ATTENTION_MAX", _max_ignores_scores),),
                 _MODEL_CACHE),
    ]
    return {m.name: m for m in M}
