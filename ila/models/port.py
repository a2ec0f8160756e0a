"""A machine's host interface, declared by its package: MMIO port, program fragments, fragment runner.

Every accelerator package (``ila/models/<machine>/port.py``) declares one :class:`MachinePort`:

* how a simulator command (a dict of interface inputs, as :meth:`ila.sim.Simulator.run` takes it)
  is written as an entry of a 3LA-style program fragment and read back from one (``entry_of`` /
  ``command_of``: the fragment writer and parser, checked inverse of each other on every stream a
  certificate covers);
* which commands are reads and what data a read returns (``is_read`` / ``read_data``: the model
  state after the read, ints in simulation, terms in proofs), and the interrupt state a ``Q``
  entry waits on (``irq``);
* how the machine executes a stream from its reset state (``execute``: the fragment runner,
  returning the data of every read in order);
* the numerics its proofs use by default (``proof_numerics``: ``uf`` = arithmetic uninterpreted with
  checked axioms, ``exact`` = bit-precise).

An :class:`AccProgram` is one accelerator invocation as its driver emits it: the command stream
(``commands``), the driver's read-back (``readback``: the data of the stream's reads -> the result
tensor), optionally the same stream built by the element path the proofs run (``canonical``), and
execution hints that never change the meaning of the stream (``hints``).

Every stream runs from the machine's reset state: :meth:`MachinePort.run` resets the simulator
first, so a call's result never depends on the calls before it, as the proofs assume.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ila.commands import CommandTable
from ila.errors import D2AError


class FragmentError(D2AError, ValueError):
    """A malformed program fragment (names the entry and the field)."""


@dataclass
class AccProgram:
    """One accelerator invocation: ``commands`` (a list of simulator commands, or a
    :class:`~ila.commands.CommandTable` holding the same commands row by row), ``readback(reads)``
    (the list of read data, one array per read command in stream order -> the result tensor in
    the mapping's layout), ``canonical()`` (the same stream built by the driver's element path,
    which proofs run on symbolic data; None when there is one builder), ``hints`` (execution
    hints for the machine's runner: they never change the result), ``info`` (driver facts:
    exponent-bias registers, flags of clamped ranges) and ``machine`` (the port of the machine
    variant the stream was generated for, e.g. a VTA configuration other than the default; None:
    the mapping's own port)."""
    commands: Any
    readback: Callable[[list], np.ndarray]
    canonical: Callable[[], list] | None = None
    hints: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    machine: Any = None

    def command_list(self) -> list[dict]:
        """The commands as a list of dicts."""
        return self.commands.rows() if isinstance(self.commands, CommandTable) else list(self.commands)

    def __len__(self) -> int:
        return len(self.commands)


def _hex_int(e: dict, key: str, k: int, max_digits: int) -> int:
    v = e.get(key)
    if not isinstance(v, str) or not v[:2].lower() == "0x" or not 1 <= len(v) - 2 <= max_digits:
        what = "missing" if key not in e else f"{v!r} is not 0x and 1-{max_digits} hex digits"
        raise FragmentError(f"program fragment entry {k}: field {key!r} {what}")
    try:
        return int(v, 16)
    except ValueError:
        raise FragmentError(f"program fragment entry {k}: field {key!r} = {v!r} is not hexadecimal") from None


def hex_field(e: dict, key: str, k: int, max_digits: int) -> int:
    """The integer of entry ``k``'s field ``key`` (``0x`` and 1..``max_digits`` hex digits);
    FragmentError naming the entry and the field otherwise."""
    return _hex_int(e, key, k, max_digits)


def word_hex(data_bytes, nbytes: int = 16) -> str:
    """``0x`` and ``2 * nbytes`` hex digits of the little-endian word of ``data_bytes`` (byte k at
    bits 8k..8k+7)."""
    return "0x" + bytes(int(b) & 0xFF for b in list(data_bytes)[:nbytes])[::-1].hex().rjust(2 * nbytes, "0")


def word_bytes(value: int, nbytes: int = 16) -> list[int]:
    """The ``nbytes`` little-endian bytes of ``value``."""
    return [(value >> (8 * k)) & 0xFF for k in range(nbytes)]


@dataclass(frozen=True)
class MachinePort:
    """A machine's host interface (module docstring). ``build()`` returns its ILA (cached by the
    package); ``entry_of(cmd)`` one fragment entry (JSON-able dict with ``mode``) of a simulator
    command; ``command_of(entry, k)`` the simulator command of entry ``k`` (FragmentError naming
    the entry and the field); ``execute(sim, commands, hints)`` runs a stream on a simulator in
    its reset state and returns the data of the reads; ``memories`` are printed by the fragment
    runner after a run."""
    name: str
    build: Callable[[], Any]
    entry_of: Callable[[dict], dict]
    command_of: Callable[[dict, int], dict]
    is_read: Callable[[dict], bool]
    read_data: Callable[[Any], np.ndarray] | None
    execute: Callable[[Any, Any, dict], list]
    irq: str | None = None
    proof_numerics: str = "uf"
    memories: tuple = ()
    modes: tuple = ("W", "R")

    # ---------------------------------------------------------------- simulators
    def simulator(self):
        """A simulator of the machine in its reset state (the compiled simulator is kept between
        runs; building one compiles the model's update functions)."""
        from ila.sim import Simulator
        ila = self.build()
        sim = _SIMULATORS.get(id(ila))
        if sim is None or sim.ila is not ila:
            sim = _SIMULATORS[id(ila)] = Simulator(ila)
            return sim
        sim.reset()
        return sim

    def run(self, commands, hints: dict | None = None) -> list:
        """Execute ``commands`` (list or CommandTable) from the reset state; the data of every read,
        in order (one numpy array each)."""
        return self.execute(self.simulator(), commands, dict(hints or {}))

    def run_program(self, prog: AccProgram):
        """Execute an :class:`AccProgram` and apply its read-back: (result, reads)."""
        reads = self.run(prog.commands, prog.hints)
        return prog.readback(reads), reads

    # ---------------------------------------------------------------- fragments
    def entries(self, commands) -> list[dict]:
        """The program-fragment entries of a stream (list or CommandTable), in order."""
        rows = commands.rows() if isinstance(commands, CommandTable) else commands
        return [self.entry_of(c) for c in rows]

    def commands(self, fragment) -> list[dict]:
        """The simulator commands of a fragment (``{"program fragment": [...]}`` or the list of
        entries); FragmentError naming the entry and the field for a malformed one."""
        if isinstance(fragment, dict):
            if "program fragment" not in fragment:
                raise FragmentError(f"a program fragment is an object with a \"program fragment\" list; got keys "
                                    f"{sorted(fragment)}")
            fragment = fragment["program fragment"]
        if not isinstance(fragment, list):
            raise FragmentError(f"\"program fragment\" must be a list of entries, got {type(fragment).__name__}")
        out = []
        for k, e in enumerate(fragment):
            if not isinstance(e, dict):
                raise FragmentError(f"program fragment entry {k}: an entry is an object, got {e!r}"[:200])
            if e.get("mode") not in self.modes:
                raise FragmentError(f"program fragment entry {k}: field 'mode' = {e.get('mode')!r} must be one of "
                                    f"{', '.join(self.modes)} ({self.name})" if "mode" in e else
                                    f"program fragment entry {k}: missing field 'mode'")
            out.append(self.command_of(e, k))
        return out

    def round_trip(self, commands) -> list[dict]:
        """The commands after writing them as fragment entries, as JSON text, and parsing them
        back: what a replay of an emitted fragment executes."""
        return self.commands(json.loads(json.dumps(self.entries(commands))))

    def run_fragment(self, fragment) -> dict:
        """Execute a program fragment from the reset state (the fragment runner): ``{"reads":
        [hex words], "memory": {name: {address: hex word}}}`` of the non-zero 16-byte words of
        :attr:`memories`. FragmentError for a malformed entry; the model's own errors (D2AError)
        for a command it rejects."""
        cmds = self.commands(fragment)
        sim = self.simulator()
        reads = self.execute(sim, cmds, {})
        out = {"reads": [read_hex(r) for r in reads], "memory": {}}
        for name in self.memories:
            mem = np.asarray(sim.memory(name))
            if mem.dtype.kind not in "iu":
                continue
            b = mem.astype(np.uint8) if mem.dtype.itemsize == 1 else mem.astype("<u8").view(np.uint8)
            words = b[: b.size // 16 * 16].reshape(-1, 16)
            nz = np.flatnonzero(words.any(axis=1))
            out["memory"][name] = {f"0x{16 * int(k):06X}": "0x" + bytes(words[k][::-1]).hex().upper() for k in nz}
        out["child_steps"] = int(sim.child_steps)
        return out


_SIMULATORS: dict = {}


def read_hex(r) -> str:
    """A read's data as one hex word, lane 0 least significant: an array of bytes (uint8), or of
    wider lanes (each lane its dtype's width, two's complement)."""
    a = np.asarray(r)
    if a.dtype == object:
        a = np.asarray([int(v) for v in a.reshape(-1)], dtype=np.int64)
    width = max(1, a.dtype.itemsize) if a.dtype.kind in "iu" else 1
    raw = b"".join(int(v & ((1 << (8 * width)) - 1)).to_bytes(width, "little") for v in a.reshape(-1).tolist())
    return "0x" + raw[::-1].hex().upper()


def load_json(path) -> dict | list:
    """Read a program-fragment JSON file: FragmentError naming the file for an unreadable, non-UTF-8,
    non-JSON or too deeply nested file."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise FragmentError(f"cannot read program fragment {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FragmentError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FragmentError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise FragmentError(f"{path}: JSON nested too deeply to be a program fragment") from None


def fragment_main(port_ref: str, argv=None, prog: str | None = None) -> int:
    """The fragment runner's command line (``python -m ila.models.<machine>.run FRAGMENT.json``):
    executes the fragment from reset, prints the data of every read and the non-zero words of the
    machine's memories (``--json``: the same as JSON). Exit 0 after a run; 2 with one ``error:``
    line for a malformed fragment or a command the model rejects."""
    import importlib
    import sys

    from ila.cli import ArgumentParser
    mod, _, attr = port_ref.partition(":")
    port: MachinePort = getattr(importlib.import_module(mod), attr)
    ap = ArgumentParser(prog=prog or f"python -m ila.models.{port.name}.run",
                        description=f"Run a {port.name} program fragment (3LA-style JSON) on the {port.name} "
                                    "ILA simulator, from the reset state.")
    ap.add_argument("fragment", help="program-fragment JSON file")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(argv)
    try:
        res = port.run_fragment(load_json(args.fragment))
    except D2AError as exc:
        from ila.errors import report
        return report(exc, args.json)
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"{len(res['reads'])} read(s), {res['child_steps']} child-ILA steps")
    for k, w in enumerate(res["reads"]):
        print(f"read {k}: {w}")
    for name, words in res["memory"].items():
        print(f"{name}: {len(words)} non-zero 16-byte word(s)")
        for a, w in list(words.items())[:64]:
            print(f"  {a}: {w}")
        if len(words) > 64:
            print(f"  ... {len(words) - 64} more")
    sys.stdout.flush()
    return 0


__all__ = ["AccProgram", "MachinePort", "FragmentError", "hex_field", "word_hex", "word_bytes", "load_json",
           "fragment_main", "read_hex"]
