"""Front-ends: ONNX (:func:`from_onnx`) -> the tensor IR; PyTorch support will export through the
ONNX exporter into the same importer."""
from compile.frontend.onnx import from_onnx

__all__ = ["from_onnx"]
