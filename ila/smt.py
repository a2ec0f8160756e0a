"""Lowering of ILA expressions to SMT through pysmt, and solving with z3 or cvc5.

:class:`SmtEncoder` turns expression DAGs into pysmt formulas with the builders of
:data:`ila.semantics.TABLE` (iteratively, memoised). Sorts map to pysmt types: Bool -> BOOL,
BV(w) -> BVType(w), Mem(aw, dw) -> ArrayType(BVType(aw), BVType(dw)); variables become symbols of
the same name; uninterpreted functions become pysmt function symbols, or are inlined through their
``expr_body`` when ``inline_ufs`` is set. Each encoder owns a private pysmt environment, so models
declaring the same name with different sorts never clash. pysmt's formula methods, type checker,
oracles and printers memoise in the *current* environment (the head of pysmt's environment stack),
whatever environment built the formula; every use of an encoder's formulas runs inside
:meth:`SmtEncoder.active`, which makes the encoder's own environment current, so the global
environment's memo tables never hold (and never grow with) an encoder's formulas. Without it a
long-lived process (a campaign worker) keeps every formula of every proof alive there, and formulas
of successive encoders (hashed by their id within their own environment) collide in those tables:
each check grows slower.

:func:`check` solves a list of assertions and returns a :class:`SatResult` (``sat`` with model
values, ``unsat``, or ``unknown`` with the reason; a timeout is ``unknown``). :func:`to_smtlib2`
writes an SMT-LIB2 script.
"""
from __future__ import annotations

import io
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .errors import IlaError, IlaInternalError
from .expr import Expr
from .ops import Op
from .semantics import TABLE
from .sorts import BoolSort, BvSort, MemSort, Sort
from .walk import toposort

SOLVERS = ("z3", "cvc5")


class SolverError(IlaError):
    """An unknown solver name, or a solver that refused the problem."""


class SmtEncoder:
    """Encode ILA expressions as pysmt formulas (one private pysmt environment per encoder)."""

    def __init__(self, *, inline_ufs: bool = False):
        from pysmt.environment import Environment
        self.env = Environment()
        self.mgr = self.env.formula_manager
        self.inline_ufs = inline_ufs
        self.cache: dict[int, object] = {}
        self.funcs: dict[int, object] = {}
        self.applications: dict[int, Expr] = {}

    @contextmanager
    def active(self):
        """Make this encoder's pysmt environment the current one for the ``with`` block (nests;
        restored on exit, also on an exception)."""
        from pysmt.environment import pop_env, push_env
        push_env(self.env)
        try:
            yield self
        finally:
            pop_env()

    def smt_type(self, sort: Sort):
        from pysmt import typing as T
        if isinstance(sort, BoolSort):
            return T.BOOL
        if isinstance(sort, BvSort):
            return T.BVType(sort.width)
        if isinstance(sort, MemSort):
            return T.ArrayType(T.BVType(sort.addr_width), T.BVType(sort.data_width))
        raise IlaInternalError(f"no SMT type for {sort!r}")

    def symbol(self, name: str, sort: Sort):
        return self.mgr.Symbol(name, self.smt_type(sort))

    def func_symbol(self, f):
        sym = self.funcs.get(id(f))
        if sym is None:
            from pysmt import typing as T
            ftype = T.FunctionType(self.smt_type(f.range), [self.smt_type(s) for s in f.domain])
            sym = self.mgr.Symbol(f"uf_{f.name}", ftype)
            self.funcs[id(f)] = sym
        return sym

    def encode(self, e: Expr):
        return self.encode_all([e])[0]

    def encode_all(self, exprs: Sequence[Expr]) -> list:
        with self.active():
            return self._encode_all(exprs)

    def _encode_all(self, exprs: Sequence[Expr]) -> list:
        mgr, cache = self.mgr, self.cache
        for n in toposort(exprs):
            if n.uid in cache:
                continue
            op = n.op
            if op is Op.CONST:
                out = mgr.Bool(n.payload) if n.sort.is_bool else mgr.BV(n.payload, n.sort.width)
            elif op is Op.VAR:
                out = self.symbol(n.payload[1], n.sort)
            elif op is Op.APPLY:
                f = n.payload
                if self.inline_ufs and f.expr_body is not None:
                    out = self.encode(f.expr_body(*n.args))
                else:
                    args = [cache[a.uid] for a in n.args]
                    out = mgr.Function(self.func_symbol(f), args) if args else self.func_symbol(f)
                    self.applications[n.uid] = n
            else:
                out = TABLE[op].smt(mgr, n, *[cache[a.uid] for a in n.args])
            cache[n.uid] = out
        return [cache[e.uid] for e in exprs]


