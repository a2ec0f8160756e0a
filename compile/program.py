"""The extracted program: host operators and accelerator calls, in execution order.

Extraction (:mod:`compile.compiler`) chooses one e-node per e-class; this module turns that choice
into a straight-line program a code generator and a co-simulator can walk:

* ``input`` / ``const`` steps: a graph input (by name) or a constant tensor;
* ``host`` steps: an IR operator run by the host runtime (``node.op`` on the operand steps);
* ``call`` steps: one accelerator call (:class:`compile.call.Call`: the mapping, its frozen shape,
  the matched IR subterm with every attribute, the adapters, the code generator, the machine) on
  the operand steps (the values bound to the mapping pattern's ?variables, in order of first
  appearance), with the ledger ``certificate`` about exactly that call that allowed it and the
  ``chain`` of rewrites that produced the term. ``value`` is the call's subterm (its host
  semantics is the call's reference).

Every step's value has ``node.shape`` / ``node.dtype`` of the IR value it replaces.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compile.ir.graph import Const, Node, Value, Var


@dataclass
class Step:
    index: int
    kind: str                        # input | const | host | call
    value: Value                     # the IR value this step computes (for a call: the matched term)
    args: tuple = ()                 # operand step indices
    call: object = None              # call: the compile.call.Call
    certificate: dict = field(default_factory=dict)   # call: the ledger entry about exactly this call
    chain: tuple = ()                # call: the rewrites that produced the matched term

    @property
    def mapping(self):
        """A call's :class:`mappings.base.Mapping` (None for other steps)."""
        return self.call.mapping if self.call is not None else None

    @property
    def shape(self):
        """A call's :class:`mappings.base.Shape` (None for other steps)."""
        return self.call.shape if self.call is not None else None


@dataclass
class Program:
    """Steps in execution order (operands first) and the output step indices."""
    steps: list[Step]
    outputs: list[int]

    def calls(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "call"]

    def users(self) -> dict[int, list[int]]:
        """Step index -> indices of the steps (and -1 for a program output) that read it."""
        out: dict[int, list[int]] = {s.index: [] for s in self.steps}
        for s in self.steps:
            for a in s.args:
                out[a].append(s.index)
        for o in self.outputs:
            out[o].append(-1)
        return out

    def text(self) -> str:
        """One line per non-leaf step, Relay style: ``%7 = flexasr.linear[16x64x64](%3, %5)``."""
        lines = []
        for s in self.steps:
            if s.kind in ("input", "const"):
                continue
            args = ", ".join(f"%{a}" for a in s.args)
            if s.kind == "host":
                lines.append(f"%{s.index} = {s.value.op}({args})")
            else:
                cert = s.certificate.get("result", "?")
                lines.append(f"%{s.index} = {s.call.mapping.name}[{s.call.shape.text}]({args})  /* {cert} */")
        lines.append("return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)


def build(choice: dict, roots: list) -> Program:
    """``choice``: e-class -> ("term", Value, [operand e-classes]) or ("call", (Call, certificate,
    chain), [operand e-classes]); ``roots``: the output e-classes.
    Walks the choice from the roots (iteratively, each e-class once)."""
    index: dict = {}
    steps: list[Step] = []
    for root in roots:
        stack = [(root, False)]
        while stack:
            c, done = stack.pop()
            if c in index:
                continue
            kind, ref, operands = choice[c]
            if not done:
                stack.append((c, True))
                stack.extend((o, False) for o in reversed(operands) if o not in index)
                continue
            args = tuple(index[o] for o in operands)
            i = len(steps)
            if kind == "call":
                call, cert, chain = ref
                steps.append(Step(i, "call", call.term, args, call, cert, chain))
            elif isinstance(ref, Var):
                steps.append(Step(i, "input", ref))
            elif isinstance(ref, Const):
                steps.append(Step(i, "const", ref))
            else:
                assert isinstance(ref, Node)
                steps.append(Step(i, "host", ref, args))
            index[c] = i
    return Program(steps, [index[r] for r in roots])
