"""All-sizes phase proof of ``vta.add`` and ``vta.relu`` (issue 26, item 2): VTA's ALU loop over
the micro-op buffer with its LOADs into the accumulator, against the IR's element-wise loop, for
every element count n within the side conditions at once (CHC, the size symbolic).

The size is the 32-bit symbol ``p.n`` with ``rows = (n + 15) >> 4`` accumulator rows of 16 int32
lanes. The accelerator stream is the generator's own instruction sequence on that symbol:
:func:`ila.models.vta.driver.elementwise_layout` on a
:class:`~ila.models.vta.driver.SymbolicDram` and :func:`~ila.models.vta.driver.elementwise_instructions`,
each encoded by :func:`ila.models.vta.isa.encode_term` ("every field fits its bits" joins the side
conditions): LOAD UOP, LOAD ACC a (rows 0..rows-1), for ``add`` LOAD ACC b (rows rows..2 rows-1)
and ALU ADD (row i += row rows + i, the micro-op's source index the term ``rows``), for ``relu``
ALU MAX with immediate 0; STORE; FINISH. So the configuration fields, the micro-op and the
instruction order are covered for all sizes. The DRAM data bytes and the read-back are proved
per shape (``vta.add`` / ``vta.relu``'s BMC proofs, which run the whole emitted stream); here
they are the hypothesis (regions ``assumed`` at the start of the streams): DRAM holds a[k] (and
b[k]) little-endian at the declared refinement map's bytes, zero in the padding lanes, and the
micro-op at element 0 (the check "assumed placement is the declared map" compares the addresses
with :func:`mappings.vta.elementwise.refinement` at sample shapes).

Tracked output: out[k*], k* = 16 q* + l* < n, at accumulator entry k* (the declared output map,
:func:`mappings.vta.elementwise.acc_entries`); for ``add`` also b's row ``rows + q*`` lane l*,
which the ALU reads from the memory it writes. The loops compare positions only (q* < cnt_i),
so no invariant needs a product of sizes.

Seeded bugs: ``verify.mutations.vta.alu_allsizes_mutations`` (the ALU loop's ``iter_out`` one short
from 5 rows on, and from 1000 rows on: configuration fields wrong only at some sizes), each
refuted with a counterexample at a shape solved from the failing clause.
"""
from __future__ import annotations

import numpy as np

from ila import bv_const, extract, implies, ite, land, load, lor, zext
from ila.unroll import symbol
from ila.simplify import Rewriter
from ila.sorts import MemSort
from mappings.phases import Phase, PhaseProof, Region, Side, array

from .gemm_allsizes import _value, conditions_against, words_against
from .gemm_chc import DRAM_AW, W32, _p, fit, idle_ops, load_phase

OPS = ("add", "relu")
SMALL_SIZES = [(40,), (100,), (400,)]      # bounds on n tried first for a countershape
SAMPLE_SHAPES = ({"n": 1}, {"n": 16}, {"n": 17}, {"n": 100}, {"n": 1000})
_LOOP_FIELDS = ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                "src_factor_out", "src_factor_in", "use_imm", "imm", "alu_opcode")


def sizes():
    """The size symbol n and the row count rows = ceil(n / 16) as terms."""
    n = _p("n")
    return n, (n + 15).lshr(4)


def side_conditions(op: str, n, rows, cfg) -> list:
    """``vta.add`` / ``vta.relu``'s side conditions (:func:`mappings.vta.elementwise.make`) as terms,
    n bounded first so that nothing wraps: n >= 1 and the operand rows fit the accumulator."""
    da = cfg.depth("acc")
    need = rows + rows if op == "add" else rows
    return [n.uge(1), n.ule(16 * da), need.ule(da)]


def generator(op: str, rows, cfg):
    """The generator on the size term: (DRAM bases (u, a, b, o), the micro-op, the instructions)."""
    from ila.models.vta import driver
    bases = driver.elementwise_layout(driver.SymbolicDram(cfg), op, rows)
    return bases, driver.elementwise_uop(op, rows), driver.elementwise_instructions(op, rows, bases)


def _term(v):
    return v if not isinstance(v, int) else bv_const(v, W32)


def _data(name: str):
    return symbol(f"data.{name}", MemSort(W32, W32))


