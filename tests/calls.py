"""Test helper: the accelerator call a mapping's pattern makes at an IR node (as the compiler's
e-matching would), for tests of call certificates and adapter checks."""
from compile.call import at_match
from compile.patterns import mapping_patterns, match, variables
from mappings.registry import get


def call_at(name, node, mapping=None):
    """The :class:`compile.call.Call` of mapping ``name`` (or the given ``mapping`` object, e.g. a
    seeded bug) matched at ``node``; the test fails if the pattern does not match."""
    pat = mapping_patterns([name])[name]
    env = match(pat, node)
    assert env is not None, f"{name} does not match"
    return at_match(mapping or get(name), node, env, variables(pat))
