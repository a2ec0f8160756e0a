"""vta.dense: a float32 dense layer on VTA's int8 GEMM core, out[N, M] = x[N, K] @ w[M, K].T.

IR pattern: ``(nn.dense ?x ?w)`` on float32 (``ir_dtype``): a bare dense of a float model, and,
through the certified ``conv2d_im2col`` rewrite, the convolutions (the paper's emergent VTA
offloads, §4.3).

Numerics (host side of the driver, as FlexASR's driver quantises to AdaptivFloat): symmetric
per-tensor int8 quantisation of x and of w, scale ``s = max|t| / 127`` (1 for an all-zero
tensor), codes ``clip(round_half_even(t / s), -127, 127)``; the int8 x int8 -> int32 GEMM on the
VTA ILA (``ila.models.vta.driver.dense_program``, the program vta.gemm proves bit-exact, its int32
result read from the accumulator SRAM at vta.gemm's declared output map); dequantisation
``acc * s_x * s_w`` to float32 on the host.

Tiling (one VTA program per pass, each from reset): rows of x in blocks of at most
``min(2048 / ceil(K/16), 2048 / ceil(M_tile/16))`` (input and accumulator SRAM rows), columns of
w in blocks of at most ``16 * floor(1024 / ceil(K/16))`` outputs (the 1024-tile weight SRAM);
every pass satisfies vta.gemm's side conditions. ``acc_commands`` returns the MMIO streams of
the passes in order. K is not tiled (side condition: ceil(K/16) <= 1024).

No formal proof of its own: the int8 core is vta.gemm's (proved for all data at its shapes), and
the host quantisation is numerics measured by simulation (``--method sim|fuzz``, tolerance below).
"""
from __future__ import annotations

import numpy as np

from mappings.base import DataCondition, MappingError, SideCondition, mapping_from_module
from mappings.vta import common as V

NAME = "vta.dense"
# Frobenius relative error, measured: run_sim seed 0, 50 inputs at 16x64x32: mean 1.14 %, std 0.09 %;
# 1024x144x16 (an im2col convolution of ResNet-20, 5 passes): 1.36 %; fuzzing (6 seeds x 40, N 1..40,
# K 8..80, M 4..40, edge inputs): means 0.7-1.0 %, largest 3.8 % at 1x8x4 (a few dot products, where
# cancellation makes the relative error of int8 codes large). Tolerance 6 %.
TOLERANCE = 0.06


def _kb(s):
    return -(-s["K"] // 16)


SIDE_CONDITIONS = (
    SideCondition("positive sizes", lambda s: min(s["N"], s["K"], s["M"]) >= 1, "N, K and M must be at least 1"),
    SideCondition("K fits the weight SRAM", lambda s: _kb(s) <= V.cfg().depth("wgt"),
                  "ceil(K/16) weight tiles of one output block must fit the 1024-entry weight SRAM (K is not tiled)"),
)


def _finite(shape, inputs):
    return float(sum(int(np.sum(~np.isfinite(np.asarray(inputs[k], np.float64)))) for k in ("x", "w")))


DATA_CONDITIONS = (DataCondition("finite data", _finite, 1.0, "x and w must hold finite numbers (no NaN or inf)"),)


def quantize(t: np.ndarray) -> tuple[np.ndarray, float]:
    """Symmetric per-tensor int8 codes (int64 array in [-127, 127]) and the scale (float)."""
    t = np.asarray(t, np.float64)
    if not np.all(np.isfinite(t)):
        raise MappingError(f"{NAME}: cannot quantise non-finite values (e.g. {t[~np.isfinite(t)].flat[0]!r})")
    top = float(np.abs(t).max()) if t.size else 0.0
    scale = top / 127.0 if top > 0 else 1.0
    return np.clip(np.rint(t / scale), -127, 127).astype(np.int64), scale


def passes(shape: dict) -> list[tuple[slice, slice]]:
    """The (row block of x, row block of w) of every pass, in order."""
    N, M = shape["N"], shape["M"]
    kb = _kb(shape)
    cols = 16 * max(1, V.cfg().depth("wgt") // kb)
    out = []
    for c0 in range(0, M, cols):
        c1 = min(M, c0 + cols)
        mb = -(-(c1 - c0) // 16)
        rows = max(1, min(V.cfg().depth("inp") // kb, V.cfg().depth("acc") // mb))
        out += [(slice(r0, min(N, r0 + rows)), slice(c0, c1)) for r0 in range(0, N, rows)]
    return out


def _programs(shape, inputs):
    from ila.models.vta.driver import dense_program
    qx, sx = quantize(inputs["x"])
    qw, sw = quantize(inputs["w"])
    return [(r, c, dense_program(qx[r], qw[c])) for r, c in passes(shape)], sx * sw


def run_accelerator(shape: dict, inputs: dict) -> np.ndarray:
    from mappings.vta.gemm import acc_index
    progs, scale = _programs(shape, inputs)
    out = np.empty((shape["N"], shape["M"]), np.float64)
    for r, c, prog in progs:
        sub = {"N": r.stop - r.start, "K": shape["K"], "M": c.stop - c.start}
        out[r, c] = V.run_acc(prog)[acc_index(sub)]
    return (out * scale).astype(np.float32)


def acc_commands(shape: dict, inputs: dict) -> list[dict]:
    """The MMIO streams of the passes, in order (each runs from reset)."""
    progs, _ = _programs(shape, inputs)
    return [cmd for _, _, prog in progs for cmd in V.commands(prog)]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    return (np.asarray(inputs["x"], np.float64) @ np.asarray(inputs["w"], np.float64).T).astype(np.float32)


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    return {"x": rng.standard_normal((shape["N"], shape["K"])).astype(np.float32),
            "w": (rng.standard_normal((shape["M"], shape["K"])) / np.sqrt(shape["K"])).astype(np.float32)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    N, K, M = shape["N"], shape["K"], shape["M"]
    base = random_inputs(shape, rng)
    neg = {"x": -np.abs(base["x"]), "w": base["w"]}
    equal = {"x": np.full((N, K), 0.75, np.float32), "w": np.full((M, K), -0.5, np.float32)}
    tiny = {"x": base["x"] * np.float32(1e-6), "w": base["w"]}
    return [neg, equal, tiny]


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda n, k, m: {"N": n, "K": k, "M": m}, st.integers(1, 40), st.integers(8, 80),
                     st.integers(4, 40))


def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict:
    """At ``(nn.dense ?x ?w)``: x[..., K] (leading dimensions flattened to N), w[M, K]."""
    from mappings.common import prod
    x, w = shapes["?x"], shapes["?w"]
    return {"N": prod(x[:-1]), "K": x[-1], "M": w[0]}


def bind_operands(shape: dict, operands: list) -> dict:
    x, w = operands
    return {"x": np.asarray(x).reshape(shape["N"], shape["K"]), "w": w}


MAPPING = mapping_from_module(
    globals(),
    name=NAME,
    ir_pattern="(nn.dense ?x ?w)",
    description="float32 dense on VTA's GEMM core: per-tensor int8 quantisation on the host, int32 accumulation, "
                "tiled passes",
    shape_dims=("N", "K", "M"),
    default_shape={"N": 16, "K": 64, "M": 32},
    side_conditions=SIDE_CONDITIONS,
    data_conditions=DATA_CONDITIONS,
    tolerance=TOLERANCE,
)
