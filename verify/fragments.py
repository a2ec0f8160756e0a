"""The two program fragments of a mapping, ready for proof (VT2 of the paper, §2.3.1).

A :class:`ProofSetup` pairs the compiler-IR ILA with its command stream and the accelerator ILA
with its MMIO command stream, for one shape. Input data are shared symbolic variables: the IR
fragment stores symbol ``d[k]`` at IR address ``a_ir(k)`` and the accelerator fragment stores the
same symbol at ``a_acc(k)`` — the refinement map on inputs. Outputs are pairs of (IR address,
accelerator address) to compare — the refinement map on outputs. ``axioms`` relate the
uninterpreted functions of the two sides (the paper's abstract data types).

Both sides are executed symbolically from the real ILA models (:func:`ila.unroll.execute`:
concrete control, symbolic data); nothing here re-states their semantics.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ila import Ila
from ila.expr import Expr, FuncRef, bv_const
from ila.unroll import Unrolled, execute
from mappings.base import ProofSetup, Side, symbolic_data  # noqa: F401  (re-exported)


@dataclass
class Executed:
    ir: Unrolled
    acc: Unrolled
    ir_out: list[Expr]
    acc_out: list[Expr]


def reset_state(ila: Ila) -> dict:
    """The reset values of the scalar states (:meth:`ila.model.Ila.reset_values`); memories are
    left out, so they stay symbolic."""
    return ila.reset_values()


class HangError(Exception):
    """The stream waits for an interrupt the accelerator does not raise (the driver would hang):
    ``command`` is the index of the ``wait_irq`` command, ``always`` whether the interrupt state
    is 0 for all data (else it depends on the data)."""

    def __init__(self, command: int, irq: str, value: str, always: bool):
        self.command, self.irq, self.always = command, irq, always
        super().__init__(f"command {command}: waiting for the interrupt, but {irq} is {value}")


# child-ILA steps one command may take in a proof's symbolic execution: a correct 16x64 LayerReduce
# takes 173 in all; a configuration bug that makes a loop run 65536 timesteps would take hours
# symbolically, so it stops here (the checkers report Unknown at that shape)
PROOF_CHILD_STEPS = 10_000


def execute_side(side: Side, *, prefix: str, run_children: bool = True, init: dict | None = None,
                 max_child_steps: int = PROOF_CHILD_STEPS) -> tuple[Unrolled, list]:
    """Symbolically execute one side's command stream from reset (memories symbolic, ``init``
    overriding) in stream order, as the driver runs it: ``{"wait_irq": True}`` commands check the
    port's interrupt state (with the child loops run), and every read of the port contributes its
    data (an array of terms) to the returned list of reads, in emitted order."""
    from ila.errors import SimulationError
    from ila.simplify import Rewriter
    cmds = [c for c in side.commands if not c.get("wait_irq")]
    start = {**reset_state(side.ila), **side.init, **(init or {})}
    u = execute(side.ila, cmds, init=start, prefix=prefix, run_children=run_children, max_child_steps=max_child_steps)
    reads, j = [], -1
    port = side.port
    for n, c in enumerate(side.commands):
        if c.get("wait_irq"):
            if port is not None and port.irq and run_children:
                irq = Rewriter().one(u.states[u.marks[j]][port.irq] if j >= 0 else u.init[port.irq])
                if not (irq.is_const and irq.payload == 1):
                    raise HangError(n, port.irq, irq.short(), irq.is_const)
            continue
        j += 1
        if port is not None and port.is_read(c):
            reads.append(port.read_data(u.states[u.marks[j]]))
    return u, reads


def execute_setup(ps: ProofSetup) -> Executed:
    """Symbolically execute both fragments from reset (memories symbolic); return the output
    cells of each side: on the accelerator side, the emitted read-back (``ps.readback`` of the
    stream's reads) when the setup has one, else the memory cells ``ps.outputs`` names. A setup
    with a declared numerics term (``ps.reference``, :class:`mappings.proof_ext.NumericsTerm`) has
    no IR fragment to execute: output k's IR value is the term's k-th element (``ir`` is None)."""
    from ila.simplify import Rewriter
    term = getattr(ps, "reference", None)
    u_acc, reads = execute_side(ps.acc, prefix="acc.")
    ma = u_acc.final[ps.acc.memory]
    rw_i, rw_a = Rewriter(), Rewriter()
    aw_a = ma.sort.addr_width
    if term is not None:
        vals = term.outputs()
        u_ir = None
        ir_out = [rw_i.one(vals[a]) for a, _ in ps.outputs]
    else:
        u_ir = execute(ps.ir.ila, ps.ir.commands, init={**reset_state(ps.ir.ila), **ps.ir.init}, prefix="ir.")
        mi = u_ir.final[ps.ir.memory]
        aw_i = mi.sort.addr_width
        ir_out = [rw_i.load(mi, bv_const(a, aw_i)) for a, _ in ps.outputs]
    if ps.readback is not None:
        flat = np.asarray(ps.readback(reads), dtype=object).ravel()
        acc_out = [rw_a.one(flat[b]) for _, b in ps.outputs]
    else:
        acc_out = [read_acc_output(ps, lambda a: rw_a.load(ma, bv_const(a, aw_a)), b) for _, b in ps.outputs]
    return Executed(u_ir, u_acc, ir_out, acc_out)


def run_side_concrete(side: Side, commands: list, state: dict, *, summaries: bool = True):
    """Run a side's concrete command stream in the simulator from ``state``; return the simulator
    and the reads of its port (arrays of ints), in emitted order. Raises :class:`HangError` at a
    ``wait_irq`` command whose interrupt state is not 1. ``summaries=False`` runs every child loop
    instruction by instruction (needed under :func:`overridden_bodies`: a loop summary is checked
    equal to its loop for the functions' own bodies only, and may apply them to other arguments or
    read tables built from them)."""
    from ila.sim import Simulator
    sim = Simulator(side.ila, state=state, summaries=summaries)
    reads = []
    port = side.port
    for n, c in enumerate(commands):
        if c.get("wait_irq"):
            if port is not None and port.irq and int(sim.state[port.irq]) != 1:
                raise HangError(n, port.irq, f"{int(sim.state[port.irq])}", True)
            continue
        sim.step(c)
        if side.port is not None and side.port.is_read(c):
            reads.append(np.asarray(side.port.read_data(sim.state), dtype=object))
    return sim, reads


def read_acc_output(ps: ProofSetup, load: Callable[[int], Expr], where) -> Expr:
    """The accelerator side of one output pair: ``load(where)``, or, when the setup has a
    ``read_acc(load, where)`` (:class:`mappings.proof_ext.ProofSetupExt`: outputs spanning
    several accelerator cells, or accelerator values embedded into the IR element sort), its value.
    Used on symbolic memories (proof) and on concrete ones (counterexample replay)."""
    reader = getattr(ps, "read_acc", None)
    return load(where) if reader is None else reader(load, where)


@contextmanager
def overridden_bodies(table: dict[FuncRef, dict[tuple, int]]):
    """Temporarily make each FuncRef's numpy body answer from ``table`` (argument tuple -> value),
    falling back to its own body: used to replay a counterexample found with uninterpreted
    functions under the solver's interpretation of them."""
    import numpy as np
    saved = {f: f.body for f in table}

    def make(f, entries, orig):
        def body(*args):
            arrs = [np.asarray(a) for a in args]
            shape = np.broadcast(*arrs).shape
            flat = [np.broadcast_to(a, shape).ravel() for a in arrs]
            out = []
            for vals in zip(*flat):
                key = tuple(int(v) for v in vals)
                if key in entries:
                    out.append(entries[key])
                elif orig is not None:
                    out.append(int(orig(*[np.asarray(v, dtype=np.uint64) for v in key])))
                else:
                    out.append(0)
            return np.array(out, dtype=np.uint64).reshape(shape)
        return body
    try:
        for f, entries in table.items():
            f.body = make(f, entries, saved[f])
        yield
    finally:
        for f, b in saved.items():
            f.body = b


def commands_with(commands: Sequence[dict], data: dict[int, Expr]) -> list[dict]:
    """Copy ``commands`` replacing placeholder values by data symbols (helper for generators)."""
    return [{k: (data[v.index] if isinstance(v, Placeholder) else v) for k, v in c.items()} for c in commands]


@dataclass(frozen=True)
class Placeholder:
    index: int
