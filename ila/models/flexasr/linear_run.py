"""Whole-run summary of FlexASR's GB control for a feed-forward layer (simulator only; see
:meth:`ila.model.Ila.set_summary`): every timestep of ``Child_GB_Control`` with its PE core and
activation loops at once, vectorised over the timesteps.

Why: a feed-forward layer (``is_rnn`` 0: the linear layer, and every ``flexasr.linear_pad`` call)
runs its timesteps independently, yet instruction by instruction (or phase by phase with the
per-timestep summaries of :mod:`ila.models.flexasr.gb_control`) each timestep costs a few
milliseconds of Python; a 384-timestep call took about 1 s (ResMLP's token-mixing layers).

Semantics (the instructions of ``gb_control``, composed; every address and counter as the
instructions compute it, 32-bit addresses wrapping): from ``gb_control_prep`` (child state PREP,
the PE core and activation children idle), for every timestep t < ``num_timestep``:

* SEND: PE p's input buffer at ``base_input_1(p)*16 + 16 v + k`` := GB large byte
  ``tiled_addr(large_base(mem_idx_1), t, v, num_vector_1) + k`` for v < ``num_vector_1``;
* PE core (one manager): for every output chunk o and PE p the partial sums
  ``P[256 oo + 16 l + k] = sum_j ProductSum(W[o_eff + oo][j][l][k], x[16 j + k]) mod 2**32`` and
  ``core_out[16 (o + oo) + l] := PECoreAccum2Act(sum_k P, bias byte, registers)`` for live rows
  (as :func:`gb_control.pe_core_summary`), where x is the input buffer after SEND;
* activation: PE0's micro-program (``num_inst`` ops) once per group g < PE0's act ``num_output``
  on every PE's 16-lane registers: INPE (the next core output vector, a cursor from 0 per
  timestep), COPY, EADD, EMUL, SIGM, TANH, RELU, ONEX, OUTGB (``Fixed2Adaptfloat`` with the PE's
  ``adpbias_out`` into GB ``tiled_addr(large_base(mem_idx_2), t, output_base(p)[7:0] + g,
  num_vector_2) + lane``);
* NEXT, and after the last timestep DONE (child invalid, interrupt raised).

Final state: the memories as the last writes left them (input buffers, partial sums and core
outputs of the last timestep, the registers of its last group), every counter back to 0, the
GB child in DONE with ``ts_cntr = num_timestep``, micro-op 0 of PE0 prefetched. Returns the child
instruction count (``2 + T (num_vector_1 + 2 + chunks (num_inputs + 1) + groups num_inst)``).

Declines (None), leaving the loop to the per-phase summaries and the instructions: off the first
step; for an RNN (``is_rnn``), two managers, a zero count (a counter would wrap), counters not
at 0, a micro-op that is not one of the above (LOAD and STORE carry state across timesteps) or
that reads a register the group has not written, an address beyond a memory, an output byte
written twice or read by a later SEND, a count beyond ``budget``, or datapath functions whose
bodies are not the model's (a counterexample replay overrides them). Checked bit-exact against
the instruction loop by ``tests/test_sim_summaries.py`` (random shapes, data and registers, and
the seeded bugs :data:`LINEAR_RUN_BUGS`).
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import constants as C
from ila.models.flexasr import funcs as Fn

LINEAR_RUN_BUGS = ("input_of_first_timestep", "cursor_stuck", "accum_first_chunk")   # seeded, for the differential tests
M32 = 0xFFFFFFFF
PREP, DONE = 0, 6
_UNARY = {C.ACT_SIGM: Fn.PE_ACT_SIGMOID, C.ACT_TANH: Fn.PE_ACT_TANH, C.ACT_RELU: Fn.PE_ACT_RELU,
          C.ACT_ONEX: Fn.PE_ACT_ONEX}
_BINARY = {C.ACT_EADD: Fn.PE_ACT_EADD, C.ACT_EMUL: Fn.PE_ACT_EMUL}
_FUNCS = (Fn.PRODUCT_SUM, Fn.PE_CORE_ACCUM2ACT, Fn.FIXED2ADAPTFLOAT, *_UNARY.values(), *_BINARY.values())
_BODIES = {f: f.body for f in _FUNCS}
BLOCK = 1 << 22                 # ProductSum lookups per block of timesteps (bounds the temporaries)


def _program(S, num_inst: int):
    """PE0's micro-ops as (opcode, A, B), or None when one is unsupported or reads a register the
    group has not written before it."""
    ops, written = [], set()
    for k in range(num_inst):
        inst = int(S[f"pe0_act_inst_{k}"])
        op, a, b = (inst >> 4) & 0xF, (inst >> 2) & 3, inst & 3
        reads = {C.ACT_INPE: (), C.ACT_OUTGB: (a,), C.ACT_COPY: (b,)}.get(op)
        if reads is None:
            reads = (a,) if op in _UNARY else (a, b) if op in _BINARY else None
        if reads is None or any(r not in written for r in reads):
            return None
        if op != C.ACT_OUTGB:
            written.add(a)
        ops.append((op, a, b))
    return ops


def _tiled(base: int, t: np.ndarray, v, nv: int) -> np.ndarray:
    """``tiled_addr`` (model.py) on arrays: base + 16 (t mod 16) + ((t >> 4) nv << 8) + (v << 8), mod 2**32."""
    t = np.asarray(t, np.int64)
    return (base + 16 * (t & 15) + ((((t >> 4) * nv) << 8) & M32) + (np.asarray(v, np.int64) << 8)) & M32


def linear_run_summary(*, bug: str | None = None):
    """The summary function (module docstring); ``bug`` (one of :data:`LINEAR_RUN_BUGS`) seeds a
    deliberate error for the differential tests."""
    if bug is not None and bug not in LINEAR_RUN_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {LINEAR_RUN_BUGS}")
    from ila.models.flexasr.gb_control import _call, _table8x8
    lane16, cell256 = np.arange(16), np.arange(256)

    def flexasr_linear_run(S, budget):
        if not (S["gb_control_child_valid"] == 1 and S["gb_control_child_state"] == PREP
                and S["pe_core_child_valid"] == 0 and S["pe_act_child_valid"] == 0
                and S["gb_control_is_rnn"] == 0 and S["pe0_rnn_layer_sizing_num_manager"] == 1
                and S["pe_act_pc"] == 0 and S["pe_act_group"] == 0 and S["pe_act_cursor"] == 0):
            return None
        if any(f.body is not b for f, b in _BODIES.items()):
            return None
        T, nv1, nv2 = int(S["gb_control_num_timestep"]), int(S["gb_control_num_vector_1"]), int(S["gb_control_num_vector_2"])
        nin, nout = int(S["pe0_mem_mngr_1_num_inputs"]), int(S["pe0_rnn_layer_sizing_num_output"])
        ngrp, ninst = int(S["pe0_act_mngr_num_output"]), int(S["pe0_act_mngr_num_inst"])
        if min(T, nv1, nin, nout, ngrp, ninst) == 0:
            return None
        ops = _program(S, ninst)
        if ops is None:
            return None
        chunks = list(range(0, nout, C.PE_CORE_OC))
        steps = 2 + T * (nv1 + 2 + len(chunks) * (nin + 1) + ngrp * ninst)
        if steps > budget:
            return None
        big = S["gb_core_large_buffer"]
        ts = np.arange(T, dtype=np.int64)
        # ---------------------------------------------------------------- SEND: x[t, v, k]
        b1 = (int(S[f"gb_core_mem_mngr_large_base_large_{int(S['gb_control_mem_idx_1'])}"]) << 4) & M32
        src = (_tiled(b1, ts[:, None], np.arange(nv1)[None, :], nv1)[..., None] + lane16) & M32      # (t, v, k)
        if src.max() >= big.shape[0]:
            return None
        xs = big[src]
        # ---------------------------------------------------------------- plan every PE (decline before any write)
        rows = np.arange(nout)             # the live output vectors (a clamped chunk row re-reads row o)
        b2 = (int(S[f"gb_core_mem_mngr_large_base_large_{int(S['gb_control_mem_idx_2'])}"]) << 4) & M32
        n_inpe = sum(1 for op, _, _ in ops if op == C.ACT_INPE)
        grp = np.arange(ngrp)
        plans, dsts = [], []
        for p in range(C.NUM_PE):
            mm = f"pe{p}_mem_mngr_1"
            n_p, wb = int(S[f"{mm}_num_inputs"]), int(S[f"{mm}_base_weight"]) << 4
            ib, bbase = int(S[f"{mm}_base_input"]) << 4, int(S[f"{mm}_base_bias"]) << 4
            waddr = ((wb + ((rows[:, None] * n_p + np.arange(nin)[None, :]) << 8)) & M32)[..., None] + cell256
            baddr = ((bbase + (rows << 4)) & M32)[:, None] + lane16
            dst_in = ((ib + 16 * np.arange(nv1)) & M32)[:, None] + lane16
            rd_in = ((ib + 16 * np.arange(nin)) & M32)[:, None] + lane16
            if max(waddr.max(), baddr.max()) >= C.PE_WEIGHT_SIZE or max(dst_in.max(), rd_in.max()) >= C.PE_INPUT_SIZE:
                return None
            ob = int(S[f"pe{p}_act_mngr_output_base"]) & 0xFF
            vv = (ob + grp) & 0xFF
            dst = (_tiled(b2, ts[:, None], vv[None, :], nv2)[..., None] + lane16) & M32                 # (t, g, l)
            if dst.max() >= big.shape[0]:
                return None
            dsts.append(dst)
            plans.append((n_p, waddr, baddr, dst_in, rd_in))
        allout = np.concatenate([d.reshape(-1) for d in dsts])
        if np.unique(allout).size != allout.size or np.isin(allout, src).any():
            return None
        ps = _table8x8(Fn.PRODUCT_SUM)
        writes = []
        for p, (n_p, waddr, baddr, dst_in, rd_in) in enumerate(plans):
            wbuf, ibuf = S[f"pe{p}_weight_buffer"], S[f"pe{p}_input_buffer"]
            # the core's input at timestep t: what SEND wrote there, else the buffer as it was
            sent = np.full(ibuf.shape[0], -1, np.int64)
            sent[dst_in.reshape(-1)] = np.arange(nv1 * 16)
            where = sent[rd_in]                                                  # (j, k): flat (v, k) or -1
            x_of = xs.reshape(T, -1)[:, np.maximum(where, 0)] if bug != "input_of_first_timestep" else \
                np.broadcast_to(xs.reshape(T, -1)[:1, np.maximum(where, 0)], (T, *where.shape))
            X = np.where(where >= 0, x_of, ibuf[rd_in]).astype(np.intp)          # (t, j, k)
            W = (wbuf[waddr].reshape(nout, nin, 16, 16).astype(np.intp) << 8)       # (row, j, l, k)
            step = max(1, BLOCK // max(1, nout * nin * 256))
            part = np.empty((T, nout, 16, 16), np.uint64)
            for t0 in range(0, T, step):
                idx = W[None] | X[t0:t0 + step, None, :, None, :]
                part[t0:t0 + step] = ps[idx].sum(axis=2) & np.uint64(M32)
            acc = part.sum(axis=-1) & np.uint64(M32)                                 # (t, row, l)
            rs = f"pe{p}_rnn_layer_sizing"
            r = _call(Fn.PE_CORE_ACCUM2ACT, acc, wbuf[baddr], S["pe%d_mem_mngr_1_adpbias_weight" % p],
                      S["pe%d_mem_mngr_1_adpbias_input" % p], S["pe%d_mem_mngr_1_adpbias_bias" % p], S[f"{rs}_is_bias"])
            out0 = S[f"pe{p}_core_out"]
            regs = S[f"pe{p}_act_regs"]
            R = {}
            cur = 0
            for op, a, b in ops:
                if op == C.ACT_INPE:
                    c = (grp * n_inpe + cur) & 0xFF if bug != "cursor_stuck" else np.full(ngrp, cur)
                    cur += 1
                    live = c < nout
                    v = r[:, np.minimum(c, nout - 1), :]                              # (t, g, l)
                    R[a] = np.where(live[None, :, None], v, out0[(c[:, None] << 4) + lane16][None].astype(np.uint64))
                elif op == C.ACT_OUTGB:
                    writes.append((dsts[p], _call(Fn.FIXED2ADAPTFLOAT, R[a], S[f"pe{p}_act_mngr_adpbias_out"])))
                elif op == C.ACT_COPY:
                    R[a] = R[b]
                elif op in _BINARY:
                    R[a] = _call(_BINARY[op], R[a], R[b])
                else:
                    R[a] = _call(_UNARY[op], R[a])
            # ------------------------------------------------------------ the state the last timestep leaves
            ibuf[dst_in] = xs[-1] if bug != "input_of_first_timestep" else xs[0]
            last = chunks[-1] if bug != "accum_first_chunk" else 0
            o_eff = [last + oo if last + oo < nout else last for oo in range(C.PE_CORE_OC)]
            S[f"pe{p}_accum"][:256 * C.PE_CORE_OC] = part[-1, o_eff].reshape(-1)
            out0[(np.arange(nout)[:, None] << 4) + lane16] = r[-1]
            for a, v in R.items():
                regs[(a << 4) + lane16] = v[-1, -1]
        for dst, val in writes:
            big[dst] = val
        inst0 = int(S["pe0_act_inst_0"])
        S["pe_act_opcode"], S["pe_act_ra"], S["pe_act_rb"] = (inst0 >> 4) & 0xF, (inst0 >> 2) & 3, inst0 & 3
        S["gb_control_ts_cntr"], S["gb_control_v_cntr"], S["gb_control_child_state"] = T & 0xFFFF, 0, DONE
        S["gb_control_child_valid"], S["top_interrupt_request"] = 0, 1
        for k in ("pe_core_o_cntr", "pe_core_j_cntr", "pe_core_mngr", "pe_core_state", "pe_core_child_valid",
                  "pe_act_child_valid"):
            S[k] = 0
        return steps

    return flexasr_linear_run
