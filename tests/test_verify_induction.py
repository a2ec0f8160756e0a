"""The timestep induction (verify.induction, mappings.flexasr.linear_chc): flexasr.linear and
linear_pad proved at several timesteps; every seeded bug of both mappings fails a lemma and is
refuted by a replayed counterexample; the checker's own parts (the vector evaluation of address
terms, the compiled decode, the per-output comparison, free states that an iteration reads) each
have a seeded bug or a liveness case that only they catch."""
import numpy as np
import pytest

from ila.expr import bv_const, extract, ite, zext
from ila.sorts import BvSort
from ila.simplify import Rewriter
from ila.unroll import symbol
from ila.verdict import Counterexample, Proved
from mappings.flexasr import linear_chc as LC
from mappings.registry import get
from verify import induction as V
from verify import mutations as MU
from verify.chc import check_chc


def _failed(spec):
    return [(name.split(":")[0], bad) for name, fn in spec.checks if (bad := fn())]


@pytest.mark.parametrize("name, shape", [("flexasr.linear", "2x16x64"), ("flexasr.linear", "17x32x128"),
                                         ("flexasr.linear_pad", "3x20x70")])
def test_proved_by_chc(name, shape):
    m = get(name)
    v = check_chc(m, m.parse_shape(shape))
    assert isinstance(v, Proved), v
    assert "induction over the" in v.detail and "declared numerics term" in v.detail
    assert set(v.covers) >= {"codegen-bytes", "order", "model-loops", "read-back"}


def test_no_all_sizes_proof_and_no_exact_numerics():
    from mappings.base import MappingError
    with pytest.raises(MappingError, match="give a shape"):
        LC.chc_spec(None)
    with pytest.raises(MappingError, match="numerics 'exact'"):
        LC.chc_spec({"T": 1, "I": 16, "O": 64}, numerics="exact")


@pytest.mark.parametrize("mut", ["lane_order", "wrong_input_base", "wrong_readback_base", "declared_output_shift",
                                 "bias_off_by_one"])
def test_seeded_bugs_fail_a_lemma_and_are_refuted(mut):
    m = get("flexasr.linear")
    shape = m.parse_shape("2x16x64")
    with MU.applied(MU.get(m, mut)):
        assert _failed(LC.chc_spec(shape))
    v = MU.check(m, shape, mut, method="chc")
    assert isinstance(v, Counterexample) and v.replayed, v


@pytest.mark.slow
@pytest.mark.parametrize("name, shape", [("flexasr.linear", "2x16x64"), ("flexasr.linear_pad", "2x20x70")])
def test_every_seeded_bug_is_refuted(name, shape):
    m = get(name)
    for mut in MU.names(m):
        v = MU.check(m, m.parse_shape(shape), mut, method="chc")
        assert isinstance(v, Counterexample) and v.replayed, (mut, v)


def test_a_bug_only_at_the_last_timesteps_fails_the_iteration():
    """The iteration's stores are checked at every t < T: a layout whose row 16 is elsewhere (a
    tiled layout bug that only shows from the second group of 16 timesteps) is refused at T = 17
    and not at T = 16, where it does not exist."""
    ind = LC.induction({"T": 17, "I": 16, "O": 64})
    assert not _run_all(ind)
    shifted = ind.out_cells.copy()
    shifted[16] += 16
    ind.out_cells = shifted
    bad = _run_all(ind)
    assert any("not an output cell of its row" in b for b in bad), bad


def _run_all(ind):
    run = V._Run(ind)
    out = []
    for fn in (V.stream_lemma, V.cells_lemma, V.iteration_lemma, V.exit_lemma):
        try:
            out += fn(run)
        except V._Violation as exc:
            out.append(str(exc))
    return out


def _with_commands(ind, edit):
    import dataclasses
    ind.side = dataclasses.replace(ind.side, commands=edit(list(ind.side.commands)))
    return ind


def test_a_wait_before_the_loop_would_hang_and_is_refused():
    ind = _with_commands(LC.induction({"T": 2, "I": 16, "O": 64}), lambda c: [{"wait_irq": True}] + c)
    assert any("would hang" in b for b in _run_all(ind))


