"""The checker of phase proofs (:mod:`mappings.phases`): a program of several child-ILA loops,
proved loop by loop for a tracked cell, composed through proved universal statements (regions).

For each side (the compiler-IR stream and the accelerator's exact emitted stream) the checker

1. **walks the stream** at the top level (children not run): every command must decode to one
   top-level instruction (found from the concrete control inputs); commands whose instruction
   writes only memories (data transfers) are recorded as memory writes; the others are executed
   symbolically, and at each phase's command the scalar state is the loop's start state. After a
   phase, every scalar state a child instruction can update is replaced by a fresh symbol (the
   loop may leave anything there), constrained only by the loop's exit condition (no child
   instruction fires); a command that is not a phase must not start a loop (checked under those
   exit conditions);
2. **checks each lemma** by executing the stream's memory writes up to the lemma's point through
   the model's own instructions (substitution into their update terms; bytes are terms of the
   data symbols) and comparing every point of the region (module :mod:`mappings.phases`);
3. **checks each phase**: the child loop as an array-free transition system (cell morphing: the
   tracked cells of the written memory, the start array outside the declared write region, the
   read memories as array variables, every other load an unconstrained value), and the clauses
   initiation, consecution (per instruction, then per conjunct), mutual exclusion, frame (the loop
   writes its memory only inside the write region and no other memory but ``also_writes``),
   exit (invariant and no instruction enabled imply the post-condition, plus ``cell = val`` of the
   region it establishes), each under the phase's region instances and definitional axioms;
   invariants the phase does not supply are inferred by Houdini (generic templates of
   :mod:`verify.templates` and the phase's relational candidates; :meth:`_Checker._houdini`: a
   relational candidate an abstracted model falsifies is re-checked through the clause preparation
   before it is dropped; the cases of a split phase start from the templates the previous case
   kept, and a case that fails so is checked again from all the templates; the templates concrete
   runs of the phase's loop falsify are dropped before any query,
   :meth:`_Checker._sample_templates`); an inferred invariant's consecution is decided in groups
   of conjuncts, halved where the solver gives no answer;
4. **checks the composition**: every region instance a phase uses was established earlier on its
   side and survives to the array's phase (no phase in between writes the memory inside the
   region's domain -- a clause -- and no top-level command in between writes the memory at all);
   the output cells survive to the end of their stream; and the final clause: the rigid
   precondition and the output phases' post-conditions imply the final comparison.

A failing clause is not a counterexample; like :func:`verify.chc.check_chc`, the checker then
looks for one by BMC at the proof's ``cex_shapes`` and replays it in the simulators.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ila.errors import D2AError, SimulationError
from ila.expr import FALSE, TRUE, Expr, implies, land, load, lor
from ila.ops import Op
from ila.simplify import Rewriter
from ila.smt import SmtEncoder, axiom_instances
from ila.smt import check as smt_check
from ila.sorts import BOOL, BvSort
from ila.unroll import symbol
from ila.verdict import Counterexample, Proved, Status, Unknown
from ila.walk import toposort
from mappings.phases import Lemma, Phase, PhaseProof, Region

from .fragments import reset_state

QUERY_TIMEOUT = 60.0          # seconds per clause, unless the caller gives a timeout


class PhaseError(D2AError):
    """A malformed phase proof (a region used before it is established, a loop no phase declares,
    a stream command that decodes to no instruction); the message names it."""


class UndecidedDecode(PhaseError):
    """An all-sizes proof's stream command whose decode holds at some sizes the side conditions
    allow and fails at others (e.g. a configuration field the generator gets wrong at some sizes,
    so that the trigger's consistency check rejects it there): not a malformed proof but failing
    clauses, ``formulas`` (side conditions -> the decode, and -> its negation), from which the
    verdict searches the sizes where the stream differs (:func:`verify.countershapes.countershapes`)."""

    def __init__(self, msg: str, formulas: list):
        super().__init__(msg)
        self.formulas = formulas


# ----------------------------------------------------------------------------- the loop system
@dataclass
class PhaseSystem:
    """The array-free transition system of one phase's loop (duck-compatible with
    :class:`verify.cells.LoopSystem` for :mod:`verify.templates`)."""
    ila: object
    memory: str
    addrs: list
    cells: list
    states: list
    fires: list
    next_by_instr: list
    enabled: Expr
    havocs: list = field(default_factory=list)
    stores: list = field(default_factory=list)        # per instruction: addresses stored to ``memory``
    forbidden: list = field(default_factory=list)     # per instruction: memories it writes that it must not
    next: dict = field(default_factory=dict)

    @property
    def vars(self):
        return self.states + self.cells

    def consistency(self) -> Expr:
        return land(*[implies(self.addrs[i].eq(self.addrs[j]), self.cells[i].eq(self.cells[j]))
                      for i in range(len(self.cells)) for j in range(i + 1, len(self.cells))])


class _Morph:
    """Loads resolved through the tracked cells (written memory), the start array outside the
    write region, array variables for read memories, fresh values for anything else.

    ``region_first`` (all-sizes proofs): a load of the written memory tests the write region
    before the tracked addresses (outside it, the start array; inside, the cells, else a fresh
    value), so that a read the region test excludes (an input of the loop) is never compared with
    a tracked address -- an equality of different radices no rewrite decides. Sound given the
    frame clauses: the loop stores only inside the region, so a tracked cell outside it keeps its
    start value, the start array's."""

    def __init__(self, mem: Expr, addrs, cells, start_array, write_region, kept: dict, tag: str,
                 region_first: bool = False):
        self.region_first = region_first and write_region is not None
        self.mem, self.addrs, self.cells = mem, addrs, cells
        self.start_array, self.write_region, self.kept, self.tag = start_array, write_region, kept, tag
        self.memo: dict[int, Expr] = {}
        self.rw = Rewriter()
        self.havocs: list[Expr] = []
        self.lin: dict = {}                  # linear normal forms of address terms (_addr_eq)
        self.bounds: dict = {}               # tracked parameters' constant bounds (_addr_eq's lanes)

    def havoc(self, width: int) -> Expr:
        h = symbol(f"havoc.{self.tag}.{len(self.havocs)}", BvSort(width))
        self.havocs.append(h)
        return h

    def load_from(self, m: Expr, a: Expr) -> Expr:
        b = self.rw.build
        if m is self.mem:
            if self.region_first:
                inside = self.rw.one(self.write_region(a))
                if inside is FALSE:
                    return b(Op.LOAD, BvSort(m.sort.data_width), (self.start_array, a), None)
            if self.write_region is None or self.region_first:
                out = self.havoc(m.sort.data_width)
            else:
                out = b(Op.ITE, BvSort(m.sort.data_width), (self.rw.one(self.write_region(a)),
                                                             self.havoc(m.sort.data_width),
                                                             self.rw.build(Op.LOAD, BvSort(m.sort.data_width),
                                                                           (self.start_array, a), None)), None)
            for t, c in reversed(list(zip(self.addrs, self.cells))):
                if t is a:
                    out = c
                    continue
                same = _addr_eq(self.rw, a, t, self.lin, self.bounds)
                if same is TRUE:
                    out = c
                    continue
                if same is not FALSE:
                    out = b(Op.ITE, c.sort, (same, c, out), None)
            if self.region_first:
                out = b(Op.ITE, out.sort, (inside, out, b(Op.LOAD, out.sort, (self.start_array, a), None)), None)
            return out
        if m.op is Op.STORE:                   # a chain of stores, walked iteratively (thousands deep)
            hits = []
            while m.op is Op.STORE:
                same = _addr_eq(self.rw, a, self.expr(m.args[1]), self.lin, self.bounds)
                if same is TRUE:                  # the last store to this address: nothing older matters
                    hits.append((same, self.expr(m.args[2])))
                    break
                if same is not FALSE:
                    hits.append((same, self.expr(m.args[2])))
                m = m.args[0]
            out = None if hits and hits[-1][0] is TRUE else self.load_from(m, a)
            for same, v in reversed(hits):
                if same is TRUE:
                    out = v
                    continue
                out = b(Op.ITE, BvSort(m.sort.data_width), (same, v, out), None)
            return out
        if m.op is Op.ITE:
            return b(Op.ITE, BvSort(m.sort.data_width),
                     (self.expr(m.args[0]), self.load_from(m.args[1], a), self.load_from(m.args[2], a)), None)
        if m.op is Op.VAR and m.uid in self.kept:
            return b(Op.LOAD, BvSort(m.sort.data_width), (self.kept[m.uid], a), None)
        if m.op is Op.VAR:
            return self.havoc(m.sort.data_width)
        raise PhaseError(f"cell morphing: unsupported memory expression {m.short()}")

    def expr(self, e: Expr) -> Expr:
        for n in toposort([e]):
            if n.uid in self.memo or n.sort.is_mem:
                continue
            if n.op is Op.LOAD:
                out = self.load_from(n.args[0], self.memo[n.args[1].uid])
            elif n.args:
                out = self.rw.build(n.op, n.sort, tuple(self.memo[a.uid] for a in n.args), n.payload)
            else:
                out = n
            self.memo[n.uid] = out
        return self.memo[e.uid]


def _low(e: Expr) -> tuple[Expr, int, int] | None:
    """``e`` as ``(x, k, c)`` with ``e = x * 2**k + c`` and ``0 <= c < 2**k`` (no carry into bit
    k), for ``x << k``, ``x << k + c`` (either order) and ``x * 2**k`` forms; else None."""
    def shifted(t):
        if t.op is Op.SHL and t.args[1].op is Op.CONST:
            return t.args[0], t.args[1].payload
        if t.op is Op.MUL and t.args[1].op is Op.CONST and t.args[1].payload and \
                t.args[1].payload & (t.args[1].payload - 1) == 0:
            return t.args[0], t.args[1].payload.bit_length() - 1
        return None
    if e.op is Op.ADD:
        for x, y in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
            sh = shifted(x)
            if sh is not None and y.op is Op.CONST and y.payload < (1 << sh[1]):
                return sh[0], sh[1], y.payload
        return None
    sh = shifted(e)
    return None if sh is None else (sh[0], sh[1], 0)


def _linear(e: Expr, memo: dict) -> tuple[tuple, int]:
    """``e`` as a polynomial of degree 1 modulo ``2**width``: (sorted ((atom uid, coefficient), ...),
    constant), over ``+``, ``-``, negation, products and left shifts by constants; any other
    subterm is an atom."""
    got = memo.get(e.uid)
    if got is not None:
        return got
    m = (1 << e.sort.width) - 1
    out = None
    if e.op is Op.CONST:
        out = ((), e.payload & m)
    elif e.op in (Op.ADD, Op.SUB) or (e.op is Op.MUL and any(a.op is Op.CONST for a in e.args)) or \
            (e.op is Op.SHL and e.args[1].op is Op.CONST) or e.op is Op.NEG:
        if e.op is Op.NEG:
            parts, k = [(e.args[0], -1)], 0
        elif e.op is Op.MUL:
            c, x = (e.args[0], e.args[1]) if e.args[0].op is Op.CONST else (e.args[1], e.args[0])
            parts, k = [(x, c.payload)], 0
        elif e.op is Op.SHL:
            parts, k = [(e.args[0], 1 << min(e.args[1].payload, e.sort.width))], 0
        else:
            parts, k = [(e.args[0], 1), (e.args[1], 1 if e.op is Op.ADD else -1)], 0
        coeffs: dict = {}
        for x, f in parts:
            terms, c = _linear(x, memo)
            k += f * c
            for u, g in terms:
                coeffs[u] = (coeffs.get(u, 0) + f * g) & m
        out = (tuple(sorted((u, g) for u, g in coeffs.items() if g)), k & m)
    if out is None:
        out = (((e.uid, 1),), 0)
    memo[e.uid] = out
    return out


def _lane(e: Expr, k: int, bounds: dict):
    """``e`` as ``(y, z)`` with ``e = y * 2**k + z`` and ``z`` a term that ``bounds`` (uid ->
    exclusive upper bound) keeps below ``2**k``; else None."""
    if e.op is not Op.ADD:
        return None
    for x, z in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
        lo = _low(x)
        if lo is not None and lo[1] == k and lo[2] == 0 and bounds.get(z.uid, 1 << 64) <= (1 << k):
            return lo[0], z
    return None


def _addr_eq(rw: Rewriter, a: Expr, t: Expr, memo: dict | None = None, bounds: dict | None = None) -> Expr:
    """``a = t``, decided syntactically where an identity of modular arithmetic decides it: false
    when both are ``x * 2**k + c`` with distinct constants ``c`` below ``2**k`` (their low k bits
    differ), or when their degree-1 normal forms (:func:`_linear`) differ by a non-zero constant;
    true when the normal forms are equal. With ``bounds`` (uid -> exclusive upper bound of a
    tracked parameter), ``x * 2**k + c = y * 2**k + z`` with ``z`` bounded below ``2**k`` (a
    symbolic lane) is ``z = c`` and the high ``w - k`` bits of ``x`` and ``y`` equal (both sides'
    low k bits are their lanes, with no carry)."""
    la, lt = _low(a), _low(t)
    if la is not None and lt is not None and la[1] == lt[1] and la[2] != lt[2]:
        return FALSE
    if bounds and a.sort.is_bv and a.sort == t.sort:
        for p, q in ((a, t), (t, a)):
            lp = _low(p)
            if lp is None or lp[1] == 0 or lp[1] >= p.sort.width:
                continue
            lq = _lane(q, lp[1], bounds)
            if lq is not None:
                x, k, c = lp
                hw = p.sort.width - k
                return land(lq[1].eq(c), bits(x, hw - 1, 0, rw).eq(bits(lq[0], hw - 1, 0, rw)))
    if a.sort == t.sort and a.sort.is_bv:
        memo = {} if memo is None else memo
        fa, ft = _linear(a, memo), _linear(t, memo)
        if fa[0] == ft[0]:
            return TRUE if fa[1] == ft[1] else FALSE
    return rw.build(Op.EQ, BOOL, (a, t), None)


def _store_addrs(m: Expr, mem: Expr) -> list[Expr]:
    """The address terms of every store in memory term ``m`` (over ``mem``)."""
    return [n.args[1] for n in toposort([m]) if n.op is Op.STORE]


