"""vta.gemm: dense with int8 operands and int32 accumulation, out[N, M] = x[N, K] @ w[M, K].T.

IR pattern: ``(nn.dense ?x ?w (out_dtype int32))`` with int8 x and w.

Compiler-IR ILA fragment (:func:`ir_fragment`, ``relay_ila("int32")``): x and w row-major
(sign-extended int8 values), ``nn.dense`` into the output (exact wrapping 32-bit arithmetic).

Accelerator fragment (:func:`acc_commands`: ``driver.program_commands`` of
``driver.dense_program``, no requantisation): the DRAM image as 8-byte virtual-memory writes (uops;
x as 16-lane int8 input rows, K zero-padded to 16; w as 16x16 int8 weight tiles
``[M/16][K/16][out][in]``), then one 128-bit VTA instruction per command: LOAD UOP, LOAD WGT,
LOAD INP, GEMM with reset, GEMM over the K/16 uops, STORE, FINISH.

Refinement map (:func:`refinement`, declared here, independent of the generator and the model):
IR x[n, k] <-> DRAM byte ``16 * (x_base + n * kb) + k`` with ``kb = ceil(K/16)`` and ``x_base =
ceil(4 (kb + 1) / 16)`` (after the kb + 1 four-byte uops), IR w[m, k] <-> DRAM byte ``256 *
(w_base + (m/16) kb + k/16) + 16 (m % 16) + k % 16`` with ``w_base = ceil(16 (x_base + N kb) /
256)``; IR out[n, m] <-> accumulator SRAM entry :func:`acc_index` ``(n * ceil(M/16) + m/16) * 16
+ m % 16`` (int32; :mod:`mappings.vta.common` says why the result is compared there).

Proof (``--method bmc``, :func:`proof_setup`): the exact stream the driver emits for symbolic
int8 x and w (8-bit symbols through the packer into the DRAM words), executed on the VTA ILA from
reset, equals the IR fragment on every output entry for all data, bit-precisely (int8 x int8 ->
int32 wrapping MACs on both sides; ``numerics`` makes no difference, there are no uninterpreted
functions). Covers ``mappings.vta.common.COVERS``; not the int8 read-back. Seeded bugs:
``verify/mutations/vta.py``.

Exact: tolerance 0.
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, Proof, SideCondition
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
    SideCondition("K blocks fit the GEMM's weight factor", lambda s: _blocks(s)[0] <= V.max_weight_factor(),
                  "ceil(K/16) must fit the GEMM instruction's wgt_factor_in field (log2(1024) = 10 bits: at most "
                  "1023, K <= 16368)"),
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
    """The driver's program for ``inputs`` (int8 arrays, or tensors of 8-bit terms)."""
    from ila.models.vta.driver import dense_program
    return dense_program(inputs["x"], inputs["w"])


def acc_commands(shape: dict, inputs: dict) -> list[dict]:
    """The MMIO command stream the driver emits for these inputs."""
    return V.commands(program(shape, inputs))


def acc_index(shape: dict) -> np.ndarray:
    """The declared output map: accumulator SRAM entry of out[n, m] (row n * ceil(M/16) + m/16 of
    16 int32 lanes, lane m % 16)."""
    N, M = shape["N"], shape["M"]
    mb = _blocks(shape)[1]
    n, m = np.arange(N)[:, None], np.arange(M)[None, :]
    return (n * mb + m // 16) * 16 + m % 16


def refinement(shape: dict) -> dict:
    """The declared refinement map (module docstring): DRAM byte of every x and w element,
    accumulator entry of every output element."""
    N, K, M = shape["N"], shape["K"], shape["M"]
    kb, _ = _blocks(shape)
    x_base = -(-4 * (kb + 1) // 16)
    w_base = -(-16 * (x_base + N * kb) // 256)
    n, k = np.arange(N)[:, None], np.arange(K)[None, :]
    x = 16 * (x_base + n * kb) + k
    m = np.arange(M)[:, None]
    w = 256 * (w_base + (m // 16) * kb + k // 16) + 16 * (m % 16) + k % 16
    return {"x": ("vta_dram", x), "w": ("vta_dram", w), "out": ("vta_acc_mem", acc_index(shape))}


def proof_setup(shape: dict, *, numerics: str = "exact"):
    """The BMC setup (module docstring): the driver's stream for symbolic int8 x and w against the
    IR fragment, outputs compared at the declared accumulator entries. ``numerics`` is ignored
    (bit-precise either way). Seeded bugs are applied around this function by
    ``verify.mutations``."""
    N, K, M = shape["N"], shape["K"], shape["M"]
    frag = ir_fragment(shape)
    t = {"x": V.symbolic_tensor("x", (N, K), 8), "w": V.symbolic_tensor("w", (M, K), 8)}
    ref = refinement(shape)
    inputs = [(int(a), int(b)) for name in ("x", "w")
              for a, b in zip(frag.address(name).reshape(-1), ref[name][1].reshape(-1))]
    return V.proof_setup(frag, program(shape, t), t, out_entries=acc_index(shape), inputs=inputs,
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


def acc_program(shape: dict, inputs: dict):
    """The code generator: the driver's stream for int8 ``inputs`` and the read-back of the
    accumulator rows holding out (at :func:`acc_index`)."""
    return V.acc_program(program(shape, inputs), acc_index(shape))


def shape_strategy():
    from hypothesis import strategies as st
    return st.builds(lambda n, k, m: {"N": n, "K": k, "M": m}, st.integers(1, 6), st.integers(1, 40), st.integers(1, 40))


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict:
    """At ``(nn.dense ?x ?w (out_dtype int32))``: x[..., K] (leading dimensions flattened to N),
    w[M, K]."""
    from mappings.common import prod
    x, w = shapes["?x"], shapes["?w"]
    return {"N": prod(x[:-1]), "K": x[-1], "M": w[0]}


def bind_operands(shape: dict, operands: list) -> dict:
    x, w = operands
    return {"x": np.asarray(x).reshape(shape["N"], shape["K"]), "w": w}


MAPPING = Mapping(
    machine="ila.models.vta.port:PORT",
    ir_dtype="int32",
    name=NAME,
    ir_pattern="(nn.dense ?x ?w (out_dtype int32))",
    description="int8 x int8 -> int32 dense on VTA's GEMM core (blocked 16x16, result in the accumulator)",
    shape_dims=("N", "K", "M"),
    default_shape={"N": 16, "K": 64, "M": 64},
    side_conditions=SIDE_CONDITIONS,
    tolerance=0.0,
    random_inputs=random_inputs,
    reference=reference,
    program=acc_program,
    shape_strategy=shape_strategy,
    edge_inputs=edge_inputs,
    ir_fragment=ir_fragment,
    refinement=refinement,
    match_shape=match_shape,
    bind_operands=bind_operands,
    # BMC (small shapes) and the phase proof of the whole program at any shape (mappings.vta.gemm_chc)
    mutations="verify.mutations.vta:gemm_mutations",
    proof=Proof(proof_setup, {"N": 1, "K": 16, "M": 16}, chc_spec="mappings.vta.gemm_allsizes:chc_spec",
                cex_shapes=({"N": 1, "K": 16, "M": 16}, {"N": 2, "K": 20, "M": 18})),
)
