"""The LayerReduce family of FlexASR mappings (flexasr.maxpool, flexasr.meanpool and their fused
chains): what they share.

Every member pools an R x C matrix x (R timesteps, C hidden values) with window (2, 1) and stride
(2, 1) on the global buffer's LayerReduce unit, in place. Shared here: the declared refinement map
(IR element (t, c) at IR tensor address t*C + c <-> GB byte offset ``tiled(t, c)`` = 16*((t mod 16)
+ floor(t/16)*num_v*16) + 256*v + i for c = 16*v + i, num_v = C/16; outputs in place), the side
conditions, the IR numerics of the proofs (max: an uninterpreted ``ir_max`` over 8-bit AdaptivFloat
codes linked to ``GBAdpfloat_max`` by the paper's axiom, or bit-precise with ``--numerics exact``;
mean: uninterpreted add/div/from_int with the window-mean link), the compiler-IR ILA fragment
(:func:`ir_commands`, k pools in a row), the exact emitted MMIO stream (:func:`emitted_stream`,
the driver's tensor program through the real assembler) and the BMC fragments
(:func:`proof_setup`), and the compiler's operand adapters (one image, one channel).

Source: reference §2.1 (3LA driver ``maxp`` / ``meanp``), the paper's §4.2 and Table 3.
"""
from __future__ import annotations

import numpy as np

from ila import bv_const, ite, zext
from ila.models.relay.model import FUNC_IDS, relay_ila
from ila.models.relay.numerics import abstract
from mappings.base import ProofSetup, Side, SideCondition, symbolic_data
from mappings.flexasr import common as F
from mappings.flexasr.common import gb_address  # noqa: F401  (the declared map, used by the CHC artefacts)
from mappings.flexasr.common import mmio_port

GB_LARGE_SIZE = 1 << 20


def tiled(R: int, C: int) -> np.ndarray:
    """GB byte offset of element (t, c) of an R x C matrix: the declared map as an array."""
    return F.tiled(R, C)


