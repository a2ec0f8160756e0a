"""HLSCNN's host interface (:class:`ila.models.port.MachinePort`): the AXI slave port of the HLSCNN
ILA and its program fragments. :data:`PORT` is the design with 16-bit weights, :data:`PORT_W8` the
original one with 8-bit weights (the same interface; the weight format differs).

Simulator commands: ``{"top_slave_if_wr": 1, "top_slave_if_rd": 0, "top_slave_addr_in": A,
"top_slave_data_in_0".."_15": bytes}`` (a 16-byte write: virtual SoC memory, scratchpads,
configuration registers) and ``{"top_slave_if_wr": 0, "top_slave_if_rd": 1, "top_slave_addr_in": A}``
(a 16-byte read; its bytes are the states ``top_slave_rd_data_0..15`` after it).

Fragment entries (3LA-style JSON): ``{"mode": "W", "addr": "0x<=8 hex digits", "data": "0x<=32 hex
digits"}`` (byte k of the beat at bits 8k..8k+7) and ``{"mode": "R", "addr": ...}``. Default proof
numerics: ``uf`` (the fixed-point MAC and roundings uninterpreted with checked axioms).

Execution hints (:class:`ila.models.port.AccProgram.hints`): ``pull`` = (a, b), the range of the
weight-pull commands (SocMemBaseAddr / scratchpad-0 write pairs) that the runner applies at once
(``driver.pull_beats``, checked equal to stepping them) or else steps one by one instead of trying
to batch them; the same commands in the same order either way. Runs of SoC-memory writes and of
scratchpad reads are applied at once wherever they occur (:mod:`ila.models.hlscnn.beats`).
"""
from __future__ import annotations

import numpy as np

from ila.commands import CommandTable
from ila.models.port import MachinePort, hex_field, word_bytes, word_hex


def _builder(bits: int):
    def build():
        from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn
        return build_hlscnn(bits, *MACHINE_LANES)
    return build


def entry_of(cmd: dict) -> dict:
    addr = f"0x{int(cmd['top_slave_addr_in']):08X}"
    if cmd.get("top_slave_if_rd"):
        return {"mode": "R", "addr": addr}
    return {"mode": "W", "addr": addr, "data": word_hex([cmd.get(f"top_slave_data_in_{k}", 0) for k in range(16)])}


def command_of(e: dict, k: int) -> dict:
    addr = hex_field(e, "addr", k, 8)
    if e["mode"] == "R":
        return {"top_slave_if_wr": 0, "top_slave_if_rd": 1, "top_slave_addr_in": addr}
    cmd = {"top_slave_if_wr": 1, "top_slave_if_rd": 0, "top_slave_addr_in": addr}
    for j, b in enumerate(word_bytes(hex_field(e, "data", k, 32))):
        cmd[f"top_slave_data_in_{j}"] = b
    return cmd


def _is_read_column(commands) -> np.ndarray:
    if isinstance(commands, CommandTable):
        return np.asarray(commands.columns.get("top_slave_if_rd", np.zeros(len(commands), np.int64))) != 0
    return np.array([bool(c.get("top_slave_if_rd")) for c in commands], dtype=bool)


def execute(sim, commands, hints: dict) -> list:
    """Run a stream from the simulator's state: runs of writes (a leading run of SoC-memory writes
    applied at once by ``beats.soc_writes``, the ``pull`` range by ``driver.pull_beats`` or stepped
    one command at a time, the rest batched by the simulator), runs of reads gathered at once by
    ``beats.read_beats`` or observed; the 16 bytes of every read (uint8 arrays). The fast paths are
    checked equal to stepping (``tests/test_hlscnn_beats.py``, ``tests/test_hlscnn_pull.py``)."""
    from ila.models.hlscnn.beats import read_beats, soc_writes
    from ila.models.hlscnn.driver import READ_DATA, _as_table, pull_beats
    rd = _is_read_column(commands)
    n = len(commands)
    a, b = hints.get("pull", (0, 0))
    if not 0 <= a <= b <= n or rd[a:b].any():
        a = b = 0
    reads: list = []
    cuts = [0, *(np.flatnonzero(rd[1:] != rd[:-1]) + 1).tolist(), n] if n else [0]
    for i, j in zip(cuts, cuts[1:]):
        seg = commands[i:j]
        if rd[i]:
            got = read_beats(sim, seg)
            if got is None:
                tab = seg if isinstance(seg, CommandTable) else _as_table(seg)
                got = [np.asarray(v, dtype=np.uint8) for v in sim.run(tab, observe=READ_DATA)[1]]
            reads += got
            continue
        for lo, hi, step in ((i, max(i, min(a, j)), False), (max(i, a), min(j, b), True),
                             (max(i, min(b, j)), j, False)):
            if hi <= lo:
                continue
            part = commands[lo:hi]
            if step:
                if not pull_beats(sim, part):
                    for c in (part.rows() if isinstance(part, CommandTable) else part):
                        sim.step(c)
            else:
                done = soc_writes(sim, part)
                rest = part[done:]
                if len(rest):
                    sim.run(rest if isinstance(rest, CommandTable) else _as_table(rest))
    return reads


def _read_data(state):
    from ila.models.hlscnn.driver import read_beat
    return read_beat(state)


def _port(bits: int) -> MachinePort:
    return MachinePort(
        name="hlscnn",
        build=_builder(bits),
        entry_of=entry_of,
        command_of=command_of,
        is_read=lambda c: c.get("top_slave_if_rd") == 1,
        read_data=_read_data,
        execute=execute,
        proof_numerics="uf",
        memories=("scratch_pad_1",),
        modes=("W", "R"),
    )


PORT = _port(16)        # the updated design: 16-bit weights (Q16.14)
PORT_W8 = _port(8)      # the original design: 8-bit weights (Q8.6)
