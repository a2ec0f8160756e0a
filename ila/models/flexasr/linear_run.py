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

from ila.models.flexasr import act_run as A
from ila.models.flexasr import constants as C
from ila.models.flexasr import funcs as Fn

LINEAR_RUN_BUGS = ("input_of_first_timestep", "cursor_stuck", "accum_first_chunk")   # seeded, for the differential tests
M32 = 0xFFFFFFFF
PREP, DONE = 0, 6
_BODIES = {f: f.body for f in (Fn.PRODUCT_SUM, Fn.PE_CORE_ACCUM2ACT, *A.FUNCS)}
BLOCK = 1 << 22                 # ProductSum lookups per block of timesteps (bounds the temporaries)


def linear_run_summary(*, bug: str | None = None):
    """The summary function (module docstring); ``bug`` (one of :data:`LINEAR_RUN_BUGS`) seeds a
    deliberate error for the differential tests."""
    if bug is not None and bug not in LINEAR_RUN_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {LINEAR_RUN_BUGS}")
    from ila.models.flexasr.tables import _call, _table8x8, product_factors
    lane16, cell256 = np.arange(16), np.arange(256)

    def flexasr_linear_run(S, budget):
        if not (S["gb_control_child_valid"] == 1 and S["gb_control_child_state"] == PREP
                and S["pe_core_child_valid"] == 0 and S["pe_act_child_valid"] == 0
                and S["gb_control_is_rnn"] == 0 and S["pe0_rnn_layer_sizing_num_manager"] == 1
                and S["pe_act_pc"] == 0 and S["pe_act_group"] == 0 and S["pe_act_cursor"] == 0):
            return None
        if any(f.body is not b for f, b in _BODIES.items()):
            return None
        T, nv1 = int(S["gb_control_num_timestep"]), int(S["gb_control_num_vector_1"])
        nin, nout = int(S["pe0_mem_mngr_1_num_inputs"]), int(S["pe0_rnn_layer_sizing_num_output"])
        ngrp, ninst = int(S["pe0_act_mngr_num_output"]), int(S["pe0_act_mngr_num_inst"])
        if min(T, nv1, nin, nout, ngrp, ninst) == 0:
            return None
        ops = A.program(S, ninst, memory=False)
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
        src = (A.tiled(b1, ts[:, None], np.arange(nv1)[None, :], nv1)[..., None] + lane16) & M32      # (t, v, k)
        if src.max() >= big.shape[0]:
            return None
        xs = big[src]
        # ---------------------------------------------------------------- plan every PE (decline before any write)
        rows = np.arange(nout)             # the live output vectors (a clamped chunk row re-reads row o)
        n_inpe = sum(1 for op, _, _ in ops if op == C.ACT_INPE)
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
            dst = A.outgb_addresses(S, p, ts, ngrp)                                       # (t, g, l)
            if dst.max() >= big.shape[0]:
                return None
            dsts.append(dst)
            plans.append((n_p, waddr, baddr, dst_in, rd_in))
        allout = np.sort(np.concatenate([d.reshape(-1) for d in dsts]))
        if (allout[1:] == allout[:-1]).any() or np.isin(allout, src).any():    # an output byte written twice, or re-sent
            return None
        ps, D = _table8x8(Fn.PRODUCT_SUM), product_factors(Fn.PRODUCT_SUM)
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
            W = wbuf[waddr].reshape(nout, nin, 16, 16).astype(np.intp)              # (row, j, l, k)
            if D is not None:             # ProductSum factors: the sums are integer matrix products
                dW, dX = D[W], D[X]
                acc = dX.reshape(T, nin * 16).astype(np.float64) @ \
                    dW.transpose(0, 2, 1, 3).reshape(nout * 16, nin * 16).T.astype(np.float64)
                acc = (acc.astype(np.int64).reshape(T, nout, 16) & M32).astype(np.uint64)  # (t, row, l)
                part_last = (np.einsum("rjlk,jk->rlk", dW, dX[-1]) & M32).astype(np.uint64)
            else:
                step = max(1, BLOCK // max(1, nout * nin * 256))
                part = np.empty((T, nout, 16, 16), np.uint64)
                for t0 in range(0, T, step):
                    idx = (W[None] << 8) | X[t0:t0 + step, None, :, None, :]
                    part[t0:t0 + step] = ps[idx].sum(axis=2) & np.uint64(M32)
                acc = part.sum(axis=-1) & np.uint64(M32)                             # (t, row, l)
                part_last = part[-1]
            rs = f"pe{p}_rnn_layer_sizing"
            r = _call(Fn.PE_CORE_ACCUM2ACT, acc, wbuf[baddr], S["pe%d_mem_mngr_1_adpbias_weight" % p],
                      S["pe%d_mem_mngr_1_adpbias_input" % p], S["pe%d_mem_mngr_1_adpbias_bias" % p], S[f"{rs}_is_bias"])
            out0 = S[f"pe{p}_core_out"]
            regs = S[f"pe{p}_act_regs"]

            def inpe(c, r=r, out0=out0):
                """The core output vectors at cursor positions c: this timestep's rows, else the memory's."""
                c = c if bug != "cursor_stuck" else c % max(1, n_inpe)
                v = r[:, np.minimum(c, nout - 1), :]                                       # (t, g, l)
                return np.where((c < nout)[None, :, None], v, out0[(c[:, None] << 4) + lane16][None].astype(np.uint64))
            R, outs, _ = A.run_groups(S, p, ops, ngrp, inpe)
            writes += [(dsts[p], v) for v in outs]
            # ------------------------------------------------------------ the state the last timestep leaves
            ibuf[dst_in] = xs[-1] if bug != "input_of_first_timestep" else xs[0]
            last = chunks[-1] if bug != "accum_first_chunk" else 0
            o_eff = [last + oo if last + oo < nout else last for oo in range(C.PE_CORE_OC)]
            S[f"pe{p}_accum"][:256 * C.PE_CORE_OC] = part_last[o_eff].reshape(-1)
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
