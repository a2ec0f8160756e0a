"""Phase proof of VTA's dense program (``vta.gemm``; each pass of ``vta.dense``): the GEMM family
of loops over the micro-op buffer, proved for one tracked output cell (:mod:`mappings.phases`,
checked by :mod:`verify.phases`).

The accelerator side is the exact MMIO stream ``ila.models.vta.driver.program_commands`` of
``dense_program`` on symbolic int8 tensors x[N, K], w[M, K] (the real generator and packer; one
chunk: vta.gemm's side conditions keep every row in the SRAMs): DRAM writes, then LOAD UOP, LOAD
WGT, LOAD INP, GEMM (reset), GEMM, STORE, FINISH. With ``kb = ceil(K/16)``, ``mb = ceil(M/16)``
and the DRAM element bases the generator allocates (``u``, ``xa``, ``wa``):

* lemma ``dram`` (codegen bytes, order): after the data writes (before the first instruction),
  DRAM byte ``16 (xa + n kb + u) + l`` holds x[n, 16u + l] (0 in the K padding), byte
  ``256 (wa + jb kb + u) + 16 o + l`` holds w[16 jb + o, 16 u + l] (0 in the padding), and the
  micro-op words at ``4 (u + r)`` hold ``Uop(0, r, r)`` for r < kb and the zero uop at r = kb;
* ``load_uop``, ``load_wgt``, ``load_inp`` (the 2D DMA loop): SRAM row r, lane l of the buffer
  holds the DRAM element ``dram_base + r`` lane l (regions ``uop``, ``wgt``, ``inp``);
* ``gemm_reset``: accumulator row ``i mb + j`` is zero for i < N, j < mb (region ``acc_zero``);
* ``gemm`` (output): the tracked accumulator entry of out[n*, 16 j* + o*] holds ``QS(16 kb)``,
  where ``QS`` is the partial dot product of x[n*, :] and w[m*, :] (``QS(0) = 0``, ``QS(k + 1) =
  QS(k) + P(k)``, ``P(k) = sext(x[n*, k]) sext(w[m*, k])`` for k < K and 0 beyond: an
  uninterpreted function constrained by guarded definitional instances, each true of that sum);
* ``store``: writes DRAM only (the accumulator entries survive to the end of the stream).

The compiler-IR side is ``relay_ila('int32')``'s ``nn.dense`` loop on the same data (tensor
stores, lemma ``ir_inputs``), whose tracked output cell holds ``QS(K)``; the final clause:
``QS(16 kb) = QS(K)`` (the padding adds zeros), so the two cells agree for all data. The compared
accumulator entry is vta.gemm's declared output map (``gemm.acc_index``; check ``output map``).

Invariants: supplied (``infer=False``) or inferred by Houdini (``infer=True``: the generic
templates of :mod:`verify.templates` and the relational candidates below, which say which cells
are processed at a loop position and what a processed cell holds).
"""
from __future__ import annotations

import numpy as np

from ila import BvSort, FuncRef, bv_const, concat, extract, implies, ite, land, load, lor, sext, zext
from ila.expr import Expr
from ila.models.vta.isa import GemmInsn, MemInsn
from ila.sorts import MemSort
from ila.unroll import symbol
from mappings.phases import Lemma, Phase, PhaseProof, ReadBack, Region, Side, array

W32 = 32
DRAM_AW = 48
GUARD = 1 << 20          # QS's recursion is instantiated below this index only (every instance true)


def _p(name, w=W32):
    return symbol(f"p.{name}", BvSort(w))


def data_array(name: str, width: int = 8):
    """The data of the proof as an array of ``width``-bit elements indexed by the flat index."""
    return symbol(f"data.{name}", MemSort(W32, width))


def le(mem, addr, nbytes: int):
    """Little-endian ``nbytes`` of byte memory ``mem`` from ``addr`` (the model's ``_load_le``)."""
    if nbytes == 1:
        return load(mem, addr)
    return concat(*[load(mem, addr + b) for b in reversed(range(nbytes))])


def fit(v, width: int):
    """An instruction field's value (an int, or a term of an all-sizes proof, whose side conditions
    say it fits) at ``width`` bits: ints as they are, terms truncated or zero-extended."""
    if isinstance(v, int):
        return v
    w = v.sort.width
    return v if w == width else (extract(v, width - 1, 0) if w > width else zext(v, width))


