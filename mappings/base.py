"""What an IR-accelerator mapping is: data, the unit of trust (paper §2.1.3).

A :class:`Mapping` names an accelerator operation (``accelerator.operation``) and holds

* the IR pattern as the compiler matches it (an S-expression over Relay operators);
* the compiler-IR ILA fragment: the commands for :func:`ila.models.relay.model.relay_ila` that place the
  operands and run the IR operator(s), for given shapes;
* a generator of the accelerator ILA fragment: the exact MMIO command stream the code generator
  emits, for given shapes (with the operand data in it);
* the refinement map: which accelerator memory address holds each IR tensor element, for the
  inputs and for the outputs;
* the IR dtype the pattern matches (``ir_dtype``: float32 for FlexASR and HLSCNN, whose drivers
  quantise float data; int32 for VTA's integer ALU and GEMM), so a float operator never matches an
  integer mapping;
* the shape side conditions (named, so a refusal can name the violated one);
* optional data conditions: named, checked preconditions on the input data for hardware limits
  that shapes cannot express (a fixed-point register that wraps for some values); inputs violating
  one are refused (:meth:`Mapping.check_data`), not run;
* a numeric tolerance on the Frobenius relative error when custom numerics make results inexact
  (0 for exact mappings): a float, or a function of the shape when the error of the accelerator's
  numerics depends on it (read it with :meth:`Mapping.tolerance_at`);
* for a *chain* mapping, ``fuses``: the mapping whose consecutive calls it runs as one program
  with the data left in the accelerator (paper Figure 7 (f)); the compiler never matches a chain
  mapping's pattern, it needs the chain mapping's certificate before it fuses such calls
  (:mod:`compile.chains`);
* the operand adapters the compiler uses at a match of the IR pattern (absent: the mapping is never
  offloaded): ``match_shape(attrs, shapes, out_shape)``, the mapping's shape from the matched
  root's attributes, the shapes bound to the pattern's ``?variables`` (``"?x"`` -> tuple) and the
  root's shape, or None when the match cannot be instantiated (e.g. a batch the unit does not
  take); ``bind_operands(shape, operands)``, the runner's named inputs from the bound operand
  arrays (in order of first appearance of the ``?variables``), reshaped to the mapping's layout.
  Declared here, they are part of the mapping's sources, hence of its certificates' digest;
* runners: the float32 (or int) reference of the IR semantics and the end-to-end accelerator run
  through the assembler and the ILA simulator, used by ``verify.mapping --method sim|fuzz``.

Mappings never import solvers; ``verify/`` checks them.
"""
from __future__ import annotations

from collections.abc import Mapping as _MappingABC
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ila.errors import D2AError
from ila.models.port import AccProgram  # noqa: F401  (re-exported: what a mapping's code generator returns)


class MappingError(D2AError, ValueError):
    """Bad use of a mapping: unknown name, a shape violating a side condition, malformed input."""


class Shape(_MappingABC):
    """A mapping's shape: dimension name -> int, in the mapping's dimension order (``T``, ``I``,
    ``O`` for flexasr.linear). Frozen and hashable; equal to any mapping with the same items (a plain
    dict too). ``text`` is its ``16x64x64`` form (values in dimension order)."""
    __slots__ = ("_items",)

    def __init__(self, items=(), **dims):
        d = dict(items.items() if isinstance(items, _MappingABC) else items, **dims)
        self._items = tuple((str(k), int(v)) for k, v in d.items())

    def __getitem__(self, k):
        for name, v in self._items:
            if name == k:
                return v
        raise KeyError(k)

    def __iter__(self):
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __eq__(self, other) -> bool:
        return isinstance(other, _MappingABC) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return "Shape(" + ", ".join(f"{k}={v}" for k, v in self._items) + ")"

    def __reduce__(self):
        return (Shape, (self._items,))

    @property
    def text(self) -> str:
        return "x".join(str(v) for _, v in self._items)


@dataclass(frozen=True)
class SideCondition:
    """A named predicate on shapes (dict of dimension name -> int)."""
    name: str
    check: Callable[[dict], bool]
    text: str

    def holds(self, shape: dict) -> bool:
        try:
            return bool(self.check(shape))
        except (KeyError, TypeError, ZeroDivisionError):
            return False


