"""vta.add and vta.relu: element-wise int32 operations on VTA's ALU (accumulator domain).

IR patterns: ``(add ?a ?b)`` and ``(nn.relu ?a)`` over int32 tensors (any shape, flattened to n
elements).

Compiler-IR ILA fragment: the operands row-major, then ``add`` / ``nn.relu`` (``relay_ila("int32")``:
wrapping bvadd, signed max with 0).

Accelerator fragment (``driver.program_commands`` of ``driver.elementwise_program``): the DRAM
image as 8-byte virtual-memory writes (one uop; a, and b, as rows of 16 int32 lanes, each lane 4
bytes little-endian, zero-padded to whole rows), then one 128-bit instruction per command: LOAD
UOP, LOAD ACC (a at rows 0..r-1, b at r..2r-1), ALU ADD (register operand: row i += row r + i) or
ALU MAX with immediate 0, STORE, FINISH.

Refinement map (:func:`refinement`, declared here): IR a[k] <-> DRAM bytes ``64 + 4k .. 64 + 4k
+ 3`` (accumulator element 1, after the 4-byte uop), b[k] <-> ``64 (1 + r) + 4k ..`` with r =
ceil(n/16) rows; IR out[k] <-> accumulator SRAM entry :func:`acc_entries` k (row k / 16, lane
k % 16; :mod:`mappings.vta.common` says why the result is compared there).

Proof (``--method bmc``): the exact stream the driver emits for symbolic int32 operands (32-bit
symbols through the packer into the DRAM words), executed on the VTA ILA from reset, equals the
IR fragment on every output entry for all int32 data, bit-precisely. Covers
``mappings.vta.common.COVERS``; not the int8 read-back. ``--method chc --shape symbolic``: the
LOADs and the ALU loop against the IR loop for every n (:mod:`mappings.vta.alu_allsizes`).
Seeded bugs: ``verify/mutations/vta.py``.

Exact: tolerance 0.
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, Proof, SideCondition
from mappings.common import IrFragment, Layout
from mappings.vta import common as V


def _rows(s):
    return -(-s["n"] // 16)


def ir_fragment(op: str, shape: dict) -> IrFragment:
    n = shape["n"]
    lay = Layout()
    names = ("a", "b") if op == "add" else ("a",)
    for name in names + ("out",):
        lay.add(name, (n,))
    b = lay.base
    args = [b("a"), b("b"), b("out"), n] if op == "add" else [b("a"), b("out"), n]
    return IrFragment({k: lay.regions[k] for k in names}, [("add" if op == "add" else "nn.relu", args)],
                      lay.regions["out"], numerics="int32")


def program(op: str, shape: dict, inputs: dict):
    """The driver's program for ``inputs`` (int32 arrays, or tensors of 32-bit terms)."""
    from ila.models.vta.driver import elementwise_program
    return elementwise_program(op, inputs["a"], inputs.get("b"))


def acc_entries(shape: dict) -> np.ndarray:
    """The declared output map: accumulator SRAM entry of out[k] (row k / 16, lane k % 16)."""
    return np.arange(shape["n"])


def refinement(op: str, shape: dict) -> dict:
    """The declared refinement map (module docstring)."""
    n = shape["n"]
    out = {"a": ("vta_dram", 64 + 4 * np.arange(n))}
    if op == "add":
        out["b"] = ("vta_dram", 64 * (1 + _rows(shape)) + 4 * np.arange(n))
    out["out"] = ("vta_acc_mem", acc_entries(shape))
    return out


