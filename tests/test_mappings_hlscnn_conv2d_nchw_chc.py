"""The phase proof of hlscnn.conv2d_nchw / _w8 (mappings/hlscnn/conv2d_nchw_chc.py): proved with
several channel blocks and for outputs of many pixels (the tracked output symbolic, one case per
filter lane); seeded bugs refuted with a replayed counterexample, including one only the loop's
configuration (the phase's initiation) catches and a wrong declared term only the term check
catches; the checker's pieces (address normal forms, loop constants, state-reading transfers)
decide what they claim and nothing more."""
import pytest

from ila import bv_const
from ila.simplify import Rewriter
from ila.sorts import BvSort
from ila.expr import FALSE, TRUE
from ila.unroll import symbol
from mappings import registry
from mappings.base import MappingError
from mappings.hlscnn.conv2d_nchw_chc import chc_spec, phase_proof
from verify import mutations
from verify.phases import PhaseError, _addr_eq, run

SMALL = {"H": 1, "W": 1, "C": 9, "O": 2, "K": 1, "S": 1, "P": 0}        # 1x1 output, two channel blocks


@pytest.mark.parametrize("bits", [16, 8])
def test_a_single_tile_shape_is_proved_with_every_piece(bits):
    status, rows, _ = run(phase_proof(SMALL, bits))
    assert status.value == "holds", [(r.name, r.status, r.note) for r in rows if r.status.value != "holds"]
    names = " ".join(r.name for r in rows)
    for piece in ("lemma act", "lemma wgt", "term:", "read-back:", "initiation", "consecution", "exit", "final"):
        assert piece in names


def test_an_output_of_many_pixels_is_proved():
    """6 x 34 outputs (more than the 4 x 32 tile of the earlier coarse model), stride 2, padding."""
    status, rows, _ = run(phase_proof({"H": 11, "W": 67, "C": 1, "O": 2, "K": 2, "S": 2, "P": 1}, 16))
    assert status.value == "holds", [(r.name, r.status, r.note) for r in rows if r.status.value != "holds"]


def test_the_all_sizes_proof_is_the_composite_of_the_kernel_configurations():
    from mappings.hlscnn.conv_allsizes import CONFIGS
    from mappings.phases import Composite
    from mappings.registry import get
    spec = get("hlscnn.conv2d_nchw").proof.chc(None)
    assert isinstance(spec, Composite) and spec.scope == "symbolic"
    assert sorted(spec.pieces) == sorted(f"K{K}S{S}P{P}" for K, S, P in CONFIGS)
    with pytest.raises(MappingError, match="numerics"):
        get("hlscnn.conv2d_nchw_w8").proof.chc(None, numerics="exact")
    with pytest.raises(MappingError, match="needs a shape"):
        chc_spec(None)


def test_a_wrong_declared_term_fails_only_the_term_check(monkeypatch):
    """The term check is what ties the loop's specification V to the declared numerics: with the
    declared term's kernel flipped (a wrong specification, the mapping unchanged), the lemmas, the
    loop and the read-back still hold and only the term check fails."""
    from mappings.hlscnn import conv2d_nchw_proof
    good = conv2d_nchw_proof.padded_term
    monkeypatch.setattr(conv2d_nchw_proof, "padded_term",
                        lambda x, w, shape, bits, **kw: good(x, w[:, :, ::-1, ::-1], shape, bits, **kw))
    status, rows, _ = run(phase_proof({"H": 2, "W": 2, "C": 9, "O": 2, "K": 2, "S": 1, "P": 0}, 16))
    failed = [r.name for r in rows if r.status.value != "holds"]
    assert status.value != "holds" and failed and all(n.startswith("term") for n in failed), failed


def test_the_cli_proves_it_by_chc(capsys):
    from verify.mapping import main
    assert main(["hlscnn.conv2d_nchw_w8", "--method", "chc", "--shape", "1x1x9x2x1x1x0", "--no-ledger"]) == 0
    out = capsys.readouterr().out
    assert "PROVED" in out and "declared numerics" in out