def allsizes_proof(op: str, *, infer: bool = False) -> PhaseProof:
    """The all-sizes phase proof of ``vta.{op}`` (module docstring); ``infer``: Houdini instead of
    the supplied invariants. Raises ValueError for an unknown ``op``."""
    from ila.models.relay.model import FUNC_IDS, relay_ila
    from ila.models.vta.codes import C_ALU, C_IDLE, C_STORE
    from ila.models.vta.isa import ALU_ADD, ALU_MAX, encode_term, encode_uop_term
    from ila.models.vta.model import build_vta
    from mappings.vta import common as V
    if op not in OPS:
        raise ValueError(f"unknown element-wise op {op!r}; one of {OPS}")
    cfg = V.cfg()
    n, rows = sizes()
    (u_addr, a_addr, b_addr, _), uop, insns = generator(op, rows, cfg)
    binary = op == "add"
    fits, cmds = [], []
    for insn in insns:
        word, f = encode_term(insn, cfg)
        cmds.append({"vta_top_instr_in": word})
        fits += f
    uword, ufits = encode_uop_term(uop, cfg)
    vta = build_vta(cfg)
    A, B = _data("a"), _data("b")

    q_, l_ = _p("q"), _p("l")
    m_ = q_ * 16 + l_
    size_pre = land(*side_conditions(op, n, rows, cfg), *fits, *ufits)
    pre = land(size_pre, q_.ult(rows), l_.ult(16), m_.ult(n))

    def val(T, k):                        # element k of a tensor, zero in the padding lanes
        return ite(k.ult(n), load(T, k), bv_const(0, W32))

    def result(k):
        a = val(A, k)
        if binary:
            return a + val(B, k)
        return ite(a.sgt(0), a, bv_const(0, W32))

    # ------------------------------------------------------------------ assumed: the DRAM image
    def byte_of(word, b):
        bs = [Rewriter().one(extract(word, 8 * i + 7, 8 * i)) for i in range(4)]
        return ite(b.eq(0), bs[0], ite(b.eq(1), bs[1], ite(b.eq(2), bs[2], bs[3])))

    def dram_region(name, T, base):
        dq, dl, db = _p(f"d{name}.q"), _p(f"d{name}.l"), _p(f"d{name}.b")
        addr = (zext(dq, DRAM_AW) + fit(base, DRAM_AW)) * 64 + zext(dl, DRAM_AW) * 4 + zext(db, DRAM_AW)
        return Region(f"dram_{name}", "acc", "vta_dram", "assumed", (dq, dl, db),
                      land(dq.ult(rows), dl.ult(16), db.ult(4)), addr, byte_of(val(T, dq * 16 + dl), db))
    r_a = dram_region("a", A, a_addr)
    r_b = dram_region("b", B, b_addr) if binary else None
    ub = _p("du.b")
    r_u = Region("dram_uop", "acc", "vta_dram", "assumed", (ub,), ub.ult(4),
                 zext(_term(u_addr) * 4 + ub, DRAM_AW), byte_of(uword, ub))

    # ------------------------------------------------------------------ the LOAD phases
    ld_u, ld_a = insns[0], insns[1]
    ph_u, reg_u = load_phase("load_uop", 0, ld_u, "uop", cfg, vta, "load_uop")
    ph_a, reg_a = load_phase("load_a", 1, ld_a, "acc", cfg, vta, "load_a")
    loads = [ph_u, ph_a]
    if binary:
        ph_b, reg_b = load_phase("load_b", 2, insns[2], "acc", cfg, vta, "load_b")
        loads.append(ph_b)
    DU = array("acc", "load_uop", "vta_dram", MemSort(DRAM_AW, 8))
    DA = array("acc", "load_a", "vta_dram", MemSort(DRAM_AW, 8))
    DB = array("acc", "load_b", "vta_dram", MemSort(DRAM_AW, 8)) if binary else None

    # ------------------------------------------------------------------ the ALU loop
    k_alu = len(loads)
    alu = insns[k_alu]
    code = C_ALU[ALU_ADD if binary else ALU_MAX]
    dst = q_ * 16 + l_
    src = (rows + q_) * 16 + l_
    addrs = [dst, src] if binary else [dst]

    def facts(P):
        upc = zext(P.state("vta_upc"), W32)
        acc = P.array("vta_acc_mem")
        zero = bv_const(0, W32)
        out = [(reg_u, P.array("vta_uop_mem"), (upc, zero))] + [(r_u, DU, (bv_const(b, W32),)) for b in range(4)]
        out.append((reg_a, acc, (q_, l_)))
        out += [(r_a, DA, (q_, l_, bv_const(b, W32))) for b in range(4)]
        if binary:                        # b at the tracked cell, and at the row the ALU reads
            ci = zext(P.state("vta_cnt_i"), W32)
            for r, lane in ((q_, l_), (ci, l_)):
                out.append((reg_b, acc, (r, lane)))
                out += [(r_b, DB, (r, lane, bv_const(b, W32))) for b in range(4)]
        return out

    def pins(P, insn):             # the ALU loop's latched fields are the instruction's
        names = {s.name for s in P.checker.sides[P.side_name].ila.all_states()}
        return [P.state(f"vta_{k}").eq(fit(getattr(insn, k), P.state(f"vta_{k}").sort.width))
                for k in _LOOP_FIELDS if f"vta_{k}" in names]

    def alu_inv(P, relational_only=False):
        opst = P.state("vta_child_op")
        ci, cj, upc = (zext(P.state(s), W32) for s in ("vta_cnt_i", "vta_cnt_j", "vta_upc"))
        busy = opst.eq(code)
        done = opst.eq(C_IDLE) | busy & q_.ult(ci)
        cell = P.cells[0]
        rel = [implies(done, cell.eq(result(m_))), implies(busy & ~q_.ult(ci), cell.eq(val(A, m_)))]
        if binary:
            rel.append(P.cells[1].eq(val(B, m_)))
        if relational_only:
            return rel
        return land(*pins(P, alu), lor(busy, opst.eq(C_IDLE)), cj.eq(0), upc.eq(0),
                    implies(busy, ci.ult(rows)), implies(opst.eq(C_IDLE), ci.eq(rows)), *rel)

    ph_alu = Phase("alu", "acc", k_alu, "vta_acc_mem", (q_, l_), pre, addrs,
                   write_region=lambda a: a.ult(rows * 16), reads=("vta_uop_mem",),
                   facts=facts, invariant=None if infer else alu_inv,
                   candidates=lambda P: alu_inv(P, True), post=lambda P: P.cells[0].eq(result(m_)),
                   split=(l_, range(16)) if binary else None)

    def s_inv(P):
        o = P.state("vta_child_op")
        return lor(o.eq(C_STORE), o.eq(C_IDLE))
    ph_s = Phase("store", "acc", k_alu + 1, "vta_dram", (), bv_const(1, 1).eq(1), [], write_region=None,
                 reads=("vta_acc_mem",), invariant=None if infer else s_inv)

    # ------------------------------------------------------------------ the IR side
    ab, bb = bv_const(0, W32), n
    ob = n + n if binary else n                 # mappings.common.Layout: a, (b), out
    name = "add" if binary else "nn.relu"
    args = [ab, bb, ob, n] if binary else [ab, ob, n]
    ir_cmds = [{"func_id": FUNC_IDS[name], **{f"arg_{i}": v for i, v in enumerate(args)}}]
    ir = relay_ila("int32", tensor_entries=1 << 22)
    ta = _p("ir.k")
    t_a = Region("ir_a", "ir", "tensor", "assumed", (ta,), ta.ult(n), ta + ab, load(A, ta))
    t_b = Region("ir_b", "ir", "tensor", "assumed", (ta,), ta.ult(n), ta + bb, load(B, ta)) if binary else None
    ir_addr = ob + m_

    def ir_facts(P):
        k = P.state("cnt_0")
        T = P.array("tensor")
        return [(t_a, T, (k,))] + ([(t_b, T, (k,))] if binary else [])

    def ir_inv(P, relational_only=False):
        busy = P.state(f"{name}.busy")
        k = P.state("cnt_0")
        cell = P.cells[0]
        rel = [implies(busy & ~m_.ult(k), cell.eq(load(P.array("tensor"), ir_addr))),
               implies(~busy | busy & m_.ult(k), cell.eq(result(m_)))]
        if relational_only:
            return rel
        cfgs = [P.state(f"cfg_{i}").eq(v) for i, v in enumerate(args)]
        return land(*cfgs, *idle_ops(P, f"{name}.busy"), k.ult(n), implies(~busy, k.eq(0)), *rel)

    ph_ir = Phase("elementwise", "ir", 0, "tensor", (q_, l_), pre, [ir_addr],
                  write_region=lambda a: land(a.uge(ob), a.ult(ob + n)), facts=ir_facts,
                  invariant=None if infer else ir_inv, candidates=lambda P: ir_inv(P, True),
                  post=lambda P: P.cells[0].eq(result(m_)))

    sides = {"ir": Side("ir", ir, ir_cmds), "acc": Side("acc", vta, cmds)}
    assumed = [r_a, r_u, t_a] + ([r_b, t_b] if binary else [])
    return PhaseProof(
        scope="symbolic", sides=sides, params=(q_, l_), pre=pre,
        phases=[ph_ir, *loads, ph_alu, ph_s], lemmas=[],
        final=lambda F: F.cell("alu").eq(F.cell("elementwise")), outputs=[("alu", 0), ("elementwise", 0)],
        checks=[("assumed placement is the declared map (sample shapes)",
                 lambda: placement_matches(op, r_a, r_b, r_u, (u_addr, a_addr, b_addr))),
                ("the symbolic instructions are elementwise_program's (sample shapes)", lambda: words_match(op, cmds)),
                ("the side conditions are the mapping's (sample shapes)", lambda: conditions_match(op, size_pre))],
        covers=("configuration-fields", "order", "model-loops"), numerics="exact",
        notes=[f"all sizes: the configuration fields, the micro-op and the instruction order from the generator run "
               f"on the size symbol, the LOADs, the ALU loop and the IR's {name} loop against the declared map; the "
               f"data bytes and the read-back are proved per shape (vta.{op}'s BMC proof)"],
        size_vars=[n], assumed=assumed, small_sizes=SMALL_SIZES,
        shape_of=lambda v: {"n": v["p.n"]},
        cex_shapes=({"n": 16}, {"n": 17}, {"n": 40}))


