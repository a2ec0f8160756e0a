"""User errors of the compiler (all derive from :class:`ila.errors.D2AError`, the toolkit's one
user-error root, so every CLI reports them on one line with exit status 2)."""
from __future__ import annotations

from ila.errors import D2AError, report  # noqa: F401  (the one printer of user errors, re-exported)


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
