"""The VTA ILA is usable for proofs, not only for simulation: on a small configuration (BLOCK = 2),
symbolic execution of GEMM and ALU instructions over symbolic buffer contents is proved (z3) to
compute the documented semantics for every input."""
import dataclasses

import pytest

from ila import bv_const, load, sext
from ila.models.vta import isa as V
from ila.models.vta.model import build_vta
from ila.smt import SmtEncoder, check
from ila.unroll import execute

SMALL = dataclasses.replace(V.DEFAULT_CONFIG, log_block=1, log_uop_buff_size=5, log_inp_buff_size=6,
                            log_wgt_buff_size=6, log_acc_buff_size=8, dram_bytes=256)


def _run(insn, uops):
    m = build_vta(SMALL)
    init = {v.name: 0 for v in m.all_states() if not v.sort.is_mem}
    init["vta_uop_mem"] = [V.encode_uop(u, SMALL) for u in uops]
    return m, execute(m, [{"vta_top_instr_in": V.encode(insn, SMALL)}], init=init)


def _prove(enc, claims):
    neg = enc.mgr.Not(enc.mgr.And([enc.encode(c) for c in claims]))
    return check(enc, [neg], solver="z3", timeout=60).status


def _a(i):
    return bv_const(i, 32)


def test_gemm_elem_proved_for_all_data():
    uops = [V.Uop(1, 2, 3)]
    m, u = _run(V.GemmInsn(uop_bgn=0, uop_end=1, iter_out=2, dst_factor_out=1, src_factor_out=1), uops)
    assert u.steps.count("vta_gemm_elem") == 2
    acc0, inp0, wgt0 = (u.init[n] for n in ("vta_acc_mem", "vta_inp_mem", "vta_wgt_mem"))
    acc1 = u.final["vta_acc_mem"]
    claims = []
    for i in range(2):
        for o in range(2):
            d, s, w = 1 + i, 2 + i, 3
            want = load(acc0, _a(d * 2 + o))
            for k in range(2):
                want = want + sext(load(inp0, _a(s * 2 + k)), 32) * sext(load(wgt0, _a(w * 4 + o * 2 + k)), 32)
            claims.append(load(acc1, _a(d * 2 + o)).eq(want))
    claims.append(load(acc1, _a(0)).eq(load(acc0, _a(0))))          # row 0 untouched
    assert _prove(SmtEncoder(), claims) == "unsat"


@pytest.mark.parametrize("aop,imm", [(V.ALU_SHR, -3), (V.ALU_SHR, 5), (V.ALU_MAX, 0), (V.ALU_MIN, -7)])
def test_alu_imm_proved_for_all_data(aop, imm):
    m, u = _run(V.AluInsn(alu_opcode=aop, use_imm=1, imm=imm, uop_bgn=0, uop_end=1), [V.Uop(4, 0, 0)])
    acc0, acc1 = u.init["vta_acc_mem"], u.final["vta_acc_mem"]
    claims = []
    for o in range(2):
        x = load(acc0, _a(8 + o))
        c = bv_const(imm, 32)
        want = {V.ALU_SHR: (x << 3) if imm < 0 else x.ashr(imm),
                V.ALU_MAX: x, V.ALU_MIN: x}[aop]
        if aop == V.ALU_MAX:
            from ila import ite
            want = ite(x.sgt(c), x, c)
        if aop == V.ALU_MIN:
            from ila import ite
            want = ite(x.slt(c), x, c)
        claims.append(load(acc1, _a(8 + o)).eq(want))
    assert _prove(SmtEncoder(), claims) == "unsat"


def test_wrong_claim_is_refuted():
    m, u = _run(V.AluInsn(alu_opcode=V.ALU_SHR, use_imm=1, imm=1, uop_bgn=0, uop_end=1), [V.Uop(4, 0, 0)])
    x = load(u.init["vta_acc_mem"], _a(8))
    wrong = load(u.final["vta_acc_mem"], _a(8)).eq(x.lshr(1))       # logical instead of arithmetic
    assert _prove(SmtEncoder(), [wrong]) == "sat"
