"""Store/load cancellation (paper Figure 7 (e)-(f)): chains of calls that keep their data in the
accelerator, fused only on a certificate.

A *chain* is a run of calls c1 -> c2 -> ... of one mapping M where each call's only operand is
the previous call, the previous call has no other user, and the shapes line up (each call pools
the previous one's result: R halves, C stays). The fused program (one store, the calls, one load)
is not the program of the single calls, so it is a mapping of its own: the registered *chain
mapping* whose ``fuses`` is M (``mappings.flexasr.pool_chain``: flexasr.maxpool_chain,
flexasr.meanpool_chain), with its own proofs, validations and seeded bugs. A fused chain is one
accelerator call (:class:`compile.call.Call`) of the chain mapping whose subject is the composed
IR subterm of the chain's calls (R and C of the first call, L calls); the compiler fuses it only
when the verified-only gate (:mod:`compile.gate`) allows that call; otherwise the calls run one by
one, each on its own certificate, and the refusal is reported.
"""
from __future__ import annotations

from functools import lru_cache

from compile.ir.graph import Node


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
        if p.kind == "call" and chainable(p.call.mapping.name, s.call.mapping.name) and users[p.index] == [s.index] \
                and p.call.shape.get("C") == s.call.shape.get("C") and p.call.shape.get("R") == 2 * s.call.shape.get("R", -1):
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
    first = steps[0].call.shape
    return {"R": first["R"], "C": first["C"], "L": len(steps)}


def chain_call(steps):
    """The chain mapping's call of a chain (its subject: the calls' subterms composed on the first
    call's operand)."""
    from compile.call import Call
    from mappings.registry import get
    x = steps[0].call.variables[0]
    term = x
    for s in steps:
        v = s.call.term
        term = Node(v.shape, v.dtype, v.source, op=v.op, args=(term,), attrs=dict(v.attrs))
    return Call(get(fusers()[steps[0].call.mapping.name]), term, [x], chain_shape(steps))


def certified_chains(program, *, require: str = "any", certify: str = "none", budget: float = 60.0,
                     path=None) -> tuple[list, list]:
    """The chains the gate allows to fuse, as ``[(step indices, CallDecision)]``, and the gate's
    refusals (CallDecisions) for the others (those run call by call)."""
    from compile import gate
    fused, refused = [], []
    for c in chains(program):
        steps = [program.steps[i] for i in c]
        d = gate.decide_call(chain_call(steps), require=require, certify=certify, budget=budget, path=path)
        if d.allowed:
            fused.append((c, d))
        else:
            refused.append(d)
    return fused, refused


__all__ = ["fusers", "chainable", "chains", "chain_shape", "chain_call", "certified_chains"]
