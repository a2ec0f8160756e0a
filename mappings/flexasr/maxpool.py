"""flexasr.maxpool: temporal max pooling, window (2, 1), stride (2, 1), on FlexASR's LayerReduce.

IR pattern (Relay, as the compiler matches it): ``(nn.max_pool2d ?x (pool_size 2 1) (strides 2 1))``
over an R x C matrix x (R timesteps, C hidden values); output (R/2) x C.

Accelerator fragment (reference §2.1, 3LA driver ``maxp``): the MMIO stores placing x into the
global buffer in the tiled layout (byte offset 16*((t mod 16) + floor(t/16)*num_v*16) + 256*v + i
for element (t, 16*v + i), num_v = C/16), the memory-manager and LayerReduce configurations
(mode 0 = max, num_timestep = R, num_vector = num_v), the start, and the child ILA's loop that
writes each result in place over timestep t/2.

Refinement map: IR input element (t, c) at IR tensor address t*C + c  <->  GB byte offset
tiled(t, c); IR output (t, c) at R*C + t*C + c  <->  GB byte offset tiled(t, c) (in place).

The family's shared code (declared map, side conditions, proof fragments, operand adapters) is in
:mod:`mappings.flexasr.layer_reduce`.

Numerics in proofs: the IR max is an uninterpreted ``ir_max`` over 8-bit AdaptivFloat codes,
linked to FlexASR's ``GBAdpfloat_max`` by the paper's axiom ir_max(a, b) = GBAdpfloat_max(a, b);
with ``--numerics exact`` both are replaced by bit-precise definitions (the IR one compares the
decoded values, written independently of FlexASR's).
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, Proof
from mappings.flexasr import common as F
from mappings.flexasr.layer_reduce import POOL_OPS, SIDE_CONDITIONS, bind_operands, match_shape, refinement

NAME = "flexasr.maxpool"


def ir_fragment(shape: dict):
    """The compiler-IR ILA fragment: x row-major at 0, ``nn.max_pool2d`` (window and stride (2, 1))
    into R*C (:func:`ir_commands` with k = 1, as data)."""
    from mappings.common import IrFragment
    R, C = shape["R"], shape["C"]
    return IrFragment({"x": (0, (R, C))},
                      [(POOL_OPS["max"], [0, R * C, 1, R, C, (2 << 16) | 1, (2 << 16) | 1])], (R * C, (R // 2, C)))


def program(shape: dict, inputs: dict):
    """The code generator (``driver.pool_parts``, mode max): input ``x`` [R, C] quantised to
    AdaptivFloat codes (bias register from its range), the stream :func:`emitted_stream` builds
    through the element path (``canonical``), and the read-back."""
    from ila.models.flexasr.driver import pool_parts
    return pool_parts(inputs["x"], 1, "max").program()


# ----------------------------------------------------------------------------- simulation
def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    """Random AdaptivFloat-representable matrices (random codes, random exponent bias) so that the
    result is exact: max of representable values is representable."""
    from ila.numerics import adaptivfloat as af
    bias = int(rng.integers(0, 8))
    codes = rng.integers(0, 256, (shape["R"], shape["C"]))
    return {"x": af.dequantize(codes, bias)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    from ila.numerics import adaptivfloat as af
    R, C = shape["R"], shape["C"]
    zeros = np.zeros((R, C), np.float32)
    negzero = np.full((R, C), -0.0, np.float32)
    big = af.dequantize(np.where(rng.integers(0, 2, (R, C)) == 1, 0x7F, 0xFF), 7)   # saturating magnitudes
    return [{"x": zeros}, {"x": negzero}, {"x": big}]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    from ila.models.flexasr import reference as ref
    return ref.maxpool(inputs["x"])


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda r, v: {"R": 2 * r, "C": 16 * v}, st.integers(1, 20), st.integers(1, 4))


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(nn.max_pool2d ?x (pool_size 2 1) (strides 2 1))",
    description="temporal max pooling on FlexASR LayerReduce (in place, tiled global buffer)",
    shape_dims=("R", "C"),
    default_shape={"R": 16, "C": 64},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=(F.AF_RANGE,),
    tolerance=0.0,
    random_inputs=random_inputs,
    reference=reference,
    program=program,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    refinement=refinement,
    ir_fragment=ir_fragment,
    match_shape=match_shape,
    bind_operands=bind_operands,
    mutations="verify.mutations.layer_reduce:max_mutations",
    proof=Proof("mappings.flexasr.maxpool_proof:proof_setup", {"R": 16, "C": 64}, chc_spec="mappings.flexasr.layer_reduce_chc:chc_spec",
                cex_shapes=({"R": 4, "C": 32}, {"R": 32, "C": 32})),   # where a symbolic refutation looks for a trace
)

