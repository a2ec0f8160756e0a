"""vta.add and vta.relu: element-wise int32 operations on VTA's ALU (accumulator domain).

IR patterns: ``(add ?a ?b)`` and ``(nn.relu ?a)`` over int32 tensors (any shape, flattened to n
elements).

Compiler-IR ILA fragment: the operands row-major, then ``add`` / ``nn.relu`` (``relay_ila("int32")``:
wrapping bvadd, signed max with 0).

Accelerator fragment (``vta_program.elementwise_program``): DRAM image (one uop; a, and b, as
16-lane int32 accumulator rows, zero-padded), LOAD UOP, LOAD ACC (a at rows 0..r-1, b at r..2r-1),
ALU ADD (register operand: row i += row r + i) or ALU MAX with immediate 0, STORE, FINISH.

Refinement map: IR a[k] <-> DRAM bytes ``64 * a_base + 4k .. 4k+3`` (little-endian), b likewise;
IR out[k] <-> accumulator SRAM entry k (rows of 16 lanes).

Exact: tolerance 0; ``--method bmc`` proves the fragments equal for all int32 data.
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, SideCondition, check_mutation
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
    from ila.models.vta.driver import elementwise_program
    return elementwise_program(op, inputs["a"], inputs.get("b"))


def refinement(op: str, shape: dict) -> dict:
    from ila.models.vta.isa import MEM_ACC
    n = shape["n"]
    zeros = {"a": np.zeros(n, np.int64), "b": np.zeros(n, np.int64)}
    prog = program(op, shape, zeros)
    loads = [i.dram_base for i in prog.insns if getattr(i, "opcode", None) == 0 and getattr(i, "memory_type", None) == MEM_ACC]
    out = {"a": ("vta_dram", 64 * loads[0] + 4 * np.arange(n))}
    if op == "add":
        out["b"] = ("vta_dram", 64 * loads[1] + 4 * np.arange(n))
    out["out"] = ("vta_acc_mem", np.arange(n))
    return out


# seeded bugs for mutation testing of the proofs (tests/test_vta_proof.py): name -> description
MUTATIONS = {
    "input_element_off_by_one": "code generator: a[k] is stored where a[k + 1] belongs (4 bytes further)",
    "output_row_off_by_one": "refinement map: IR out[k] is read one accumulator row (16 entries) further",
}


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

    def run_accelerator(shape, inputs):
        return V.run_acc(program(op, shape, inputs))[:shape["n"]].astype(np.int64)

    def proof_setup(shape, *, numerics="exact", mutation=None):
        """Both fragments over shared symbolic int32 data (bit-precise; ``numerics`` is ignored).
        ``mutation``: one of MUTATIONS (MappingError for an unknown name)."""
        check_mutation(name, mutation, MUTATIONS)
        ref = refinement(op, shape)
        n = shape["n"]
        prog = program(op, shape, {"a": np.zeros(n, np.int64), "b": np.zeros(n, np.int64)})
        names = ("a", "b") if op == "add" else ("a",)
        addrs = {k: ref[k][1] for k in names}
        out = ref["out"][1]
        if mutation == "input_element_off_by_one":
            addrs["a"] = addrs["a"] + 4
        elif mutation == "output_row_off_by_one":
            out = np.asarray(out) + 16
        return V.proof_setup(ir_fragment(op, shape), prog, byte_addrs=addrs,
                             widths={k: 32 for k in names}, out_acc_index=out,
                             describe=lambda k: f"out[{k}]")

    def shape_strategy():
        from hypothesis import strategies as st
        return st.builds(lambda n: {"n": n}, st.integers(1, 100))

    return Mapping(
        name=name,
        ir_pattern="(add ?a ?b)" if op == "add" else "(nn.relu ?a)",
        description=f"int32 element-wise {op} on VTA's ALU (accumulator rows of 16 lanes)",
        shape_dims=("n",),
        default_shape={"n": 1024},
        side_conditions=conds,
        tolerance=0.0,
        random_inputs=random_inputs,
        reference=reference,
        run_accelerator=run_accelerator,
        shape_strategy=shape_strategy,
        edge_inputs=edge_inputs,
        extras={"ir_fragment": lambda shape: ir_fragment(op, shape), "refinement": lambda shape: refinement(op, shape),
                "proof": proof_setup, "proof_shape": {"n": 32}, "mutations": MUTATIONS,
                "depends_on": ("ila.models.vta.model", "ila.models.vta.driver", "ila.models.relay.model")},
    )
