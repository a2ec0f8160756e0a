"""HLSCNN's convolution loop nest for all sizes (mappings.hlscnn.conv_allsizes): the checks that tie
the symbolic proof to the generator and the mapping hold, and each catches a deliberate defect."""
import dataclasses

import pytest

from ila import bv_const
from mappings.base import MappingError
from mappings.hlscnn import conv_allsizes as A


@pytest.mark.parametrize("cfg", A.CONFIGS)
@pytest.mark.parametrize("bits", [16, 8])
def test_the_checks_hold_at_every_configuration(cfg, bits):
    proof = A.allsizes_proof(*cfg, bits=bits)
    assert proof.scope == "symbolic" and proof.size_vars
    for name, check in proof.checks:
        assert check() == [], name


def _check(proof, words):
    return next(fn for name, fn in proof.checks if words in name)


def test_a_tail_with_swapped_size_fields_differs_from_the_generator():
    from ila.models.hlscnn.driver import cfg_write
    sz = A.Sizes(3, 1, 1)
    cmds = A.stream(sz)
    assert len(cmds) == len(A.tail(sz)) == 8
    cmds[3] = cfg_write("AccelConvInputSizeConfig", (sz.C << 20) | (sz.Wp << 10) | sz.Hp)
    problems = A.tail_problems(sz, cmds, 16)
    assert problems and "tail command 3" in problems[0]


def test_the_proof_stream_is_the_generators_code_on_the_size_symbols(monkeypatch):
    """A size-dependent bug patched into the generator's register tail is in the proof's stream."""
    from ila.models.hlscnn import driver
    from verify.mutations.hlscnn_nchw import _out_cols_short
    sz = A.Sizes(1, 1, 0)
    good = A.stream(sz)
    monkeypatch.setattr(driver, "conv_tail", _out_cols_short(5)(driver.conv_tail))
    bad = A.stream(sz)
    assert [c == d for c, d in zip(good, bad)] == [True] * 4 + [False] + [True] * 3
    for ow, short in ((4, False), (5, True), (300, True)):
        rw = sz.at({"H": 2, "W": ow, "C": 1, "O": 1, "K": 1, "S": 1, "P": 0})
        got = sum(rw.one(bad[4][f"top_slave_data_in_{i}"]).payload << 8 * (i - 8) for i in range(8, 12))
        assert got & 1023 == ow - short


def test_a_misplaced_assumed_region_is_caught():
    proof = A.allsizes_proof(3, 1, 1)
    r_act, r_wgt = proof.assumed
    shifted = dataclasses.replace(r_act, addr=r_act.addr + 2)
    problems = A.placement_problems(A.Sizes(3, 1, 1), shifted, r_wgt, 16)
    assert problems and problems[0].startswith("act")


@pytest.mark.parametrize("dropped", [10, 11])     # the outputs fit scratchpad 1; the image restriction
def test_a_missing_side_condition_is_caught(dropped):
    from ila import land
    sz = A.Sizes(3, 1, 1)
    conds = A.side_conditions(sz, 16)
    assert A.condition_problems(sz, land(*conds), 16) == []
    assert A.condition_problems(sz, land(*conds[:dropped], *conds[dropped + 1:]), 16)


def test_a_refused_configuration_is_an_error():
    with pytest.raises(MappingError, match="K=0"):
        A.allsizes_proof(0, 1, 0)
    with pytest.raises(MappingError, match="weight width"):
        A.allsizes_proof(3, 1, 1, bits=4)


def test_sizes_substitute_a_shape_and_refuse_another_configuration():
    sz = A.Sizes(3, 2, 1)
    rw = sz.at({"H": 7, "W": 5, "C": 9, "O": 3, "K": 3, "S": 2, "P": 1})
    assert rw.one(sz.OH) is bv_const(4, 32) and rw.one(sz.OW) is bv_const(3, 32)
    assert rw.one(sz.ncb) is bv_const(2, 32)
    with pytest.raises(MappingError, match="configuration"):
        sz.at({"H": 7, "W": 5, "C": 9, "O": 3, "K": 1, "S": 2, "P": 1})


def _refuted(bug):
    from mappings.registry import get
    from verify import mutations
    v = mutations.check(get("hlscnn.conv2d_nchw"), None, bug, "chc", solver="z3", timeout=60)
    assert v.kind == "counterexample" and v.replayed, v
    assert "piece K1S1P0" in v.detail and "holds at some sizes" in v.detail
    return v.trace["shape"]


def test_a_field_wrong_at_some_sizes_is_refuted_for_all_sizes():
    """The generator's OW field one short from 5 output columns on (the fixed proof shapes have at
    most 4): the all-sizes proof's stream has the trigger's decode hold at some sizes only, the
    counterexample search finds sizes where it fails, and the simulator rejects the program there."""
    shape = _refuted("out_cols_short_some_sizes")
    assert shape["W"] >= 5 and (shape["K"], shape["S"], shape["P"]) == (1, 1, 0)


@pytest.mark.slow
def test_a_field_wrong_near_the_largest_sizes_is_refuted_for_all_sizes():
    shape = _refuted("in_cols_short_near_max")
    assert 500 <= shape["W"] <= A.HW_MAX


def test_register_words_become_their_fields_by_an_identity():
    """``as_fields`` turns the generator's ``(x << k) | ... | z`` into the concatenation of the
    fields: equal at random values; overlapping fields and other terms are left as they are."""
    import random
    from ila import BvSort, concat, zext
    from ila.simplify import Rewriter
    from ila.unroll import symbol
    x, y, z = (symbol(n, BvSort(w)) for n, w in (("t.x", 12), ("t.y", 10), ("t.z", 6)))
    word = Rewriter().one((zext(x, 32) << 18) | (zext(y, 32) << 7) | zext(z, 32))
    got = A.as_fields(word)
    assert got is not word and got.op.name == "CONCAT"
    rng = random.Random(0)
    for _ in range(50):
        vals = {x: rng.randrange(1 << 12), y: rng.randrange(1 << 10), z: rng.randrange(1 << 6)}
        env = Rewriter({v: bv_const(n, v.sort.width) for v, n in vals.items()})
        assert env.one(got).payload == env.one(word).payload == (vals[x] << 18) | (vals[y] << 7) | vals[z]
    overlap = Rewriter().one((zext(x, 32) << 5) | zext(y, 32))
    assert A.as_fields(overlap) is overlap
    joined = concat(x, y)
    assert A.as_fields(joined) is joined