@dataclass(frozen=True)
class DataCondition:
    """A named precondition on a mapping's input data: a hardware limit the shapes cannot express.
    ``measure(shape, inputs)`` returns the quantity the limit bounds (a float, in the units ``text``
    states); the condition holds when it is strictly below ``bound`` (NaN does not hold)."""
    name: str
    measure: Callable[[dict, dict], float]
    bound: float
    text: str

    def value(self, shape: dict, inputs: dict) -> float:
        return float(self.measure(shape, inputs))

    def holds(self, shape: dict, inputs: dict) -> bool:
        return self.value(shape, inputs) < self.bound


def _resolve(ref):
    """A callable, or ``"module:function"`` imported on first use (so a mapping's spec module need
    not import its proof modules, which import the spec: no import cycle)."""
    if not isinstance(ref, str):
        return ref
    import importlib
    mod, _, fn = ref.partition(":")
    return getattr(importlib.import_module(mod), fn)


@dataclass(frozen=True)
class Proof:
    """A mapping's formal proof artefacts (absent: the mapping is validated by simulation only).

    ``bmc(shape, *, numerics='uf') -> ProofSetup``: both fragments over shared symbolic data,
    the accelerator side being the exact stream the code generator emits (``verify.bmc``).
    ``shape``: the small shape of quick proofs and of mutation testing. ``chc(shape, *,
    numerics='uf', infer=False) -> ChcSpec`` (or None): the product program and its relational
    invariants (``verify.chc``; ``shape`` None = all sizes). ``cex_shapes``: where a refuted
    all-sizes proof looks for a concrete counterexample by BMC. The two builders are given as
    callables or as ``"module:function"`` references."""
    bmc_setup: Callable[..., Any] | str
    shape: dict
    chc_spec: Callable[..., Any] | str | None = None
    cex_shapes: tuple = ()

    @property
    def bmc(self) -> Callable[..., Any]:
        return _resolve(self.bmc_setup)

    @property
    def chc(self) -> Callable[..., Any] | None:
        return None if self.chc_spec is None else _resolve(self.chc_spec)


