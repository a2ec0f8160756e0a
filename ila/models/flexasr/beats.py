"""Numeric fast paths for runs of FlexASR's 16-byte AXI data-movement commands, each checked equal
to stepping the same commands on the ILA simulator (every state and memory, the step count, the
bytes read) by ``tests/test_flexasr_beats.py``, with a seeded bug per path that the test catches.

- :func:`store_writes`: a run of buffer stores (``GB_CORE_STORE_LARGE`` / ``_SMALL``,
  ``PE<p>_CORE_STORE_WEIGHT_BUFFER`` / ``_INPUT_BUFFER``: the 16 data bytes into the buffer at the
  address's offset in its window, :func:`ila.models.flexasr.model._data_movement`), applied at once.
- :func:`load_reads`: a run of global-buffer loads (``GB_CORE_LOAD_LARGE`` / ``_SMALL``: 16 bytes
  of the buffer into ``data_out_0..15``), gathered at once; the read-data states end at the last read.

Each applies only where every command of the run is one of those instructions by the model's
decode (a write or read strobe alone, the address inside a buffer window; no configuration
register or start trigger lies in a window: ``tests/test_flexasr_beats.py`` checks the decode at
every such address), every child ILA is idle and the simulator does not record its trace
(:meth:`ila.sim.Simulator.children_idle`), every input fits its width, and the stores into one
buffer do not overlap (the model stores them in order; at once they must not depend on it).
Elsewhere it changes nothing and the caller steps the commands.
"""
from __future__ import annotations

import numpy as np

from ila.commands import CommandTable
from ila.models.flexasr import constants as C

KEYS = ("if_axi_wr", "if_axi_rd", "addr_in") + tuple(f"data_in_{k}" for k in range(16))
READ_DATA = tuple(f"data_out_{k}" for k in range(16))
BEAT_BUGS = ("store_bytes_reversed", "load_gets_next_beat")   # seeded bugs, for the differential test
_LANES = np.arange(16)


def _windows(kind: str) -> list[tuple[int, int, str]]:
    """(first address, last address, memory) of every buffer window: ``"store"`` or ``"load"``."""
    gb = [(C.GB_LARGE_BASE, C.GB_LARGE_LAST, "gb_core_large_buffer"),
          (C.GB_SMALL_BASE, C.GB_SMALL_LAST, "gb_core_small_buffer")]
    if kind == "load":
        return gb
    pe = []
    for p in range(C.NUM_PE):
        for off, size, mem in ((C.PE_WEIGHT_OFFSET, C.PE_WEIGHT_SIZE, f"pe{p}_weight_buffer"),
                               (C.PE_INPUT_OFFSET, C.PE_INPUT_SIZE, f"pe{p}_input_buffer")):
            lo = C.pe_base(p) + off
            pe.append((lo, lo + size - 16, mem))
    return gb + pe


STORE_WINDOWS, LOAD_WINDOWS = _windows("store"), _windows("load")


