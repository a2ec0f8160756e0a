"""Structural equality of two compiler-IR ILA programs: the same value in every output element, for
all data, decided without unrolling the operators' loops.

Both command streams (``tensor_store`` of element terms, then operator commands, arguments as in
:mod:`ila.models.relay.model`) are run on an abstract tensor memory whose cells hold value
numbers instead of values:

* a stored element term gets the number of that term (the same term object or the same integer
  bit pattern: the same number, on either side);
* a data-movement operator (``reshape``, ``transpose``) moves numbers (its gather map,
  :mod:`ila.models.relay.footprint`);
* a computing operator writes, into its result region, a block of fresh numbers keyed by the
  operator, its non-address arguments and the numbers in its read regions; the same key (on either
  side) gives the same block;
* a cell never written holds a number of its own side (the memory before the program is not
  assumed equal on the two sides).

By induction over the commands, two cells with the same number hold the same value in every run
of the two programs from any memories, with any values of the element terms: each described
operator's result is a function of its non-address arguments and the contents of its read
regions, written into its result region only (the footprint table; checked against the ILA
simulator by ``tests/test_relay_footprint.py``). So when every output element has the same number
on both sides, the outputs are equal for all data: a proof, at any size, at the cost of one pass
over the memory touched. A difference in numbers is not a counterexample (two different programs
can compute equal values), and an operator without a described footprint, a degenerate command
(a zero extent) or a result region overlapping its operands (other than an elementwise operator
in place) leaves the question open: the answer is then ``None`` with the reason.

Source of the method: value numbering / hash-consing over the programs' dataflow (the
translation-validation literature, e.g. Necula, "Translation validation for an optimizing
compiler", PLDI 2000), here over the compiler-IR ILA's operator instructions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ila.models.relay.footprint import ELEMENTWISE, access
from ila.models.relay.model import FUNC_IDS

_STORE, _LOAD = FUNC_IDS["tensor_store"], FUNC_IDS["tensor_load"]


class _Numbers:
    """Value numbers shared by both sides: one per stored term, a block per operator application."""

    def __init__(self):
        self.table: dict = {}
        self.top = 1

    def term(self, data) -> int:
        key = ("int", int(data)) if isinstance(data, (int, np.integer)) else ("term", id(data))
        got = self.table.get(key)
        if got is None:
            got = self.table[key] = self.top
            self.top += 1
        return got

    def block(self, key, n: int) -> int:
        got = self.table.get(key)
        if got is None:
            got = self.table[key] = self.top
            self.top += n
        return got


@dataclass
class Run:
    """One side's abstract memory after its program (``cells``), or why it could not be run."""
    cells: np.ndarray | None
    why: str | None = None


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


def run(commands: list[dict], entries: int, numbers: _Numbers, side: int, keep: list) -> Run:
    """Run ``commands`` on an abstract memory of ``entries`` cells. ``keep`` holds the stored term
    objects alive for the whole check (their numbers are keyed by identity)."""
    cells = -(1 + side * entries + np.arange(entries, dtype=np.int64))   # never written: this side's own
    for k, cmd in enumerate(commands):
        fid = int(cmd.get("func_id", 0))
        if fid == _STORE:
            addr = int(cmd["addr_in"])
            if not 0 <= addr < entries:
                return Run(None, f"command {k}: a store at {addr}, outside the {entries}-entry memory")
            data = cmd["data_in"]
            keep.append(data)
            cells[addr] = numbers.term(data)
            continue
        if fid == _LOAD:
            continue
        acc = access(cmd)
        if acc is None:
            return Run(None, f"command {k}: operator {fid} has no described footprint")
        if acc.degenerate:
            return Run(None, f"command {k}: {acc.degenerate}")
        for b, n in [*acc.reads, acc.write]:
            if b + n > entries:
                return Run(None, f"command {k}: {acc.op} touches [{b}, {b + n}), beyond the {entries}-entry memory")
        for r in acc.reads:
            if _overlap(r, acc.write) and not (r == acc.write and r == acc.reads[0]
                                               and (acc.op in ELEMENTWISE or acc.op == "reshape")):
                return Run(None, f"command {k}: {acc.op} writes [{acc.write[0]}, {sum(acc.write)}) over its "
                                 f"operand [{r[0]}, {sum(r)})")
        src = [cells[b:b + n] for b, n in acc.reads]
        wb, wn = acc.write
        if acc.gather is not None:
            cells[wb:wb + wn] = np.concatenate(src)[acc.gather]
        else:
            key = (acc.op, acc.params, *(s.tobytes() for s in src))
            cells[wb:wb + wn] = numbers.block(key, wn) + np.arange(wn, dtype=np.int64)
    return Run(cells)


def same_outputs(left: list[dict], left_out: int, right: list[dict], right_out: int, n: int,
                 entries: int) -> tuple[bool, str]:
    """Whether the ``n`` elements at ``left_out`` after the ``left`` commands and those at
    ``right_out`` after the ``right`` commands are the same values for all data (module
    docstring). Returns (True, what was shown) or (False, why not: an open question, not a
    counterexample)."""
    numbers, keep = _Numbers(), []
    runs = [run(cmds, entries, numbers, side, keep) for side, cmds in enumerate((left, right))]
    for name, r in zip(("left", "right"), runs):
        if r.cells is None:
            return False, f"{name} program: {r.why}"
    for name, base in (("left", left_out), ("right", right_out)):
        if base + n > entries:
            return False, f"{name} output [{base}, {base + n}) beyond the {entries}-entry memory"
    a, b = runs[0].cells[left_out:left_out + n], runs[1].cells[right_out:right_out + n]
    differ = np.flatnonzero(a != b)
    if differ.size:
        return False, (f"{differ.size} of {n} output elements are computed differently (first: element "
                       f"{int(differ[0])})")
    ops = sum(1 for cmds in (left, right) for c in cmds if int(c.get("func_id", 0)) not in (_STORE, _LOAD))
    return True, (f"all {n} output elements are the same values for all data: both programs apply the same "
                  f"compiler-IR ILA operators ({ops} operator commands in all) to the same operand elements "
                  f"(value numbering over {len(numbers.table)} values)")
