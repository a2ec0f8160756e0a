"""Argument checking for every command-line entry point of the toolkit.

Every CLI (``ila.models.*.run``, ``verify.*``, ``compile``, ``benchmarks.*``) builds its parser with
:class:`ArgumentParser`, whose errors go through the one printer, :func:`ila.errors.report`: one
line ``error: ...`` on stderr (``{"error": ...}`` on stdout when ``--json`` was given), exit 2, no
usage text. The checks of values (:func:`check_int`, :func:`check_count`, :func:`check_seconds`,
:func:`check_names`), paths (:func:`output_file`, :func:`output_dir`, :func:`input_file`) and
resources (:func:`check_memory`) raise :class:`ArgumentError` (a :class:`D2AError`) naming the option
and the bad value (``--samples 0: must be >= 1``); a CLI runs them before any work starts.

Resource limits are the machine's: a count of samples (or other items kept in memory) may not
exceed what the available memory holds at the item's stated minimum size, and a tensor may not need
more bytes than are available (``MemAvailable`` of ``/proc/meminfo``, else ``os.sysconf``); the
message names the limit.
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import tempfile

from ila.errors import D2AError, report


class ArgumentError(D2AError):
    """A bad command-line argument or a resource the machine does not have (names the value)."""


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose errors are one line through :func:`ila.errors.report`
    (exit 2; as JSON on stdout when the parser has ``--json`` and it was given)."""

    def parse_known_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        as_json = "--json" in self._option_string_actions and "--json" in getattr(self, "_argv", ())
        sys.exit(report(ArgumentError(message), as_json))


# ----------------------------------------------------------------------------- the machine
def available_memory() -> int:
    """Bytes of memory available to a new allocation now (``MemAvailable``; else free pages)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 34


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_memory(nbytes: float, what: str) -> None:
    """ArgumentError when ``what`` needs more than the available memory (``nbytes`` bytes)."""
    have = available_memory()
    if not nbytes <= have:
        raise ArgumentError(f"{what} would take {nbytes:.3g} bytes, more than this machine's available memory "
                            f"({_gib(have)})")


def max_items(item_bytes: int) -> int:
    """How many items of ``item_bytes`` each the available memory holds."""
    return max(1, available_memory() // max(1, item_bytes))


# ----------------------------------------------------------------------------- values
def check_int(option: str, value, lo: int | None = None, hi: int | None = None) -> None:
    """ArgumentError ``OPTION VALUE: must be ...`` unless ``lo <= value <= hi`` (None: unbounded;
    a ``value`` of None passes: the option was not given)."""
    if value is None:
        return
    if lo is not None and value < lo or hi is not None and value > hi:
        rng = f">= {lo}" if hi is None else f"<= {hi}" if lo is None else f"from {lo} to {hi}"
        raise ArgumentError(f"{option} {value}: must be {rng}")


def check_count(option: str, value, lo: int = 1, *, item_bytes: int = 64, what: str = "items") -> None:
    """A count of things kept in memory: ``>= lo`` and at most what the available memory holds at
    ``item_bytes`` each (the message names that limit). None passes (not given)."""
    if value is None:
        return
    check_int(option, value, lo)
    cap = max_items(item_bytes)
    if value > cap:
        each = f"{item_bytes >> 20} MiB" if item_bytes >= 1 << 20 else f"{item_bytes} bytes"
        raise ArgumentError(f"{option} {value}: more {what} than this machine can hold (at most {cap:,} at "
                            f"{each} each in {_gib(available_memory())} of available memory)")


def check_seconds(option: str, value, *, zero_ok: bool = False) -> None:
    """Seconds: a finite number > 0 (``>= 0`` with ``zero_ok``). None passes (not given)."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ArgumentError(f"{option} {value!r}: must be a finite number of seconds {'>= 0' if zero_ok else '> 0'}")


def check_names(option: str, items, known, *, what: str = "name") -> None:
    """Every one of ``items`` among ``known``; at least one."""
    items = list(items)
    bad = [t for t in items if t not in known]
    if bad or not items:
        raise ArgumentError(f"{option}: unknown {what}(s) {bad or items}; known: {', '.join(known)}")


# ----------------------------------------------------------------------------- paths
def _nearest_existing(p: pathlib.Path) -> pathlib.Path:
    p = p.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _writable_dir(d: pathlib.Path) -> bool:
    """A file can be created in directory ``d`` (tried with an unnamed temporary file, which leaves
    no trace; ``os.access`` says yes to root on read-only or virtual file systems)."""
    try:
        with tempfile.TemporaryFile(dir=d):
            return True
    except OSError:
        return False


def output_file(path, option: str = "--out", *, parents: bool = True) -> pathlib.Path:
    """Check that ``path`` can be written as a file: it is not a directory, and its directory (with
    ``parents``, the nearest existing ancestor: the CLI creates the rest) is writable; ArgumentError
    naming the option and the path otherwise."""
    p = pathlib.Path(path)
    if p.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: is a directory, not a file")
    if not parents and not p.absolute().parent.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: the directory {str(p.absolute().parent)!r} does not exist")
    anc = _nearest_existing(p.parent)
    if not anc.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: {str(anc)!r} is not a directory")
    if not _writable_dir(anc) or (p.exists() and not os.access(p, os.W_OK)):
        raise ArgumentError(f"{option} {str(path)!r}: not writable (in {str(anc)!r})")
    return p


def output_dir(path, option: str) -> pathlib.Path:
    """Check that ``path`` is, or can be created as, a writable directory."""
    p = pathlib.Path(path)
    if p.exists() and not p.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: exists and is not a directory")
    anc = _nearest_existing(p)
    if not anc.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: {str(anc)!r} is not a directory")
    if not _writable_dir(anc):
        raise ArgumentError(f"{option} {str(path)!r}: not writable (in {str(anc)!r})")
    return p


def input_file(path, option: str) -> pathlib.Path:
    """Check that ``path`` is an existing, readable file (not a directory)."""
    p = pathlib.Path(path)
    if not p.exists():
        raise ArgumentError(f"{option} {str(path)!r}: no such file")
    if p.is_dir():
        raise ArgumentError(f"{option} {str(path)!r}: is a directory, not a file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise ArgumentError(f"{option} {str(path)!r}: cannot be read ({exc.strerror})") from None
    return p


__all__ = ["ArgumentError", "ArgumentParser", "available_memory", "check_memory", "max_items", "check_int",
           "check_count", "check_seconds", "check_names", "output_file", "output_dir", "input_file"]
