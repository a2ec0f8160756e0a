"""Front-ends, TVM-style: :func:`from_onnx` (ONNX -> tensor IR) and :func:`from_torch` (a
``torch.nn.Module`` with example inputs, through the ONNX exporter into the same importer; needs
the ``torch`` extra)."""
from compile.frontend.onnx import DataDependentShapeError, from_onnx


def from_torch(module, example_inputs, *, name: str | None = None):
    """See :func:`compile.frontend.torch.from_torch` (imported on use: torch is optional)."""
    from compile.frontend.torch import from_torch as _from_torch
    return _from_torch(module, example_inputs, name=name)


__all__ = ["DataDependentShapeError", "from_onnx", "from_torch"]
