"""FlexASR constants: MMIO address map, buffer sizes, configuration-register packing, FSM codes.

Facts from ``../shared/reference/ILA_AND_ACCELERATORS.md`` §2.1 (flexnlp-ila ``top_config.h``,
``gb_addr_map.h``, ``config_instr_gb.cc``; 3la_ILA_tensor_op converters). Where the public model
does not say, the choice is ours and marked *(ours)*.

Address map (32-bit MMIO, 128-bit data beats, byte k of a beat = ``data_in_k``)::

    0x33000000 + [0, 0x00FFFFFF]     global buffer (GB) partition
        +0x10 / 0x20 / 0x30 / 0x40 / 0x50   start GB_CONTROL / LAYER_REDUCE / LAYER_NORM /
                                            ZERO_PADDING / ATTENTION (data ignored)
        +0x00400010 / 0x00400020            config memory manager large / small
        +0x00700010 ... 0x00B00010          config GB control, layer reduce, layer norm,
                                            zero padding, attention
        +0x00500000 .. +0x005FFFF0          large buffer window (20-bit byte offset)
        +0x00600000 .. +0x00603FF0          small buffer window (14-bit byte offset)
    0x34000000 + i*0x01000000         PE i (i = 0..3)
        +0x00400010                         config RNN layer sizing
        +0x00400020 / +0x00400040           config memory manager 1 / 2 (0x00400000 + 0x20*k)
        +0x00800010                         config activation manager
        +0x00800020 / +0x00800030           config activation micro-program ops 0..15 / 16..31
        +0x00500000 ..                      weight buffer window *(ours: 256 KiB)*
        +0x00600000 ..                      input buffer window *(ours: 16 KiB)*
"""
from __future__ import annotations

TOP_BASE = 0x33000000
TOP_MAX = 0x37FFFFFF
GB_BASE = TOP_BASE


def pe_base(i: int) -> int:
    return TOP_BASE + (i + 1) * 0x01000000


NUM_PE = 4
VEC = 16                                   # kVectorSize: bytes per vector / lanes

# GB start triggers
START_GB_CONTROL = GB_BASE + 0x10
START_LAYER_REDUCE = GB_BASE + 0x20
START_LAYER_NORM = GB_BASE + 0x30
START_ZERO_PADDING = GB_BASE + 0x40
START_ATTENTION = GB_BASE + 0x50
# GB configuration registers
CFG_MEM_MNGR_LARGE = GB_BASE + 0x00400010
CFG_MEM_MNGR_SMALL = GB_BASE + 0x00400020
CFG_GB_CONTROL = GB_BASE + 0x00700010
CFG_LAYER_REDUCE = GB_BASE + 0x00800010
CFG_LAYER_NORM = GB_BASE + 0x00900010
CFG_ZERO_PADDING = GB_BASE + 0x00A00010
CFG_ATTENTION = GB_BASE + 0x00B00010
# GB data windows
GB_LARGE_BASE = GB_BASE + 0x00500000
GB_LARGE_SIZE = 1 << 20                     # 16 B x 16 banks x 4096 entries
GB_LARGE_LAST = GB_LARGE_BASE + GB_LARGE_SIZE - 16
GB_SMALL_BASE = GB_BASE + 0x00600000
GB_SMALL_SIZE = 1 << 14
GB_SMALL_LAST = GB_SMALL_BASE + GB_SMALL_SIZE - 16

# PE offsets
PE_CFG_RNN_LAYER_SIZING = 0x00400010
PE_CFG_MEM_MNGR = {1: 0x00400020, 2: 0x00400040}
PE_CFG_ACT_MNGR = 0x00800010
PE_CFG_ACT_VECTOR = {0: 0x00800020, 1: 0x00800030}   # micro-ops 0..15, 16..31
PE_WEIGHT_OFFSET = 0x00500000
PE_WEIGHT_SIZE = 1 << 18
PE_INPUT_OFFSET = 0x00600000
PE_INPUT_SIZE = 1 << 14
PE_ACT_BUF_SIZE = 1 << 12                   # 20-bit entries (ours)
PE_CORE_OUT_SIZE = 1 << 12                  # 20-bit core outputs, one per output row (ours)
PE_CORE_OC = 4                              # output vectors per PE-core MAC instruction (ours)
PE_PARTIAL_SUMS = 256 * PE_CORE_OC          # 32-bit partial sums, one per (output vector, lane, k)

