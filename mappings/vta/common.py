"""Pieces shared by the VTA mappings: running a generated program on the VTA ILA, reading the
int32 results from the accumulator SRAM, and building the proof setup (both fragments over shared
symbolic data) for ``verify.bmc``.

Where the result is compared. VTA computes in the int32 accumulator SRAM; its STORE truncates each
lane to int8 on the way to DRAM. The mappings here are the int32 operations the code generator
offloads (dense with int8 operands and int32 accumulation; int32 add and relu), so the refinement
map on outputs relates IR output element k to accumulator SRAM entry ``row * 16 + lane`` (where
the int32 result stays for the next fragment, e.g. a requantising ALU epilogue and the STORE);
the programs still end with their STORE and FINISH, unchanged from the generators.

Proof data. The DRAM image of a generated program is written word by word (8 bytes per
virtual-memory write) over the whole range the program reads, since DRAM is symbolic in a proof;
bytes that hold IR input elements are the shared data symbols (an int8 symbol, or the four bytes of
an int32 symbol), all others the generator's constants (uops, padding).
"""
from __future__ import annotations

import numpy as np

from ila import concat, extract, sext
from ila.models.relay.model import relay_ila
from mappings.base import ProofSetup, Side, SideCondition, symbolic_data
from mappings.common import IrFragment, ir_commands


def cfg():
    from ila.models.vta.isa import DEFAULT_CONFIG
    return DEFAULT_CONFIG


_SIMS: dict = {}


def run_acc(prog) -> np.ndarray:
    """Run a generated program on the VTA ILA simulator; return the accumulator SRAM (int32)."""
    from ila.models.vta.model import build_vta
    from ila.models.vta.driver import run_on_ila
    from mappings.common import fresh_simulator
    sim = run_on_ila(prog, sim=fresh_simulator(build_vta(prog.cfg)))
    return sim.memory("vta_acc_mem").astype(np.uint64).astype(np.uint32).view(np.int32)


def int8_data(shape, rng):
    return rng.integers(-128, 128, shape).astype(np.int64)


def int32_data(shape, rng):
    return rng.integers(-(1 << 31), 1 << 31, shape, dtype=np.int64)


def ir_int_fragment(frag: IrFragment) -> IrFragment:
    frag.numerics = "int32"
    return frag


def acc_row_fits(rows_of, what: str) -> SideCondition:
    return SideCondition("result fits the accumulator SRAM", lambda s: rows_of(s) <= cfg().depth("acc"),
                         f"{what} must fit the {cfg().depth('acc')}-row accumulator SRAM at once "
                         f"(the int32 result is read there)")


def _dram_words(image: np.ndarray, upto: int, placed: dict):
    """Virtual-memory write commands for bytes [0, upto): ``placed`` maps byte address -> 8-bit
    expression (data); other bytes are the image's constants."""
    from ila import bv_const
    from ila.models.vta.model import VIR_WR_DRAM
    cmds = []
    for w in range(-(-upto // 8)):
        parts = []
        for b in reversed(range(8)):
            a = 8 * w + b
            parts.append(placed[a] if a in placed else bv_const(int(image[a]) if a < image.size else 0, 8))
        if all(p.is_const for p in parts):
            val = int.from_bytes(bytes(int(p.payload) for p in reversed(parts)), "little")
        else:
            val = concat(*parts)
        cmds.append({"vta_vir_mem_mode_in": VIR_WR_DRAM, "vta_vir_mem_addr_in": 8 * w, "vta_vir_mem_data_in": val})
    return cmds


def proof_setup(frag: IrFragment, prog, *, byte_addrs: dict, widths: dict, out_acc_index: np.ndarray,
                describe=None) -> ProofSetup:
    """Both fragments over shared symbolic data. ``byte_addrs[name]``: DRAM byte address of the
    least significant byte of every element of IR input ``name`` (flat, IR order); ``widths[name]``:
    8 (int8 element, sign-extended on the IR side) or 32; ``out_acc_index``: accumulator SRAM
    entry of every IR output element (flat, IR order)."""
    from ila.models.vta.model import build_vta
    from ila.models.vta.isa import encode
    data, ir_vals, placed = [], {}, {}
    for name, addrs in byte_addrs.items():
        addrs = np.asarray(addrs).reshape(-1)
        wd = widths[name]
        syms = symbolic_data(addrs.size, wd, prefix=f"{name}_")
        data += syms
        ir_vals[name] = [sext(s, 32) if wd == 8 else s for s in syms]
        for s, a in zip(syms, addrs):
            for j in range(wd // 8):
                placed[int(a) + j] = s if wd == 8 else extract(s, 8 * j + 7, 8 * j)
    upto = max(placed) + 1
    acc_cmds = _dram_words(prog.dram, max(upto, prog.out_addr), placed)
    acc_cmds += [{"vta_top_instr_in": encode(i, prog.cfg)} for i in prog.insns]
    ir = relay_ila("int32", tensor_entries=1 << 16)
    out_base = frag.output[0]
    outs = [(out_base + k, int(a)) for k, a in enumerate(np.asarray(out_acc_index).reshape(-1))]
    return ProofSetup(Side(ir, ir_commands(frag, ir_vals), "tensor"),
                      Side(build_vta(prog.cfg), acc_cmds, "vta_acc_mem"), data, outs,
                      describe_output=describe or (lambda k: f"output element {k}"))