@pytest.mark.parametrize("bug,shape", [
    ("weight_channels_reversed", {"H": 2, "W": 2, "C": 9, "O": 2, "K": 2, "S": 1, "P": 0}),
    pytest.param("readback_reshaped_not_transposed", {"H": 3, "W": 3, "C": 9, "O": 2, "K": 2, "S": 1, "P": 0},
                 marks=pytest.mark.slow),      # 2 x 2 outputs (a 1 x 1 output hides a transposition)
    pytest.param("padding_value_nonzero", {"H": 2, "W": 2, "C": 9, "O": 2, "K": 2, "S": 1, "P": 1},
                 marks=pytest.mark.slow)])
def test_seeded_bugs_are_refuted_and_replayed(bug, shape):
    v = mutations.check(registry.get("hlscnn.conv2d_nchw"), shape, bug, "chc", solver="z3")
    assert v.kind == "counterexample" and v.replayed, v


def test_a_wrong_loop_configuration_fails_only_the_initiation():
    v = mutations.check(registry.get("hlscnn.conv2d_nchw"), SMALL, "relu_enabled", "chc", solver="z3")
    assert v.kind == "counterexample" and "initiation" in v.detail and "lemma" not in v.detail.split(";")[0]


def _bv(name):
    return symbol(name, BvSort(32))


def test_address_normal_forms_decide_only_identities():
    x, y, rw = _bv("x"), _bv("y"), Rewriter()
    assert _addr_eq(rw, (x * 3 + 5) * 16 + 2, x * 48 + 82) is TRUE
    assert _addr_eq(rw, (x * 3 + 5) * 16 + 2, x * 48 + 83) is FALSE
    assert _addr_eq(rw, x + 1 - x, bv_const(1, 32)) is TRUE
    for a, b in ((x * 16 + 2, y * 16 + 2), (x * y, y * x + 0), (x * 16, x * 15 + x + y)):
        got = _addr_eq(rw, a, b)
        assert got is not TRUE and got is not FALSE        # not an identity: left to the solver


def test_a_constant_the_loop_changes_is_refused():
    import dataclasses
    from verify.phases import phase_system
    pp = phase_proof({**SMALL, "K": 2, "H": 2, "W": 2}, 16)       # 2 x 2 kernel: the column counter moves
    conv = pp.phases[0]
    ila = pp.sides["acc"].ila
    start = symbol("start", ila.state("scratch_pad_1").sort)
    phase_system(ila, conv, start, {}, "ok")
    with pytest.raises(PhaseError, match="changed by"):
        phase_system(ila, dataclasses.replace(conv, constants={**conv.constants, "conv_child_k_col": 0}), start, {}, "t")


@pytest.mark.parametrize("bits", [16, 8])
def test_the_proof_reasons_about_the_model_the_machine_runs(bits):
    """The phase proof's ILA is the machine port's (the same built object), one pixel per step."""
    from ila.models.hlscnn.port import PORT, PORT_W8
    port = PORT if bits == 16 else PORT_W8
    assert phase_proof(SMALL, bits).sides["acc"].ila is port.build()


# ----------------------------------------------------------------------------- the term check's walk
from mappings.hlscnn.conv2d_nchw_proof import padded_term as _PADDED_TERM   # noqa: E402

TERM_SHAPE = {"H": 3, "W": 3, "C": 9, "O": 2, "K": 2, "S": 1, "P": 1}      # 4 x 4 outputs, 8 taps each


