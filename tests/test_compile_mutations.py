"""Seeded compiler bugs (compile.mutations): each is caught by the check of its claim, and the
same scenario without the bug behaves as expected (the check is not vacuous)."""
import pytest

from compile.mutations import BUGS, passes, run

FAST = ("adapter_nonsquare", "chain_two_users")


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in BUGS])
def test_every_seeded_compiler_bug_is_caught_and_its_control_passes(name):
    bug = BUGS[name]
    out, _ = run(bug)
    assert passes(bug, out, control=False), (out.how, out.detail)
    ctl, _ = run(bug, control=True)
    assert passes(bug, ctl, control=True), (ctl.how, ctl.detail)


def test_one_bug_per_claim():
    claims = {b.layer for b in BUGS.values()}
    assert claims == {"operand-adapters", "pattern-attributes", "fragment-writer", "fast-path", "chain-fusion", "gate",
                      "expansion"}
