"""The host runtime as an ONNX backend (``onnx.backend.base.Backend``), so ONNX's own conformance
suite (``onnx.backend.test.BackendTest`` and the node test cases of ``onnx.backend.test.case``)
can run against ``from_onnx`` + ``compile.runtime.run``.

``HostBackend.prepare(model).run(inputs)`` imports once and runs the graph on the inputs
(positional, in the order of the graph's non-initializer inputs). When the importer needs an
operand as a constant that the model computes from graph inputs (a target shape, axes, sizes:
:class:`compile.frontend.onnx.DataDependentShapeError`), the model is imported at ``run`` time
specialised to those inputs' values (``from_onnx(..., bind=...)``; one import per distinct
value, cached) -- the static-shape IR compiles a model per shape, as a shape-specialising
compiler does. ``HostRep.specialised`` says whether that happened.

``HostBackend.is_compatible(model)`` is False when the importer refuses the model (an operator,
attribute, data type or dynamic shape it does not support: a clear CompileError, never a wrong
answer); the suite then skips that case, and :func:`refusal` gives the importer's reason. A
refusal that only arises once specialised is raised by ``run`` as that CompileError. Device: CPU.
"""
from __future__ import annotations

import numpy as np
from onnx.backend.base import Backend, BackendRep

from compile.errors import CompileError

_MAX_BINDS = 8          # specialisation rounds (each binds the inputs the last refusal named)


def refusal(model) -> str | None:
    """The importer's reason for refusing ``model`` (a ModelProto), or None if it imports (possibly
    only specialised to some inputs' values)."""
    from compile.frontend.onnx import DataDependentShapeError, from_onnx
    try:
        from_onnx(model)
    except DataDependentShapeError:
        return None
    except CompileError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception:          # a crash is not a refusal: the caller reports it as a failure
        return None
    return None


class HostRep(BackendRep):
    """An imported graph, ready to run on the host runtime (or a model imported per input value)."""

    def __init__(self, graph=None, model=None, names=None):
        self.graph, self.model = graph, model
        self.names = list(names or [])            # the model's non-initializer inputs, in order
        self.specialised = graph is None
        self._cache: dict[bytes, object] = {}

    def _graph_for(self, feeds: dict):
        from compile.frontend.onnx import DataDependentShapeError, from_onnx
        bind: dict = {}
        for _ in range(_MAX_BINDS):
            key = b"".join(k.encode() + b"\0" + np.asarray(v).tobytes() + str(np.asarray(v).shape).encode()
                           for k, v in sorted(bind.items()))
            if key in self._cache:
                return self._cache[key]
            try:
                g = from_onnx(self.model, bind=bind)
            except DataDependentShapeError as exc:
                new = [i for i in exc.inputs if i not in bind and i in feeds]
                if not new:
                    raise
                bind.update({i: feeds[i] for i in new})
                continue
            self._cache[key] = g
            return g
        raise CompileError(f"model {self.model.graph.name!r}: still data-dependent after binding {sorted(bind)}")

    def run(self, inputs, **kwargs):
        from compile.runtime import run
        if isinstance(inputs, dict):
            feeds = {k: np.asarray(v) for k, v in inputs.items()}
        else:
            inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
            names = self.names if self.graph is None else [v.name for v in self.graph.inputs]
            if len(inputs) != len(names):
                raise CompileError(f"the model takes {len(names)} inputs, got {len(inputs)}")
            feeds = {n: np.asarray(a) for n, a in zip(names, inputs)}
        graph = self.graph if self.graph is not None else self._graph_for(feeds)
        return tuple(run(graph, {v.name: feeds[v.name] for v in graph.inputs}))


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
        from compile.frontend.onnx import DataDependentShapeError, from_onnx
        super().prepare(model, device, **kwargs)
        try:
            return HostRep(from_onnx(model))
        except DataDependentShapeError:
            inits = {i.name for i in model.graph.initializer}
            return HostRep(model=model, names=[i.name for i in model.graph.input if i.name not in inits])

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        raise NotImplementedError("the host backend runs models, not single nodes")