def _param_bounds(phase: Phase) -> dict:
    """uid -> exclusive upper bound, for each parameter of ``phase`` that a top-level conjunct
    ``p <u const`` of its ``pre`` bounds."""
    from .refine import conjuncts
    out = {}
    for c in conjuncts(phase.pre):
        if c.op is Op.ULT and c.args[0] in phase.params and c.args[1].op is Op.CONST:
            out[c.args[0].uid] = min(out.get(c.args[0].uid, 1 << 64), c.args[1].payload)
    return out


def phase_system(ila, phase: Phase, start_array: Expr, kept: dict, tag: str, region_first: bool = False) -> PhaseSystem:
    """The loop system of ``phase`` (``kept``: memory state uid -> array variable; ``region_first``:
    see :class:`_Morph`)."""
    mem = ila.state(phase.memory)
    children = [c for c in ila.walk() if c is not ila]
    instrs = [i for c in children for i in c.instrs]
    cells = [symbol(f"cell.{tag}.{k}", BvSort(mem.sort.data_width)) for k in range(len(phase.addrs))]
    mo = _Morph(mem, list(phase.addrs), cells, start_array, phase.write_region, kept, tag, region_first)
    mo.bounds = _param_bounds(phase)
    const = {}
    for name, v in phase.constants.items():
        s = ila.state(name)
        if s.sort.is_mem:
            raise PhaseError(f"{phase.name}: constant {name} is a memory")
        const[s] = v if isinstance(v, Expr) else _const(v, s.sort)
    fix = Rewriter(const) if const else None
    for s in const:                 # every instruction leaves a constant as it is (its update folds back)
        for i in instrs:
            u = i.get_update(s)
            if u is not None and u is not s and fix.one(u) is not const[s]:
                raise PhaseError(f"{phase.name}: constant {s.name} is changed by {i.name}")

    def term(e):
        return e if fix is None or e is None else fix.one(e)
    support, seen = [], set()
    for i in instrs:
        for e in [term(i.host.valid), term(i.get_decode()), *i.updates.keys(), *map(term, i.updates.values())]:
            for v in toposort([e]):
                if v.op is Op.VAR and not v.sort.is_mem and v.payload[0] == "state" and v.uid not in seen:
                    seen.add(v.uid)
                    support.append(v)
    allowed = {phase.memory, *phase.also_writes}
    fires, per, stores, forbidden = [], [], [], []
    for i in instrs:
        fire = mo.expr(mo.rw.build(Op.AND, BOOL, (term(i.host.valid), term(i.get_decode())), None))
        upd = {s: (mo.expr(term(i.get_update(s))) if i.get_update(s) is not None else s) for s in support}
        new_mem = term(i.get_update(mem))
        for t, c in zip(phase.addrs, cells):
            upd[c] = mo.load_from(new_mem, t) if new_mem is not None else c
        st = [mo.expr(a) for a in _store_addrs(new_mem, mem)] if new_mem is not None else []
        bad = [s.name for s, u in i.updates.items() if s.sort.is_mem and s.name not in allowed and u is not s]
        fires.append((i.name, fire))
        per.append(upd)
        stores.append(st)
        forbidden.append(bad)
    nxt = {v: v for v in support + cells}
    for (_, fire), upd in reversed(list(zip(fires, per))):
        for v in nxt:
            nxt[v] = mo.rw.build(Op.ITE, v.sort, (fire, upd[v], nxt[v]), None)
    enabled = mo.rw.one(lor(*[f for _, f in fires])) if fires else FALSE
    return PhaseSystem(ila, phase.memory, list(phase.addrs), cells, support, fires, per, enabled, mo.havocs,
                       stores, forbidden, nxt)


# ----------------------------------------------------------------------------- solving
@dataclass
class Row:
    name: str
    status: Status
    seconds: float
    note: str = ""


def _valid(formula: Expr, *, solver: str, timeout: float | None, inline_ufs: bool = False,
           abstract: bool = True, keep: frozenset = frozenset()) -> tuple[Status, float, str]:
    """Validity of ``formula`` (its negation unsat). With ``abstract``, every product of two
    non-constant terms (a data product such as ``sext(a8) * sext(w8)``) is replaced by an
    uninterpreted function of the two values, with the instances ``a = 0 -> f(a, b) = 0``
    and ``b = 0 -> f(a, b) = 0``: an abstraction, so a formula valid for every interpretation is
    valid for the real product (a formula that needs more of multiplication is reported unknown
    or failing, never proved wrongly). Products over a variable of ``keep`` (uids: the size
    symbols of an all-sizes proof, whose address arithmetic needs the real product) stay; such a
    formula is first tried with every product abstracted (a query that needs no multiplication
    of sizes then avoids bit-blasting their multipliers; valid there is valid), for at most
    :data:`FIRST_TRY` seconds, and with z3 each try goes through :func:`_check_ackermann`
    first (function applications over bit-vector arithmetic, where z3's default strategy often
    gives up)."""
    goal0 = Rewriter().one(~formula)
    if goal0 is FALSE:
        return Status.HOLDS, 0.0, ""
    spent, res = 0.0, None
    tries = [(frozenset(), min(timeout or FIRST_TRY, FIRST_TRY)), (keep, timeout)] if abstract and keep else \
        [(keep, timeout)]
    for k, (kept, limit) in enumerate(tries):
        goal, extra = _abstract_products(goal0, kept) if abstract else (goal0, [])
        axioms = axiom_instances([goal], inline_ufs=inline_ufs)
        enc = SmtEncoder(inline_ufs=inline_ufs)
        fs = enc.encode_all([goal] + axioms + extra)
        last = k == len(tries) - 1
        if keep and solver == "z3":
            res = _check_ackermann(enc, fs, timeout=limit)
            spent += res.seconds
            if res.status == "unsat" or res.status == "sat" and last:
                return Status.of_negation(res.status), spent, res.reason
            if res.status == "sat":          # the abstraction's counter-model: try the real products
                continue
        res = smt_check(enc, fs, solver=solver, timeout=limit)
        spent += res.seconds
        if res.status == "unsat" or last:
            return Status.of_negation(res.status), spent, res.reason
    return Status.of_negation(res.status), spent, res.reason


def split_cases(formula: Expr, guards: list, check, why: str = "") -> tuple[Status, str, Expr | None]:
    """Case split of a clause the solver left unknown: ``F`` is valid iff ``g => F`` and
    ``~g => F`` are, for any Bool term ``g``. ``check(f) -> (Status, seconds, note)`` decides one
    case; the guards are tried in order, a case still unknown is split on the next guard. Returns
    the status (FAILS as soon as a case fails: its counterexample is the clause's; UNKNOWN if a
    case stays unknown after the last guard), a note naming the cases, and the failing or
    undecided case's formula (None when every case holds)."""
    pending, n = [(formula, 0)], 0
    while pending:
        f, k = pending.pop()
        for g in (guards[k], ~guards[k]):
            piece = implies(g, f)
            st, _, w = check(piece)
            n += 1
            if st is Status.UNKNOWN and k + 1 < len(guards):
                pending.append((piece, k + 1))
            elif st is not Status.HOLDS:
                return st, f"{why}; split on the invariant's guards: case {n} {st.value} ({w})", piece
    return Status.HOLDS, f"split on the invariant's guards: {n} cases hold (unsplit: {why})", None


FIRST_TRY = 10.0      # seconds of an all-sizes query's first try with every product abstracted


def _check_ackermann(encoder: SmtEncoder, assertions: list, *, timeout: float | None = None, want=()):
    """Satisfiability of quantifier-free ``assertions`` (pysmt terms of ``encoder``) whose functions
    and arrays are only read, by z3's tactic ``simplify; ackermannize_bv; qfbv`` (every application
    replaced by a fresh value plus the functional-consistency constraints, then bit-blasting): for
    function applications over bit-vector arithmetic, where z3's default strategy often gives up.
    An :class:`ila.smt.SatResult`: 'unsat' / 'sat' as z3 reports them; a tactic that does not apply,
    a timeout or anything else is 'unknown'. On 'sat', ``values`` holds the model's value of every
    Bool term of ``want`` (the tactic's model converted back to the original symbols)."""
    import z3
    from ila.smt import SatResult
    t0 = time.perf_counter()
    values = {}
    try:
        with encoder.active(), encoder.env.factory.Solver(name="z3", logic="QF_AUFBV") as s:
            ctx = s.z3.ctx
            mgr = encoder.mgr
            zf = s.converter.convert(mgr.And(list(assertions)) if len(assertions) != 1 else assertions[0])
            solver = z3.Then(z3.Tactic("simplify", ctx=ctx), z3.Tactic("ackermannize_bv", ctx=ctx),
                             z3.Tactic("qfbv", ctx=ctx), ctx=ctx).solver()
            if timeout is not None:
                solver.set("timeout", max(1, int(timeout * 1000)))
            solver.add(zf)
            res = solver.check()
            if res == z3.sat and want:
                model = solver.model()
                for term in want:
                    v = model.eval(s.converter.convert(term), model_completion=True)
                    if not z3.is_bool(v) or not (z3.is_true(v) or z3.is_false(v)):
                        raise ValueError(f"no Boolean model value for {term}")
                    values[term] = z3.is_true(v)
    except Exception as exc:      # the tactic refusing the formula: no answer, never 'proved'
        return SatResult("unknown", time.perf_counter() - t0, reason=f"z3 ackermannize_bv: {str(exc)[:200]}")
    status = "unsat" if res == z3.unsat else "sat" if res == z3.sat else "unknown"
    return SatResult(status, time.perf_counter() - t0, values,
                     reason="" if status != "unknown" else "z3 ackermannize_bv returned unknown")


_PRODUCTS: dict = {}


def _product_fn(wa: int, wb: int, w: int, kind: str):
    from ila.expr import FuncRef
    key = (wa, wb, w, kind)
    f = _PRODUCTS.get(key)
    if f is None:
        f = _PRODUCTS[key] = FuncRef(f"product_{kind}{wa}x{wb}_{w}", BvSort(w), [BvSort(wa), BvSort(wb)])
    return f


def _abstract_products(goal: Expr, keep: frozenset = frozenset()) -> tuple[Expr, list[Expr]]:
    """``goal`` with every product of two non-constant terms replaced by one uninterpreted
    function per width (so equal products stay equal), with the instances ``a = 0 -> f(a, b) = 0``
    and ``b = 0 -> f(a, b) = 0`` (see :func:`_valid`); a product of size arithmetic -- a term
    over a variable of ``keep`` (uids) through operators other than a load, a function
    application or an ``ite``'s condition -- stays."""
    extra = []
    memo: dict[int, Expr] = {}
    sized: set[int] = set(keep)          # nodes over a kept variable
    rw = Rewriter()
    for n in toposort([goal]):
        if keep and n.args and n.op not in (Op.LOAD, Op.APPLY) and \
                any(a.uid in sized for a in (n.args[1:] if n.op is Op.ITE else n.args)):
            sized.add(n.uid)             # size arithmetic; a load's or a function's value is data
        if n.args:
            args = tuple(memo[a.uid] for a in n.args)
            if n.op is Op.MUL and all(a.op is not Op.CONST for a in args) and n.uid not in sized:
                a, b = args
                app = _product_fn(a.sort.width, b.sort.width, n.sort.width, "")(a, b)
                extra += [implies(a.eq(0), app.eq(0)), implies(b.eq(0), app.eq(0))]
                memo[n.uid] = app
            else:
                memo[n.uid] = rw.build(n.op, n.sort, args, n.payload)
        else:
            memo[n.uid] = n
    out = memo[goal.uid]
    return out, extra


def _has(e: Expr, ops) -> bool:
    return any(n.op in ops for n in toposort([e]))


def resolve_loads(formula: Expr, facts: list, *, solver: str = "z3", rounds: int = 8, reps: dict | None = None,
                  orders: bool = False) -> Expr:
    """``formula`` (an implication ``H -> G``) with reads of fact arrays replaced by the facts'
    values (:func:`resolution`; ``reps``: a replacement map computed before, on a formula with the
    same hypotheses). Equivalent under ``H``, which implies the facts, so the result is valid iff
    the formula is; the facts themselves stay hypotheses."""
    from ila.simplify import replace_nodes
    if not facts:
        return formula
    if reps is None:
        reps = resolution(formula, facts, solver=solver, rounds=rounds, orders=orders)
    for _ in range(rounds):
        new = replace_nodes([formula], reps)[0] if reps else formula
        if orders:
            new = concat_normal(new)
        if new is formula:
            break
        formula = new
    left = {n.args[0].uid for n in toposort([formula]) if n.op is Op.LOAD}
    # the facts stay hypotheses where reads of their arrays are left (the others are used up)
    return implies(land(*[implies(d, load(a, b).eq(v)) for a, b, d, v in facts if a.uid in left]), formula)


class _Reps(dict):
    """A replacement map keyed by node uid, holding the nodes themselves (expressions are
    hash-consed weakly: a node no one holds may be rebuilt later with a new uid)."""

    def __init__(self):
        super().__init__()
        self.nodes: list = []


