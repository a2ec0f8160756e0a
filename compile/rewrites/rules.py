"""The compiler-IR rewrites (equality saturation applies them in both directions where stated).

Each is certified by :mod:`compile.rewrites.certify` before use. Sources: the paper's §3 and
Figure 7 (zero-bias dense, add as bias_add, max-pool windows as stacked temporal pools with
transposes), Glenside's im2col (conv2d as a matrix product), and layout algebra.
"""
from __future__ import annotations

import numpy as np

from compile.ir.graph import call, const, var
from compile.rewrites.base import Rewrite


def _dense_zero_bias(p):
    x, w = var("x", (p["N"], p["K"])), var("w", (p["M"], p["K"]))
    lhs = call("nn.dense", x, w)
    return [x, w], lhs, call("nn.bias_add", lhs, const(np.zeros(p["M"], np.float32)), axis=1)


def _add_bias(p):
    x, b = var("x", (p["N"], p["C"], p["H"], p["W"])), var("b", (p["C"], 1, 1))
    return [x, b], call("add", x, b), call("nn.bias_add", x, call("reshape", b, newshape=(p["C"],)), axis=1)


def conv_out(p):
    oh = (p["H"] + 2 * p["P"] - p["KH"]) // p["S"] + 1
    ow = (p["W"] + 2 * p["P"] - p["KW"]) // p["S"] + 1
    return oh, ow


def _conv_im2col(p, kernel_axes=(0, 1, 2, 3)):
    C, O, KH, KW, S, P = p["C"], p["O"], p["KH"], p["KW"], p["S"], p["P"]
    x, w = var("x", (1, C, p["H"], p["W"])), var("w", (O, C, KH, KW))
    lhs = call("nn.conv2d", x, w, strides=(S, S), padding=(P, P, P, P))
    oh, ow = conv_out(p)
    cols = call("nn.im2col", x, kernel_size=(KH, KW), strides=(S, S), padding=(P, P, P, P))
    wk = w if kernel_axes == (0, 1, 2, 3) else call("transpose", w, axes=kernel_axes)
    mat = call("nn.dense", cols, call("reshape", wk, newshape=(O, C * KH * KW)))
    rhs = call("transpose", call("reshape", mat, newshape=(1, oh, ow, O)), axes=(0, 3, 1, 2))
    return [x, w], lhs, rhs


def _pool_split(p):
    """A window of a*b rows with stride a = a (a,1)/(a,1) pool, then a (b,kw)/(1,sw) pool."""
    a, b, kw, sw = p["a"], p["b"], p["kw"], p["sw"]
    x = var("x", (p["N"], p["C"], p["H"], p["W"]))
    lhs = call("nn.max_pool2d", x, pool_size=(a * b, kw), strides=(a, sw))
    first = call("nn.max_pool2d", x, pool_size=(a, 1), strides=(a, 1))
    return [x], lhs, call("nn.max_pool2d", first, pool_size=(b, kw), strides=(1, sw))


def _pool_transpose(p):
    x = var("x", (p["N"], p["C"], p["H"], p["W"]))
    lhs = call("nn.max_pool2d", x, pool_size=(p["kh"], p["kw"]), strides=(p["sh"], p["sw"]))
    t = call("transpose", x, axes=(0, 1, 3, 2))
    inner = call("nn.max_pool2d", t, pool_size=(p["kw"], p["kh"]), strides=(p["sw"], p["sh"]))
    return [x], lhs, call("transpose", inner, axes=(0, 1, 3, 2))


def _transpose_pair(p):
    x = var("x", p["shape"])
    q1, q2 = p["p1"], p["p2"]
    both = tuple(q1[k] for k in q2)
    return [x], call("transpose", call("transpose", x, axes=q1), axes=q2), call("transpose", x, axes=both)


def _reshape_pair(p):
    x = var("x", p["shape"])
    return [x], call("reshape", call("reshape", x, newshape=p["s1"]), newshape=p["s2"]), \
        call("reshape", x, newshape=p["s2"])


def _dims(rng, n, lo=1, hi=5):
    return [int(v) for v in rng.integers(lo, hi + 1, n)]


def _rand_conv(rng):
    C, O, KH, KW = _dims(rng, 4, 1, 3)
    S, P = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    H, W = KH + int(rng.integers(0, 6)), KW + int(rng.integers(0, 6))
    return dict(C=C, O=O, KH=KH, KW=KW, S=S, P=P, H=H, W=W)


