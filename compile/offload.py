"""How the compiler instantiates a mapping at a match: the mapping's shape read off the matched
node and its bound operands, and the runner's named inputs from the operand values.

Both are declared by the mapping itself (``Mapping.match_shape`` and ``Mapping.bind_operands``,
:mod:`mappings.base`), so they belong to the mapping's sources and to the digest of every
certificate the gate accepts for it: changing an adapter invalidates the certificates. The
patterns come from the registry too (:mod:`compile.patterns`). A mapping that declares no adapter
is never offloaded (its matches cannot be instantiated).
"""
from __future__ import annotations

from compile.ir.graph import Node


def _mapping(name: str):
    from mappings.registry import get
    return get(name)


def shape_of(mapping: str, node: Node, env: dict) -> dict | None:
    """The mapping's shape at this match (``env``: the pattern's bindings, ``?var`` -> Value), or
    None when the match cannot be instantiated (no adapter, or one that refuses the match)."""
    fn = _mapping(mapping).match_shape
    if fn is None:
        return None
    shapes = {k: tuple(v.shape) for k, v in env.items() if isinstance(k, str) and k.startswith("?")}
    return fn(dict(node.attrs), shapes, tuple(node.shape))


def mapping_inputs(mapping: str, shape: dict, operands: list) -> dict:
    """The named inputs of ``mapping``'s runner from the operand values bound to its pattern's
    ?variables (in order of first appearance), reshaped to the mapping's layout."""
    return _mapping(mapping).bind_operands(shape, operands)