def resolution(formula: Expr, facts: list, *, solver: str = "z3", rounds: int = 8, orders: bool = False) -> dict:
    """The replacement map (load node uid -> value) of :func:`resolve_loads`: a read
    ``load(A, a)`` becomes ``v`` for a fact ``dom -> load(A, b) = v`` (one of ``facts``: (A, b,
    dom, v)) when the arithmetic part of ``H`` (its conjuncts without memory reads, cells or
    uninterpreted functions) implies ``a = b`` and ``dom``. Reads whose address reads memory are
    resolved after it (innermost first); a model of the context pairs reads with facts
    numerically, and one incremental solver confirms each pair. ``orders`` (all-sizes proofs):
    each pair's address equality and domain are first rewritten by the mixed-radix lemma, orders
    included (:mod:`verify.radix`), under the context, and after each round of replacements the
    formula's concatenations are normalised (:func:`concat_normal`)."""
    from ila.expr import bool_const, bv_const
    from ila.simplify import replace_nodes
    from .refine import split_implication
    by_array: dict[int, list] = {}
    for a, b, d, v in facts:
        by_array.setdefault(a.uid, []).append((b, d, v))
    hyps, _ = split_implication(formula)
    ctx = [h for h in hyps if not _has(h, (Op.LOAD, Op.APPLY)) and
           not any(n.op is Op.VAR and (n.name.startswith("cell.") or n.name.startswith("havoc.")) for n in toposort([h]))]
    ctx_f = land(*ctx)
    vals = _model(ctx_f, solver)
    if vals is None:
        return {}
    env = dict(vals)
    for v in toposort([formula] + [x for f in facts for x in f[1:]]):
        if v.op is Op.VAR and v not in env and not v.sort.is_mem:
            env[v] = bool_const(False) if v.sort.is_bool else bv_const(0, v.sort.width)
    ev = Rewriter(env)

    def num(e):
        r = ev.one(e)
        return r.payload if r.op is Op.CONST else None
    enc = SmtEncoder()
    from pysmt.logics import QF_BV
    out = _Reps()
    with enc.active(), enc.env.factory.Solver(name=solver, logic=QF_BV,
                                              solver_options={"timeout": 5000} if solver == "z3" else {}) as s:
        s.add_assertion(enc.encode(ctx_f))
        cache: dict = {}
        mixed = None
        if orders:
            from .radix_orders import OrderRadixRewriter
            from .refine import implied_facts
            mixed = OrderRadixRewriter(implied_facts(ctx), lambda x, y: implied(x.ult(y), False))

        def implied(goal, rewrite=True):
            if rewrite and mixed is not None:
                goal = mixed(goal)
            if goal.uid not in cache:
                s.push()
                s.add_assertion(enc.encode(~goal))
                try:
                    cache[goal.uid] = not s.solve()
                except Exception:          # unknown: not confirmed
                    cache[goal.uid] = False
                s.pop()
            return cache[goal.uid]
        cur = formula
        for _ in range(rounds):
            reps = {}
            for n in toposort([cur]):
                if n.op is not Op.LOAD or n.args[0].uid not in by_array or _has(n.args[1], (Op.LOAD, Op.APPLY)):
                    continue
                addr = n.args[1]
                x = num(addr)
                if x is None:
                    continue
                for b, d, v in by_array[n.args[0].uid]:
                    if _has(b, (Op.LOAD, Op.APPLY)) or num(b) != x:
                        continue
                    if implied(land(addr.eq(b), d)):
                        reps[n.uid] = v
                        out.nodes.append(n)          # keep the node alive: its uid names it
                        break
            if not reps:
                break
            out.update(reps)
            cur = replace_nodes([cur], reps)[0]
            if orders:               # a word read back from its bytes: its fields (resolve_loads does the same)
                cur = concat_normal(cur)
                out.nodes.append(cur)
    return out


def _model(ctx: Expr, solver: str) -> dict | None:
    """One assignment of the variables of ``ctx`` satisfying it (unmentioned ones 0), or None."""
    from ila.expr import bool_const, bv_const
    vs = [n for n in toposort([ctx]) if n.op is Op.VAR and not n.sort.is_mem]
    enc = SmtEncoder()
    want = [enc.encode(v) for v in vs]
    res = smt_check(enc, enc.encode_all([ctx]), solver=solver, timeout=5.0, want=want)
    if res.status != "sat":
        return None
    out = {}
    for v, w in zip(vs, want):
        val = res.values.get(w, 0)
        out[v] = bool_const(bool(val)) if v.sort.is_bool else bv_const(int(val), v.sort.width)
    return out


def _pins(inv: Expr, sysm) -> dict:
    """Loop variables the invariant pins to a value free of loop variables (``v = e`` conjuncts
    of variables no instruction updates): substituted in the clauses (an equivalence under the
    invariant), which folds configuration arithmetic."""
    loop = {v.uid for v in sysm.vars}
    pins = {}
    for c in _conjuncts(inv):
        if c.op is Op.EQ and c.args[0].op is Op.VAR and c.args[0].uid in loop and c.args[0] not in pins:
            if not any(n.op is Op.VAR and n.uid in loop for n in toposort([c.args[1]])):
                if all(nx.get(c.args[0], c.args[0]) is c.args[0] for nx in sysm.next_by_instr):
                    pins[c.args[0]] = c.args[1]
    return pins


def _emit(directory: str, name: str, formula: Expr, inline_ufs: bool) -> None:
    """Write the SMT-LIB2 problem of a clause's negation (abstracted as :func:`_valid` does)."""
    import os
    from ila.smt import to_smtlib2
    os.makedirs(directory, exist_ok=True)
    goal, extra = _abstract_products(Rewriter().one(~formula))
    enc = SmtEncoder(inline_ufs=inline_ufs)
    fs = enc.encode_all([goal] + axiom_instances([goal], inline_ufs=inline_ufs) + extra)
    safe = "".join(ch if ch.isalnum() else "_" for ch in name)[:120]
    with open(os.path.join(directory, f"{safe}.smt2"), "w") as fh:
        fh.write(to_smtlib2(enc, fs))


def _conjuncts(e: Expr) -> list[Expr]:
    """The conjuncts of ``e``, left to right (iterative: :func:`ila.expr.land` nests to the left,
    and an inferred invariant may have thousands of conjuncts)."""
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if x.op is Op.AND:
            stack.extend(reversed(x.args))
        else:
            out.append(x)
    return out


# ----------------------------------------------------------------------------- the stream walk
class _View:
    """What a phase's callables see (``P``)."""

    def __init__(self, checker: "_Checker", side: str, phase: Phase, sys: PhaseSystem | None, start: dict):
        self.checker, self.side_name, self.phase, self.sys, self.start = checker, side, phase, sys, start

    def state(self, name: str) -> Expr:
        return self.checker.sides[self.side_name].ila.state(name)

    def array(self, memory: str, phase: str | None = None) -> Expr:
        return self.checker.array(self.side_name, phase or self.phase.name, memory)

    @property
    def cells(self):
        return self.sys.cells


class _Final:
    def __init__(self, cells: dict):
        self._cells = cells

    def cell(self, phase: str, k: int = 0) -> Expr:
        return self._cells[phase][k]


def _key_states(ila) -> list:
    """States the top-level valid and decodes read."""
    names = set()
    for e in [ila.valid] + [i.get_decode() for i in ila.instrs]:
        names |= {v.name for v in toposort([e]) if v.op is Op.VAR and v.payload[0] == "state"}
    return sorted(names)


def _key_inputs(ila) -> list:
    """Inputs the top-level valid and decodes read (the control inputs)."""
    names = set()
    for e in [ila.valid] + [i.get_decode() for i in ila.instrs]:
        names |= {v.name for v in toposort([e]) if v.op is Op.VAR and v.payload[0] == "input"}
    return sorted(names)


class _Walk:
    """The top-level walk of one side's stream (module docstring, step 1)."""

    def __init__(self, side, phases: list[Phase], solver: str, timeout: float | None, keep: frozenset = frozenset(),
                 assume: Expr = TRUE):
        self.side, self.ila = side, side.ila
        self.solver, self.timeout, self.keep, self.assume = solver, timeout, keep, assume
        ila = self.ila
        self.keys = _key_inputs(ila)
        self.key_states = _key_states(ila)
        self.fired: list = []
        cache: dict = {}
        by_cmd = {p.command: p for p in phases}
        if len(by_cmd) != len(phases):
            raise PhaseError(f"{side.name}: two phases start at the same command")
        child_written = sorted({s.name for c in ila.walk() if c is not ila for i in c.instrs for s in i.updates
                                if not s.sort.is_mem})
        self.mem_writes: dict[str, list[int]] = {}
        self.starts: dict[str, dict] = {}
        self.rows: list[Row] = []
        state = {v.name: symbol(f"{side.name}.init.{v.name}", v.sort) for v in ila.all_states()}
        for k, v in reset_state(ila).items():
            state[k] = _const(v, ila.state(k).sort)
        for k, v in side.init.items():
            if not ila.state(k).sort.is_mem:
                state[k] = _const(v, ila.state(k).sort)
        exits: list[Expr] = []
        loop_ended = False
        self.host_reads: list = []          # (position, [(memory, address), ...])
        self.resets: list = []
        self.states_at: dict[int, dict] = {}   # scalar state before each command that writes memory and state
        for n, cmd in enumerate(side.commands):
            h = side.host(cmd) if side.host is not None else None
            if h is not None:
                self.fired.append(None)
                if h[0] == "read":
                    self.host_reads.append((n, [(m, int(a)) for m, a in h[1]]))
                elif h[0] == "reset":
                    self.resets.append(n)
                    for v in ila.all_states():
                        if v.sort.is_mem:
                            self.mem_writes.setdefault(v.name, []).append(n)
                    state = {v.name: symbol(f"{side.name}.reset{n}.{v.name}", v.sort) for v in ila.all_states()}
                    for k, v in reset_state(ila).items():
                        state[k] = _const(v, ila.state(k).sort)
                    loop_ended, exits = False, []
                else:
                    raise PhaseError(f"{side.name}: command {n}: unknown host command kind {h[0]!r}")
                continue
            key = tuple(cmd.get(k, 0) for k in self.keys) + tuple(state[k] for k in self.key_states)
            if any(isinstance(v, Expr) and not v.is_const for v in key[:len(self.keys)]) or \
                    any(not v.is_const for v in key[len(self.keys):]):
                key = None
            else:
                key = tuple(v.payload if isinstance(v, Expr) else v for v in key)
            ins = cache.get(key) if key is not None else None
            if ins is None:
                ins = self._decode_const(cmd, state) or self._decode(cmd, n, state)
                if key is not None:
                    cache[key] = ins
            self.fired.append(ins)
            for s, u in ins.updates.items():
                if s.sort.is_mem and u is not s:
                    self.mem_writes.setdefault(s.name, []).append(n)
            scalar = any(not s.sort.is_mem for s in ins.updates)
            if n in by_cmd:
                state = self._step(ins, cmd, state, n)
                p = by_cmd[n]
                self.starts[p.name] = dict(state)
                fresh = {name: symbol(f"{side.name}.after.{p.name}.{name}", ila.state(name).sort) for name in child_written}
                exits.append(~Rewriter({ila.state(k): v for k, v in {**state, **fresh}.items()}).one(self._enabled()))
                state = {**state, **fresh}
                loop_ended = True
            elif scalar:
                if any(s.sort.is_mem and u is not s for s, u in ins.updates.items()):
                    self.states_at[n] = state
                state = self._step(ins, cmd, state, n)
                en = Rewriter({ila.state(k): v for k, v in state.items()}).one(self._enabled())
                if en is not FALSE:
                    if not loop_ended:
                        raise PhaseError(f"{side.name}: command {n} ({ins.name}) starts a child loop that no phase "
                                         f"declares")
                    st, secs, why = _valid(implies(land(assume, *exits), ~en), solver=solver, timeout=timeout, keep=keep)
                    self.rows.append(Row(f"{side.name} stream: command {n} ({ins.name}) starts no loop", st, secs, why))
        missing = [p.name for p in phases if p.name not in self.starts]
        if missing:
            raise PhaseError(f"{side.name}: phases {missing} name commands beyond the stream")

    def _inputs(self, cmd: dict) -> dict:
        from ila.unroll import _inputs_for
        ila = self.ila
        return _inputs_for(ila, {**{v.name: 0 for v in ila.all_inputs()}, **cmd}, 0, "walk.")

    def _step(self, ins, cmd: dict, state: dict, n: int) -> dict:
        """One top-level instruction (children not run): the model's updates, substituted."""
        from ila.unroll import _env
        ila = self.ila
        rw = Rewriter(_env(ila, state, self._inputs(cmd)))
        new = dict(state)
        names = [s.name for s in ins.updates]
        new.update(zip(names, rw(list(ins.updates.values()))))
        return new

    def _enabled(self) -> Expr:
        ila = self.ila
        return lor(*[land(i.host.valid, i.get_decode()) for c in ila.walk() if c is not ila for i in c.instrs])

    DECODE_BUG = None           # seeded bug of _decode_const ("shifted": decodes paired with the wrong instructions)

    def _decode_const(self, cmd: dict, state: dict):
        """The top-level instruction ``cmd`` fires, decided by the compiled valid and decodes (the
        semantics table lowered to numpy, as the simulator evaluates them) when every input and
        state they read is a constant, the command names only inputs of the ILA, each value fits
        its input, the valid holds and exactly one decode holds; else None, and :meth:`_decode`
        (rewriting, with its errors) decides."""
        import numpy as np
        from ila.compile_np import compile_exprs
        from ila.walk import variables
        ila = self.ila
        if getattr(self, "_dec", None) is None:
            exprs = [ila.valid] + [i.get_decode() for i in ila.instrs]
            inputs = {v.name: v for v in ila.all_inputs()}
            states = {v.name for v in ila.all_states()}
            read = variables(exprs)
            self._dec = (compile_exprs(exprs, vectorize=False, name=f"walk_decodes_{ila.name}"), inputs,
                         [v for v in read if v.name in inputs and inputs[v.name] is v],
                         [v.name for v in read if v.name in states and not (v.name in inputs and inputs[v.name] is v)])
        fn, inputs, ins_read, st_read = self._dec
        if any(k not in inputs for k in cmd):
            return None
        I = {}
        for v in ins_read:
            x = cmd.get(v.name, 0)
            if isinstance(x, Expr):
                if x.op is not Op.CONST:
                    return None
                x = x.payload
            if v.sort.is_bool:
                if x not in (0, 1):
                    return None
                x = bool(x)
            elif isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < (1 << v.sort.width):
                return None
            I[v.name] = int(x) if not v.sort.is_bool else x
        S = {}
        for k in st_read:
            x = state[k]
            if not isinstance(x, Expr) or x.op is not Op.CONST:
                return None
            S[k] = x.payload
        with np.errstate(over="ignore"):
            vals = fn(S, I)
        if not vals[0]:
            return None
        instrs = ila.instrs[1:] + ila.instrs[:1] if self.DECODE_BUG == "shifted" else ila.instrs
        fired = [i for i, d in zip(instrs, vals[1:]) if d]
        return fired[0] if len(fired) == 1 else None

    def _decided(self, e: Expr) -> Expr:
        """``e`` (Bool) as TRUE or FALSE when the proof's size side conditions (``assume``, an
        all-sizes proof's) imply it or its negation, else ``e``: a command's fields are terms of
        the size symbols there."""
        if e is TRUE or e is FALSE or self.assume is TRUE:
            return e
        for want, out in ((e, TRUE), (~e, FALSE)):
            st, _, _ = _valid(implies(self.assume, want), solver=self.solver, timeout=self.timeout or 20.0,
                              keep=self.keep)
            if st is Status.HOLDS:
                return out
        return e

    def _decode(self, cmd: dict, n: int, state: dict):
        from ila.unroll import _env
        ila = self.ila
        rw = Rewriter(_env(ila, state, self._inputs(cmd)))
        if self._decided(rw.one(ila.valid)) is not TRUE:
            raise PhaseError(f"{self.side.name}: command {n} is not valid for {ila.name}: {cmd}")
        fired = []
        for i in ila.instrs:
            d = self._decided(rw.one(i.get_decode()))
            if d is TRUE:
                fired.append(i)
            elif d is not FALSE:
                msg = f"{self.side.name}: the decode of {i.name} at command {n} depends on symbolic data or state"
                claims = [implies(self.assume, d), implies(self.assume, ~d)] if self.assume is not TRUE else []
                if claims and all(_valid(c, solver=self.solver, timeout=self.timeout or 20.0, keep=self.keep)[0]
                                  is Status.FAILS for c in claims):
                    raise UndecidedDecode(f"{msg}: it holds at some sizes the side conditions allow and not at "
                                          f"others", claims)
                raise PhaseError(f"{msg}: {d.short()[:200]}")
        if len(fired) != 1:
            raise PhaseError(f"{self.side.name}: command {n} fires {len(fired)} top-level instructions")
        return fired[0]