def _rand_split(rng):
    a, b, kw, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    N, C = _dims(rng, 2, 1, 2)
    return dict(a=a, b=b, kw=kw, sw=sw, N=N, C=C, H=a * b + int(rng.integers(0, 7)), W=kw + int(rng.integers(0, 4)))


def _rand_pool(rng):
    kh, kw, sh, sw = _dims(rng, 4, 1, 3)
    N, C = _dims(rng, 2, 1, 2)
    return dict(kh=kh, kw=kw, sh=sh, sw=sw, N=N, C=C, H=kh + int(rng.integers(0, 5)), W=kw + int(rng.integers(0, 5)))


def _rand_perm_pair(rng):
    shape = tuple(_dims(rng, 3, 1, 4))
    return dict(shape=shape, p1=tuple(int(v) for v in rng.permutation(3)), p2=tuple(int(v) for v in rng.permutation(3)))


def _rand_reshapes(rng):
    a, b, c = _dims(rng, 3, 1, 4)
    return dict(shape=(a, b, c), s1=(a * b, c), s2=(a, b * c))


def _ok_split(p):
    return p["H"] >= p["a"] * p["b"] and p["W"] >= p["kw"]


RULES = (
    Rewrite("dense_zero_bias", "nn.dense(x, w) => nn.bias_add(nn.dense(x, w), zeros[M])  (paper §3: MobileNet-V2)",
            _dense_zero_bias, lambda p: True, lambda rng: dict(zip("NKM", _dims(rng, 3))),
            (dict(N=2, K=3, M=2),)),
    Rewrite("add_bias", "add(x[N,C,H,W], b[C,1,1]) => nn.bias_add(x, reshape(b, [C]), axis=1)",
            _add_bias, lambda p: True, lambda rng: dict(zip("NCHW", _dims(rng, 4))), (dict(N=1, C=2, H=2, W=2),)),
    Rewrite("conv2d_im2col", "nn.conv2d(x, w) => transpose(reshape(nn.dense(nn.im2col(x), reshape(w, [O, C*KH*KW])), "
            "[1, OH, OW, O]), (0, 3, 1, 2))  (groups 1, batch 1; Glenside's im2col)",
            _conv_im2col, lambda p: conv_out(p)[0] > 0 and conv_out(p)[1] > 0, _rand_conv,
            (dict(C=2, O=2, KH=2, KW=2, S=1, P=0, H=3, W=3), dict(C=1, O=2, KH=2, KW=1, S=2, P=1, H=3, W=2))),
    Rewrite("maxpool_split", "nn.max_pool2d(x, (a*b, kw), (a, sw)) => nn.max_pool2d(nn.max_pool2d(x, (a, 1), (a, 1)), "
            "(b, kw), (1, sw))  (Figure 7: large windows as stacked temporal pools)",
            _pool_split, _ok_split, _rand_split,
            (dict(a=2, b=2, kw=1, sw=1, N=1, C=1, H=6, W=2), dict(a=2, b=1, kw=2, sw=2, N=1, C=2, H=4, W=4))),
    Rewrite("maxpool_transpose", "nn.max_pool2d(x, (kh, kw), (sh, sw)) => transpose(nn.max_pool2d(transpose(x, "
            "(0, 1, 3, 2)), (kw, kh), (sw, sh)), (0, 1, 3, 2))  (Figure 7: pooling along W as pooling along H)",
            _pool_transpose, lambda p: p["H"] >= p["kh"] and p["W"] >= p["kw"], _rand_pool,
            (dict(kh=2, kw=1, sh=2, sw=1, N=1, C=1, H=4, W=3),)),
    Rewrite("transpose_pair", "transpose(transpose(x, p), q) => transpose(x, p∘q)", _transpose_pair,
            lambda p: True, _rand_perm_pair, (dict(shape=(2, 3, 2), p1=(1, 2, 0), p2=(2, 0, 1)),)),
    Rewrite("reshape_pair", "reshape(reshape(x, s1), s2) => reshape(x, s2)", _reshape_pair, lambda p: True,
            _rand_reshapes, (dict(shape=(2, 3, 2), s1=(6, 2), s2=(2, 6)),)),
)
