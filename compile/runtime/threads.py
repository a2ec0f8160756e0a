"""The host runtime's thread setting: how many threads the native libraries under its numpy
operators (the BLAS behind matrix products and convolutions; OpenMP where a library uses it) may
use, through ``threadpoolctl`` -- so the runtime's speed no longer depends on whatever
``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` the process started with.

* :func:`host_threads` -- a context manager: ``with host_threads(1): run(graph, feeds)``; ``None``
  leaves the libraries as they are. Measurements use :data:`MEASURE_THREADS` (1), as onnxruntime's
  ``intra_op_num_threads=1`` and ``torch.set_num_threads(1)`` beside it.
* :func:`set_host_threads` -- the process-wide setting (returns the previous one, for restoring).
* :func:`current` -- the thread count of each native thread pool now loaded.

The numpy operators themselves are single-threaded Python; only the libraries' pools change
(and PyTorch's intra-op pool when torch is loaded: the float32 convolutions of
:mod:`compile.runtime.kernels` run there).
Errors: a count that is not a positive integer is a CompileError naming it.
"""
from __future__ import annotations

import contextlib
import sys

from compile.errors import CompileError

MEASURE_THREADS = 1          # the setting every speed measurement of the host runtime uses

_controller = None


def _ctl(refresh: bool = False):
    """A cached ``threadpoolctl.ThreadpoolController`` (libraries loaded later: ``refresh``)."""
    global _controller
    if _controller is None or refresh:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller


def _check(n) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CompileError(f"host threads must be a positive integer or None, got {n!r}")
    return n


@contextlib.contextmanager
def host_threads(n: int | None):
    """Limit the host runtime's native thread pools to ``n`` threads inside the ``with`` block
    (``None``: no change). Restores the previous counts on exit."""
    n = _check(n)
    if n is None:
        yield
        return
    torch = sys.modules.get("torch")          # the float32 convolution kernels' own intra-op pool
    before = torch.get_num_threads() if torch is not None else None
    try:
        if torch is not None:
            torch.set_num_threads(n)
        with _ctl().limit(limits=n):
            yield
    finally:
        if before is not None:
            torch.set_num_threads(before)


def set_host_threads(n: int) -> dict[str, int]:
    """Set the native thread pools to ``n`` threads for the rest of the process; returns the
    previous counts ({library: threads}) for :func:`restore`."""
    n = _check(n)
    before = current()
    if n is not None:
        _ctl(refresh=True).limit(limits=n)
    return before


def restore(previous: dict[str, int]) -> None:
    """Put back counts returned by :func:`set_host_threads`."""
    ctl = _ctl(refresh=True)
    for lib in ctl.lib_controllers:
        if lib.internal_api in previous:
            lib.set_num_threads(previous[lib.internal_api])


def current() -> dict[str, int]:
    """{library (openblas, mkl, openmp, ...): its thread count} of the pools loaded now."""
    return {lib.internal_api: lib.num_threads for lib in _ctl(refresh=True).lib_controllers}
