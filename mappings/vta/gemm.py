"""vta.gemm: dense with int8 operands and int32 accumulation, out[N, M] = x[N, K] @ w[M, K].T.

IR pattern: ``(nn.dense ?x ?w (out_dtype int32))`` with int8 x and w.

Compiler-IR ILA fragment (:func:`ir_fragment`, ``relay_ila("int32")``): x and w row-major
(sign-extended int8 values), ``nn.dense`` into the output (exact wrapping 32-bit arithmetic).

Accelerator fragment (``vta_program.dense_program``, no requantisation): DRAM image (uops; x as
16-lane input rows, K zero-padded to 16; w as 16x16 weight tiles [M/16][K/16][out][in]), LOAD UOP,
LOAD WGT, LOAD INP, GEMM with reset, GEMM over the K/16 uops, STORE, FINISH — one VTA instruction
per command.

Refinement map: IR x[n, k] <-> DRAM byte ``16 * (x_base + n * K/16) + k`` (padded rows), IR
w[m, k] <-> the byte of weight tile (m/16, k/16), lane (m % 16, k % 16); IR out[n, m] <->
accumulator SRAM entry ``(n * ceil(M/16) + m/16) * 16 + m % 16`` (int32; see
:mod:`mappings.vta.common` for why the result is compared there).

Exact: tolerance 0. ``--method bmc`` proves the two fragments equal for all int8 data at small
shapes (bit-precise: both sides are exact bit-vector arithmetic).
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, SideCondition, check_mutation
from mappings.common import IrFragment, Layout
from mappings.vta import common as V

NAME = "vta.gemm"


def _blocks(s):
    return -(-s["K"] // 16), -(-s["M"] // 16)


SIDE_CONDITIONS = (
    SideCondition("positive sizes", lambda s: min(s["N"], s["K"], s["M"]) >= 1, "N, K and M must be at least 1"),
    SideCondition("weights fit the weight SRAM", lambda s: _blocks(s)[0] * _blocks(s)[1] <= V.cfg().depth("wgt"),
                  "ceil(K/16) * ceil(M/16) weight tiles must fit the 1024-entry weight SRAM"),
    SideCondition("inputs fit the input SRAM", lambda s: s["N"] * _blocks(s)[0] <= V.cfg().depth("inp"),
                  "N * ceil(K/16) input rows must fit the 2048-entry input SRAM (one pass, no re-tiling)"),
    V.acc_row_fits(lambda s: s["N"] * _blocks(s)[1], "N * ceil(M/16) output rows"),
)


def ir_fragment(shape: dict) -> IrFragment:
    N, K, M = shape["N"], shape["K"], shape["M"]
    lay = Layout()
    for name, shp in (("x", (N, K)), ("w", (M, K)), ("out", (N, M))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "w")},
                      [("nn.dense", [b("x"), b("w"), b("out"), N, K, M])], lay.regions["out"], numerics="int32")


def program(shape: dict, inputs: dict):
    from ila.models.vta.driver import dense_program
    return dense_program(inputs["x"], inputs["w"])


def acc_index(shape: dict) -> np.ndarray:
    N, M = shape["N"], shape["M"]
    mb = _blocks(shape)[1]
    n, m = np.arange(N)[:, None], np.arange(M)[None, :]
    return (n * mb + m // 16) * 16 + m % 16


def refinement(shape: dict) -> dict:
    """DRAM byte of every x and w element, accumulator entry of every output element."""
    N, K, M = shape["N"], shape["K"], shape["M"]
    kb, _ = _blocks(shape)
    prog = program(shape, {"x": np.zeros((N, K), np.int64), "w": np.zeros((M, K), np.int64)})
    from ila.models.vta.isa import MEM_INP, MEM_WGT
    base = {i.memory_type: i.dram_base for i in prog.insns if getattr(i, "opcode", None) == 0
            and getattr(i, "memory_type", None) in (MEM_INP, MEM_WGT)}
    n, k = np.arange(N)[:, None], np.arange(K)[None, :]
    x = 16 * (base[MEM_INP] + n * kb) + k
    m = np.arange(M)[:, None]
    w = 256 * base[MEM_WGT] + (((m // 16) * kb + k // 16) * 16 + m % 16) * 16 + k % 16
    return {"x": ("vta_dram", x), "w": ("vta_dram", w), "out": ("vta_acc_mem", acc_index(shape))}


# seeded bugs for mutation testing of the proof (tests/test_vta_proof.py): name -> description
MUTATIONS = {
    "weight_block_transposed": "code generator: every 16x16 weight block is stored transposed",
    "input_row_off_by_one": "code generator: input row n is stored where row n + 1 belongs",
    "output_entry_off_by_one": "refinement map: IR out[n, m] is read from the accumulator entry of out[n, m + 1]",
}


def proof_setup(shape: dict, *, numerics: str = "exact", mutation: str | None = None):
    """Both fragments over shared symbolic int8 data (bit-precise int8 x int8 -> int32; ``numerics``
    is ignored). ``mutation``: one of :data:`MUTATIONS` (MappingError for an unknown name)."""
    check_mutation(NAME, mutation, MUTATIONS)
    N, K, M = shape["N"], shape["K"], shape["M"]
    ref = refinement(shape)
    prog = program(shape, {"x": np.zeros((N, K), np.int64), "w": np.zeros((M, K), np.int64)})
    x, w, out = ref["x"][1], ref["w"][1], ref["out"][1]
    if mutation == "weight_block_transposed":            # byte (r, c) of a 256-byte block at (c, r)
        off = w % 256
        w = w - off + (off % 16) * 16 + off // 16
    elif mutation == "input_row_off_by_one":
        x = x + 16 * _blocks(shape)[0]
    elif mutation == "output_entry_off_by_one":
        out = np.asarray(out) + 1
    return V.proof_setup(ir_fragment(shape), prog, byte_addrs={"x": x, "w": w},
                         widths={"x": 8, "w": 8}, out_acc_index=out,
                         describe=lambda k: f"out[{k // M}, {k % M}]")


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    return {"x": V.int8_data((shape["N"], shape["K"]), rng), "w": V.int8_data((shape["M"], shape["K"]), rng)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    N, K, M = shape["N"], shape["K"], shape["M"]
    z = {"x": np.zeros((N, K), np.int64), "w": np.zeros((M, K), np.int64)}
    lo = {"x": np.full((N, K), -128), "w": np.full((M, K), -128)}          # largest products, all positive
    mix = {"x": np.full((N, K), -128), "w": np.full((M, K), 127)}
    return [z, lo, mix]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    from ila.numerics.fixed_point import wrap_int32
    return wrap_int32(np.asarray(inputs["x"], np.int64) @ np.asarray(inputs["w"], np.int64).T)


def run_accelerator(shape: dict, inputs: dict) -> np.ndarray:
    acc = V.run_acc(program(shape, inputs))
    return acc[acc_index(shape)].astype(np.int64)


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda n, k, m: {"N": n, "K": k, "M": m}, st.integers(1, 6), st.integers(1, 40), st.integers(1, 40))


MAPPING = Mapping(
    name=NAME,
    ir_pattern="(nn.dense ?x ?w (out_dtype int32))",
    description="int8 x int8 -> int32 dense on VTA's GEMM core (blocked 16x16, result in the accumulator)",
    shape_dims=("N", "K", "M"),
    default_shape={"N": 16, "K": 64, "M": 64},
    side_conditions=SIDE_CONDITIONS,
    tolerance=0.0,
    random_inputs=random_inputs,
    reference=reference,
    run_accelerator=run_accelerator,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    extras={"ir_fragment": ir_fragment, "refinement": refinement, "proof": proof_setup,
            "proof_shape": {"N": 1, "K": 16, "M": 16}, "mutations": MUTATIONS,
            "depends_on": ("ila.models.vta.model", "ila.models.vta.driver", "ila.models.relay.model")},
)
