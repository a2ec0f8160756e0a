"""Seeded bugs as data, applied by the verifier for mutation testing (a verifier's worth is what it
refutes).

A :class:`Mutation` names one bug in one layer of the trusted path (``verify.scope``: the code
generator's bytes or addresses, the command order, the configuration fields, the model's loops,
the read-back) and the patches that make it: each wraps one attribute of one module (or one entry
of a module-level dict) for the duration of :func:`applied`. Production code knows nothing of
them. Model patches rebuild the model (``rebuild``: caches to clear on entry and exit), so a proof
setup built inside the context sees the buggy model and one built outside it the real one.

Every mutation says which claim of a proof catches it (``claim``); ``benchmarks/mutation_maxpool``
and ``benchmarks/proofs`` print the kill table. ``MUTATIONS[mapping]`` lists a mapping's bugs;
mappings whose proof setups still take a ``mutation`` argument list theirs in
``extras["mutations"]`` (:func:`names`, :func:`proof_setup` treat both alike).
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

from mappings.base import MappingError


@dataclass(frozen=True)
class Patch:
    module: str
    attr: str
    wrap: Callable[[Any], Any]          # the original -> its replacement
    key: Any = None                     # patch ``module.attr[key]`` instead of ``module.attr``


@dataclass(frozen=True)
class Mutation:
    name: str
    layer: str                          # codegen-bytes | order | configuration-fields | model-loops | read-back
    description: str
    patches: tuple[Patch, ...]
    rebuild: tuple[str, ...] = ()       # "module:function" lru caches to clear (models built from patched code)


def _clear(rebuild):
    for spec in rebuild:
        mod, fn = spec.split(":")
        getattr(importlib.import_module(mod), fn).cache_clear()


@contextmanager
def applied(mutation: Mutation | None):
    """Apply ``mutation``'s patches (None: nothing) for the duration of the block."""
    if mutation is None:
        yield
        return
    saved = []
    try:
        for p in mutation.patches:
            mod = importlib.import_module(p.module)
            if p.key is None:
                orig = getattr(mod, p.attr)
                setattr(mod, p.attr, p.wrap(orig))
            else:
                table = getattr(mod, p.attr)
                orig = table[p.key]
                table[p.key] = p.wrap(orig)
            saved.append((mod, p, orig))
        _clear(mutation.rebuild)
        yield
    finally:
        for mod, p, orig in reversed(saved):
            if p.key is None:
                setattr(mod, p.attr, orig)
            else:
                getattr(mod, p.attr)[p.key] = orig
        _clear(mutation.rebuild)


# ----------------------------------------------------------------------------- LayerReduce (FlexASR)
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
    if op == "max":
        M.append(Mutation("duplicate_operand", "model-loops", "model: vector_max reads the first timestep of the "
                          "pair twice", (Patch(_LR, "GB_ADPFLOAT_MAX", lambda real: lambda a, b: real(a, a)),),
                          _MODEL_CACHE))
    return {m.name: m for m in M}


MUTATIONS: dict[str, Callable[[], dict[str, Mutation]]] = {
    "flexasr.maxpool": lambda: layer_reduce_mutations("max"),
    "flexasr.meanpool": lambda: layer_reduce_mutations("mean"),
}


def names(mapping) -> dict[str, str]:
    """The seeded bugs of ``mapping``: name -> description."""
    if mapping.name in MUTATIONS:
        return {k: m.description for k, m in MUTATIONS[mapping.name]().items()}
    return dict(mapping.extras.get("mutations", {}))


def layers(mapping) -> dict[str, str]:
    """The seeded bugs of ``mapping``: name -> the layer (claim) it is seeded in."""
    if mapping.name in MUTATIONS:
        return {k: m.layer for k, m in MUTATIONS[mapping.name]().items()}
    return {k: "codegen" for k in mapping.extras.get("mutations", {})}


def get(mapping, name: str | None) -> Mutation | None:
    """The registered Mutation ``name`` of ``mapping`` (None for None, and for mappings whose
    setups take the name themselves); MappingError naming the known bugs for an unknown one."""
    if name is None:
        return None
    known = names(mapping)
    if name not in known:
        raise MappingError(f"{mapping.name}: unknown mutation {name!r}; known: {sorted(known)}")
    return MUTATIONS[mapping.name]()[name] if mapping.name in MUTATIONS else None


def proof_setup(mapping, shape: dict, *, mutation: str | None = None, **kw):
    """``mapping``'s BMC proof setup at ``shape``, with seeded bug ``mutation`` applied (by
    :func:`applied` for registered mutations, else by the setup's own ``mutation`` argument)."""
    m = get(mapping, mutation)
    if mutation is not None and m is None:
        return mapping.extras["proof"](shape, mutation=mutation, **kw)
    with applied(m):
        return mapping.extras["proof"](shape, **kw)


def check(mapping, shape, mutation: str | None, method: str = "bmc", **kw):
    """Run ``method`` ('bmc' or 'chc') on ``mapping`` at ``shape`` (None: all sizes, CHC only)
    with seeded bug ``mutation`` applied for the whole check, replay included. Returns the
    verdict; keyword arguments go to the checker."""
    from verify.bmc import check_bmc
    from verify.chc import check_chc
    if method not in ("bmc", "chc"):
        raise MappingError(f"unknown method {method!r}; use 'bmc' or 'chc'")
    m = get(mapping, mutation)
    with applied(m):
        if method == "chc":
            return check_chc(mapping, shape, **kw)
        if mutation is not None and m is None:
            return check_bmc(mapping.extras["proof"](shape, mutation=mutation), **kw)
        return check_bmc(mapping.extras["proof"](shape), **kw)
