"""VTA's host interface (:class:`ila.models.port.MachinePort`): the VTA ILA's instruction and
virtual-memory ports, the driver's read-back of the accumulator, and their program fragments.

Simulator commands (the ILA's inputs, ``ila.models.vta.model``): ``{"vta_vir_mem_mode_in": 1,
"vta_vir_mem_addr_in": A, "vta_vir_mem_data_in": D}`` (8 bytes of DRAM at byte address A, D
little-endian) and ``{"vta_top_instr_in": W}`` (one 128-bit VTA instruction). Two host commands are
not inputs of the ILA and are executed by the runner: ``{"vta_read_acc": r}`` reads row r of the
accumulator SRAM (its ``lanes("acc")`` int32 lanes, lane 0 first: the VTA model has no MMIO read,
so the driver's read-back observes the SRAM the result sits in, as the proofs do) and
``{"vta_reset": True}`` returns the machine to its reset state (DRAM zero, SRAMs zero: the next
pass of a multi-pass program starts as the first did).

The runner takes a list of commands or a ``driver.Stream`` (an integer program's stream, its DRAM
writes one table); tables of disjoint DRAM writes are applied at once (``driver.fill_dram``, the
model's ``vta_vir_mem_wr`` on every row; else the simulator runs them), and a run of accumulator
reads is taken from one look at the SRAM.

Fragment entries: ``{"mode": "M", "addr": "0x<=8 hex digits", "data": "0x<=16 hex digits"}``,
``{"mode": "I", "data": "0x<=32 hex digits"}``, ``{"mode": "A", "addr": "0x<row>"}``,
``{"mode": "X"}`` (reset). Default proof numerics: ``exact`` (VTA's int8 x int8 -> int32
arithmetic is bit-precise in every proof).
"""
from __future__ import annotations

import numpy as np

from ila.models.port import MachinePort, hex_field




def entry_of(cmd: dict) -> dict:
    if cmd.get("vta_reset"):
        return {"mode": "X"}
    if "vta_read_acc" in cmd:
        return {"mode": "A", "addr": f"0x{int(cmd['vta_read_acc']):X}"}
    if "vta_vir_mem_mode_in" in cmd:
        return {"mode": "M", "addr": f"0x{int(cmd['vta_vir_mem_addr_in']):08X}",
                "data": f"0x{int(cmd['vta_vir_mem_data_in']):016X}"}
    return {"mode": "I", "data": f"0x{int(cmd['vta_top_instr_in']):032X}"}


def command_of(e: dict, k: int) -> dict:
    from ila.models.vta.model import VIR_WR_DRAM
    mode = e["mode"]
    if mode == "X":
        return {"vta_reset": True}
    if mode == "A":
        return {"vta_read_acc": hex_field(e, "addr", k, 8)}
    if mode == "M":
        return {"vta_vir_mem_mode_in": VIR_WR_DRAM, "vta_vir_mem_addr_in": hex_field(e, "addr", k, 8),
                "vta_vir_mem_data_in": hex_field(e, "data", k, 16)}
    return {"vta_top_instr_in": hex_field(e, "data", k, 32)}


def _executor(cfg):
    """The runner of machines of configuration ``cfg`` (its accumulator lanes)."""
    def execute(sim, commands, hints: dict) -> list:
        """Run a stream from the simulator's state: ILA commands in batches, host reads of accumulator
        rows (int32 lanes) and resets between them; the data of every read. A ``driver.Stream``
        runs piece by piece, its tables of DRAM writes as they are."""
        from ila.commands import CommandTable
        from ila.models.vta.driver import Stream, fill_dram
        if isinstance(commands, Stream):
            pieces = commands.pieces
        else:
            pieces = [commands.rows() if hasattr(commands, "rows") else commands]
        reads: list = []
        at = 0
        for piece in pieces:
            if isinstance(piece, CommandTable):
                if not fill_dram(sim, piece):
                    sim.run(piece)
            else:
                _run_list(sim, piece, reads, at, cfg.lanes("acc"))
            at += len(piece)
        return reads
    return execute


def _run_list(sim, cmds: list, reads: list, at: int, lanes: int) -> None:
    """Run the list ``cmds`` (command ``at`` of the stream first): ILA commands, the long runs of DRAM
    writes as command tables (``driver.write_runs``); host reads (a run of reads is taken from one
    look at the accumulator: the state does not change between them) append to ``reads``."""
    from ila.commands import CommandTable
    from ila.errors import SimulationError
    from ila.models.vta.driver import fill_dram, write_runs
    n = len(cmds)
    i = 0
    for h in [k for k, c in enumerate(cmds) if "vta_read_acc" in c or ("vta_reset" in c and c["vta_reset"])] + [n]:
        if h < i:                               # read by the run of reads before
            continue
        if i < h:
            for piece in write_runs(cmds[i:h]):
                if not (isinstance(piece, CommandTable) and fill_dram(sim, piece)):
                    sim.run(piece)
        if h == n:
            break
        if "vta_read_acc" in cmds[h]:
            acc = sim.memory("vta_acc_mem")
            rows_of = acc.shape[0] // lanes
            k, rows = h, []
            while k < n and "vta_read_acc" in cmds[k]:
                r = int(cmds[k]["vta_read_acc"])
                if not 0 <= r < rows_of:
                    raise SimulationError(f"command {at + k}: accumulator row {r} is beyond the {rows_of} rows "
                                          "of the accumulator SRAM")
                rows.append(r)
                k += 1
            reads.extend(acc[:rows_of * lanes].reshape(rows_of, lanes)[rows].astype(np.uint32).view(np.int32))
            i = k
            continue
        sim.reset()
        i = h + 1


_PORTS: dict = {}


def port_for(cfg) -> MachinePort:
    """The port of VTA machines of configuration ``cfg`` (:class:`~ila.models.vta.isa.VtaConfig`:
    SRAM depths and widths change the instruction fields and the machine), one per configuration."""
    if cfg not in _PORTS:
        from ila.models.vta.isa import DEFAULT_CONFIG
        from ila.models.vta.model import build_vta
        _PORTS[cfg] = MachinePort(
            name="vta" if cfg == DEFAULT_CONFIG else f"vta[{cfg}]",
            build=lambda: build_vta(cfg),
            entry_of=entry_of,
            command_of=command_of,
            is_read=lambda c: "vta_read_acc" in c,
            read_data=None,          # no MMIO read: the proofs compare the accumulator SRAM (mappings.vta.common)
            execute=_executor(cfg),
            proof_numerics="exact",
            memories=(),
            modes=("M", "I", "A", "X"),
        )
    return _PORTS[cfg]


def _default() -> MachinePort:
    from ila.models.vta.isa import DEFAULT_CONFIG
    return port_for(DEFAULT_CONFIG)


PORT = _default()   # VTA's vta_config.json defaults (ila.models.vta.isa.DEFAULT_CONFIG)