def match_shape(op: str, attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(add ?a ?b)`` / ``(nn.relu ?a)``: n elements of the result, flattened; add only
    without broadcasting (a and b of one shape)."""
    from mappings.common import prod
    if op == "add" and tuple(shapes["?a"]) != tuple(shapes["?b"]):
        return None
    return {"n": prod(out_shape)}


def bind_operands(shape: dict, operands: list) -> dict:
    """The operands flattened, named a (and b)."""
    return {k: np.asarray(v).reshape(-1) for k, v in zip(("a", "b"), operands)}


def make(op: str) -> Mapping:
    name = f"vta.{op}"
    rows_needed = (lambda s: 2 * _rows(s)) if op == "add" else _rows
    conds = (SideCondition("positive size", lambda s: s["n"] >= 1, "the tensor must have at least 1 element"),
             V.acc_row_fits(rows_needed, ("both operands (2 * ceil(n/16) rows)" if op == "add" else "ceil(n/16) rows")))

    def random_inputs(shape, rng):
        d = {"a": V.int32_data(shape["n"], rng)}
        if op == "add":
            d["b"] = V.int32_data(shape["n"], rng)
        return d

    def edge_inputs(shape, rng):
        n = shape["n"]
        big, small = np.full(n, (1 << 31) - 1, np.int64), np.full(n, -(1 << 31), np.int64)
        cases = [{"a": np.zeros(n, np.int64), "b": np.zeros(n, np.int64)},
                 {"a": big, "b": big},                       # wraps to -2
                 {"a": small, "b": np.where(np.arange(n) % 2, small, np.full(n, -1, np.int64))}]
        return [c if op == "add" else {"a": c["a"] if k != 2 else c["b"]} for k, c in enumerate(cases)]

    def reference(shape, inputs):
        from ila.numerics.fixed_point import wrap_int32
        a = np.asarray(inputs["a"], np.int64)
        return wrap_int32(a + np.asarray(inputs["b"], np.int64)) if op == "add" else np.maximum(a, 0)

    def acc_program(shape, inputs):
        """The code generator: the driver's stream and the read-back of the accumulator rows of out."""
        return V.acc_program(program(op, shape, inputs), acc_entries(shape))

    def proof_setup(shape, *, numerics="exact"):
        """The BMC setup (module docstring): the driver's stream for symbolic int32 operands
        against the IR fragment, outputs compared at the declared accumulator entries.
        ``numerics`` is ignored (bit-precise either way). Seeded bugs are applied around this
        function by ``verify.mutations``."""
        n = shape["n"]
        frag = ir_fragment(op, shape)
        names = ("a", "b") if op == "add" else ("a",)
        t = {k: V.symbolic_tensor(k, (n,), 32) for k in names}
        ref = refinement(op, shape)
        inputs = [(int(a), int(b)) for k in names for a, b in zip(frag.address(k).reshape(-1), ref[k][1])]
        return V.proof_setup(frag, program(op, shape, t), t, out_entries=acc_entries(shape), inputs=inputs,
                             describe=lambda k: f"out[{k}]")

    def shape_strategy():
        from hypothesis import strategies as st
        return st.builds(lambda n: {"n": n}, st.integers(1, 100))

    return Mapping(
        ir_dtype="int32",
        name=name,
        ir_pattern="(add ?a ?b)" if op == "add" else "(nn.relu ?a)",
        description=f"int32 element-wise {op} on VTA's ALU (accumulator rows of 16 lanes)",
        shape_dims=("n",),
        default_shape={"n": 1024},
        side_conditions=conds,
        tolerance=0.0,
        random_inputs=random_inputs,
        reference=reference,
        program=acc_program,
        machine="ila.models.vta.port:PORT",
        shape_strategy=shape_strategy,
        edge_inputs=edge_inputs,
        ir_fragment=lambda shape: ir_fragment(op, shape),
        refinement=lambda shape: refinement(op, shape),
        match_shape=lambda attrs, shapes, out: match_shape(op, attrs, shapes, out),
        bind_operands=bind_operands,
        mutations={"add": "verify.mutations.vta:add_mutations", "relu": "verify.mutations.vta:relu_mutations"}[op],
        proof=Proof(proof_setup, {"n": 32}, {"add": "mappings.vta.alu_allsizes:add_chc_spec",
                                             "relu": "mappings.vta.alu_allsizes:relu_chc_spec"}[op],
                    cex_shapes=({"n": 16}, {"n": 17}, {"n": 40})),
    )