def _rows(commands) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(write strobes, read strobes, addresses (int64), data bytes (n, 16) uint8) of a CommandTable
    whose columns are among :data:`KEYS` (a missing one is 0) with every value fitting its input;
    else None."""
    if not isinstance(commands, CommandTable) or not set(commands.columns) <= set(KEYS):
        return None
    n = len(commands)
    cols = []
    for k in KEYS:
        col = commands.columns.get(k)
        col = np.zeros(n, np.uint8) if col is None else np.asarray(col)
        if col.dtype.kind == "b":
            col = col.astype(np.uint8)
        if col.size and (col.min() < 0 or col.max() > (0xFFFFFFFF if k == "addr_in" else 1 if k.startswith("if_")
                                                        else 0xFF)):
            return None
        cols.append(col)
    data = np.empty((n, 16), np.uint8)
    for j in range(16):
        data[:, j] = cols[3 + j]
    return cols[0], cols[1], cols[2].astype(np.int64), data


def _put(mem: np.ndarray, off: np.ndarray, data: np.ndarray) -> None:
    """``mem[off[i] + b] = data[i, b]`` (offsets of non-overlapping beats): one slice when the beats
    are consecutive."""
    if len(off) > 1 and off[-1] - off[0] == 16 * (len(off) - 1) and (np.diff(off) == 16).all():
        mem[off[0]:off[0] + 16 * len(off)] = data.reshape(-1)
    else:
        mem[(off[:, None] + _LANES).ravel()] = data.ravel()


def locate(addr: np.ndarray, windows) -> tuple[np.ndarray, np.ndarray]:
    """(window index or -1, offset in the window's buffer) of every address (the windows are
    disjoint)."""
    order = sorted(range(len(windows)), key=lambda k: windows[k][0])
    lo = np.array([windows[k][0] for k in order], np.int64)
    last = np.array([windows[k][1] for k in order], np.int64)
    pos = np.clip(np.searchsorted(lo, addr, side="right") - 1, 0, len(lo) - 1)
    hit = (addr >= lo[pos]) & (addr <= last[pos])
    which = np.where(hit, np.asarray(order, np.int64)[pos], -1)
    return which, np.where(hit, addr - lo[pos], 0)


def store_writes(sim, commands, *, bug: str | None = None) -> int:
    """Apply the longest prefix of ``commands`` (a CommandTable) made of buffer stores to the
    simulator at once, as stepping them would (one step each); return its length (0: nothing
    applied, the caller steps). ``bug`` (one of :data:`BEAT_BUGS`) seeds an error."""
    _check_bug(bug)
    got = _rows(commands) if len(commands) >= 2 and sim.children_idle() else None
    if got is None:
        return 0
    wr, rd, addr, data = got
    which, off = locate(addr, STORE_WINDOWS)
    stop = np.flatnonzero(~((wr == 1) & (rd == 0) & (which >= 0)))
    n = int(stop[0]) if stop.size else len(addr)
    if n < 2:
        return 0
    which, off, data = which[:n], off[:n], data[:n]
    if bug == "store_bytes_reversed":
        data = data[:, ::-1]
    key = np.sort((which << 32) | off)                  # stores into one buffer must not overlap
    if ((np.diff(key) < 16) & ((key[1:] >> 32) == (key[:-1] >> 32))).any():
        return 0
    used = np.flatnonzero(np.bincount(which, minlength=len(STORE_WINDOWS))).tolist()
    if not all(isinstance(sim.state[STORE_WINDOWS[k][2]], np.ndarray) for k in used):
        return 0
    for k in used:
        hit = which == k
        _put(sim.state[STORE_WINDOWS[k][2]], off[hit], data[hit])
    sim.steps += n
    return n


def load_reads(sim, commands, *, bug: str | None = None) -> list | None:
    """The 16 bytes (uint8 arrays) of every read of ``commands`` (a CommandTable) when all of them
    are global-buffer loads, gathered at once; ``data_out_0..15`` end at the last read's bytes and
    the step count grows by one per read, as stepping them would. None where it does not apply
    (nothing changed). ``bug`` (one of :data:`BEAT_BUGS`) seeds an error."""
    _check_bug(bug)
    got = _rows(commands) if len(commands) and sim.children_idle() else None
    if got is None:
        return None
    wr, rd, addr, _ = got
    which, off = locate(addr, LOAD_WINDOWS)
    if not ((wr == 0) & (rd == 1) & (which >= 0)).all():
        return None
    if bug == "load_gets_next_beat":
        off = off + 16
    out = np.empty((len(addr), 16), np.uint8)
    for k in np.flatnonzero(np.bincount(which, minlength=len(LOAD_WINDOWS))).tolist():
        hit = which == k
        mem = sim.state[LOAD_WINDOWS[k][2]]
        if not isinstance(mem, np.ndarray) or (off[hit] + 16 > mem.shape[0]).any():
            return None
        out[hit] = mem[off[hit][:, None] + _LANES]
    for b, name in enumerate(READ_DATA):
        sim.state[name] = int(out[-1, b])
    sim.steps += len(addr)
    return list(out)


def _check_bug(bug) -> None:
    if bug is not None and bug not in BEAT_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {BEAT_BUGS}")


__all__ = ["BEAT_BUGS", "KEYS", "LOAD_WINDOWS", "READ_DATA", "STORE_WINDOWS", "load_reads", "store_writes"]
