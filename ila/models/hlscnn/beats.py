"""Numeric fast paths for runs of HLSCNN's 16-byte AXI-slave commands, each checked equal to
stepping the same commands on the ILA simulator (every state and memory, the step count) by
``tests/test_hlscnn_beats.py``, with a seeded bug per path that the test catches.

- :func:`soc_writes`: a run of ``VIR_MEM_WR`` writes (16 data bytes into the virtual SoC memory at
  ``addr[23:0] - VIR_MEM_BASE``), applied at once.
- :func:`read_beats`: a run of ``SPAD0_DATA_RD`` / ``SPAD1_DATA_RD`` reads (16 bytes of a
  scratchpad at ``addr[23:0] - base``), gathered at once; the read-data states end at the last read.

Each applies only where its instruction is the one the model decodes for every command of the run
and nothing else can fire: no convolution child running, no simulator recording its trace, every
input within its width, every byte inside its memory, written beats that do not overlap (the model
stores them in order; at once they must not depend on it). Elsewhere it changes nothing and the
caller steps the commands (source of the semantics: :func:`ila.models.hlscnn.model.build_hlscnn`).
"""
from __future__ import annotations

import numpy as np

from ila.commands import CommandTable
from ila.models.hlscnn.model import ADDR_IN_MAX, SPAD0_BASE, SPAD1_BASE, SPAD_BYTES, VIR_MEM_BASE

BEAT_KEYS = ("top_slave_if_wr", "top_slave_if_rd", "top_slave_addr_in") + tuple(f"top_slave_data_in_{i}"
                                                                              for i in range(16))
READ_DATA = tuple(f"top_slave_rd_data_{i}" for i in range(16))   # the states holding an MMIO read's 16 bytes
BEAT_BUGS = ("soc_write_bytes_reversed", "read_gets_next_beat")  # seeded bugs, for the differential test
_LANES = np.arange(16)


def beat_rows(commands, *, table_only: bool = False) -> np.ndarray | None:
    """``commands`` (a :class:`~ila.commands.CommandTable` with columns among :data:`BEAT_KEYS`, a
    missing column being 0; or, unless ``table_only``, a list of dicts with exactly those keys) as
    (n, 19) int64 rows in :data:`BEAT_KEYS` order; None when they are not such commands, or a value
    is negative or does not fit its input (1 bit for the strobes, 32 for the address, 8 per byte)."""
    n = len(commands)
    if isinstance(commands, CommandTable):
        if not set(commands.columns) <= set(BEAT_KEYS):
            return None
        rows = np.zeros((n, len(BEAT_KEYS)), np.int64)
        for j, k in enumerate(BEAT_KEYS):
            col = commands.columns.get(k)
            if col is not None:
                col = np.asarray(col)
                if col.dtype.kind not in "iub" or (col.dtype.kind == "u" and col.dtype.itemsize == 8
                                                   and col.size and col.max() >= 1 << 63):
                    return None
                rows[:, j] = col
    else:
        if table_only or any(len(c) != len(BEAT_KEYS) for c in commands):
            return None
        try:
            rows = np.array([[c[k] for k in BEAT_KEYS] for c in commands])
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        if rows.dtype.kind not in "iu" or rows.shape != (n, len(BEAT_KEYS)):
            return None
        rows = rows.astype(np.int64)
    if (rows < 0).any() or (rows[:, :2] > 1).any() or (rows[:, 2] >> 32).any() or (rows[:, 3:] > 0xFF).any():
        return None
    return rows


def soc_writes(sim, commands, *, bug: str | None = None) -> int:
    """Apply the longest prefix of ``commands`` that is a run of ``VIR_MEM_WR`` writes (write strobe
    only, ``VIR_MEM_BASE <= addr[23:0] < ADDR_IN_MAX``, all 16 bytes inside the SoC memory, no two
    beats overlapping) to the simulator at once, as stepping them would, one step each; return its
    length (0: nothing applied, the caller steps). ``bug`` (one of :data:`BEAT_BUGS`) seeds an error."""
    _check_bug(bug)
    if not len(commands) or not sim.children_idle():
        return 0
    rows = beat_rows(commands)
    if rows is None:
        return 0
    masked = rows[:, 2] & 0xFFFFFF
    vir = sim.state["virtual_soc_memory"]
    if not isinstance(vir, np.ndarray):
        return 0
    fits = (rows[:, 0] == 1) & (rows[:, 1] == 0) & (masked >= VIR_MEM_BASE) & (masked < ADDR_IN_MAX) \
        & (masked - VIR_MEM_BASE + 16 <= vir.shape[0])
    stop = np.flatnonzero(~fits)
    n = int(stop[0]) if stop.size else len(rows)
    if n < 2:
        return 0
    dst = masked[:n] - VIR_MEM_BASE
    if (np.diff(np.sort(dst)) < 16).any():
        return 0
    data = rows[:n, 3:]
    if bug == "soc_write_bytes_reversed":
        data = data[:, ::-1]
    vir[(dst[:, None] + _LANES).ravel()] = data.ravel()
    sim.steps += n
    return n


def read_beats(sim, commands, *, bug: str | None = None) -> list | None:
    """The 16 bytes (uint8 arrays) of every read of ``commands`` when all of them are scratchpad
    reads (read strobe only, ``addr[23:0]`` in scratchpad 0 or 1 with all 16 bytes inside it,
    given as a :class:`~ila.commands.CommandTable`), gathered at once; the read-data states hold the
    last read's bytes and the step count grows by one per read, as stepping them would. None where
    it does not apply (nothing changed, the caller steps). ``bug`` (one of :data:`BEAT_BUGS`) seeds
    an error."""
    _check_bug(bug)
    if not len(commands) or not sim.children_idle():
        return None
    rows = beat_rows(commands, table_only=True)
    if rows is None or not ((rows[:, 0] == 0) & (rows[:, 1] == 1)).all():
        return None
    masked = rows[:, 2] & 0xFFFFFF
    in0 = (masked >= SPAD0_BASE) & (masked + 16 <= SPAD0_BASE + SPAD_BYTES)
    in1 = (masked >= SPAD1_BASE) & (masked + 16 <= SPAD1_BASE + SPAD_BYTES)
    if not (in0 | in1).all():
        return None
    S = sim.state
    out = np.empty((len(rows), 16), np.uint8)
    for hit, name, base in ((in0, "scratch_pad_0", SPAD0_BASE), (in1, "scratch_pad_1", SPAD1_BASE)):
        if hit.any():
            off = masked[hit] - base + (16 if bug == "read_gets_next_beat" else 0)
            mem = S[name]
            if not isinstance(mem, np.ndarray) or (off + 16 > mem.shape[0]).any():
                return None
            out[hit] = mem[off[:, None] + _LANES]
    for b, name in enumerate(READ_DATA):
        S[name] = int(out[-1, b])
    sim.steps += len(rows)
    return list(out)


def _check_bug(bug) -> None:
    if bug is not None and bug not in BEAT_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {BEAT_BUGS}")


__all__ = ["BEAT_KEYS", "BEAT_BUGS", "READ_DATA", "beat_rows", "read_beats", "soc_writes"]
