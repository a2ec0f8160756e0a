"""The VTA mappings' BMC proofs can fail: each seeded bug (code generator or refinement map) is
refuted with a counterexample that the simulators replay, and an unknown bug name is refused."""
import pytest

from mappings import registry
from mappings.base import MappingError
from verify.bmc import check_bmc

VTA = [n for n in registry.names() if n.startswith("vta.")]


@pytest.mark.parametrize("name, mutation", [(n, k) for n in VTA for k in registry.get(n).extras["mutations"]])
def test_seeded_bug_is_refuted_and_replayed(name, mutation):
    m = registry.get(name)
    shape = dict(m.extras["proof_shape"])
    v = check_bmc(m.extras["proof"](shape, mutation=mutation), solver="z3")
    assert v.kind == "counterexample" and v.replayed, (name, mutation, v)


@pytest.mark.parametrize("name", VTA)
def test_the_correct_mapping_is_proved_and_unknown_bugs_are_refused(name):
    m = registry.get(name)
    shape = dict(m.extras["proof_shape"])
    assert check_bmc(m.extras["proof"](shape), solver="z3").kind == "proved"
    with pytest.raises(MappingError, match="unknown mutation 'nonsense'"):
        m.extras["proof"](shape, mutation="nonsense")
