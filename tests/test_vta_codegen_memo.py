"""The VTA code generator's fast paths: the memo of instruction and micro-op encodings, the
accumulator-row map of the read-back, each checked equal to the path it shortcuts (random
instructions under two configurations, random entry sets), with a seeded memo bug (a key without
the configuration) that the cross-configuration check catches."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ila.models.vta import isa as V
from mappings.vta.common import _rows_of

SMALL = dataclasses.replace(V.DEFAULT_CONFIG, log_acc_buff_size=15, log_uop_buff_size=12)


def _gemm(seed: int, cfg) -> V.GemmInsn:
    lay, rng = V.gemm_layout(cfg), np.random.default_rng(seed)
    vals = {n: int(rng.integers(0, 1 << f.width)) for n, f in lay.items()
            if n not in ("opcode", "pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")}
    return V.GemmInsn(**vals, deps=V.Deps(*(bool(b) for b in rng.integers(0, 2, 4))))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_memoised_encodings_are_the_encoder_s(seed):
    for cfg in (V.DEFAULT_CONFIG, SMALL):
        g = _gemm(seed, cfg)
        assert V.encode(g, cfg) == V._encode(g, cfg) == V.encode(g, cfg)
        u = V.Uop(*(seed % (1 << f.width) for f in V.uop_layout(cfg).values()))
        assert V.encode_uop(u, cfg) == V._encode_uop(u, cfg)
        m = V.MemInsn(V.OP_LOAD, V.MEM_INP, seed % 2048, seed % (1 << 32), 1 + seed % 7, 2, 2)
        assert V.encode(m, cfg) == V._encode(m, cfg)


def test_one_instruction_under_two_configurations_gets_each_configuration_s_word(monkeypatch):
    g = V.GemmInsn(uop_bgn=5, uop_end=6, iter_out=3, iter_in=2, dst_factor_out=7, src_factor_in=1)
    words = [V.encode(g, cfg) for cfg in (V.DEFAULT_CONFIG, SMALL)]
    assert words == [V._encode(g, V.DEFAULT_CONFIG), V._encode(g, SMALL)] and words[0] != words[1]
    # the seeded bug: a memo key without the configuration returns the first configuration's word
    real = V._memo_key
    monkeypatch.setattr(V, "_memo_key", lambda kind, insn, cfg: real(kind, insn, V.DEFAULT_CONFIG))
    monkeypatch.setattr(V, "_WORDS", {})
    assert [V.encode(g, cfg) for cfg in (V.DEFAULT_CONFIG, SMALL)] != [V._encode(g, V.DEFAULT_CONFIG), V._encode(g, SMALL)]


def test_a_value_of_another_type_is_checked_after_its_equal_int_was_memoised():
    V.encode(V.MemInsn(V.OP_LOAD, V.MEM_INP, 0, 0, 1, 1, 1))
    with pytest.raises(V.VtaIsaError, match="must be an int"):
        V.encode(V.MemInsn(V.OP_LOAD, V.MEM_INP, 0, 0, 1.0, 1, 1))
    with pytest.raises(V.VtaIsaError, match="out of range"):
        V.encode(V.MemInsn(V.OP_LOAD, V.MEM_INP, 0, 0, 1 << 16, 1, 1))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 5000), max_size=300), st.sampled_from([1, 16, 64]), st.booleans())
def test_the_row_map_is_unique_and_searchsorted(entries, lanes, sparse):
    e = np.array(entries, dtype=np.int64) * (1000 if sparse else 1)      # sparse: the sorting path
    rows, where = _rows_of(e, lanes)
    want = np.unique(e // lanes)
    assert np.array_equal(rows, want)
    assert np.array_equal(where, np.searchsorted(want, e // lanes) * lanes + e % lanes)


def test_the_memo_is_used():
    """Every instruction kind and the micro-op have a memo key (a key of None would leave the
    memo unused, and the checks above would pass without testing it)."""
    for insn in (V.GemmInsn(), V.AluInsn(), V.FinishInsn(), V.MemInsn(V.OP_LOAD, V.MEM_INP)):
        assert V._memo_key("insn", insn, V.DEFAULT_CONFIG) is not None
    assert V._memo_key("uop", V.Uop(), V.DEFAULT_CONFIG) is not None


def test_the_word_memo_follows_a_seeded_bug_applied_in_the_same_process():
    """A seeded bug replaces the encoder in place (verify.mutations.applied): inside, encode gives
    the patched encoder's word; after, the original's (the memo is emptied on entry and exit)."""
    from verify.mutations import Mutation, Patch, applied
    g = V.GemmInsn(uop_bgn=5, uop_end=6, iter_out=3, iter_in=2, dst_factor_out=7, src_factor_in=1)
    plain = V.encode(g)
    V.encode(g)                                             # in the memo
    bug = Mutation("flip_low_bit", "codegen-bytes", "the word's lowest bit flipped",
                   (Patch("ila.models.vta.isa", "_encode", lambda f: (lambda insn, cfg: f(insn, cfg) ^ 1)),))
    with applied(bug):
        assert V.encode(g) == plain ^ 1
    assert V.encode(g) == plain
