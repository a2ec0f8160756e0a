"""The FlexASR activation unit's micro-program on every output group at once (simulator only):
the evaluator shared by the whole-run summary of a feed-forward layer
(:mod:`ila.models.flexasr.linear_run`) and the per-timestep summary of ``PE_ACT_CHILD``
(:func:`act_summary`, which an RNN such as the LSTM runs once per timestep).

Semantics (``gb_control._build_act``): PE0's ``num_inst`` micro-ops (opcode in bits 7..4, A in
3..2, B in 1..0) run once per group g < PE0's act ``num_output``, on every PE's four 16-lane
20-bit registers: INPE A := the next core output vector (a cursor from 0, one step per INPE),
LOAD A := the PE's act buffer at ``buffer_base + 16 g + lane`` (0 at timestep 0 when PE0's
``is_zero_first`` flags are set), STORE writes A there, COPY A := B, EADD/EMUL A := f(A, B),
SIGM/TANH/RELU/ONEX A := f(A), OUTGB writes ``Fixed2Adaptfloat(A, adpbias_out)`` to GB
``tiled_addr(large_base(mem_idx_2), t, output_base[7:0] + g, num_vector_2) + lane``.

Groups are evaluated side by side (vectorised), which equals running them one after another when
no group reads what another wrote: every register a micro-op reads is written earlier in the same
group (:func:`program` checks it), the act-buffer slots of the groups are distinct (16 apart) and
the GB bytes the groups write are distinct (the callers check it).
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import constants as C
from ila.models.flexasr import funcs as Fn

M32 = 0xFFFFFFFF
NEXT = 5                                    # gb_control's state after the activation loop
UNARY = {C.ACT_SIGM: Fn.PE_ACT_SIGMOID, C.ACT_TANH: Fn.PE_ACT_TANH, C.ACT_RELU: Fn.PE_ACT_RELU,
         C.ACT_ONEX: Fn.PE_ACT_ONEX}
BINARY = {C.ACT_EADD: Fn.PE_ACT_EADD, C.ACT_EMUL: Fn.PE_ACT_EMUL}
FUNCS = (Fn.FIXED2ADAPTFLOAT, *UNARY.values(), *BINARY.values())
ACT_BUGS = ("store_ignored",)               # seeded, for the differential tests
_LANE = np.arange(16)


def program(S, num_inst: int, *, memory: bool):
    """PE0's micro-ops as (opcode, A, B); None when one is not supported (LOAD and STORE only with
    ``memory``) or reads a register the group has not written before it."""
    ops, written = [], set()
    for k in range(num_inst):
        inst = int(S[f"pe0_act_inst_{k}"])
        op, a, b = (inst >> 4) & 0xF, (inst >> 2) & 3, inst & 3
        reads = {C.ACT_INPE: (), C.ACT_OUTGB: (a,), C.ACT_COPY: (b,), C.ACT_STORE: (a,)}.get(op)
        if op == C.ACT_LOAD:
            reads = ()
        if reads is None:
            reads = (a,) if op in UNARY else (a, b) if op in BINARY else None
        if reads is None or (op in (C.ACT_LOAD, C.ACT_STORE) and not memory) or any(r not in written for r in reads):
            return None
        if op not in (C.ACT_OUTGB, C.ACT_STORE):
            written.add(a)
        ops.append((op, a, b))
    return ops


def tiled(base: int, t, v, nv: int) -> np.ndarray:
    """``tiled_addr`` (model.py) on arrays: base + 16 (t mod 16) + ((t >> 4) nv << 8) + (v << 8), mod 2**32."""
    t = np.asarray(t, np.int64)
    return (base + 16 * (t & 15) + ((((t >> 4) * nv) << 8) & M32) + (np.asarray(v, np.int64) << 8)) & M32


def outgb_addresses(S, p: int, ts, ngrp: int) -> np.ndarray:
    """GB byte addresses of PE ``p``'s OUTGB at timesteps ``ts`` (array), groups < ngrp: (t, g, lane)."""
    b2 = (int(S[f"gb_core_mem_mngr_large_base_large_{int(S['gb_control_mem_idx_2'])}"]) << 4) & M32
    vv = (int(S[f"pe{p}_act_mngr_output_base"]) + np.arange(ngrp)) & 0xFF
    return (tiled(b2, np.asarray(ts)[:, None], vv[None, :], int(S["gb_control_num_vector_2"]))[..., None] + _LANE) & M32


