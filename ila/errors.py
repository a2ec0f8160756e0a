"""Error classes of the toolkit.

Two roots for the whole project (``ila``, ``mappings``, ``verify``, ``compile``):
:class:`D2AError` for mistakes in the user's input (a model, an expression, a program fragment,
a mapping name, a shape, a network), whose message names the bad value; and
:class:`D2AInternalError` for bugs in the toolkit itself. Every command-line entry point catches
:class:`D2AError`, prints its message on one line and exits 2.

Within the DSL, :class:`IlaError` (a :class:`D2AError`) also names the user's source line.
"""
from __future__ import annotations

import json
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def user_location() -> str:
    """Return ``file:line`` of the innermost stack frame outside the ``ila`` package."""
    frame = sys._getframe(1)
    while frame is not None:
        fname = os.path.abspath(frame.f_code.co_filename)
        if not fname.startswith(_PKG_DIR + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class D2AError(Exception):
    """Root of every user error of the toolkit (bad model, input, name, shape, file).

    CLIs catch it and exit with status 2; the message is meant for the user as it is.
    """


class D2AInternalError(Exception):
    """Root of the toolkit's internal errors (a bug here, not in the user's input)."""


def report(exc: BaseException, as_json: bool = False) -> int:
    """The one printer of user errors for every command-line entry point: the message on one line
    (``{"error": ...}`` on stdout with ``as_json``, else ``error: ...`` on stderr), whitespace
    collapsed; returns the exit status for user errors, 2."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if as_json:
        print(json.dumps({"error": msg}))
    else:
        print(f"error: {msg}", file=sys.stderr)
    return 2


class IlaError(D2AError):
    """A user error: a malformed model, expression, program or input.

    The message ends with the user's source location (``at file:line``).
    """

    def __init__(self, message: str, *, loc: str | None = None):
        self.location = loc if loc is not None else user_location()
        super().__init__(f"{message} (at {self.location})")


class SortError(IlaError, TypeError):
    """An operand has the wrong sort (Bool where a bit-vector is needed, memory misuse, ...)."""


class WidthError(SortError):
    """Bit-vector widths do not match, or a width or constant is out of range."""


class UndeclaredError(IlaError, NameError):
    """A state, input, instruction or child that the model does not declare."""


class DuplicateNameError(IlaError, ValueError):
    """A name declared twice in one ILA scope."""


class DecodeError(IlaError, ValueError):
    """A bad decode: not Bool, set twice, or missing where required."""


class UpdateError(IlaError, ValueError):
    """A bad update: state updated twice, not a state, or a sort mismatch."""


class SimulationError(IlaError, RuntimeError):
    """The simulator met an input or state it cannot execute (no or several instructions fire,
    an address outside a memory, a child loop that does not terminate)."""


class LoopBoundError(SimulationError):
    """A child-ILA loop ran past the step bound of a symbolic execution (the stream may be wrong, or
    the bound too small: the checkers report Unknown, never proved)."""


class IlaInternalError(D2AInternalError):
    """A bug in the ila package itself (an op missing from a backend table, ...)."""