def test_a_read_before_the_loop_shifts_the_read_back_and_is_refused():
    """The driver's read-back takes every read of the stream: a read emitted before the start
    (of the same address as the first result read) shifts every result, so the read-back lemma fails."""
    ind = LC.induction({"T": 2, "I": 16, "O": 64})
    port = ind.side.port
    first_read = next(c for c in ind.side.commands if not c.get("wait_irq") and port.is_read(c))
    assert port.is_read(ind.side.commands[-1])           # the stream ends with its result reads
    ind = _with_commands(ind, lambda c: [dict(first_read)] + c[:-1])
    assert any("read-back" in b for b in _run_all(ind)), _run_all(ind)


def test_compare_first_only_checker_bug_misses_a_wrong_term():
    """A declared term wrong at output 1 only: the lemma reports it; the seeded checker bug that
    compares output 0 alone does not."""
    ind = LC.induction({"T": 2, "I": 16, "O": 64})
    right = ind.term
    ind.term = lambda o, X: right(o, X) if o != 1 else right(2, X)
    run = V._Run(ind)
    assert any("output 1" in b for b in V.iteration_lemma(run))
    assert V.iteration_lemma(V._Run(ind), bug="compare_first_only") == []


def test_a_free_state_that_the_iteration_reads_is_refused():
    """Declaring a register the iteration reads (the activation unit's output exponent bias) free
    makes the outputs depend on an arbitrary value: refused."""
    ind = LC.induction({"T": 2, "I": 16, "O": 64})
    ind.free_states = ind.free_states + ("pe0_act_mngr_adpbias_out",)
    bad = _run_all(ind)
    assert any("depends on the scratch or free state" in b for b in bad), bad


def test_vector_evaluation_equals_constant_folding():
    t = symbol("ev.t", BvSort(16))
    t32 = zext(t, 32)
    n = bv_const(5, 32)
    terms = [bv_const(256, 32) + (((t32 & 15) + (t32.lshr(4) * n << 4)) << 4) + 7,
             ite(t.eq(3), bv_const(1, 8), extract(t, 9, 2)),
             (t32 * t32 - bv_const(9, 32)).lshr(bv_const(3, 32)) | (t32 << bv_const(40, 32)),
             ite(zext(extract(t, 15, 8), 32).ult(t32), bv_const(1, 4), bv_const(2, 4))]
    ts = np.array([0, 1, 3, 15, 16, 17, 255, 256, 4097, 65535], dtype=np.uint64)
    for e in terms:
        got = V._evaluate(e, t, ts, {})
        want = [Rewriter({t: bv_const(int(v), 16)}).one(e).payload for v in ts]
        assert [int(g) for g in got] == [int(w) for w in want], e.short()


def test_compiled_decode_agrees_with_rewriting():
    ind = LC.induction({"T": 2, "I": 16, "O": 64})
    fast, slow = V._Run(ind), V._Run(ind)
    slow.mach.fast = False
    a, b = fast.prefix(), slow.prefix()
    assert a[0] == b[0] and all(a[3][k] is b[3][k] for k in a[3])


def _overlapping_ila():
    from ila import Ila
    m = Ila("overlap")
    x = m.new_bv_input("x", 8)
    s = m.new_bv_state("s", 8)
    m.set_valid(x.ult(200))
    for name, dec in (("low", x.ult(5)), ("one", x.eq(1))):
        i = m.new_instr(name)
        i.set_decode(dec)
        i.set_update(s, x)
    return m


def test_two_instructions_firing_are_refused_and_the_seeded_decode_bug_is_not():
    m = _overlapping_ila()
    good, bugged = V._Machine(m), V._Machine(m)
    bugged.DECODE_BUG = "first"
    state = {"s": bv_const(0, 8)}
    assert good.fire([m], state, good.inputs({"x": 3}, 0), "c").name == "low"
    with pytest.raises(V._Violation, match="both fire"):
        good.fire([m], state, good.inputs({"x": 1}, 0), "c")
    assert bugged.fire([m], state, bugged.inputs({"x": 1}, 0), "c").name == "low"
    assert good.fire([m], state, good.inputs({"x": 201}, 0), "c") is None
