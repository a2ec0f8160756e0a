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
    sz = A.Sizes(3, 1, 1)
    regs = A.tail(sz)
    s = sz.sym
    bad = [(r, A._word([(s["C"], 12), (s["Wp"], 10), (s["Hp"], 10)])) if r == "AccelConvInputSizeConfig" else (r, v)
           for r, v in regs]
    problems = A.tail_problems(sz, [A.cfg_command(r, v) for r, v in bad], 16)
    assert problems and "tail command 3" in problems[0]


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
