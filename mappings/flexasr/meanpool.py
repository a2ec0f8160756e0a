"""flexasr.meanpool: temporal mean pooling, window (2, 1), stride (2, 1), on FlexASR's LayerReduce.

IR pattern: ``(nn.avg_pool2d ?x (pool_size 2 1) (strides 2 1))`` over x[R, C] (R timesteps, C
hidden values); output (R/2) x C.

Compiler-IR ILA fragment (:func:`ir_fragment`): x row-major at 0, ``nn.avg_pool2d`` into R*C.

Accelerator fragment (3LA driver ``meanp``): x stored to the GB large buffer in the tiled layout,
the memory-manager and LayerReduce configurations (mode 1 = mean, num_timestep = R, num_vector =
C/16), the start, and the read-back of the R/2 results written in place over the first R/2
timesteps.

Refinement map: IR x[t, c] <-> GB byte ``tiled(R, C)[t, c]``; IR out[t, c] <-> GB byte
``tiled(R, C)[t, c]`` (in place), as for flexasr.maxpool.

Numerics: the reference is float32 on the original inputs; the AdaptivFloat quantisation of x and
of the mean (LayerReduce adds in its ac_float datapath and rounds back to 8 bits) make it inexact.
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import reference as ref
from mappings.base import Proof, Mapping
from mappings.common import IrFragment
from mappings.flexasr import common as F
from mappings.flexasr.layer_reduce import SIDE_CONDITIONS as POOL_CONDITIONS

NAME = "flexasr.meanpool"
# Measured (verify.simval.run_sim, seed 0, 100 inputs at 16x64): mean 1.98 %, max 2.16 %; fuzzing
# (3 seeds x 60 examples over R 2..40, C 16..64, with edge values): max 2.32 %. Tolerance 4 %.
TOLERANCE = 0.04


def ir_fragment(shape: dict) -> IrFragment:
    R, C = shape["R"], shape["C"]
    return IrFragment({"x": (0, (R, C))},
                      [("nn.avg_pool2d", [0, R * C, 1, R, C, (2 << 16) | 1, (2 << 16) | 1])],
                      (R * C, (R // 2, C)))


def refinement(shape: dict) -> dict:
    """flexasr.maxpool's declared refinement map (the same LayerReduce placement)."""
    return _pool().refinement(shape)


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    return {"x": F.normal(rng, (shape["R"], shape["C"]))}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    R, C = shape["R"], shape["C"]
    return [{"x": np.zeros((R, C), np.float32)}, {"x": np.full((R, C), -0.0, np.float32)},
            {"x": F.saturating((R, C), rng)}]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    return ref.meanpool(inputs["x"])


def program(shape: dict, inputs: dict):
    """The code generator (``driver.pool_parts``, mode mean): the emitted stream and its read-back."""
    from ila.models.flexasr.driver import pool_parts
    return pool_parts(inputs["x"], 1, "mean").program()


def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """flexasr.maxpool's: x[1, 1, R, C], no padding."""
    return _pool().match_shape(attrs, shapes, out_shape)


def bind_operands(shape: dict, operands: list) -> dict:
    return _pool().bind_operands(shape, operands)


def _pool():
    from mappings.flexasr import layer_reduce
    return layer_reduce


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda r, v: {"R": 2 * r, "C": 16 * v}, st.integers(1, 20), st.integers(1, 4))


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(nn.avg_pool2d ?x (pool_size 2 1) (strides 2 1))",
    description="temporal mean pooling on FlexASR LayerReduce (in place, tiled global buffer)",
    shape_dims=("R", "C"),
    default_shape={"R": 16, "C": 64},
    side_conditions=POOL_CONDITIONS,
    data_conditions=(F.AF_RANGE,),
    tolerance=TOLERANCE,
    # formal proofs share flexasr.maxpool's fragments and the LayerReduce family's CHC artefacts;
    # the CHC invariant is always inferred (this mapping states none)
    mutations="verify.mutations.layer_reduce:mean_mutations",
    proof=Proof("mappings.flexasr.maxpool_proof:mean_proof_setup",
                {"R": 16, "C": 64},
                chc_spec="mappings.flexasr.layer_reduce_chc:mean_chc_spec",
                cex_shapes=({"R": 4, "C": 32}, {"R": 32, "C": 32})),
    random_inputs=random_inputs,
    reference=reference,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    ir_fragment=ir_fragment,
    refinement=refinement,
    match_shape=match_shape,
    bind_operands=bind_operands,
    program=program,
)
