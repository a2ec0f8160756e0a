"""flexasr.lstm: one LSTM layer (zero initial state) on FlexASR's PEs.

IR pattern: ``(lstm_layer ?x ?w_ih ?w_hh ?b)`` — the IR operator ``lstm_layer`` (and the
compiler-IR ILA's LSTM-layer instruction). The front-ends' folded ONNX ``nn.lstm`` becomes it by
the certified rewrite ``lstm_fold`` (``compile.rewrites.rules``); in the paper it stands for an
unrolled Relay LSTM (per timestep: two ``nn.dense``, ``add``, ``split`` into the gates i, f, g, o,
``sigmoid``/``tanh``, ``multiply``/``add`` for c and h; the paper's 35-step LSTM is 566 Relay
operators mapped to one FlexASR LSTM invocation). Operand adapters: :func:`match_shape`,
:func:`bind_operands`.
PyTorch gate order (i, f, g, o) in the 4H weight rows; b = b_ih + b_hh; output: the hidden-state
sequence h[T, H].

Compiler-IR ILA fragment (:func:`ir_fragment`): x, w_ih, w_hh, b row-major, then ``lstm_layer``
(with a 5H-element scratch region for the gate pre-activations and the cell state).

Accelerator fragment: the 3LA ``lstm_layer`` driver sequence (PE weight images with manager 1
input->hidden tiles, bias bytes, manager 2 hidden->hidden tiles, gate slots (i, g, f, o) per
hidden vector; x to the GB large buffer, tiled; PE sizing/manager/activation micro-programs, GB
control opcode LSTM, start, read-back of h).

Refinement map: IR x[t, i] <-> GB byte ``tiled(T, I)[t, i]`` (memory index 0); IR h[t, j] <-> GB
byte ``tiled(T, H)[t, j]`` of memory index 1.

Numerics: float32 reference on the original inputs; errors come from AdaptivFloat quantisation of
inputs, weights and every h_t fed back, and the PE's fixed-point activation unit.
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import reference as ref
from mappings.base import Mapping, Proof
from mappings.common import IrFragment, Layout
from mappings.flexasr import common as F

NAME = "flexasr.lstm"
# Measured (verify.simval.run_sim, seed 0, 100 inputs at 8x64x64): mean 2.74 %, max 3.28 %;
# fuzzing (3 seeds x 60 examples over T 1..12, I 16..64, H 64, with edge values): max 3.94 %.
# Tolerance 8 %: about 2x the largest error seen.
TOLERANCE = 0.08

SIDE_CONDITIONS = (
    *F.vectors("I", what="the input size I"),
    *F.vectors("H", multiple=64, what="the hidden size H"),
    *F.timesteps("T"),
    F.gb_fits(("T", "I"), ("T", "H")),
    F.pe_weights_fit(lambda s: s["H"] * (s["I"] + s["H"] + 1),
                     "the input and hidden weight tiles and bias bytes of H/4 hidden units (4 gates each)"),
)


def ir_fragment(shape: dict) -> IrFragment:
    T, I, H = shape["T"], shape["I"], shape["H"]
    lay = Layout()
    for name, shp in (("x", (T, I)), ("w_ih", (4 * H, I)), ("w_hh", (4 * H, H)), ("b", (4 * H,)),
                      ("out", (T, H)), ("scratch", (5 * H,))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "w_ih", "w_hh", "b")},
                      [("lstm_layer", [b("x"), b("w_ih"), b("w_hh"), b("b"), b("out"), b("scratch"), T,
                                       (I << 16) | H])],
                      lay.regions["out"])


def refinement(shape: dict) -> dict:
    T, I, H = shape["T"], shape["I"], shape["H"]
    return {"x": ("gb_core_large_buffer", F.tiled(T, I)),
            "out": ("gb_core_large_buffer", F.tiled(T, H, base=F.tiled_bytes(T, I // 16)))}


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    T, I, H = shape["T"], shape["I"], shape["H"]
    return {"x": F.normal(rng, (T, I)), "w_ih": F.normal(rng, (4 * H, I), 1 / 8),
            "w_hh": F.normal(rng, (4 * H, H), 1 / 8), "b": F.normal(rng, (4 * H,), 1 / 8)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    T, I, H = shape["T"], shape["I"], shape["H"]
    base = random_inputs(shape, rng)
    zeros = {k: np.zeros_like(v) for k, v in base.items()}
    negz = dict(base, x=np.full((T, I), -0.0, np.float32), b=np.full(4 * H, -0.0, np.float32))
    # with all-zero x and b the reference output is exactly 0; with negative zeros h stays 0 too
    sat = dict(base, x=F.saturating((T, I), rng, bias_reg=int(rng.integers(0, 3))))
    return [zeros, negz, sat]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    return ref.lstm_layer(inputs["x"], inputs["w_ih"], inputs["w_hh"], inputs["b"])


def program(shape: dict, inputs: dict):
    """The code generator (``driver.lstm_parts``): the emitted stream and its read-back, the output
    exponent-bias register chosen with headroom from the float32 host evaluation."""
    from ila.models.flexasr.driver import lstm_parts
    return lstm_parts(inputs["x"], inputs["w_ih"], inputs["w_hh"], inputs["b"],
                      out_bias=F.out_bias(reference(shape, inputs))).program()


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda t, i: {"T": t, "I": 16 * i, "H": 64}, st.integers(1, 12), st.integers(1, 4))


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(lstm_layer ?x ?w_ih ?w_hh ?b)`` (the IR operator, e.g. from the ``lstm_fold`` rewrite of
    the front-ends' ``nn.lstm``): x[T, I], w_ih[4H, I], w_hh[4H, H], b[4H]; None for other shapes."""
    x, w_ih, w_hh, b = (tuple(shapes[k]) for k in ("?x", "?w_ih", "?w_hh", "?b"))
    if len(x) != 2 or len(w_hh) != 2:
        return None
    T, I = x
    H = w_hh[1]
    if w_hh[0] != 4 * H or w_ih != (4 * H, I) or b != (4 * H,):
        return None
    return {"T": T, "I": I, "H": H}


def bind_operands(shape: dict, operands: list) -> dict:
    x, w_ih, w_hh, b = operands
    T, I, H = shape["T"], shape["I"], shape["H"]
    return {"x": np.asarray(x).reshape(T, I), "w_ih": np.asarray(w_ih).reshape(4 * H, I),
            "w_hh": np.asarray(w_hh).reshape(4 * H, H), "b": np.asarray(b).reshape(4 * H)}


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(lstm_layer ?x ?w_ih ?w_hh ?b)",
    description="one LSTM layer on the FlexASR PEs (gates on the PE activation units)",
    shape_dims=("T", "I", "H"),
    default_shape={"T": 8, "I": 64, "H": 64},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=(F.AF_RANGE,),
    tolerance=TOLERANCE,
    random_inputs=random_inputs,
    reference=reference,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    ir_fragment=ir_fragment,
    refinement=refinement,
    match_shape=match_shape,
    bind_operands=bind_operands,
    # proof against the declared numerics term (the LSTM in the PEs' order and rounding)
    mutations="verify.mutations.flexasr_lstm:mutations",
    proof=Proof("mappings.flexasr.lstm_proof:proof_setup", {"T": 2, "I": 16, "H": 64}),
    program=program,
)
