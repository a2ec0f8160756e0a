"""How the compiler instantiates a mapping at a match: the mapping's shape read off the matched
node and its bound operands (the dimensions of ``python -m verify.mapping --list``).

The patterns themselves come from the registry (:mod:`compile.patterns`); this table only says
which operand dimension is which of the mapping's named dimensions. A mapping missing here is
never offloaded (its matches are reported as refused).
"""
from __future__ import annotations

import math

from compile.ir.graph import Node


def _prod(xs) -> int:
    return int(math.prod(xs)) if xs else 1


def _linear(node: Node, env: dict):
    x, w = env["?x"], env["?w"]
    return {"T": _prod(x.shape[:-1]), "I": x.shape[-1], "O": w.shape[0]}


def _pool(node: Node, env: dict):
    x = env["?x"]
    return {"R": x.shape[2], "C": x.shape[3]} if len(x.shape) == 4 else None


def _conv(node: Node, env: dict):
    x, w = env["?x"], env["?w"]
    if node.attrs.get("data_layout") == "NHWC":          # x[1, H, W, C], w[O, K, K, C]
        x = (x.shape[0], x.shape[3], x.shape[1], x.shape[2])
        w = (w.shape[0], w.shape[3], w.shape[1], w.shape[2])
    else:
        x, w = x.shape, w.shape
    if len(x) != 4 or w[2] != w[3] or x[0] != 1:
        return None
    return {"H": x[2], "W": x[3], "C": x[1], "O": w[0], "K": w[2], "S": node.attrs["strides"][0]}


SHAPE_OF = {
    "flexasr.linear": _linear,
    "flexasr.maxpool": _pool,
    "flexasr.meanpool": _pool,
    "flexasr.attention": lambda n, e: {"T": e["?enc"].shape[0], "H": e["?enc"].shape[1]},
    "flexasr.layernorm": lambda n, e: {"T": _prod(e["?x"].shape[:-1]), "H": e["?x"].shape[-1]},
    "hlscnn.conv2d": _conv,
    "hlscnn.conv2d_w8": _conv,
    "vta.add": lambda n, e: {"n": _prod(n.shape)} if tuple(e["?a"].shape) == tuple(e["?b"].shape) else None,
    "vta.relu": lambda n, e: {"n": _prod(n.shape)},
    "vta.gemm": lambda n, e: {"N": _prod(e["?x"].shape[:-1]), "K": e["?x"].shape[-1], "M": e["?w"].shape[0]},
}


def shape_of(mapping: str, node: Node, env: dict) -> dict | None:
    """The mapping's shape at this match, or None when the match cannot be instantiated."""
    fn = SHAPE_OF.get(mapping)
    return None if fn is None else fn(node, env)
