"""vta.gemm's all-sizes phase proof (mappings/vta/gemm_allsizes.py) and what it rests on: the
instruction encoder on terms, the generator's layout and instructions on size symbols, the lane
decomposition of cell morphing's address equalities, and the walk's decodes under the size side
conditions."""
import numpy as np
import pytest

from ila import BvSort, bv_const
from ila.expr import TRUE, FALSE
from ila.simplify import Rewriter
from ila.unroll import symbol


def _const(e):
    v = Rewriter().one(e)
    assert v.op.name == "CONST", v.short()
    return v.payload


@pytest.mark.parametrize("insn", [
    "MemInsn(OP_LOAD, MEM_INP, 3, 12, 3, 4, 4)",
    "MemInsn(OP_STORE, MEM_OUT, 0, 77, 5, 2, 2)",
    "GemmInsn(uop_bgn=3, uop_end=7, iter_out=5, iter_in=2, dst_factor_out=2, dst_factor_in=1, src_factor_out=4,"
    " wgt_factor_in=4)",
    "GemmInsn(reset=1, uop_bgn=9, uop_end=10, iter_out=1, iter_in=3)",
    "AluInsn(alu_opcode=ALU_MAX, use_imm=1, imm=-128, uop_end=1, iter_out=2, iter_in=2)",
    "FinishInsn()"])
def test_encode_term_equals_encode_on_ints(insn):
    from ila.models.vta import isa
    obj = eval(insn, vars(isa))
    word, fits = isa.encode_term(obj)
    assert _const(word) == isa.encode(obj) and fits == []


def test_encode_term_places_term_fields_and_states_their_fit():
    from ila.models.vta import isa
    n = symbol("t.n", BvSort(32))
    insn = isa.GemmInsn(uop_bgn=0, uop_end=n + 1, iter_out=n, iter_in=3, dst_factor_out=n)
    word, fits = isa.encode_term(insn)
    assert len(fits) == 3                                 # uop_end, iter_out, dst_factor_out
    for v in (1, 5, 200):
        at = Rewriter({n: bv_const(v, 32)})
        concrete = isa.GemmInsn(uop_bgn=0, uop_end=v + 1, iter_out=v, iter_in=3, dst_factor_out=v)
        assert _const(at.one(word)) == isa.encode(concrete)
        assert all(at.one(f) is TRUE for f in fits)
    assert Rewriter({n: bv_const(1 << 14, 32)}).one(fits[1]) is FALSE     # iter_out has 14 bits
    with pytest.raises(isa.VtaIsaError, match="imm"):
        isa.encode_term(isa.AluInsn(imm=n))                # a signed field takes no term


def test_symbolic_layout_and_instructions_are_the_generators_at_each_shape():
    """dense_layout on a SymbolicDram and dense_instructions on size terms, sizes substituted, are
    dense_program's bases and words (the proof's check runs the same comparison)."""
    from mappings.vta import gemm_allsizes as GA
    proof = GA.allsizes_proof()
    checks = dict(proof.checks)
    for name in checks:
        assert checks[name]() == [], name


def test_check_sees_a_generator_that_differs_from_the_terms():
    """A mutated generator (wgt_factor_in one short from 3 K blocks on) changes the words at K = 50
    (kb = 4): the symbolic words of the unmutated proof no longer match dense_program's."""
    from mappings.vta import gemm_allsizes as GA
    from mappings.vta.gemm import MAPPING
    from verify.mutations import applied, get
    proof = GA.allsizes_proof()
    words = dict(proof.checks)["the symbolic instructions are dense_program's (sample shapes)"]
    with applied(get(MAPPING, "wgt_factor_short_some_sizes")):
        bad = words()
    assert bad and "50" in bad[0]


def test_lane_decomposition_of_address_equalities_is_an_identity():
    """cell morphing's ``x·2^k + c = y·2^k + z`` with z bounded below 2^k (a symbolic lane) is ``z = c``
    and the high bits of x and y equal: valid for all values (checked by the solver)."""
    from ila.expr import implies
    from verify.phases import _addr_eq, _valid
    from ila.ops import Op
    x, y, z = (symbol(f"t.{v}", BvSort(32)) for v in ("x", "y", "z"))
    for k, c in ((8, 5), (4, 15), (8, 0)):
        a = (x << k) + c if c else x << k
        t = (y << k) + z
        got = _addr_eq(Rewriter(), a, t, {}, {z.uid: 1 << k})
        assert got.op is Op.AND
        st, _, _ = _valid(implies(z.ult(1 << k), got.eq(a.eq(t))), solver="z3", timeout=20, abstract=False)
        assert st.value == "holds"
        assert _addr_eq(Rewriter(), a, t, {}, {z.uid: 1 << (k + 1)}).op is Op.EQ     # z may carry: not split