def run_groups(S, p: int, ops: list, ngrp: int, inpe, slots=None, *, bug: str | None = None):
    """PE ``p``'s micro-program on every group: ``inpe(c)`` gives the core output vectors at
    cursor positions ``c`` (array over the groups) as an array (..., g, lane); ``slots``: (the act
    buffer's values at the groups' slots (g, lane), whether LOAD reads zero). Returns (the
    registers each written register holds after its group, {register: (..., g, lane)}; the OUTGB
    values (..., g, lane) in program order; the values STORE leaves in the slots (g, lane) or None)."""
    from ila.models.flexasr.tables import _call
    grp = np.arange(ngrp)
    n_inpe = sum(1 for op, _, _ in ops if op == C.ACT_INPE)
    R, out = {}, []
    slot = None if slots is None else slots[0]
    stored = None
    cur = 0
    for op, a, b in ops:
        if op == C.ACT_INPE:
            R[a] = inpe((grp * n_inpe + cur) & 0xFF)
            cur += 1
        elif op == C.ACT_OUTGB:
            out.append(_call(Fn.FIXED2ADAPTFLOAT, R[a], S[f"pe{p}_act_mngr_adpbias_out"]))
        elif op == C.ACT_LOAD:
            R[a] = np.zeros_like(slot, dtype=np.uint64) if slots[1] else slot.astype(np.uint64)
        elif op == C.ACT_STORE:
            if bug != "store_ignored":
                slot = stored = R[a]
        elif op == C.ACT_COPY:
            R[a] = R[b]
        elif op in BINARY:
            R[a] = _call(BINARY[op], R[a], R[b])
        else:
            R[a] = _call(UNARY[op], R[a])
    return R, out, stored


def act_summary(*, bug: str | None = None):
    """The tensor-level summary of ``PE_ACT_CHILD`` (one timestep's activation loop; see
    :meth:`ila.model.Ila.set_summary`): from its first step (valid, micro-op 0 fetched, pc, group
    and cursor 0), every group's micro-program at once (module docstring), then the state the loop
    leaves: the registers of the last group, the act-buffer slots and GB bytes written, pc, group
    and cursor 0, micro-op 0 fetched, the child invalid and GB control in NEXT. Returns the child
    instruction count (groups x ``num_inst``). Declines (None) off its first step, for a zero
    count, an unsupported micro-op or a read of a register the group has not written, an address
    beyond a memory, GB bytes written twice, a count beyond ``budget``, or datapath functions
    whose bodies are not the model's. ``bug`` (one of :data:`ACT_BUGS`) seeds an error."""
    if bug is not None and bug not in ACT_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {ACT_BUGS}")
    bodies = {f: f.body for f in FUNCS}

    def flexasr_act_loop(S, budget):
        inst0 = int(S["pe0_act_inst_0"])
        if not (S["pe_act_child_valid"] == 1 and S["pe_act_pc"] == 0 and S["pe_act_group"] == 0
                and S["pe_act_cursor"] == 0 and S["pe_act_opcode"] == (inst0 >> 4) & 0xF
                and S["pe_act_ra"] == (inst0 >> 2) & 3 and S["pe_act_rb"] == inst0 & 3):
            return None
        if any(f.body is not b for f, b in bodies.items()):
            return None
        ngrp, ninst = int(S["pe0_act_mngr_num_output"]), int(S["pe0_act_mngr_num_inst"])
        if min(ngrp, ninst) == 0 or ngrp * ninst > budget:
            return None
        ops = program(S, ninst, memory=True)
        if ops is None:
            return None
        t = int(S["gb_control_ts_cntr"])
        zero = t == 0 and S["pe0_rnn_layer_sizing_is_zero_first"] == 1 and S["pe0_act_mngr_is_zero_first"] == 1
        big = S["gb_core_large_buffer"]
        plans = []
        for p in range(C.NUM_PE):
            dst = outgb_addresses(S, p, [t], ngrp)[0]
            slot = (int(S[f"pe{p}_act_mngr_buffer_base"]) + (np.arange(ngrp)[:, None] << 4) + _LANE) & M32
            if dst.max() >= big.shape[0] or slot.max() >= S[f"pe{p}_act_buffer"].shape[0]:
                return None
            plans.append((dst, slot))
        allout = np.sort(np.concatenate([d.reshape(-1) for d, _ in plans]))
        if (allout[1:] == allout[:-1]).any():                   # an output byte written twice
            return None
        writes = []
        for p, (dst, slot) in enumerate(plans):
            core_out, buf, regs = S[f"pe{p}_core_out"], S[f"pe{p}_act_buffer"], S[f"pe{p}_act_regs"]
            R, outs, stored = run_groups(S, p, ops, ngrp, lambda c: core_out[(c[:, None] << 4) + _LANE].astype(np.uint64),
                                         (buf[slot], zero), bug=bug)
            writes += [(dst, v) for v in outs]
            if stored is not None:
                buf[slot] = stored
            for a, v in R.items():
                regs[(a << 4) + _LANE] = v[-1]
        for dst, val in writes:
            big[dst] = val
        S["pe_act_opcode"], S["pe_act_ra"], S["pe_act_rb"] = (inst0 >> 4) & 0xF, (inst0 >> 2) & 3, inst0 & 3
        S["pe_act_child_valid"], S["gb_control_child_state"] = 0, NEXT
        return ngrp * ninst

    return flexasr_act_loop
