"""Seeded bugs of the FlexASR LayerReduce family (flexasr.maxpool, flexasr.meanpool and their
chains flexasr.maxpool_chain, flexasr.meanpool_chain), one per layer of the trusted path
(``verify.scope``)."""
from __future__ import annotations

from verify.mutations import Mutation, Patch

_ISA = "ila.models.flexasr.isa"
_DRIVER = "ila.models.flexasr.driver"
_LR = "ila.models.flexasr.layer_reduce"
_MODEL_CACHE = ("ila.models.flexasr:shared_model",)


def _asm_fields(unit: str, **changes):
    """Wrap a pool expander so that its ``unit`` configuration gets ``changes`` (field -> f(value,
    instruction))."""
    def wrap(expand):
        def mutated(ins):
            out = expand(ins)
            for a in out:
                if a["name"] == unit:
                    for f, fn in changes.items():
                        a[f] = fn(a[f], ins)
            return out
        return mutated
    return wrap


def _last_input_store_after_start(tensor_to_ila):
    """Move the last input store (the last ``write_v`` before the first configuration) to just
    after the ``start``."""
    def mutated(prog, lib):
        asm = tensor_to_ila(prog, lib)
        first_cfg = next((i for i, a in enumerate(asm) if a["name"].startswith("cfg")), None)
        starts = [i for i, a in enumerate(asm) if a["name"] == "start"]
        stores = [i for i, a in enumerate(asm[:first_cfg]) if a["name"] == "write_v"] if first_cfg else []
        if not stores or not starts:
            return asm
        moved = asm.pop(stores[-1])
        asm.insert(starts[0], moved)          # start moved one down: the store lands right after it
        return asm
    return mutated


def _drop_last_input_store(tensor_to_ila):
    def mutated(prog, lib):
        asm = tensor_to_ila(prog, lib)
        first_cfg = next((i for i, a in enumerate(asm) if a["name"].startswith("cfg")), None)
        stores = [i for i, a in enumerate(asm[:first_cfg]) if a["name"] == "write_v"] if first_cfg else []
        if stores:
            del asm[stores[-1]]
        return asm
    return mutated


def _readback_base(base: int):
    def wrap(pool_program):
        def mutated(T, nv, mode="max", *, transfers=True):
            prog = pool_program(T, nv, mode, transfers=transfers)
            for ins in prog:
                if ins["name"] == "load_act":
                    ins["base"] = base
            return prog
        return mutated
    return wrap


def _swap_timesteps(bit: int):
    """Generator address permutation: timestep t's vectors stored at (and read back from) the
    offsets of t xor 2**bit when that timestep exists (a bijection of the tiled offsets)."""
    def wrap(tiled_offsets):
        def mutated(num_ts, num_v):
            import numpy as np
            offs = tiled_offsets(num_ts, num_v)
            t = np.arange(num_ts)
            partner = t ^ (1 << bit)
            perm = np.where(partner < num_ts, partner, t)
            return offs[perm]
        return mutated
    return wrap


def _model_swap_timestep_bits(tiled_addr):
    """Model address permutation inside the shared helper: timestep bits 0 and 1 swapped before
    the tiled address is formed (a bijection on addresses)."""
    def mutated(base, t, v, num_v):
        from ila.models.flexasr.model import u32
        t32 = u32(t)
        diff = (t32 ^ t32.lshr(1)) & 1
        return tiled_addr(base, t32 ^ (diff | (diff << 1)), v, num_v)
    return mutated


def _model_stride(tiled_addr):
    def mutated(base, t, v, num_v):
        from ila.models.flexasr.model import u32
        t32, n32 = u32(t), u32(num_v)
        out = base + (((t32 & 15) + (t32.lshr(4) * (n32 << 4) + t32.lshr(4))) << 4)
        return out + (u32(v) << 8) if not isinstance(v, int) else (out + (v << 8) if v else out)
    return mutated


