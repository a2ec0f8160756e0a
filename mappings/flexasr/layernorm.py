"""flexasr.layernorm: LayerNorm of every timestep of x[T, H] over H, on FlexASR's GB LayerNorm unit.

IR pattern: ``(nn.layer_norm ?x ?gamma ?beta (axis -1) (epsilon 1e-5))``.

Compiler-IR ILA fragment (:func:`ir_fragment`): x, gamma, beta row-major, ``nn.layer_norm``
(eps = 1e-5 as a float32 bit pattern) into the output.

Accelerator fragment (``driver.run_layernorm``, 3LA ``layernorm``): x to the GB large buffer
(memory index 0, tiled), gamma and beta to the GB small buffer, the memory managers and the
LayerNorm configuration (biases of x, gamma, beta), the start, the read-back of the result written
in place over x.

Refinement map: IR x[t, h] <-> GB byte ``tiled(T, H)[t, h]``; IR out[t, h] <-> the same byte (in
place); gamma[h] / beta[h] <-> GB small-buffer bytes h and 16 * (H/16) + h.

Numerics: float32 reference on the original inputs; the output shares x's exponent bias (chosen by
the driver from max|x| and max|reference output| together).
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import reference as ref
from ila.models.flexasr import constants as K
from ila.numerics import adaptivfloat as af
from mappings.base import DataCondition, SideCondition, Mapping, Proof
from mappings.common import IrFragment, Layout
from mappings.flexasr import common as F

NAME = "flexasr.layernorm"
EPS = np.float32(1e-5)
# Registered with a data precondition (DATA_CONDITION, checked: DATA_CONDITIONS): with N(0, 1) inputs the model's LayerNorm
# unit wraps its 20-bit per-vector sum of squares (about 1 vector in 100), which no honest tolerance
# separates from a broken mapping. Within the precondition, and with the output bias chosen with
# headroom (the hardware saturates a negative overflow to +max), 100 seeded inputs at 16x64 measure
# 2.37 % mean, 3.0 % max: the 8-bit AdaptivFloat output rounding. Tolerance: 2x that.
TOLERANCE = 0.06
X_SCALE = 0.5          # data precondition (see DATA_CONDITION)
SATURATING_BIAS = 1    # saturating edge case within the data precondition: |x| = 0.484
DATA_CONDITION = ("the LayerNorm unit sums the squares of each 16-value vector in a 20-bit/14-fraction "
                  "register (range ±32), so every vector needs sum(x^2) < 32 (e.g. |x| < 1.41); random data "
                  "is N(0, 0.5^2), for which a wrap is practically impossible")

SIDE_CONDITIONS = (
    *F.vectors("H", what="the hidden size H"),
    *F.timesteps("T"),
    F.gb_fits(("T", "H")),
    SideCondition("gamma and beta fit the GB small buffer", lambda s: 2 * s["H"] <= K.GB_SMALL_SIZE,
                  f"gamma and beta (H bytes each) must fit the {K.GB_SMALL_SIZE}-byte GB small buffer"),
)


def ir_fragment(shape: dict) -> IrFragment:
    T, H = shape["T"], shape["H"]
    lay = Layout()
    for name, shp in (("x", (T, H)), ("gamma", (H,)), ("beta", (H,)), ("out", (T, H))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "gamma", "beta")},
                      [("nn.layer_norm", [b("x"), b("gamma"), b("beta"), b("out"), T, H, int(EPS.view(np.uint32))])],
                      lay.regions["out"])


def refinement(shape: dict) -> dict:
    T, H = shape["T"], shape["H"]
    off = F.tiled(T, H)
    return {"x": ("gb_core_large_buffer", off), "gamma": ("gb_core_small_buffer", np.arange(H)),
            "beta": ("gb_core_small_buffer", H + np.arange(H)), "out": ("gb_core_large_buffer", off)}


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    T, H = shape["T"], shape["H"]
    return {"x": F.normal(rng, (T, H), X_SCALE), "gamma": (1 + F.normal(rng, (H,), 0.1)).astype(np.float32),
            "beta": F.normal(rng, (H,), 0.1)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    T, H = shape["T"], shape["H"]
    base = random_inputs(shape, rng)
    return [dict(base, x=np.zeros((T, H), np.float32), beta=np.zeros(H, np.float32)),
            dict(base, x=np.full((T, H), -0.0, np.float32), beta=np.full(H, -0.0, np.float32)),
            dict(base, x=F.saturating((T, H), rng, bias_reg=SATURATING_BIAS))]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    return ref.layernorm(inputs["x"], inputs["gamma"], inputs["beta"], eps=float(EPS))


def _x_bias(shape: dict, inputs: dict) -> int:
    """Bias register of x (shared by the in-place output): from max|x| and max|reference| with headroom."""
    x = np.asarray(inputs["x"], np.float32)
    return F.out_bias(np.concatenate([x.ravel(), reference(shape, inputs).ravel()]))


def vector_sum_squares(shape: dict, inputs: dict) -> float:
    """The largest per-vector sum of squares of the quantised x, max over (t, v) of
    sum_j x_q[t, 16 v + j]^2, exact in float64 (the unit's truncated squares sum to at most this)."""
    x = np.asarray(inputs["x"], np.float32)
    xq = af.dequantize(*af.quantize(x, _x_bias(shape, inputs)), np.float64)
    return float((xq.reshape(x.shape[0], -1, 16) ** 2).sum(axis=-1).max())


DATA_CONDITIONS = (
    DataCondition("vector sum of squares fits the 20-bit register", vector_sum_squares, 32.0,
                  "max over the 16-value vectors of sum(x^2), x as quantised: " + DATA_CONDITION),
)


def program(shape: dict, inputs: dict):
    """The code generator (``driver.layernorm_parts``): the emitted stream and its read-back."""
    from ila.models.flexasr.driver import layernorm_parts
    return layernorm_parts(inputs["x"], inputs["gamma"], inputs["beta"], bias_reg=_x_bias(shape, inputs)).program()


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda t, v: {"T": t, "H": 16 * v}, st.integers(1, 20), st.integers(1, 4))


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict:
    """At ``(nn.layer_norm ?x ?gamma ?beta ...)``: x[..., H], normalised over its last axis
    (leading dimensions flattened to T)."""
    from mappings.common import prod
    x = shapes["?x"]
    return {"T": prod(x[:-1]), "H": x[-1]}


def bind_operands(shape: dict, operands: list) -> dict:
    x, gamma, beta = operands
    return {"x": np.asarray(x).reshape(shape["T"], shape["H"]), "gamma": gamma, "beta": beta}


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(nn.layer_norm ?x ?gamma ?beta (axis -1) (epsilon 1e-5))",
    description="per-timestep layer normalisation on the FlexASR GB LayerNorm unit (in place); data: " + DATA_CONDITION,
    shape_dims=("T", "H"),
    default_shape={"T": 16, "H": 64},
    side_conditions=SIDE_CONDITIONS,
    tolerance=TOLERANCE,
    data_conditions=DATA_CONDITIONS + (F.AF_RANGE,),
    # proof against the declared numerics term (the IR operator in the unit's order and rounding)
    mutations="verify.mutations.flexasr_layernorm:mutations",
    proof=Proof("mappings.flexasr.layernorm_proof:proof_setup", {"T": 2, "H": 32}),
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
