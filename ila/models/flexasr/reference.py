"""Float32 numpy reference implementations of the six FlexASR operations (the IR semantics).

These are what the paper's IR interpreter computes for the Relay fragments that map to FlexASR
(Table 2 compares the ILA simulator against them). All tensors are float32; time is the leading
axis. Shapes:

* ``linear_layer(x[T, I], w[O, I], b[O]) -> [T, O]``: ``nn.dense`` + ``nn.bias_add``.
* ``lstm_layer(x[T, I], w_ih[4H, I], w_hh[4H, H], b[4H], h0, c0) -> [T, H]``: one LSTM layer,
  PyTorch gate order (i, f, g, o) in the weight rows, bias = b_ih + b_hh; returns the sequence
  of hidden states only (as the paper's LSTM integration does).
* ``layernorm(x[T, H], gamma[H], beta[H], eps) -> [T, H]``: normalise each timestep over H.
* ``maxpool(x[T, H]) -> [T/2, H]``: ``reduceMax`` over windows (2, 1) with stride (2, 1)
  (Figure 7 (a)); ``meanpool`` likewise with the mean.
* ``attention(enc[T, H], dec[H]) -> [H]``: dot-product attention of one decoder state over the
  encoder timesteps: ``softmax(enc @ dec) @ enc``.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=F32)


def linear_layer(x, w, b=None) -> np.ndarray:
    x, w = _f(x), _f(w)
    y = x @ w.T
    return (y + _f(b)) if b is not None else y


def _sigmoid(x):
    return F32(1) / (F32(1) + np.exp(-x))


def lstm_layer(x, w_ih, w_hh, b=None, h0=None, c0=None) -> np.ndarray:
    x, w_ih, w_hh = _f(x), _f(w_ih), _f(w_hh)
    hidden = w_hh.shape[1]
    h = np.zeros(hidden, F32) if h0 is None else _f(h0)
    c = np.zeros(hidden, F32) if c0 is None else _f(c0)
    b = np.zeros(4 * hidden, F32) if b is None else _f(b)
    out = np.empty((x.shape[0], hidden), F32)
    for t in range(x.shape[0]):
        g = w_ih @ x[t] + w_hh @ h + b
        i, f, gg, o = np.split(g, 4)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
        h = _sigmoid(o) * np.tanh(c)
        out[t] = h
    return out


def layernorm(x, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    x = _f(x)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + F32(eps))
    if gamma is not None:
        y = y * _f(gamma)
    if beta is not None:
        y = y + _f(beta)
    return y.astype(F32)


def _pairs(x) -> np.ndarray:
    x = _f(x)
    if x.ndim != 2 or x.shape[0] % 2:
        raise ValueError(f"temporal pooling needs a [T, H] tensor with even T, got shape {x.shape}")
    return x.reshape(x.shape[0] // 2, 2, x.shape[1])


def maxpool(x) -> np.ndarray:
    return _pairs(x).max(axis=1)


def meanpool(x) -> np.ndarray:
    return _pairs(x).mean(axis=1, dtype=F32)


def attention(enc, dec) -> np.ndarray:
    enc, dec = _f(enc), _f(dec)
    s = enc @ dec
    p = np.exp(s - s.max())
    p = p / p.sum()
    return (p @ enc).astype(F32)


def frobenius_rel_error(ref, acc) -> float:
    """‖ref − acc‖_F / ‖ref‖_F (the paper's Table 2 metric)."""
    ref = np.asarray(ref, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    return float(np.linalg.norm(ref - acc) / np.linalg.norm(ref))


__all__ = ["linear_layer", "lstm_layer", "layernorm", "maxpool", "meanpool", "attention",
           "frobenius_rel_error"]