# ----------------------------------------------------------------------------- lemmas
class _Images:
    """The memories written by a side's commands, as {address: term} per memory, built by
    substituting each command into its instruction's update terms (loads from a memory read its
    image; the scalar states are the walk's, which data transfers do not change)."""

    def __init__(self, walk: _Walk):
        self.walk = walk
        self.images: dict[str, dict] = {}
        self.upto = 0
        self._plans: dict[int, list] = {}

    def _plan(self, ins):
        plan = self._plans.get(id(ins))
        if plan is None:
            plan = []
            for s, u in ins.updates.items():
                if not s.sort.is_mem or u is s:
                    continue
                chain, m = [], u
                while m.op is Op.STORE:
                    chain.append((m.args[1], m.args[2]))
                    m = m.args[0]
                if m is not s:
                    raise PhaseError(f"the update of {s.name} by {ins.name} is not a chain of stores on it")
                plan.append((s, list(reversed(chain))))
            self._plans[id(ins)] = plan
        return plan

    def _fast(self, ins, plan):
        """(input names, [(memory, [(address fn, data fn)])]) compiled from the plan's terms when
        they use only inputs and the operators :func:`_compile_term` takes; else None."""
        key = ("fast", id(ins))
        if key not in self._plans:
            try:
                names = sorted({v.name for v in self._used(ins, plan)})
                out = [(s, [(_compile_term(a, True), _compile_term(d, False)) for a, d in chain]) for s, chain in plan]
                self._plans[key] = (names, out)
            except _NoTags:
                self._plans[key] = None
        return self._plans[key]

    def _used(self, ins, plan) -> list:
        key = ("used", id(ins))
        used = self._plans.get(key)
        if used is None:
            used = self._plans[key] = [v for v in toposort([e for _, chain in plan for pair in chain for e in pair])
                                       if v.op is Op.VAR and v.payload[0] == "input"]
        return used

    def run(self, upto: int) -> None:
        walk = self.walk
        ila = walk.ila
        for n in range(self.upto, upto):
            ins, cmd = walk.fired[n], walk.side.commands[n]
            if ins is None:                      # a host command: a reset clears every memory
                if n in walk.resets:
                    self.images = {}
                continue
            plan = self._plan(ins)
            if not plan:
                continue
            state = None
            if any(not s.sort.is_mem for s in ins.updates):
                # a transfer that also writes state (e.g. a scratchpad pull that latches its source
                # address): its memory writes are evaluated with the walk's scalar state before it,
                # which must be constant wherever the writes read it; the walk did its state updates
                state = walk.states_at.get(n)
                if state is None:
                    raise PhaseError(f"{walk.side.name}: command {n} ({ins.name}) writes memory and state at a "
                                     "point the walk did not record")
            fast = self._fast(ins, plan) if state is None else None
            if fast is not None:
                vals = {name: cmd.get(name, 0) for name in fast[0]}
                for s, chain in fast[1]:
                    img = self.images.setdefault(s.name, {})
                    for fa, fd in chain:
                        a, d = fa(vals), fd(vals)
                        img[a] = d if isinstance(d, Expr) else _const(d, BvSort(s.sort.data_width))
                continue
            env = {}
            for v in self._used(ins, plan):
                val = cmd.get(v.name, 0)
                env[v] = val if isinstance(val, Expr) else _const(val, v.sort)
            if state is not None:
                for v in toposort([e for _, chain in plan for pair in chain for e in pair]):
                    if v.op is Op.VAR and v.payload[0] == "state" and not v.sort.is_mem:
                        val = state[v.name]
                        if not (isinstance(val, Expr) and val.op is Op.CONST):
                            raise PhaseError(f"{walk.side.name}: command {n} ({ins.name}) writes memory at an address "
                                             f"or with data that depends on state {v.name}, which is not constant there")
                        env[v] = val
            ev = _Eval(env, self.images, ila)
            for s, chain in plan:
                img = self.images.setdefault(s.name, {})
                for a, d in chain:
                    addr = ev(a)
                    if addr.op is not Op.CONST:
                        raise PhaseError(f"{walk.side.name}: command {n} writes {s.name} at a symbolic address")
                    img[addr.payload] = ev(d)
        self.upto = max(self.upto, upto)


def _compile_term(e: Expr, want_int: bool):
    """A function of the command's input values (ints, or terms for data inputs) computing ``e``
    with the semantics of its operators: bit-vector arithmetic on ints (masked to the width), and
    :func:`bits` for an extract of a term. Raises _NoTags for other operators (the caller then
    uses the general evaluator)."""
    w = e.sort.width if e.sort.is_bv else 1
    m = (1 << w) - 1
    if e.op is Op.CONST:
        v = e.payload
        return lambda vals: v
    if e.op is Op.VAR and e.payload[0] == "input":
        name = e.name
        if want_int:
            return lambda vals: _int(vals[name], name)
        return lambda vals: vals[name]
    if e.op in (Op.ADD, Op.SUB, Op.MUL, Op.SHL, Op.LSHR, Op.BVAND, Op.BVOR) and want_int:
        fa, fb = _compile_term(e.args[0], True), _compile_term(e.args[1], True)
        op = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
              Op.SHL: lambda a, b: a << b if b < w else 0, Op.LSHR: lambda a, b: a >> b,
              Op.BVAND: lambda a, b: a & b, Op.BVOR: lambda a, b: a | b}[e.op]
        return lambda vals: op(fa(vals), fb(vals)) & m
    if e.op is Op.ZEXT and want_int:
        fa = _compile_term(e.args[0], True)
        return fa
    if e.op is Op.EXTRACT:
        hi, lo = e.payload
        x, sh = e.args[0], 0
        if x.op is Op.LSHR and x.args[1].op is Op.CONST:
            x, sh = x.args[0], x.args[1].payload
        if hi + sh >= x.sort.width:
            raise _NoTags("extract beyond the width")
        fx = _compile_term(x, False)
        hw = hi - lo + 1

        def ext(vals):
            v = fx(vals)
            if isinstance(v, Expr):
                r = bits(v, hi + sh, lo + sh)
                if want_int:
                    if r.op is not Op.CONST:
                        raise PhaseError("a symbolic value where an address is computed")
                    return r.payload
                return r
            return (int(v) >> (lo + sh)) & ((1 << hw) - 1)
        return ext
    raise _NoTags(f"operator {e.op.name}")


def _int(v, name):
    if isinstance(v, Expr):
        if v.op is not Op.CONST:
            raise PhaseError(f"input {name} is symbolic where an address is computed")
        return v.payload
    return int(v)


def _const(val, sort):
    from ila.expr import bool_const, bv_const
    if sort.is_bool:
        return bool_const(bool(val))
    return bv_const(int(val) & ((1 << sort.width) - 1), sort.width)


class _Eval:
    """Evaluate an update term of one command: inputs (and, for a transfer that also writes state,
    the constant scalar states the walk had before it) from ``env``, loads from the images; any
    other state read is refused."""

    def __init__(self, env: dict, images: dict, ila):
        self.env, self.images, self.ila = env, images, ila
        self.rw = Rewriter()
        self.memo: dict[int, Expr] = {}

    def __call__(self, e: Expr) -> Expr:
        memo = self.memo
        for n in toposort([e]):
            if n.uid in memo or n.sort.is_mem:
                continue
            if n.op is Op.VAR:
                if n not in self.env:
                    raise PhaseError(f"a data transfer reads state {n.name}")
                memo[n.uid] = self.env[n]
            elif n.op is Op.LOAD:
                addr = memo[n.args[1].uid]
                if n.args[0].op is not Op.VAR or addr.op is not Op.CONST:
                    raise PhaseError("a data transfer loads through a computed memory or a symbolic address")
                v = self.images.get(n.args[0].name, {}).get(addr.payload)
                if v is None:
                    raise PhaseError(f"a data transfer reads unwritten {n.args[0].name}[{addr.payload:#x}]")
                memo[n.uid] = v
            elif n.op is Op.EXTRACT:
                memo[n.uid] = bits(memo[n.args[0].uid], n.payload[0], n.payload[1], self.rw)
            elif n.args:
                memo[n.uid] = self.rw.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
            else:
                memo[n.uid] = n
        return memo[e.uid]


def _pieces(e: Expr, memo: dict) -> list:
    """``e`` as its bit pieces, most significant first: [(term, hi, lo)] through concatenations
    and extractions."""
    got = memo.get(e.uid)
    if got is None:
        if e.op is Op.CONCAT:
            got = [p for a in e.args for p in _pieces(a, memo)]
        elif e.op is Op.EXTRACT:
            hi, lo = e.payload
            got, pos = [], e.args[0].sort.width
            for t, h, l in _pieces(e.args[0], memo):       # bits [pos - 1, pos - (h - l + 1)] of the argument
                top, bot = pos - 1, pos - (h - l + 1)
                pos = bot
                if bot > hi or top < lo:
                    continue
                got.append((t, h - (top - min(top, hi)), l + (max(bot, lo) - bot)))
        else:
            got = [(e, e.sort.width - 1, 0)]
        merged = []
        for t, h, l in got:                                # adjacent pieces of one term merge
            if merged and merged[-1][0] is t and merged[-1][2] == h + 1:
                merged[-1] = (t, merged[-1][1], l)
            else:
                merged.append((t, h, l))
        got = memo[e.uid] = merged
    return got


def concat_normal(e: Expr, rw: Rewriter | None = None) -> Expr:
    """``e`` with every extraction of a concatenation (and every concatenation) rebuilt from its bit
    pieces, adjacent pieces of one term merged: an identity of bit-vector arithmetic that turns a
    field read back from the bytes of a word into the field (all-sizes proofs: a micro-op's fields
    from its DRAM bytes)."""
    rw = rw or Rewriter()
    memo: dict = {}
    pieces: dict = {}
    for n in toposort([e]):
        if n.args:
            new = rw.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
            if new.op in (Op.CONCAT, Op.EXTRACT) and new.sort.is_bv:
                parts = [t if (h, l) == (t.sort.width - 1, 0) else rw.build(Op.EXTRACT, BvSort(h - l + 1), (t,), (h, l))
                         for t, h, l in _pieces(new, pieces)]
                out = parts[0]
                for q in parts[1:]:
                    out = rw.build(Op.CONCAT, BvSort(out.sort.width + q.sort.width), (out, q), None)
                new = out
            memo[n.uid] = new
        else:
            memo[n.uid] = n
    return memo[e.uid]


def bits(e: Expr, hi: int, lo: int, rw: Rewriter | None = None) -> Expr:
    """``extract(e, hi, lo)`` simplified through logical right shifts by constants and
    concatenations (identities of bit-vector arithmetic), e.g. a byte of an 8-byte word built by
    concatenating bytes is that byte."""
    rw = rw or Rewriter()
    while True:
        if lo == 0 and hi == e.sort.width - 1:
            return e
        if e.op is Op.LSHR and e.args[1].op is Op.CONST and hi + e.args[1].payload < e.sort.width:
            c = e.args[1].payload
            e, hi, lo = e.args[0], hi + c, lo + c
            continue
        if e.op is Op.CONCAT:
            a, b = e.args
            wb = b.sort.width
            if lo >= wb:
                e, hi, lo = a, hi - wb, lo - wb
                continue
            if hi < wb:
                e = b
                continue
        if e.op is Op.EXTRACT:
            e, hi, lo = e.args[0], hi + e.payload[1], lo + e.payload[1]
            continue
        return rw.build(Op.EXTRACT, BvSort(hi - lo + 1), (e,), (hi, lo))


class _Tags:
    """A region's value at every point of a box, vectorised: per point either a number (``kind``
    0, ``num``) or the data symbol ``data[arrays[arr]][idx]`` (``kind`` 1) under a chain of width
    operations (sign/zero extensions and extracts, innermost first), given per point by its id
    ``cid`` in the check's chain registry (:class:`_Chains`; id 0 is the empty chain)."""

    def __init__(self, kind, arr, idx, num, cid):
        self.kind, self.arr, self.idx, self.num, self.cid = kind, arr, idx, num, cid


class _Chains:
    """Chains of width operations ``((op, payload, result width), ...)`` numbered from 0 (the empty
    chain): two points compare equal exactly when their chains are the same sequence of operations."""

    def __init__(self):
        self.ids: dict[tuple, int] = {(): 0}
        self.chains: list[tuple] = [()]

    def id(self, chain: tuple) -> int:
        k = self.ids.get(chain)
        if k is None:
            k = self.ids[chain] = len(self.chains)
            self.chains.append(chain)
        return k

    def extend(self, cid, link: tuple):
        """Per point, the id of the point's chain followed by ``link``."""
        import numpy as np
        out = np.empty_like(cid)
        for c in np.unique(cid):
            out[cid == c] = self.id(self.chains[int(c)] + (link,))
        return out


