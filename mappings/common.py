"""Helpers shared by the mapping modules: compiler-IR ILA fragments as data, and common pieces.

An :class:`IrFragment` is the compiler-IR ILA side of a mapping for one shape: where each IR
input tensor lives in the IR tensor memory (base address, shape), the operator commands of
:func:`ila.models.relay.model.relay_ila` (name and arguments, in program order), and where the output
lands. :func:`ir_commands` turns it into the ILA command stream (element stores of the given data
values, which may be symbolic expressions, then the operators); :func:`run_ir` runs it in the
ILA simulator on concrete tensors (VT1-style cross-check of a mapping's numpy reference).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ila.models.relay.model import FUNC_IDS


@dataclass
class IrFragment:
    inputs: dict                 # IR tensor name -> (base address, shape)
    ops: list                    # (operator name, [arguments]) in program order
    output: tuple                # (base address, shape)
    numerics: str = "float32"
    consts: dict = field(default_factory=dict)    # name -> fixed array placed by the fragment (e.g. zero bias)

    def size(self) -> int:
        ends = [b + int(np.prod(s)) for b, s in list(self.inputs.values()) + [self.output]]
        return max(ends)

    def address(self, name: str) -> np.ndarray:
        """IR tensor-memory address of every element of input ``name`` (or 'out')."""
        base, shape = self.output if name == "out" else self.inputs[name]
        return base + np.arange(int(np.prod(shape))).reshape(shape)


class Layout:
    """Bump allocator of IR tensor-memory regions, in the order tensors are added."""

    def __init__(self):
        self.top = 0
        self.regions: dict = {}

    def add(self, name: str, shape) -> tuple:
        shape = tuple(int(s) for s in shape)
        self.regions[name] = (self.top, shape)
        self.top += int(np.prod(shape))
        return self.regions[name]

    def base(self, name: str) -> int:
        return self.regions[name][0]


def prod(dims) -> int:
    """The number of elements of a tensor of shape ``dims`` (1 for a scalar)."""
    out = 1
    for d in dims:
        out *= int(d)
    return out


def ir_commands(frag: IrFragment, data: dict) -> list[dict]:
    """The compiler-IR ILA command stream: ``tensor_store`` of every element of every input (values
    from ``data[name]``, flat, numbers or expressions), then one command per operator."""
    cmds = []
    for name, (base, shape) in frag.inputs.items():
        vals = list(np.asarray(data[name], dtype=object).reshape(-1))
        cmds += [{"func_id": FUNC_IDS["tensor_store"], "addr_in": base + k, "data_in": v} for k, v in enumerate(vals)]
    for op, args in frag.ops:
        cmd = {"func_id": FUNC_IDS[op]}
        cmd.update({f"arg_{k}": int(a) for k, a in enumerate(args)})
        cmds.append(cmd)
    return cmds


_MACHINES: dict = {}


def run_ir(frag: IrFragment, inputs: dict) -> np.ndarray:
    """Run the fragment on the compiler-IR ILA simulator with concrete numpy inputs."""
    from ila.models.relay.model import RelayMachine
    need = frag.size()
    rm = _MACHINES.get(frag.numerics)
    if rm is None or rm.sim.memory("tensor").shape[0] < need:
        rm = RelayMachine(frag.numerics, tensor_entries=max(1 << 16, 1 << (need - 1).bit_length()))
        _MACHINES[frag.numerics] = rm
    for name, (base, shape) in frag.inputs.items():
        val = frag.consts[name] if name in frag.consts else inputs[name]
        rm.put(base, np.asarray(val).reshape(shape))
    for op, args in frag.ops:
        rm.run(op, *args)
    return rm.get(frag.output[0], frag.output[1])


_SIMULATORS: dict = {}


def fresh_simulator(ila):
    """A simulator of ``ila`` in its reset state (:meth:`ila.sim.Simulator.reset`), reusing the
    compiled simulator between runs: building one compiles the model's update functions, which
    costs more than a small run."""
    from ila.sim import Simulator
    sim = _SIMULATORS.get(id(ila))
    if sim is None or sim.ila is not ila:
        sim = _SIMULATORS[id(ila)] = Simulator(ila)
        return sim
    sim.reset()
    return sim
