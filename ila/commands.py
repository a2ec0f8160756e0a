"""Command streams as columns: :class:`CommandTable`.

A simulator command is a mapping from input names to values (``{"if_axi_wr": 1, "addr_in":
0x33500000, "data_in_0": 7, ...}``; an input it omits is 0, or False for a Bool input). Long MMIO
streams (a weight matrix is tens of thousands of 16-byte writes) cost more as Python dicts than
their execution does, so :meth:`ila.sim.Simulator.run` also takes them as a table: one 1-D integer
array per input, all of one length, row ``i`` being command ``i``. The meaning is exactly that of
the list of dicts ``[table[i] for i in range(len(table))]``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .errors import SimulationError


class CommandTable:
    """Commands stored by column.

    Parameters
    ----------
    columns : mapping of str to 1-D array-like
        input name -> values of that input in every command (integers, or bools for Bool
        inputs), all of the same length. An input without a column is 0 / False in every command.

    Raises :class:`~ila.errors.SimulationError` naming the column that is not 1-D, not integer
    or Bool, or of another length than the first column. Values are checked against the
    inputs' widths when a simulator runs the table (as for a dict command).
    """

    __slots__ = ("columns", "_n")

    def __init__(self, columns: Mapping[str, object]):
        cols: dict[str, np.ndarray] = {}
        n = None
        for name, values in columns.items():
            arr = np.asarray(values)
            if arr.ndim != 1:
                raise SimulationError(f"command column {name!r} must be 1-D, got shape {arr.shape}")
            if arr.size and arr.dtype.kind not in "iub":
                raise SimulationError(f"command column {name!r} must hold integers or bools, got {arr.dtype}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise SimulationError(f"command column {name!r} has {arr.shape[0]} values, the others {n}")
            cols[name] = arr if arr.size else arr.astype(np.int64)
        self.columns = cols
        self._n = n or 0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        """Command ``i`` as a dict of Python ints (bools for Bool columns); a slice gives a table."""
        if isinstance(i, slice):
            return CommandTable({k: v[i] for k, v in self.columns.items()})
        return {k: (bool(v[i]) if v.dtype.kind == "b" else int(v[i])) for k, v in self.columns.items()}

    def rows(self) -> list[dict]:
        """All commands as dicts (the list form :meth:`ila.sim.Simulator.run` also takes)."""
        return [self[i] for i in range(self._n)]

    @staticmethod
    def concat(tables: list["CommandTable"]) -> "CommandTable":
        """The commands of ``tables`` one after the other (a column missing from a table is 0 there)."""
        names: list[str] = []
        for t in tables:
            names += [k for k in t.columns if k not in names]
        cols = {}
        for k in names:
            parts = [t.columns[k] if k in t.columns else np.zeros(len(t), np.int64) for t in tables]
            dtypes = {p.dtype for p in parts if p.size}
            dt = dtypes.pop() if len(dtypes) == 1 else np.int64
            cols[k] = np.concatenate([p.astype(dt) for p in parts])
        return CommandTable(cols)

    def __repr__(self) -> str:
        return f"CommandTable({self._n} commands, columns {sorted(self.columns)})"


__all__ = ["CommandTable"]
