"""``--method bmc``: bounded model checking of a mapping by path unrolling (paper §4.4.1).

Both fragments are unrolled along their instruction sequences from the real ILA models (symbolic
execution with concrete control: :func:`verify.fragments.execute_setup`); inputs are equal under
the refinement map by construction (shared data symbols); the miter asserts that some output cell
differs; unsat means the mapping is correct for this shape and all data. Uninterpreted functions
keep their axioms, instantiated on the terms that occur (no quantifiers), unless ``inline_ufs``
(``--numerics exact``) replaces them by their bit-precise expressions.

A sat answer becomes a concrete trace — the input data and the solver's interpretation of the
uninterpreted functions — replayed in both simulators; only a replayed difference is returned as
a :class:`~ila.verdict.Counterexample`.
"""
from __future__ import annotations

import os
import time

from ila.errors import IlaInternalError
from ila.expr import FALSE, Expr, lor
from ila.ops import Op
from ila.sim import Simulator
from ila.smt import SmtEncoder, axiom_instances, check, to_smtlib2
from ila.verdict import Counterexample, Proved, Unknown
from ila.walk import toposort

from .fragments import ProofSetup, execute_setup, overridden_bodies, reset_state


def _concrete(commands, rewriter):
    out = []
    for c in commands:
        row = {}
        for k, v in c.items():
            if isinstance(v, Expr):
                v = rewriter.one(v)
                if not v.is_const:
                    raise IlaInternalError(f"command value {v.short()} is not determined by the data")
                v = v.payload
            row[k] = v
        out.append(row)
    return out


def replay(ps: ProofSetup, data_values: dict, init_mems: dict, uf_table: dict) -> tuple[int, int, int] | None:
    """Run both fragments in the simulators on concrete data; return (k, ir value, acc value) of
    the first differing output, or None when they agree."""
    from ila.expr import bv_const
    from ila.simplify import Rewriter
    val = Rewriter({d: bv_const(x, d.width) for d, x in data_values.items()})
    with overridden_bodies(uf_table):
        outs = []
        for side, mems in ((ps.ir, init_mems.get("ir", {})), (ps.acc, init_mems.get("acc", {}))):
            sim = Simulator(side.ila, state={**reset_state(side.ila), **mems})
            sim.run(_concrete(side.commands, val))
            outs.append(sim.memory(side.memory))
        ir_mem, acc_mem = outs
        for k, (a, b) in enumerate(ps.outputs):
            x, y = int(ir_mem[a]), int(acc_mem[b])
            if x != y:
                return k, x, y
    return None


def query(ps: ProofSetup, *, inline_ufs: bool = False):
    """The miter and axiom instances of a setup (ILA expressions), plus the executed fragments."""
    ex = execute_setup(ps)
    miter = lor(*[a.ne(b) for a, b in zip(ex.ir_out, ex.acc_out)])
    from ila.simplify import simplify
    miter = simplify(miter)
    apps = [n for n in toposort([miter]) if n.op is Op.APPLY]
    axioms = axiom_instances([miter], inline_ufs=inline_ufs)
    for ax in ps.axioms:
        axioms.extend(ax(apps))
    return ex, miter, axioms


def check_bmc(ps: ProofSetup, *, solver: str = "z3", timeout: float | None = None, inline_ufs: bool = False,
              emit_smt: str | None = None, label: str = "mapping") -> Proved | Counterexample | Unknown:
    t0 = time.perf_counter()
    ex, miter, axioms = query(ps, inline_ufs=inline_ufs)
    if miter is FALSE:
        return Proved("bmc", solver, time.perf_counter() - t0,
                      "outputs are syntactically equal after unrolling", scope="")
    enc = SmtEncoder(inline_ufs=inline_ufs)
    fs = enc.encode_all([miter] + axioms)
    if emit_smt:
        os.makedirs(emit_smt, exist_ok=True)
        with open(os.path.join(emit_smt, f"{label}.bmc.smt2"), "w") as fh:
            fh.write(to_smtlib2(enc, fs))
    nodes = toposort([miter] + axioms)
    leaves = [n for n in nodes if n.op is Op.VAR or (n.op is Op.LOAD and n.args[0].op is Op.VAR)]
    apps = [n for n in nodes if n.op is Op.APPLY]
    want = [enc.encode(n) for n in leaves + apps + [a for n in apps for a in n.args]]
    res = check(enc, fs, solver=solver, timeout=timeout, want=want)
    secs = time.perf_counter() - t0
    if res.status == "unsat":
        return Proved("bmc", solver, secs, f"{len(ps.outputs)} output cells equal for all data", scope="")
    if res.status == "unknown":
        return Unknown("bmc", solver, secs, reason=res.reason)

    def v(e):
        if e.is_const:
            return e.payload
        x = res.values.get(enc.encode(e))
        return (False if e.sort.is_bool else 0) if x is None else x
    data = {d: v(d) for d in ps.data}
    mems = {"ir": {}, "acc": {}}
    for side, u in (("ir", ex.ir), ("acc", ex.acc)):
        for name, sym in u.init.items():
            if sym.sort.is_mem and sym.op is Op.VAR:
                table = {v(n.args[1]): v(n) for n in leaves if n.op is Op.LOAD and n.args[0] is sym}
                if table:
                    mems[side][name] = table
    uf_table: dict = {}
    if not inline_ufs:
        for n in apps:
            uf_table.setdefault(n.payload, {})[tuple(v(a) for a in n.args)] = v(n)
    diff = replay(ps, data, mems, uf_table)
    if diff is None:
        raise IlaInternalError(f"bmc of {label}: the solver's counterexample does not replay in the simulators")
    k, x, y = diff
    trace = {"output": ps.describe_output(k), "ir_value": x, "acc_value": y,
             "data": [data[d] for d in ps.data],
             "uf_interpretation": {f.name: {str(a): r for a, r in t.items()} for f, t in uf_table.items()}}
    return Counterexample("bmc", solver, time.perf_counter() - t0,
                          f"{ps.describe_output(k)} differs: IR {x:#x} vs accelerator {y:#x}",
                          trace=trace, replayed=True)
