"""The host runtime's step plan: every step of a host program bound once to the function that
computes it, so that a run is one loop over (index, function, operand indices) with no per-step
lookup of kernels, attributes or in-place eligibility.

:func:`plan` decides per host step, from the IR value's operator, attributes and operand dtypes
(static facts of the program), what :meth:`compile.runtime.HostRuntime.run_host` decides per run:
the float32 kernel of :mod:`compile.runtime.kernels` where there is one, the in-place form where
the step owns its first operand (:func:`compile.runtime._owned`), else the IR reference semantics
(:mod:`compile.ir.ops`). A kernel or in-place form that declines its operands at run time (returns
None: another dtype than the IR value declares, a read-only array) falls back to the reference
semantics, as ``run_host`` does, so a planned run computes exactly what the unplanned one computes
(``tests/test_compile_runtime_plan.py`` checks equality bit for bit on the applications).

Two steps are fused into one when the second is the only reader of the first (:func:`_fusion`): a
convolution and its activation (:data:`FUSED`: ``clip``, ``nn.relu``, applied in place to the
convolution's fresh result with the in-place step's own operations), a residual block's add and
relu (one pass by :func:`compile.runtime.jit.add_relu` into the add's owned first operand, the
same float32 sum and maximum per element), and SiLU (a sigmoid and the multiply of its operand by
it, the product written into the sigmoid's fresh result). The second step becomes an alias of the
first's value; the element operations are the unfused steps' (numpy's, or the compiled loop's
same IEEE float32 add and maximum), so the result is the same; one dispatch fewer per pair.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compile.ir import ops

_F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class Planned:
    """One step of a plan: ``kind`` "input" | "const" | "host" | "alias" (the value of step
    ``args[0]``, already computed in place by a fused kernel); ``fn(*operands)`` for host steps."""
    index: int
    kind: str
    fn: object
    args: tuple


def _with_fallback(kernel, ref, attrs: dict):
    """``kernel(*a, **attrs)``, or the reference when the kernel declines these operands (None)."""
    def run(*a):
        y = kernel(*a, **attrs)
        return y if y is not None else np.asarray(ref(*a, **attrs))
    return run


def _conv(v, ref):
    """The convolution kernel bound to the step's operand shapes and attributes
    (:func:`compile.runtime.kernels.conv2d_for`); the reference for operands that are not float32."""
    from compile.runtime.kernels import conv2d_for
    attrs = dict(v.attrs)
    k = conv2d_for(v.args[0].shape, v.args[1].shape, attrs["strides"], attrs["padding"], attrs["dilation"],
                   attrs["groups"], attrs["data_layout"])

    def run(x, w):
        if x.dtype == _F32 and w.dtype == _F32:
            return k(x, w)
        return np.asarray(ref(x, w, **attrs))
    return run


def _reference(ref, attrs: dict):
    return lambda *a: np.asarray(ref(*a, **attrs))


def plan(program, owned: frozenset) -> list[Planned]:
    """The plan of a host program (steps of kind input, const and host only; ``owned``: the host
    steps that may write into their first operand). Kept on the program; recomputed when its step
    count or ``owned`` changes."""
    from compile.runtime.kernels import IN_PLACE, KERNELS
    hit = getattr(program, "_plan", None)
    if hit is not None and hit[0] == (len(program.steps), owned):
        return hit[1]
    steps = program.steps
    readers = {i: len(u) for i, u in program.users().items()}    # a program output counts as a reader
    out = []
    fused: dict[int, int] = {}               # activation step -> the convolution step computing it
    for s in steps:
        if s.kind != "host":
            out.append(Planned(s.index, s.kind, None, ()))
            continue
        v = s.value
        ref = ops.OPS[v.op].fn
        if s.index in fused:
            out.append(Planned(s.index, "alias", None, (fused[s.index],)))
            continue
        if v.op == "nn.conv2d" and all(a.dtype == "float32" for a in v.args):
            fn = _conv(v, ref)
        elif v.op in KERNELS:
            fn = _with_fallback(KERNELS[v.op], ref, dict(v.attrs))
        elif s.index in owned and v.op in IN_PLACE:
            fn = _in_place(IN_PLACE[v.op], ref, dict(v.attrs))
        else:
            fn = _reference(ref, dict(v.attrs))
        fuse = _fusion(s, steps, readers, owned)
        if fuse is not None:
            consumer, fn = fuse[0], fuse[1](fn)
            fused[consumer.index] = s.index
        out.append(Planned(s.index, "host", fn, tuple(s.args)))
    program._plan = ((len(steps), owned), out)
    return out


FUSED = ("clip", "nn.relu")


def _fusion(s, steps, readers, owned):
    """(the consumer step, a function wrapping ``s``'s function) when ``s`` is fused with its only
    reader: a convolution with the activation (:data:`FUSED`) that owns its result, computed in
    place; a sigmoid with the multiply of its operand by it (SiLU), the product written into the
    sigmoid's fresh result. None otherwise."""
    if readers.get(s.index) != 1 or s.value.dtype != "float32":
        return None
    t = next((t for t in steps[s.index + 1:] if s.index in t.args), None)
    if t is None or t.kind != "host":
        return None
    if s.value.op == "nn.conv2d" and t.value.op in FUSED and t.args[0] == s.index and t.index in owned:
        from compile.runtime.kernels import IN_PLACE
        act, attrs, ref = IN_PLACE[t.value.op], dict(t.value.attrs), ops.OPS[t.value.op].fn
        return t, lambda fn: _fused(fn, act, attrs, ref)
    if s.value.op == "add" and t.value.op == "nn.relu" and t.args[0] == s.index and t.index in owned \
            and s.index in owned and len(s.args) == 2:
        from compile.runtime import jit, kernels
        if kernels.USE_JIT and jit.available():
            relu, ref = kernels.IN_PLACE["nn.relu"], ops.OPS["nn.relu"].fn
            return t, lambda fn: _add_relu(fn, relu, ref)
    if s.value.op == "sigmoid" and t.value.op == "multiply" and sorted(t.args) == sorted((s.index, s.args[0])) \
            and t.value.dtype == "float32" and tuple(t.value.shape) == tuple(s.value.shape):
        return t, _silu
    return None


def _add_relu(fn, relu, relu_ref):
    """A residual block's add and relu as one step: :func:`compile.runtime.jit.add_relu` (one pass
    into the add's first operand, which the add owns) when the operands allow it, else the add
    step ``fn`` and the relu in place on its fresh result (the unfused steps' operations)."""
    from compile.runtime.jit import add_relu
    two_steps = _fused(fn, relu, {}, relu_ref)

    def run(a, b):
        y = add_relu(a, b)
        return y if y is not None else two_steps(a, b)
    return run


def _silu(fn):
    """sigmoid ``fn``, then x * sigmoid(x) into the sigmoid's fresh result (np.multiply, as the
    multiply step computes it)."""
    def run(x):
        y = fn(x)
        if y is not x and isinstance(y, np.ndarray) and y.dtype == _F32 and y.flags.writeable and y.shape == x.shape:
            return np.multiply(x, y, out=y)
        return np.asarray(ops.OPS["multiply"].fn(x, y))
    return run


def _fused(fn, act, act_attrs: dict, act_ref):
    """The convolution ``fn`` with the activation applied to its fresh result in place (the
    reference activation on a result that is not a fresh writeable float32 array)."""
    def run(*a):
        y = fn(*a)
        if isinstance(y, np.ndarray) and y.dtype == _F32 and y.flags.writeable:
            return act(y, **act_attrs)
        return np.asarray(act_ref(y, **act_attrs))
    return run


def _in_place(f, ref, attrs: dict):
    """``f`` into the step's first operand when it is a writeable float32 array, else the
    reference (as :func:`compile.runtime.kernels.evaluate_in_place` decides per call)."""
    def run(x, *rest):
        if isinstance(x, np.ndarray) and x.dtype == _F32 and x.flags.writeable:
            y = f(x, *rest, **attrs)
            if y is not None:
                return y
        return np.asarray(ref(x, *rest, **attrs))
    return run


__all__ = ["Planned", "plan", "FUSED"]
