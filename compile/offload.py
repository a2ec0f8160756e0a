"""How the compiler instantiates a mapping at a match: the mapping's shape read off the matched
node and its bound operands (the dimensions of ``python -m verify.mapping --list``).

The patterns themselves come from the registry (:mod:`compile.patterns`); this table only says
which operand dimension is which of the mapping's named dimensions. A mapping missing here is
never offloaded (its matches are reported as refused).
"""
from __future__ import annotations

import math

import numpy as np

from compile.ir.graph import Node


def _prod(xs) -> int:
    return int(math.prod(xs)) if xs else 1


def _linear(node: Node, env: dict):
    x, w = env["?x"], env["?w"]
    return {"T": _prod(x.shape[:-1]), "I": x.shape[-1], "O": w.shape[0]}


def _pool(node: Node, env: dict):
    """The unit pools one [R, C] matrix: an NCHW tensor with one image and one channel."""
    x = env["?x"]
    if len(x.shape) != 4 or x.shape[0] * x.shape[1] != 1 or node.attrs.get("padding", (0,) * 4) != (0,) * 4 \
            or node.attrs.get("ceil_mode"):
        return None
    return {"R": x.shape[2], "C": x.shape[3]}


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


# ----------------------------------------------------------------------------- operands <-> mapping inputs
def _flat(*names):
    return lambda shape, ops: {n: np.asarray(a).reshape(-1) for n, a in zip(names, ops)}


def _linear_in(shape, ops):
    x, w, b = ops
    return {"x": np.asarray(x).reshape(shape["T"], shape["I"]), "w": w, "b": b}


INPUTS_OF = {
    "flexasr.linear": _linear_in,
    "flexasr.maxpool": lambda s, ops: {"x": np.asarray(ops[0]).reshape(s["R"], s["C"])},
    "flexasr.meanpool": lambda s, ops: {"x": np.asarray(ops[0]).reshape(s["R"], s["C"])},
    "flexasr.attention": lambda s, ops: {"dec": np.asarray(ops[0]).reshape(s["H"]), "enc": ops[1]},
    "flexasr.layernorm": lambda s, ops: {"x": np.asarray(ops[0]).reshape(s["T"], s["H"]), "gamma": ops[1],
                                         "beta": ops[2]},
    "hlscnn.conv2d": lambda s, ops: {"x": ops[0], "w": ops[1]},
    "hlscnn.conv2d_w8": lambda s, ops: {"x": ops[0], "w": ops[1]},
    "vta.add": _flat("a", "b"),
    "vta.relu": _flat("a"),
    "vta.gemm": lambda s, ops: {"x": np.asarray(ops[0]).reshape(s["N"], s["K"]), "w": ops[1]},
}


def mapping_inputs(mapping: str, shape: dict, operands: list) -> dict:
    """The named inputs of ``mapping``'s runner from the operand values bound to its pattern's
    ?variables (in order of first appearance), reshaped to the mapping's layout."""
    return INPUTS_OF[mapping](shape, operands)
