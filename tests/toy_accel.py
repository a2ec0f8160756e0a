"""A toy fourth accelerator, declared entirely outside the project's packages (for
tests/test_toy_accelerator.py): its ILA model, its machine port (fragment writer, parser, runner),
one mapping (``toy.relu``: int32 ReLU of up to 64 elements in place) with its code generator,
proof setup and a seeded bug. The compiler must offload, certify, emit and co-simulate it with no
edit of compile/.

The machine: inputs ``wr`` (1 bit), ``rd`` (1 bit), ``addr`` (8 bits), ``data_in`` (32 bits);
states ``mem`` (64 words of 32 bits), ``n`` (8 bits), ``i`` (8 bits), ``busy`` (Bool),
``data_out`` (32 bits). Instructions: WRITE (``wr``, addr < 64: mem[addr] = data_in), SET_N (``wr``,
addr 0x80: n = data_in[7:0]), START (``wr``, addr 0x81, not busy: i = 0, busy), READ (``rd``,
addr < 64: data_out = mem[addr]); the child LOOP (valid while busy) runs STEP (i < n: mem[i] =
max(mem[i], 0) signed, i += 1) and FINISH (i >= n: busy = false).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ila import FALSE, TRUE, Ila, bv_const, extract, ite, load, store
from ila.models.port import AccProgram, MachinePort, hex_field
from mappings.base import Mapping, MmioPort, Proof, ProofSetup, Side, SideCondition, symbolic_data
from mappings.common import IrFragment, Layout, ir_commands

SET_N, START = 0x80, 0x81


@lru_cache(maxsize=1)
def build() -> Ila:
    m = Ila("toy")
    wr, rd = m.new_bv_input("wr", 1), m.new_bv_input("rd", 1)
    addr, din = m.new_bv_input("addr", 8), m.new_bv_input("data_in", 32)
    mem = m.new_mem_state("mem", 8, 32, size=64)
    n, i = m.new_bv_state("n", 8), m.new_bv_state("i", 8)
    busy = m.new_bool_state("busy")
    dout = m.new_bv_state("data_out", 32)
    for s in (n, i, dout):
        m.add_init(s.eq(0))
    m.add_init(~busy)
    m.set_valid(wr.eq(1) | rd.eq(1))
    w = m.new_instr("WRITE")
    w.set_decode(wr.eq(1) & rd.eq(0) & addr.ult(64))
    w.set_update(mem, store(mem, addr, din))
    s = m.new_instr("SET_N")
    s.set_decode(wr.eq(1) & rd.eq(0) & addr.eq(SET_N))
    s.set_update(n, extract(din, 7, 0))
    st = m.new_instr("START")
    st.set_decode(wr.eq(1) & rd.eq(0) & addr.eq(START) & ~busy)
    st.set_update(i, bv_const(0, 8))
    st.set_update(busy, TRUE)
    r = m.new_instr("READ")
    r.set_decode(rd.eq(1) & wr.eq(0) & addr.ult(64))
    r.set_update(dout, load(mem, addr))
    loop = m.new_child("LOOP")
    loop.set_valid(busy)
    step = loop.new_instr("STEP")
    step.set_decode(i.ult(n))
    x = load(mem, i)
    step.set_update(mem, store(mem, i, ite(x.slt(0), bv_const(0, 32), x)))
    step.set_update(i, i + 1)
    fin = loop.new_instr("FINISH")
    fin.set_decode(i.uge(n))
    fin.set_update(busy, FALSE)
    return m


# ----------------------------------------------------------------------------- the machine port
def entry_of(cmd: dict) -> dict:
    a = f"0x{int(cmd['addr']):02X}"
    if cmd.get("rd"):
        return {"mode": "R", "addr": a}
    return {"mode": "W", "addr": a, "data": f"0x{int(cmd['data_in']):08X}"}


def command_of(e: dict, k: int) -> dict:
    a = hex_field(e, "addr", k, 2)
    if e["mode"] == "R":
        return {"wr": 0, "rd": 1, "addr": a}
    return {"wr": 1, "rd": 0, "addr": a, "data_in": hex_field(e, "data", k, 8)}


def execute(sim, commands, hints: dict) -> list:
    cmds = commands.rows() if hasattr(commands, "rows") else list(commands)
    reads = []
    for c in cmds:
        sim.step(c)
        if c.get("rd"):
            reads.append(np.array([sim.state["data_out"]], dtype=np.uint32).view(np.int32))
    return reads


PORT = MachinePort(name="toy", build=build, entry_of=entry_of, command_of=command_of,
                   is_read=lambda c: c.get("rd") == 1,
                   read_data=lambda state: np.array([state["data_out"]], dtype=object),
                   execute=execute, proof_numerics="exact", memories=("mem",), modes=("W", "R"))


# ----------------------------------------------------------------------------- the mapping
def _address(k: int) -> int:
    """Where the code generator stores element k (a seeded bug moves it)."""
    return k


def acc_program(shape, inputs) -> AccProgram:
    """WRITE every element (ints, or 32-bit terms in proofs), SET_N, START, READ every element back."""
    a = list(np.asarray(inputs["a"], dtype=object).reshape(-1))
    n = shape["n"]
    cmds = [{"wr": 1, "rd": 0, "addr": _address(k), "data_in": (v if not isinstance(v, (int, np.integer))
                                                                 else int(v) & 0xFFFFFFFF)} for k, v in enumerate(a)]
    cmds += [{"wr": 1, "rd": 0, "addr": SET_N, "data_in": n}, {"wr": 1, "rd": 0, "addr": START, "data_in": 0}]
    cmds += [{"wr": 0, "rd": 1, "addr": k} for k in range(n)]

    def readback(reads):
        vals = [r[0] for r in reads]
        if all(isinstance(v, (int, np.integer)) for v in vals):
            return np.array(vals, dtype=np.int64)
        return np.array(vals, dtype=object)
    return AccProgram(cmds, readback)


def ir_fragment(shape) -> IrFragment:
    n = shape["n"]
    lay = Layout()
    lay.add("a", (n,))
    lay.add("out", (n,))
    return IrFragment({"a": lay.regions["a"]}, [("nn.relu", [lay.base("a"), lay.base("out"), n])], lay.regions["out"],
                      numerics="int32")


def proof_setup(shape, *, numerics="exact"):
    """BMC: the relay ILA's int32 ReLU against the exact stream the generator emits on symbolic
    elements, read back through the READ port."""
    from ila.models.relay.model import relay_ila
    n = shape["n"]
    frag = ir_fragment(shape)
    d = symbolic_data(n, 32, prefix="a_")
    prog = acc_program(shape, {"a": np.array(d, dtype=object)})
    port = MmioPort(is_read=PORT.is_read, read_data=PORT.read_data)
    return ProofSetup(Side(relay_ila("int32", tensor_entries=1 << 8), ir_commands(frag, {"a": d}), "tensor"),
                      Side(build(), prog.commands, "mem", port=port), d,
                      [(frag.output[0] + k, k) for k in range(n)], readback=lambda reads: np.array(
                          [r[0] for r in reads], dtype=object),
                      covers=("codegen-bytes", "order", "model-loops", "read-back"))


def mutations():
    from verify.mutations import Mutation, Patch
    return {"address_off_by_one": Mutation(
        "address_off_by_one", "codegen-bytes", "generator: element k stored at address k + 1",
        (Patch("toy_accel", "_address", lambda f: (lambda k: k + 1)),))}


MAPPING = Mapping(
    name="toy.relu",
    ir_pattern="(nn.relu ?a)",
    ir_dtype="int32",
    description="int32 ReLU of up to 64 elements on the toy accelerator (in place)",
    shape_dims=("n",),
    default_shape={"n": 16},
    side_conditions=(SideCondition("fits the memory", lambda s: 1 <= s["n"] <= 64, "1 <= n <= 64 elements"),),
    tolerance=0.0,
    random_inputs=lambda shape, rng: {"a": rng.integers(-(1 << 31), 1 << 31, shape["n"], dtype=np.int64)},
    reference=lambda shape, inputs: np.maximum(np.asarray(inputs["a"], np.int64), 0),
    program=acc_program,
    machine="toy_accel:PORT",
    ir_fragment=ir_fragment,
    match_shape=lambda attrs, shapes, out: {"n": int(np.prod(out))},
    bind_operands=lambda shape, operands: {"a": np.asarray(operands[0]).reshape(-1)},
    proof=Proof("toy_accel:proof_setup", {"n": 4}),
    mutations="toy_accel:mutations",
)