def _term_check(monkeypatch, *, walk=True, bug=None, corrupt=None, bits=16):
    """The term check's problems with the walk on or off, the walk's seeded bug, and the declared
    term built from corrupted operands (``corrupt(x, w) -> (x, w)``; the mapping unchanged)."""
    from mappings.hlscnn import conv2d_nchw_chc, conv2d_nchw_proof
    monkeypatch.setattr(conv2d_nchw_chc, "TERM_WALK", walk)
    monkeypatch.setattr(conv2d_nchw_chc, "WALK_BUG", bug)
    good = _PADDED_TERM                    # the real one (an earlier call of this test may have patched it)
    monkeypatch.setattr(conv2d_nchw_proof, "padded_term", good if corrupt is None else
                        lambda x, w, shape, b, **kw: good(*corrupt(x, w), shape, b, **kw))
    pp = phase_proof(TERM_SHAPE, bits)
    (name, check), = [c for c in pp.checks if c[0].startswith("term")]
    return check()


CORRUPTIONS = {"kernel flipped": lambda x, w: (x, w[:, :, ::-1, ::-1]),
               "image flipped": lambda x, w: (x[:, ::-1, :], w),
               "two channels swapped": lambda x, w: (x[[1, 0, *range(2, x.shape[0])]], w)}


@pytest.mark.parametrize("bits", [16, 8])
def test_the_term_walk_matches_every_output_of_a_correct_proof(monkeypatch, bits):
    from mappings.hlscnn import conv2d_nchw_chc
    seen = []
    real = conv2d_nchw_chc._TermWalk.mismatches
    monkeypatch.setattr(conv2d_nchw_chc._TermWalk, "mismatches", lambda self, *a: seen.append(real(self, *a)) or seen[-1])
    assert _term_check(monkeypatch, bits=bits) == []
    (mask,) = seen
    assert mask.shape == (2, 4, 4) and not mask.any()         # no output needed the slow comparison


@pytest.mark.parametrize("corrupt", list(CORRUPTIONS))
def test_the_term_walk_agrees_with_the_slow_comparison(monkeypatch, corrupt):
    fast = _term_check(monkeypatch, corrupt=CORRUPTIONS[corrupt])
    slow = _term_check(monkeypatch, walk=False, corrupt=CORRUPTIONS[corrupt])
    assert fast and fast == slow


def test_a_walk_that_skips_the_activations_disagrees_with_the_slow_comparison(monkeypatch):
    """The seeded bug of the walk: leaves of the activations unchecked. A declared term over a
    flipped image passes that walk, and the slow comparison refutes it: the differential test above
    would fail."""
    bad = _term_check(monkeypatch, bug="activations_unchecked", corrupt=CORRUPTIONS["image flipped"])
    assert bad == [] and _term_check(monkeypatch, walk=False, corrupt=CORRUPTIONS["image flipped"])
    with pytest.raises(ValueError, match="unknown seeded bug"):
        _term_check(monkeypatch, bug="nonsense")


@pytest.mark.parametrize("bits", [16, 8])
def test_the_tuple_tree_is_the_declared_term(bits):
    """padded_term with tree=True is the declared term's shape: the shared tree, its tuples applied as
    the functions they name with every leaf read at an output's index, is that output's declared
    term itself (the same hash-consed nodes)."""
    import numpy as np
    from mappings.hlscnn.conv2d_nchw_proof import padded_term, symbolic_job
    from mappings.hlscnn.conv2d_proof import read_at
    _, x_raw, w_raw, _ = symbolic_job(TERM_SHAPE, bits)

    def build(n, index):
        if type(n) is tuple:
            return n[0](*(build(a, index) for a in n[1]))
        return read_at(n, tuple(np.array(k) for k in index))
    tree = padded_term(x_raw, w_raw, TERM_SHAPE, bits, tree=True)
    want = padded_term(x_raw, w_raw, TERM_SHAPE, bits)
    assert tree.shape == want.shape == (2, 4, 4) and np.asarray(want).dtype == object
    assert all(build(*t) is e for t, e in zip(tree.ravel(), want.ravel()))
    # every element names its own output (numerics_term's [OH, OW, O] index of out[o, oy, ox])
    assert all(t[1] == (oy, ox, o) for (o, oy, ox), t in np.ndenumerate(tree))


