"""flexasr.linear_pad proved by BMC over abstract arithmetic with its host padding and read-back cut
inside the subject (``mappings.flexasr.linear_pad_proof``): the codes land where ``pad_operands``
puts their elements, the padded lanes carry the quantiser's code of what the padding wrote, the
zero-product axiom is the real ProductSum's value, and every seeded bug (the padding's, the cut's,
flexasr.linear's generator bugs at the padded shape) is refuted with a replayed counterexample."""
import numpy as np
import pytest

from ila.generic import is_symbolic
from ila.models.flexasr.funcs import PRODUCT_SUM
from mappings.base import MappingError
from mappings.flexasr import linear_pad as LPd
from mappings.flexasr import linear_pad_proof as P
from mappings.registry import get
from verify import mutations

M = get("flexasr.linear_pad")
SMALL = dict(M.proof.shape)


def test_the_pad_code_is_the_zero_code_and_its_product_is_zero():
    assert all(P.pad_code(r) == 0 for r in range(8))
    assert int(PRODUCT_SUM.body(np.uint64(0), np.uint64(0))) == 0


def test_codes_land_where_the_host_padding_puts_their_elements():
    data = [f"d{k}" for k in range(6)]
    x = P._tags(6, (2, 3))
    padded = np.zeros((2, 5), np.float32)
    padded[:, :3] = x
    padded[0, 4] = 1.0                            # a constant the padding wrote: its quantised code
    got = P._placed(padded, data, register=3)
    assert list(got[0, :3]) == ["d0", "d1", "d2"] and list(got[1, :3]) == ["d3", "d4", "d5"]
    assert got[1, 4].payload == P.pad_code(3) and got[0, 4].payload == P.pad_code(3, 1.0) != 0


def test_the_stream_runs_at_the_padded_shape_on_symbolic_codes():
    ps = M.proof.bmc(SMALL)
    stores = [c for c in ps.acc.commands if any(is_symbolic(v) for k, v in c.items() if k.startswith("data_in"))]
    # flexasr.linear's stores at the padded shape 1x16x64: x 1 vector, w 64 rows of 16 codes, b 4 words
    assert len(stores) == 1 + 64 + 4
    assert len(ps.outputs) == SMALL["T"] * SMALL["O"] and ps.readback is not None


def test_the_clean_mapping_is_proved_with_the_declared_map():
    v = mutations.check(M, SMALL, None, "bmc", solver="z3")
    assert v.kind == "proved", v
    assert "declared refinement map checked" in v.detail and "ProductSum(0, 0) = 0" in v.detail


@pytest.mark.parametrize("bug", sorted(mutations.names(M)))
def test_seeded_bug_is_refuted_and_replayed(bug):
    v = mutations.check(M, SMALL, bug, "bmc", solver="z3")
    assert v.kind == "counterexample" and v.replayed, (bug, v)


def test_the_cut_is_the_programs():
    assert LPd.cut(np.arange(12).reshape(2, 6), {"T": 2, "I": 1, "O": 4}).tolist() == [[0, 1, 2, 3], [6, 7, 8, 9]]


def test_exact_numerics_is_refused():
    with pytest.raises(MappingError, match="'exact'"):
        M.proof.bmc(SMALL, numerics="exact")


@pytest.mark.slow
def test_two_timesteps_and_both_paddings_are_proved():
    v = mutations.check(M, {"T": 2, "I": 20, "O": 70}, None, "bmc", solver="z3")
    assert v.kind == "proved", v
