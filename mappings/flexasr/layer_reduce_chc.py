"""CHC artefacts of the LayerReduce family (flexasr.maxpool, flexasr.meanpool): tracked cells, the
refinement map on them, relational invariants — supplied, or inferred (``infer=True``).

Tracked output cell (τ, c) with c = 16·v + i, for symbolic τ < R/2, v < num_v, i < 16; the
cells it depends on are the inputs (2τ, c) and (2τ+1, c). Their values x0, x1 (inputs) and xo
(the original value at the output's GB address, which in place is input (τ, c)) are parameters.
On the IR side the output cell starts with an arbitrary value ``io``.

IR loop (``nn.max_pool2d.loop``, counters cnt_0..cnt_4 = plane, oy, ox, wy, wx over
1 × R/2 × C × 2 × 1): a cell is *processed* when the loop has moved past its (oy, ox) or ended.

FlexASR loop (LayerReduce child, FSM PREP → TIMESTEP_OP → (VECTOR_OP → VECTOR_REDUCE)* → DONE):
with k = ts/2 − 1 the current timestep pair and n the vectors of pair k already reduced
(v − 1 while a reduction is pending, else v), a cell is processed when τ < k or τ = k ∧ v < n, or
when the child has finished. The invariant relates the counters to the tiled base addresses of
the declared refinement map (``gb_address``; the model's own address logic is what consecution
checks against it), keeps the unprocessed input cells at x0, x1 and the output
cell at xo, and says a processed output cell holds GBAdpfloat_max(x0, x1).

The sizes R and num_v are constants for a fixed shape and 16/8-bit symbols with ``symbolic``.

The reduction is max (``op='max'``: IR nn.max_pool2d, LayerReduce mode 0, ``GBAdpfloat_max``) or
mean (``op='mean'``: IR nn.avg_pool2d, whose window result is ``div(add(x0, x1), from_int(2))``,
mode 1, ``GBAdpfloat_mean``).

Inference (``infer=True``): the mapping states only the family's *relational* conjuncts (which
cells are processed at a given loop position, and what a processed cell holds: the ``*_cells``
functions below); every scalar conjunct (configuration, control states, counter bounds, address
registers) is left to :mod:`verify.houdini` over the generic templates of :mod:`verify.templates`,
and the relational conjuncts themselves are candidates too (dropped if not inductive).
"""
from __future__ import annotations

import numpy as np

from ila import BvSort, bv_const, implies, ite, land, lor, zext
from ila.models.relay.model import FUNC_IDS
from ila.unroll import symbol
from mappings.base import ChcSpec, LoopSpec, Side

GB_LARGE = 1 << 20
LR = dict(PREP=0, TS=2, VEC=3, RED=4, DONE=5)


def _p(name, w):
    return symbol(f"p.{name}", BvSort(w))


