"""One accelerator call: the artefact the compiler emits, co-simulates and certifies.

A :class:`Call` is everything between the IR and the machine for one offload:

* its **subject** (:class:`Subject`): the mapping, the mapping's shape at the match, and the
  matched IR subterm with every attribute (defaults included), every dtype and every shape, its
  operands as variables ``%0, %1, ...`` in the order of the pattern's ``?variables``;
* the **operand adapters**: the mapping's ``bind_operands`` (IR operand arrays -> the code
  generator's named inputs) and the output adapter (the read-back result reshaped to the
  subterm's shape and cast to its dtype);
* the **code generator**: the mapping's ``program`` (named inputs -> :class:`ila.models.port.AccProgram`:
  the MMIO stream, bytes and order, and the driver's read-back);
* the **machine**: the mapping's :class:`ila.models.port.MachinePort`, which writes the stream as a
  program fragment (``--emit``), parses a fragment back, and runs a stream from reset.

Co-simulation executes exactly :meth:`Call.program`'s stream (:meth:`Call.run`); emission writes
that same stream (:meth:`Call.fragment`); the certificates (:mod:`compile.certify`) start from IR
operands and run the adapters, the stream as a replay of its written fragment would, the read-back
and the output adapter, against the IR semantics of the subject (:meth:`Call.reference`, the host
runtime's numpy semantics of the subterm). A certificate binds the subject's digest; the runtime
refuses a call whose certificate is about another subject (:meth:`Call.check_certificate`).

Errors: :class:`compile.errors.CompileError` naming the call (mapping, shape, source) for operands
or results of another shape or dtype than the subject's, and for an adapter that is not pure data
movement where one is required.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from compile.errors import CompileError
from compile.ir.graph import Const, Graph, Node, Value, Var, topological


@dataclass(frozen=True)
class Subject:
    """What a call certificate is about: mapping ``mapping`` at ``shape`` (a
    :class:`mappings.base.Shape`) on the IR subterm ``term`` (canonical text, :func:`term_text`)."""
    mapping: str
    shape: object
    term: str

    @property
    def digest(self) -> str:
        """sha256 (16 hex digits) of mapping, shape and term."""
        h = hashlib.sha256(f"{self.mapping}\n{self.shape.text}\n{self.term}".encode())
        return h.hexdigest()[:16]

    def describe(self) -> str:
        return f"{self.mapping} at {self.shape.text} on {self.term}"


def _attr_text(v) -> str:
    if isinstance(v, (tuple, list)):
        return "(" + " ".join(_attr_text(x) for x in v) + ")"
    return repr(v)


def _inside(root: Value, stop: set) -> list[Value]:
    """The values of the subterm at ``root`` whose operands are the values of uids ``stop`` (not
    entered), operands first (iterative)."""
    out, seen, stack = [], set(), [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            out.append(v)
            continue
        if v.uid in seen:
            continue
        seen.add(v.uid)
        stack.append((v, True))
        if isinstance(v, Node) and v.uid not in stop:
            stack.extend((a, False) for a in reversed(v.args) if a.uid not in seen)
    return out


def term_text(root: Node, variables: list[Value]) -> str:
    """The canonical text of the subterm at ``root`` whose operands are ``variables`` (in order):
    an s-expression ``(op args... (attr value)...):dtype[shape]`` with every attribute of every
    node in name order, operands ``%k:dtype[shape]``; interior constants by value digest."""
    names = {v.uid: f"%{k}:{v.dtype}{list(v.shape)}" for k, v in enumerate(variables)}
    text: dict[int, str] = {}
    for v in _inside(root, set(names)):
        if v.uid in names:
            text[v.uid] = names[v.uid]
            continue
        if isinstance(v, Const):
            d = hashlib.sha256(np.ascontiguousarray(v.value).tobytes()).hexdigest()[:12]
            text[v.uid] = f"(const {d}):{v.dtype}{list(v.shape)}"
            continue
        if not isinstance(v, Node):
            raise CompileError(f"the matched term reads {getattr(v, 'name', v)!r}, which no pattern variable binds")
        args = " ".join(text[a.uid] for a in v.args)
        attrs = " ".join(f"({k} {_attr_text(a)})" for k, a in sorted(v.attrs.items()))
        text[v.uid] = f"({v.op} {args}{' ' + attrs if attrs else ''}):{v.dtype}{list(v.shape)}"
    return text[root.uid]


class Call:
    """One accelerator call (module docstring): ``mapping`` (:class:`mappings.base.Mapping`) at
    ``shape`` (:class:`mappings.base.Shape`) replacing IR subterm ``term`` (a Node) whose operands
    are ``variables`` (the IR values bound to the pattern's ``?variables``, in order)."""

    def __init__(self, mapping, term: Node, variables: list[Value], shape):
        from mappings.base import Shape
        self.mapping = mapping
        self.term = term
        self.variables = list(variables)
        missing = [d for d in mapping.shape_dims if d not in shape]
        if missing:
            raise CompileError(f"{mapping.name}: its adapter's shape {dict(shape)} lacks dimension(s) {missing}")
        self.shape = Shape({d: shape[d] for d in mapping.shape_dims})
        self.subject = Subject(mapping.name, self.shape, term_text(term, self.variables))

    # ---------------------------------------------------------------- naming
    @property
    def name(self) -> str:
        return self.mapping.name

    def where(self) -> str:
        src = f" ({self.term.source})" if self.term.source else ""
        return f"{self.mapping.name} at {self.shape.text}{src}"

    def __repr__(self) -> str:
        return f"Call({self.where()})"

    # ---------------------------------------------------------------- adapters
    def check_operands(self, operands: list) -> list[np.ndarray]:
        """The operands as arrays of the subject's shapes and dtypes; CompileError naming the call
        and the operand otherwise."""
        if len(operands) != len(self.variables):
            raise CompileError(f"call {self.where()}: {len(operands)} operands given, the subject has "
                               f"{len(self.variables)}")
        out = []
        for k, (a, v) in enumerate(zip(operands, self.variables)):
            a = np.asarray(a)
            if tuple(a.shape) != tuple(v.shape):
                raise CompileError(f"call {self.where()}: operand %{k} has shape {tuple(a.shape)}, the certified "
                                   f"subject has {tuple(v.shape)}")
            if a.dtype != np.dtype(v.dtype):
                if a.dtype.kind != np.dtype(v.dtype).kind:
                    raise CompileError(f"call {self.where()}: operand %{k} has dtype {a.dtype}, the certified "
                                       f"subject has {v.dtype}")
                a = a.astype(v.dtype)
            out.append(a)
        return out

    def inputs(self, operands: list) -> dict:
        """The code generator's named inputs from the IR operands (the mapping's ``bind_operands``)."""
        if self.mapping.bind_operands is None:
            raise CompileError(f"call {self.where()}: the mapping declares no operand adapter")
        return self.mapping.bind_operands(self.shape, self.check_operands(operands))

    def violated(self, named: dict):
        """The first of the mapping's data conditions the named inputs violate, or None."""
        return next((c for c in self.mapping.data_conditions if not c.holds(self.shape, named)), None)

    def program(self, operands: list, named: dict | None = None):
        """The :class:`ila.models.port.AccProgram` of this call on ``operands`` (named inputs
        ``named`` when the caller already adapted them)."""
        return self.mapping.program(self.shape, self.inputs(operands) if named is None else named)

    def port(self, prog=None):
        """The machine port that runs ``prog`` (a program's own machine variant, else the mapping's)."""
        return (prog.machine if prog is not None and prog.machine is not None else None) or self.mapping.port

    def result(self, out) -> np.ndarray:
        """The output adapter: the read-back result as the subterm's value (its shape, its dtype);
        CompileError naming the call when the element count differs."""
        a = np.asarray(out)
        want = tuple(self.term.shape)
        if a.size != int(np.prod(want, dtype=np.int64)):
            raise CompileError(f"call {self.where()}: the read-back returned {a.size} elements "
                               f"(shape {tuple(a.shape)}), the subject's result has shape {want}")
        return a.reshape(want).astype(self.term.dtype)

    def execute(self, prog) -> tuple[np.ndarray, list]:
        """Run ``prog``'s stream on the machine from reset and apply its read-back and the output
        adapter: (result, reads)."""
        out, reads = self.port(prog).run_program(prog)
        return self.result(out), reads

    def run(self, operands: list) -> tuple[np.ndarray, list, object]:
        """The call on ``operands``: (result, the data of the stream's reads, the AccProgram)."""
        prog = self.program(operands)
        res, reads = self.execute(prog)
        return res, reads, prog

    # ---------------------------------------------------------------- reference semantics
    def graph(self) -> Graph:
        """The subject as an IR graph over fresh inputs ``v0, v1, ...`` (the operands)."""
        fresh = {v.uid: Var(tuple(v.shape), v.dtype, name=f"v{k}") for k, v in enumerate(self.variables)}
        built: dict[int, Value] = dict(fresh)
        for v in _inside(self.term, set(fresh)):
            if v.uid in built:
                continue
            if isinstance(v, Node):
                built[v.uid] = Node(v.shape, v.dtype, v.source, op=v.op, args=tuple(built[a.uid] for a in v.args),
                                    attrs=dict(v.attrs))
            elif isinstance(v, Const):
                built[v.uid] = v
            else:
                raise CompileError(f"call {self.where()}: the matched term reads an unbound input")
        return Graph(list(fresh.values()), [built[self.term.uid]], name=self.mapping.name.replace(".", "_"))

    def reference(self, operands: list) -> np.ndarray:
        """The IR semantics of the subject on ``operands`` (the host runtime's numpy semantics)."""
        from compile.interpret import run_graph
        ops = self.check_operands(operands)
        return run_graph(self.graph(), {f"v{k}": a for k, a in enumerate(ops)}, count=False)[0]

    # ---------------------------------------------------------------- certificates and fragments
    def check_certificate(self, certificate: dict | None) -> None:
        """CompileError naming the call unless ``certificate`` is about this call's subject."""
        got = (certificate or {}).get("subject_digest")
        if got != self.subject.digest:
            raise CompileError(f"call {self.where()}: its certificate is about another subject "
                               f"({got or 'none'} != {self.subject.digest}); refusing to run it")

    def fragment(self, prog, *, step: int | None = None, certificate: dict | None = None, extra: dict | None = None):
        """The program fragment of ``prog`` (3LA-style JSON object): metadata (mapping, shape,
        subject, machine, certificate) and the entries of exactly the stream :meth:`execute` runs."""
        port = self.port(prog)
        head = {"mapping": self.mapping.name, "shape": self.shape.text, "machine": port.name,
                "subject": self.subject.term, "subject_digest": self.subject.digest,
                "source": self.term.source}
        if step is not None:
            head["step"] = step
        if certificate is not None:
            head["certificate"] = {k: certificate.get(k) for k in ("method", "result", "scope", "digest", "date")}
        head.update(extra or {})
        head["program fragment"] = port.entries(prog.commands)
        return head


def at_match(mapping, node: Node, env: dict, order: list[str]) -> Call | None:
    """The call of ``mapping`` at a match of its pattern at ``node`` (``env``: ``?var`` -> bound
    Value; ``order``: the pattern's variables in order), or None when the mapping's ``match_shape``
    refuses the match (or the mapping declares no adapters)."""
    if mapping.match_shape is None or mapping.bind_operands is None:
        return None
    shapes = {k: tuple(v.shape) for k, v in env.items() if isinstance(k, str) and k.startswith("?")}
    shape = mapping.match_shape(dict(node.attrs), shapes, tuple(node.shape))
    if shape is None:
        return None
    return Call(mapping, node, [env[k] for k in order], shape)


__all__ = ["Call", "Subject", "at_match", "term_text"]
