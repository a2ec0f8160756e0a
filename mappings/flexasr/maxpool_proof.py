"""BMC proof setups of the LayerReduce family (flexasr.maxpool, flexasr.meanpool and their chains)
with the declared refinement map for ``verify.bmc`` to check (issue 26, item 5).

The fragments are :func:`mappings.flexasr.layer_reduce.proof_setup`'s (the compiler-IR ILA fragment and
the exact MMIO stream the code generator emits for symbolic codes, with the driver's read-back).
To them this module adds the mapping's *declared* refinement map (``Mapping.refinement``, built
from :func:`mappings.flexasr.common.gb_address`): x[t, c] (8-bit AdaptivFloat codes) at GB
large-buffer byte ``tiled(R, C)[t, c]`` when the LayerReduce loop starts, out[t, c] at the same
byte (in place, t < R / 2^L) when the stream ends. ``verify.bmc`` checks both for all data besides
the end-to-end miter, so a BMC verdict of these setups covers ``model-loops`` (the loops against
the declared map), not only ``loops-end-to-end``.
"""
from __future__ import annotations

from mappings.proof_ext import Declared, ProofSetupExt, extend


def declared_pool(name: str, shape: dict, data: list) -> Declared:
    """The declared map of pool mapping ``name`` at ``shape`` ({"R", "C"[, "L"]}) over the setup's
    data symbols (x row-major); outputs index the setup's output pairs (row-major out)."""
    from mappings.registry import get
    ref = get(name).refinement(shape)
    mem_x, off_x = ref["x"]
    mem_o, off_o = ref["out"]
    C = shape["C"]
    inputs = tuple((mem_x, int(off_x[t, c]), data[t * C + c]) for t in range(off_x.shape[0]) for c in range(C))
    outputs = tuple((t * C + c, mem_o, int(off_o[t, c])) for t in range(off_o.shape[0]) for c in range(C))
    return Declared(inputs, outputs, tensors=("x", "out"))


def proof_setup(shape: dict, *, numerics: str = "uf", op: str = "max") -> ProofSetupExt:
    """flexasr.maxpool (``op='max'``) / flexasr.meanpool (``'mean'``) at ``shape`` {"R", "C"}, or
    their chains with ``shape["L"]``: :func:`mappings.flexasr.layer_reduce.proof_setup` plus the
    declared map (module docstring)."""
    from mappings.flexasr import layer_reduce as M
    ps = M.proof_setup(shape, numerics=numerics, op=op)
    chain = shape.get("L", 1) > 1
    name = f"flexasr.{op}pool" + ("_chain" if chain else "")
    return extend(ps, declared=declared_pool(name, shape, ps.data))


def mean_proof_setup(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    return proof_setup(shape, numerics=numerics, op="mean")


def max_chain_proof_setup(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    return proof_setup(shape, numerics=numerics, op="max")


def mean_chain_proof_setup(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    return proof_setup(shape, numerics=numerics, op="mean")
