"""All-sizes phase proof of ``vta.gemm`` (issue 26, item 2): VTA's GEMM family of loops -- the 2D
DMA LOADs, the GEMM reset and the GEMM over the micro-op buffer -- and the IR's ``nn.dense`` loop,
proved for every N, K, M within the side conditions at once (CHC, sizes symbolic).

The sizes are 32-bit symbols ``p.N``, ``p.K``, ``p.M`` with ``kb = (K + 15) >> 4`` and ``mb = (M +
15) >> 4``. The accelerator stream is the generator's own instruction sequence on those symbols:
:func:`ila.models.vta.driver.dense_layout` on a :class:`~ila.models.vta.driver.SymbolicDram` (the
DRAM element bases as terms), :func:`~ila.models.vta.driver.dense_instructions` with one chunk of
N rows (the side conditions make ``dense_program``'s chunk N), each instruction encoded by
:func:`ila.models.vta.isa.encode_term` (fields as terms; "every field fits its bits" joins the
side conditions). So the configuration fields, the instruction order and the loops are covered
for all sizes. What a fixed number of commands cannot say for all sizes -- the DRAM writes of
the data and micro-ops (their number grows with the sizes) and the driver's read-back -- is
proved per shape by :mod:`mappings.vta.gemm_chc`'s lemmas; here it is the hypothesis (the regions
``assumed`` at the start of the streams): DRAM holds x, w at the declared refinement map's bytes
(:func:`mappings.vta.gemm.refinement`, the check "assumed placement is the declared map" compares
them at sample shapes) and micro-op r is the generator's :func:`~ila.models.vta.driver.dense_uop`
(r, kb) encoded (the generator's function at a symbolic index); the IR's tensor memory holds x, w
row-major at the fragment's bases.

The data are arrays indexed by the pair (row, column) (16 bits each: the side conditions keep
every size below 2^16), so no size product appears in a data read. The tracked output is out[n*, 16 j* + o*] (accumulator entry ``(n* mb + j*) 16 + o*``, the
declared output map), with the partial sum ``QS`` of :mod:`mappings.vta.gemm_chc`. Loop positions
are compared lexicographically ((i, j) before (n*, j*)), so the invariants need no products of
sizes; the loops' address arithmetic (``i mb + j``, ``n K + k``) keeps the real products (only
data products are abstracted, ``verify.phases._valid``).

Seeded bugs (``bug``): ``wgt_factor`` (the GEMM's ``wgt_factor_in`` one short when kb >= 3, a size
field wrong only at some sizes), ``dst_factor`` (``dst_factor_out`` kb instead of mb). Each must be
refuted with a counterexample at a shape solved from the failing clause.
"""
from __future__ import annotations

import numpy as np

from ila import BvSort, FuncRef, bv_const, concat, extract, implies, ite, land, load, lor, sext, zext
from ila.simplify import Rewriter
from ila.sorts import MemSort
from mappings.phases import Phase, PhaseProof, Region, Side, array

from .gemm_chc import DRAM_AW, GUARD, W32, _p, data_array, fit, idle_ops, load_phase

BUGS = ("wgt_factor", "dst_factor")
SMALL_SIZES = [(2, 40, 40), (4, 80, 80), (8, 160, 160)]     # bounds (N, K, M) tried first for a countershape


def sizes():
    """The size symbols (N, K, M) and the block counts kb, mb as terms."""
    N, K, M = _p("N"), _p("K"), _p("M")
    return N, K, M, (K + 15).lshr(4), (M + 15).lshr(4)


def side_conditions(N, K, M, kb, mb, cfg) -> list:
    """vta.gemm's side conditions (:data:`mappings.vta.gemm.SIDE_CONDITIONS`) as terms, each size
    bounded first so that no 32-bit product wraps (the bounds follow from the conditions over the
    integers, so the two say the same)."""
    from mappings.vta import common as V
    di, dw, da = cfg.depth("inp"), cfg.depth("wgt"), cfg.depth("acc")
    return [N.uge(1), K.uge(1), M.uge(1), N.ule(di), K.ule(16 * V.max_weight_factor()), M.ule(16 * dw),
            (kb * mb).ule(dw), (N * kb).ule(di), (N * mb).ule(da), kb.ule(V.max_weight_factor())]