class _NoTags(Exception):
    pass


def _width_op(op: Op, payload, src: int, dst: int, v):
    """A width operation on numbers (an object array of non-negative ints of ``src`` bits): the
    bit-vector semantics of SEXT / ZEXT to ``dst`` bits and EXTRACT ``payload = (hi, lo)``."""
    import numpy as np
    if op is Op.ZEXT:
        return v
    if op is Op.SEXT:
        return np.where(v >= (1 << (src - 1)), v + ((1 << dst) - (1 << src)), v)
    hi, lo = payload
    return (v >> lo) & ((1 << (hi - lo + 1)) - 1)


def _tags(e: Expr, env: dict, n: int, data_ids: dict, chains: _Chains) -> _Tags:
    """The :class:`_Tags` of ``e`` over the points (``env``: param name -> array of n values);
    raises _NoTags for a shape it does not vectorise (the caller checks point by point). Width
    operations apply per point: to the number where the point's value is a number, appended to
    the chain where it is a data symbol, so a value that mixes both (a word padded with constant
    bytes) is vectorised too."""
    import numpy as np
    from ila.compile_np import evaluate
    memo: dict[int, object] = {}

    def has_data(x):
        return any(m.op is Op.LOAD and m.args[0].uid in data_ids for m in toposort([x]))

    def num(x):
        v = evaluate([x], env)[0]
        v = np.broadcast_to(np.asarray(v), (n,))
        return v

    def go(x) -> _Tags:
        if x.uid in memo:
            return memo[x.uid]
        if not has_data(x):
            v = num(x)
            out = _Tags(np.zeros(n, np.int8), np.zeros(n, np.int64), np.zeros(n, np.int64),
                        np.array([int(a) for a in v], dtype=object), np.zeros(n, np.int64))
        elif x.op is Op.LOAD and x.args[0].uid in data_ids:
            if has_data(x.args[1]):
                raise _NoTags("a data index depends on data")
            out = _Tags(np.ones(n, np.int8), np.full(n, data_ids[x.args[0].uid], np.int64),
                        num(x.args[1]).astype(np.int64), np.zeros(n, dtype=object), np.zeros(n, np.int64))
        elif x.op is Op.ITE:
            c = num(x.args[0]).astype(bool)
            a, b = go(x.args[1]), go(x.args[2])
            out = _Tags(np.where(c, a.kind, b.kind), np.where(c, a.arr, b.arr), np.where(c, a.idx, b.idx),
                        np.where(c, a.num, b.num), np.where(c, a.cid, b.cid))
        elif x.op in (Op.SEXT, Op.ZEXT, Op.EXTRACT) and x.args[0].sort.is_bv:
            a = go(x.args[0])
            sym = a.kind == 1
            link = (x.op, x.payload, x.sort.width)
            out = _Tags(a.kind, a.arr, a.idx,
                        np.where(sym, a.num, _width_op(x.op, x.payload, x.args[0].sort.width, x.sort.width, a.num)),
                        np.where(sym, chains.extend(a.cid, link), a.cid))
        else:
            raise _NoTags(f"operator {x.op.name} over data")
        memo[x.uid] = out
        return out
    return go(e)


def _descriptor(t: Expr, sym_index: dict):
    """An image term as (kind, arr, idx, num, chain): a constant, or a data symbol under width
    operations; None for anything else."""
    chain = []
    x = t
    if x.op is Op.CONST:
        return (0, 0, 0, x.payload, ())
    while x.op in (Op.SEXT, Op.ZEXT, Op.EXTRACT):
        chain.append((x.op, x.payload, x.sort.width))
        x = x.args[0]
    hit = sym_index.get(x.uid)
    if hit is None:
        return (2, -1, -1, 0, ()) if x.op is Op.VAR else None     # another symbol, or an unclassified term
    return (1, hit[0], hit[1], 0, tuple(reversed(chain)))


def check_lemma_fast(lem: Lemma, images: _Images, ila, limit: int = 3) -> list[str] | None:
    """:func:`check_lemma` vectorised over the box (numpy evaluation of the region's domain,
    address, and of its value as a data symbol or a number per point, compared with the image's
    terms classified the same way); None when the region's value has a shape it does not take
    (the caller falls back to the point-by-point check)."""
    import numpy as np
    from ila.compile_np import evaluate
    images.run(lem.at)
    img = images.images.get(lem.region.memory, {})
    r = lem.region
    grids = np.meshgrid(*[np.arange(rg.start, rg.stop, rg.step or 1, dtype=np.uint64) for rg in lem.box], indexing="ij")
    n = grids[0].size if grids else 1
    env = {p.name: g.reshape(-1) for p, g in zip(r.params, grids)}
    data_ids = {a.uid: k for k, a in enumerate(lem.data)}
    arrays = [list(v) for v in lem.data.values()]
    sym_index = {s.uid: (k, i) for k, vals in enumerate(arrays) for i, s in enumerate(vals) if isinstance(s, Expr)}
    chains = _Chains()
    try:
        tags = _tags(r.val, env, n, data_ids, chains)
    except _NoTags:
        return None
    dom = np.broadcast_to(np.asarray(evaluate([r.dom], env)[0]), (n,)).astype(bool)
    addr = np.broadcast_to(np.asarray(evaluate([r.addr], env)[0]), (n,)).astype(np.int64)
    keys = np.array(sorted(img), dtype=np.int64)
    desc = [_descriptor(img[int(a)], sym_index) for a in keys]
    if any(d is None for d in desc):
        return None                     # an image term of another shape: the point-by-point check decides
    dw = ila.state(r.memory).sort.data_width
    unw = (0, 0, 0, lem.unwritten if lem.unwritten is not None else -1, ())
    pos = np.searchsorted(keys, addr)
    found = (pos < len(keys)) & (keys[np.minimum(pos, len(keys) - 1)] == addr) if len(keys) else np.zeros(n, bool)
    kinds = np.array([d[0] for d in desc] + [unw[0]], np.int8)
    arrs = np.array([d[1] for d in desc] + [0], np.int64)
    idxs = np.array([d[2] for d in desc] + [0], np.int64)
    nums = np.array([d[3] for d in desc] + [unw[3]], object)
    cids = np.array([chains.id(d[4]) for d in desc] + [0], np.int64)
    j = np.where(found, pos, len(keys))
    got_sym = kinds[j] == 1
    want_sym = tags.kind == 1
    ok = np.where(want_sym, got_sym & (arrs[j] == tags.arr) & (idxs[j] == tags.idx) & (cids[j] == tags.cid),
                  ~got_sym & (nums[j] == (tags.num.astype(object) % (1 << dw))))
    if lem.unwritten is None:
        ok &= found
    bad = np.nonzero(dom & ~ok)[0]
    out = []
    for k in bad[:limit]:
        point = tuple(int(env[p.name][k]) for p in r.params)
        t = img.get(int(addr[k]))
        out.append(f"{lem.name}: {r.memory}[{int(addr[k]):#x}] (point {point}) holds "
                   f"{t.short() if t is not None else 'the unwritten value'}, not the declared value")
    return out


def check_lemma(lem: Lemma, images: _Images, ila, limit: int = 3) -> list[str]:
    """The violations of ``lem`` (empty: it holds at every point of its box)."""
    fast = check_lemma_fast(lem, images, ila, limit)
    if fast is not None:
        return fast
    return check_lemma_slow(lem, images, ila, limit)


def check_lemma_slow(lem: Lemma, images: _Images, ila, limit: int = 3) -> list[str]:
    """The violations of ``lem``, point by point (symbolic substitution at each point)."""
    import itertools
    from ila.expr import bv_const
    images.run(lem.at)
    img = images.images.get(lem.region.memory, {})
    r = lem.region
    dw = ila.state(r.memory).sort.data_width
    data = {a.uid: list(v) for a, v in lem.data.items()}
    bad = []
    rw_cache = Rewriter()

    def subst(e: Expr) -> Expr:
        memo = {}
        for n in toposort([e]):
            if n.op is Op.LOAD and n.args[0].uid in data and memo[n.args[1].uid].op is Op.CONST \
                    and memo[n.args[1].uid].payload < len(data[n.args[0].uid]):
                memo[n.uid] = data[n.args[0].uid][memo[n.args[1].uid].payload]
            elif n.args:
                memo[n.uid] = rw_cache.build(n.op, n.sort, tuple(memo[a.uid] for a in n.args), n.payload)
            else:
                memo[n.uid] = env.get(n.uid, n)
        return memo[e.uid]
    for point in itertools.product(*lem.box):
        env = {p.uid: bv_const(int(v), p.sort.width) for p, v in zip(r.params, point)}
        d = subst(r.dom)
        if d is FALSE:
            continue
        if d is not TRUE:
            bad.append(f"{lem.name}: the domain at {point} is not decided: {d.short()}")
            break
        a = subst(r.addr)
        want = subst(r.val)
        if a.op is not Op.CONST:
            bad.append(f"{lem.name}: address at {point} is not a constant")
            break
        got = img.get(a.payload)
        if got is None:
            got = bv_const(lem.unwritten, dw) if lem.unwritten is not None else None
        if got is not want:
            bad.append(f"{lem.name}: {r.memory}[{a.payload:#x}] (point {point}) holds "
                       f"{got.short() if got is not None else 'the unknown initial value'}, declared {want.short()}")
            if len(bad) >= limit:
                break
    return bad


