"""vta.dense_bias: a float32 dense layer with bias, out[N, M] = x[N, K] @ w[M, K].T + b[M], on VTA's
int8 GEMM core, the bias added on the host after dequantisation.

IR pattern: ``(nn.bias_add (nn.dense ?x ?w) ?b (axis A))`` on float32 (``ir_dtype``), A the last
axis of the dense's result: the front-end's form of a linear layer on a 2-D input (ResNet-20's,
MobileNet-V2's, EfficientNet-B0's and ResMLP's classifier), matched as it is. The paper's exact
matching for VTA (3la-evaluation ``count_ops.py``, ``reference/EQUALITY_SATURATION.md`` §2.6)
takes ``nn.dense`` and then ``nn.bias_add``; here one invocation covers both operators. Shapes:
x[..., K] (leading IR dimensions flattened into N, row-major), w[M, K] (row-major, as
``nn.dense``), b[M], out float32 of the IR's shape.

Code generator (:func:`program`): the program of :mod:`mappings.vta.dense` on x and w (per-tensor
symmetric int8 quantisation on the host, ``vta.dense.quantize``; the tiled int8 x int8 -> int32
GEMM passes of ``vta.dense.int_program``, each vta.gemm's proved program with its accumulator
read-back), and a read-back that dequantises and adds the bias in float64 before one rounding to
float32: ``out = float32(acc * (s_x * s_w) + b)``. The bias never goes to the accelerator: VTA's
int32 ALU add (``vta.add``) would need the bias quantised at the product's scale.

The reference is ``x @ w.T + b`` on the float inputs (float64, rounded to float32). The error is the
quantisation of x and w, measured by simulation (tolerance below). Declared numerics
(:func:`reference_term`): the IR operator in the accelerator's order and rounding -- vta.dense's
host quantisation, the exact int8 product ``qx @ qw.T``, then ``float32(acc * (s_x * s_w) + b)``
in float64, written from that definition (not with the runner's read-back).

Compiler-IR ILA fragment (:func:`ir_fragment`): ``nn.dense`` of x [N, K] and w [M, K] into a
temporary, then ``nn.bias_add`` of b [M] into out [N, M] (float32), for the exact adapter check.

Proof (``--method chc``, :mod:`mappings.vta.dense_bias_proof`): vta.dense's composite phase proof
of the int8 core at the shape (every pass bit-exact, the tiling, the read-back's assembly) plus two
lemmas tying it to this mapping's program: its stream is vta.dense's ``int_program`` of the codes,
and its read-back is the declared epilogue on the int32 result (checked on random accumulators:
float arithmetic, sampled). ``--method bmc`` is refused (one stream per pass; see the module).
Non-finite data is refused (data condition ``finite data``; MappingError naming the tensor,
index and value).
"""
from __future__ import annotations

import numpy as np

from mappings.base import DataCondition, Mapping, MappingError, Proof
from mappings.common import IrFragment, Layout
from mappings.vta import dense as D

NAME = "vta.dense_bias"
# Frobenius relative error, measured with verify.simval.run_sim (seed 0): 16x64x32 (default), 100
# inputs: mean 1.13 %, max 1.35 %; 1x64x10 (ResNet-20's classifier), 100: mean 1.00 %, max 2.24 %;
# 1x384x10 (ResMLP's), 20: max 2.33 %; 1x1280x1000 (MobileNet-V2's / EfficientNet-B0's), 3: max
# 1.48 %. Fuzzing (run_fuzz seeds 0-2 x 60 examples, N 1..40, K 8..80, M 4..40, edge inputs): max
# 1.54 %. The bias (b ~ N(0, 0.1) here) is added exactly on the host, so the error is vta.dense's
# quantisation error relative to a norm that includes the bias: vta.dense's tolerance, 6 %, and its
# caveats (single-output shapes and outliers in x, see mappings.vta.dense) apply.
TOLERANCE = 0.06

SIDE_CONDITIONS = D.SIDE_CONDITIONS


def _non_finite(shape: dict, inputs: dict) -> float:
    """Number of NaN or infinite elements of x, w and b."""
    return float(sum(D.count_non_finite(inputs[k]) for k in ("x", "w", "b")))


DATA_CONDITIONS = (
    DataCondition("finite data", _non_finite, 1.0,
                  "the measure is the number of NaN or infinite elements of x, w and b; int8 quantisation and "
                  "the host's bias add need finite numbers"),
)


def _operands(shape: dict, inputs: dict) -> tuple:
    """((qx, sx), (qw, sw), b as float64); MappingError naming a tensor of the wrong shape or the first
    non-finite element."""
    N, K, M = shape["N"], shape["K"], shape["M"]
    x, w, b = (np.asarray(inputs[k]) for k in ("x", "w", "b"))
    want = {"x": (N, K), "w": (M, K), "b": (M,)}
    for k, a in (("x", x), ("w", w), ("b", b)):
        if a.shape != want[k]:
            raise MappingError(f"{NAME}: {k} has shape {a.shape}, expected {want[k]} at shape N={N}, K={K}, M={M}")
    b = b.astype(np.float64)
    if not np.isfinite(b).all():
        i = int(np.argwhere(~np.isfinite(b))[0][0])
        raise MappingError(f"{NAME}: cannot add b[{i}] = {float(b[i])}: the bias must be finite")
    return D.quantize(x, "x"), D.quantize(w, "w"), b


def epilogue(acc, sx: float, sw: float, b) -> np.ndarray:
    """The read-back's host epilogue: int32 accumulator values acc [N, M] (int64 array) dequantised
    and the bias b [M] (float64) added in float64, rounded once to float32 [N, M]."""
    return (np.asarray(acc, np.float64) * (sx * sw) + b).astype(np.float32)


