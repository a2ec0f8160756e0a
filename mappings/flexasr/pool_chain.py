"""Chains of FlexASR temporal pools with the data left in the global buffer (paper Figure 7 (f)):
``flexasr.maxpool_chain`` and ``flexasr.meanpool_chain``, the fused runs of L consecutive
``flexasr.maxpool`` / ``flexasr.meanpool`` calls.

The compiler's data-movement cost (``compile.chains``) cancels the read-back of one pool and the
store of the next. That fused program is not the program of L single calls, so it is a mapping of
its own, certified like any other before the compiler may fuse (``Mapping.fuses``); the compiler
never matches its pattern (the pattern below is the L = 2 instance, for documentation).

Shape: R timesteps, C hidden values, L pools; R divisible by 2^L, L >= 2, and the single pool's
side conditions at R x C. IR semantics (:func:`ir_fragment`): L (2, 1)/(2, 1) pools in a row
(``nn.max_pool2d`` or ``nn.avg_pool2d``), x[R, C] row-major at 0, pool j reading the (R/2^j) x C
result of pool j - 1 and writing right after it; result (R/2^L) x C.

Accelerator fragment (``ila.models.flexasr.driver.pool_chain_program``): the tiled store of x into
the GB large buffer (as flexasr.maxpool), L LayerReduce configurations and starts in place with
num_timestep R, R/2, ..., R/2^(L-1) (the tiled offsets of a timestep do not depend on the number
of timesteps, so each pool's result is the next pool's input where it lies), one read-back of the
R/2^L result timesteps.

Refinement map: IR x[t, c] <-> GB byte ``tiled(R, C)[t, c]``; IR out[t, c] <-> the same byte
(in place, t < R/2^L).

Numerics: max is exact (a max of AdaptivFloat values is one of them; tolerance 0, proofs over
the uninterpreted max with flexasr.maxpool's link axiom or bit-precise); mean re-rounds to
AdaptivFloat after every pool, so its error grows with L (measured tolerance by L, :data:`MEAN_TOLERANCE`;
proofs with flexasr.meanpool's abstract link axiom). Proof shape 32x64x2 (BMC); no all-sizes
proof. Seeded bugs: ``verify/mutations/layer_reduce.py`` (chain mutations).
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, Proof, SideCondition
from mappings.common import IrFragment
from mappings.flexasr import common as F
from mappings.flexasr import layer_reduce as P

# Frobenius relative error of flexasr.meanpool_chain, measured (seed 0, 40 normal inputs plus the
# edge inputs, R = 4 * 2^L, C 16 and 64), mean / max by L: 2: 2.7 / 3.2 %, 3: 3.7 / 4.3 %,
# 4: 5.1 / 6.2 %, 5: 7.4 / 9.2 %, 6: 11.5 / 17.5 %; with one or two result timesteps (R = 2^L
# and 2^(L+1), 240 inputs per L) the maximum is 4.2, 5.6, 8.0, 10.6, 20.0 %, and fuzzing
# (``--method fuzz --seed 3``) found 7.8 % at 8x16x3. Each pool re-rounds the running mean to
# AdaptivFloat, so the error compounds. Tolerance: about twice the largest measured error, by L;
# chains longer than 6 mean pools are not offered (side condition).
MEAN_TOLERANCE = {2: 0.08, 3: 0.12, 4: 0.16, 5: 0.21, 6: 0.40}

SIDE_CONDITIONS = (
    SideCondition("L >= 2", lambda s: s["L"] >= 2, "a chain has at least two pools (L = 1 is the single pool)"),
    SideCondition("R divisible by 2^L", lambda s: s["R"] >= 1 << s["L"] and s["R"] % (1 << s["L"]) == 0,
                  "the number of timesteps R must be divisible by 2^L (every pool halves it)"),
) + P.SIDE_CONDITIONS

MEAN_LENGTH = SideCondition("L <= 6 for means", lambda s: s["L"] <= max(MEAN_TOLERANCE),
                            "mean chains of at most 6 pools (the measured tolerance table ends there)")


def _pool(op: str):
    from mappings.flexasr import maxpool, meanpool
    return maxpool if op == "max" else meanpool


def chain_mapping(op: str) -> Mapping:
    """The chain mapping of ``op`` ('max' or 'mean'); see the module docstring."""
    single = _pool(op)
    ir_op = P.POOL_OPS[op]

    def ir_fragment(shape: dict) -> IrFragment:
        R, C, L = shape["R"], shape["C"], shape["L"]
        ops, src = [], 0
        for j in range(L):
            ops.append((ir_op, [src, src + (R >> j) * C, 1, R >> j, C, (2 << 16) | 1, (2 << 16) | 1]))
            src += (R >> j) * C
        return IrFragment({"x": (0, (R, C))}, ops, (P.chain_output(R, C, L), (R >> L, C)))

    def refinement(shape: dict) -> dict:
        off = P.tiled(shape["R"], shape["C"])
        return {"x": ("gb_core_large_buffer", off), "out": ("gb_core_large_buffer", off[:shape["R"] >> shape["L"]])}

    def reference(shape: dict, inputs: dict) -> np.ndarray:
        out = np.asarray(inputs["x"], np.float32)
        for _ in range(shape["L"]):
            out = single.reference({"R": out.shape[0], "C": out.shape[1]}, {"x": out})
        return out

    def program(shape: dict, inputs: dict):
        """The code generator (``driver.pool_parts`` with L pools): one store, the L pools, one load."""
        from ila.models.flexasr.driver import pool_parts
        return pool_parts(inputs["x"], shape["L"], op).program()

    def bind_operands(shape: dict, operands: list) -> dict:
        """The chain's one operand (the first pool's input x[1, 1, R, C]) as the [R, C] matrix."""
        return {"x": np.asarray(operands[0]).reshape(shape["R"], shape["C"])}

    def shape_strategy():
        from hypothesis import strategies as st
        return st.builds(lambda r, v, L: {"R": r << L, "C": 16 * v, "L": L},
                         st.integers(1, 5), st.integers(1, 3), st.integers(2, 3))

    def bmc_setup(shape: dict, numerics: str = "uf"):
        return P.proof_setup(shape, numerics=numerics, op=op)

    return Mapping(
        name=f"flexasr.{op}pool_chain",
        ir_pattern=f"({ir_op} ({ir_op} ?x (pool_size 2 1) (strides 2 1)) (pool_size 2 1) (strides 2 1))",
        description=f"L temporal {op} pools in one FlexASR program, data kept in the global buffer "
                    "(Figure 7 (f): one store, L pools, one load)",
        shape_dims=("R", "C", "L"),
        default_shape={"R": 16, "C": 64, "L": 2},
        side_conditions=SIDE_CONDITIONS if op == "max" else SIDE_CONDITIONS + (MEAN_LENGTH,),
        data_conditions=(F.AF_RANGE,),
        tolerance=0.0 if op == "max" else (lambda shape: MEAN_TOLERANCE[shape["L"]]),
        random_inputs=single.random_inputs,
        reference=reference,
        program=program,
        machine="ila.models.flexasr.port:PORT",
        bind_operands=bind_operands,
        shape_strategy=shape_strategy,
        edge_inputs=single.edge_inputs,
        ir_fragment=ir_fragment,
        refinement=refinement,
        mutations=("verify.mutations.layer_reduce:max_chain_mutations" if op == "max" else
                   "verify.mutations.layer_reduce:mean_chain_mutations"),
        proof=Proof("mappings.flexasr.maxpool_proof:max_chain_proof_setup" if op == "max" else
                    "mappings.flexasr.maxpool_proof:mean_chain_proof_setup", {"R": 32, "C": 64, "L": 2}),
        fuses=f"flexasr.{op}pool",
    )