# Field packing: name -> (first byte, number of bytes); fields narrower than their bytes take the
# low bits. GB packings are the public model's; PE packings are ours.
GB_FIELDS = {
    "layer_reduce": {"is_valid": (0, 1), "mode": (1, 1), "mem_idx": (4, 1), "num_vector": (6, 1),
                     "num_timestep": (8, 2)},
    "gb_control": {"is_valid": (0, 1), "mode": (1, 1), "is_rnn": (2, 1), "mem_idx_1": (4, 1),
                   "mem_idx_2": (5, 1), "num_vector_1": (6, 1), "num_vector_2": (7, 1),
                   "num_timestep": (8, 2)},
    "layer_norm": {"is_valid": (0, 1), "mode": (1, 1), "mem_idx": (4, 1), "num_vector": (6, 1),
                   "num_timestep": (8, 2), "adpbias_1": (12, 1), "adpbias_3": (14, 1),
                   "adpbias_4": (15, 1)},
    "zero_padding": {"is_valid": (0, 1), "mem_idx": (4, 1), "num_vector": (6, 1),
                     "num_timestep_1": (8, 2), "num_timestep_2": (10, 2)},
    "attention": {"is_valid": (0, 1), "mem_idx_1": (4, 1), "mem_idx_2": (5, 1),
                  "num_vector": (6, 1), "num_timestep": (8, 2), "adpbias_1": (12, 1),
                  "adpbias_2": (13, 1), "adpbias_3": (14, 1), "adpbias_4": (15, 1)},
    "mem_mngr_large": {"num_vector_0": (0, 1), "base_large_0": (2, 2), "num_vector_1": (4, 1),
                       "base_large_1": (6, 2), "num_vector_2": (8, 1), "base_large_2": (10, 2),
                       "num_vector_3": (12, 1), "base_large_3": (14, 2)},
    "mem_mngr_small": {f"base_small_{k}": (2 * k, 2) for k in range(8)},
}
PE_FIELDS = {
    "rnn_layer_sizing": {"is_valid": (0, 1), "is_zero_first": (1, 1), "is_cluster": (2, 1),
                         "is_bias": (3, 1), "num_manager": (4, 1), "num_output": (5, 1)},
    "mem_mngr": {"num_inputs": (0, 1), "base_weight": (2, 2), "base_bias": (4, 2),
                 "base_input": (6, 2), "adpbias_weight": (8, 1), "adpbias_bias": (9, 1),
                 "adpbias_input": (10, 1)},
    "act_mngr": {"is_valid": (0, 1), "is_zero_first": (1, 1), "adpbias_out": (2, 1),
                 "num_inst": (3, 1), "num_output": (4, 1), "buffer_base": (6, 2),
                 "output_base": (8, 2)},
}
# widths of configuration registers (bits)
FIELD_WIDTHS = {"is_valid": 1, "mode": 3, "is_rnn": 1, "mem_idx": 2, "mem_idx_1": 2, "mem_idx_2": 2,
                "num_vector": 8, "num_vector_1": 8, "num_vector_2": 8, "num_timestep": 16,
                "num_timestep_1": 16, "num_timestep_2": 16, "adpbias_1": 3, "adpbias_2": 3,
                "adpbias_3": 3, "adpbias_4": 3, "is_zero_first": 1, "is_cluster": 1, "is_bias": 1,
                "num_manager": 2, "num_output": 8, "num_inputs": 8, "base_weight": 16,
                "base_bias": 16, "base_input": 16, "adpbias_weight": 3, "adpbias_bias": 3,
                "adpbias_input": 3, "adpbias_out": 3, "num_inst": 5, "buffer_base": 16,
                "output_base": 16}
for _k in range(4):
    FIELD_WIDTHS[f"num_vector_{_k}"] = 8
    FIELD_WIDTHS[f"base_large_{_k}"] = 16
for _k in range(8):
    FIELD_WIDTHS[f"base_small_{_k}"] = 16


def pack_fields(layout: dict, values: dict):
    """Pack named field values into a 128-bit data word (16 little-endian bytes; a field of
    ``nbytes`` bytes starting at byte ``first`` holds its value in its low bits). Values are ints,
    or bit-vector expressions (symbolic sizes in proofs: the word is then a 128-bit term built by
    the same code). Raises KeyError for an unknown field and ValueError for an int that does not
    fit the field's register width (:data:`FIELD_WIDTHS`)."""
    from ila import generic
    data = [0] * 16
    for name, val in values.items():
        if name not in layout:
            raise KeyError(f"unknown configuration field {name!r}; fields: {sorted(layout)}")
        first, nbytes = layout[name]
        width = FIELD_WIDTHS[name]
        if not generic.is_symbolic(val) and not 0 <= int(val) < (1 << width):
            raise ValueError(f"configuration field {name!r} = {val!r} does not fit in {width} bits")
        if generic.is_symbolic(val) and val.sort.width > width:
            raise ValueError(f"configuration field {name!r}: a {val.sort.width}-bit term does not fit in {width} bits")
        v = generic.const(val, 8 * nbytes)
        for j in range(nbytes):
            data[first + j] = generic.field(v, 8 * j, 8)
    return generic.bytes_le(data)


# LayerReduce modes and child FSM states (flexnlp-ila gb_layer_reduce_fsm.cc)
LR_MAX, LR_MEAN, LR_ADD = 0, 1, 2
LR_PREP, LR_TIMESTEP_OP, LR_VECTOR_OP, LR_VECTOR_REDUCE, LR_DONE = 0, 2, 3, 4, 5

# PE activation micro-op opcodes (bits [7:4]); operands: [3:2] register A, [1:0] register B (ours)
ACT_LOAD, ACT_STORE, ACT_INPE, ACT_OUTGB = 0x1, 0x2, 0x3, 0x4
ACT_COPY, ACT_EADD, ACT_EMUL, ACT_SIGM, ACT_TANH, ACT_RELU, ACT_ONEX = 0x7, 0x8, 0x9, 0xA, 0xB, 0xC, 0xD
ACT_OP_NAMES = {ACT_LOAD: "load", ACT_STORE: "store", ACT_INPE: "inpe", ACT_OUTGB: "outgb",
                ACT_COPY: "copy", ACT_EADD: "eadd", ACT_EMUL: "emul", ACT_SIGM: "sigm",
                ACT_TANH: "tanh", ACT_RELU: "relu", ACT_ONEX: "onex"}


def act_op(code: int, a: int = 0, b: int = 0) -> int:
    """One activation micro-op byte: opcode in [7:4], register A in [3:2], register B in [1:0]."""
    return (code << 4) | (a << 2) | b