def program(shape: dict, inputs: dict):
    """The code generator: vta.dense's quantisation and tiled int8 GEMM passes (:func:`mappings.vta.
    dense.int_program`), and a read-back that dequantises the int32 result and adds the bias on the
    host (:func:`epilogue`): float32 out[N, M] = float32(acc * (s_x * s_w) + b)."""
    from ila.models.port import AccProgram
    (qx, sx), (qw, sw), b = _operands(shape, inputs)
    core = D.int_program(shape, qx, qw)
    return AccProgram(core.commands, lambda reads: epilogue(core.readback(reads), sx, sw, b),
                      canonical=core.canonical, info={"scales": (sx, sw)}, machine=core.machine)


def reference_term(shape: dict, inputs: dict) -> np.ndarray:
    """The declared numerics (module docstring): vta.dense's quantisation of x and w, the exact
    integer product of the codes, dequantised at ``s_x * s_w`` and the bias added in float64, one
    rounding to float32 [N, M]. The proof shows the emitted passes compute ``qx @ qw.T`` exactly and
    checks the read-back's epilogue against this formula; simulation measures its distance to the
    float reference."""
    _operands(shape, inputs)                       # shapes and finiteness, as the program refuses them
    (qx, sx), (qw, sw) = D.quantize(inputs["x"], "x"), D.quantize(inputs["w"], "w")
    prod = (np.asarray(qx, np.int64) @ np.asarray(qw, np.int64).T).astype(np.float64)
    return (prod * (sx * sw) + np.asarray(inputs["b"], np.float64)).astype(np.float32)


def ir_fragment(shape: dict) -> IrFragment:
    """The compiler-IR ILA fragment at ``shape``: x [N, K], w [M, K], b [M] row-major, ``nn.dense``
    into tmp [N, M], ``nn.bias_add`` along the last axis into out [N, M] (float32)."""
    N, K, M = shape["N"], shape["K"], shape["M"]
    lay = Layout()
    for name, shp in (("x", (N, K)), ("w", (M, K)), ("b", (M,)), ("tmp", (N, M)), ("out", (N, M))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "w", "b")},
                      [("nn.dense", [b("x"), b("w"), b("tmp"), N, K, M]),
                       ("nn.bias_add", [b("tmp"), b("b"), b("out"), N, M, 1])],
                      lay.regions["out"], numerics="float32")


def reference(shape: dict, inputs: dict) -> np.ndarray:
    """``x @ w.T + b`` in float64 on the float inputs, rounded to float32."""
    return (np.asarray(inputs["x"], np.float64) @ np.asarray(inputs["w"], np.float64).T
            + np.asarray(inputs["b"], np.float64)).astype(np.float32)


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    """vta.dense's x ~ N(0, 1), w ~ N(0, 1/K), and b ~ N(0, 0.1) (float32)."""
    out = D.random_inputs(shape, rng)
    out["b"] = (rng.standard_normal(shape["M"]) * 0.1).astype(np.float32)
    return out


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    """vta.dense's edge cases (x all zero: the result is exactly b; one huge outlier in x; codes at the
    clip bound), with a zero, a random and a constant bias."""
    M = shape["M"]
    biases = [np.zeros(M, np.float32), (rng.standard_normal(M) * 0.1).astype(np.float32), np.full(M, 0.5, np.float32)]
    return [dict(e, b=b) for e, b in zip(D.edge_inputs(shape, rng), biases)]


def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(nn.bias_add (nn.dense ?x ?w) ?b (axis A))``: x[..., K] (leading dimensions flattened to
    N), w[M, K], b[M] added along the last axis (A the last axis; any other axis: None)."""
    from mappings.common import prod
    x, w, b = shapes["?x"], shapes["?w"], shapes["?b"]
    if int(attrs.get("axis", 1)) % len(out_shape) != len(out_shape) - 1 or tuple(b) != (w[0],):
        return None
    return {"N": prod(x[:-1]), "K": x[-1], "M": w[0]}


def bind_operands(shape: dict, operands: list) -> dict:
    x, w, b = operands
    return {"x": np.asarray(x).reshape(shape["N"], shape["K"]), "w": w, "b": b}


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda n, k, m: {"N": n, "K": k, "M": m}, st.integers(1, 40), st.integers(8, 80),
                     st.integers(4, 40))


MAPPING = Mapping(
    machine="ila.models.vta.port:PORT",
    program=program,
    random_inputs=random_inputs,
    reference=reference,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    match_shape=match_shape,
    bind_operands=bind_operands,
    name=NAME,
    ir_pattern="(nn.bias_add (nn.dense ?x ?w) ?b (axis A))",
    description="float32 dense with bias on VTA's GEMM core: per-tensor int8 quantisation, int32 accumulation, "
                "tiled passes; dequantisation and the bias add on the host",
    shape_dims=("N", "K", "M"),
    default_shape={"N": 16, "K": 64, "M": 32},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=DATA_CONDITIONS,
    tolerance=TOLERANCE,
    ir_fragment=ir_fragment,
    # vta.dense's composite proof of the int8 core with the lemmas tying it to this program
    # (mappings.vta.dense_bias_proof; host quantisation and epilogue: the declared numerics)
    mutations="verify.mutations.vta_dense_bias:mutations",
    proof=Proof("mappings.vta.dense_bias_proof:proof_setup", {"N": 2, "K": 20, "M": 18},
                chc_spec="mappings.vta.dense_bias_proof:chc_spec",
                cex_shapes=({"N": 2, "K": 20, "M": 18}, {"N": 1, "K": 16, "M": 16})),
)
