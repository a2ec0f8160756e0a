"""Independent numpy references for HLSCNN conv2d (no ILA, no shared datapath helpers).

:func:`conv2d_fixed_ref` recomputes the accelerator's fixed-point arithmetic over whole tensors,
written directly from the format definitions in :mod:`ila.numerics.fixed_point`'s docstring:
for each kernel tap ``(cb, ky, kx)`` in order, the 8-channel MAC with every product truncated to
16 fraction bits (32-bit wrap), rounding half up to 7 fraction bits with saturation to int16,
accumulation into the int16 partial output (wrapping), and after the last tap bias, ReLU and
truncation. :func:`conv2d_float_ref` is the float32 IR reference (NHWC, OHWI, valid padding).
"""
from __future__ import annotations

import numpy as np


def _wrap(v, bits):
    m = 1 << bits
    return (np.asarray(v, dtype=np.int64) + (m >> 1)) % m - (m >> 1)


def conv2d_fixed_ref(x_raw, w_raw, *, stride: int = 1, weight_bits: int = 16, bias_raw: int | None = None,
                     relu: bool = False) -> np.ndarray:
    """x_raw: (H, W, C) ACT raw ints (host padding already applied); w_raw: (O, KH, KW, C) raw
    ints in the design's weight format. Returns (1, OH, OW, O) ACT raw ints."""
    x = np.asarray(x_raw, dtype=np.int64)
    w = np.asarray(w_raw, dtype=np.int64)
    if weight_bits == 8:
        w = w * 256                                   # 6 -> 14 fraction bits (zero low byte)
    H, W, C = x.shape
    O, KH, KW, _ = w.shape
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    ncb = -(-C // 8)
    xp = np.zeros((H, W, ncb * 8), np.int64)
    xp[:, :, :C] = x
    wp = np.zeros((O, KH, KW, ncb * 8), np.int64)
    wp[..., :C] = w
    acc = np.zeros((OH, OW, O), np.int64)
    for cb in range(ncb):
        for ky in range(KH):
            for kx in range(KW):
                patch = xp[ky:ky + stride * (OH - 1) + 1:stride, kx:kx + stride * (OW - 1) + 1:stride,
                           cb * 8:(cb + 1) * 8]                       # (OH, OW, 8)
                taps = wp[:, ky, kx, cb * 8:(cb + 1) * 8]            # (O, 8)
                prod = patch[:, :, None, :] * taps[None, None, :, :]  # exact, 21 fraction bits
                psum = _wrap(np.floor_divide(prod, 32).sum(axis=-1), 32)
                c = np.clip(np.floor_divide(psum + 256, 512), -32768, 32767)
                first = cb == 0 and ky == 0 and kx == 0
                last = cb == ncb - 1 and ky == KH - 1 and kx == KW - 1
                total = c if first else c + acc                       # exact (ACT units)
                if not last:
                    acc = _wrap(total, 16)
                    continue
                p = total * 512                                       # PSUM units (16 frac)
                if bias_raw is not None:
                    p = p + int(bias_raw) * 4
                if relu:
                    p = np.maximum(p, 0)
                acc = _wrap(np.floor_divide(p, 512), 16)
    return acc[None]


def conv2d_float_ref(x, w, *, stride: int = 1, padding=0, bias=None, relu: bool = False) -> np.ndarray:
    """float32 conv2d: x (1, H, W, C), w (O, KH, KW, C) -> (1, OH, OW, O)."""
    x = np.asarray(x, dtype=np.float32)[0]
    w = np.asarray(w, dtype=np.float32)
    ph, pw = (padding, padding) if np.isscalar(padding) else tuple(padding)
    x = np.pad(x, ((ph, ph), (pw, pw), (0, 0)))
    H, W, C = x.shape
    O, KH, KW, _ = w.shape
    OH, OW = (H - KH) // stride + 1, (W - KW) // stride + 1
    out = np.zeros((OH, OW, O), np.float32)
    for ky in range(KH):
        for kx in range(KW):
            patch = x[ky:ky + stride * (OH - 1) + 1:stride, kx:kx + stride * (OW - 1) + 1:stride, :]
            out += (patch.reshape(-1, C) @ w[:, ky, kx, :].T).reshape(OH, OW, O).astype(np.float32)
    if bias is not None:
        out = out + np.float32(bias)
    if relu:
        out = np.maximum(out, 0)
    return out[None]


__all__ = ["conv2d_fixed_ref", "conv2d_float_ref"]