def chc_spec_for(op: str):
    """``Proof.chc`` of ``vta.{op}``: the all-sizes proof for ``shape`` None; a fixed shape has
    no phase proof (its BMC proof is the per-shape one)."""
    def spec(shape: dict | None, *, numerics: str = "exact", infer: bool = False) -> PhaseProof:
        from mappings.base import MappingError
        if shape is not None:
            raise MappingError(f"vta.{op}: the CHC proof is for all sizes (--shape symbolic); at {shape} "
                               f"use --method bmc")
        return allsizes_proof(op, infer=infer)
    return spec


add_chc_spec = chc_spec_for("add")
relu_chc_spec = chc_spec_for("relu")


def _at(shape: dict):
    n, _ = sizes()
    return Rewriter({n: bv_const(shape["n"], W32)})


def placement_matches(op: str, r_a: Region, r_b, r_u: Region, bases) -> list[str]:
    """At :data:`SAMPLE_SHAPES`: the assumed DRAM regions' byte addresses are the declared
    refinement map's (:func:`mappings.vta.elementwise.refinement`: a[k] at 64 + 4k ...) and the
    micro-op's bytes are where the generator puts it (element ``u`` of 4 bytes)."""
    from mappings.vta import elementwise as E
    bad = []
    for shape in SAMPLE_SHAPES:
        rw = _at(shape)
        ref = E.refinement(op, shape)
        for name, r in (("a", r_a), ("b", r_b)):
            if r is None:
                continue
            for k, want in enumerate(ref[name][1]):
                p = dict(zip(r.params, (bv_const(k // 16, W32), bv_const(k % 16, W32), bv_const(0, W32))))
                got = _value(rw, Rewriter(p).one(r.addr))
                if got != int(want):
                    bad.append(f"{name}[{k}] at {shape}: assumed byte {got}, declared {int(want)}")
                    break
        got = _value(rw, Rewriter({r_u.params[0]: bv_const(0, W32)}).one(r_u.addr))
        want = _value(rw, _term(bases[0]) * 4)
        if got != want:
            bad.append(f"micro-op at {shape}: assumed byte {got}, generator's {want}")
    return bad


def words_match(op: str, cmds: list) -> list[str]:
    """At :data:`SAMPLE_SHAPES`: the symbolic instruction words, the size substituted, are the
    words ``elementwise_program`` emits for that shape."""
    from ila.models.vta import driver
    from mappings.vta import common as V

    def program(shape):
        z = np.zeros(shape["n"], np.int64)
        return driver.elementwise_program(op, z, z if op == "add" else None, cfg=V.cfg())
    return words_against(cmds, SAMPLE_SHAPES, _at, program, "elementwise_program")


def conditions_match(op: str, size_pre) -> list[str]:
    """The term side conditions accept exactly the shapes ``vta.{op}``'s side conditions accept,
    on a grid of sizes around the limits."""
    from mappings.registry import get
    grid = [{"n": n} for n in (0, 1, 15, 16, 17, 1000, 16383, 16384, 16385, 32767, 32768, 32769, 1 << 20)]
    return conditions_against(get(f"vta.{op}"), size_pre, _at, grid, limit=len(grid))