def test_read_at_broadcasts_and_refuses_a_wrong_rank():
    import numpy as np
    from mappings.hlscnn.conv2d_proof import read_at
    a = np.arange(6).reshape(2, 1, 3)
    index = (np.array([1, 0]), np.array([4, 2]), np.array([2, 0]))
    assert read_at(a, index).tolist() == [5, 0]
    with pytest.raises(IndexError):
        read_at(a, index[:2])
    with pytest.raises(IndexError):
        read_at(a, (np.array([2]), np.array([0]), np.array([0])))


LEAF_SHAPES = [TERM_SHAPE, {"H": 4, "W": 5, "C": 3, "O": 9, "K": 3, "S": 2, "P": 1}]


def _leaf_check(monkeypatch, shape, bits, bug=None):
    """The term check with leaf_uids compared, at every call, with the point-by-point leaves; returns
    (the comparisons, the per-point calls made inside leaf_uids, the check's problems)."""
    import numpy as np
    from mappings.hlscnn import conv2d_nchw_chc as CC
    monkeypatch.setattr(CC, "LEAF_BUG", bug)
    real, seen, inside = CC.leaf_uids, [], []

    def checked(fn, points, arrays, uid, per_point):
        got = real(fn, points, arrays, uid, lambda *i: inside.append(i) or per_point(*i))
        seen.append(np.array_equal(got, [uid(per_point(*map(int, r))) for r in points]))
        return got
    monkeypatch.setattr(CC, "leaf_uids", checked)
    (_, check), = [c for c in phase_proof(shape, bits).checks if c[0].startswith("term")]
    return seen, inside, check()


@pytest.mark.parametrize("bits", [16, 8])
@pytest.mark.parametrize("shape", LEAF_SHAPES)
def test_vectorised_leaves_equal_the_point_by_point_leaves(monkeypatch, shape, bits):
    """leaf_uids (V's leaves for all points from the region functions' symbolic terms, indices
    evaluated with numpy) gives the leaves the point-by-point substitution gives, without falling
    back to it; padding rows and columns, channel and filter padding, stride 2, 8-bit weights."""
    seen, inside, problems = _leaf_check(monkeypatch, shape, bits)
    assert seen == [True, True] and inside == [] and problems == []


def test_a_shifted_leaf_address_is_caught_by_the_differential_test(monkeypatch):
    """The seeded bug of leaf_uids (every data element read one further): the comparison with the
    point-by-point leaves fails. The term check itself still holds: the outputs where the walk then
    disagrees are compared the slow way, from the point-by-point leaves."""
    seen, _, problems = _leaf_check(monkeypatch, LEAF_SHAPES[1], 16, bug="address_shifted")
    assert False in seen and problems == []


def test_a_read_of_another_address_range_is_refused_by_the_read_check():
    """read_problems (decodes simplified once per group of alike reads, the address substituted per
    read) refuses a read command that decodes as something other than SPAD1_DATA_RD, and accepts
    the mapping's own reads."""
    from ila.models.hlscnn.model import REG_ID, SLAVE_BASE
    from mappings.hlscnn.conv2d_nchw_chc import read_problems
    pp = phase_proof(SMALL, 16)
    side = pp.sides["acc"]
    cmds = [dict(c) for c in side.commands]
    assert read_problems(side.ila, cmds) == []
    k = max(n for n, c in enumerate(cmds) if c.get("top_slave_if_rd") == 1)
    cmds[k]["top_slave_addr_in"] = SLAVE_BASE + 4 * REG_ID["AccelConvTrigger"]
    bad = read_problems(side.ila, cmds)
    assert len(bad) == 1 and bad[0].startswith(f"command {k}: a read that fires") and "not SPAD1_DATA_RD" in bad[0]