# ----------------------------------------------------------------------------- the 2D DMA loop
def load_phase(name: str, command: int, insn: MemInsn, buf: str, cfg, vta, dram_phase: str) -> tuple[Phase, Region]:
    """The phase of one LOAD of the emitted stream (no padding, ``x_stride = x_size``): SRAM row
    ``sram_base + r`` lane l holds DRAM element ``dram_base + r`` lane l, for r < y_size x_size.
    The fields are ints, or 32-bit terms of an all-sizes proof (``x_stride`` the same term as
    ``x_size``)."""
    if insn.x_stride is not insn.x_size and (isinstance(insn.x_stride, Expr) or insn.x_stride != insn.x_size) \
            or any((insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)):
        raise ValueError(f"{name}: the phase proof takes unpadded LOADs with x_stride = x_size, got {insn}")
    from ila.models.vta.model import MEM_STATE
    lanes, eb = cfg.lanes(buf), cfg.elem_bytes(buf)
    width = {"uop": 32, "inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width}[buf]
    nb = width // 8
    total = insn.y_size * insn.x_size
    r, ln = _p(f"{name}.r"), _p(f"{name}.l")
    mem = MEM_STATE[buf]
    D = array("acc", dram_phase, "vta_dram", MemSort(DRAM_AW, 8))
    pre = land(r.ult(total), ln.ult(lanes))
    addr = (r + insn.sram_base) * lanes + ln
    elem = zext(r, DRAM_AW) + fit(insn.dram_base, DRAM_AW)
    val = le(D, elem * eb + zext(ln, DRAM_AW) * nb, nb)
    region = Region(name, "acc", mem, name, (r, ln), pre, addr, val)

    def inv(P, relational_only=False):
        op, cy, cx, sidx = (P.state(n) for n in ("vta_child_op", "vta_cnt_y", "vta_cnt_x", "vta_sram_idx"))
        from ila.models.vta.model import C_IDLE, C_LOAD, BUF_OF
        code = C_LOAD[{v: k for k, v in BUF_OF.items()}[buf]]
        cell = P.cells[0]
        done = sidx - insn.sram_base
        rel = [implies(r.ult(done) & op.eq(code) | op.eq(C_IDLE), cell.eq(val)),
               implies(op.eq(code) & ~r.ult(done), cell.eq(load(P.array(mem), addr)))]
        if relational_only:
            return rel
        ys, xs = insn.y_size, insn.x_size
        fields = {"vta_sram_base": insn.sram_base, "vta_dram_base": insn.dram_base, "vta_y_size": ys,
                  "vta_x_size": xs, "vta_x_stride": insn.x_stride, "vta_y_pad_0": 0, "vta_y_pad_1": 0,
                  "vta_x_pad_0": 0, "vta_x_pad_1": 0}
        pins = [P.state(k).eq(fit(v, P.state(k).sort.width)) for k, v in fields.items()]
        y, x = zext(cy, W32), zext(cx, W32)
        return land(*pins, lor(op.eq(code), op.eq(C_IDLE)),
                    implies(op.eq(code), land(y.ult(ys), x.ult(xs), sidx.eq(y * xs + x + insn.sram_base))),
                    implies(op.eq(C_IDLE), sidx.eq(insn.sram_base + total)),
                    *rel)

    phase = Phase(name, "acc", command, mem, (r, ln), pre, [addr],
                  write_region=lambda a, base=insn.sram_base, n=total: land(a.uge(base * lanes), a.ult((base + n) * lanes)),
                  reads=("vta_dram",),
                  facts=lambda P: [],
                  invariant=inv, candidates=lambda P: inv(P, True), establishes=region)
    return phase, region


def host_command(cmd: dict):
    """The VTA runner's host commands (``ila.models.vta.port``): ``{"vta_read_acc": r}`` reads the
    ``lanes('acc')`` int32 lanes of accumulator row r, lane 0 first; ``{"vta_reset": True}`` resets
    the machine."""
    if "vta_read_acc" in cmd:
        from mappings.vta.common import cfg
        lanes = cfg().lanes("acc")
        r = int(cmd["vta_read_acc"])
        return ("read", [("vta_acc_mem", r * lanes + l) for l in range(lanes)])
    if cmd.get("vta_reset"):
        return ("reset",)
    return None


def idle_ops(P, own: str) -> list:
    """The relay ILA's other operator loops are idle (their busy flags false)."""
    ila = P.checker.sides[P.side_name].ila
    return [~v for v in ila.all_states() if v.name.endswith(".busy") and v.name != own and v.sort.is_bool]


# ----------------------------------------------------------------------------- the whole proof
def _insns(prog):
    kinds = [type(i).__name__ + (f"/{i.memory_type}" if isinstance(i, MemInsn) else "") for i in prog.insns]
    want = ["MemInsn/0", "MemInsn/1", "MemInsn/2", "GemmInsn", "GemmInsn", "MemInsn/4", "FinishInsn"]
    if kinds != want:
        raise ValueError(f"the phase proof takes dense programs of one chunk without epilogue; got {kinds}")
    return prog.insns


def phase_proof(shape: dict, *, infer: bool = False, x=None, w=None) -> PhaseProof:
    """The phase proof of vta.gemm at ``shape`` (N, K, M fixed; module docstring). ``x``, ``w``:
    the symbolic int8 tensors to generate from (default fresh symbols ``x_<k>``, ``w_<k>``)."""
    from ila.models.relay.model import FUNC_IDS, relay_ila
    from ila.models.vta import driver
    from ila.models.vta.model import C_GEMM, C_GEMM_RESET, C_IDLE, build_vta
    from mappings.common import ir_commands
    from mappings.vta import common as V
    from mappings.vta import gemm as G
    N, K, M = shape["N"], shape["K"], shape["M"]
    G.MAPPING.check_shape(shape)
    cfg = V.cfg()
    kb, mb = -(-K // 16), -(-M // 16)
    if x is None:
        x = V.symbolic_tensor("x", (N, K), 8)
    if w is None:
        w = V.symbolic_tensor("w", (M, K), 8)
    prog = driver.dense_program(x, w, cfg=cfg)
    ld_u, ld_w, ld_x, g0, g1, st, _ = _insns(prog)
    emitted = G.acc_program(shape, {"x": x, "w": w})      # the code generator: the stream and its read-back
    cmds = list(emitted.commands)
    first = next(k for k, c in enumerate(cmds) if "vta_top_instr_in" in c)     # the first instruction
    vta = build_vta(cfg)
    X, Wt = data_array("x"), data_array("w")

    # ------------------------------------------------------------------ rigid parameters
    n_, j_, o_ = _p("n"), _p("j"), _p("o")
    m_ = j_ * 16 + o_
    pre = land(n_.ult(N), j_.ult(mb), o_.ult(16), m_.ult(M))
    QS = FuncRef("vta_dense_partial_sum", BvSort(W32), [BvSort(W32)] * 3)

    def xval(n, k):           # x[n, k], 0 in the K padding (as the DRAM image holds it)
        return ite(k.ult(K), load(X, n * K + k), bv_const(0, 8))

    def wval(m, k):           # w[m, k], 0 in the padding
        return ite(m.ult(M) & k.ult(K), load(Wt, m * K + k), bv_const(0, 8))

    def qs_step(n, m, k):     # QS(n, m, k + 1) = QS(n, m, k) + x[n, k] w[m, k] (guarded: true of the partial sum)
        return implies(k.ult(GUARD), QS(n, m, k + 1).eq(QS(n, m, k) + sext(xval(n, k), W32) * sext(wval(m, k), W32)))

    def qs_zero(n, m):
        return QS(n, m, bv_const(0, W32)).eq(0)

    # ------------------------------------------------------------------ lemma: the DRAM image
    u_addr, x_addr, w_addr = ld_u.dram_base, ld_x.dram_base, ld_w.dram_base
    dn, du, dl = _p("dx.n"), _p("dx.u"), _p("dx.l")
    k_ = du * 16 + dl
    r_x = Region("dram_x", "acc", "vta_dram", "dram", (dn, du, dl), land(dn.ult(N), du.ult(kb), dl.ult(16)),
                 zext((dn * kb + du + x_addr) * 16 + dl, DRAM_AW), xval(dn, k_))
    wj, wo, wu, wl = _p("dw.j"), _p("dw.o"), _p("dw.u"), _p("dw.l")
    wm, wk = wj * 16 + wo, wu * 16 + wl
    r_w = Region("dram_w", "acc", "vta_dram", "dram", (wj, wo, wu, wl),
                 land(wj.ult(mb), wo.ult(16), wu.ult(kb), wl.ult(16)),
                 zext((wj * kb + wu + w_addr) * 256 + wo * 16 + wl, DRAM_AW), wval(wm, wk))
    ur, ub = _p("du.r"), _p("du.b")
    word = ite(ur.ult(kb), (ur << 22) | (ur << 11), bv_const(0, W32))      # Uop(0, r, r); the zero uop at kb
    r_u = Region("dram_uop", "acc", "vta_dram", "dram", (ur, ub), land(ur.ult(kb + 1), ub.ult(4)),
                 zext((ur + u_addr) * 4 + ub, DRAM_AW),
                 extract(word.lshr(ub * 8), 7, 0))
    xs_flat = list(np.asarray(x, dtype=object).reshape(-1))
    ws_flat = list(np.asarray(w, dtype=object).reshape(-1))
    lemmas = [Lemma("dram", "acc", first, r_x, (range(N), range(kb), range(16)), {X: xs_flat}),
              Lemma("dram", "acc", first, r_w, (range(mb), range(16), range(kb), range(16)), {Wt: ws_flat}),
              Lemma("dram", "acc", first, r_u, (range(kb + 1), range(4)), {})]

    # ------------------------------------------------------------------ the LOAD phases
    ph_u, reg_u = load_phase("load_uop", first + 0, ld_u, "uop", cfg, vta, "load_uop")
    ph_w, reg_w = load_phase("load_wgt", first + 1, ld_w, "wgt", cfg, vta, "load_wgt")
    ph_x, reg_x = load_phase("load_inp", first + 2, ld_x, "inp", cfg, vta, "load_inp")
    DU = array("acc", "load_uop", "vta_dram", MemSort(DRAM_AW, 8))
    DW = array("acc", "load_wgt", "vta_dram", MemSort(DRAM_AW, 8))
    DX = array("acc", "load_inp", "vta_dram", MemSort(DRAM_AW, 8))

    def uop_facts(P, at):
        """The micro-op at ``at`` (a loop term): its word in the uop SRAM, and the word's bytes."""
        return ([(reg_u, P.array("vta_uop_mem"), (at, bv_const(0, W32)))]
                + [(r_u, DU, (at, bv_const(b, W32))) for b in range(4)])

    def loop_pins(P, insn: GemmInsn):
        names = ("reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                 "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in")
        return [P.state(f"vta_{k}").eq(getattr(insn, k)) for k in names]

    # ------------------------------------------------------------------ GEMM reset
    zi, zj, zo = _p("z.i"), _p("z.j"), _p("z.o")
    z_pre = land(zi.ult(N), zj.ult(mb), zo.ult(16))
    z_addr = (zi * mb + zj) * 16 + zo
    reg_z = Region("acc_zero", "acc", "vta_acc_mem", "gemm_reset", (zi, zj, zo), z_pre, z_addr, bv_const(0, W32))

    def z_inv(P, relational_only=False):
        op, ci, cj, upc = (P.state(n) for n in ("vta_child_op", "vta_cnt_i", "vta_cnt_j", "vta_upc"))
        i, j = zext(ci, W32), zext(cj, W32)
        done = i * mb + j
        cell = P.cells[0]
        rel = [implies(op.eq(C_IDLE) | (zi * mb + zj).ult(done), cell.eq(0)),
               implies(op.eq(C_GEMM_RESET) & ~(zi * mb + zj).ult(done), cell.eq(load(P.array("vta_acc_mem"), z_addr)))]
        if relational_only:
            return rel
        return land(*loop_pins(P, g0), lor(op.eq(C_GEMM_RESET), op.eq(C_IDLE)), upc.eq(kb),
                    implies(op.eq(C_GEMM_RESET), land(i.ult(N), j.ult(mb))),
                    implies(op.eq(C_IDLE), land(i.eq(N), j.eq(0))), *rel)

    ph_z = Phase("gemm_reset", "acc", first + 3, "vta_acc_mem", (zi, zj, zo), z_pre, [z_addr],
                 write_region=lambda a: a.ult(N * mb * 16), reads=("vta_uop_mem",),
                 facts=lambda P: uop_facts(P, zext(P.state("vta_upc"), W32)),
                 invariant=None if infer else z_inv, candidates=lambda P: z_inv(P, True), establishes=reg_z)

    # ------------------------------------------------------------------ GEMM
    g_addr = (n_ * mb + j_) * 16 + o_

    def g_facts(P):
        ci, cj, upc = (zext(P.state(n), W32) for n in ("vta_cnt_i", "vta_cnt_j", "vta_upc"))
        out = uop_facts(P, upc) + [(reg_z, P.array("vta_acc_mem"), (n_, j_, o_))]
        for lane in range(16):
            L = bv_const(lane, W32)
            out.append((reg_x, P.array("vta_inp_mem"), (upc + ci * kb, L)))
            out.append((r_x, DX, (ci, upc, L)))
            out.append((reg_w, P.array("vta_wgt_mem"), (upc + cj * kb, o_ * 16 + L)))
            out.append((r_w, DW, (cj, o_, upc, L)))
        return out

    def g_axioms(P):
        ci, cj, upc = (zext(P.state(n), W32) for n in ("vta_cnt_i", "vta_cnt_j", "vta_upc"))
        m = cj * 16 + o_
        return [qs_zero(ci, m)] + [qs_step(ci, m, upc * 16 + lane) for lane in range(16)]

    def g_inv(P, relational_only=False):
        op, ci, cj, upc = (P.state(n) for n in ("vta_child_op", "vta_cnt_i", "vta_cnt_j", "vta_upc"))
        i, j, u = zext(ci, W32), zext(cj, W32), zext(upc, W32)
        pos, t = i * mb + j, n_ * mb + j_
        cell = P.cells[0]
        busy = op.eq(C_GEMM)
        at = busy & pos.eq(t)
        rel = [implies(busy & pos.ult(t) | at & u.eq(0), cell.eq(0)),
               implies(at & u.ne(0), cell.eq(QS(i, j * 16 + o_, u * 16))),
               implies(op.eq(C_IDLE) | (busy & t.ult(pos)), cell.eq(QS(n_, m_, bv_const(16 * kb, W32))))]
        if relational_only:
            return rel
        return land(*loop_pins(P, g1), lor(busy, op.eq(C_IDLE)),
                    implies(busy, land(i.ult(N), j.ult(mb), u.ult(kb))),
                    implies(op.eq(C_IDLE), land(i.eq(N), j.eq(0), u.eq(0))), *rel)

    ph_g = Phase("gemm", "acc", first + 4, "vta_acc_mem", (n_, j_, o_), pre, [g_addr],
                 write_region=lambda a: a.ult(N * mb * 16), reads=("vta_uop_mem", "vta_inp_mem", "vta_wgt_mem"),
                 facts=g_facts, axioms=g_axioms, invariant=None if infer else g_inv,
                 candidates=lambda P: g_inv(P, True), post=lambda P: P.cells[0].eq(QS(n_, m_, bv_const(16 * kb, W32))),
                 split=(o_, range(16)))

    # ------------------------------------------------------------------ STORE (writes DRAM only)
    def s_inv(P):
        from ila.models.vta.model import C_STORE
        op = P.state("vta_child_op")
        return lor(op.eq(C_STORE), op.eq(C_IDLE))
    ph_s = Phase("store", "acc", first + 5, "vta_dram", (), bv_const(1, 1).eq(1), [], write_region=None,
                 reads=("vta_acc_mem",), invariant=None if infer else s_inv)

    # ------------------------------------------------------------------ the IR side
    frag = G.ir_fragment(shape)
    ir_vals = {"x": [sext(s, W32) for s in xs_flat], "w": [sext(s, W32) for s in ws_flat]}
    ir_cmds = ir_commands(frag, ir_vals)
    ir_start = next(k for k, c in enumerate(ir_cmds) if c["func_id"] == FUNC_IDS["nn.dense"])
    ir = relay_ila("int32", tensor_entries=1 << max(16, (frag.size() - 1).bit_length()))
    xb, wb = frag.inputs["x"][0], frag.inputs["w"][0]
    ob = frag.output[0]
    tn, tk, tm = _p("ir.n"), _p("ir.k"), _p("ir.m")
    t_x = Region("ir_x", "ir", "tensor", "ir_inputs", (tn, tk), land(tn.ult(N), tk.ult(K)), tn * K + tk + xb,
                 sext(load(X, tn * K + tk), W32))
    t_w = Region("ir_w", "ir", "tensor", "ir_inputs", (tm, tk), land(tm.ult(M), tk.ult(K)), tm * K + tk + wb,
                 sext(load(Wt, tm * K + tk), W32))
    lemmas += [Lemma("ir_inputs", "ir", ir_start, t_x, (range(N), range(K)), {X: xs_flat}),
               Lemma("ir_inputs", "ir", ir_start, t_w, (range(M), range(K)), {Wt: ws_flat})]
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
        pos, t = n * M + mm, n_ * M + m_
        cell, acc = P.cells[0], P.state("acc")
        start = load(P.array("tensor"), ir_addr)
        rel = [implies(busy & pos.ult(t), cell.eq(start)),
               implies(busy & pos.eq(t), cell.eq(start) & implies(k.ne(0), acc.eq(QS(n, mm, k)))),
               implies(~busy | (busy & t.ult(pos)), cell.eq(QS(n_, m_, bv_const(K, W32))))]
        if relational_only:
            return rel
        cfg_vals = [xb, wb, ob, N, K, M]
        pins = [P.state(f"cfg_{i}").eq(v) for i, v in enumerate(cfg_vals)] + idle_ops(P, "nn.dense.busy")
        return land(*pins, implies(busy, land(n.ult(N), mm.ult(M), k.ult(K))),
                    implies(~busy, land(n.eq(0), mm.eq(0), k.eq(0))), *rel)

    ph_d = Phase("dense", "ir", ir_start, "tensor", (n_, j_, o_), pre, [ir_addr],
                 write_region=lambda a: land(a.uge(ob), a.ult(ob + N * M)),
                 facts=d_facts, axioms=d_axioms, invariant=None if infer else d_inv,
                 candidates=lambda P: d_inv(P, True), post=lambda P: P.cells[0].eq(QS(n_, m_, bv_const(K, W32))))

    def final_axioms(F):
        return [qs_step(n_, m_, bv_const(k, W32)) for k in range(K, 16 * kb)]

    def output_map():
        want = G.acc_index(shape)
        n, m = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
        got = (n * mb + m // 16) * 16 + m % 16
        bad = np.argwhere(got != want)
        return [] if not bad.size else [f"out{tuple(bad[0])}: the proof tracks entry {got[tuple(bad[0])]}, the declared "
                                        f"output map (gemm.acc_index) reads {want[tuple(bad[0])]}"]

    def program_is_the_streams():
        """The ILA commands the proof walks are the driver's program for these symbols."""
        ila_cmds = [c for c in cmds if "vta_read_acc" not in c and "vta_reset" not in c]
        return [] if ila_cmds == V.commands(prog) else ["the proof's stream is not the driver's program"]

    scope = f"{N}x{K}x{M}"
    sides = {"ir": Side("ir", ir, ir_cmds), "acc": Side("acc", vta, cmds, init={"vta_dram": 0}, host=host_command)}
    readback = ReadBack("acc", emitted.readback, lambda k: ("gemm", (k // M, (k % M) // 16, (k % M) % 16)), N * M)
    return PhaseProof(
        scope=scope, sides=sides, params=(n_, j_, o_), pre=pre,
        phases=[ph_d, ph_u, ph_w, ph_x, ph_z, ph_g, ph_s], lemmas=lemmas,
        final=lambda F: F.cell("gemm").eq(F.cell("dense")), outputs=[("gemm", 0), ("dense", 0)],  # pres: `pre`
        final_axioms=final_axioms,
        checks=[("output map: the tracked entry is gemm.acc_index", output_map),
                ("the stream is the mapping's codegen", program_is_the_streams)],
        covers=("codegen-bytes", "order", "configuration-fields", "model-loops", "read-back"), numerics="exact",
        readback=readback,
        cex_shapes=({"N": 1, "K": 16, "M": 16}, {"N": 2, "K": 20, "M": 18}))


def chc_spec(shape: dict | None, *, numerics: str = "exact", infer: bool = False) -> PhaseProof:
    """The phase proof of vta.gemm at ``shape`` (``numerics`` is bit-exact either way); vta.gemm's
    ``Proof.chc`` is :func:`mappings.vta.gemm_allsizes.chc_spec`, which adds all sizes."""
    from mappings.base import MappingError
    if shape is None:
        raise MappingError("vta.gemm: the all-sizes proof is mappings.vta.gemm_allsizes:chc_spec; give a shape")
    return phase_proof(shape, infer=infer)