def chc_spec(shape: dict | None, *, numerics: str = "uf", op: str = "max", infer: bool = False):
    """The CHC artefacts at ``shape`` (None: symbolic sizes). The accelerator loop's side is the
    exact stream the code generator emits (:func:`mappings.flexasr.maxpool.emitted_stream`, data
    as symbols; for symbolic sizes the configuration and start the generator emits for size
    terms), with the declared input placement and read-back for ``verify.chc``'s stream lemmas;
    tracked cells sit at the declared refinement map's addresses (:func:`gb_address`), never at
    the model's own ones."""
    from ila.models.flexasr import driver, isa, shared_model
    from ila.models.flexasr.funcs import GB_ADPFLOAT_MAX, GB_ADPFLOAT_MEAN
    from ila.models.relay.model import relay_ila
    from mappings.base import MappingError, symbolic_data
    from .layer_reduce import POOL_OPS, emitted_stream, gb_address, ir_commands, ir_mean_numerics, ir_numerics, \
        mean_link, mmio_port as _port, tiled
    if op == "mean" and numerics == "exact":
        raise MappingError("flexasr.meanpool: --numerics exact is not available: the IR averages in float32, "
                           "which is not bit-equal to the unit's AdaptivFloat mean (use uf; sim/fuzz measure it)")

    symbolic = shape is None
    if symbolic:
        R16, V8 = _p("R", 16), _p("V", 8)
    else:
        R16, V8 = bv_const(shape["R"], 16), bv_const(shape["C"] // 16, 8)
    tau, vv, ii = _p("tau", 16), _p("v", 8), _p("i", 32)
    x0, x1, xo, io = (_p(n, 8) for n in ("x0", "x1", "xo", "io"))
    R32, V32, t32 = zext(R16, 32), zext(V8, 32), zext(tau, 32)
    C32 = V32 << 4
    c32 = (zext(vv, 32) << 4) + ii

    pre = land(
        t32.ult(R32.lshr(1)), vv.ult(V8), ii.ult(16),
        implies(tau.eq(0), xo.eq(x0)),                       # in place: output (0, c) is input (0, c)
        R16[0].eq(0), R16.uge(2), V8.uge(1),                # side conditions
        ((R32 + 15).lshr(4) * V32).ule(GB_LARGE >> 8),       # tiled matrix fits the 1 MiB buffer
    )

    # ------------------------------------------------------------------ IR side
    num = ir_numerics() if op == "max" else ir_mean_numerics()
    ir = relay_ila(num, tensor_entries=1 << 22)
    ir_cmd = {"func_id": FUNC_IDS[POOL_OPS[op]], "arg_0": 0, "arg_1": R32 * C32, "arg_2": 1, "arg_3": R32,
              "arg_4": C32, "arg_5": (2 << 16) | 1, "arg_6": (2 << 16) | 1}
    ir_in0 = ((t32 << 1) * C32) + c32
    ir_in1 = (((t32 << 1) + 1) * C32) + c32
    ir_out = R32 * C32 + t32 * C32 + c32
    if op == "max":
        ir_res = num.max(x0, x1)
    else:
        ir_res = num.div(num.add(x0, x1), num.from_int(bv_const(2, 32)))

    def ir_cells(s):       # relational conjuncts of the IR pooling loop (processed cells, partial window)
        st = {v.name: v for v in s.states}
        busy = st[f"{POOL_OPS[op]}.busy"]
        p, oy, ox, wy, wx = (st[f"cnt_{k}"] for k in range(5))
        c_in0, c_in1, c_out = s.cells
        processed = lor(~busy, lor(oy.ugt(t32), oy.eq(t32) & ox.ugt(c32)))
        mid = busy & oy.eq(t32) & ox.eq(c32) & wy.eq(1)
        return [c_in0.eq(x0), c_in1.eq(x1), implies(processed, c_out.eq(ir_res)), implies(~processed, c_out.eq(io)),
                implies(mid, st["acc"].eq(x0))]

    def ir_inv(s):
        st = {v.name: v for v in s.states}
        busy = st[f"{POOL_OPS[op]}.busy"]
        p, oy, ox, wy, wx = (st[f"cnt_{k}"] for k in range(5))
        cfg_ok = land(*[st[f"cfg_{k}"].eq(v) for k, v in enumerate(
            [bv_const(0, 32), R32 * C32, bv_const(1, 32), R32, C32, bv_const((2 << 16) | 1, 32), bv_const((2 << 16) | 1, 32)])])
        return land(
            cfg_ok,
            implies(busy, land(p.eq(0), wx.eq(0), wy.ule(1), oy.ult(R32.lshr(1)), ox.ult(C32))),
            implies(~busy, land(p.eq(0), oy.eq(0), ox.eq(0), wy.eq(0), wx.eq(0))),
            *ir_cells(s))

    def ir_post(s):
        return s.cells[2].eq(ir_res)

    # ------------------------------------------------------------------ FlexASR side
    if symbolic:
        # the generator itself run on size terms: its configuration words are terms over R16, V8
        _, cmds = isa.assemble(driver.pool_program(R16, V8, op, transfers=False), {})
        stream, ir_stream, placed, read_map = None, None, None, None
    else:
        R0, C0 = shape["R"], shape["C"]
        d = symbolic_data(R0 * C0, 8)
        stream = emitted_stream(R0, C0, np.array(d, dtype=object).reshape(R0, C0), op)
        cmds = stream
        off = tiled(R0, C0)
        ir_stream = ir_commands(R0, C0, d, op)
        placed = {"ir": [(d[t * C0 + c], t * C0 + c) for t in range(R0) for c in range(C0)],
                  "acc": [(d[t * C0 + c], int(off[t, c])) for t in range(R0) for c in range(C0)]}
        read_map = {"readback": lambda reads: driver.readback(reads, R0 // 2, C0 // 16),
                    "cells": [(t * C0 + c, int(off[t, c])) for t in range(R0 // 2) for c in range(C0)]}

    def declared(t, v):       # the declared map's byte offset of vector v of timestep t (32-bit terms)
        def w32(x):
            return x if isinstance(x, int) or x.sort.width == 32 else zext(x, 32)
        return gb_address(w32(t), w32(v), 0, V32)
    fx_in0 = declared(tau << 1, vv) + ii
    fx_in1 = declared((tau << 1) + 1, vv) + ii
    fx_out = declared(tau, vv) + ii
    fred = GB_ADPFLOAT_MAX if op == "max" else GB_ADPFLOAT_MEAN

    def fx_cells(s):
        st = {v.name: v for v in s.states}
        c_in0, c_in1, c_out = s.cells
        _, processed = lr_conjuncts(st.__getitem__, t32, zext(vv, 32), R16, V8, declared, op)
        return [implies(processed, c_out.eq(fred(x0, x1))),
                implies(~processed, land(c_in0.eq(x0), c_in1.eq(x1), c_out.eq(xo)))]

    def fx_inv(s):
        st = {v.name: v for v in s.states}
        scalar, _ = lr_conjuncts(st.__getitem__, t32, zext(vv, 32), R16, V8, declared, op)
        return land(st["gb_core_mem_mngr_large_base_large_0"].eq(0), *scalar, *fx_cells(s))

    def fx_post(s):
        return s.cells[2].eq(fred(x0, x1))

    def final(systems):
        return systems[0].cells[2].eq(systems[1].cells[2])

    def link(apps):
        if op == "mean":
            return mean_link(num)(apps)
        return [n.eq(GB_ADPFLOAT_MAX(*n.args)) for n in apps if n.payload is num.max]

    scope = "symbolic" if symbolic else f"{shape['R']}x{shape['C']}"
    ir_placed = None if symbolic else placed["ir"]
    acc_placed = None if symbolic else placed["acc"]
    return ChcSpec(
        pre=pre,
        loops=[LoopSpec(Side(ir, [ir_cmd] if symbolic else ir_stream, "tensor"), [ir_in0, ir_in1, ir_out],
                        [x0, x1, io], None if infer else ir_inv, ir_post, "ir", candidates=ir_cells,
                        placed=ir_placed),
               LoopSpec(Side(shared_model(), cmds, "gb_core_large_buffer", port=_port()), [fx_in0, fx_in1, fx_out],
                        [x0, x1, xo], None if infer else fx_inv, fx_post, "flexasr", candidates=fx_cells,
                        placed=acc_placed, read_map=read_map)],
        final=final, axioms=link if numerics != "exact" else (lambda apps: []), scope=scope,
        size_vars=[R16, V8] if symbolic else [], small_sizes=[(8, 2), (32, 2), (64, 4)],
        shape_of=lambda vals: {"R": vals["p.R"], "C": 16 * vals["p.V"]},
        covers=("configuration-fields", "model-loops") if symbolic else
        ("codegen-bytes", "order", "model-loops", "read-back"))


def lr_conjuncts(state, tau, v, R16, V8, declared, op: str = "max") -> tuple[list, object]:
    """The LayerReduce loop's invariant about its FSM, counters and address registers (the
    configuration: mode ``op``, memory index 0, ``num_vector`` V8, ``num_timestep`` R16), and
    whether the tracked output of timestep ``tau``, vector ``v`` (32-bit terms) is processed: pair
    k = ts/2 - 1 is current with n of its vectors reduced (v_cntr - 1 while a reduction is pending,
    else v_cntr), or the child is done (module docstring). ``state(name)``: the model state as a
    loop variable; ``declared(t, v)``: the declared map's byte offset of vector v of timestep t.
    Shared by the single pool's CHC artefacts and the chains' phase proof
    (:mod:`mappings.flexasr.pool_chain_chc`). Returns (conjuncts, processed)."""
    P = "gb_layer_reduce"
    valid, fsm = state(f"{P}_child_valid"), state(f"{P}_child_state")
    ts, vc = state(f"{P}_ts_cntr"), state(f"{P}_v_cntr")
    b0, b1, bo = state(f"{P}_base0"), state(f"{P}_base1"), state(f"{P}_base_out")
    a0, a1, ao = state(f"{P}_addr0"), state(f"{P}_addr1"), state(f"{P}_addr_out")
    S = {k: fsm.eq(code) for k, code in LR.items()}
    started = S["TS"] & ts.ne(0) | S["VEC"] | S["RED"] | S["DONE"]
    k = zext((ts - 2).lshr(1), 32)
    n = zext(ite(S["RED"], vc - 1, vc), 32)
    processed = lor(valid.eq(0), started & lor(tau.ult(k), tau.eq(k) & v.ult(n)))
    off = (zext(vc - 1, 32)) << 8
    conj = [land(state(f"{P}_mode").eq(0 if op == "max" else 1), state(f"{P}_mem_idx").eq(0),
                 state(f"{P}_num_vector").eq(V8), state(f"{P}_num_timestep").eq(R16)),
            implies(valid.eq(1), lor(*S.values())),
            implies(valid.eq(0), S["DONE"]),
            implies(started, land(ts[0].eq(0), ts.uge(2), ts.ule(R16), vc.ule(V8),
                                  b0.eq(declared(ts - 2, 0)),
                                  b1.eq(declared(ts - 1, 0)),
                                  bo.eq(declared((ts - 2).lshr(1), 0)))),
            implies(S["TS"] & ts.ne(0), vc.eq(V8) & ts.ult(R16)),
            implies(S["VEC"], vc.ult(V8)),
            implies(S["RED"], land(vc.uge(1), a0.eq(b0 + off), a1.eq(b1 + off), ao.eq(bo + off))),
            implies(S["DONE"], ts.eq(R16) & vc.eq(V8))]
    return conj, processed


def mean_chc_spec(shape: dict | None, numerics: str = "uf", infer: bool = True) -> ChcSpec:
    """flexasr.meanpool's CHC artefacts: the invariant is always inferred (the mapping states none)."""
    return chc_spec(shape, numerics=numerics, op="mean", infer=True)
