"""Phase proofs: a mapping's emitted program proved loop by loop, for one tracked (symbolic) cell
per loop, with the memories between loops described by proved universal statements (issue 26).

Why. An accelerator program such as VTA's dense (LOAD UOP, LOAD WGT, LOAD INP, GEMM reset, GEMM,
STORE) or HLSCNN's convolution runs several child-ILA loops one after the other, each reading
what earlier loops wrote. BMC unrolls them all (millions of MACs at the applications' shapes);
here each loop is one *phase*, proved once for an arbitrary cell of the memory it writes (cell
morphing, Monniaux and Gonnord, SAS 2016), so its cost does not grow with the shape, and the
sizes may even be symbols (all sizes at once).

The pieces (data only; ``verify.phases`` checks them):

* :class:`Region` -- a universal statement about a memory at one point of a stream:
  ``for all params p: dom(p) -> M[addr(p)] = val(p)``. A phase *establishes* one about the memory
  it writes (its tracked cell is ``addr(p)`` for symbolic ``p``); a :class:`Lemma` establishes one
  by enumerating every ``p`` of a fixed shape (the stream lemmas: where the emitted data bytes land).
* :class:`Phase` -- one child loop: the stream command that starts it, the memory it writes and
  the tracked cells, the memories it reads (kept as array variables, described by instances of
  earlier regions: :attr:`Phase.facts`), its invariant (supplied, or inferred from candidates by
  Houdini) and post-condition, and definitional axiom instances (recursive specification
  functions, e.g. a partial sum ``QS(k + 1) = QS(k) + P(k)``, guarded so that every instance is
  true of the function's definition).
* :class:`PhaseProof` -- the phases of the IR side and of the accelerator side, the lemmas, and
  the final clause comparing the tracked output cells.

Soundness rests on the checker's composition rules (``verify.phases``): a region used by a phase
must hold at that phase's start, i.e. it was established earlier on the same side and no phase or
top-level command in between writes its memory inside its domain (frame clauses are checked for
every phase: a loop writes only the memory it declares, and only inside its declared write region);
the scalar state at a phase's start is the stream's top-level state with every state an earlier
loop may change replaced by a fresh symbol; and a loop's exit is what the post-condition is proved
at (partial correctness: a loop that never ends leaves the driver waiting; the simulator, not the
proof, would hang).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


def array(side: str, phase: str, memory: str, sort):
    """The array variable of ``memory`` (of ``sort``) at the start of ``phase``'s loop on ``side``:
    the name the checker gives it (``<side>@<phase>.<memory>``), so a mapping can refer to the
    memory as an earlier phase saw it (e.g. VTA's DRAM when the micro-ops were loaded)."""
    from ila.unroll import symbol
    if "." in phase or "@" in side:
        raise ValueError(f"phase names take no '.', sides no '@': {side!r}, {phase!r}")
    return symbol(f"{side}@{phase}.{memory}", sort)


@dataclass(frozen=True, eq=False)
class Region:
    """``for all params p: dom(p) -> M[addr(p)] = val(p)`` about memory ``memory`` of side
    ``side`` ('ir' or 'acc'), as established by ``by`` (the name of a phase or lemma). ``params``:
    the parameter symbols (bit-vector terms) that ``dom``, ``addr`` and ``val`` are expressions
    over; ``addr`` is of the memory's address width, ``val`` of its data width. An instance at
    terms ``q`` substitutes ``q`` for ``params``."""
    name: str
    side: str
    memory: str
    by: str
    params: tuple
    dom: Any
    addr: Any
    val: Any


@dataclass(eq=False)
class Lemma:
    """A stream lemma of a fixed shape: after the commands of ``side`` before index ``at`` (in
    emitted order), ``region`` holds of memory ``region.memory`` at every point of ``box`` (one
    ``range`` per parameter of the region; every point where ``dom`` holds must lie in it, which
    the checker proves), checked point by point without a solver by ``verify.phases``: the writes
    are executed through the model's own instructions, and at each point the memory's value must
    be ``val`` with every ``load(A, i)`` of a data array ``A`` replaced by ``data[A][i]``, the data
    symbol the emitted stream carries (the arrays of the phase proof *are* the data: ``A[i]`` names
    symbol ``data[A][i]``). A byte no command writes holds ``unwritten`` (the reset value)."""
    name: str
    side: str
    at: int
    region: Region
    box: tuple
    data: dict
    unwritten: int | None = 0
    note: str = ""


@dataclass(eq=False)
class Phase:
    """One child loop of one side (see the module docstring).

    ``command``: index (in the side's stream) of the top-level command that starts the loop.
    ``memory``: the memory the loop writes; ``params``/``pre``: the tracked cells' parameters and
    their condition; ``addrs``: the tracked cell addresses (terms over ``params``). A tracked cell
    starts with the memory's value at the loop's start (``P.array(memory)[addr]``, an array
    variable; facts about it come from regions established earlier, e.g. a reset loop's zeros).
    ``write_region(addr) -> Bool``: where the loop may write ``memory`` (checked by frame clauses;
    loads outside it read the memory as it was at the start). ``reads``: the other memories the
    loop reads (array variables, never written by it: checked).
    ``facts(P) -> [(Region, array, params)]``: the region instances the phase relies on (``P``
    is the checker's view: ``P.sys`` the loop system, ``P.state(name)`` a model state as a loop
    variable, ``P.array(memory, phase)`` the array variable of a memory at a phase's start on this
    side); ``axioms(P) -> [Bool]``: definitional instances of specification functions.
    ``invariant(P) -> Bool`` (None: inferred by Houdini from the generic templates and
    ``candidates(P) -> [Bool]``), ``post(P) -> Bool`` about the final tracked cells
    (``P.sys.cells``) and the rigid parameters only. ``establishes``: the region this phase proves
    (its ``params`` and ``dom`` are the phase's ``params`` and ``pre``, its ``addr`` the first
    tracked address; the checker adds ``cell = val`` to the post), or None for an output phase.
    ``also_writes``: other memories the loop may write (e.g. VTA's STORE writes DRAM).
    ``split``: (param, values) -- the loop is proved once per value of one of ``params`` (every
    expression of the phase with that value substituted; the checker proves that ``pre`` allows no
    other value), so the loop's other lanes drop out of each case's formulas; output phases only.
    ``constants``: {state name: value} for scalar states no child instruction writes (checked) that
    hold these values when the loop starts (part of the invariant, so initiation proves them); the
    loop system is built with them substituted, so address arithmetic over configuration registers
    folds and stores to other lanes are told apart syntactically."""
    name: str
    side: str
    command: int
    memory: str
    params: tuple
    pre: Any
    addrs: list
    write_region: Callable[[Any], Any] | None = None
    reads: tuple = ()
    facts: Callable[[Any], list] = lambda P: []
    axioms: Callable[[Any], list] = lambda P: []
    invariant: Callable[[Any], Any] | None = None
    candidates: Callable[[Any], list] | None = None
    post: Callable[[Any], Any] = lambda P: None
    establishes: Region | None = None
    also_writes: tuple = ()
    split: tuple | None = None      # (param, values): one proof per value (a case split on a tracked parameter)
    constants: dict = field(default_factory=dict)


@dataclass(eq=False)
class Side:
    """One side's ILA and its exact emitted stream (``commands``), with initial state overrides
    (``init``, e.g. VTA's DRAM zero at reset: name -> value or numpy array). ``host(cmd)``: for a
    command the machine's runner executes instead of the ILA (a driver read, a reset), its meaning:
    ``("read", [(memory, address), ...])`` -- the read returns those cells, in order, as they are
    at that point of the stream -- or ``("reset",)`` -- every state and memory back to its reset
    value; None for an ILA command."""
    name: str
    ila: Any
    commands: list
    init: dict = field(default_factory=dict)
    host: Callable[[dict], Any] | None = None


@dataclass(eq=False)
class ReadBack:
    """The driver's read-back of a side's reads (claim ``read-back``): ``fn(reads)`` is the
    driver's own function from the list of reads (arrays of element values, in stream order) to
    the result tensor; ``outputs(k)`` names, for flat result element k (of ``count``), the output
    phase and the values of its params whose tracked cell the element must be. The checker runs
    ``fn`` on symbolic reads (one symbol per cell and read) and proves element k is the read of
    that cell, taken after the phase's loop with no write to its memory in between."""
    side: str
    fn: Callable[[list], Any]
    outputs: Callable[[int], tuple]
    count: int


@dataclass(eq=False)
class PhaseProof:
    """A mapping's phase proof at one scope (a shape, or ``symbolic``).

    ``sides``: {'ir': Side, 'acc': Side}; ``params``/``pre``: the rigid parameters shared by all
    phases (the tracked output coordinates, and the size symbols when symbolic) and their
    condition; ``phases`` in stream order per side; ``lemmas``; ``final(F) -> Bool``: the safety
    clause over the final tracked cells (``F.cell(phase_name, k)``), proved from every phase's
    post-condition; ``final_axioms(F) -> [Bool]``; ``outputs``: (phase name, cell index) of the
    output cells the final clause compares, which must survive to the end of their stream (no later
    phase or command writes them). ``checks``: extra named lemmas as callables returning a list of
    violations (e.g. the tiling of passes, or that the emitted instruction words equal the
    declared fields of a symbolic-size proof at this shape). ``covers``: the claims proved
    (``verify.scope``); ``numerics``: 'exact' or 'uf'; ``notes``: what the proof does not cover.

    All sizes (``scope='symbolic'``): ``size_vars`` are the size symbols (bounded in ``pre`` with
    the side conditions), the streams are the generator's commands on those symbols (no data
    transfers: their number depends on the sizes), and ``assumed`` lists the regions that hold at
    the start of their side's stream by hypothesis -- the declared refinement map's input
    placement, which the fixed-shape proofs' stream lemmas prove per shape; the verdict names
    each. Products of terms over the size symbols stay interpreted (data products are abstracted,
    ``verify.phases._valid``). On a failing clause the checker solves it for the sizes (under each
    bound of ``small_sizes`` in turn, then unbounded) and ``shape_of({symbol name: int})`` turns
    the values into a shape at which a counterexample is searched."""
    scope: str
    sides: dict
    params: tuple
    pre: Any
    phases: list
    lemmas: list
    final: Callable[[Any], Any]
    outputs: list
    final_axioms: Callable[[Any], list] = lambda F: []
    checks: list = field(default_factory=list)
    covers: tuple = ()
    numerics: str = "exact"
    notes: list = field(default_factory=list)
    size_vars: list = field(default_factory=list)
    cex_shapes: tuple = ()
    pieces: Callable[[], list] | None = None       # split proofs: keys of independently checkable pieces
    readback: ReadBack | None = None
    assumed: list = field(default_factory=list)    # all sizes: regions holding at the start of a stream
    small_sizes: list = field(default_factory=list)
    shape_of: Callable[[dict], dict] | None = None


@dataclass(eq=False)
class Composite:
    """A proof made of independently checked pieces (issue 26, item 3): ``pieces`` maps a key to a
    builder of a :class:`PhaseProof` (each a complete proof of one part of the emitted program,
    e.g. one pass of a multi-pass program from reset), ``checks`` are named lemmas (callables
    returning the list of violations) that tie the pieces to the whole program (the stream of
    every part is a piece's stream with its own data; the parts partition the output; the
    read-back assembles the parts'). The verdict covers ``covers`` when every piece and every
    check holds; ``notes`` say what the split is."""
    scope: str
    pieces: dict
    checks: list
    covers: tuple
    numerics: str = "exact"
    notes: list = field(default_factory=list)
    cex_shapes: tuple = ()
