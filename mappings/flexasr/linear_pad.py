"""flexasr.linear_pad: the front-end's linear layer y[T, O] = x[T, I] @ w[O, I].T + b[O] at any sizes
I and O, zero-padded on the host to FlexASR's vector sizes inside the mapping's program.

IR pattern: ``(nn.bias_add (nn.dense ?x ?w) ?b (axis A))`` on float32, A the last axis (the paper's
exact-matching pattern for FlexASR, ``reference/EQUALITY_SATURATION.md`` §2.6; Figure 3 (a)), as
:mod:`mappings.flexasr.linear`, whose side conditions need I a multiple of 16 and O a multiple of
64: the classifiers the front-end emits (ResNet-20's 64 -> 10, ResMLP's 384 -> 10) have neither.
Shapes: x[..., I] (leading dimensions flattened to T timesteps, row-major), w[O, I], b[O].

Code generator (:func:`program`): the host pads x to [T, Ip] and w to [Op, Ip] with zero columns and
rows, b to [Op] with zeros (Ip = I rounded up to a multiple of 16, Op = O rounded up to a multiple of
64), runs flexasr.linear's driver sequence at T x Ip x Op (``ila.models.flexasr.driver.linear_parts``:
PE weight images, the tiled store of x, configuration, start, the read-back of y), with the output
exponent-bias register chosen with flexasr.linear's headroom from the float32 host evaluation, and
its read-back keeps y[:, :O]. Zero padding changes none of the quantisation choices (each tensor's
bias register depends on max|t| only) and adds only products of zero codes (AdaptivFloat's 0 code
is the value 0, and the PE's product of a zero code is 0), so the first O outputs are those of the
unpadded layer in FlexASR's numerics.

Compiler-IR ILA fragment: :func:`mappings.flexasr.linear.ir_fragment` at T x I x O (``nn.dense``
then ``nn.bias_add``, no padding: the padding is the accelerator side's).

Proof (``--method bmc``, :mod:`mappings.flexasr.linear_pad_proof`): flexasr.linear's proof over
abstract arithmetic, with the accelerator side at the padded shape on codes placed by this
mapping's own host padding (:func:`pad_operands`) and read back through its cut (:func:`cut`),
against the unpadded IR fragment; the padding's products are ``ProductSum`` of the zero code with
the zero code, whose value (0) is an axiom evaluated from the function's own body.
``--method chc`` (:func:`mappings.flexasr.linear_chc.pad_chc_spec`): flexasr.linear's timestep
induction on the same padded stream, the padded lanes' input cells holding the pad code.

Numerics: as flexasr.linear (AdaptivFloat quantisation of x, w, b, y; fixed-point accumulation in
the PEs); float32 reference on the original inputs. Data condition: flexasr.linear's AdaptivFloat
range.
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, MappingError, Proof, SideCondition
from mappings.flexasr import common as F
from mappings.flexasr import linear as L

NAME = "flexasr.linear_pad"
# Measured (verify.simval.run_sim, seed 0): 16x40x24 (default), 100 inputs: mean 2.30 %, max 2.55 %;
# 1x64x10 (ResNet-20's classifier), 100: mean 2.31 %, max 5.64 % (seed 1, 500 inputs: max 5.21 %,
# 99th percentile 4.38 %); 1x384x10 (ResMLP's), 50: max 4.96 %. Fuzzing (run_fuzz seeds 0-2 x 60
# examples over T 1..20, I 1..100, O 1..80 with at least 8 outputs, edge inputs): max 3.07 %.
# Tolerance 8 %: 1.4x the largest error seen. Few outputs err most (no averaging of per-output
# rounding; flexasr.linear's 5 % is for O >= 64): 1x8x3, 300 inputs: 3 % above 6 %, max 17.9 %.
TOLERANCE = 0.08


def padded(shape: dict) -> dict:
    """flexasr.linear's shape at which the padded layer runs: I up to a multiple of 16, O of 64."""
    return {"T": shape["T"], "I": -(-shape["I"] // 16) * 16, "O": -(-shape["O"] // 64) * 64}


def _on_padded(c: SideCondition) -> SideCondition:
    return SideCondition(c.name, lambda s, c=c: c.check(padded(s)), c.text + " (I and O after padding)")


SIDE_CONDITIONS = (
    SideCondition("positive sizes", lambda s: min(s["T"], s["I"], s["O"]) >= 1, "T, I and O must be at least 1"),
    *(_on_padded(c) for c in L.SIDE_CONDITIONS if "multiple of" not in c.name),
)


def pad_operands(shape: dict, x, w, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x [T, I], w [O, I], b [O] (float32) zero-padded to [T, Ip], [Op, Ip], [Op] (:func:`padded`);
    MappingError naming a tensor of the wrong shape."""
    T, I, O = shape["T"], shape["I"], shape["O"]
    p = padded(shape)
    want = {"x": (T, I), "w": (O, I), "b": (O,)}
    arrays = {"x": np.asarray(x, np.float32), "w": np.asarray(w, np.float32), "b": np.asarray(b, np.float32)}
    for k, a in arrays.items():
        if a.shape != want[k]:
            raise MappingError(f"{NAME}: {k} has shape {a.shape}, expected {want[k]} at shape T={T}, I={I}, O={O}")
    xp = np.zeros((T, p["I"]), np.float32)
    xp[:, :I] = arrays["x"]
    wp = np.zeros((p["O"], p["I"]), np.float32)
    wp[:O, :I] = arrays["w"]
    bp = np.zeros(p["O"], np.float32)
    bp[:O] = arrays["b"]
    return xp, wp, bp


def program(shape: dict, inputs: dict):
    """The code generator (module docstring): flexasr.linear's stream at the padded shape, its
    read-back cut to y[:, :O] (float32 [T, O]); ``canonical`` is flexasr.linear's element path."""
    from ila.models.flexasr.driver import linear_parts
    from ila.models.port import AccProgram
    xp, wp, bp = pad_operands(shape, inputs["x"], inputs["w"], inputs["b"])
    core = linear_parts(xp, wp, bp, out_bias=F.out_bias(L.reference(padded(shape), {"x": xp, "w": wp, "b": bp}))
                        ).program()
    return AccProgram(core.commands, lambda reads: cut(core.readback(reads), shape), canonical=core.canonical,
                      hints=core.hints, info=core.info, machine=core.machine)


def cut(y, shape: dict) -> np.ndarray:
    """The read-back's cut of the padded result y [T, Op] to the layer's outputs y[:, :O] (values of
    any dtype: floats in the program, codes or terms in the proof)."""
    return np.asarray(y)[:, :shape["O"]]


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    """flexasr.linear's distribution, x ~ N(0, 1), w ~ N(0, 1/64), b ~ N(0, 1/64) (float32), a tensor
    whose largest magnitude falls below 2^-3 (small tensors, e.g. ten biases) scaled up to max|t| =
    2^-2: the AdaptivFloat range data condition."""
    out = L.random_inputs(shape, rng)
    for k, t in out.items():
        top = float(np.max(np.abs(t))) if t.size else 0.0
        if 0 < top < 0.125:
            out[k] = (t * np.float32(0.25 / top)).astype(np.float32)
    return out


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    """flexasr.linear's cases on this distribution: all zeros; negative zeros in x and b; x at the
    largest AdaptivFloat magnitude of a random exponent-bias register (0..3)."""
    T, I, O = shape["T"], shape["I"], shape["O"]
    base = random_inputs(shape, rng)
    z = np.zeros
    return [{"x": z((T, I), np.float32), "w": z((O, I), np.float32), "b": z(O, np.float32)},
            {"x": np.full((T, I), -0.0, np.float32), "w": base["w"], "b": np.full(O, -0.0, np.float32)},
            {"x": F.saturating((T, I), rng, bias_reg=int(rng.integers(0, 4))), "w": base["w"], "b": base["b"]}]


def shape_strategy():
    from hypothesis import strategies as st
    # at least 8 outputs: the Frobenius relative error of a handful of outputs is dominated by
    # cancellation in single sums, not by the mapping (1x8x3: 2 % of inputs err above 8 %, up to 18 %)
    return st.builds(lambda t, i, o: {"T": t, "I": i, "O": o}, st.integers(1, 20), st.integers(1, 100),
                     st.integers(1, 80)).filter(lambda s: s["T"] * s["O"] >= 8)


MAPPING = Mapping(
    machine="ila.models.flexasr.port:PORT",
    name=NAME,
    ir_pattern="(nn.bias_add (nn.dense ?x ?w) ?b (axis A))",
    description="linear layer on the FlexASR PEs at any I and O: zero-padded on the host to 16-value input and "
                "64-value output vectors, the result cut back",
    shape_dims=("T", "I", "O"),
    default_shape={"T": 16, "I": 40, "O": 24},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=(F.AF_RANGE,),
    tolerance=TOLERANCE,
    random_inputs=random_inputs,
    reference=L.reference,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    ir_fragment=L.ir_fragment,
    mutations="verify.mutations.flexasr_linear_pad:mutations",
    proof=Proof("mappings.flexasr.linear_pad_proof:proof_setup", {"T": 1, "I": 10, "O": 10},
                chc_spec="mappings.flexasr.linear_chc:pad_chc_spec"),
    match_shape=L.match_shape,
    bind_operands=L.bind_operands,
    program=program,
)
