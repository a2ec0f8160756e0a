"""Loop induction over the iterations of a child loop (issue 26): a proof at any iteration count
from one symbolic iteration.

Setting. One command of the accelerator's emitted stream starts a child loop that runs ``count``
iterations (FlexASR's GB control loop: one per timestep). Iteration t reads its inputs from the
cells ``in_cells[t, :]`` of one tracked memory and writes its outputs to ``out_cells[t, :]``
(the mapping's declared refinement map); between iterations the control state is the same but for
an iteration counter. BMC executes every iteration, one child step per 16x16 multiply-add tile,
so its cost grows with ``count``; this checker executes the stream up to the loop's first
iteration, then ONE iteration from a state whose counter is a symbol t and whose scratch memories
(every memory a child instruction writes, but the tracked one) hold arbitrary contents, and then
the loop's exit and the rest of the stream.

The lemmas (:func:`check`; each returns the violations it finds, naming the cell, output or state):

1. ``stream``: when the loop's command is reached, every input cell holds the value the stream
   wrote there (``in_values``: the data symbols of the inputs, or constants such as a padding
   code), by the model's own instructions on the emitted commands; no earlier command starts a
   child loop; the loop's command, up to the first iteration's start (``cut``), writes no tracked
   cell, and the counter is 0 there.
2. ``iteration``: from the start state with the counter a symbol t, the tracked memory an
   arbitrary array G and every scratch memory an arbitrary array, the child loop runs with control
   that does not depend on t or on any data up to the iteration's end (``stop``); there every
   scalar state but the counter and ``stop_states`` equals the start state's, and the instruction
   that follows gives the next iteration's start state (counter t + 1; checked for every t below
   ``count - 1``); G is written only by stores at output cells of row t (each address term
   evaluated at every t below ``count``); each claimed output's value reads G only at input cells of
   row t (the same input column for every t), mentions no scratch memory and no t, and equals the
   declared term ``term(o, X)`` of the row's input values X (sums in AC normal form,
   :mod:`verify.normalize`).
3. ``cells``: the output cells of all rows are distinct, the input cells are distinct, and no
   output cell is an input cell (so an iteration overwrites neither its successors' inputs nor
   its predecessors' outputs).
4. ``exit and read-back``: from the last iteration's end (t = count - 1) the loop ends without
   writing the tracked memory, the interrupt the driver waits for is raised, and the driver's
   read-back of the commands after the loop returns, for every row t and claimed output o, the
   tracked memory's cell ``out_cells[t, o]`` as the loop left it.

Soundness (induction on t): let M_t be the tracked memory at the start of iteration t. M_0 is the
memory after the stream's writes (lemma 1). If the scalar state at iteration t's start is the
start state with counter t, then the iteration is the symbolic one instantiated at t (its scratch
contents were arbitrary), so it ends in the start state with counter t + 1 (lemma 2), and
M_{t+1} is M_t with the outputs of row t written, each the declared term of M_t's input cells of
row t; those are M_0's (lemma 3: no iteration writes an input cell), i.e. ``in_values[t]``. No
later iteration writes row t's outputs (lemma 3), so after the loop every output cell holds its
declared term, and the read-back returns them (lemma 4). The iterations' own arithmetic is
compared with the declared term by rewriting only (uninterpreted functions stay uninterpreted);
what the term is -- the IR operator in the accelerator's order and rounding -- is the mapping's
declaration.

A violation is not a counterexample: the caller (a :class:`mappings.phases.Composite` check)
reports the lemma as failing and :func:`verify.phases.verdict` searches for one by BMC at small
shapes and replays it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ila.expr import Expr, bv_const, lor
from ila.ops import Op
from ila.simplify import Rewriter
from ila.unroll import _env, _inputs_for, _step, symbol
from ila.walk import toposort
from mappings.induction import MAX_STEPS, LoopInduction


class _Violation(Exception):
    pass


# ----------------------------------------------------------------------------- the machine
class _Machine:
    """Symbolic execution with concrete control (as :func:`ila.unroll.execute`), one step at a time
    from any state, so that a loop can be entered and left at chosen states.

    Which instruction fires is decided by the valid and decodes compiled to numpy
    (``ila.compile_np``, the simulator's semantics) when every input and state they read is a
    constant, else by rewriting them (which reports control that depends on symbolic values). The
    two agree (``tests/test_verify_induction.py``; the seeded bug ``DECODE_BUG = "first"`` takes the
    first enabled instruction without checking that it is the only one and fails there)."""

    DECODE_BUG = None

    def __init__(self, ila):
        self.ila = ila
        self.children = [c for c in ila.walk() if c is not ila]
        self.zero = {v.name: 0 for v in ila.all_inputs()}
        self.fast = True
        self._compiled: dict = {}

    def inputs(self, cmd: dict, k: int) -> dict:
        return _inputs_for(self.ila, {**self.zero, **cmd}, k, "ind.")

    def _program(self, ilas) -> tuple:
        key = tuple(h.name for h in ilas)
        got = self._compiled.get(key)
        if got is None:
            from ila.compile_np import compile_exprs
            from ila.walk import variables
            exprs = [h.valid for h in ilas] + [i.get_decode() for h in ilas for i in h.instrs]
            inputs = {v.name: v for v in self.ila.all_inputs()}
            read = variables(exprs)
            ins = [v for v in read if v.name in inputs and inputs[v.name] is v]
            sts = [v.name for v in read if not (v.name in inputs and inputs[v.name] is v)]
            got = self._compiled[key] = (compile_exprs(exprs, vectorize=False, name="induction_decodes"), ins, sts)
        return got

    def _fire_fast(self, ilas, state: dict, inputs: dict):
        """(decided, instruction or None): decided False when a value read is not a constant."""
        fn, ins_read, st_read = self._program(ilas)
        S, I = {}, {}
        for v in ins_read:
            x = inputs[v.name]
            if x.op is not Op.CONST:
                return False, None
            I[v.name] = x.payload
        for k in st_read:
            x = state[k]
            if x.op is not Op.CONST:
                return False, None
            S[k] = x.payload
        with np.errstate(over="ignore"):
            vals = fn(S, I)
        valid, k, fired = vals[:len(ilas)], len(ilas), []
        for h, ok in zip(ilas, valid):
            for i in h.instrs:
                if ok and vals[k]:
                    fired.append(i)
                k += 1
        if self.DECODE_BUG == "first":
            return True, (fired[0] if fired else None)
        if len(fired) > 1:
            return False, None                      # the rewriting path names the two
        return True, (fired[0] if fired else None)

    def fire(self, ilas, state: dict, inputs: dict, where: str):
        if self.fast:
            decided, ins = self._fire_fast(ilas, state, inputs)
            if decided:
                return ins
        return self.fire_slow(ilas, state, inputs, where)

    def fire_slow(self, ilas, state: dict, inputs: dict, where: str):
        rw = Rewriter(_env(self.ila, state, inputs))
        fired = []
        for h in ilas:
            valid = rw.one(h.valid)
            if valid.op is not Op.CONST:
                raise _Violation(f"{where}: the valid of {h.name!r} depends on symbolic values: {valid.short()}")
            if not valid.payload:
                continue
            for ins in h.instrs:
                d = rw.one(ins.get_decode())
                if d.op is not Op.CONST:
                    raise _Violation(f"{where}: the decode of {ins.name!r} depends on symbolic values: {d.short()}")
                if d.payload:
                    fired.append(ins)
        if len(fired) > 1:
            raise _Violation(f"{where}: {fired[0].name!r} and {fired[1].name!r} both fire")
        return fired[0] if fired else None

    def step(self, ins, state: dict, inputs: dict) -> dict:
        return _step(self.ila, ins, state, inputs, Rewriter(_env(self.ila, state, inputs)))

    def run_children(self, state: dict, inputs: dict, where: str, until=None, limit: int = MAX_STEPS):
        """Child steps until ``until(state)`` holds before a step (then returns (state, True)) or no
        child instruction fires (state, False)."""
        for n in range(limit + 1):
            if until is not None and until(state):
                return state, True
            ins = self.fire(self.children, state, inputs, where)
            if ins is None:
                return state, False
            state = self.step(ins, state, inputs)
        raise _Violation(f"{where}: the child loop takes more than {limit} steps")


def _const(e: Expr):
    return e.payload if e.op is Op.CONST else None


# ----------------------------------------------------------------------------- vector evaluation
_MASK64 = (1 << 64) - 1


def _evaluate(e: Expr, t: Expr, ts: np.ndarray, memo: dict) -> np.ndarray:
    """``e`` at every value of the symbol ``t`` in ``ts`` (uint64 vector; Bool as 0/1), for the
    bit-vector operators of address arithmetic (at most 64 bits). Raises _Violation otherwise."""
    for n in toposort([e]):
        if n.uid in memo:
            continue
        w = n.sort.width if n.sort.is_bv else 1
        if w > 64:
            raise _Violation(f"a {w}-bit term where an address is computed: {n.short()}")
        mask = np.uint64((1 << w) - 1)
        a = [memo[x.uid] for x in n.args]
        op = n.op
        with np.errstate(over="ignore"):
            if op is Op.CONST:
                v = np.full(ts.shape, int(n.payload) & _MASK64, np.uint64)
            elif n is t:
                v = ts.astype(np.uint64)
            elif op in (Op.ADD, Op.SUB, Op.MUL, Op.BVAND, Op.BVOR, Op.BVXOR):
                f = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.BVAND: np.bitwise_and,
                     Op.BVOR: np.bitwise_or, Op.BVXOR: np.bitwise_xor}[op]
                v = f(a[0], a[1]) & mask
            elif op is Op.BVNOT:
                v = ~a[0] & mask
            elif op in (Op.SHL, Op.LSHR):
                big = a[1] >= np.uint64(w)
                amt = np.minimum(a[1], np.uint64(63))
                v = np.where(big, np.uint64(0), (a[0] << amt) if op is Op.SHL else (a[0] >> amt)) & mask
            elif op is Op.ZEXT:
                v = a[0]
            elif op is Op.EXTRACT:
                hi, lo = n.payload
                v = (a[0] >> np.uint64(lo)) & mask
            elif op is Op.CONCAT:
                v = ((a[0] << np.uint64(n.args[1].sort.width)) | a[1]) & mask
            elif op is Op.ITE:
                v = np.where(a[0] != 0, a[1], a[2])
            elif op is Op.EQ:
                v = (a[0] == a[1]).astype(np.uint64)
            elif op in (Op.ULT, Op.ULE, Op.UGT, Op.UGE):
                f = {Op.ULT: np.less, Op.ULE: np.less_equal, Op.UGT: np.greater, Op.UGE: np.greater_equal}[op]
                v = f(a[0], a[1]).astype(np.uint64)
            elif op is Op.NOT:
                v = (a[0] == 0).astype(np.uint64)
            elif op in (Op.AND, Op.OR):
                v = a[0]
                for x in a[1:]:
                    v = (v & x) if op is Op.AND else (v | x)
            else:
                raise _Violation(f"cannot evaluate {op.name} in {n.short()} for every iteration")
        memo[n.uid] = v
    return memo[e.uid]


# ----------------------------------------------------------------------------- the lemmas
class _Run:
    """The shared work of the lemmas: the stream up to the loop, the symbolic iteration."""

    def __init__(self, ind: LoopInduction):
        self.ind = ind
        self.side = ind.side
        self.ila = ind.side.ila
        self.mach = _Machine(self.ila)
        self.mem = ind.side.memory
        self.scratch = sorted({s.name for c in self.mach.children for i in c.instrs for s in i.updates
                               if s.sort.is_mem and s.name != self.mem})
        self.scalars = [v.name for v in self.ila.all_states() if not v.sort.is_mem]
        self._prefix = None
        self._iteration = None

    # the stream up to the first iteration
    def prefix(self):
        """(index of the loop's command among the commands that are not waits, its inputs, the
        tracked memory after its top-level step, the state at the first iteration's start). The
        commands before it must decode, start no child loop, and find the interrupt raised at every
        driver wait; their reads are kept (``self.reads``: the driver's read-back takes every read
        of the stream, in order)."""
        if self._prefix is not None:
            return self._prefix
        from verify.fragments import reset_state
        from ila.unroll import initial_state
        state = initial_state(self.ila, {**reset_state(self.ila), **self.side.init}, "ind.")
        port, n = self.side.port, -1
        self.reads = []
        for cmd in self.side.commands:
            if cmd.get("wait_irq"):
                if port is not None and port.irq and _const(Rewriter().one(state[port.irq])) != 1:
                    raise _Violation(f"the driver waits for an interrupt before command {n + 1} (before the loop), "
                                     f"but {port.irq} is {state[port.irq].short()}: it would hang")
                continue
            n += 1
            inputs = self.mach.inputs(cmd, n)
            top = self.mach.fire([self.ila], state, inputs, f"command {n}")
            if top is None:
                raise _Violation(f"command {n}: no instruction decodes {dict(cmd)!r}")
            state = self.mach.step(top, state, inputs)
            if self.mach.fire(self.mach.children, state, inputs, f"command {n}") is None:
                if port is not None and port.is_read(cmd):
                    self.reads.append(port.read_data(state))
                continue
            if port is not None and port.is_read(cmd):
                raise _Violation(f"command {n} both reads the port and starts the loop")
            before = state[self.mem]
            start, at_cut = self.mach.run_children(state, inputs, f"command {n}", until=self.ind.cut)
            if not at_cut:
                raise _Violation(f"command {n} starts a child loop that ends before an iteration starts")
            self._prefix = (n, inputs, before, start)
            return self._prefix
        raise _Violation("no command of the stream starts a child loop")

    def iteration(self):
        """The symbolic iteration: (t, G, scratch arrays, the state at ``stop``)."""
        if self._iteration is not None:
            return self._iteration
        n, inputs, _, start = self.prefix()
        t = symbol(f"ind.{self.ind.counter}", start[self.ind.counter].sort)
        G = symbol(f"ind.{self.mem}.G", start[self.mem].sort)
        fresh = {m: symbol(f"ind.{m}.scratch", start[m].sort) for m in self.scratch}
        fresh.update({s: symbol(f"ind.{s}.free", start[s].sort) for s in self.ind.free_states})
        state = {**start, self.ind.counter: t, self.mem: G, **fresh}
        end, stopped = self.mach.run_children(state, inputs, "the iteration", until=self.ind.stop,
                                              limit=self.ind.max_steps)
        if not stopped:
            raise _Violation("the iteration's child loop ends before the iteration's end (stop) is reached")
        self._iteration = (t, G, fresh, end)
        return self._iteration


def _rows_equal(vec: np.ndarray, cells: np.ndarray) -> int | None:
    """The column of ``cells`` [count, n] equal to ``vec`` [count], or None."""
    hits = np.nonzero(cells[0] == vec[0])[0]
    for c in hits:
        if np.array_equal(cells[:, c], vec):
            return int(c)
    return None


def stream_lemma(run: _Run) -> list[str]:
    ind = run.ind
    n, _, before, start = run.prefix()
    bad = []
    if start[run.mem] is not before:
        bad.append(f"command {n}: the loop's command writes the tracked memory {run.mem} before its first iteration")
    c0 = _const(start[ind.counter])
    if c0 != 0:
        bad.append(f"the first iteration starts with {ind.counter} = {start[ind.counter].short()}, not 0")
    rw = Rewriter()
    aw = before.sort.addr_width
    for (t, i), want in np.ndenumerate(ind.in_values):
        got = rw.load(before, bv_const(int(ind.in_cells[t, i]), aw))
        if got is not want:
            bad.append(f"input cell [{t}, {i}] (address {int(ind.in_cells[t, i])}) holds {got.short()}, "
                       f"not {want.short()}, when the loop starts")
            if len(bad) > 4:
                break
    return bad


def cells_lemma(run: _Run) -> list[str]:
    ind = run.ind
    outs = ind.out_cells.ravel()
    ins = ind.in_cells.ravel()
    bad = []
    if np.unique(outs).size != outs.size:
        bad.append("two output cells share an address")
    if np.unique(ins).size != ins.size:
        bad.append("two input cells share an address")
    both = np.intersect1d(ind.out_cells.ravel(), ins)
    if both.size:
        bad.append(f"address {int(both[0])} is both an input and an output cell")
    return bad


def iteration_lemma(run: _Run, *, bug: str | None = None) -> list[str]:
    ind = run.ind
    _, inputs, _, start = run.prefix()
    t, G, fresh, end = run.iteration()
    bad = []
    # scalar state at the iteration's end, and after the instruction that advances the counter
    for s in run.scalars:
        if s == ind.counter:
            if end[s] is not t:
                bad.append(f"the iteration changes the counter {s} before its end: {end[s].short()}")
        elif s not in ind.stop_states and s not in ind.free_states and end[s] is not start[s]:
            bad.append(f"scalar state {s} is {end[s].short()} at the iteration's end, {start[s].short()} at its start")
    nxt = run.mach.fire(run.mach.children, end, inputs, "the iteration's end")
    if nxt is None:
        return bad + ["no child instruction follows the iteration's end"]
    after = run.mach.step(nxt, end, inputs)
    for m in [v.name for v in run.ila.all_states() if v.sort.is_mem]:
        if after[m] is not end[m] and m not in run.scratch:
            bad.append(f"{nxt.name} (after the iteration) writes memory {m}")
    go_on = np.arange(max(ind.count - 1, 0), dtype=np.uint64)
    memo: dict = {}
    for s in run.scalars:
        want = start[s]
        if s == ind.counter:
            got = _evaluate(after[s], t, go_on, memo)
            if not np.array_equal(got, go_on + np.uint64(1)):
                bad.append(f"{nxt.name} does not advance the counter {s} by one: {after[s].short()}")
            continue
        if after[s] is want or s in ind.free_states:
            continue
        if want.op is not Op.CONST:
            bad.append(f"scalar state {s} after {nxt.name} is {after[s].short()}, {want.short()} at the start")
            continue
        got = _evaluate(after[s], t, go_on, memo)
        if not np.all(got == np.uint64(int(want.payload) & _MASK64)):
            k = int(np.nonzero(got != np.uint64(int(want.payload) & _MASK64))[0][0])
            bad.append(f"scalar state {s} after iteration {k} is {int(got[k])}, not the start state's {want.payload}")
    # the tracked memory: stores at output cells of row t
    ts, memo = np.arange(ind.count, dtype=np.uint64), {}
    node, stores = end[run.mem], []
    while node.op is Op.STORE:
        stores.append((node.args[1], node.args[2]))
        node = node.args[0]
    if node is not G:
        return bad + [f"the iteration leaves {run.mem} as {node.short()[:200]}, not stores over its start array"]
    value: dict[int, Expr] = {}
    for a, v in stores:                   # outermost (latest) first
        vec = _evaluate(a, t, ts, memo)
        o = _rows_equal(vec, ind.out_cells)
        if o is None:
            bad.append(f"the iteration stores {run.mem} at {a.short()[:160]}, not an output cell of its row "
                       f"(at t = 0: address {int(vec[0])})")
            continue
        value.setdefault(o, v)
    missing = [o for o in ind.claimed if o not in value]
    if missing:
        bad.append(f"the iteration writes no value to output {missing[0]} of its row ({len(missing)} outputs unwritten)")
    if bad:
        return bad
    # each claimed output: a function of the row's input cells and constant memories
    forbidden = {G.uid, t.uid} | {m.uid for m in fresh.values()}
    rw = Rewriter()
    X = {}
    for i in range(ind.in_cells.shape[1]):
        col = ind.in_values[:, i]
        same = all(v is col[0] for v in col) and col[0].op is Op.CONST
        X[i] = col[0] if same else symbol(f"ind.X{i}", col[0].sort)
    roots = [value[o] for o in ind.claimed]
    for n in toposort(roots):
        if n.op is Op.LOAD and n.args[0] is G:
            vec = _evaluate(n.args[1], t, ts, memo)
            i = _rows_equal(vec, ind.in_cells)
            if i is None:
                bad.append(f"an output of the iteration reads {run.mem} at {n.args[1].short()[:160]}, not an input "
                           f"cell of its row (at t = 0: address {int(vec[0])})")
                return bad
            rw.memo[n.uid] = X[i]
    got = rw(roots)
    for o, g in zip(ind.claimed, got):
        for n in toposort([g]):
            if n.uid in forbidden or (n.op is Op.VAR and n.uid in forbidden):
                what = "the counter" if n is t else ("the tracked memory outside the row's input cells"
                                                     if n is G else f"the scratch or free state {n.name}")
                bad.append(f"output {o} of the iteration depends on {what}")
                return bad
    xs = [X[i] for i in range(ind.in_cells.shape[1])]
    want = [ind.term(o, xs) for o in ind.claimed]
    if bug == "compare_first_only":           # seeded checker bug (tests): only output 0 compared
        got, want = got[:1], want[:1]
    from .normalize import discharge
    if discharge(lor(*[g.ne(w) for g, w in zip(got, want)]), list(ind.axioms)):
        return bad
    for o, g, w in zip(ind.claimed, got, want):
        if not discharge(g.ne(w), list(ind.axioms)):
            bad.append(f"output {o} of the iteration is {g.short()[:200]}, not the declared {w.short()[:200]}")
            if len(bad) > 2:
                break
    return bad or ["the outputs differ from the declared terms as a whole"]


def exit_lemma(run: _Run) -> list[str]:
    ind = run.ind
    n, inputs, _, start = run.prefix()
    t, G, fresh, end = run.iteration()
    last = Rewriter({t: bv_const(ind.count - 1, t.sort.width)})
    Gfin = symbol(f"ind.{run.mem}.final", G.sort)
    state = {s: (last.one(end[s]) if not end[s].sort.is_mem else end[s]) for s in end}
    state.update({run.mem: Gfin, **{m: symbol(f"ind.{m}.exit", start[m].sort) for m in run.scratch}})
    state, _ = run.mach.run_children(state, inputs, "the loop's exit")
    bad = []
    if state[run.mem] is not Gfin:
        bad.append(f"the loop's exit (after the last iteration) writes {run.mem}")
    reads, k = list(run.reads), n + 1
    port = run.side.port
    irq_ok = True
    rest = run.side.commands
    # the commands after the loop's command (with the driver's waits), in the emitted order
    idx = [j for j, c in enumerate(rest) if not c.get("wait_irq")][n]
    for c in rest[idx + 1:]:
        if c.get("wait_irq"):
            if port is not None and port.irq:
                v = Rewriter().one(state[port.irq])
                if _const(v) != 1:
                    irq_ok = False
            continue
        inp = run.mach.inputs(c, k)
        k += 1
        top = run.mach.fire([run.ila], state, inp, f"command {k - 1}")
        if top is None:
            return bad + [f"command {k - 1} after the loop: no instruction decodes it"]
        state = run.mach.step(top, state, inp)
        state, _ = run.mach.run_children(state, inp, f"command {k - 1}")
        if port is not None and port.is_read(c):
            reads.append(port.read_data(state))
    if not irq_ok:
        bad.append("the driver waits for an interrupt the loop does not raise")
    y = np.asarray(ind.readback(reads), dtype=object)
    claimed = list(ind.claimed)
    if y.shape != (ind.count, len(claimed)):
        return bad + [f"the read-back has shape {y.shape}, not {(ind.count, len(claimed))}"]
    rw = Rewriter()
    aw = Gfin.sort.addr_width
    for (r, j), v in np.ndenumerate(y):
        want = rw.load(Gfin, bv_const(int(ind.out_cells[r, claimed[j]]), aw))
        if rw.one(v) is not want:
            bad.append(f"the read-back's element [{r}, {j}] is {rw.one(v).short()[:120]}, not output cell "
                       f"{int(ind.out_cells[r, claimed[j]])} as the loop left it")
            if len(bad) > 3:
                break
    return bad


def checks(build: Callable[[], LoopInduction], count: int, *,
           bug: str | None = None) -> list[tuple[str, Callable[[], list[str]]]]:
    """The lemmas as named checks (each returning its violations; a stream or loop of another
    shape is a violation too), for a :class:`mappings.phases.Composite`; ``build()`` makes the
    :class:`LoopInduction` (the symbolic stream: inside the first check, so that its time is the
    proof's), ``count`` its iterations. ``bug``: a seeded checker bug, for the tests
    (:data:`BUGS`)."""
    runs: list = []

    def run() -> _Run:
        if not runs:
            runs.append(_Run(build()))
        return runs[0]

    def guard(fn):
        def go():
            try:
                return fn(run())
            except _Violation as exc:
                return [str(exc)]
        return go
    return [(f"stream: every input cell holds its value when the loop starts ({count} rows)", guard(stream_lemma)),
            ("cells: the output cells are distinct and no input cell", guard(cells_lemma)),
            (f"iteration: one iteration with the counter symbolic computes its row's declared outputs and returns "
             f"to the start state (every t < {count})", guard(lambda r: iteration_lemma(r, bug=bug))),
            ("exit and read-back: the loop ends after the last row and the read-back returns the output cells",
             guard(exit_lemma))]


BUGS = ("compare_first_only",)
