"""flexasr.linear: a linear layer y[T, O] = x[T, I] @ w[O, I].T + b[O] on FlexASR's PEs.

IR pattern (paper Figure 3 (a)): ``(nn.bias_add (nn.dense ?x ?w) ?b)``.

Compiler-IR ILA fragment (:func:`ir_fragment`): x, w, b row-major in the IR tensor memory, then
``nn.dense`` into a temporary and ``nn.bias_add`` into the output.

Accelerator fragment (:func:`acc_commands`, the 3LA ``linear_layer`` driver sequence): the PE
weight-buffer images (w as 16x16 tiles, output vectors split over the 4 PEs, then the bias bytes),
x stored to the GB large buffer (memory index 0) in the tiled layout, the PE RNN-layer sizing,
memory-manager and activation configurations, the GB memory manager and GB control (opcode
linear layer), the start, and the read-back of y from memory index 1. All tensors are
AdaptivFloat-quantised on the host with per-tensor exponent biases; the output bias comes from a
host-side float32 evaluation (as the 3LA driver).

Refinement map (:func:`refinement`): IR x[t, i] <-> GB byte ``tiled(T, I)[t, i]`` of memory index 0;
IR y[t, o] <-> GB byte ``tiled(T, O)[t, o]`` of memory index 1 (the weights sit in the PE
weight buffers, tiled as in ``programs.linear_pe_images``).

Proof (``--method bmc``): :mod:`mappings.flexasr.linear_proof` proves the IR fragment, computed in
FlexASR's PE numerics with the multiply, RunBias and output conversion uninterpreted, equal to the
accelerator fragment for all data (per shape, per exponent-bias registers).

Proof (``--method chc``): :mod:`mappings.flexasr.linear_chc`, an induction over the T timesteps of
the GB control loop from one symbolic timestep (``verify.induction``), so its cost is one
timestep's; the emitted stream, the declared map and the read-back as in the BMC proof, the outputs
against the declared numerics term (the dense layer in the PEs' order and rounding).

Numerics: the reference is float32 on the original inputs (paper §4.4.1), so the error is the
AdaptivFloat quantisation of x, w, b, y plus the PEs' fixed-point accumulation. Tolerance: see
:data:`TOLERANCE`.
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import reference as ref
from mappings.base import Mapping, Proof
from mappings.common import IrFragment, Layout
from mappings.flexasr import common as F

NAME = "flexasr.linear"
# Measured (verify.simval.run_sim, seed 0, 100 inputs at 16x64x64): mean 2.30 %, max 2.45 %;
# fuzzing (3 seeds x 60 examples over T 1..40, I 16..128, O 64/128, with edge values): max 2.78 %.
# Tolerance 5 %: about 1.8x the largest error seen. (Without the output-bias headroom of
# mappings.flexasr.common.out_bias, 1 input in 100 flips the sign of a saturated output: 23.8 %.)
TOLERANCE = 0.05

SIDE_CONDITIONS = (
    *F.vectors("I", what="the input size I"),
    *F.vectors("O", multiple=64, what="the output size O"),
    *F.timesteps("T"),
    F.gb_fits(("T", "I"), ("T", "O")),
    F.pe_weights_fit(lambda s: s["O"] // 4 * (s["I"] + 1), "the weight tiles and bias bytes of O/4 outputs"),
)


def ir_fragment(shape: dict) -> IrFragment:
    T, I, O = shape["T"], shape["I"], shape["O"]
    lay = Layout()
    for name, shp in (("x", (T, I)), ("w", (O, I)), ("b", (O,)), ("tmp", (T, O)), ("out", (T, O))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "w", "b")},
                      [("nn.dense", [b("x"), b("w"), b("tmp"), T, I, O]),
                       ("nn.bias_add", [b("tmp"), b("b"), b("out"), T, O, 1])],
                      lay.regions["out"])


def refinement(shape: dict) -> dict:
    T, I, O = shape["T"], shape["I"], shape["O"]
    return {"x": ("gb_core_large_buffer", F.tiled(T, I)),
            "out": ("gb_core_large_buffer", F.tiled(T, O, base=F.tiled_bytes(T, I // 16)))}


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    T, I, O = shape["T"], shape["I"], shape["O"]
    return {"x": F.normal(rng, (T, I)), "w": F.normal(rng, (O, I), 1 / 8), "b": F.normal(rng, (O,), 1 / 8)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    T, I, O = shape["T"], shape["I"], shape["O"]
    base = random_inputs(shape, rng)
    z = np.zeros
    return [{"x": z((T, I), np.float32), "w": z((O, I), np.float32), "b": z(O, np.float32)},
            {"x": np.full((T, I), -0.0, np.float32), "w": base["w"], "b": np.full(O, -0.0, np.float32)},
            {"x": F.saturating((T, I), rng, bias_reg=int(rng.integers(0, 4))), "w": base["w"], "b": base["b"]}]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    return ref.linear_layer(inputs["x"], inputs["w"], inputs["b"])


def program(shape: dict, inputs: dict):
    """The code generator: the MMIO stream the driver emits for these inputs (``linear_parts``: the
    PE weight images, the tiled store of x, the configuration, the start, the read-back of y) and
    its read-back, the output exponent-bias register chosen with headroom (``common.out_bias``)."""
    from ila.models.flexasr.driver import linear_parts
    return linear_parts(inputs["x"], inputs["w"], inputs["b"], out_bias=F.out_bias(reference(shape, inputs))).program()


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda t, i, o: {"T": t, "I": 16 * i, "O": 64 * o},
                     st.integers(1, 40), st.integers(1, 8), st.integers(1, 2))


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(nn.bias_add (nn.dense ?x ?w) ?b (axis A))``: x[..., I] (leading dimensions flattened to T
    timesteps), w[O, I], b[O] added along the last axis (A the last axis; any other axis: None)."""
    from mappings.common import prod
    x, w, b = shapes["?x"], shapes["?w"], shapes["?b"]
    if int(attrs.get("axis", 1)) % len(out_shape) != len(out_shape) - 1 or tuple(b) != (w[0],):
        return None
    return {"T": prod(x[:-1]), "I": x[-1], "O": w[0]}


def bind_operands(shape: dict, operands: list) -> dict:
    x, w, b = operands
    return {"x": np.asarray(x).reshape(shape["T"], shape["I"]), "w": w, "b": b}


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(nn.bias_add (nn.dense ?x ?w) ?b (axis A))",
    description="linear layer on the FlexASR PEs (AdaptivFloat weights, tiled global buffer)",
    shape_dims=("T", "I", "O"),
    default_shape={"T": 16, "I": 64, "O": 64},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=(F.AF_RANGE,),
    tolerance=TOLERANCE,
    mutations="verify.mutations.flexasr_linear:mutations",
    proof=Proof("mappings.flexasr.linear_proof:proof_setup", {"T": 1, "I": 16, "O": 64},
                chc_spec="mappings.flexasr.linear_chc:chc_spec"),
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