def axiom_instances(exprs: Iterable[Expr], *, inline_ufs: bool = False) -> list[Expr]:
    """Instantiate the axioms of every uninterpreted function on the argument tuples that occur
    in ``exprs`` (one round; functions inlined through ``expr_body`` need no axioms)."""
    out: list[Expr] = []
    seen: set[int] = set()
    for n in toposort(list(exprs)):
        if n.op is Op.APPLY and not (inline_ufs and n.payload.expr_body is not None):
            for ax in n.payload.axioms:
                inst = ax(*n.args)
                if inst.uid not in seen:
                    seen.add(inst.uid)
                    out.append(inst)
    return out


@dataclass
class SatResult:
    """``status`` is 'sat', 'unsat' or 'unknown'; ``values`` maps requested terms to Python values."""
    status: str
    seconds: float
    values: dict = field(default_factory=dict)
    reason: str = ""


def py_value(fnode):
    """Python value of a pysmt constant: bool, int, or (default, {addr: value}) for arrays."""
    if fnode.is_array_value():
        default = py_value(fnode.array_value_default())
        assigned = {py_value(k): py_value(v) for k, v in fnode.array_value_assigned_values_map().items()}
        return (default, assigned)
    if fnode.is_bool_constant():
        return bool(fnode.constant_value())
    if fnode.is_bv_constant():
        return int(fnode.bv_unsigned_value())
    raise IlaInternalError(f"cannot read solver value {fnode}")


def check(encoder: SmtEncoder, assertions: Sequence, *, solver: str = "z3", timeout: float | None = None,
          logic: str | None = None, want: Iterable = ()) -> SatResult:
    """Check satisfiability of pysmt ``assertions`` (built with ``encoder``).

    ``want`` lists pysmt terms whose model values are returned on sat. ``timeout`` is in seconds;
    an expired timeout or a solver giving up gives status 'unknown', never 'unsat'.
    """
    if solver not in SOLVERS:
        raise SolverError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    with encoder.active():
        return _check(encoder, assertions, solver, timeout, logic, want)


def _check(encoder: SmtEncoder, assertions: Sequence, solver: str, timeout: float | None, logic: str | None,
           want: Iterable) -> SatResult:
    from pysmt.exceptions import SolverReturnedUnknownResultError
    mgr = encoder.mgr
    formula = mgr.And(list(assertions)) if len(assertions) != 1 else assertions[0]
    if logic is None:
        from pysmt.oracles import get_logic
        lg = get_logic(formula, encoder.env)
        logic = "QF_AUFBV" if lg.quantifier_free else "AUFBV"
        if lg.quantifier_free and not (lg.theory.uninterpreted or lg.theory.arrays):
            logic = "QF_BV"
    opts = {}
    if timeout is not None:
        ms = max(1, int(timeout * 1000))
        opts = {"timeout": ms} if solver == "z3" else {"tlimit-per": ms}
    t0 = time.perf_counter()
    try:
        with encoder.env.factory.Solver(name=solver, logic=logic, solver_options=opts) as s:
            s.add_assertion(formula)
            try:
                res = s.solve()
            except SolverReturnedUnknownResultError:
                return SatResult("unknown", time.perf_counter() - t0,
                                 reason=f"{solver} returned unknown (timeout {timeout} s or incomplete)")
            if not res:
                return SatResult("unsat", time.perf_counter() - t0)
            values = {}
            for term in want:
                values[term] = py_value(s.get_value(term))
            return SatResult("sat", time.perf_counter() - t0, values)
    except SolverReturnedUnknownResultError:
        return SatResult("unknown", time.perf_counter() - t0, reason=f"{solver} returned unknown")
    except IlaError:
        raise
    except Exception as exc:  # a solver refusing the logic or crashing: report, never 'proved'
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return SatResult("unknown", time.perf_counter() - t0, reason=f"{solver} failed: {msg[:200]}")


def to_smtlib2(encoder: SmtEncoder, assertions: Sequence, *, logic: str = "QF_AUFBV") -> str:
    """An SMT-LIB2 script (declarations, assertions, check-sat) for ``assertions``."""
    from pysmt.smtlib.script import smtlibscript_from_formula
    mgr = encoder.mgr
    import warnings
    with encoder.active():
        formula = mgr.And(list(assertions)) if len(assertions) != 1 else assertions[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            script = smtlibscript_from_formula(formula, logic=logic)
        buf = io.StringIO()
        script.serialize(buf, daggify=True)
        return buf.getvalue()
