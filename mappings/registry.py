"""Registry of IR-accelerator mappings by dotted name (``accelerator.operation``).

A mapping is registered by listing its module here; each module exports ``MAPPING``. The test
suite is parametrised over this registry, so a registered mapping is tested by being registered.
"""
from __future__ import annotations

import difflib
import importlib

from .base import Mapping, MappingError

MODULES: dict[str, str] = {
    # name -> module exporting MAPPING
    # flexasr.attention runs under checked data preconditions (exp-sum < 4 etc.) with a tolerance
    # that depends on the shape (the unit's 1/16-quantised probabilities err more at small H and
    # large T; measured in paper_results/attention_error.md, e.g. 3 % at 64x64, ~25 % at H = 16)
    "flexasr.attention": "mappings.flexasr.attention",
    "flexasr.layernorm": "mappings.flexasr.layernorm",
    "flexasr.linear": "mappings.flexasr.linear",
    # the front-end's dense with bias at any I, O (zero padding to FlexASR's vector sizes in the program)
    "flexasr.linear_pad": "mappings.flexasr.linear_pad",
    "flexasr.lstm": "mappings.flexasr.lstm",
    "flexasr.maxpool": "mappings.flexasr.maxpool",
    # chain mappings (Mapping.fuses): consecutive pools fused into one program; certified before
    # the compiler fuses such calls, never matched by the compiler themselves
    "flexasr.maxpool_chain": "mappings.flexasr.maxpool_chain",
    "flexasr.meanpool": "mappings.flexasr.meanpool",
    "flexasr.meanpool_chain": "mappings.flexasr.meanpool_chain",
    "hlscnn.conv2d": "mappings.hlscnn.conv2d",
    "hlscnn.conv2d_w8": "mappings.hlscnn.conv2d_w8",
    # the front-end's padded NCHW convolution as it is (layout and padding inside the program)
    "hlscnn.conv2d_nchw": "mappings.hlscnn.conv2d_nchw",
    "hlscnn.conv2d_nchw_w8": "mappings.hlscnn.conv2d_nchw_w8",
    "vta.add": "mappings.vta.add",
    "vta.dense": "mappings.vta.dense",
    # the front-end's dense with bias as it is (bias added on the host after dequantisation)
    "vta.dense_bias": "mappings.vta.dense_bias",
    "vta.gemm": "mappings.vta.gemm",
    "vta.relu": "mappings.vta.relu",
}


def names() -> list[str]:
    return sorted(MODULES)


def get(name: str) -> Mapping:
    """The mapping called ``name``; MappingError listing close matches when there is none."""
    if name not in MODULES:
        close = difflib.get_close_matches(name, names(), n=4, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(names()) or 'none'}"
        raise MappingError(f"unknown mapping {name!r}{hint}")
    mod = importlib.import_module(MODULES[name])
    m = mod.MAPPING
    if m.name != name:
        raise MappingError(f"module {MODULES[name]} registers {m.name!r}, not {name!r}")
    return m


def all_mappings() -> list[Mapping]:
    return [get(n) for n in names()]


def register(name: str, module: str) -> None:
    """Register a mapping module at run time (used by tests for deliberately broken variants)."""
    MODULES[name] = module
