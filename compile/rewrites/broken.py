"""Seeded wrong rewrites: the certification must refute each (compile.rewrites.certify)."""
from __future__ import annotations

from compile.ir.graph import call, var
from compile.rewrites.base import Rewrite
from compile.rewrites import rules


def _pool_wrong_stride(p):
    """Claims a (2a, 1)/(a, 1) window is a (a,1)/(1,1) pool then a (2,1)/(a,1) pool: the first
    pool's stride is wrong (windows of a + 1 rows, not 2a)."""
    a = p["a"]
    x = var("x", (1, 1, p["H"], 1))
    lhs = call("nn.max_pool2d", x, pool_size=(2 * a, 1), strides=(a, 1))
    first = call("nn.max_pool2d", x, pool_size=(a, 1), strides=(1, 1))
    return [x], lhs, call("nn.max_pool2d", first, pool_size=(2, 1), strides=(a, 1))


BROKEN = (
    Rewrite("conv2d_im2col_transposed_kernel", "im2col with the kernel's KH and KW axes swapped",
            lambda p: rules._conv_im2col(p, kernel_axes=(0, 1, 3, 2)), lambda p: p["KH"] == p["KW"],
            lambda rng: dict(C=2, O=2, KH=2, KW=2, S=1, P=0, H=int(rng.integers(2, 6)), W=int(rng.integers(2, 6))),
            (dict(C=1, O=1, KH=2, KW=2, S=1, P=0, H=2, W=2),)),
    Rewrite("maxpool_split_wrong_stride", "a (2a,1)/(a,1) pool split with the first pool at stride 1",
            _pool_wrong_stride, lambda p: p["H"] >= 2 * p["a"] and p["H"] % 2 == 0,
            lambda rng: dict(a=2, H=2 * int(rng.integers(2, 6))), (dict(a=2, H=6),)),
)
