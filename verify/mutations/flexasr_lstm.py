"""Seeded bugs of flexasr.lstm (the PEs' LSTM, proved against its declared numerics term:
``mappings/flexasr/lstm_proof.py``), one or more per claimed layer (``verify.scope``); each must be
refuted by the BMC proof with a replayed counterexample (at 2x16x64: the recurrence runs once)."""
from __future__ import annotations

import ila.models.flexasr.programs  # noqa: F401  (registers the lstm_layer expander patched below)
from verify.mutations import Mutation, Patch
from verify.mutations.layer_reduce import _last_input_store_after_start, _reversed_lanes

_ISA = "ila.models.flexasr.isa"
_PROG = "ila.models.flexasr.programs"
_DRIVER = "ila.models.flexasr.driver"
_GBC = "ila.models.flexasr.gb_control"
_MODEL_CACHE = ("ila.models.flexasr:shared_model",)


def _pe_fields(pred, **changes):
    """Wrap the lstm_layer expander: PE configuration entries satisfying ``pred`` get ``changes``
    (field -> f(value, tensor-assembly instruction))."""
    def wrap(expand):
        def mutated(ins):
            out = expand(ins)
            for a in out:
                if pred(a):
                    for f, fn in changes.items():
                        a[f] = fn(a[f], ins)
            return out
        return mutated
    return wrap


def _readback_late(lstm_parts):
    def mutated(*a, **kw):
        parts = lstm_parts(*a, **kw)
        for ins in parts.prog:
            if ins["name"] == "load_act":
                ins["base"] += 1
        return parts
    return mutated


def mutations() -> dict[str, Mutation]:
    M = [
        Mutation("lane_order", "codegen-bytes", "generator: the packer puts a vector's 16 codes in reversed lane order",
                 (Patch(_ISA, "pack_word", _reversed_lanes),)),
        Mutation("input_forget_gates_swapped", "codegen-bytes", "generator: the PE weight images hold the forget "
                 "gate's rows in the input gate's slot and vice versa",
                 (Patch(_PROG, "LSTM_GATE_SLOTS", lambda slots: (1, 2, 0, 3)),)),
        Mutation("store_after_start", "order", "generator: the last input store is emitted after the start",
                 (Patch(_ISA, "tensor_to_ila", _last_input_store_after_start),)),
        Mutation("hidden_input_register", "configuration-fields", "generator: manager 2 reads h_{t-1} with x's "
                 "exponent-bias register instead of h's", (Patch(_ISA, "EXPANDERS", _pe_fields(
                     lambda a: a["name"] == "pe_cfg_mngr" and a.get("mngr") == 2,
                     adpbias_input=lambda v, i: i["adpbias_inp"]), "lstm_layer"),)),
        Mutation("no_zero_first", "configuration-fields", "generator: is_zero_first cleared in the PE sizing (h_{-1} "
                 "is read from the uninitialised output region instead of zeros)",
                 (Patch(_ISA, "EXPANDERS", _pe_fields(lambda a: a["name"] == "pe_cfg_rnn_layer_sizing",
                                                      is_zero_first=lambda v, i: 0), "lstm_layer"),)),
        Mutation("readback_late", "read-back", "driver: h is read back from one 16-byte row further",
                 (Patch(_DRIVER, "lstm_parts", _readback_late),)),
        Mutation("sigmoid_is_tanh", "model-loops", "model: the activation unit's SIGM micro-op computes tanh",
                 (Patch(_GBC, "PE_ACT_SIGMOID", lambda real: __import__(_GBC, fromlist=["x"]).PE_ACT_TANH),),
                 _MODEL_CACHE),
    ]
    return {m.name: m for m in M}