@dataclass(frozen=True)
class Mapping:
    """One IR-accelerator mapping (module docstring). Optional parts are ``None`` when absent:
    ``ir_fragment(shape) -> IrFragment`` (the compiler-IR ILA fragment), ``refinement(shape) ->
    dict`` (tensor name -> (IR addresses, accelerator addresses)), ``proof`` (:class:`Proof`).

    The code generator is ``program(shape, inputs) -> AccProgram`` (:class:`ila.models.port.AccProgram`):
    the exact MMIO stream the driver emits for these inputs and the driver's read-back of its reads.
    ``machine`` names the accelerator's :class:`ila.models.port.MachinePort` (``"module:NAME"``, a
    literal string, so that the port belongs to the import closure of the mapping's certificates),
    which executes the stream from the machine's reset state. ``run_accelerator(shape, inputs)`` (the end-to-end runner of ``--method sim|fuzz``)
    and ``codegen(shape, inputs)`` (the stream as a list of commands) are derived from ``program``
    when not given. ``mutations`` names the seeded bugs of the mapping's proofs (``"module:function"``
    returning ``{name: verify.mutations.Mutation}``)."""
    name: str
    ir_pattern: str
    description: str
    shape_dims: tuple[str, ...]
    default_shape: dict
    side_conditions: tuple[SideCondition, ...]
    tolerance: float | Callable[[dict], float]              # see tolerance_at
    random_inputs: Callable[[dict, np.random.Generator], dict]
    reference: Callable[[dict, dict], np.ndarray]
    run_accelerator: Callable[[dict, dict], np.ndarray] | None = None
    shape_strategy: Callable[[], Any] | None = None          # hypothesis strategy of valid shapes
    edge_inputs: Callable[[dict, np.random.Generator], list[dict]] | None = None
    data_conditions: tuple[DataCondition, ...] = ()          # checked preconditions on the input data
    ir_fragment: Callable[[dict], Any] | None = None
    codegen: Callable[[dict, dict], list] | None = None
    refinement: Callable[[dict], dict] | None = None
    proof: Proof | None = None
    ir_dtype: str = "float32"          # dtype of the IR value the pattern's root computes (numpy name)
    fuses: str | None = None           # a chain mapping: the fused run of consecutive calls of this mapping
    match_shape: Callable[[dict, dict, tuple], dict | None] | None = None    # see module docstring
    bind_operands: Callable[[dict, list], dict] | None = None              # see module docstring
    program: Callable[[dict, dict], AccProgram] | None = None             # the code generator
    machine: str | None = None         # "module:NAME" of the machine port (default from the accelerator)
    mutations: str | None = None       # "module:function" of the seeded bugs of its proofs

    def __post_init__(self):
        if self.program is not None:
            if self.run_accelerator is None:
                object.__setattr__(self, "run_accelerator", lambda shape, inputs: run_program(self, shape, inputs))
            if self.codegen is None:
                object.__setattr__(self, "codegen", lambda shape, inputs: self.program(shape, inputs).command_list())
        if self.run_accelerator is None:
            raise MappingError(f"mapping {self.name}: declares neither a code generator (program) nor a runner")
        if self.program is not None and not self.machine:
            raise MappingError(f"mapping {self.name}: a code generator needs its machine port (machine='module:PORT')")

    @property
    def port(self):
        """The accelerator's :class:`ila.models.port.MachinePort` (``machine``, resolved on use).
        MappingError when the mapping names none."""
        if not self.machine:
            raise MappingError(f"mapping {self.name} names no machine port (machine='module:PORT')")
        return _resolve(self.machine)

    @property
    def accelerator(self) -> str:
        return self.name.split(".")[0]

    def check_shape(self, shape: dict) -> None:
        """Raise MappingError naming the first violated side condition (or a missing dimension)."""
        missing = [d for d in self.shape_dims if d not in shape]
        if missing:
            raise MappingError(f"{self.name}: shape lacks dimension(s) {missing}; expected {self.shape_dims}")
        for c in self.side_conditions:
            if not c.holds(shape):
                raise MappingError(f"{self.name}: shape {format_shape(shape)} violates side condition "
                                   f"{c.name!r}: {c.text}")

    @property
    def shape_dependent_tolerance(self) -> bool:
        return callable(self.tolerance)

    def tolerance_at(self, shape: dict) -> float:
        """The bound on the Frobenius relative error (a fraction, 0.05 = 5 %) of one input at
        ``shape`` (dict of dimension name -> int): ``tolerance`` itself when it is a number, else
        ``tolerance(shape)``. Raises MappingError when the shape violates a side condition (naming
        it) or the value is not a finite number >= 0 (naming the value)."""
        if not callable(self.tolerance):
            tol = self.tolerance
        else:
            self.check_shape(shape)
            tol = self.tolerance(shape)
        try:
            val = float(tol)
        except (TypeError, ValueError):
            val = float("nan")
        if not (np.isfinite(val) and val >= 0):
            raise MappingError(f"{self.name}: tolerance at shape {format_shape(shape)} is {tol!r}; it must be a "
                               "finite number >= 0")
        return val

    def check_data(self, shape: dict, inputs: dict) -> None:
        """Raise MappingError naming the first violated data condition and the measured value."""
        for c in self.data_conditions:
            v = c.value(shape, inputs)
            if not v < c.bound:
                raise MappingError(f"{self.name}: input data at shape {format_shape(shape)} violates data condition "
                                   f"{c.name!r}: measured {v:.6g}, must be < {c.bound:.6g}; {c.text}")

    def parse_shape(self, text: str) -> dict:
        """Parse 'AxBxC' into this mapping's dimensions, in order."""
        try:
            vals = [int(v) for v in text.lower().split("x")]
        except ValueError:
            raise MappingError(f"{self.name}: shape {text!r} is not of the form " + "x".join(self.shape_dims)) from None
        if len(vals) != len(self.shape_dims):
            raise MappingError(f"{self.name}: shape {text!r} needs {len(self.shape_dims)} dimensions "
                               f"({'x'.join(self.shape_dims)})")
        shape = dict(zip(self.shape_dims, vals))
        self.check_shape(shape)
        return shape


def run_program(mapping: Mapping, shape, inputs: dict) -> np.ndarray:
    """Run ``mapping``'s code generator on ``inputs`` and execute the stream on its machine from the
    reset state (:meth:`ila.models.port.MachinePort.run_program`); the read-back result."""
    prog = mapping.program(shape, inputs)
    out, _ = (prog.machine or mapping.port).run_program(prog)
    return out


def format_shape(shape) -> str:
    """``16x64x64``: the values of a shape (dict or :class:`Shape`) in its dimension order."""
    return "x".join(str(v) for v in shape.values())


