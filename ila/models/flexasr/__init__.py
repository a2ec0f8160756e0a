"""The FlexASR ILA model (PrincetonUniversity/flexnlp-ila, in the ``ila`` DSL) and its assembler.

``build_flexasr()`` returns the top-level :class:`~ila.Ila`; see the module docstrings of
``constants`` (address map, register packing), ``model`` (interface, state, configuration and
data-movement instructions) and the child ILAs (``layer_reduce``, ``gb_control``, ``layer_norm``,
``attention``, ``zero_padding``). ``isa`` (the assembler) turns tensor-level programs into MMIO commands.
"""
from __future__ import annotations

from functools import lru_cache

from ila.models.flexasr.model import Flex, build_top


def build_flexasr_handles() -> Flex:
    """Build the model and return the handle object (``.m`` is the Ila)."""
    from ila.models.flexasr import attention, gb_control, layer_norm, zero_padding
    from ila.models.flexasr.layer_reduce import build_layer_reduce
    f = build_top()
    build_layer_reduce(f)
    for child in (gb_control, layer_norm, attention, zero_padding):     # the child ILAs
        child.build(f)
    return f


def build_flexasr():
    """The FlexASR ILA (a fresh model each call)."""
    return build_flexasr_handles().m


@lru_cache(maxsize=1)
def shared_model():
    """One cached model instance (building takes a moment; simulators share it)."""
    return build_flexasr()


__all__ = ["build_flexasr", "build_flexasr_handles", "shared_model", "Flex"]
