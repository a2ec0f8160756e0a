"""HLSCNN (8/16-bit fixed-point convolution): its ILA model, driver, machine port and fragment runner.

* ``model`` — the ILA (:func:`build_hlscnn`) and its address map;
* ``numerics`` — the fixed-point arithmetic as uninterpreted functions with numpy bodies;
* ``driver`` — the MMIO encoder of a convolution (register writes, scratchpad stores) and its run
  on the ILA simulator (HLSCNN's "ISA" is its MMIO register map, so encoder and driver share a file);
* ``reference`` — an independent numpy reference of the unit's arithmetic.
"""
from ila.models.hlscnn.model import build_hlscnn

__all__ = ["build_hlscnn"]
