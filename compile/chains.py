"""Store/load cancellation (paper Figure 7 (e)-(f)): chains of calls that keep their data in the
accelerator.

A *chain* is a run of calls c1 -> c2 -> ... on one accelerator where each call's only operand is
the previous call, the previous call has no other user, and the pair of mappings is in
:data:`CHAINABLE`: the first leaves its result in the accelerator memory exactly where, and in the
layout in which, the second reads its input. A chain runs as one program: one store, the calls,
one load (:data:`FUSED`). Today: FlexASR temporal max/mean pools, which pool in place in the tiled
global-buffer layout whose offsets do not depend on the number of timesteps
(:func:`ila.models.flexasr.driver.pool_chain_program`); a chain's result is checked bit-exact
against the host (tests/test_compile_cosim.py).
"""
from __future__ import annotations

import numpy as np

CHAINABLE = {("flexasr.maxpool", "flexasr.maxpool"), ("flexasr.meanpool", "flexasr.meanpool")}
FUSED = {"flexasr.maxpool": "max", "flexasr.meanpool": "mean"}


def chains(program) -> list[tuple]:
    """Maximal chains (step indices, first to last, length >= 2) of :data:`CHAINABLE` calls."""
    users = program.users()
    nxt = {}
    for s in program.steps:
        if s.kind != "call" or len(s.args) != 1:
            continue
        p = program.steps[s.args[0]]
        if p.kind == "call" and (p.mapping, s.mapping) in CHAINABLE and users[p.index] == [s.index] \
                and p.shape.get("C") == s.shape.get("C") and p.shape.get("R") == 2 * s.shape.get("R", -1):
            nxt[p.index] = s.index
    starts = set(nxt) - set(nxt.values())
    out = []
    for a in sorted(starts):
        c = [a]
        while c[-1] in nxt:
            c.append(nxt[c[-1]])
        out.append(tuple(c))
    return out


def run_chain(steps, x) -> np.ndarray:
    """Co-simulate a chain (its first call's operand ``x``) as one fused program; the chain's result."""
    from ila.models.flexasr.driver import run_pool_chain
    first = steps[0]
    return run_pool_chain(np.asarray(x).reshape(first.shape["R"], first.shape["C"]), len(steps),
                          FUSED[first.mapping]).out


def chain_stream(steps, x) -> list[dict]:
    """The MMIO stream of a fused chain for operand ``x``."""
    from ila.models.flexasr import driver, isa
    from ila.numerics import adaptivfloat as af
    first = steps[0]
    codes, _ = af.quantize(np.asarray(x, np.float32).reshape(first.shape["R"], first.shape["C"]))
    prog = driver.pool_chain_program(first.shape["R"], first.shape["C"] // 16, len(steps), FUSED[first.mapping])
    return isa.assemble(prog, {"x": codes})[1]
