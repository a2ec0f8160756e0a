"""Code generation: every accelerator call of a compiled program becomes its mapping's MMIO stream
(the exact stream its proof or simulation certificate is about: :attr:`Mapping.codegen`), written
as a 3LA-style program fragment, one JSON file per call.

A chain of calls that the compiler fused on its chain mapping's certificate (:mod:`compile.chains`,
paper Figure 7 (e)-(f)) is emitted as one program (one store, the calls, one load) by the chain
mapping's code generator, with that certificate.

Fragment format (per entry, in stream order): ``{"mode": "W", "addr": "0x...", "data": "0x..."}``
for an MMIO write (data: the 128-bit word, byte k of the bus at bits 8k..8k+7), ``{"mode": "R",
"addr": ...}`` for a read, ``{"mode": "Q"}`` for waiting on the interrupt, ``{"mode": "M", "addr":
..., "data": ...}`` for VTA's 64-bit virtual-memory (DRAM image) writes and ``{"mode": "I",
"data": ...}`` for a 128-bit VTA instruction.
"""
from __future__ import annotations

import json
from pathlib import Path

from compile.chains import chain_stream
from compile.errors import CompileError

def _word(cmd: dict, prefix: str) -> int:
    return sum(int(cmd[f"{prefix}{k}"]) << (8 * k) for k in range(16))


def entry(cmd: dict) -> dict:
    """One simulator command as a fragment entry (module docstring); CompileError for a command of
    no known accelerator interface (naming its fields)."""
    if cmd.get("wait_irq"):
        return {"mode": "Q"}
    for wr, rd, addr, data in (("if_axi_wr", "if_axi_rd", "addr_in", "data_in_"),
                               ("top_slave_if_wr", "top_slave_if_rd", "top_slave_addr_in", "top_slave_data_in_")):
        if wr in cmd:
            if cmd.get(rd):
                return {"mode": "R", "addr": hex(int(cmd[addr]))}
            return {"mode": "W", "addr": hex(int(cmd[addr])), "data": f"0x{_word(cmd, data):032x}"}
    if "vta_vir_mem_mode_in" in cmd:
        return {"mode": "M", "addr": hex(int(cmd["vta_vir_mem_addr_in"])),
                "data": f"0x{int(cmd['vta_vir_mem_data_in']):016x}"}
    if "vta_top_instr_in" in cmd:
        return {"mode": "I", "data": f"0x{int(cmd['vta_top_instr_in']):032x}"}
    raise CompileError(f"no fragment form for the command with fields {sorted(cmd)}")


def _cert(c: dict) -> dict:
    return {k: c.get(k) for k in ("method", "result", "scope", "digest", "date")}


def fragment(step, stream: list[dict], *, fused: tuple = (), decision=None) -> dict:
    """The 3LA-style program fragment of one call, or of a fused chain (``fused`` its steps,
    ``decision`` the gate's decision for the chain mapping, whose certificate the entry states)."""
    from mappings.base import format_shape
    out = {"mapping": step.mapping, "shape": format_shape(step.shape), "step": step.index,
           "source": step.value.source, "certificate": _cert(step.certificate),
           "chain": list(step.chain), "fused_steps": [s.index for s in fused]}
    if decision is not None:
        out["fused"] = {"mapping": decision.mapping, "shape": decision.shape, "certificate": _cert(decision.certificate)}
    out["program fragment"] = [entry(c) for c in stream]
    return out


def emit(compiled, inputs: dict, directory) -> list[Path]:
    """Write one fragment file per call (per fused chain) of ``compiled`` for ``inputs`` (the
    operand data of each call is what the program computes on them; co-simulated to get it):
    ``DIR/NNN_<mapping>.json``, readable text (one entry per line). Returns the files written."""
    from compile.offload import mapping_inputs
    from compile.runtime.cosim import cosimulate
    from mappings.registry import get
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CompileError(f"--emit {directory}: cannot create the directory ({e.strerror})") from None
    values: dict = {}
    res = cosimulate(compiled, inputs, keep=values)
    program = compiled.program
    in_chain = {c[0]: (c, d) for c, d in compiled.fused}
    skip = {i for c, _ in in_chain.values() for i in c[1:]}
    files = []
    for s in program.calls():
        if s.index in skip:
            continue
        args = [values[a] for a in s.args]
        if s.index in in_chain:
            chain, decision = in_chain[s.index]
            steps = [program.steps[i] for i in chain]
            frag = fragment(s, chain_stream(steps, args[0]), fused=steps, decision=decision)
        elif get(s.mapping).codegen is None:
            frag = fragment(s, [])
            frag["program fragment"] = None
            frag["note"] = f"{s.mapping} declares no code generator: its stream is built inside its runner"
        else:
            frag = fragment(s, get(s.mapping).codegen(s.shape, mapping_inputs(s.mapping, s.shape, args)))
        path = d / f"{s.index:04d}_{s.mapping}.json"
        head = {k: v for k, v in frag.items() if k != "program fragment"}
        body = frag["program fragment"]
        text = json.dumps(head, indent=1)[:-2] + ',\n "program fragment": ' + (
            "null\n}\n" if body is None else "[\n" + ",\n".join("  " + json.dumps(e) for e in body) + "\n ]\n}\n")
        path.write_text(text)
        files.append(path)
    del res
    return files
