"""Issue 26, item 3: a BMC proof split per output tile into pieces, assembled into one verdict."""
import pytest

from ila.errors import IlaInternalError
from ila.verdict import Counterexample, Proved
from mappings.registry import get
from verify import mutations
from verify.bmc import assemble, check_bmc, piece


def _split(shape, n, bug=None):
    m = get("flexasr.maxpool")
    with mutations.applied(mutations.get(m, bug)):
        ps = m.proof.bmc(shape)
        total = len(ps.outputs)
        ranges = [(k * total // n, (k + 1) * total // n) for k in range(n)]
        vs = [check_bmc(piece(m.proof.bmc(shape), lo, hi, measure=k == 0), scope="4x16")
              for k, (lo, hi) in enumerate(ranges)]
    return vs, ranges, total


def test_pieces_assemble_into_one_proof_that_says_what_they_cover():
    vs, ranges, total = _split({"R": 4, "C": 16}, 3)
    assert all(isinstance(v, Proved) for v in vs)
    assert [len(v.detail) > 0 for v in vs]
    v = assemble(vs, ranges, total, scope="4x16")
    assert isinstance(v, Proved) and v.scope == "4x16" and "model-loops" in v.covers
    assert f"{total} output cells equal for all data, in 3 pieces of 0-9, 10-20, 21-31" in v.detail
    assert f"{total} outputs at the end (over the pieces)" in v.detail
    assert v.seconds == pytest.approx(sum(p.seconds for p in vs))


def test_a_bug_in_one_tile_is_a_counterexample_of_the_whole():
    """The seeded bug reverses the lanes of every vector; each piece sees it in its own cells."""
    vs, ranges, total = _split({"R": 4, "C": 16}, 2, "lane_order")
    v = assemble(vs, ranges, total)
    assert isinstance(v, Counterexample) and v.replayed and v.detail.startswith("piece 0-15 of 2")


def test_pieces_must_partition_the_outputs():
    vs, ranges, total = _split({"R": 2, "C": 16}, 2)
    with pytest.raises(IlaInternalError, match="do not partition"):
        assemble(vs, [(0, 8), (9, 16)], total)
    with pytest.raises(IlaInternalError, match="do not partition"):
        assemble(vs[:1], ranges[:1], total)
