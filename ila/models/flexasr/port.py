"""FlexASR's host interface (:class:`ila.models.port.MachinePort`): the AXI slave port of the 3LA
FlexASR model and its program fragments.

Simulator commands: ``{"if_axi_wr": 1, "if_axi_rd": 0, "addr_in": A, "data_in_0".."data_in_15": bytes}``
(an MMIO write of one 128-bit word, byte k at bits 8k..8k+7), ``{"if_axi_rd": 1, "addr_in": A}`` (an
MMIO read; its 16 bytes are the states ``data_out_0..15`` after it), ``{"wait_irq": True}`` (wait for
``top_interrupt_request``). In a :class:`~ila.commands.CommandTable` a row that neither writes nor
reads is a wait.

Fragment entries (3LA JSON, reference §4): ``{"mode": "W", "addr": "0x<=8 hex digits", "data":
"0x<=32 hex digits"}``, ``{"mode": "R", "addr": ...}``, ``{"mode": "Q"}``; an ``instr_No.`` field is
allowed and ignored. Default proof numerics: ``uf`` (AdaptivFloat arithmetic uninterpreted with
checked axioms).
"""
from __future__ import annotations

from ila.models.port import MachinePort, word_hex


def _build():
    from ila.models.flexasr import shared_model
    return shared_model()


def entry_of(cmd: dict) -> dict:
    if cmd.get("wait_irq") or not (cmd.get("if_axi_wr") or cmd.get("if_axi_rd")):
        return {"mode": "Q"}
    addr = f"0x{int(cmd['addr_in']):08X}"
    if cmd.get("if_axi_rd"):
        return {"mode": "R", "addr": addr}
    return {"mode": "W", "addr": addr, "data": word_hex([cmd.get(f"data_in_{k}", 0) for k in range(16)])}


def command_of(e: dict, k: int) -> dict:
    from ila.models.flexasr import isa
    mode = e["mode"]
    if mode == "Q":
        return {"wait_irq": True}
    addr = int(isa._hex_field(e, "addr", k, 8), 16)
    cmd = {"if_axi_wr": int(mode == "W"), "if_axi_rd": int(mode == "R"), "addr_in": addr}
    if mode == "W":
        for j, b in enumerate(isa.word_bytes(isa.data_digits(e, k))):
            cmd[f"data_in_{j}"] = b
    return cmd


def _execute(sim, commands, hints: dict) -> list:
    from ila.models.flexasr.driver import execute
    return execute(sim, commands, hints.get("modes"))


def _read_data(state):
    from ila.models.flexasr.driver import read_word
    return read_word(state)


PORT = MachinePort(
    name="flexasr",
    build=_build,
    entry_of=entry_of,
    command_of=command_of,
    is_read=lambda c: c.get("if_axi_rd") == 1,
    read_data=_read_data,
    execute=_execute,
    irq="top_interrupt_request",
    proof_numerics="uf",
    memories=("gb_core_large_buffer", "gb_core_small_buffer"),
    modes=("W", "R", "Q"),
)