def test_concat_normal_reads_a_field_back_from_its_bytes():
    """A micro-op's field read back from the word's little-endian bytes is the field itself."""
    from ila import concat, extract, ite
    from verify.phases import concat_normal
    r, kb = symbol("t.r", BvSort(32)), symbol("t.kb", BvSort(32))
    sel = ite(r.ult(kb), r, bv_const(0, 32))
    word = concat(extract(sel, 9, 0), extract(sel, 10, 0), bv_const(0, 11))
    byte = [Rewriter().one(extract(word, 8 * b + 7, 8 * b)) for b in range(4)]
    back = concat(byte[3], byte[2], byte[1], byte[0])
    assert concat_normal(extract(back, 21, 11)) is Rewriter().one(extract(sel, 10, 0))
    assert concat_normal(extract(back, 31, 22)) is Rewriter().one(extract(sel, 9, 0))
    mixed = concat(r, kb)
    assert concat_normal(extract(mixed, 40, 20)).op.name == "CONCAT"        # spans two terms: two pieces


def test_check_ackermann_answers_unsat_and_sat():
    from ila import FuncRef
    from ila.smt import SmtEncoder
    from verify.phases import _check_ackermann as check_ackermann
    f = FuncRef("t_f", BvSort(8), [BvSort(8)])
    a, b = symbol("t.a", BvSort(8)), symbol("t.b", BvSort(8))
    enc = SmtEncoder()
    unsat = enc.encode_all([a.eq(b), f(a).ne(f(b))])
    assert check_ackermann(enc, unsat, timeout=10).status == "unsat"
    enc = SmtEncoder()
    sat = enc.encode_all([f(a).ne(f(b))])
    assert check_ackermann(enc, sat, timeout=10).status == "sat"


def test_check_ackermann_model_values_are_the_original_symbols():
    """Houdini reads which candidates a model falsifies from the tactic's model: the values are of
    the original Bool terms (the ackermannised applications mapped back), and agree with the model."""
    from ila import FuncRef
    from ila.expr import BOOL
    from ila.smt import SmtEncoder
    from verify.phases import _check_ackermann as check_ackermann
    f = FuncRef("t_g", BvSort(8), [BvSort(8)])
    a, b = symbol("t.ga", BvSort(8)), symbol("t.gb", BvSort(8))
    p, q, r = (symbol(f"t.g{k}", BOOL) for k in "pqr")
    enc = SmtEncoder()
    # a = b forces f(a) = f(b) (functional consistency, after ackermannisation too): p is true
    fs = enc.encode_all([a.eq(b), p.eq(f(a).eq(f(b))), q.eq(a.ult(3)), a.eq(7), r.eq(~q)])
    want = [enc.encode(x) for x in (p, q, r)]
    res = check_ackermann(enc, fs, timeout=10, want=want)
    assert res.status == "sat"
    assert [res.values[w] for w in want] == [True, False, True]


def test_split_cases_decides_a_clause_by_the_invariants_guards():
    """A clause the solver leaves unknown is split on guards: valid when every case is, failing
    when a case fails (that case's formula kept for the counterexample search), unknown when the
    guards run out."""
    from ila.ops import Op
    from verify.phases import Status, _valid, split_cases
    x = symbol("t.x", BvSort(8))
    g1, g2 = x.ult(100), x.eq(7)

    def depth(f):
        return 1 + depth(f.args[1]) if f.op is Op.IMPLIES else 0

    def check(f, need=2):               # a stand-in solver that answers only below `need` guards
        if depth(f) < need:
            return Status.UNKNOWN, 0.0, "too hard"
        return _valid(f, solver="z3", timeout=10)

    holds = (x + 1).ne(x)
    st, note, piece = split_cases(holds, [g1, g2], check, "unknown at first")
    assert st is Status.HOLDS and piece is None and "6 cases hold" in note
    wrong = x.ne(200)                   # fails at x = 200, outside g1 and g2
    st, note, piece = split_cases(wrong, [g1, g2], check)
    assert st is Status.FAILS and _valid(piece, solver="z3", timeout=10)[0] is Status.FAILS
    st, _, _ = split_cases(holds, [g1, g2], lambda f: check(f, need=3))
    assert st is Status.UNKNOWN