def generator(N, kb, mb, cfg, bug: str | None = None):
    """The generator on size terms: (DRAM bases (u, x, w, o), the instructions, [fits])."""
    from dataclasses import replace
    from ila.models.vta import driver
    bases = driver.dense_layout(driver.SymbolicDram(cfg), N, kb, mb)
    insns = driver.dense_instructions(kb, mb, bases, [(0, N)])
    if bug == "wgt_factor":
        insns[4] = replace(insns[4], wgt_factor_in=ite(kb.uge(3), kb - 1, kb))
    elif bug == "dst_factor":
        insns[3] = replace(insns[3], dst_factor_out=kb)
        insns[4] = replace(insns[4], dst_factor_out=kb)
    return bases, insns


def allsizes_proof(*, infer: bool = False, bug: str | None = None) -> PhaseProof:
    """The all-sizes phase proof (module docstring); ``infer``: Houdini instead of the supplied
    invariants; ``bug``: one of :data:`BUGS` seeded into the generator's instructions."""
    from ila.models.relay.model import FUNC_IDS, relay_ila
    from ila.models.vta import driver
    from ila.models.vta.isa import encode_term, encode_uop_term
    from ila.models.vta.model import C_GEMM, C_GEMM_RESET, C_IDLE, C_STORE, build_vta
    from mappings.vta import common as V
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {BUGS}")
    cfg = V.cfg()
    N, K, M, kb, mb = sizes()
    bases, insns = generator(N, kb, mb, cfg, bug)
    u_addr, x_addr, w_addr, _ = bases
    ld_u, ld_w, ld_x, g0, g1, st, _ = insns
    fits = []
    cmds = []
    for insn in insns:
        word, f = encode_term(insn, cfg)
        cmds.append({"vta_top_instr_in": word})
        fits += f
    vta = build_vta(cfg)
    X, Wt = data_array("x"), data_array("w")

    # ------------------------------------------------------------------ rigid parameters
    n_, j_, o_ = _p("n"), _p("j"), _p("o")
    m_ = j_ * 16 + o_
    size_pre = land(*side_conditions(N, K, M, kb, mb, cfg), *fits)
    pre = land(size_pre, n_.ult(N), j_.ult(mb), o_.ult(16), m_.ult(M))
    QS = FuncRef("vta_dense_partial_sum", BvSort(W32), [BvSort(W32)] * 3)

    def at(r, k):              # the data arrays' index of element (r, k): the pair, no size product
        return concat(extract(r, 15, 0), extract(k, 15, 0))

    def xval(n, k):
        return ite(k.ult(K), load(X, at(n, k)), bv_const(0, 8))

    def wval(m, k):
        return ite(m.ult(M) & k.ult(K), load(Wt, at(m, k)), bv_const(0, 8))

    def qs_step(n, m, k):
        return implies(k.ult(GUARD), QS(n, m, k + 1).eq(QS(n, m, k) + sext(xval(n, k), W32) * sext(wval(m, k), W32)))

    def qs_zero(n, m):
        return QS(n, m, bv_const(0, W32)).eq(0)

    # ------------------------------------------------------------------ assumed: the DRAM image
    dn, du, dl = _p("dx.n"), _p("dx.u"), _p("dx.l")
    r_x = Region("dram_x", "acc", "vta_dram", "assumed", (dn, du, dl), land(dn.ult(N), du.ult(kb), dl.ult(16)),
                 zext((dn * kb + du + x_addr) * 16 + dl, DRAM_AW), xval(dn, du * 16 + dl))
    wj, wo, wu, wl = _p("dw.j"), _p("dw.o"), _p("dw.u"), _p("dw.l")
    r_w = Region("dram_w", "acc", "vta_dram", "assumed", (wj, wo, wu, wl),
                 land(wj.ult(mb), wo.ult(16), wu.ult(kb), wl.ult(16)),
                 zext((wj * kb + wu + w_addr) * 256 + wo * 16 + wl, DRAM_AW), wval(wj * 16 + wo, wu * 16 + wl))
    ur, ub = _p("du.r"), _p("du.b")
    uword, ufits = encode_uop_term(driver.dense_uop(ur, kb), cfg)
    byte = [Rewriter().one(extract(uword, 8 * b + 7, 8 * b)) for b in range(4)]     # little-endian bytes
    # the domain keeps the generator's micro-op fields inside their bits (encode_uop refuses the rest)
    r_u = Region("dram_uop", "acc", "vta_dram", "assumed", (ur, ub), land(ur.ult(kb + 1), ub.ult(4), *ufits),
                 zext((ur + u_addr) * 4 + ub, DRAM_AW),
                 ite(ub.eq(0), byte[0], ite(ub.eq(1), byte[1], ite(ub.eq(2), byte[2], byte[3]))))

    # ------------------------------------------------------------------ the LOAD phases
    ph_u, reg_u = load_phase("load_uop", 0, ld_u, "uop", cfg, vta, "load_uop")
    ph_w, reg_w = load_phase("load_wgt", 1, ld_w, "wgt", cfg, vta, "load_wgt")
    ph_x, reg_x = load_phase("load_inp", 2, ld_x, "inp", cfg, vta, "load_inp")
    DU = array("acc", "load_uop", "vta_dram", MemSort(DRAM_AW, 8))
    DW = array("acc", "load_wgt", "vta_dram", MemSort(DRAM_AW, 8))
    DX = array("acc", "load_inp", "vta_dram", MemSort(DRAM_AW, 8))

    def uop_facts(P, at):
        return ([(reg_u, P.array("vta_uop_mem"), (at, bv_const(0, W32)))]
                + [(r_u, DU, (at, bv_const(b, W32))) for b in range(4)])

    def loop_pins(P, insn):
        names = ("reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                 "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in")
        return [P.state(f"vta_{k}").eq(fit(getattr(insn, k), P.state(f"vta_{k}").sort.width)) for k in names]

    def counters(P):
        op, ci, cj, upc = (P.state(n) for n in ("vta_child_op", "vta_cnt_i", "vta_cnt_j", "vta_upc"))
        return op, zext(ci, W32), zext(cj, W32), zext(upc, W32)

    def before(i, j, n, jj):                 # loop position (i, j) comes before (n, jj)
        return i.ult(n) | i.eq(n) & j.ult(jj)

    # ------------------------------------------------------------------ GEMM reset
    zi, zj, zo = _p("z.i"), _p("z.j"), _p("z.o")
    z_pre = land(zi.ult(N), zj.ult(mb), zo.ult(16))
    z_addr = (zi * mb + zj) * 16 + zo
    reg_z = Region("acc_zero", "acc", "vta_acc_mem", "gemm_reset", (zi, zj, zo), z_pre, z_addr, bv_const(0, W32))

    def z_inv(P, relational_only=False):
        op, i, j, u = counters(P)
        cell = P.cells[0]
        done = op.eq(C_IDLE) | before(zi, zj, i, j)
        rel = [implies(done, cell.eq(0)),
               implies(op.eq(C_GEMM_RESET) & ~before(zi, zj, i, j), cell.eq(load(P.array("vta_acc_mem"), z_addr)))]
        if relational_only:
            return rel
        return land(*loop_pins(P, g0), lor(op.eq(C_GEMM_RESET), op.eq(C_IDLE)), u.eq(kb), i.ule(N), j.ult(mb),
                    implies(op.eq(C_GEMM_RESET), i.ult(N)), implies(op.eq(C_IDLE), land(i.eq(N), j.eq(0))), *rel)

    ph_z = Phase("gemm_reset", "acc", 3, "vta_acc_mem", (zi, zj, zo), z_pre, [z_addr],
                 write_region=lambda a: a.ult(N * mb * 16), reads=("vta_uop_mem",),
                 facts=lambda P: uop_facts(P, zext(P.state("vta_upc"), W32)),
                 invariant=None if infer else z_inv, candidates=lambda P: z_inv(P, True), establishes=reg_z)

    # ------------------------------------------------------------------ GEMM
    g_addr = (n_ * mb + j_) * 16 + o_

    def g_facts(P):
        _, ci, cj, upc = counters(P)
        out = uop_facts(P, upc) + [(reg_z, P.array("vta_acc_mem"), (n_, j_, o_))]
        for lane in range(16):
            L = bv_const(lane, W32)
            out.append((reg_x, P.array("vta_inp_mem"), (upc + ci * kb, L)))
            out.append((r_x, DX, (ci, upc, L)))
            out.append((reg_w, P.array("vta_wgt_mem"), (upc + cj * kb, o_ * 16 + L)))
            out.append((r_w, DW, (cj, o_, upc, L)))
        return out

    def g_axioms(P):
        # QS's steps over the 16 lanes of micro-op upc, each product written with the very terms the
        # DRAM regions give for x[ci, k] and w[m, k] (r_x, r_w at the loop's indices): the instance is
        # qs_step's, and the loop's own products are then the same terms
        _, ci, cj, upc = counters(P)
        m = cj * 16 + o_
        out = [qs_zero(ci, m)]
        for lane in range(16):
            L = bv_const(lane, W32)
            k = Rewriter({du: upc, dl: L}).one(du * 16 + dl)
            xv = Rewriter(dict(zip(r_x.params, (ci, upc, L)))).one(r_x.val)
            wv = Rewriter(dict(zip(r_w.params, (cj, o_, upc, L)))).one(r_w.val)
            out.append(implies(k.ult(GUARD), QS(ci, m, k + 1).eq(QS(ci, m, k) + sext(xv, W32) * sext(wv, W32))))
        return out

    def g_inv(P, relational_only=False):
        op, i, j, u = counters(P)
        cell = P.cells[0]
        busy = op.eq(C_GEMM)
        at = busy & i.eq(n_) & j.eq(j_)
        rel = [implies(busy & before(i, j, n_, j_) | at & u.eq(0), cell.eq(0)),
               implies(at & u.ne(0), cell.eq(QS(i, j * 16 + o_, u * 16))),
               implies(op.eq(C_IDLE) | busy & before(n_, j_, i, j), cell.eq(QS(n_, m_, kb * 16)))]
        if relational_only:
            return rel
        return land(*loop_pins(P, g1), lor(busy, op.eq(C_IDLE)), i.ule(N), j.ult(mb), u.ult(kb),
                    implies(busy, i.ult(N)), implies(op.eq(C_IDLE), land(i.eq(N), j.eq(0), u.eq(0))), *rel)

    ph_g = Phase("gemm", "acc", 4, "vta_acc_mem", (n_, j_, o_), pre, [g_addr],
                 write_region=lambda a: a.ult(N * mb * 16), reads=("vta_uop_mem", "vta_inp_mem", "vta_wgt_mem"),
                 facts=g_facts, axioms=g_axioms, invariant=None if infer else g_inv,
                 candidates=lambda P: g_inv(P, True), post=lambda P: P.cells[0].eq(QS(n_, m_, kb * 16)),
                 split=(o_, range(16)))

    def s_inv(P):
        op = P.state("vta_child_op")
        return lor(op.eq(C_STORE), op.eq(C_IDLE))
    ph_s = Phase("store", "acc", 5, "vta_dram", (), bv_const(1, 1).eq(1), [], write_region=None,
                 reads=("vta_acc_mem",), invariant=None if infer else s_inv)

    # ------------------------------------------------------------------ the IR side
    xb, wb, ob = bv_const(0, W32), N * K, N * K + M * K          # mappings.common.Layout: x, w, out
    ir_cmds = [{"func_id": FUNC_IDS["nn.dense"], "arg_0": xb, "arg_1": wb, "arg_2": ob, "arg_3": N, "arg_4": K,
                "arg_5": M}]
    ir = relay_ila("int32", tensor_entries=1 << 22)
    tn, tk, tm = _p("ir.n"), _p("ir.k"), _p("ir.m")
    t_x = Region("ir_x", "ir", "tensor", "assumed", (tn, tk), land(tn.ult(N), tk.ult(K)), tn * K + tk + xb,
                 sext(load(X, at(tn, tk)), W32))
    t_w = Region("ir_w", "ir", "tensor", "assumed", (tm, tk), land(tm.ult(M), tk.ult(K)), tm * K + tk + wb,
                 sext(load(Wt, at(tm, tk)), W32))
    ir_addr = n_ * M + m_ + ob

    def d_facts(P):
        n, mm, k = (P.state(f"cnt_{i}") for i in range(3))
        T = P.array("tensor")
        return [(t_x, T, (n, k)), (t_w, T, (mm, k))]

    def d_axioms(P):
        n, mm, k = (P.state(f"cnt_{i}") for i in range(3))
        return [qs_zero(n, mm), qs_step(n, mm, k)]

    def d_inv(P, relational_only=False):
        busy = P.state("nn.dense.busy")
        n, mm, k = (P.state(f"cnt_{i}") for i in range(3))
        cell, acc = P.cells[0], P.state("acc")
        start = load(P.array("tensor"), ir_addr)
        rel = [implies(busy & before(n, mm, n_, m_), cell.eq(start)),
               implies(busy & n.eq(n_) & mm.eq(m_), cell.eq(start) & implies(k.ne(0), acc.eq(QS(n, mm, k)))),
               implies(~busy | busy & before(n_, m_, n, mm), cell.eq(QS(n_, m_, K)))]
        if relational_only:
            return rel
        pins = [P.state(f"cfg_{i}").eq(v) for i, v in enumerate([xb, wb, ob, N, K, M])] + idle_ops(P, "nn.dense.busy")
        return land(*pins, n.ult(N), mm.ult(M), k.ult(K), implies(~busy, land(n.eq(0), mm.eq(0), k.eq(0))), *rel)

    ph_d = Phase("dense", "ir", 0, "tensor", (n_, j_, o_), pre, [ir_addr],
                 write_region=lambda a: land(a.uge(ob), a.ult(ob + N * M)),
                 facts=d_facts, axioms=d_axioms, invariant=None if infer else d_inv,
                 candidates=lambda P: d_inv(P, True), post=lambda P: P.cells[0].eq(QS(n_, m_, K)))

    def final_axioms(F):            # the K padding adds zeros: QS(K + d + 1) = QS(K + d) for d < 15
        return [qs_step(n_, m_, K + d) for d in range(15)]

    def final(F):
        # QS(16 kb) = QS(K): 16 kb - K < 16, every step beyond K adds 0 (final_axioms)
        return F.cell("gemm").eq(F.cell("dense"))

    sides = {"ir": Side("ir", ir, ir_cmds), "acc": Side("acc", vta, cmds)}
    return PhaseProof(
        scope="symbolic", sides=sides, params=(n_, j_, o_), pre=pre,
        phases=[ph_d, ph_u, ph_w, ph_x, ph_z, ph_g, ph_s], lemmas=[],
        final=final, outputs=[("gemm", 0), ("dense", 0)], final_axioms=final_axioms,
        checks=[("assumed placement is the declared map (sample shapes)", lambda: placement_matches(r_x, r_w, bases)),
                ("the symbolic instructions are dense_program's (sample shapes)", lambda: words_match(cmds)),
                ("the side conditions are the mapping's (sample shapes)", lambda: conditions_match(size_pre))],
        covers=("configuration-fields", "order", "model-loops"), numerics="exact",
        notes=["all sizes: the configuration fields and the instruction order from the generator run on size "
               "symbols, the LOADs, the GEMM reset, the GEMM and the IR's dense loop against the declared map; "
               "the data and micro-op bytes and the read-back are proved per shape (vta.gemm's fixed-shape proof)"],
        size_vars=[N, K, M], assumed=[r_x, r_w, r_u, t_x, t_w], small_sizes=SMALL_SIZES,
        shape_of=lambda v: {"N": v["p.N"], "K": v["p.K"], "M": v["p.M"]},
        cex_shapes=({"N": 1, "K": 16, "M": 16}, {"N": 2, "K": 20, "M": 18}))


def chc_spec(shape: dict | None, *, numerics: str = "exact", infer: bool = False) -> PhaseProof:
    """vta.gemm's ``Proof.chc``: the phase proof at ``shape`` (:func:`mappings.vta.gemm_chc.phase_proof`)
    or, for ``shape`` None, for all sizes (:func:`allsizes_proof`); bit-exact either way."""
    from .gemm_chc import phase_proof
    return allsizes_proof(infer=infer) if shape is None else phase_proof(shape, infer=infer)


SAMPLE_SHAPES = ({"N": 1, "K": 16, "M": 16}, {"N": 2, "K": 20, "M": 18}, {"N": 3, "K": 50, "M": 40},
                 {"N": 16, "K": 64, "M": 64})


def _at(shape: dict):
    """A rewriter substituting the sizes of ``shape`` for the size symbols."""
    from ila.simplify import Rewriter
    N, K, M, _, _ = sizes()
    return Rewriter({N: bv_const(shape["N"], W32), K: bv_const(shape["K"], W32), M: bv_const(shape["M"], W32)})


def _value(rw, e) -> int | None:
    v = rw.one(e)
    return v.payload if v.op.name == "CONST" else None


def placement_matches(r_x: Region, r_w: Region, bases) -> list[str]:
    """At :data:`SAMPLE_SHAPES`: the assumed DRAM regions' addresses are the declared refinement
    map's bytes of every x and w element (:func:`mappings.vta.gemm.refinement`)."""
    from ila.simplify import Rewriter
    from mappings.vta import gemm as G
    bad = []
    for shape in SAMPLE_SHAPES:
        rw = _at(shape)
        ref = G.refinement(shape)
        for (n, k), want in np.ndenumerate(ref["x"][1]):
            p = dict(zip(r_x.params, (bv_const(n, W32), bv_const(k // 16, W32), bv_const(k % 16, W32))))
            got = _value(rw, Rewriter(p).one(r_x.addr))
            if got != int(want):
                bad.append(f"x[{n}, {k}] at {shape}: assumed byte {got}, declared {int(want)}")
                break
        for (m, k), want in np.ndenumerate(ref["w"][1]):
            p = dict(zip(r_w.params, (bv_const(m // 16, W32), bv_const(m % 16, W32), bv_const(k // 16, W32),
                                      bv_const(k % 16, W32))))
            got = _value(rw, Rewriter(p).one(r_w.addr))
            if got != int(want):
                bad.append(f"w[{m}, {k}] at {shape}: assumed byte {got}, declared {int(want)}")
                break
    return bad


def words_against(cmds: list, shapes, at, program, what: str) -> list[str]:
    """At each of ``shapes``: the symbolic instruction words, sizes substituted (``at(shape)``, a
    rewriter), are the words of the generator's ``program(shape)`` (named ``what``)."""
    from ila.models.vta import driver
    bad = []
    for shape in shapes:
        rw = at(shape)
        want = [c["vta_top_instr_in"] for c in driver.instruction_commands(program(shape))]
        got = [_value(rw, c["vta_top_instr_in"]) for c in cmds]
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            bad.append(f"at {shape}: instruction {k} differs from {what}'s")
    return bad


def conditions_against(mapping, size_pre, at, shapes, limit: int = 3) -> list[str]:
    """The term side conditions ``size_pre`` accept exactly the shapes ``mapping``'s side
    conditions accept, on ``shapes`` (a grid around the limits)."""
    from mappings.base import MappingError
    bad = []
    for shape in shapes:
        try:
            mapping.check_shape(shape)
            want = True
        except MappingError:
            want = False
        got = _value(at(shape), size_pre)
        if bool(got) != want:
            bad.append(f"{shape}: the mapping {'accepts' if want else 'refuses'} it, the terms "
                       f"{'accept' if got else 'refuse'} it")
            if len(bad) >= limit:
                break
    return bad


def words_match(cmds: list) -> list[str]:
    """At :data:`SAMPLE_SHAPES`: the symbolic instruction words, sizes substituted, are the words
    ``dense_program`` emits for that shape."""
    from ila.models.vta import driver
    from mappings.vta import common as V

    def program(shape):
        return driver.dense_program(np.zeros((shape["N"], shape["K"]), np.int8),
                                    np.zeros((shape["M"], shape["K"]), np.int8), cfg=V.cfg())
    return words_against(cmds, SAMPLE_SHAPES, _at, program, "dense_program")


def conditions_match(size_pre) -> list[str]:
    """The term side conditions accept exactly the shapes vta.gemm's side conditions accept, on a
    grid of shapes around the limits."""
    from mappings.vta import gemm as G
    grid = [{"N": N, "K": K, "M": M} for N in (1, 2, 64, 127, 128, 129, 2048, 2049)
            for K in (1, 16, 17, 256, 257, 16368, 16369) for M in (1, 16, 17, 1024, 2048, 16384, 16385)]
    return conditions_against(G.MAPPING, size_pre, _at, grid)
