"""The compiler-IR ILA (Relay operators): model, numerics and operator sequences (no MMIO port).

* ``model`` — the ILA (:func:`relay_ila`: one instruction per operator, ``FUNC_IDS``) and
  :class:`RelayMachine`, its simulator driver;
* ``numerics`` — element types (float32, int32, abstract types for proofs);
* ``seq`` — the sequence-model operators (layer norm, LSTM layer, batch matmul, softmax).
"""
from ila.models.relay.model import FUNC_IDS, RelayMachine, relay_ila

__all__ = ["FUNC_IDS", "RelayMachine", "relay_ila"]
