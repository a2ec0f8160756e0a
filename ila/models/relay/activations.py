"""Element-wise activation operators of the compiler-IR ILA, an extension of
:func:`~ila.models.relay.model.relay_ila`: ``sigmoid`` (32: x, out, n) and ``tanh`` (33: x, out, n),
out[i] = f(x[i]) for i < n, in the relay ILA's style (a top-level instruction latching the
arguments, a child ILA with one STEP per element).

They are the operators of an unrolled LSTM cell (:mod:`compile.rewrites.unroll`); only the exact
checks of compiler-IR rewrites use them (``int32_uf`` numerics: sigmoid and tanh uninterpreted), so
they live beside the ILA that mapping proofs use rather than in it. Importing this module registers
their ``func_id`` values in :data:`~ila.models.relay.model.FUNC_IDS` (ids no operator of the
base ILA uses).

Source of the semantics: TVM Relay's ``sigmoid`` and ``tanh`` (element-wise).
"""
from __future__ import annotations

from ila import Ila
from ila.models.relay.model import FUNC_IDS, _Ctx, _elementwise, relay_ila
from ila.models.relay.numerics import NUMERICS, Numerics

ACTIVATION_IDS = {"sigmoid": 32, "tanh": 33}
if set(ACTIVATION_IDS.values()) & {v for k, v in FUNC_IDS.items() if k not in ACTIVATION_IDS}:
    raise ImportError("the activation func_ids collide with an operator of the compiler-IR ILA")
FUNC_IDS.update(ACTIVATION_IDS)


def relay_ila_with_activations(numerics: str | Numerics = "int32_uf", *, tensor_entries: int = 1 << 16) -> Ila:
    """:func:`~ila.models.relay.model.relay_ila` for ``numerics`` plus the ``sigmoid`` and ``tanh``
    instructions (absent, and listed in ``unsupported_ops``, where the numerics lack them, e.g.
    plain ``int32``)."""
    num = NUMERICS[numerics] if isinstance(numerics, str) else numerics
    m = relay_ila(num, tensor_entries=tensor_entries)
    ctx = _Ctx(m, num)
    _elementwise(ctx, "sigmoid", lambda x, _: num.sigmoid(x), False)
    _elementwise(ctx, "tanh", lambda x, _: num.tanh(x), False)
    m.unsupported_ops = tuple(m.unsupported_ops) + tuple(ctx.unsupported)
    return m
