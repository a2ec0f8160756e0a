"""The inner product of HLSCNN's convolution summary (:func:`ila.models.hlscnn.model.conv_loop_summary`):
per output channel, kernel tap and output pixel, the 8-channel MAC with every product truncated to
16 fraction bits, ``sum_i floor(w_i * a_i / 32)``.

:func:`tap_psums` computes it with a loop compiled by Numba (a well-kept JIT compiler for numpy
loops) when Numba imports, else with numpy one tap at a time (:func:`tap_psums_numpy`); the two are
checked equal by ``tests/test_hlscnn_kernels.py`` (random and extreme operands), and the summary
that uses them is checked against the instruction loop by the summary's differential tests.

Ranges: ``w`` and ``a`` are signed 16-bit values (8-bit weights arrive shifted left by 8), so a
product is below 2**30 in magnitude and a sum of 8 truncated products below 2**28: every result
fits int32 and no intermediate wraps.
"""
from __future__ import annotations

import numpy as np

_JIT: list = []          # [compiled kernel or None] once looked up


def tap_psums_numpy(W: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``out[o, t, p] = sum_i (W[o, t, i] * A[t, p, i]) >> 5`` (int32), ``W`` (O, taps, 8) and
    ``A`` (taps, P, 8) signed 16-bit values as int32; numpy, one tap at a time."""
    O, taps, _ = W.shape
    out = np.empty((O, taps, A.shape[1]), np.int32)
    for t in range(taps):
        out[:, t] = ((W[:, t, None, :] * A[t, None, :, :]) >> 5).sum(axis=-1, dtype=np.int32)
    return out


def _compiled():
    if not _JIT:
        try:
            import numba
        except ImportError:
            _JIT.append(None)
        else:
            @numba.njit(cache=True, nogil=True)
            def psums(W, A):                                    # pragma: no cover (compiled)
                O, T, _ = W.shape
                P = A.shape[1]
                out = np.empty((O, T, P), np.int32)
                for o in range(O):
                    for t in range(T):
                        for p in range(P):
                            s = 0
                            for i in range(8):
                                s += (np.int64(W[o, t, i]) * np.int64(A[t, p, i])) >> 5
                            out[o, t, p] = s
                return out
            _JIT.append(psums)
    return _JIT[0]


def tap_psums(W: np.ndarray, A: np.ndarray) -> np.ndarray:
    """:func:`tap_psums_numpy` of ``W`` and ``A``, by the compiled loop when Numba is available."""
    W = np.ascontiguousarray(W, np.int32)
    A = np.ascontiguousarray(A, np.int32)
    fn = _compiled()
    return tap_psums_numpy(W, A) if fn is None else fn(W, A)


__all__ = ["tap_psums", "tap_psums_numpy"]
