"""Applications by short name, found through the ``d2a.applications`` entry-point group.

The compiler does not import the benchmarks layer: ``pyproject.toml`` registers each of the paper's
six applications (``benchmarks.models``) as an entry point, and any installed package can add its
own. An entry point is a function called with no arguments after ``torch.manual_seed(seed)``
that returns ``(torch.nn.Module, example_inputs)``. Needs the project installed
(``pip install -e .``) so its entry points are visible.
"""
from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points

from compile.errors import CompileError

GROUP = "d2a.applications"


def names() -> list[str]:
    """The registered application names, sorted."""
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def _call(ref: str, fn, seed: int):
    import torch
    torch.manual_seed(seed)
    try:
        got = fn()
    except TypeError as exc:
        raise CompileError(f"model factory {ref!r} cannot be called with no arguments: {exc}") from None
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.nn.Module)):
        raise CompileError(f"model factory {ref!r} must return (torch.nn.Module, example_inputs), "
                           f"got {type(got).__name__}")
    ex = got[1]
    return got[0].eval(), tuple(ex) if isinstance(ex, (tuple, list)) else (ex,)


def load(name: str, seed: int = 0):
    """``(module in eval mode, example_inputs)`` of application ``name`` or of a
    ``package.module:function`` factory; CompileError (with the known names) otherwise."""
    if ":" in name:
        mod_name, _, fn_name = name.partition(":")
        try:
            fn = getattr(importlib.import_module(mod_name), fn_name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise CompileError(f"model factory {name!r} does not resolve: {exc}") from None
        return _call(name, fn, seed)
    eps = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name not in eps:
        near = difflib.get_close_matches(name, list(eps), n=1)
        raise CompileError(f"unknown application {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                           + f" (known: {', '.join(sorted(eps)) or 'none: is the project installed?'})")
    return _call(name, eps[name].load(), seed)


def check_inputs_fit(graph) -> None:
    """ArgumentError (a D2AError) when the graph's inputs need more bytes than the machine has
    available (checked before example inputs are allocated; names the largest input)."""
    import math

    import numpy as np
    from ila.cli import check_memory
    if not graph.inputs:
        return
    size = {v.name: math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in graph.inputs}
    big = max(graph.inputs, key=lambda v: size[v.name])
    check_memory(sum(size.values()), f"the inputs of {graph.name or 'the model'} (the largest, {big.name!r}, of "
                                     f"shape {list(big.shape)} {big.dtype})")


def load_graph(model: str, seed: int = 0):
    """``(IR graph, example inputs)`` of ``model``: an application name or ``package.module:function``
    factory (imported with ``from_torch``; its own example inputs), or an ``.onnx`` file (seeded
    standard-normal floats; integer inputs zeros). Example inputs: graph input name -> array."""
    import os

    import numpy as np
    from compile.frontend import from_onnx, from_torch
    if model.endswith(".onnx") or os.path.sep in model:
        g = from_onnx(model)
        check_inputs_fit(g)
        rng = np.random.default_rng(seed)
        return g, {v.name: (rng.standard_normal(v.shape) if np.dtype(v.dtype).kind == "f" else np.zeros(v.shape))
                   .astype(v.dtype) for v in g.inputs}
    module, ex = load(model, seed)
    import torch
    torch.set_num_threads(1)
    g = from_torch(module, ex)
    return g, {v.name: t.detach().numpy().astype(v.dtype) for v, t in zip(g.inputs, ex)}
