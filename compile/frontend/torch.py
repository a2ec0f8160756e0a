"""PyTorch -> tensor IR (``from_torch``), through the ONNX exporter and :func:`from_onnx`.

Why through ONNX rather than ``torch.export`` directly: one importer to keep right (the ONNX one,
which the onnx wheel's model zoo and conformance suite test), and the dynamo ONNX exporter already
decomposes modules into a small, stable operator set (it folds batch-norm into the preceding
convolution and keeps an LSTM as one ``LSTM`` node). The exporter needs the ``torch`` extra
(``pip install -e ".[torch]"``: torch 2.13.0 CPU, onnxscript). Source locations: the exporter's
node names, which carry the PyTorch module path (``conv1``, ``layers.0.conv2``, ...).
"""
from __future__ import annotations

import contextlib
import io
import warnings

from compile.errors import CompileError
from compile.frontend.onnx import from_onnx


def to_onnx(module, example_inputs):
    """The ONNX ModelProto of ``module`` traced on ``example_inputs`` (dynamo exporter, static
    shapes). CompileError when the module does not run on those inputs (naming the error)."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise CompileError(f"from_torch needs a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    module = module.eval()
    try:
        with torch.no_grad():
            module(*example_inputs)
    except Exception as exc:                       # the user's model rejects the inputs: say so, no traceback
        shapes = ", ".join(str(tuple(x.shape)) if hasattr(x, "shape") else type(x).__name__ for x in example_inputs)
        raise CompileError(f"{type(module).__name__} does not run on example inputs of shape(s) {shapes}: "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    import logging
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            prog = torch.onnx.export(module, tuple(example_inputs), dynamo=True, verbose=False)
        except Exception as exc:
            raise CompileError(f"{type(module).__name__}: the ONNX exporter fails: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0][:300]}") from None
    return prog.model_proto


def from_torch(module, example_inputs, *, name: str | None = None):
    """Import a ``torch.nn.Module`` traced on ``example_inputs`` (a tensor or a tuple of tensors)
    into a :class:`compile.ir.Graph`; the graph's inputs are named as the exporter names them, in
    the order of ``example_inputs``. Raises CompileError (and the errors of :func:`from_onnx`)."""
    return from_onnx(to_onnx(module, example_inputs), name=name or type(module).__name__)