# ----------------------------------------------------------------------------- the checker
class _Checker:
    def __init__(self, proof: PhaseProof, *, solver: str, timeout: float | None, inline_ufs: bool):
        self.proof, self.solver, self.timeout, self.inline_ufs = proof, solver, timeout, inline_ufs
        self.keep = frozenset(v.uid for v in proof.size_vars)      # size symbols: their products stay
        self.failed: list[Expr] = []      # the formulas of failing clauses (solved for the sizes by verdict)
        self.oracles: dict = {}           # verify.refine.radix's solvers, per arithmetic context
        self.sides = proof.sides
        self._arrays: dict = {}
        self.array_of: dict[int, tuple] = {}
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.phases = {(p.side, p.name): p for p in proof.phases}
        self.walks: dict[str, _Walk] = {}
        self.resolved: list = []          # the current phase's fact instances (array, addr, dom, val)
        self._live = None                 # instructions a split phase's base part found may fire
        self._live_out = None
        self._warm: dict = {}             # (side, phase) -> (templates, indices kept): Houdini's warm start
        self._warmed = False              # did the last Houdini run start from a previous case's templates?
        import os
        self.emit_dir = os.environ.get("D2A_PHASES_EMIT")      # SMT-LIB of every clause not shown valid

    def array(self, side: str, phase: str, memory: str) -> Expr:
        from mappings.phases import array
        key = (side, phase, memory)
        a = self._arrays.get(key)
        if a is None:
            a = self._arrays[key] = array(side, phase, memory, self.sides[side].ila.state(memory).sort)
            self.array_of[a.uid] = key
        return a

    def key_of(self, a: Expr):
        """(side, phase, memory) of an array variable named by :func:`mappings.phases.array`."""
        key = self.array_of.get(a.uid)
        if key is None and a.op is Op.VAR and "@" in a.name:
            side, rest = a.name.split("@", 1)
            phase, memory = rest.split(".", 1)
            if side in self.sides and (side, phase) in self.phases and self.array(side, phase, memory) is a:
                key = (side, phase, memory)
        return key

    def valid(self, name: str, formula: Expr, facts: list | None = None, reps: dict | None = None,
              cases: tuple = ()) -> Status:
        """Validity of one clause, recorded as a row. ``cases``: Bool terms the clause may be split
        on when the solver leaves it unknown (the invariant's guards, :meth:`_split`)."""
        t0 = time.perf_counter()
        st, why, formula = self.decide(formula, facts, reps, cases)
        self.rows.append(Row(name, st, time.perf_counter() - t0, why))
        if st is Status.FAILS:
            self.failed.append(formula)
        if self.emit_dir and st is not Status.HOLDS:
            _emit(self.emit_dir, name, formula, self.inline_ufs)
        return st

    def decide(self, formula: Expr, facts: list | None = None, reps: dict | None = None,
               cases: tuple = ()) -> tuple[Status, str, Expr]:
        """Validity of one clause through the checker's preparation: reads of fact arrays resolved
        (:func:`resolve_loads`), an all-sizes clause's address arithmetic rewritten
        (:meth:`_arith`), products abstracted but the size symbols' (:func:`_valid`), and a clause
        left unknown split on ``cases`` (:func:`split_cases`). Returns (status, note, the formula
        decided: the failing or undecided case of a split)."""
        if facts:
            formula = resolve_loads(formula, facts, solver=self.solver, reps=reps, orders=bool(self.keep))
        formula = self._arith(formula)
        st, secs, why = _valid(formula, solver=self.solver, timeout=self.timeout or QUERY_TIMEOUT,
                               inline_ufs=self.inline_ufs, keep=self.keep)
        if st is Status.UNKNOWN and cases:
            def check(f):
                return _valid(f, solver=self.solver, timeout=self.timeout or QUERY_TIMEOUT,
                              inline_ufs=self.inline_ufs, keep=self.keep)
            st, why, piece = split_cases(formula, list(cases), check, why)
            formula = piece if piece is not None else formula
        return st, why, formula

    def _arith(self, formula: Expr) -> Expr:
        """An all-sizes proof's clause with its mixed-radix address equalities and comparisons
        rewritten (:func:`verify.refine.radix`, orders included: an equivalence under the clause's
        hypothesis); other proofs' clauses as they are."""
        if not self.keep:
            return formula
        from .radix_orders import radix_orders
        return radix_orders(formula, self.oracles, solver=self.solver, timeout=self.timeout or 20.0)

    def close(self) -> None:
        for orc in self.oracles.values():
            orc.close()
        self.oracles.clear()

    # -- composition ------------------------------------------------------------------
    def _point(self, r: Region) -> float:
        """Where a region holds from: after the loop of its phase (command + 0.5), before a lemma's command."""
        for p in self.proof.phases:
            if p.name == r.by and p.side == r.side:
                return p.command + 0.5
        for lem in self.proof.lemmas:
            if lem.name == r.by and lem.side == r.side:
                return lem.at - 0.5
        if any(a is r for a in self.proof.assumed):
            return -0.5                   # by hypothesis, at the start of the stream (all-sizes proofs)
        raise PhaseError(f"region {r.name} is established by {r.by!r}, which is no phase or lemma of side {r.side}")

    def survives(self, r: Region, side: str, until: float, why: str) -> bool:
        """Region ``r`` still holds at stream position ``until`` (clauses for phases writing its
        memory in between; top-level writes in between refute it)."""
        if r.side != side:
            raise PhaseError(f"{why}: region {r.name} is about side {r.side}, used on {side}")
        start = self._point(r)
        if start > until:
            raise PhaseError(f"{why}: region {r.name} is used before {r.by} establishes it")
        walk = self.walks[side]
        tops = [c for c in walk.mem_writes.get(r.memory, []) if start < c < until]
        if tops:
            self.rows.append(Row(f"{why}: {r.name} survives", Status.FAILS, 0.0,
                                 f"command {tops[0]} writes {r.memory} after {r.by}"))
            return False
        ok = True
        for p in self.proof.phases:
            if p.side != side or not (start < p.command + 0.5 < until):
                continue
            if r.memory in p.also_writes:
                self.rows.append(Row(f"{why}: {r.name} survives {p.name}", Status.FAILS, 0.0,
                                     f"{p.name} may write {r.memory} anywhere"))
                ok = False
            elif r.memory == p.memory:
                if p.write_region is None:
                    st = Status.FAILS
                    self.rows.append(Row(f"{why}: {r.name} survives {p.name}", st, 0.0, f"{p.name} may write anywhere"))
                else:
                    st = self.valid(f"{why}: {r.name} survives {p.name}",
                                    implies(land(self.proof.pre, r.dom), ~p.write_region(r.addr)))
                ok = ok and st is Status.HOLDS
        return ok

    def instances(self, side: str, phase: Phase, facts: list) -> list[Expr]:
        """Region instances as Bool terms, after checking that each region holds of its array."""
        out = []
        checked = set()
        for region, array, q in facts:
            key = self.key_of(array)
            if key is None or key[0] != side or key[2] != region.memory:
                raise PhaseError(f"{phase.name}: an instance of {region.name} on an array that is not "
                                 f"{side}'s {region.memory}")
            arr_phase = self.phases[(side, key[1])]
            if (region.name, key) not in checked:
                checked.add((region.name, key))
                if not self.survives(region, side, arr_phase.command + 0.25, f"{phase.name} uses"):
                    raise _Refuted(f"{region.name} does not hold where {phase.name} uses it")
            sub = Rewriter(dict(zip(region.params, q)))
            self.resolved.append((array, sub.one(region.addr), sub.one(region.dom), sub.one(region.val)))
            out.append(implies(sub.one(region.dom), load(array, sub.one(region.addr)).eq(sub.one(region.val))))
        return out

    # -- one phase --------------------------------------------------------------------------
    def phase(self, phase: Phase) -> tuple[Status, list, Expr]:
        """Check one phase; returns (status, its final tracked cells, its post-condition over them)."""
        if phase.split is None:
            st, sysm, _, post = self._phase(phase, "")
            return st, sysm.cells, post
        if phase.establishes is not None:
            raise PhaseError(f"{phase.name}: a phase that establishes a region cannot be split")
        import dataclasses
        from ila.expr import bv_const
        param, values = phase.split
        values = list(values)
        worst = self.valid(f"{phase.side}.{phase.name}: the cases cover the tracked cells",
                           implies(land(self.proof.pre, phase.pre), lor(*[param.eq(v) for v in values])))
        mem = self.sides[phase.side].ila.state(phase.memory)
        outs = [symbol(f"out.{phase.side}.{phase.name}.{k}", BvSort(mem.sort.data_width)) for k in range(len(phase.addrs))]
        posts = []
        whole = phase.invariant is None          # inferred invariants: everything per case
        if not whole:
            st, sysm0, _, post0 = self._phase(dataclasses.replace(phase, split=None), "", "base")
            worst = worst.worst(st)
            self._live = self._live_out
        for v in values:
            sub = Rewriter({param: bv_const(int(v), param.sort.width)})

            def one(f, sub=sub):
                return None if f is None else (lambda P: None if (r := f(P)) is None else sub.one(r))

            def many(f, sub=sub):
                return None if f is None else (lambda P: [sub.one(e) for e in f(P)])

            def facts(P, sub=sub):
                return [(r, a, tuple(sub.one(x) for x in q)) for r, a, q in phase.facts(P)]
            case = dataclasses.replace(phase, addrs=[sub.one(a) for a in phase.addrs], pre=sub.one(phase.pre),
                                       facts=facts, axioms=many(phase.axioms), invariant=one(phase.invariant),
                                       candidates=many(phase.candidates), post=one(phase.post), split=None)
            marks = len(self.rows), len(self.failed), len(self.notes)
            self._warmed = False
            st, sysm, _, post = self._phase(case, f"[{param.name}={v}]", "all" if whole else "writers")
            if st is not Status.HOLDS and self._warmed:
                # what the previous case dropped may be what this case needs (a template another
                # lane's concrete runs falsify): the failed attempt's rows are discarded and the case
                # is checked again from all the templates, the result standing as it comes
                del self.rows[marks[0]:], self.failed[marks[1]:], self.notes[marks[2]:]
                self._warm.pop((phase.side, phase.name), None)
                st, sysm, _, post = self._phase(case, f"[{param.name}={v}]", "all" if whole else "writers")
                self.notes.append(f"{phase.side}.{phase.name}[{param.name}={v}]: checked again from all the "
                                  f"templates (started from the previous case's, a clause did not hold)")
            worst = worst.worst(st)
            if whole:
                posts.append(implies(param.eq(v), Rewriter(dict(zip(sysm.cells, outs))).one(post)))
        self._live = None
        if not whole:
            posts = [Rewriter(dict(zip(sysm0.cells, outs))).one(post0)]
        return worst, outs, land(*posts)

    def _phase(self, phase: Phase, case: str, part: str = "all") -> tuple[Status, PhaseSystem, dict, Expr]:
        """``part``: 'all' clauses, 'base' (all but the consecution of the instructions that write
        the tracked cells), or 'writers' (only those: a split phase proves them per case)."""
        side = self.sides[phase.side]
        ila = side.ila
        start_state = self.walks[phase.side].starts[phase.name]
        kept = {ila.state(m).uid: self.array(phase.side, phase.name, m) for m in phase.reads}
        for m in phase.reads:
            if m == phase.memory or m in phase.also_writes:
                raise PhaseError(f"{phase.name}: {m} is read as an unchanging array and written")
        m0 = self.array(phase.side, phase.name, phase.memory)
        sysm = phase_system(ila, phase, m0, kept, f"{phase.side}.{phase.name}{case}", region_first=bool(self.keep))
        start = {v: start_state[v.name] for v in sysm.states}
        full = {ila.state(k): v for k, v in start_state.items() if not ila.state(k).sort.is_mem}
        start.update({c: load(m0, a) for c, a in zip(sysm.cells, phase.addrs)})
        P = _View(self, phase.side, phase, sysm, start)
        self.resolved = []
        facts = self.instances(phase.side, phase, phase.facts(P))
        fx = list(self.resolved)
        axioms = list(phase.axioms(P))
        hyp = land(self.proof.pre, phase.pre, *facts, *axioms)
        post = phase.post(P)
        conj = [] if post is None else [post]
        if phase.establishes is not None:
            r = phase.establishes
            if tuple(r.params) != tuple(phase.params) or r.dom is not phase.pre or r.addr is not phase.addrs[0] \
                    or r.memory != phase.memory or r.by != phase.name or r.side != phase.side:
                raise PhaseError(f"{phase.name}: the region it establishes must be over its own params, pre, first "
                                 f"tracked address and memory")
            conj.append(sysm.cells[0].eq(r.val))
        post_all = land(*conj)
        inv_f = phase.invariant
        inferred = ""
        fixed = [ila.state(n).eq(v) for n, v in phase.constants.items()]
        if inv_f is None:
            kept_c, inferred = self._houdini(phase, P, sysm, {**full, **start}, hyp, fx)
            inv = land(sysm.consistency(), *fixed, *kept_c)
        else:
            inv = land(sysm.consistency(), *fixed, inv_f(P))
        name = f"{phase.side}.{phase.name}{case}"
        worst = Status.HOLDS
        at_start = Rewriter({**full, **start})
        fx0 = [tuple(at_start.one(e) for e in f) for f in fx]
        base_part = part in ("all", "base")
        if base_part:
            worst = worst.worst(self.valid(f"{name}: initiation", implies(at_start.one(hyp), at_start.one(inv)), fx0))
        pins = _pins(inv, sysm)
        pin = Rewriter(pins)
        pin_eqs = land(*[v.eq(e) for v, e in pins.items()])

        def pinned(f):
            return implies(pin_eqs, pin.one(f))
        live = []
        for k, (iname, f) in enumerate(sysm.fires):
            if self._live is not None and iname not in self._live:
                continue                         # shown never to fire by the split phase's base part
            if Rewriter().one(pin.one(land(inv, f))) is FALSE:
                continue
            st0, _, _ = _valid(pinned(implies(inv, ~f)), solver=self.solver, timeout=5.0, abstract=False)
            if st0 is not Status.HOLDS:          # the instruction may fire under the invariant
                live.append((k, f))
        if part == "base":
            self._live_out = {sysm.fires[k][0] for k, _ in live}
        forbidden = [f for k, f in live if sysm.forbidden[k]]
        if forbidden and base_part:
            names = sorted({m for k, _ in live for m in sysm.forbidden[k]})
            worst = worst.worst(self.valid(f"{name}: no instruction writing {', '.join(names)} fires",
                                           pinned(implies(land(hyp, inv), ~lor(*forbidden)))))
        pairs = [implies(land(fi, fj), FALSE) for a, (ki, fi) in enumerate(live) for kj, fj in live[a + 1:]]
        if pairs and base_part:
            st0, secs0, _ = _valid(pinned(implies(inv, land(*pairs))), solver=self.solver, timeout=self.timeout or 20.0,
                                   keep=self.keep)
            if st0 is Status.HOLDS:
                self.rows.append(Row(f"{name}: the instructions exclude each other", st0, secs0))
            else:
                worst = worst.worst(self.valid(f"{name}: the instructions exclude each other",
                                               pinned(implies(land(hyp, inv), land(*pairs)))))
        for k, _ in live:
            (iname, fire), nxt, st = sysm.fires[k], sysm.next_by_instr[k], sysm.stores[k]
            if sysm.forbidden[k]:
                continue
            writes_cells = any(nxt[c] is not c for c in sysm.cells)
            base = land(hyp, inv, fire)
            # the frame (where the loop writes) does not depend on the tracked cell: checked once, in
            # the unsplit part, for every instruction
            if st and phase.write_region is not None and part != "writers":
                worst = worst.worst(self.valid(f"{name}: {iname} writes {phase.memory} inside its region",
                                               pinned(implies(base, land(*[phase.write_region(a) for a in st])))))
            if (part == "base" and writes_cells) or (part == "writers" and not writes_cells):
                continue
            rw = Rewriter(nxt)
            fxp = [tuple(pin.one(e) for e in f) for f in fx]
            whole = pinned(implies(base, rw.one(inv)))
            t1 = time.perf_counter()
            reps = resolution(whole, fxp, solver=self.solver, orders=bool(self.keep))
            conj = _conjuncts(inv)
            if self.keep and inv_f is None:
                # all sizes, an inferred invariant (Houdini's fixpoint, often thousands of conjuncts):
                # at once first, then halves of what stays undecided, down to single conjuncts
                rel = list(phase.candidates(P)) if phase.candidates else []
                worst = worst.worst(self._consecution_groups(name, iname, conj, base, rw, pinned, pin, fxp, reps,
                                                             [c.args[0] for c in rel if c.op is Op.IMPLIES]))
                continue
            if self.keep:
                stt = Status.UNKNOWN  # all sizes: a supplied invariant at once rarely goes through; per conjunct
            else:
                stt, secs, why = _valid(resolve_loads(whole, fxp, reps=reps), solver=self.solver,
                                        timeout=min(self.timeout or 20.0, 20.0), inline_ufs=self.inline_ufs)
            if stt is Status.HOLDS:
                self.rows.append(Row(f"{name}: consecution [{iname}]", stt, time.perf_counter() - t1))
                continue
            guards = [c.args[0] for c in conj if c.op is Op.IMPLIES]
            for j, c in enumerate(conj):
                # a split tries the conjunct's own guard first (in the pre-state), then the others
                own = [c.args[0]] if c.op is Op.IMPLIES else []
                cases = tuple(pin.one(g) for g in own + [g for g in guards if not any(g is o for o in own)])
                worst = worst.worst(self.valid(f"{name}: consecution [{iname}] #{j}", pinned(implies(base, rw.one(c))),
                                               fxp, reps, cases=cases))
        if base_part:
            worst = worst.worst(self.valid(f"{name}: exit", pinned(implies(land(hyp, inv, ~sysm.enabled), post_all)),
                                           [tuple(pin.one(e) for e in f) for f in fx]))
        if inferred:
            self.notes.append(inferred)
        loopvars = {v.uid for v in sysm.states}
        if any(n.op is Op.VAR and n.uid in loopvars for n in toposort([post_all])):
            raise PhaseError(f"{phase.name}: the post-condition reads loop state; it may read the cells and parameters only")
        return worst, sysm, start, post_all

    def _consecution_groups(self, name: str, iname: str, conj: list, base: Expr, rw, pinned, pin, fxp: list,
                            reps, rel_guards: list) -> Status:
        """Consecution of an inferred invariant's conjuncts ``conj`` under instruction ``iname``: a
        group of conjuncts at once (one row when it holds); a group left unknown or failing is
        halved, down to single conjuncts, which are decided as a supplied invariant's are (split on
        their own guard, then on the relational candidates' guards ``rel_guards``)."""
        worst = Status.HOLDS
        pending = [(0, len(conj))]
        while pending:
            lo, hi = pending.pop()
            label = f"{name}: consecution [{iname}] #{lo}" + (f"..{hi - 1}" if hi - lo > 1 else "")
            if hi - lo == 1:
                c = conj[lo]
                own = [c.args[0]] if c.op is Op.IMPLIES else []
                seen, cases = set(), []
                for g in own + rel_guards:
                    if g.uid not in seen:
                        seen.add(g.uid)
                        cases.append(pin.one(g))
                worst = worst.worst(self.valid(label, pinned(implies(base, rw.one(c))), fxp, reps, cases=tuple(cases)))
                continue
            t0 = time.perf_counter()
            st, why, _ = self.decide(pinned(implies(base, rw.one(land(*conj[lo:hi])))), fxp, reps)
            if st is Status.HOLDS:
                self.rows.append(Row(label, st, time.perf_counter() - t0, why))
            else:
                mid = (lo + hi) // 2
                pending += [(mid, hi), (lo, mid)]
        return worst

    def _sample_templates(self, phase: Phase, sysm: PhaseSystem, start: dict, cands: list) -> tuple[set, dict]:
        """The uids of the template candidates ``cands`` that some concrete run of the phase's loop
        falsifies, and the runs' statistics (:func:`verify.houdini.sample_filter`: parameters drawn
        under the proof's and the phase's preconditions, sizes within ``small_sizes``, the arrays
        the loop reads and the functions it applies given pseudo-random contents). The runs ignore
        the phase's facts and axioms, so a dropped candidate might have held under them: dropping
        only weakens Houdini's answer (the kept invariant is checked clause by clause anyway), and
        the relational candidates, the ones that speak of the data, are never passed here."""
        from types import SimpleNamespace
        from .houdini import loads_as_functions, sample_filter
        if not cands:
            return set(), {}
        keys = list(start)
        order = list(sysm.next)
        written = [[(v, u[v]) for v in u] for u in sysm.next_by_instr]
        roots = ([land(self.proof.pre, phase.pre), sysm.enabled] + [start[k] for k in keys]
                 + [sysm.next[v] for v in order] + [e for w in written for _, e in w] + list(cands))
        out = loads_as_functions(roots)
        if out is None:
            return set(), {}
        it = iter(out)
        pre, enabled = next(it), next(it)
        st = {k: next(it) for k in keys}
        nxt = {v: next(it) for v in order}
        per = [{v: next(it) for v, _ in w} for w in written]
        cs = list(it)
        loop = SimpleNamespace(vars=sysm.vars, states=sysm.states, havocs=sysm.havocs, enabled=enabled, next=nxt,
                               next_by_instr=per)
        spec = SimpleNamespace(pre=pre, size_vars=getattr(self.proof, "size_vars", None) or [],
                               small_sizes=getattr(self.proof, "small_sizes", None) or [])
        _, dropped, stats = sample_filter(spec, SimpleNamespace(cell_init=[]), loop, st, cs)
        bad = {n.uid for n in dropped}
        return {c.uid for n, c in zip(cs, cands) if n.uid in bad}, stats

    def _houdini(self, phase: Phase, P: _View, sysm: PhaseSystem, start: dict, hyp: Expr,
                 facts: list) -> tuple[list, str]:
        """Houdini over the generic templates and the phase's relational candidates: the largest
        subset that holds at the start and is preserved by every instruction (under the phase's
        hypothesis ``hyp``). One query per round asks for a model falsifying some candidate's image
        (its data products abstracted; the size symbols' kept); the candidates it falsifies are
        dropped. The model is of an abstraction (no facts about the assumed regions, data products
        uninterpreted), so a relational candidate it falsifies is first re-checked alone through the
        checker's preparation (:meth:`decide`: the facts ``facts``, pins, address arithmetic, the
        guard split) and kept for the round if that shows it holds. A query the solver leaves
        unknown is split in halves (a half shown valid keeps all its candidates), down to single
        candidates, which are decided through the preparation. Dropping is always sound (the
        invariant kept is checked by the phase's clauses afterwards); what the abstraction loses
        is completeness only."""
        from .templates import loop_candidates
        t0 = time.perf_counter()
        rel = list(phase.candidates(P)) if phase.candidates else []
        templates = loop_candidates(sysm, start)
        # the cases of a split phase share their templates (same loop, one parameter fixed): a case
        # starts from the templates the previous case kept (any start set is sound; what the
        # previous case dropped may be lost to this one)
        warm = self._warm.get((phase.side, phase.name))
        start_from = [templates[k] for k in warm[1]] if warm and warm[0] == len(templates) else templates
        self._warmed = start_from is not templates
        seen, cands = set(), []
        for c in start_from + rel:
            if c.uid not in seen:
                seen.add(c.uid)
                cands.append(c)
        rel_ids = {c.uid for c in rel}
        n0, queries, confirmed_n = len({c.uid for c in templates + rel}), 0, 0
        gone, sampled = self._sample_templates(phase, sysm, start, [c for c in cands if c.uid not in rel_ids])
        cands = [c for c in cands if c.uid not in gone]
        cons = sysm.consistency()
        limit = min(self.timeout or 30.0, 30.0)
        guards = [c.args[0] for c in rel if c.op is Op.IMPLIES]

        def model_of(h: Expr, imgs: list) -> tuple[str, list]:
            """('unsat' | 'sat' | 'unknown', the indices of the images the model falsifies)."""
            nonlocal queries
            queries += 1
            goal = Rewriter().one(land(h, ~land(*imgs)))
            if goal is FALSE:
                return "unsat", []
            if self.keep:          # one Bool per image, so the model reads the abstracted images
                names = [symbol(f"houdini.{k}", BOOL) for k in range(len(imgs))]
                goal, extra = _abstract_products(land(h, ~land(*names), *[b.eq(i) for b, i in zip(names, imgs)]),
                                                 self.keep)
            else:
                names, extra = imgs, []
            enc = SmtEncoder(inline_ufs=self.inline_ufs)
            want = [enc.encode(i) for i in names]
            fs = enc.encode_all([goal] + extra + axiom_instances([goal], inline_ufs=self.inline_ufs))
            # z3: the bit-blasting tactic (several times faster on these queries than the default
            # incremental solver, which internalises the whole hypothesis at every query); the
            # default solver where the tactic gives up before the time limit (after a timeout it
            # is no better: measured on the GEMM loop's pruning queries)
            res = _check_ackermann(enc, fs, timeout=limit, want=want) if self.solver == "z3" else None
            if res is None or res.status == "unknown" and res.seconds < 0.9 * limit:
                res = smt_check(enc, fs, solver=self.solver, timeout=limit, want=want)
            if res.status != "sat":
                return ("unsat" if res.status == "unsat" else "unknown"), []
            bad = [k for k, w in enumerate(want) if not res.values.get(w, True)]
            if not bad:
                raise PhaseError("Houdini: a model falsifies no candidate")
            return "sat", bad

        def holds_alone(h: Expr, img: Expr, fxs: list, pinned: bool) -> bool:
            nonlocal queries, confirmed_n
            queries += 1
            pins = _pins(land(*cands), sysm) if pinned else {}   # pinned: h assumes the candidates
            pin = Rewriter(pins)
            f = implies(land(*[v.eq(e) for v, e in pins.items()]), pin.one(implies(h, img)))
            fs = [tuple(pin.one(e) for e in x) for x in fxs]
            st, _, _ = self.decide(f, fs, cases=tuple(pin.one(g) for g in guards))
            confirmed_n += st is Status.HOLDS
            return st is Status.HOLDS

        def prune(h: Expr, image, fxs: list, pinned: bool = True) -> bool:
            """Drop the candidates whose image does not follow from ``h``; True if any was dropped."""
            nonlocal cands
            dropped, shown = False, set()        # shown: uids proved to follow from h this round
            pending = [list(cands)]
            while pending:
                alive = {c.uid for c in cands}
                part = [c for c in pending.pop() if c.uid not in shown and c.uid in alive]
                if not part:
                    continue
                status, bad = model_of(h, [image(c) for c in part])
                if status == "unsat":
                    shown.update(c.uid for c in part)
                    continue
                if status == "unknown" and len(part) > 1:
                    pending += [part[:len(part) // 2], part[len(part) // 2:]]
                    continue
                suspects = [part[k] for k in bad] if status == "sat" else part
                gone = set()
                for c in suspects:
                    if c.uid in rel_ids or status == "unknown":
                        if holds_alone(h, image(c), fxs, pinned):
                            shown.add(c.uid)
                            continue
                    gone.add(c.uid)
                if gone:
                    cands = [c for c in cands if c.uid not in gone]
                    dropped = True
                    pending = [list(cands)]       # h shrank with the candidates: start the round again
                else:
                    pending.append(part)
            return dropped
        at_start = Rewriter(start)
        h0 = at_start.one(hyp)
        fx0 = [tuple(at_start.one(e) for e in f) for f in facts]
        while prune(h0, at_start.one, fx0, pinned=False):
            pass
        changed = True
        while changed and cands:
            changed = False
            for (_, fire), nxt in zip(sysm.fires, sysm.next_by_instr):
                if Rewriter().one(land(hyp, fire)) is FALSE:
                    continue
                rw = Rewriter(nxt)
                if prune(land(hyp, cons, *cands, fire), rw.one, facts):
                    changed = True
        lost = [c for c in rel if c not in set(cands)]
        kept = {c.uid for c in cands}
        self._warm[(phase.side, phase.name)] = (len(templates), [k for k, c in enumerate(templates) if c.uid in kept])
        note = (f"{phase.side}.{phase.name}: invariant inferred by Houdini, {len(cands)} of {n0} candidate conjuncts "
                + ("(started from the templates the previous case kept) " if start_from is not templates else "")
                + (f"({len(gone)} dropped by {sampled['lanes']} concrete runs of {sampled['steps']} steps first) "
                   if sampled.get("lanes") else "")
                + f"kept in {time.perf_counter() - t0:.1f} s ({queries} queries"
                + (f", {confirmed_n} relational candidates confirmed alone" if confirmed_n else "") + ")"
                + (f"; {len(lost)} relational candidates not inductive" if lost else ""))
        return cands, note


class _Refuted(Exception):
    pass


def run(proof: PhaseProof, *, solver: str = "z3", timeout: float | None = None, inline_ufs: bool = False,
        only: set | None = None, failed: list | None = None) -> tuple[Status, list[Row], list[str]]:
    """Check ``proof`` (module docstring); ``only``: the piece keys to check (None: all), see
    :func:`pieces`; ``failed``, if given, collects the formulas of the failing clauses. Returns
    (overall status, rows, notes)."""
    ck = _Checker(proof, solver=solver, timeout=timeout, inline_ufs=inline_ufs)
    worst = Status.HOLDS
    if proof.assumed:
        ck.notes.append("assumed at the start of the streams (the declared input placement, proved per shape by "
                        "the fixed-shape proofs' stream lemmas): "
                        + "; ".join(f"{r.side} {r.memory} region {r.name}" for r in proof.assumed))

    def want(key):
        return only is None or key in only
    for name, side in proof.sides.items():
        phases = [p for p in proof.phases if p.side == name]
        t1 = time.perf_counter()
        ck.walks[name] = _Walk(side, phases, solver, timeout, ck.keep, proof.pre if proof.size_vars else TRUE)
        ck.rows.append(Row(f"{name} stream: {len(side.commands)} commands walked, {len(phases)} loops", Status.HOLDS,
                           time.perf_counter() - t1))
        ck.rows += ck.walks[name].rows
    for r in ck.rows:
        worst = worst.worst(r.status)
    images = {name: _Images(ck.walks[name]) for name in proof.sides}
    for lem in proof.lemmas:
        if not want(f"lemma:{lem.name}"):
            continue
        t1 = time.perf_counter()
        bad = check_lemma(lem, images[lem.side], proof.sides[lem.side].ila)
        ck.rows.append(Row(f"lemma {lem.name}", Status.FAILS if bad else Status.HOLDS, time.perf_counter() - t1,
                           "; ".join(bad)))
        worst = worst.worst(ck.rows[-1].status)
        # every point of the domain lies in the enumerated box
        box = land(*[p.ult(len(rg)) & p.uge(rg.start) if rg.start else p.ult(rg.stop) for p, rg in
                     zip(lem.region.params, lem.box)])
        worst = worst.worst(ck.valid(f"lemma {lem.name}: the domain lies in the box",
                                     implies(land(proof.pre, lem.region.dom), box)))
    for name, fn in proof.checks:
        if not want(f"check:{name}"):
            continue
        t1 = time.perf_counter()
        bad = fn()
        ck.rows.append(Row(name, Status.FAILS if bad else Status.HOLDS, time.perf_counter() - t1, "; ".join(bad)))
        worst = worst.worst(ck.rows[-1].status)
    posts = {}
    cells = {}
    for p in proof.phases:
        if not want(f"phase:{p.side}.{p.name}") and not (want("final") and (p.name, 0) in
                                                         {(o[0], 0) for o in proof.outputs}):
            continue
        try:
            st, out_cells, post = ck.phase(p)
        except _Refuted as exc:
            ck.rows.append(Row(f"{p.side}.{p.name}", Status.FAILS, 0.0, str(exc)))
            st, out_cells, post = Status.FAILS, None, None
        if want(f"phase:{p.side}.{p.name}"):
            worst = worst.worst(st)
        posts[p.name] = post
        cells[p.name] = out_cells
    if proof.readback is not None and want("readback"):
        t1 = time.perf_counter()
        bad = check_readback(proof, ck.walks[proof.readback.side])
        ck.rows.append(Row("read-back: every result element is the read of its tracked cell", Status.FAILS if bad
                           else Status.HOLDS, time.perf_counter() - t1, "; ".join(bad)))
        worst = worst.worst(ck.rows[-1].status)
    if want("final"):
        t1 = time.perf_counter()
        outs = []
        for pname, k in proof.outputs:
            p = next(q for q in proof.phases if q.name == pname)
            if cells.get(pname) is None:
                raise PhaseError(f"output phase {pname} was not built")
            outs.append(p)
            later = [q for q in proof.phases if q.side == p.side and q.command > p.command]
            for q in later:
                if p.memory in q.also_writes:
                    ck.rows.append(Row(f"output {pname}[{k}] survives {q.name}", Status.FAILS, 0.0,
                                       f"{q.name} may write {p.memory} anywhere"))
                    worst = Status.FAILS
                elif q.memory == p.memory:
                    wr = q.write_region
                    worst = worst.worst(ck.valid(f"output {pname}[{k}] survives {q.name}",
                                                 implies(land(proof.pre, p.pre), ~wr(p.addrs[k])) if wr is not None
                                                 else FALSE))
            tops = [c for c in ck.walks[p.side].mem_writes.get(p.memory, []) if c > p.command]
            if tops:
                ck.rows.append(Row(f"output {pname}[{k}] survives the stream", Status.FAILS, 0.0,
                                   f"command {tops[0]} writes {p.memory}"))
                worst = Status.FAILS
        F = _Final(cells)
        # each output phase's post-condition holds under its own precondition (a multi-pass program's
        # passes track disjoint cells: their preconditions are never all true together)
        hyp = land(proof.pre, *[implies(p.pre, posts[p.name]) for p in outs], *proof.final_axioms(F))
        worst = worst.worst(ck.valid("final: the output cells agree", implies(hyp, proof.final(F))))
        ck.rows[-1].seconds += time.perf_counter() - t1 - ck.rows[-1].seconds
    if failed is not None:
        failed += ck.failed
    ck.close()
    return worst, ck.rows, ck.notes


def check_readback(proof: PhaseProof, walk: _Walk, limit: int = 3) -> list[str]:
    """The read-back lemma (:class:`mappings.phases.ReadBack`): the driver's read-back function on
    symbolic reads returns, for every result element, the read of the declared output phase's
    tracked cell at the element's params, read after that phase's loop with no write to its memory
    in between (top-level writes, resets, or a later phase that may write the memory). Violations."""
    import numpy as np
    from ila.expr import bv_const
    rb = proof.readback
    ila = proof.sides[rb.side].ila
    reads, origin = [], {}
    for q, cells in walk.host_reads:
        row = []
        for m, a in cells:
            sym = symbol(f"read{q}.{m}[{a:#x}]", BvSort(ila.state(m).sort.data_width))
            origin[sym.uid] = (q, m, a)
            row.append(sym)
        reads.append(np.array(row, dtype=object))
    out = np.asarray(rb.fn(reads), dtype=object).reshape(-1)
    if out.size != rb.count:
        return [f"the read-back returns {out.size} elements, the proof declares {rb.count}"]
    phases = {p.name: p for p in proof.phases if p.side == rb.side}
    bad = []
    for k in range(rb.count):
        pname, vals = rb.outputs(k)
        p = phases[pname]
        a = Rewriter({x: bv_const(int(v), x.sort.width) for x, v in zip(p.params, vals)}).one(p.addrs[0])
        got = origin.get(out[k].uid) if isinstance(out[k], Expr) else None
        if a.op is not Op.CONST or got is None or got[1] != p.memory or got[2] != a.payload:
            bad.append(f"result element {k} is {out[k].short() if isinstance(out[k], Expr) else out[k]!r}, not the "
                       f"read of {p.memory}[{a.payload if a.op is Op.CONST else a.short()}] ({pname} at {tuple(vals)})")
        else:
            q = got[0]
            writes = [c for c in walk.mem_writes.get(p.memory, []) if p.command < c < q]
            later = [r.name for r in proof.phases if r.side == rb.side and p.command < r.command < q
                     and (r.memory == p.memory or p.memory in r.also_writes)]
            if q < p.command or writes or later:
                bad.append(f"result element {k} reads {p.memory}[{a.payload:#x}] at command {q}, not after {pname} "
                           f"with the cell unchanged")
        if len(bad) >= limit:
            break
    return bad


def pieces(proof: PhaseProof) -> list[str]:
    """The keys of the independently checkable pieces of ``proof`` (every run walks the streams):
    one per lemma, check and phase, and the final clause (which rebuilds the output phases)."""
    return ([f"lemma:{lem.name}" for lem in proof.lemmas] + [f"check:{n}" for n, _ in proof.checks]
            + [f"phase:{p.side}.{p.name}" for p in proof.phases] + (["readback"] if proof.readback else []) + ["final"])


def verdict(mapping, proof: PhaseProof, rows: list[Row], notes: list[str], status: Status, *, solver: str,
            seconds: float, shape: dict | None, numerics: str = "exact", failed: list | None = None):
    """The verdict of a checked phase proof (a counterexample is searched by BMC when a clause
    fails; for an all-sizes proof first at the shapes where a failing clause fails, ``failed``
    being their formulas: :func:`verify.chc.countershapes`)."""
    from .scope import describe
    covers = tuple(proof.covers) + (f"numerics-{numerics}",)
    bad = [r for r in rows if r.status is not Status.HOLDS]
    if status is Status.HOLDS:
        if hasattr(proof, "phases"):
            what = (f"{len(proof.phases)} loops proved for a tracked cell ({sum(1 for r in rows if r.status is Status.HOLDS)} "
                    f"clauses, lemmas and checks hold; {len(proof.lemmas)} stream lemmas)")
        else:
            if proof.pieces:
                what = (f"{len(proof.pieces)} pieces proved ({', '.join(proof.pieces)}) and {len(proof.checks)} lemmas "
                        f"tying them to the whole program hold")
            else:
                what = f"{len(proof.checks)} lemmas hold ({', '.join(n for n, _ in proof.checks)})"
        extra = "; ".join(proof.notes + notes)
        return Proved("chc", solver, seconds, f"{what}; {describe(covers, proof.scope)}" + (f"; {extra}" if extra else ""),
                      scope=proof.scope, covers=covers)
    table = "; ".join(f"{r.name}: {r.status.value}{f' ({r.note})' if r.note else ''}" for r in bad[:6])
    if status is Status.UNKNOWN:
        return Unknown("chc", solver, seconds, reason=f"undecided: {table}")
    if mapping is not None and mapping.proof is not None:
        from .bmc import check_bmc
        t0 = time.perf_counter()
        found = _countershapes(proof, failed or [], solver) if getattr(proof, "size_vars", None) else []
        shapes = ([shape] if shape is not None and _small(mapping, shape) else []) + \
            [at for at in found if _small(mapping, at)] + [at for at in proof.cex_shapes if at not in found]
        for at in shapes:
            try:
                mapping.check_shape(at)
                ps = mapping.proof.bmc(at, numerics=numerics)
            except D2AError:
                continue
            try:
                v = check_bmc(ps, solver=solver, timeout=None)
            except SimulationError:
                v = rejected_program(mapping, at)      # a stream the model does not accept at that shape
            if isinstance(v, Counterexample):
                return Counterexample("chc", solver, seconds + time.perf_counter() - t0,
                                      f"{table}; {'simulation' if 'rejected' in v.trace else 'BMC'} at shape "
                                      f"{'x'.join(map(str, at.values()))} finds: {v.detail}",
                                      trace={**v.trace, "failed": [r.name for r in bad], "shape": at}, replayed=True)
        for at in shapes + [at for at in found if at not in shapes]:   # what BMC does not observe: simulate
            cex = simulate_counterexample(mapping, at)
            if cex is not None:
                k, x, y, data = cex
                return Counterexample("chc", solver, seconds + time.perf_counter() - t0,
                                      f"{table}; simulation at shape {'x'.join(map(str, at.values()))}: output element "
                                      f"{k} is {y} on the accelerator, {x} in the IR (seeded random data)",
                                      trace={"output": f"element {k}", "ir_value": x, "acc_value": y, "data": data,
                                             "found_by": "simulation", "failed": [r.name for r in bad], "shape": at},
                                      replayed=True)
    return Unknown("chc", solver, seconds, reason=f"clauses fail and no counterexample was found by BMC or "
                                                  f"simulation at the tried shapes: {table}")


def rejected_program(mapping, shape: dict, seed: int = 0):
    """A counterexample when the emitted program at ``shape`` is one the accelerator's model does
    not accept (a command no instruction decodes, e.g. a trigger whose configuration fields are
    inconsistent, which the hardware ignores): replayed by running it on the simulator
    (``mapping.run_accelerator`` on seeded random inputs), whose SimulationError is the evidence;
    None when the simulator runs it."""
    import numpy as np
    inputs = mapping.random_inputs(shape, np.random.default_rng(seed))
    try:
        mapping.run_accelerator(shape, inputs)
    except SimulationError as exc:
        at = "x".join(map(str, shape.values()))
        return Counterexample("chc", "simulator", 0.0, f"at shape {at} the emitted program is not one the model "
                              f"accepts: {exc}",
                              trace={"shape": shape, "found_by": "simulation", "rejected": str(exc),
                                     "data": {n: np.asarray(v).tolist() for n, v in inputs.items()}},
                              replayed=True)
    except D2AError:
        return None
    return None


def _countershapes(proof: PhaseProof, failed: list, solver: str) -> list[dict]:
    """The shapes at which the failing clauses of an all-sizes phase proof fail, solved for its size
    symbols (:func:`verify.chc.countershapes`: small bounds first, then unbounded, minimised and
    maximised)."""
    from types import SimpleNamespace
    from .countershapes import countershapes
    if proof.shape_of is None or not failed:
        return []
    spec = SimpleNamespace(size_vars=list(proof.size_vars), small_sizes=list(proof.small_sizes),
                           shape_of=proof.shape_of, axioms=lambda apps: [])
    return countershapes(spec, [SimpleNamespace(formula=f) for f in failed], solver=solver)


def simulate_counterexample(mapping, shape: dict, tries: int = 4, seed: int = 0):
    """For a bit-exact mapping (tolerance 0), or one with a declared numerics term
    (``reference_term`` in its module, which the proof claims the program equals exactly): the
    emitted program run on the ILA simulator (``mapping.run_accelerator``, the driver's read-back
    included) against the reference (or the term) on seeded random inputs; (flat index, reference
    value, accelerator value, the inputs as lists) of the first difference, or None."""
    import importlib
    import numpy as np
    from mappings.registry import MODULES
    term = getattr(importlib.import_module(MODULES[mapping.name]), "reference_term", None) \
        if mapping.name in MODULES else None
    try:
        if term is None and mapping.tolerance_at(shape) != 0:
            return None
    except D2AError:
        return None
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        inputs = mapping.random_inputs(shape, rng)
        try:
            got = np.asarray(mapping.run_accelerator(shape, inputs)).reshape(-1)
        except D2AError:
            return None
        # the declared numerics term when the mapping has one (the proof claims equality with it)
        want = np.asarray((term or mapping.reference)(shape, inputs)).reshape(-1)
        diff = np.nonzero(got != want)[0] if got.shape == want.shape else np.array([0])
        if diff.size:
            k = int(diff[0])
            val = (lambda a: a.item() if hasattr(a, "item") else a)
            return (k, val(want[k]) if k < want.size else None, val(got[k]) if k < got.size else None,
                    {n: np.asarray(v).tolist() for n, v in inputs.items()})
    return None


def _small(mapping, shape: dict) -> bool:
    from math import prod
    return prod(int(v) for v in shape.values()) <= 1 << 14


def check_composite(mapping, shape: dict | None, proof, *, solver: str = "z3", timeout: float | None = None,
                    only: set | None = None, failing: list | None = None) -> tuple[Status, list[Row], list[str]]:
    """Check a :class:`mappings.phases.Composite`: every piece's phase proof and every check
    (``only``: the keys ``piece:<key>`` and ``check:<name>`` to run; None: all). The first piece
    whose clauses fail ends the check (the composite fails whatever the rest give); ``failing``, if
    given, receives (that piece's phase proof, the formulas of its failing clauses), from which the
    verdict searches a counterexample (for an all-sizes piece, at the sizes where they fail)."""
    rows, notes, worst = [], [], Status.HOLDS
    for key, build in proof.pieces.items():
        if only is not None and f"piece:{key}" not in only:
            continue
        t1 = time.perf_counter()
        piece, failed = build(), []
        try:
            st, sub, nts = run(piece, solver=solver, timeout=timeout, inline_ufs=proof.numerics == "exact",
                               failed=failed)
        except UndecidedDecode as exc:
            st, sub, nts, failed = Status.FAILS, [Row("stream", Status.FAILS, 0.0, str(exc))], [], exc.formulas
        rows.append(Row(f"piece {key}", st, time.perf_counter() - t1,
                        "; ".join(f"{r.name}: {r.status.value} {r.note}" for r in sub if r.status is not Status.HOLDS)[:400]))
        notes += nts
        worst = worst.worst(st)
        if st is Status.FAILS:
            if failing is not None:
                failing.append((piece, failed))
            return worst, rows, notes
    for name, fn in proof.checks:
        if only is not None and f"check:{name}" not in only:
            continue
        t1 = time.perf_counter()
        bad = fn()
        rows.append(Row(name, Status.FAILS if bad else Status.HOLDS, time.perf_counter() - t1, "; ".join(bad)[:400]))
        worst = worst.worst(rows[-1].status)
    return worst, rows, notes


def check(mapping, shape: dict | None, proof: PhaseProof, *, solver: str = "z3", timeout: float | None = None,
          numerics: str = "exact"):
    """Check a phase proof (or a composite of phase proofs) and return its verdict
    (``verify.chc.check_chc`` delegates here)."""
    from mappings.phases import Composite
    t0 = time.perf_counter()
    if isinstance(proof, Composite):
        failing: list = []
        try:
            status, rows, notes = check_composite(mapping, shape, proof, solver=solver, timeout=timeout,
                                                  failing=failing)
        except PhaseError as exc:
            return Unknown("chc", solver, time.perf_counter() - t0, reason=f"malformed phase proof: {exc}")
        piece, failed = failing[0] if failing else (proof, None)
        return verdict(mapping, piece, rows, notes, status, solver=solver, seconds=time.perf_counter() - t0,
                       shape=shape, numerics=proof.numerics, failed=failed)
    numerics = proof.numerics or numerics          # VTA's proofs are bit-exact whatever the option says
    failed: list = []
    try:
        status, rows, notes = run(proof, solver=solver, timeout=timeout, inline_ufs=numerics == "exact", failed=failed)
    except UndecidedDecode as exc:
        status, rows, notes = Status.FAILS, [Row("stream", Status.FAILS, time.perf_counter() - t0, str(exc))], []
        failed = exc.formulas
    except PhaseError as exc:
        return Unknown("chc", solver, time.perf_counter() - t0, reason=f"malformed phase proof: {exc}")
    return verdict(mapping, proof, rows, notes, status, solver=solver, seconds=time.perf_counter() - t0, shape=shape,
                   numerics=numerics, failed=failed)
