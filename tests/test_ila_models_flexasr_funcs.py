"""Issue 6: every axiom stated for a proof holds for the numpy implementation of its function,
exhaustively over all 8-bit argument pairs (negative zero 0x80 included)."""
import numpy as np
import pytest

from ila import BV
from ila.compile_np import evaluate
from ila.expr import var
from ila.models.flexasr.funcs import GB_ADPFLOAT_ADD, GB_ADPFLOAT_MAX, GB_ADPFLOAT_MEAN
from mappings.flexasr.layer_reduce import ir_numerics

A, B = var("state", "a", BV(8), 0), var("state", "b", BV(8), 0)
PAIRS = np.array([(a, b) for a in range(256) for b in range(256)], dtype=np.uint64)
IR = ir_numerics()


def _holds_everywhere(e):
    got = evaluate([e], {"a": PAIRS[:, 0], "b": PAIRS[:, 1]}, {}, vectorize=False)[0]
    got = np.broadcast_to(np.asarray(got, dtype=bool), (PAIRS.shape[0],))
    bad = PAIRS[~got]
    return bad


@pytest.mark.parametrize("f", [GB_ADPFLOAT_MAX, GB_ADPFLOAT_MEAN, GB_ADPFLOAT_ADD, IR.max],
                         ids=lambda f: f.name)
def test_every_stated_axiom_holds_on_all_byte_pairs(f):
    for k, ax in enumerate(f.axioms):
        bad = _holds_everywhere(ax(A, B))
        assert bad.size == 0, f"axiom {k} of {f.name} fails on {bad[:5].tolist()}"


def test_maxpool_link_axiom_holds_on_all_byte_pairs():
    # the paper's abstract-data-type axiom used by the maxpool proofs: ir_max(a, b) = GBAdpfloat_max(a, b)
    assert _holds_everywhere(IR.max(A, B).eq(GB_ADPFLOAT_MAX(A, B))).size == 0


def test_a_false_axiom_is_caught():
    # 'max returns one of its arguments' is false at negative zero (0x80 comes back as 0x00)
    from ila.expr import lor
    bad = _holds_everywhere(lor(GB_ADPFLOAT_MAX(A, B).eq(A), GB_ADPFLOAT_MAX(A, B).eq(B)))
    assert bad.size > 0 and all(0x80 in pair for pair in bad.tolist())