def refinement(shape: dict) -> dict:
    """The declared refinement map at ``shape``: tensor name -> (accelerator memory, GB byte offset
    of each element), from :func:`gb_address`; pooling is in place, so output timestep t sits where
    input timestep t did."""
    off = tiled(shape["R"], shape["C"])
    return {"x": ("gb_core_large_buffer", off), "out": ("gb_core_large_buffer", off[:shape["R"] // 2])}


SIDE_CONDITIONS = (
    SideCondition("R even", lambda s: s["R"] % 2 == 0 and s["R"] >= 2, "the number of timesteps R must be even and >= 2"),
    SideCondition("C multiple of 16", lambda s: s["C"] % 16 == 0 and s["C"] >= 16,
                  "the hidden size C must be a positive multiple of 16 (FlexASR vectors)"),
    SideCondition("num_vector fits", lambda s: s["C"] // 16 <= 255, "C/16 must fit the 8-bit num_vector field"),
    SideCondition("num_timestep fits", lambda s: s["R"] <= 0xFFFF, "R must fit the 16-bit num_timestep field"),
    SideCondition("fits the GB large buffer", lambda s: -(-s["R"] // 16) * 16 * s["C"] <= GB_LARGE_SIZE,
                  "the tiled matrix must fit the 1 MiB global-buffer large memory"),
)


# ----------------------------------------------------------------------------- numerics for proofs
def _ir_exact_max(a, b):
    """Bit-precise max of two AdaptivFloat codes by their decoded values (sign-magnitude order,
    ±0 equal, result canonical: 0x80 is returned as 0x00). Written from the format definition."""
    def rank(x):                       # value order of sign-magnitude codes as a 9-bit signed int
        mag = zext(x[6:0], 9)
        return ite(x[7].eq(1), bv_const(0, 9) - mag, mag)

    def canon(x):
        return ite(x[6:0].eq(0), bv_const(0, 8), x)
    return ite(rank(b).sgt(rank(a)), canon(b), canon(a))


POOL_OPS = {"max": "nn.max_pool2d", "mean": "nn.avg_pool2d"}


def ir_mean_numerics():
    """Abstract IR numerics for flexasr.meanpool proofs: add, div and from_int are uninterpreted
    (the paper's abstract data types). The link axiom ``div(add(a, b), from_int(2)) =
    GBAdpfloat_mean(a, b)`` pairs the IR's average of a window with the unit's mean; it is an
    abstraction, not a bit-level fact (the IR averages in float32), so a proof shows *which*
    elements are averaged and where the result goes, and ``--method sim|fuzz`` measures the
    numeric difference (mapping tolerance)."""
    from ila.expr import FuncRef
    from ila.sorts import BvSort
    num = abstract("ir_af8", 8, axioms=False)
    S = BvSort(8)
    div = FuncRef("ir_af8_div", S, [S, S])
    from_int = FuncRef("ir_af8_from_int", S, [BvSort(32)])
    import dataclasses
    return dataclasses.replace(num, div=div, from_int=from_int)


def mean_link(num):
    """The link axiom instances for the applications of the IR's div (see :func:`ir_mean_numerics`)."""
    from ila.models.flexasr.funcs import GB_ADPFLOAT_MEAN

    def link(apps):
        out = []
        for n in apps:
            if n.payload is num.div and n.args[0].op.name == "APPLY" and n.args[0].payload is num.add:
                k = n.args[1]
                if k.op.name == "APPLY" and k.payload is num.from_int and k.args[0].op.name == "CONST" \
                        and k.args[0].payload == 2:
                    out.append(n.eq(GB_ADPFLOAT_MEAN(*n.args[0].args)))
        return out
    return link


def ir_numerics():
    from ila.numerics import adaptivfloat as af
    from ila.models.flexasr.funcs import canon_expr
    num = abstract("ir_af8", 8, max_body=lambda a, b: af.af_max(a, b).astype(np.uint64), axioms=False)
    f = num.max
    f.expr_body = _ir_exact_max
    # Axioms true of AdaptivFloat max on all byte pairs (tests/test_axioms_exhaustive.py): it is
    # commutative and returns one argument *canonicalised* (negative zero 0x80 comes back as 0x00,
    # so "returns one of its arguments" would be false).
    f.axioms = (lambda a, b: f(a, b).eq(f(b, a)),
                lambda a, b: f(a, b).eq(canon_expr(a)) | f(a, b).eq(canon_expr(b)))
    return num


# ----------------------------------------------------------------------------- fragments
def ir_commands(R: int, C: int, data, op: str = "max", k: int = 1) -> list[dict]:
    """Compiler-IR ILA fragment: store x row-major at 0, run nn.max_pool2d (``op='mean'``:
    nn.avg_pool2d) into R*C; ``k`` > 1: k pools in a row, pool j reading the R/2^j x C result of
    the previous one and writing its own right after it (:func:`chain_output`)."""
    cmds = [{"func_id": FUNC_IDS["tensor_store"], "addr_in": t * C + c, "data_in": data[t * C + c]}
            for t in range(R) for c in range(C)]
    src = 0
    for j in range(k):
        rows = R >> j
        cmds.append({"func_id": FUNC_IDS[POOL_OPS[op]], "arg_0": src, "arg_1": src + rows * C, "arg_2": 1,
                     "arg_3": rows, "arg_4": C, "arg_5": (2 << 16) | 1, "arg_6": (2 << 16) | 1})
        src += rows * C
    return cmds


def chain_output(R: int, C: int, k: int = 1) -> int:
    """IR tensor address of the result of :func:`ir_commands` ((R/2^k) x C, row-major)."""
    return sum((R >> j) * C for j in range(k))


def emitted_stream(R: int, C: int, codes, op: str = "max", k: int = 1) -> list[dict]:
    """The MMIO command stream the code generator emits for pooling an [R, C] tensor of element
    codes (ints, or 8-bit terms in proofs): the driver's own tensor program
    (:func:`ila.models.flexasr.driver.pool_program`; ``k`` > 1: ``pool_chain_program``, k pools
    with the data left in the global buffer) through the real assembler, packer and fragment
    parser, with the read-back and the interrupt waits."""
    from ila.models.flexasr import driver
    from ila.models.flexasr import isa
    prog = driver.pool_program(R, C // 16, op) if k == 1 else driver.pool_chain_program(R, C // 16, k, op)
    _, cmds = isa.assemble(prog, {"x": codes})
    return cmds


def proof_setup(shape: dict, *, numerics: str = "uf", op: str = "max"):
    """The two fragments over shared symbolic data, for ``verify.bmc``: the compiler-IR ILA
    fragment, and the exact MMIO stream the code generator emits for a tensor of symbolic codes
    (:func:`emitted_stream`), whose outputs are read back by the driver's own read-back
    (``ila.models.flexasr.driver.readback``). ``op='mean'``: flexasr.meanpool, IR numerics
    :func:`ir_mean_numerics`. ``shape["L"]`` (default 1): a chain of L pools in one program
    (``mappings.flexasr.pool_chain``). Seeded bugs are applied around this function by
    ``verify.mutations``."""
    from ila.models.flexasr import driver, shared_model
    from ila.models.flexasr.funcs import GB_ADPFLOAT_MAX, GB_ADPFLOAT_MEAN
    from mappings.base import MappingError
    R, C, k = shape["R"], shape["C"], shape.get("L", 1)
    if op == "mean" and numerics == "exact":
        raise MappingError("flexasr.meanpool: --numerics exact is not available: the IR averages in float32, "
                           "which is not bit-equal to the unit's AdaptivFloat mean (use uf; sim/fuzz measure it)")
    num = ir_numerics() if op == "max" else ir_mean_numerics()
    ir = relay_ila(num, tensor_entries=1 << 22)
    d = symbolic_data(R * C, 8)
    codes = np.array(d, dtype=object).reshape(R, C)
    off = refinement(shape)["x"][1]
    at = chain_output(R, C, k)
    outs = [(at + t * C + c, t * C + c) for t in range(R >> k) for c in range(C)]

    def link(apps):
        return [n.eq(GB_ADPFLOAT_MAX(*n.args)) for n in apps if n.payload is num.max]
    funcs = [num.max, GB_ADPFLOAT_MAX] if op == "max" else [num.add, num.div, num.from_int, GB_ADPFLOAT_MEAN]
    return ProofSetup(Side(ir, ir_commands(R, C, d, op, k), "tensor"),
                      Side(shared_model(), emitted_stream(R, C, codes, op, k), "gb_core_large_buffer", port=mmio_port()),
                      d, outs,
                      axioms=[] if numerics == "exact" else [link if op == "max" else mean_link(num)], funcs=funcs,
                      describe_output=lambda k: f"output ({k // C}, {k % C})",
                      inputs=[(t * C + c, int(off[t, c])) for t in range(R) for c in range(C)],
                      readback=lambda reads: driver.readback(reads, R >> k, C // 16),
                      covers=("codegen-bytes", "order", "model-loops", "read-back"))


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(nn.max_pool2d ?x (pool_size 2 1) (strides 2 1))`` (or the mean pool's): the unit pools
    one [R, C] matrix, so x[1, 1, R, C] (one image, one channel), no padding, no ceil mode."""
    x = shapes["?x"]
    if len(x) != 4 or x[0] * x[1] != 1 or tuple(attrs.get("padding", (0,) * 4)) not in ((0,) * 4, (0, 0)) \
            or attrs.get("ceil_mode"):
        return None
    return {"R": x[2], "C": x[3]}


def bind_operands(shape: dict, operands: list) -> dict:
    return {"x": np.asarray(operands[0]).reshape(shape["R"], shape["C"])}
