"""Solver checks, SMT-LIB printing and encoding run in their encoder's own pysmt environment
(:meth:`ila.smt.SmtEncoder.active`): pysmt's global environment memoises nothing of them.

Without the scope, pysmt's formula methods, type checker, oracles and printers memoise every
formula of every encoder in the *global* environment's tables (a long-lived campaign worker keeps
them all, and formulas of successive encoders collide there: each check grows slower)."""
from pysmt.environment import get_env

from ila.expr import eq, extract, var
from ila.smt import SmtEncoder, check, to_smtlib2
from ila.sorts import BvSort


def _memo_sizes(env) -> dict:
    return {k: len(v.memoization) for k, v in vars(env).items() if isinstance(getattr(v, "memoization", None), dict)}


def _problem(enc: SmtEncoder):
    x, y = var("input", "x", BvSort(8), 0), var("input", "y", BvSort(8), 0)
    return enc.encode(eq(extract(x + y, 3, 0), extract(y + x, 3, 0)))


def test_checks_leave_the_global_environment_alone():
    g = get_env()
    before = _memo_sizes(g)
    for _ in range(3):
        enc = SmtEncoder()
        f = _problem(enc)
        assert check(enc, [enc.mgr.Not(f)]).status == "unsat"
        assert check(enc, [f], want=[]).status == "sat"
        assert "check-sat" in to_smtlib2(enc, [f])
    assert _memo_sizes(g) == before
    assert get_env() is g                     # the scope is popped


def test_the_scope_is_the_encoders_and_nests():
    enc, other = SmtEncoder(), SmtEncoder()
    with enc.active():
        assert get_env() is enc.env
        with other.active():
            assert get_env() is other.env
        assert get_env() is enc.env
    assert get_env() is not enc.env


def test_outside_the_scope_pysmt_memoises_globally():
    """The failure the scope prevents: the same check with the global environment current grows
    its tables (this test fails if pysmt ever stops doing so, and the scope becomes moot)."""
    g = get_env()
    enc = SmtEncoder()
    f = _problem(enc)
    before = sum(_memo_sizes(g).values())
    enc.mgr.Not(f).get_type()                  # a formula method: the current environment's type checker
    assert sum(_memo_sizes(g).values()) > before
