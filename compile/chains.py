"""Store/load cancellation (paper Figure 7 (e)-(f)): chains of calls that keep their data in the
accelerator, fused only on a certificate.

A *chain* is a run of calls c1 -> c2 -> ... of one mapping M where each call's only operand is
the previous call, the previous call has no other user, and the shapes line up (each call pools
the previous one's result: R halves, C stays). The fused program (one store, the calls, one load)
is not the program of the single calls, so it is a mapping of its own: the registered *chain
mapping* whose ``fuses`` is M (``mappings.flexasr.pool_chain``: flexasr.maxpool_chain,
flexasr.meanpool_chain), with its own proofs, simulation validations and seeded bugs. The compiler
fuses a chain only when the verified-only gate (:mod:`compile.gate`) allows the chain mapping at
the chain's shape (R and C of the first call, L calls); otherwise the calls run one by one, each
on its own certificate, and the refusal is reported. A fused chain runs and is emitted through the
chain mapping's own runner and code generator, the ones its certificate covers.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def fusers() -> dict[str, str]:
    """Mapping name -> the chain mapping that fuses its consecutive calls (from the registry)."""
    from mappings.registry import all_mappings
    return {m.fuses: m.name for m in all_mappings() if m.fuses}


def chainable(first: str, second: str) -> bool:
    """Whether a call of ``second`` reading a call of ``first`` can keep the data in the accelerator."""
    return first == second and first in fusers()


def chains(program) -> list[tuple]:
    """Maximal candidate chains (step indices, first to last, length >= 2), before the gate."""
    users = program.users()
    nxt = {}
    for s in program.steps:
        if s.kind != "call" or len(s.args) != 1:
            continue
        p = program.steps[s.args[0]]
        if p.kind == "call" and chainable(p.mapping, s.mapping) and users[p.index] == [s.index] \
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


def chain_shape(steps) -> dict:
    """The chain mapping's shape of a chain of calls: R and C of the first, L calls."""
    first = steps[0]
    return {"R": first.shape["R"], "C": first.shape["C"], "L": len(steps)}


def certified_chains(program, *, require: str = "any", certify: str = "none", budget: float = 60.0,
                     path=None) -> tuple[list, list]:
    """The chains the gate allows to fuse, as ``[(step indices, Decision)]``, and the gate's
    refusals (Decisions) for the others (those run call by call)."""
    from compile import gate
    fused, refused = [], []
    for c in chains(program):
        steps = [program.steps[i] for i in c]
        d = gate.decide(fusers()[steps[0].mapping], chain_shape(steps), require=require, certify=certify,
                        budget=budget, path=path)
        if d.allowed:
            fused.append((c, d))
        else:
            refused.append(d)
    return fused, refused


def _inputs(steps, x) -> tuple[object, dict, dict]:
    from mappings.registry import get
    shape = chain_shape(steps)
    return get(fusers()[steps[0].mapping]), shape, {"x": np.asarray(x, np.float32).reshape(shape["R"], shape["C"])}


def run_chain(steps, x) -> np.ndarray:
    """Co-simulate a chain (its first call's operand ``x``) through the chain mapping's runner."""
    m, shape, named = _inputs(steps, x)
    return m.run_accelerator(shape, named)


def chain_stream(steps, x) -> list[dict]:
    """The MMIO stream of a fused chain for operand ``x`` (the chain mapping's code generator)."""
    m, shape, named = _inputs(steps, x)
    return m.codegen(shape, named)
