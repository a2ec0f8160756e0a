"""The host runtime as an ONNX backend (``onnx.backend.base.Backend``), so ONNX's own conformance
suite (``onnx.backend.test.BackendTest`` and the node test cases of ``onnx.backend.test.case``)
can run against ``from_onnx`` + ``compile.runtime.run``.

``HostBackend.is_compatible(model)`` is False when the importer refuses the model (an operator,
attribute, data type or dynamic shape it does not support: a clear CompileError, never a wrong
answer); the suite then skips that case, and :func:`refusal` gives the importer's reason.
``HostBackend.prepare(model).run(inputs)`` imports once and runs the graph on the inputs
(positional, in the order of the graph's non-initializer inputs). Device: CPU only.
"""
from __future__ import annotations

import numpy as np
from onnx.backend.base import Backend, BackendRep

from compile.errors import CompileError


def refusal(model) -> str | None:
    """The importer's reason for refusing ``model`` (a ModelProto), or None if it imports."""
    from compile.frontend.onnx import from_onnx
    try:
        from_onnx(model)
    except CompileError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception:          # a crash is not a refusal: the caller reports it as a failure
        return None
    return None


class HostRep(BackendRep):
    """An imported graph, ready to run on the host runtime."""

    def __init__(self, graph):
        self.graph = graph

    def run(self, inputs, **kwargs):
        from compile.runtime import run
        if isinstance(inputs, dict):
            feeds = inputs
        else:
            inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
            if len(inputs) != len(self.graph.inputs):
                raise CompileError(f"graph {self.graph.name!r} takes {len(self.graph.inputs)} inputs, got {len(inputs)}")
            feeds = {v.name: np.asarray(a) for v, a in zip(self.graph.inputs, inputs)}
        return tuple(run(self.graph, feeds))


class HostBackend(Backend):
    """ONNX backend over the compiler's importer and host runtime (CPU)."""

    @classmethod
    def is_compatible(cls, model, device: str = "CPU", **kwargs) -> bool:
        return device == "CPU" and refusal(model) is None

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> HostRep:
        from compile.frontend.onnx import from_onnx
        super().prepare(model, device, **kwargs)
        return HostRep(from_onnx(model))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        raise NotImplementedError("the host backend runs models, not single nodes")
