"""User errors of the compiler (all derive from :class:`ila.errors.D2AError`, the toolkit's one
user-error root, so every CLI reports them on one line with exit status 2)."""
from __future__ import annotations

import json
import sys

from ila.errors import D2AError


class CompileError(D2AError):
    """A model, graph or input the compiler cannot handle; the message names what and where."""


class UnsupportedOperatorError(CompileError):
    """Operators (or attributes) the compiler does not support; lists every one of the model."""


class ShapeMismatchError(CompileError):
    """Operand shapes an operator cannot combine (names the operator, the shapes, the source)."""


class ModelLoadError(CompileError):
    """A model file that cannot be read or parsed."""


class DynamicShapeError(CompileError):
    """A dimension left unbound (the IR has static shapes only)."""


class TextFormatError(CompileError):
    """Malformed IR text (names the line)."""


def report(exc: D2AError, as_json: bool = False) -> int:
    """Print a user error as one line (``{"error": ...}`` on stdout with ``as_json``, else
    ``error: ...`` on stderr) and return the CLIs' exit code for user errors, 2."""
    msg = " ".join(str(exc).split())
    if as_json:
        print(json.dumps({"error": msg}))
    else:
        print(f"error: {msg}", file=sys.stderr)
    return 2
