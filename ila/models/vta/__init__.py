"""VTA (Versatile Tensor Accelerator), int8: its ILA model, ISA, driver, machine port and fragment runner.

* ``model`` — the ILA (:func:`build_vta`, parameterised by a VTA configuration);
* ``isa`` — the instruction encoder/decoder (128-bit VTA instructions, bit fields);
* ``driver`` — programs of instructions and DRAM images, run on the ILA simulator;
* ``reference`` — an independent numpy reference (the behavioural simulator's semantics);
* ``summaries`` — tensor-level summaries of the child loops (simulator only, checked equal to the
  loops by ``tests/test_vta_summaries.py``).
"""
from ila.models.vta.model import build_vta

__all__ = ["build_vta"]