def _declared_stride(gb_address):
    """The declared map (``mappings.flexasr.common.gb_address``) with a timestep-group stride of
    num_v*16+1 rows: wrong for timesteps >= 16 only; the generator and the model are untouched, so
    the emitted program is still right end to end."""
    def mutated(t, v, i, nv):
        from ila import generic
        return 16 * (generic.low_bits(t, 4) + generic.lshr(t, 4) * (nv * 16 + 1)) + 256 * v + i
    return mutated


def _reversed_lanes(pack_word):
    return lambda codes: pack_word(list(reversed(list(codes))))


def layer_reduce_mutations(op: str) -> dict[str, Mutation]:
    """The seeded bugs of flexasr.maxpool (``op='max'``) / flexasr.meanpool (``'mean'``)."""
    from ila import generic
    key = {"max": "maxp", "mean": "meanp"}[op]
    M = [
        Mutation("lane_order", "codegen-bytes", "generator: the packer puts a vector's 16 codes in reversed lane order",
                 (Patch(_ISA, "pack_word", _reversed_lanes),)),
        Mutation("generator_address_permutation", "codegen-bytes",
                 "generator: timesteps t and t^2 swapped in the tiled offsets of the stores and of the read-back",
                 (Patch(_ISA, "tiled_offsets", _swap_timesteps(1)),)),
        Mutation("missing_lane", "codegen-bytes", "generator: the last 16-byte store of the input is not emitted",
                 (Patch(_ISA, "tensor_to_ila", _drop_last_input_store),)),
        Mutation("store_after_start", "order", "generator: the last input store is emitted after the start",
                 (Patch(_ISA, "tensor_to_ila", _last_input_store_after_start),)),
        Mutation("timestep_off_by_one", "configuration-fields", "generator: num_timestep configured as R-2",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_ly_reduce", num_timestep=lambda v, i: v - 2), key),)),
        Mutation("wrong_mode", "configuration-fields", f"generator: LayerReduce mode {1 if op == 'max' else 0} "
                 f"({'mean' if op == 'max' else 'max'}) instead of {0 if op == 'max' else 1}",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_ly_reduce", mode=lambda v, i: 1 - v), key),)),
        Mutation("wrong_base", "configuration-fields", "generator: memory-manager base of memory index 0 is 1 "
                 "(16 bytes off)", (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_mmngr_gb_large",
                                                                        base_large_0=lambda v, i: 1), key),)),
        Mutation("wrong_vector_count", "configuration-fields", "generator: num_vector configured as C/16 - 1",
                 (Patch(_ISA, "EXPANDERS", _asm_fields("cfg_ly_reduce", num_vector=lambda v, i: v - 1), key),)),
        Mutation("size_field_some_sizes", "configuration-fields",
                 "generator: num_vector configured as C/16 - 1 only when C/16 > 3 (wrong for C >= 64 only)",
                 (Patch(_ISA, "EXPANDERS", _asm_fields(
                     "cfg_ly_reduce", num_vector=lambda v, i: generic.select(generic.ugt(v, 3), v - 1, v, 8)), key),)),
        Mutation("vector_count_near_max", "configuration-fields",
                 "generator: num_vector configured as C/16 - 1 only when C/16 >= 250 (the largest sizes the "
                 "8-bit field allows: C >= 4000)",
                 (Patch(_ISA, "EXPANDERS", _asm_fields(
                     "cfg_ly_reduce", num_vector=lambda v, i: generic.select(generic.ugt(v, 249), v - 1, v, 8)), key),)),
        Mutation("timestep_count_near_max", "configuration-fields",
                 "generator: num_timestep configured as R - 2 only when R >= 32768 (the upper half of the 16-bit "
                 "field)", (Patch(_ISA, "EXPANDERS", _asm_fields(
                     "cfg_ly_reduce", num_timestep=lambda v, i: generic.select(generic.ugt(v, 0x7FFF), v - 2, v, 16)),
                     key),)),
        Mutation("wrong_in_place_target", "read-back", "driver: results read back one timestep too late "
                 "(load_act base 1)", (Patch(_DRIVER, "pool_program", _readback_base(1)),)),
        Mutation("wrong_readback_base", "read-back", "driver: results read back from 4 KiB further (load_act base "
                 "0x100)", (Patch(_DRIVER, "pool_program", _readback_base(0x100)),)),
        Mutation("tiling_stride", "model-loops", "model: LayerReduce's tiled address uses a timestep-group stride "
                 "of num_v*16+1 rows", (Patch(_LR, "tiled_addr", _model_stride),), _MODEL_CACHE),
        Mutation("model_address_permutation", "model-loops", "model: the shared tiled-address helper swaps "
                 "timestep bits 0 and 1 (a bijection)", (Patch(_LR, "tiled_addr", _model_swap_timestep_bits),),
                 _MODEL_CACHE),
    ]
    M.append(Mutation("declared_map_stride", "model-loops", "declared refinement map: gb_address uses a "
                      "timestep-group stride of num_v*16+1 rows (the program is right; the declaration is not)",
                      (Patch("mappings.flexasr.common", "gb_address", _declared_stride),
                       Patch("mappings.flexasr.layer_reduce", "gb_address", _declared_stride))))
    if op == "max":
        M.append(Mutation("duplicate_operand", "model-loops", "model: vector_max reads the first timestep of the "
                          "pair twice", (Patch(_LR, "GB_ADPFLOAT_MAX", lambda real: lambda a, b: real(a, a)),),
                          _MODEL_CACHE))
    return {m.name: m for m in M}




