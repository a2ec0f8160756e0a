"""verify.normalize: a BMC goal discharged by rewriting (axiom equations as rules, sums in AC normal
form) only when it is unsat; each seeded bug of the normal form discharges a satisfiable goal,
and through the checker turns a broken read-back into "proved" that the correct normal form refutes."""
import dataclasses
import functools

import numpy as np
import pytest

from ila.expr import FuncRef
from ila.sorts import BvSort
from ila.unroll import symbol
from mappings.registry import get
from verify import normalize, symmetry
from verify.normalize import BUGS, discharge

B8 = BvSort(8)
a, b, c, x = (symbol(f"nz_{n}", B8) for n in "abcx")
F = FuncRef("nz_f", B8, (B8,))
G = FuncRef("nz_g", B8, (B8, B8))


def test_sums_equal_up_to_order_and_grouping_are_discharged():
    assert discharge(((a + b) + c).ne(c + (b + a)), [])
    assert discharge(((x + 3) + 5).ne(x + 8), [])                 # constants folded
    assert discharge(((x + 0xFF) + 1).ne(x), [])                   # modulo 2^8
    assert discharge((a + (b + (a + c))).ne((a + a) + (b + c)), [])


def test_different_sums_are_not():
    assert not discharge((a + a + b).ne(a + b), [])                # a repeated summand counts
    assert not discharge((x + 1).ne(x), [])
    assert not discharge((a + b).ne(a + c), [])
    assert not discharge((a + b).eq(b + a), [])                    # a valid miter is not unsat


def test_axiom_equations_are_rules():
    goal = F(a).ne(c + b)
    assert not discharge(goal, [])
    assert discharge(goal, [F(a).eq(b + c)])
    assert discharge(goal, [(b + c).eq(F(a))])                     # oriented from the application
    # a commutativity instance in both orders does not loop
    assert discharge(G(a, b).ne(G(b, a)), [G(a, b).eq(G(b, a)), G(b, a).eq(G(a, b))])
    # rules chain: the right-hand side is rewritten in turn
    assert discharge(F(F(a)).ne(c + b + a), [F(a).eq(b + a), F(b + a).eq(c + b + a)])
    assert not discharge(F(a).ne(b), [F(a).ule(b)])                # not an equation: no rule


def test_each_seeded_bug_discharges_a_satisfiable_goal():
    assert BUGS == ("multiset_as_set", "constant_dropped")
    assert discharge((a + a + b).ne(a + b), [], bug="multiset_as_set")
    assert discharge((x + 1).ne(x), [], bug="constant_dropped")
    with pytest.raises(ValueError, match="nope"):
        discharge(a.ne(b), [], bug="nope")


def _plus_one_readback(ps):
    """A seeded read-back bug: y[0, 0] read back plus one (the declared map dropped, so that only
    the output goals can see it)."""
    def plus_one(reads, rb=ps.readback):
        flat = np.asarray(rb(reads), dtype=object).ravel().copy()
        flat[0] = flat[0] + 1
        return flat
    return dataclasses.replace(ps, readback=plus_one, declared=None)


def test_the_normal_form_alone_refutes_a_bug_its_seeded_defect_proves(monkeypatch):
    linear = get("flexasr.linear")
    right = symmetry.check_bmc_symmetric(linear.proof.bmc(linear.proof.shape), falsify=False)
    assert right.kind == "proved" and "64 goals discharged by rewriting" in right.detail, right
    assert "without the solver" in right.detail and "solver calls" not in right.detail
    bad = _plus_one_readback(linear.proof.bmc(linear.proof.shape))
    v = symmetry.check_bmc_symmetric(bad, falsify=False)
    assert v.kind == "counterexample" and v.replayed, v
    monkeypatch.setattr(symmetry, "discharge", functools.partial(normalize.discharge, bug="constant_dropped"))
    assert symmetry.check_bmc_symmetric(bad, falsify=False).kind == "proved"