def frobenius_relative_error(ref: np.ndarray, acc: np.ndarray) -> float:
    """‖ref − acc‖_F / ‖ref‖_F (0 when both are zero; inf when only ref is zero)."""
    ref = np.asarray(ref, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    if ref.shape != acc.shape:
        raise MappingError(f"result shape {acc.shape} differs from the reference shape {ref.shape}")
    num = np.linalg.norm(ref - acc)
    den = np.linalg.norm(ref)
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    return float(num / den)


# ----------------------------------------------------------------------------- proof fragments
@dataclass(frozen=True)
class MmioPort:
    """How a command stream is observed, as the accelerator's driver observes it: which commands
    are reads (``is_read(cmd)``), the data a read returns (``read_data(state)``: the model state
    after the read, names -> ints in simulation or terms in proofs, to an array of the read's
    elements), and the state that must be 1 at a ``{"wait_irq": True}`` command (``irq``)."""
    is_read: Callable[[dict], bool]
    read_data: Callable[[Any], np.ndarray]
    irq: str | None = None


@dataclass
class Side:
    """One side of a mapping for proof: an ILA, its command stream (data values may be symbolic
    expressions), the memory state holding the tensors, and (accelerator side of a proof that
    reads the emitted read-back) the MMIO port through which the driver reads results."""
    ila: Any
    commands: list
    memory: str
    init: dict = field(default_factory=dict)
    port: MmioPort | None = None


@dataclass
class ProofSetup:
    """The two fragments of a mapping over shared symbolic input data (the refinement map on
    inputs), the output address pairs (IR address, accelerator address) to compare (the
    refinement map on outputs), and axioms relating the two sides' uninterpreted functions:
    each maps the list of occurring applications to Bool expressions."""
    ir: Side
    acc: Side
    data: list
    outputs: list
    axioms: list = field(default_factory=list)
    funcs: list = field(default_factory=list)
    describe_output: Callable[[int], str] = lambda k: f"output {k}"
    inputs: list = field(default_factory=list)   # (IR address, accelerator address) of data[k]
    # The emitted read-back (trusted path): the driver's function from the list of reads of the
    # accelerator stream (``acc.port``) to the result tensor; ``outputs`` then pair an IR address
    # with a flat index into that tensor. None: ``outputs`` pair IR and accelerator addresses.
    readback: Callable[[list], np.ndarray] | None = None
    covers: tuple = ()                           # what a proof of this setup covers (see verify.scope)


def symbolic_data(n: int, width: int, prefix: str = "d") -> list[Expr]:
    from ila.sorts import BvSort
    from ila.unroll import symbol
    return [symbol(f"{prefix}{k}", BvSort(width)) for k in range(n)]



# ----------------------------------------------------------------------------- CHC artefacts
@dataclass
class LoopSpec:
    """One side's loop: prefix commands (configuration + start, no data), tracked cell addresses
    and their initial values (the refinement map), and the supplied invariant and post-condition
    as functions of the ``verify.cells.LoopSystem`` (whose ``states`` are the model's state variables)."""
    side: Side
    addrs: list
    cell_init: list
    invariant: Callable[[Any], Any]
    post: Callable[[Any], Any]
    name: str = "loop"
    # relational candidate conjuncts for invariant inference (verify.houdini), used when
    # ``invariant`` is None: LoopSystem -> [Expr]
    candidates: Callable[[Any], list] | None = None
    # The stream lemmas of verify.chc (fixed shapes), when ``side.commands`` is the whole emitted
    # stream (transfers included): ``placed`` = [(data term, declared address)], the input
    # placement the commands before the start must realise; ``read_map`` = {"readback": reads ->
    # tensor, "cells": [(flat index, declared address)]}, the read-back the commands after the
    # start must perform (and they must write nothing).
    placed: list | None = None
    read_map: dict | None = None


@dataclass
class ChcSpec:
    pre: Any
    loops: list[LoopSpec]
    final: Callable[[list], Any]
    axioms: Callable[[list], list] = lambda apps: []
    scope: str = ""
    notes: list[str] = field(default_factory=list)
    covers: tuple = ()           # what a proof covers (verify.scope names): given by the artefacts' builder
    # symbolic sizes: the size terms, small bounds to prefer when solving a failing clause for
    # them (tuples, one bound per term), and the shape of their values ({name: int} -> shape)
    size_vars: list = field(default_factory=list)
    small_sizes: list = field(default_factory=list)
    shape_of: Callable[[dict], dict] | None = None