def max_mutations() -> dict[str, Mutation]:
    return layer_reduce_mutations("max")


def mean_mutations() -> dict[str, Mutation]:
    return layer_reduce_mutations("mean")


def _chain_program(edit):
    """Wrap ``driver.pool_chain_program`` so that ``edit(prog, T, k)`` changes the program."""
    def wrap(pool_chain_program):
        def mutated(T, nv, k, mode="max"):
            return edit(pool_chain_program(T, nv, k, mode), T, k)
        return mutated
    return wrap


def _short_later_pool(prog, T, k):
    """The second pool configured with a quarter of T timesteps instead of half."""
    pools = [ins for ins in prog if ins["name"] in ("maxp", "meanp")]
    if len(pools) > 1:
        pools[1]["num_ts"] = T >> 2
    return prog


def _chain_readback_late(prog, T, k):
    for ins in prog:
        if ins["name"] == "load_act":
            ins["base"] = 1
    return prog


def _load_before_last_pool(prog, T, k):
    load = prog.pop()
    prog.insert(len(prog) - 1, load)
    return prog


def _single_only(name: str) -> bool:
    """Bugs of the single pool's own program (``driver.pool_program``), which a chain never runs,
    and the bugs that show only near the largest sizes (C/16 >= 250, R >= 32768): they are for the
    single pool's all-sizes proof; a chain mapping claims only its proved shapes, where they are
    correct."""
    return name in ("wrong_in_place_target", "wrong_readback_base", "vector_count_near_max", "timestep_count_near_max")


def chain_mutations(op: str) -> dict[str, Mutation]:
    """The seeded bugs of flexasr.maxpool_chain / meanpool_chain: the single pool's bugs in the
    shared generator and model, and three in the fused program (``driver.pool_chain_program``)."""
    M = [m for name, m in layer_reduce_mutations(op).items() if not _single_only(name)]
    M += [
        Mutation("chain_short_pool", "configuration-fields", "driver: the second pool of a chain is configured "
                 "with R/4 timesteps instead of R/2", (Patch(_DRIVER, "pool_chain_program",
                                                             _chain_program(_short_later_pool)),)),
        Mutation("chain_readback_offset", "read-back", "driver: a chain's result read back one timestep late "
                 "(load_act base 1)", (Patch(_DRIVER, "pool_chain_program", _chain_program(_chain_readback_late)),)),
        Mutation("chain_load_before_last_pool", "order", "driver: a chain's read-back emitted before its last pool",
                 (Patch(_DRIVER, "pool_chain_program", _chain_program(_load_before_last_pool)),)),
    ]
    return {m.name: m for m in M}


def max_chain_mutations() -> dict[str, Mutation]:
    return chain_mutations("max")


def mean_chain_mutations() -> dict[str, Mutation]:
    return chain_mutations("mean")
