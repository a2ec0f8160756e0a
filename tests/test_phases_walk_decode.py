"""The phase checker's walk decides a command's instruction by the compiled decodes when every
value they read is a constant (:meth:`verify.phases._Walk._decode_const`); wherever it decides, it
agrees with the rewriting path (:meth:`verify.phases._Walk._decode`), on HLSCNN's and VTA's emitted
streams; a seeded bug (decodes paired with the wrong instructions) makes them disagree."""
import pytest

from mappings.hlscnn.conv2d_nchw_chc import phase_proof as hlscnn_proof
from mappings.vta.gemm_chc import phase_proof as vta_proof
from verify import phases as V


def _decisions(proof):
    """(fast, rewriting) instruction pairs of every command the fast path decided, on every side."""
    pairs = []
    orig = V._Walk._decode_const

    def both(self, cmd, state):
        got = orig(self, cmd, state)
        if got is not None:
            pairs.append((got, self._decode(cmd, -1, state)))
        return got
    V._Walk._decode_const = both
    try:
        for name, side in proof.sides.items():
            V._Walk(side, [p for p in proof.phases if p.side == name], "z3", 10.0)
    finally:
        V._Walk._decode_const = orig
    return pairs


def _proofs():
    return [hlscnn_proof({"H": 3, "W": 3, "C": 9, "O": 2, "K": 2, "S": 1, "P": 1}, 16),
            vta_proof({"N": 2, "K": 20, "M": 18})]


def test_the_compiled_decodes_agree_with_rewriting():
    for proof in _proofs():
        pairs = _decisions(proof)
        assert len(pairs) >= 5
        assert all(a is b for a, b in pairs)


def test_a_seeded_decode_bug_is_caught(monkeypatch):
    monkeypatch.setattr(V._Walk, "DECODE_BUG", "shifted")
    caught = 0
    for proof in _proofs():
        try:
            pairs = _decisions(proof)
        except V.PhaseError:               # a wrong instruction's updates broke the walk itself
            caught += 1
            continue
        caught += any(a is not b for a, b in pairs)
    assert caught == 2
