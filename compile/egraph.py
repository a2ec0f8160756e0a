"""The one adapter over egglog (``egglog==13.2.0``): the compiler IR as an egglog language, the
compiler-IR rewrites as egglog rules, saturation by egglog's scheduler under limits, a typed view
of the saturated e-graph, accelerator calls, and extraction by egglog's extractor.

No other module imports egglog. What this module provides:

* **The language.** ``Term`` e-nodes: ``Term.leaf(uid)`` (a graph input or constant, by the IR
  value's uid), ``Term.zeros(shape, dtype)`` (a zero constant a rewrite creates), typed constructors
  with every attribute of the IR operator as an egglog value (:data:`TYPED`: ``nn.dense``,
  ``nn.bias_add``, ``add``, ``multiply``, ``sigmoid``, ``tanh``, ``nn.conv2d``, ``nn.max_pool2d``, ``lstm_layer``, ``nn.lstm``,
  ``transpose``, ``reshape``, ``nn.pad``, ``nn.im2col``, ``strided_slice``, ``concatenate``),
  ``Term.host(key, args)`` / ``Term.move(key, args)`` for every other host compute / data-movement
  operator (``key`` names the operator and its attributes; the session keeps the table),
  ``Term.call(match, args)`` for an accelerator call (``match`` indexes the caller's match table),
  operand lists as ``TermList`` cons lists. ``shape(t)`` (``Vec[i64]``) and ``dtype(t)``
  (``String``) are egglog functions without a merge: seeded for the graph's terms, computed by the
  analysis rules (:data:`ANALYSIS`) for the terms rewrites create; two different values for one
  e-class are an egglog panic, reported as :class:`EGraphError`.
* **Rules.** A compiler-IR rewrite is a tuple of :class:`RuleSpec` (``root`` is ``lhs`` and the
  conditions hold, then ``rhs``), written with this module's language in
  :mod:`compile.rewrites.rules` beside its certificate. A rule does not union directly: it records
  ``pending(rewrite, lhs, rhs)``; the analysis unions the two sides only when their shapes and
  dtypes agree, and a disagreement is an :class:`EGraphError` naming the rewrite (so is a
  right-hand side whose shape the analysis cannot compute). ``born(rewrite, t)`` records the
  e-classes a rewrite's right-hand side created (the provenance of a match).
* **Saturation** (:meth:`Session.saturate`): egglog runs one iteration of the rewrites, then the
  analysis to saturation, in a loop that enforces a wall-clock time limit, an e-node limit and an
  iteration limit (egglog 13.2's Python ``run`` has neither a time nor a node limit); the stop
  reason is one of :data:`STOP_REASONS`.
* **The typed view** (:meth:`Session.view`): e-classes with their shape, dtype, e-nodes (IR
  operator, attributes, operand e-classes), the original IR value they hold, the rewrites that
  created them. It is read from egglog's serialized e-graph (``EGraph._serialize``, private: only
  here, its format pinned by ``tests/test_compile_egraph.py``), because egglog 13.2 has no public
  API that enumerates e-classes (egglog-python issues #241, #365).
* **Calls and extraction** (:meth:`Session.add_calls`, :meth:`Session.extract`): a call e-node is
  unioned into a matched e-class; egglog's built-in extractor (tree cost, in Rust) picks one e-node
  per e-class with static constructor costs: a host compute operator :data:`HOST`, a data-movement
  operator :data:`MOVE`, an accelerator call :data:`CALL`, leaves 0, an ``add`` of two constants 0
  (``set_cost``: it is evaluated at compile time); egglog literals cost 1 each, noise beside these.
  The data-movement objective adds :data:`TRANSFER` per store and load to a call's own cost
  (``set_cost``). egglog sums tree costs in 64 bits, which a DAG of many shared values overflows
  (EfficientNet-B0: ~6e18 paths): a value with more than :data:`CUT` paths (and the computed
  operand of a convolution or dense layer, which a tiling reads once per tile) gets a free ``ref``
  e-node for the extraction above it and is extracted on its own (``extract_multiple``: the best
  of its other e-nodes). The extracted terms are mapped back onto the view's e-classes.

egglog objects may only be used on the thread that created them, deep terms need a deep stack,
and egglog translates a rule set once per e-graph (~0.5 s here): an e-graph with the analysis and
one list of rewrite rules lives on its own worker thread (512 MiB stack; the recursion limit is
raised while a session is open), and sessions with the same rules reuse it between ``push`` and
``pop`` (a few idle e-graphs are kept, freed on their own threads). Every graph value is
``let``-bound; extracted terms are walked iteratively.
"""
from __future__ import annotations

import atexit
import functools
import itertools
import json
import logging
import queue
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from egglog import (Bool, EGraph, Expr, String, StringLike, Vec, eq, f64, function, get_callable_args,
                    let, var,
                    get_callable_fn, get_literal_value, get_var_name, i64, i64Like, method, ne, relation, rule,
                    ruleset, run, seq, set_, set_cost, union, vars_)

from compile.errors import CompileError

HOST = 10_000        # a host compute operator
MOVE = 10            # a host data-movement operator (layout, padding, im2col, slicing)
CALL = 1             # an accelerator call
TRANSFER = 1_000     # data-movement objective: one store or one load of a call
LSTM_STEP_OPERATORS = 11     # host compute operators per step of an unrolled LSTM cell (lstm_host_cost)
LSTM_FIRST_STEP_SAVING = 3


def lstm_host_cost(steps: int) -> int:
    """The extraction cost of an LSTM layer of ``steps`` steps on the host (``nn.lstm``,
    ``lstm_layer``): :data:`HOST` per host compute operator of its unrolled form
    (:mod:`compile.rewrites.unroll`): the input projection (dense, bias_add), 6 operators in the
    first step (2 sigmoid, 2 tanh, 2 multiply: with the zero initial state neither the recurrence
    nor the forget gate is needed) and 11 in each later one (dense, bias_add, 3 sigmoid, 2 tanh,
    3 multiply, add), so 11 T - 3. With every operator on the host the folded layer is cheaper by
    the unrolled form's data movement; offloading some of its operators makes the unrolled form the
    cheaper one (:func:`compile.expand.program_cost`)."""
    return (LSTM_STEP_OPERATORS * steps - LSTM_FIRST_STEP_SAVING) * HOST


STOP_REASONS = ("saturated", "time", "e-nodes", "iterations", "none")
MAX_RANK = 6         # the shape analysis handles tensors up to this rank
CUT = 10 ** 12       # extraction: a graph value whose tree (paths to leaves) exceeds this is extracted alone
                     # (tree costs then stay below ~1e12 x HOST x a small factor, far from 2^64)


class EGraphError(CompileError):
    """An inconsistency egglog found (a rewrite's two sides of different shapes or dtypes, a
    right-hand side without a shape, an analysis disagreeing with the IR), or a malformed rule."""


# ----------------------------------------------------------------------------- the language
class Term(Expr):
    @method(cost=0)
    @classmethod
    def leaf(cls, uid: i64Like) -> Term: ...

    @method(cost=0)
    @classmethod
    def zeros(cls, shape: Vec[i64], dtype: StringLike) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def host(cls, key: StringLike, args: TermList) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def host1(cls, key: StringLike, a: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def host2(cls, key: StringLike, a: Term, b: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def host3(cls, key: StringLike, a: Term, b: Term, c: Term) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def move(cls, key: StringLike, args: TermList) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def move1(cls, key: StringLike, a: Term) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def move2(cls, key: StringLike, a: Term, b: Term) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def move3(cls, key: StringLike, a: Term, b: Term, c: Term) -> Term: ...

    @method(cost=CALL)
    @classmethod
    def call(cls, match: i64Like, args: TermList) -> Term: ...

    @method(cost=0)
    @classmethod
    def outputs(cls, xs: TermList) -> Term: ...

    @method(cost=0)
    @classmethod
    def ref(cls, uid: i64Like) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def dense(cls, x: Term, w: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def bias_add(cls, x: Term, b: Term, axis: i64Like) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def add(cls, x: Term, y: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def multiply(cls, x: Term, y: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def sigmoid(cls, x: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def tanh(cls, x: Term) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def conv2d(cls, x: Term, w: Term, strides: Vec[i64], padding: Vec[i64], dilation: Vec[i64], groups: i64Like,
               data_layout: StringLike, kernel_layout: StringLike) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def max_pool2d(cls, x: Term, pool_size: Vec[i64], strides: Vec[i64], padding: Vec[i64], ceil_mode: Bool) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def lstm(cls, args: TermList) -> Term: ...

    @method(cost=HOST)
    @classmethod
    def lstm_layer(cls, x: Term, w_ih: Term, w_hh: Term, b: Term) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def transpose(cls, x: Term, axes: Vec[i64]) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def reshape(cls, x: Term, newshape: Vec[i64]) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def pad(cls, x: Term, pad_width: Vec[i64], pad_value: f64, pad_mode: StringLike) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def im2col(cls, x: Term, kernel_size: Vec[i64], strides: Vec[i64], padding: Vec[i64], dilation: Vec[i64]) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def strided_slice(cls, x: Term, begin: Vec[i64], end: Vec[i64], strides: Vec[i64], axes: Vec[i64]) -> Term: ...

    @method(cost=MOVE)
    @classmethod
    def concatenate(cls, xs: TermList, axis: i64Like) -> Term: ...


class TermList(Expr):
    @method(cost=0)
    @classmethod
    def nil(cls) -> TermList: ...

    @method(cost=0)
    @classmethod
    def cons(cls, head: Term, tail: TermList) -> TermList: ...


@function
def shape(t: Term) -> Vec[i64]: ...


@function
def dtype(t: Term) -> String: ...


@function
def numel(t: Term) -> i64: ...


@function
def cat_shape(xs: TermList, axis: i64) -> Vec[i64]: ...


@function
def cat_dtype(xs: TermList) -> String: ...


cat_need = relation("cat_need", TermList, i64)
const_term = relation("const_term", Term)       # the e-class's value is a compile-time constant
const_list = relation("const_list", TermList)
zero_term = relation("zero_term", Term)         # ... a constant of zeros
pending = relation("pending", String, Term, Term)   # a rewrite's application: (rewrite, lhs, rhs)
committed = relation("committed", String, Term, Term)
shape_mismatch = relation("shape_mismatch", String, Vec[i64], Vec[i64])
dtype_mismatch = relation("dtype_mismatch", String, String, String)
born = relation("born", String, Term)           # the rewrite whose right-hand side created this term
seed = relation("seed", Term, Vec[i64], String)  # a graph value's shape and dtype, from the IR


def terms(*xs) -> TermList:
    """The cons list of ``xs``."""
    out = TermList.nil()
    for x in reversed(xs):
        out = TermList.cons(x, out)
    return out


def vec(*xs) -> Vec[i64]:
    """A ``Vec[i64]`` of ints or i64 expressions."""
    if all(isinstance(x, (int, np.integer)) for x in xs):
        return _int_vec(tuple(int(x) for x in xs))
    return Vec[i64](*[x if not isinstance(x, (int, np.integer)) else i64(int(x)) for x in xs])


@functools.lru_cache(maxsize=4096)
def _int_vec(xs: tuple) -> Vec[i64]:
    return Vec[i64](*[i64(x) for x in xs]) if xs else Vec[i64].empty()


@functools.lru_cache(maxsize=4096)
def _string(s: str) -> String:
    return String(s)


def term_vars(names: str):
    """Pattern variables of sort Term (space-separated names), for rules."""
    return list(vars_(names, Term))


def int_vars(names: str):
    return list(vars_(names, i64))


def vec_vars(names: str):
    return list(vars_(names, Vec[i64]))


def str_vars(names: str):
    return list(vars_(names, String))


def list_vars(names: str):
    return list(vars_(names, TermList))


def float_vars(names: str):
    return list(vars_(names, f64))


def bool_vars(names: str):
    return list(vars_(names, Bool))


def string(s: str) -> String:
    return String(s)


def false() -> Bool:
    return Bool(False)


__all__ = ["Term", "TermList", "rule_var", "shape", "dtype", "zero_term", "const_term", "terms", "vec", "eq", "ne",
           "term_vars", "int_vars", "vec_vars", "str_vars", "list_vars", "float_vars", "bool_vars", "string",
           "false", "RuleSpec", "Session", "View", "EClass", "ENode", "EGraphError",
           "apply_rules", "HOST", "MOVE", "CALL", "TRANSFER", "STOP_REASONS", "TYPED"]


# ----------------------------------------------------------------------------- typed operators
# IR operator -> (constructor, arity (None: an operand list), ((attribute, encoding), ...)); every
# attribute of the IR operator (compile.ir.ops.OPS[op].attrs) is an argument of its constructor
_VEC, _PADS, _INT, _STR, _BOOL, _FLOAT, _PAIRS = "vec", "pads", "int", "str", "bool", "float", "pairs"
TYPED = {
    "nn.dense": ("dense", 2, ()),
    "nn.bias_add": ("bias_add", 2, (("axis", _INT),)),
    "add": ("add", 2, ()),
    "multiply": ("multiply", 2, ()),
    "sigmoid": ("sigmoid", 1, ()),
    "tanh": ("tanh", 1, ()),
    "nn.conv2d": ("conv2d", 2, (("strides", _VEC), ("padding", _PADS), ("dilation", _VEC), ("groups", _INT),
                                ("data_layout", _STR), ("kernel_layout", _STR))),
    "nn.max_pool2d": ("max_pool2d", 1, (("pool_size", _VEC), ("strides", _VEC), ("padding", _PADS),
                                        ("ceil_mode", _BOOL))),
    "lstm_layer": ("lstm_layer", 4, ()),
    "nn.lstm": ("lstm", None, ()),
    "transpose": ("transpose", 1, (("axes", _VEC),)),
    "reshape": ("reshape", 1, (("newshape", _VEC),)),
    "nn.pad": ("pad", 1, (("pad_width", _PAIRS), ("pad_value", _FLOAT), ("pad_mode", _STR))),
    "nn.im2col": ("im2col", 1, (("kernel_size", _VEC), ("strides", _VEC), ("padding", _PADS), ("dilation", _VEC))),
    "strided_slice": ("strided_slice", 1, (("begin", _VEC), ("end", _VEC), ("strides", _VEC), ("axes", _VEC))),
    "concatenate": ("concatenate", None, (("axis", _INT),)),
}
_BY_CONSTRUCTOR = {c: op for op, (c, _, _) in TYPED.items()}
_LIST_LAST = {"concatenate"}          # the operand list comes first, then the attributes
_I64_MAX = (1 << 63) - 1


def _data_movement() -> frozenset:
    from compile.rewrites.lower import DATA_MOVEMENT
    return frozenset(DATA_MOVEMENT)


def _encode(kind: str, v):
    """An IR attribute value as an egglog value (ValueError / TypeError when it has no encoding)."""
    def ints(xs):
        out = tuple(int(x) for x in xs)
        if any(not (-_I64_MAX <= x <= _I64_MAX) or isinstance(x, bool) for x in out):
            raise ValueError(xs)
        return out
    if kind == _VEC:
        return vec(*ints(v))
    if kind == _PADS:
        from compile.ir.ops import _pads
        return vec(*ints(_pads(v)))
    if kind == _PAIRS:
        return vec(*ints(x for pair in v for x in pair))
    if kind == _INT:
        (x,) = ints((v,))
        return i64(x)
    if kind == _STR:
        if not isinstance(v, str):
            raise TypeError(v)
        return _string(v)
    if kind == _BOOL:
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(v)
        return Bool(bool(v))
    if kind == _FLOAT:
        return f64(float(v))
    raise ValueError(kind)


def _decode(kind: str, v):
    """A Python attribute value from a decoded egglog value (see :func:`_encode`)."""
    if kind in (_VEC, _PADS):
        return tuple(v)
    if kind == _PAIRS:
        return tuple(zip(v[0::2], v[1::2]))
    if kind == _INT:
        return int(v)
    if kind == _BOOL:
        return bool(v)
    if kind == _FLOAT:
        return float(v)
    return v


# ----------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class RuleSpec:
    """One egglog rule of the compiler-IR rewrite ``rewrite``: where e-class ``root`` holds ``lhs``
    (a pattern over variables) and every condition of ``where`` holds (egglog facts: equalities,
    ``ne``, i64 comparisons; computations that may fail, such as an out-of-range ``Vec`` index,
    belong here, where they fail the match), ``rhs`` is added and recorded as equal to ``root``.
    ``label`` tells the rule apart from the other rules of the rewrite (a variant per rank or per
    operand count). ``rhs`` may use only bound variables, and the names of ``lets``: ``(name, term)``
    pairs bound in order before ``rhs`` is added (egglog ``let`` actions, each term over the bound
    variables and the earlier names; :func:`rule_var` refers to one), so a right-hand side whose
    values are shared many times over (a recurrence) stays linear in size: egglog translates a rule's
    actions as trees."""
    rewrite: str
    label: str
    root: object
    lhs: object
    where: tuple
    rhs: object
    lets: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.rewrite}/{self.label}"

    def egglog_rule(self):
        """The egglog rule (built once per spec)."""
        got = _RULES.get(id(self))
        if got is None or got[0] is not self:
            acts = []
            for name, term in self.lets:
                acts.append(let(_LET_PREFIX + name, term))
                acts += [born(String(self.rewrite), t) for t in _subterms(term)]
            acts.append(pending(String(self.rewrite), self.root, self.rhs))
            acts += [born(String(self.rewrite), t) for t in _subterms(self.rhs)]
            got = _RULES[id(self)] = (self, rule(eq(self.root).to(self.lhs), *self.where, name=self.name).then(*acts))
        return got[1]


_RULES: dict = {}
_LET_PREFIX = "rw_"          # rule-local let names (the graph's global lets are v<uid> and outputs<n>)


def rule_var(name: str) -> Term:
    """The Term bound by a :class:`RuleSpec`'s ``lets`` entry ``name`` (within that rule)."""
    return var(name, Term, egg_name=f"${_LET_PREFIX}{name}")


class _LocalLetNames(logging.Filter):
    """egglog-python names every ``let`` as a global (``$name``); inside a rule egglog then warns
    that a local name starts with ``$`` (a naming convention only: the binding is rule-local)."""
    def filter(self, record):
        return f"Non-global `${_LET_PREFIX}" not in record.getMessage()


logging.getLogger("egglog").addFilter(_LocalLetNames())


def _subterms(e) -> list:
    """The Term sub-expressions of a right-hand side that are not variables (iterative)."""
    out, stack, seen = [], [e], set()
    while stack:
        x = stack.pop()
        if get_var_name(x) is not None or get_callable_fn(x) is None:
            continue
        key = hash(x)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(x, Term):
            out.append(x)
        if isinstance(x, (Term, TermList)):
            stack.extend(a for a in get_callable_args(x) if isinstance(a, (Term, TermList)))
    return out


def _analysis_rules() -> list:
    """Shapes, dtypes, constants of the terms rewrites create, and the checked unions."""
    t, x, y, w, b, h = vars_("t x y w b h", Term)
    lst, rest = vars_("lst rest", TermList)
    sx, sy, sw, sb, s, s2, out, ax, ns, pw, ks, st, pd, dil, bg, en = vars_(
        "sx sy sw sb s s2 out ax ns pw ks st pd dil bg en", Vec[i64])
    d, d2, d3, d4, m, dl, kl, n = vars_("d d2 d3 d4 m dl kl n", String)
    k, a, g, nh, nw, hh, dd, e2 = vars_("k a g nh nw hh dd e2", i64)
    (v,) = vars_("v", f64)
    (c,) = vars_("c", Bool)
    R = []
    # constants made by rewrites
    R.append(rule(eq(t).to(Term.zeros(s, d)), name="zeros").then(
        set_(shape(t)).to(s), set_(dtype(t)).to(d), const_term(t), zero_term(t)))
    # shapes
    R.append(rule(eq(t).to(Term.dense(x, w)), eq(sx).to(shape(x)), eq(sw).to(shape(w)), eq(sw.length()).to(i64(2)),
                  eq(k).to(sx.length()), k >= 1, eq(sx[k - 1]).to(sw[1]), eq(out).to(sx.set(k - 1, sw[0])),
                  name="shape:dense").then(set_(shape(t)).to(out)))
    R.append(rule(eq(t).to(Term.bias_add(x, b, a)), eq(sx).to(shape(x)), eq(sb).to(shape(b)),
                  eq(sb.length()).to(i64(1)), a >= 0, eq(sx[a]).to(sb[0]), name="shape:bias_add").then(
        set_(shape(t)).to(sx)))
    R.append(rule(eq(t).to(Term.add(x, y)), eq(sx).to(shape(x)), eq(sx).to(shape(y)), name="shape:add").then(
        set_(shape(t)).to(sx)))
    R.append(rule(eq(t).to(Term.multiply(x, y)), eq(sx).to(shape(x)), eq(sx).to(shape(y)),
                  name="shape:multiply").then(set_(shape(t)).to(sx)))
    for name, act in (("sigmoid", Term.sigmoid), ("tanh", Term.tanh)):
        R.append(rule(eq(t).to(act(x)), eq(sx).to(shape(x)), name=f"shape:{name}").then(set_(shape(t)).to(sx)))
    for layout, dims in (("NCHW", (1, 2, 3)), ("NHWC", (3, 1, 2))):
        ci, hi, wi = dims
        klay = "OIHW" if layout == "NCHW" else "OHWI"
        oh = (sx[hi] + pd[0] + pd[2] - dil[0] * (sw[hi] - 1) - 1)
        ow = (sx[wi] + pd[1] + pd[3] - dil[1] * (sw[wi] - 1) - 1)
        res = vec(sx[0], sw[0], nh / st[0] + 1, nw / st[1] + 1) if layout == "NCHW" else \
            vec(sx[0], nh / st[0] + 1, nw / st[1] + 1, sw[0])
        R.append(rule(eq(t).to(Term.conv2d(x, w, st, pd, dil, i64(1), String(layout), String(klay))),
                      eq(sx).to(shape(x)), eq(sw).to(shape(w)), eq(sx.length()).to(i64(4)),
                      eq(sw.length()).to(i64(4)), eq(sx[ci]).to(sw[ci]), eq(nh).to(oh), eq(nw).to(ow), nh >= 0,
                      nw >= 0, st[0] >= 1, st[1] >= 1, eq(out).to(res), name=f"shape:conv2d:{layout}").then(
            set_(shape(t)).to(out)))
    R.append(rule(eq(t).to(Term.max_pool2d(x, ks, st, pd, Bool(False))), eq(sx).to(shape(x)),
                  eq(sx.length()).to(i64(4)), eq(nh).to(sx[2] + pd[0] + pd[2] - ks[0]),
                  eq(nw).to(sx[3] + pd[1] + pd[3] - ks[1]), nh >= 0, nw >= 0, st[0] >= 1, st[1] >= 1,
                  eq(out).to(vec(sx[0], sx[1], nh / st[0] + 1, nw / st[1] + 1)), name="shape:max_pool2d").then(
        set_(shape(t)).to(out)))
    for r in range(1, MAX_RANK + 1):
        R.append(rule(eq(t).to(Term.transpose(x, ax)), eq(sx).to(shape(x)), eq(sx.length()).to(i64(r)),
                      eq(ax.length()).to(i64(r)), *[ax[i] >= 0 for i in range(r)], *[ax[i] < r for i in range(r)],
                      eq(out).to(vec(*[sx[ax[i]] for i in range(r)])), name=f"shape:transpose:{r}").then(
            set_(shape(t)).to(out)))
        R.append(rule(eq(t).to(Term.pad(x, pw, v, m)), eq(sx).to(shape(x)), eq(sx.length()).to(i64(r)),
                      eq(pw.length()).to(i64(2 * r)), *[pw[i] >= 0 for i in range(2 * r)],
                      eq(out).to(vec(*[sx[i] + pw[2 * i] + pw[2 * i + 1] for i in range(r)])),
                      name=f"shape:pad:{r}").then(set_(shape(t)).to(out)))
    for r in range(0, MAX_RANK + 1):
        prod_s = _product([sx[i] for i in range(r)])
        prod_n = _product([ns[i] for i in range(r)])
        R.append(rule(eq(t).to(Term.reshape(x, ns)), eq(sx).to(shape(x)), eq(sx.length()).to(i64(r)),
                      name=f"numel:{r}").then(set_(numel(x)).to(prod_s)))
        R.append(rule(eq(t).to(Term.reshape(x, ns)), eq(ns.length()).to(i64(r)), *[ns[i] >= 0 for i in range(r)],
                      eq(numel(x)).to(prod_n), name=f"shape:reshape:{r}").then(set_(shape(t)).to(ns)))
    R.append(rule(eq(t).to(Term.im2col(x, ks, st, pd, dil)), eq(sx).to(shape(x)), eq(sx.length()).to(i64(4)),
                  eq(nh).to(sx[2] + pd[0] + pd[2] - dil[0] * (ks[0] - 1) - 1),
                  eq(nw).to(sx[3] + pd[1] + pd[3] - dil[1] * (ks[1] - 1) - 1), nh >= 0, nw >= 0, st[0] >= 1,
                  st[1] >= 1, eq(out).to(vec(sx[0] * (nh / st[0] + 1) * (nw / st[1] + 1), sx[1] * ks[0] * ks[1])),
                  name="shape:im2col").then(set_(shape(t)).to(out)))
    R.append(rule(eq(t).to(Term.strided_slice(x, bg, en, vec(1), ax)), eq(sx).to(shape(x)),
                  eq(bg.length()).to(i64(1)), eq(en.length()).to(i64(1)), eq(ax.length()).to(i64(1)), eq(a).to(ax[0]),
                  a >= 0, eq(dd).to(sx[a]), eq(e2).to(en[0].min(dd)), bg[0] >= 0, bg[0] < e2,
                  eq(out).to(sx.set(a, e2 - bg[0])), name="shape:strided_slice").then(set_(shape(t)).to(out)))
    R.append(rule(eq(t).to(Term.concatenate(lst, a)), name="cat:need").then(cat_need(lst, a)))
    R.append(rule(cat_need(TermList.cons(h, rest), a), name="cat:need-rest").then(cat_need(rest, a)))
    R.append(rule(cat_need(lst, a), eq(lst).to(TermList.cons(h, TermList.nil())), eq(s).to(shape(h)),
                  eq(d).to(dtype(h)), name="cat:one").then(set_(cat_shape(lst, a)).to(s), set_(cat_dtype(lst)).to(d)))
    R.append(rule(cat_need(lst, a), eq(lst).to(TermList.cons(h, rest)), eq(s).to(shape(h)), eq(s2).to(cat_shape(rest, a)),
                  eq(s.length()).to(s2.length()), eq(out).to(s.set(a, s[a] + s2[a])), name="cat:shape").then(
        set_(cat_shape(lst, a)).to(out)))
    R.append(rule(cat_need(lst, a), eq(lst).to(TermList.cons(h, rest)), eq(d).to(dtype(h)), eq(d).to(cat_dtype(rest)),
                  name="cat:dtype").then(set_(cat_dtype(lst)).to(d)))
    R.append(rule(eq(t).to(Term.concatenate(lst, a)), eq(s).to(cat_shape(lst, a)), eq(d).to(cat_dtype(lst)),
                  name="shape:concatenate").then(set_(shape(t)).to(s), set_(dtype(t)).to(d)))
    R.append(rule(eq(t).to(Term.lstm_layer(x, w, y, b)), eq(sx).to(shape(x)), eq(sx.length()).to(i64(2)),
                  eq(sy).to(shape(y)), eq(sy.length()).to(i64(2)), eq(hh).to(sy[1]), hh >= 1,
                  eq(sy[0]).to(hh * 4), eq(shape(w)).to(vec(hh * 4, sx[1])), eq(shape(b)).to(vec(hh * 4)),
                  eq(out).to(vec(sx[0], hh)), name="shape:lstm_layer").then(set_(shape(t)).to(out)))
    # dtypes: the operands' common dtype (the IR's rule when they agree)
    unary = [Term.transpose(x, ax), Term.reshape(x, ns), Term.pad(x, pw, v, m), Term.im2col(x, ks, st, pd, dil),
             Term.strided_slice(x, bg, en, sb, ax), Term.max_pool2d(x, ks, st, pd, c), Term.sigmoid(x), Term.tanh(x)]
    for k_, pat in enumerate(unary):
        R.append(rule(eq(t).to(pat), eq(d).to(dtype(x)), name=f"dtype:unary{k_}").then(set_(dtype(t)).to(d)))
    for k_, pat in enumerate([Term.dense(x, y), Term.bias_add(x, y, a), Term.add(x, y),
                              Term.conv2d(x, y, st, pd, dil, g, dl, kl), Term.multiply(x, y)]):
        R.append(rule(eq(t).to(pat), eq(d).to(dtype(x)), eq(d).to(dtype(y)), name=f"dtype:binary{k_}").then(
            set_(dtype(t)).to(d)))
    R.append(rule(eq(t).to(Term.lstm_layer(x, w, y, b)), eq(d).to(dtype(x)), eq(d).to(dtype(w)), eq(d).to(dtype(y)),
                  eq(d).to(dtype(b)), name="dtype:lstm_layer").then(set_(dtype(t)).to(d)))
    # compile-time constants: data movement of constants, and the add of two constants (free: evaluated
    # when the program is built)
    for k_, pat in enumerate(unary[:5]):
        R.append(rule(eq(t).to(pat), const_term(x), name=f"const:move{k_}").then(const_term(t)))
    R.append(rule(eq(lst).to(TermList.nil()), name="const:nil").then(const_list(lst)))
    R.append(rule(eq(lst).to(TermList.cons(h, rest)), const_term(h), const_list(rest), name="const:cons").then(
        const_list(lst)))
    R.append(rule(eq(t).to(Term.concatenate(lst, a)), const_list(lst), name="const:concatenate").then(const_term(t)))
    R.append(rule(eq(t).to(Term.add(x, y)), const_term(x), const_term(y), name="const:add").then(
        const_term(t), set_cost(Term.add(x, y), 0)))
    # a recurrent layer on the host costs what its unrolled cell costs there (lstm_host_cost)
    R.append(rule(eq(t).to(Term.lstm(lst)), eq(s).to(shape(t)), eq(s.length()).to(i64(4)), name="cost:lstm").then(
        set_cost(Term.lstm(lst), (s[0] * LSTM_STEP_OPERATORS - LSTM_FIRST_STEP_SAVING) * HOST)))
    R.append(rule(eq(t).to(Term.lstm_layer(x, w, y, b)), eq(s).to(shape(t)), eq(s.length()).to(i64(2)),
                  name="cost:lstm_layer").then(
        set_cost(Term.lstm_layer(x, w, y, b), (s[0] * LSTM_STEP_OPERATORS - LSTM_FIRST_STEP_SAVING) * HOST)))
    # a rewrite's two sides are united only when their shapes and dtypes agree
    R.append(rule(pending(n, x, y), eq(s).to(shape(x)), eq(s).to(shape(y)), eq(d).to(dtype(x)), eq(d).to(dtype(y)),
                  name="commit").then(union(x).with_(y), committed(n, x, y)))
    R.append(rule(pending(n, x, y), eq(s).to(shape(x)), eq(s2).to(shape(y)), ne(s).to(s2), name="mismatch:shape").then(
        shape_mismatch(n, s, s2)))
    R.append(rule(pending(n, x, y), eq(d).to(dtype(x)), eq(d2).to(dtype(y)), ne(d).to(d2), name="mismatch:dtype").then(
        dtype_mismatch(n, d, d2)))
    del d3, d4
    return R


def _product(xs):
    out = i64(1)
    for x in xs:
        out = out * x
    return out


ANALYSIS = ruleset(*_analysis_rules(), name="analysis")

def _seed_rule():
    t, = vars_("t", Term)
    s, = vars_("s", Vec[i64])
    d, = vars_("d", String)
    return rule(seed(t, s, d), name="seed").then(set_(shape(t)).to(s), set_(dtype(t)).to(d))


SEEDS = ruleset(_seed_rule(), name="seeds")


# ----------------------------------------------------------------------------- the typed view
@dataclass(frozen=True)
class ENode:
    """One e-node: ``op`` is the IR operator (``nn.conv2d``, ``sigmoid``, ...), or ``leaf`` (an
    original graph input or constant, ``value`` its uid), ``zeros`` (a zero constant, ``attrs``
    shape and dtype) or ``call`` (``value`` the match id of :meth:`Session.add_call`); ``attrs``:
    the IR attributes as sorted (name, value) pairs; ``children``: operand e-class ids."""
    op: str
    attrs: tuple = ()
    children: tuple = ()
    value: int | None = None

    @property
    def attr_dict(self) -> dict:
        return dict(self.attrs)


@dataclass
class EClass:
    """An e-class of Terms: ``shape`` / ``dtype`` from the analysis (None where unknown), its
    e-nodes, ``origin`` (an original IR value it holds, or None), ``rules`` (the rewrites whose
    right-hand sides created it), ``const`` (its value is a compile-time constant)."""
    id: int
    shape: tuple | None = None
    dtype: str | None = None
    nodes: list = field(default_factory=list)
    origin: object = None
    rules: tuple = ()
    const: bool = False


@dataclass
class View:
    """The e-graph as e-classes and e-nodes (see the module docstring); ``applied``: rewrite ->
    applications (distinct pending (lhs, rhs) pairs); ``enodes``: the number of Term e-nodes."""
    classes: dict
    value_class: dict                 # original IR value uid -> e-class id
    applied: dict
    enodes: int
    outputs: tuple = ()               # the output e-classes, in the graph's order
    _index: dict = field(default_factory=dict, repr=False)
    _by_op: dict = field(default_factory=dict, repr=False)
    own: dict = field(default_factory=dict, repr=False)    # ENode -> the original IR value it is
    _cache: dict = field(default_factory=dict, repr=False)  # derived tables (heights, opaque keys)

    def class_of(self, value) -> int:
        """The e-class of an original IR value (or of its uid)."""
        return self.value_class[value if isinstance(value, int) else value.uid]

    def nodes(self, op: str) -> list:
        """``(e-class id, ENode)`` for every e-node of IR operator ``op``."""
        return self._by_op.get(op, [])


# ----------------------------------------------------------------------------- the session
class _Worker:
    """A thread with a big stack that runs submitted calls one at a time (egglog objects stay on it)."""

    def __init__(self, stack_mb: int = 512):
        self._q: queue.Queue = queue.Queue()
        self._stack = stack_mb
        self._thread = None

    def start(self) -> None:
        prev = threading.stack_size(self._stack * 1024 * 1024)
        try:
            self._thread = threading.Thread(target=self._loop, name="egglog", daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(prev)

    def _loop(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            fn, args, box, done = item
            try:
                box["value"] = fn(*args)
            except BaseException as exc:     # noqa: BLE001 - re-raised on the caller's thread
                _clear_frames(exc)
                box["error"] = exc
            done.set()

    def call(self, fn, *args):
        box, done = {}, threading.Event()
        self._q.put((fn, args, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def stop(self) -> None:
        self._q.put(None)
        self._thread.join()



_LIMIT_LOCK = threading.Lock()
_LIMIT_USERS = [0, None]            # open users of the raised recursion limit, the limit before


def _raise_recursion_limit():
    with _LIMIT_LOCK:
        if _LIMIT_USERS[0] == 0:
            _LIMIT_USERS[1] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_LIMIT_USERS[1], 10 ** 6))
        _LIMIT_USERS[0] += 1
        return _LIMIT_USERS[1]


def _restore_recursion_limit() -> None:
    with _LIMIT_LOCK:
        _LIMIT_USERS[0] -= 1
        if _LIMIT_USERS[0] == 0:
            sys.setrecursionlimit(_LIMIT_USERS[1])


class _Engine:
    """A worker thread owning one egglog e-graph with the analysis and a fixed list of rewrite rules
    registered (egglog translates rule sets once per e-graph, ~0.5 s here): sessions with the same
    rules reuse it, each between a ``push`` and a ``pop``."""

    def __init__(self, specs: tuple, stack_mb: int):
        self.specs = specs                     # kept alive: the pool is keyed by their ids
        self.worker = _Worker(stack_mb)
        self.worker.start()
        self.worker.call(self._init)

    def _init(self):
        self.eg = EGraph()
        self.rw = ruleset(*[s.egglog_rule() for s in self.specs], name=f"rewrites{next(_ids)}") \
            if self.specs else None
        self.rebuild = ruleset(name=f"rebuild{next(_ids)}")
        warm = [run(SEEDS), run(ANALYSIS), run(self.rebuild)] + ([run(self.rw)] if self.rw is not None else [])
        self.eg.run(seq(*warm))                # translate the rule sets now, on the empty e-graph

    def close(self):
        self.worker.call(self._free)
        self.worker.stop()

    def _free(self):
        # The Rust e-graph must be freed on this thread, but egglog's Python states (the current one,
        # and the copies each push made) sit in reference cycles that a garbage collection on another
        # thread would free: collect them here, then drop the last reference to the Rust object.
        import gc
        gc.collect()
        state = self.eg._state
        state.egraph = None
        del self.eg, state
        self.rw = self.rebuild = None


_POOL: dict = {}                   # (rule ids, stack) -> idle engines
_POOL_ORDER: list = []             # idle engines, least recently used first
_POOL_MAX = 4
_POOL_LOCK = threading.Lock()


def _acquire(specs: tuple, stack_mb: int) -> _Engine:
    key = (tuple(id(s) for s in specs), stack_mb)
    with _POOL_LOCK:
        idle = _POOL.get(key)
        if idle:
            eng = idle.pop()
            _POOL_ORDER.remove(eng)
            return eng
    return _Engine(specs, stack_mb)


@atexit.register
def _close_pool() -> None:
    """Free the pooled e-graphs on their own threads before the interpreter's shutdown would free
    them on the main thread (egglog refuses that)."""
    with _POOL_LOCK:
        engines = list(_POOL_ORDER)
        _POOL_ORDER.clear()
        _POOL.clear()
    for eng in engines:
        try:
            eng.close()
        except Exception:                 # noqa: BLE001 - shutting down
            pass


def _release(eng: _Engine) -> None:
    key = (tuple(id(s) for s in eng.specs), eng.worker._stack)
    evict = []
    with _POOL_LOCK:
        _POOL.setdefault(key, []).append(eng)
        _POOL_ORDER.append(eng)
        while len(_POOL_ORDER) > _POOL_MAX:
            old = _POOL_ORDER.pop(0)
            for lst in _POOL.values():
                if old in lst:
                    lst.remove(old)
            evict.append(old)
    for old in evict:
        old.close()


def _clear_frames(exc: BaseException) -> None:
    """Drop the local variables of the frames of ``exc`` and of the exceptions it chains: they may
    hold egglog objects, which must not be freed on the caller's thread."""
    import traceback
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


_ids = itertools.count()


class Session:
    """One e-graph, used as a context manager (``with Session(rules) as s: ...``); every method
    runs egglog on the session's worker thread and returns plain Python data.

    ``rules``: the :class:`RuleSpec` of the rewrites saturation may use."""

    def __init__(self, rules=(), stack_mb: int = 512):
        self._specs = tuple(rules)
        self._stack_mb = stack_mb
        self._engine: _Engine | None = None
        self._values: dict[int, object] = {}     # uid -> original IR value
        self._keys: dict[str, tuple] = {}        # opaque key -> (op, attrs)
        self._calls: dict[int, tuple] = {}       # call id -> (e-class, operand e-classes)
        self._cuts: tuple = ([], [])             # uids of the values extracted on their own (_cuts)
        self._view: View | None = None
        self._outputs = None

    @property
    def _worker(self) -> _Worker:
        return self._engine.worker

    def __enter__(self):
        self._engine = _acquire(self._specs, self._stack_mb)
        _raise_recursion_limit()
        try:
            self._worker.call(self._start)
        except BaseException:
            _restore_recursion_limit()
            self._engine.close()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self._worker.call(self._stop)
        except BaseException:
            self._engine.close()              # an e-graph in an unknown state is not reused
            raise
        else:
            if exc[0] is None:
                _release(self._engine)
            else:                             # the session failed (an egglog panic may leave state behind)
                self._engine.close()
        finally:
            _restore_recursion_limit()
            self._engine = None

    def _start(self):
        eng = self._engine
        eng.eg.push()
        self._eg, self._rw, self._rebuild = eng.eg, eng.rw, eng.rebuild
        self._ref: dict[int, object] = {}
        self._class_expr: dict[int, object] = {}

    def _stop(self):
        self._ref.clear()
        self._class_expr.clear()
        self._outputs = None
        self._eg.pop()
        self._eg = self._rw = self._rebuild = None

    # ---- building
    def add_graph(self, outputs: list) -> None:
        """Add the IR values ``outputs`` and everything they depend on (each value once, let-bound),
        with their shapes and dtypes; the output list is the extraction root."""
        self._worker.call(self._add_graph, list(outputs))

    def _add_graph(self, outputs):
        from compile.ir.graph import Const, Node, topological
        moves = _data_movement()
        acts = []
        for v in topological(outputs, nodes_only=False):
            if v.uid in self._ref:
                continue
            self._values[v.uid] = v
            if isinstance(v, Node):
                expr = self._node_expr(v, [self._ref[a.uid] for a in v.args], moves)
            else:
                expr = Term.leaf(i64(v.uid))
            # one global let per value, referred to by name: the commands stay small (egglog turns a
            # nested expression with shared parts into lets itself, in quadratic time)
            name = f"v{v.uid}"
            acts.append(let(name, expr))
            ref = self._ref[v.uid] = var(name, Term, egg_name=f"${name}")
            acts.append(seed(ref, vec(*v.shape), _string(v.dtype)))
            if isinstance(v, Const):
                acts.append(const_term(ref))
                if not np.any(np.asarray(v.value)):
                    acts.append(zero_term(ref))
        self._outputs = Term.outputs(terms(*[self._ref[o.uid] for o in outputs]))
        acts.append(let(f"outputs{next(_ids)}", self._outputs))
        self._cuts = _cuts(outputs)
        self._register(acts)
        self._run(run(SEEDS))

    def _register(self, acts):
        try:
            if acts:
                self._eg.register(*acts)
        except Exception as exc:          # egglog's EggSmolError
            raise _egglog_error(exc) from None

    def _node_expr(self, v, args, moves):
        typed = TYPED.get(v.op)
        if typed is not None:
            cons, arity, attrs = typed
            try:
                enc = [_encode(kind, v.attrs[name]) for name, kind in attrs]
                if arity is None:
                    return getattr(Term, cons)(terms(*args), *enc)
                if len(args) == arity:
                    return getattr(Term, cons)(*args, *enc)
            except (TypeError, ValueError, KeyError, OverflowError):
                pass                       # an attribute without an encoding: an opaque operator
        key = f"{v.op}{sorted(v.attrs.items())!r}"
        self._keys.setdefault(key, (v.op, dict(v.attrs)))
        return _opaque_expr(v.op in moves, key, args)

    # ---- saturation
    def saturate(self, max_iters: int = 6, time_limit: float = 5.0, max_enodes: int = 50_000) -> dict:
        """Run the rewrites: one egglog iteration of them, then the analysis to saturation, until
        nothing changes (``saturated``), ``time_limit`` seconds have passed (``time``), the
        e-graph holds ``max_enodes`` Term e-nodes (``e-nodes``) or ``max_iters`` iterations ran
        (``iterations``); ``none`` without rules. Returns ``{"stop": reason, "iterations": n,
        "seconds": s, "enodes": n}``. EGraphError for a rewrite whose two sides disagree."""
        return self._worker.call(self._saturate, max_iters, time_limit, max_enodes)

    def _saturate(self, max_iters, time_limit, max_enodes):
        t0 = time.perf_counter()
        self._view = None
        if self._rw is None:
            return {"stop": "none", "iterations": 0, "seconds": 0.0, "enodes": self._enodes()}
        reason, n = "iterations", 0
        step = seq(run(self._rw), run(ANALYSIS).saturate())
        self._run(run(ANALYSIS).saturate())
        while n < max_iters:
            rep = self._run(step)
            n += 1
            self._check()
            if not rep.updated:
                reason = "saturated"
                break
            if time.perf_counter() - t0 >= time_limit:
                reason = "time"
                break
            if self._enodes() >= max_enodes:
                reason = "e-nodes"
                break
        self._check(final=True)
        return {"stop": reason, "iterations": n, "seconds": time.perf_counter() - t0, "enodes": self._enodes()}

    def _run(self, schedule):
        try:
            return self._eg.run(schedule)
        except Exception as exc:
            raise _egglog_error(exc) from None

    def _enodes(self) -> int:
        return int(sum(n for fn, n in self._eg.all_function_sizes() if str(fn).startswith(("Term.", "TermList."))))

    def _check(self, final: bool = False):
        bad = []
        for rel, what in ((shape_mismatch, "shape"), (dtype_mismatch, "dtype")):
            if self._eg.function_size(rel):
                for k in self._eg.function_values(rel):
                    name, a, b = (_py(x) for x in get_callable_args(k))
                    bad.append(f"rewrite {name}: the two sides of an application differ in {what} ({a} vs {b})")
        if bad:
            raise EGraphError("; ".join(sorted(bad)) + " (the union is refused)")
        if final and self._eg.function_size(pending) != self._eg.function_size(committed):
            bad = set()
            for k in self._eg.function_values(pending):
                name, lhs, rhs = get_callable_args(k)
                if self._eg.lookup_function_value(shape(rhs)) is None or \
                        self._eg.lookup_function_value(dtype(rhs)) is None:
                    bad.add(get_literal_value(name))
            raise EGraphError(f"rewrite(s) {', '.join(sorted(bad)) or '?'}: a right-hand side whose shape or dtype "
                              "the analysis cannot compute (the union is refused)")

    # ---- the view
    def view(self) -> View:
        """The typed view of the current e-graph (read from egglog's serialized e-graph)."""
        if self._view is None:
            self._view = self._worker.call(self._make_view)
        return self._view

    def _make_view(self) -> View:
        return parse_serialized(self._serialize(), self._values, self._keys)

    def _serialize(self) -> dict:
        """egglog's serialized e-graph as JSON data: ``EGraph._serialize`` is private (egglog 13.2 has
        no public API that enumerates e-classes); its format is pinned by
        ``tests/test_compile_egraph.py::test_serialized_format_is_pinned``."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = json.loads(self._eg._serialize(max_functions=None, max_calls_per_function=None,
                                                  split_primitive_outputs=False).to_json())
        if caught:
            raise EGraphError(f"egglog's serialized e-graph is incomplete: {caught[0].message}")
        return data

    def _serialized(self) -> dict:
        """The serialized e-graph (for the test that pins its format)."""
        return self._worker.call(self._serialize)

    # ---- calls and extraction
    def add_call(self, eclass: int, operands: list, cost: int = CALL) -> int:
        """Union an accelerator-call e-node (``Term.call(id, operands)``, e-node cost ``cost``) into
        e-class ``eclass`` of the current view; ``operands``: e-class ids. Returns the call id."""
        return self.add_calls([(eclass, operands, cost)])[0]

    def add_calls(self, calls: list) -> list:
        """:meth:`add_call` for each ``(eclass, operands, cost)``, in one egglog command."""
        view = self.view()
        out = []
        for c, ops, cost in calls:
            i = len(self._calls)
            self._calls[i] = (c, tuple(ops), int(cost))
            out.append(i)
        self._worker.call(self._add_calls, view, out)
        return out

    def price_calls(self, ids: list, cost: int) -> None:
        """Set the extraction cost of the call e-nodes ``ids`` (from :meth:`add_calls`) to ``cost``
        (a call that must not be chosen: a cost above any alternative)."""
        self._worker.call(self._price_calls, self.view(), list(ids), int(cost))

    def _price_calls(self, view, ids, cost):
        acts = []
        for i in ids:
            c, ops, _ = self._calls[i]
            acts.append(set_cost(Term.call(i64(i), terms(*[self._expr(view, o) for o in ops])), cost))
        self._register(acts)

    def _add_calls(self, view, ids):
        acts = []
        for i in ids:
            c, ops, cost = self._calls[i]
            node = Term.call(i64(i), terms(*[self._expr(view, o) for o in ops]))
            acts.append(union(self._expr(view, c)).with_(node))
            if cost != CALL:
                acts.append(set_cost(node, cost))
        self._register(acts)

    def _expr(self, view: View, c: int):
        """An egglog expression of e-class ``c``: its let-bound original value, else one of its
        e-nodes over the expressions of its operand e-classes (the e-node closest to originals)."""
        if c in self._class_expr:
            return self._class_expr[c]
        height = _heights(view)
        stack = [c]
        while stack:
            k = stack[-1]
            if k in self._class_expr:
                stack.pop()
                continue
            cls = view.classes[k]
            if cls.origin is not None:
                self._class_expr[k] = self._ref[cls.origin.uid]
                stack.pop()
                continue
            best = min((n for n in cls.nodes if n.op != "call"), key=lambda n: height.get((k, n), 1 << 30))
            todo = [o for o in best.children if o not in self._class_expr]
            if todo:
                stack.extend(todo)
                continue
            self._class_expr[k] = self._enode_expr(best, [self._class_expr[o] for o in best.children])
            stack.pop()
        return self._class_expr[c]

    def _enode_expr(self, n: ENode, args: list):
        if n.op == "zeros":
            a = n.attr_dict
            return Term.zeros(vec(*a["shape"]), String(a["dtype"]))
        if n.op == "leaf":
            return Term.leaf(i64(n.value))
        if n.op in TYPED:
            cons, arity, attrs = TYPED[n.op]
            a = n.attr_dict
            enc = [_encode(kind, a[name]) for name, kind in attrs]
            return getattr(Term, cons)(terms(*args), *enc) if arity is None else getattr(Term, cons)(*args, *enc)
        key = f"{n.op}{sorted(n.attr_dict.items())!r}"
        return _opaque_expr(n.op in _data_movement(), key, args)

    def extract(self) -> tuple[dict, tuple]:
        """egglog's extraction of the graph's outputs (after the calls): ``(choice, roots)`` with
        ``choice``: e-class id -> the chosen ENode, for every e-class the extracted program uses,
        and ``roots`` the output e-classes."""
        view = self.view()
        return self._worker.call(self._extract, view)

    def _extract(self, view: View):
        index = dict(view._index)
        for i, (c, ops, _) in self._calls.items():
            index[ENode("call", (), ops, i)] = c
        big, tiled = self._cuts
        refs = {}                                     # e-class -> how many ref e-nodes it holds
        for uid in big + tiled:
            c = view.value_class[uid]
            refs[c] = refs.get(c, 0) + 1
        try:
            # egglog's extractor sums costs over the term as a tree, in 64 bits: on a DAG whose values
            # are shared many times over (EfficientNet: ~6e18 paths) the sums saturate and the
            # extractor fails. A cut value's e-class gets a free ``ref`` e-node, so above it the
            # value costs nothing (it is computed once, as in the program); the value itself is
            # extracted on its own, as the best of its other e-nodes. The computed operands of
            # convolutions and dense layers (a tiling reads them once per tile) are extracted
            # operands first, each while only the values before it have their ref, then given its
            # own, so no such value's term can reach itself (an identity rewrite such as
            # reshape(reshape(x)) = x would make a ref cycle the cheapest term). The refs live
            # between a push and a pop: extraction runs again after a deferred certification fails.
            reader = _TermReader(index, view)
            self._eg.push()
            try:
                self._register([union(self._ref[uid]).with_(Term.ref(i64(uid))) for uid in big])
                self._eg.run(run(self._rebuild))      # congruence after the unions
                for uid in tiled:
                    if uid in big:
                        continue
                    if reader.read_class(self._eg.extract(self._ref[uid])) != view.value_class[uid]:
                        raise EGraphError(f"egglog extracted value {uid} as another e-class's term")
                    self._register([union(self._ref[uid]).with_(Term.ref(i64(uid)))])
                    self._eg.run(run(self._rebuild))
                roots = reader.read(self._eg.extract(self._outputs))
                done = set(tiled)
                while reader.refs - done:
                    uid = min(reader.refs - done)
                    done.add(uid)
                    c = view.value_class[uid]
                    variants = self._eg.extract_multiple(self._ref[uid], refs[c] + 1)
                    best = next((v for v in variants if str(get_callable_fn(v)).rsplit(".", 1)[-1] != "ref"), None)
                    if best is None:
                        raise EGraphError(f"egglog's extractor returned no e-node of the cut e-class of value {uid}")
                    if reader.read_class(best) != c:
                        raise EGraphError(f"egglog extracted value {uid} as another e-class's term")
            finally:
                self._eg.pop()
        except EGraphError:
            raise
        except Exception as exc:
            raise _egglog_error(exc) from None
        return reader.choice, roots


TILED = ("nn.conv2d", "nn.dense")   # operators the tiling rewrites split (compile.rewrites.tiling)


def _cuts(outputs) -> tuple[list, list]:
    """``(big, tiled)``: the uids of the values whose tree (the number of paths to the leaves, counting every value
    already cut as one) exceeds :data:`CUT` (operands first; the outputs' e-classes are roots anyway),
    and of the computed operands of the operators in :data:`TILED`, in topological order: a tiling
    reads its operand once per tile (slices of it), so under tree costs its whole upstream cost would
    count once per tile and no tiling could pay off; cut, the operand is computed once, as in the
    program."""
    from compile.ir.graph import Node, topological
    order = topological(list(outputs), nodes_only=False)
    tiled = {a.uid for v in order if isinstance(v, Node) and v.op in TILED for a in v.args if isinstance(a, Node)}
    size: dict[int, int] = {}
    big = []
    for v in order:
        n = 1 + (sum(size[a.uid] for a in v.args) if isinstance(v, Node) else 0)
        if n > CUT:
            big.append(v.uid)
        if n > CUT or v.uid in tiled:
            n = 1
        size[v.uid] = n
    return big, [v.uid for v in order if v.uid in tiled]


def _opaque_expr(move: bool, key: str, args: list):
    """An opaque host operator: fixed-arity constructors up to three operands, else an operand list."""
    kind = "move" if move else "host"
    if 1 <= len(args) <= 3:
        return getattr(Term, f"{kind}{len(args)}")(_string(key), *args)
    return getattr(Term, kind)(_string(key), terms(*args))


def _heights(view: View) -> dict:
    """(e-class, ENode) -> how many e-nodes separate it from original values (for :meth:`Session._expr`):
    the e-classes holding an original value are 0, the others are reached from them in order of
    height (a priority queue over the e-nodes whose operands all have a height)."""
    import heapq
    if "heights" in view._cache:
        return view._cache["heights"]
    users: dict[int, list] = {}
    missing: dict[tuple, int] = {}
    out: dict = {}
    known: dict[int, int] = {}
    heap = []
    for c, cls in view.classes.items():
        if cls.origin is not None:
            heapq.heappush(heap, (0, c))
        for n in cls.nodes:
            if n.op == "call":
                continue
            kids = set(n.children)
            missing[(c, n)] = len(kids)
            for o in kids:
                users.setdefault(o, []).append((c, n))
            if not kids:
                heapq.heappush(heap, (1, c))
                out[(c, n)] = 1
    while heap:
        h, c = heapq.heappop(heap)
        if c in known:
            continue
        known[c] = h
        for key in users.get(c, ()):
            missing[key] -= 1
            if missing[key] == 0:
                hn = 1 + max(known[o] for o in key[1].children)
                out[key] = hn
                heapq.heappush(heap, (hn, key[0]))
    view._cache["heights"] = out
    return out


def _egglog_error(exc: Exception) -> Exception:
    text = str(exc)
    if "Illegal merge attempted" in text:
        what = "shape" if "shape" in text else "dtype" if "dtype" in text else "a function"
        return EGraphError(f"egglog: two different {what} values for one e-class (an analysis rule of "
                           f"compile.egraph disagrees with the IR): {text}")
    return EGraphError(f"egglog: {text}") if "EggSmolError" in type(exc).__name__ else exc


# ----------------------------------------------------------------------------- reading egglog's output
def parse_serialized(data: dict, values: dict, keys: dict) -> View:
    """The typed view of egglog's serialized e-graph ``data`` (``EGraph._serialize(...).to_json()``,
    the egraph-serialize format: ``nodes`` id -> {op, children (node ids), eclass, cost, subsumed},
    ``class_data`` e-class -> {type, let?}); ``values``: uid -> original IR value; ``keys``: opaque
    operator key -> (op, attrs)."""
    nodes = data["nodes"]
    cdata = data.get("class_data", {})
    prim: dict[str, object] = {}                       # primitive e-class -> Python value

    def pval(nid):
        n = nodes[nid]
        c = n["eclass"]
        if c in prim:
            return prim[c]
        tp = cdata.get(c, {}).get("type", "")
        op = n["op"]
        if "Vec" in tp:
            v = tuple(pval(ch) for ch in n["children"])
        elif tp == "String":
            v = json.loads(op)
        elif tp == "i64":
            v = int(op)
        elif tp == "f64":
            v = float(op)
        elif tp == "bool":
            v = op == "true"
        else:
            raise EGraphError(f"egglog serialization: primitive {nid!r} of unknown type {tp!r}")
        prim[c] = v
        return v

    for nid, n in nodes.items():                         # primitives first (function rows share their e-class)
        if nid.startswith("primitive-"):
            pval(nid)
    cid: dict[str, int] = {}

    def cls_id(eclass: str) -> int:
        if eclass not in cid:
            cid[eclass] = len(cid)
        return cid[eclass]

    lists: dict[str, tuple] = {}                        # TermList e-class -> (head node id, tail e-class) | ()
    classes: dict[int, EClass] = {}
    raw = []
    shapes, dtypes, born_rows, pend_rows, consts = {}, {}, [], [], set()
    outputs = ()
    for nid, n in nodes.items():
        op = n["op"]
        if op.startswith("TermList."):
            lists[n["eclass"]] = (n["children"][0], nodes[n["children"][1]]["eclass"]) if op.endswith("cons") else ()
        elif op.startswith("Term."):
            raw.append((nid, n))
        elif op == "shape":
            shapes[nodes[n["children"][0]]["eclass"]] = prim[n["eclass"]]
        elif op == "dtype":
            dtypes[nodes[n["children"][0]]["eclass"]] = prim[n["eclass"]]
        elif op == "born":
            born_rows.append((pval(n["children"][0]), nodes[n["children"][1]]["eclass"]))
        elif op == "pending":
            pend_rows.append((pval(n["children"][0]), nodes[n["children"][1]]["eclass"],
                              nodes[n["children"][2]]["eclass"]))
        elif op == "const_term":
            consts.add(nodes[n["children"][0]]["eclass"])

    def flatten(lst_class: str) -> tuple:
        out = []
        while True:
            cell = lists[lst_class]
            if not cell:
                return tuple(out)
            out.append(cls_id(nodes[cell[0]]["eclass"]))
            lst_class = cell[1]

    value_class: dict[int, int] = {}
    index: dict = {}
    by_op: dict = {}
    enodes = 0
    for nid, n in raw:
        cons = n["op"][len("Term."):]
        ch = n["children"]
        c = cls_id(n["eclass"])
        cls = classes.setdefault(c, EClass(c))
        if cons == "outputs":
            outputs = flatten(nodes[ch[0]]["eclass"])
            continue
        if cons == "leaf":
            e = ENode("leaf", (), (), pval(ch[0]))
        elif cons == "zeros":
            e = ENode("zeros", (("dtype", pval(ch[1])), ("shape", tuple(pval(ch[0])))))
        elif cons == "call":
            e = ENode("call", (), flatten(nodes[ch[1]]["eclass"]), pval(ch[0]))
        elif cons in ("host", "move"):
            op, attrs = keys[pval(ch[0])]
            e = ENode(op, tuple(sorted(attrs.items())), flatten(nodes[ch[1]]["eclass"]))
        elif cons[:4] in ("host", "move"):
            op, attrs = keys[pval(ch[0])]
            e = ENode(op, tuple(sorted(attrs.items())), tuple(cls_id(nodes[x]["eclass"]) for x in ch[1:]))
        else:
            op = _BY_CONSTRUCTOR[cons]
            _, arity, spec = TYPED[op]
            if arity is None:
                operands, prims = flatten(nodes[ch[0]]["eclass"]), ch[1:]
            else:
                operands, prims = tuple(cls_id(nodes[x]["eclass"]) for x in ch[:arity]), ch[arity:]
            attrs = tuple(sorted((name, _decode(kind, pval(p))) for (name, kind), p in zip(spec, prims)))
            e = ENode(op, attrs, operands)
        enodes += 1
        cls.nodes.append(e)
        index[e] = c
        by_op.setdefault(e.op, []).append((c, e))
    from compile.ir.graph import Node, topological
    own: dict = {}
    for v in topological(list(values.values()), nodes_only=False):     # original values: their own e-nodes
        if v.uid in value_class:
            continue
        if isinstance(v, Node):
            e = ir_enode(v, tuple(value_class[a.uid] for a in v.args))
        else:
            e = ENode("leaf", (), (), v.uid)
        c = index.get(e)
        if c is None:
            raise EGraphError(f"the e-graph lost the graph value {getattr(v, 'op', 'leaf')} (uid {v.uid})")
        value_class[v.uid] = c
        own.setdefault(e, v)
        cls = classes[c]
        if cls.origin is None or (not getattr(cls.origin, "source", "") and getattr(v, "source", "")):
            cls.origin = v
    for eclass, c in cid.items():
        if c in classes:
            cls = classes[c]
            cls.shape = shapes.get(eclass)
            cls.dtype = dtypes.get(eclass)
            cls.const = eclass in consts
    rules: dict[int, list] = {}
    for name, eclass in born_rows:
        rules.setdefault(cls_id(eclass), []).append(name)
    for c, names in rules.items():
        classes[c].rules = tuple(sorted(set(names)))
    applied: dict[str, int] = {}
    for name, _, _ in pend_rows:
        applied[name] = applied.get(name, 0) + 1
    return View(classes, value_class, dict(sorted(applied.items())), enodes, outputs, index, by_op, own)


def _py(e):
    """The Python value of an extracted egglog primitive (i64, String, f64, Bool, Vec[i64])."""
    v = get_literal_value(e)
    if v is not None:
        return v
    return tuple(_py(a) for a in get_callable_args(e))


class _TermReader:
    """Maps extracted terms onto the view's e-classes: ``choice`` (e-class -> chosen ENode), the
    uids of the ``ref`` e-nodes met (cut values still to extract)."""

    def __init__(self, index: dict, view: View):
        self.index, self.view = index, view
        self.choice: dict[int, ENode] = {}
        self.memo: dict[int, int] = {}            # hash of an extracted sub-term -> its e-class
        self.refs: set = set()

    def read(self, term) -> tuple:
        """Read ``Term.outputs(...)``: the output e-classes."""
        return tuple(self._walk(term, outputs=True))

    def read_class(self, term) -> int:
        """Read a term of one e-class: its e-class id."""
        return self._walk(term)

    @staticmethod
    def _items(lst) -> list:
        out = []
        while True:
            args = get_callable_args(lst)
            if not args:
                return out
            out.append(args[0])
            lst = args[1]

    def _parts(self, e):
        """(operand sub-terms, ENode without children | ("opaque", key))."""
        name = str(get_callable_fn(e)).rsplit(".", 1)[-1]
        args = get_callable_args(e)
        if name in ("leaf", "ref"):
            return [], ENode(name, (), (), _py(args[0]))
        if name == "zeros":
            return [], ENode("zeros", (("dtype", _py(args[1])), ("shape", tuple(_py(args[0])))))
        if name == "call":
            return self._items(args[1]), ENode("call", (), (), _py(args[0]))
        if name == "outputs":
            return self._items(args[0]), ENode("outputs")
        if name in ("host", "move"):
            return self._items(args[1]), ("opaque", _py(args[0]))
        if name[:4] in ("host", "move"):
            return list(args[1:]), ("opaque", _py(args[0]))
        op = _BY_CONSTRUCTOR[name]
        _, arity, spec = TYPED[op]
        if arity is None:
            kids, prims = self._items(args[0]), args[1:]
        else:
            kids, prims = list(args[:arity]), args[arity:]
        attrs = tuple(sorted((nm, _decode(kind, _py(p))) for (nm, kind), p in zip(spec, prims)))
        return kids, ENode(op, attrs)

    def _walk(self, term, outputs: bool = False):
        memo, pending_parts = self.memo, {}
        stack = [(term, False)]
        result = None
        while stack:
            e, done = stack.pop()
            h = hash(e)
            if not done:
                if h in memo and e is not term:
                    continue
                kids, shell = self._parts(e)
                pending_parts[h] = (kids, shell)
                stack.append((e, True))
                stack.extend((k, False) for k in kids if hash(k) not in memo)
                continue
            if h not in pending_parts:
                continue
            kids, shell = pending_parts.pop(h)
            ch = tuple(memo[hash(k)] for k in kids)
            if isinstance(shell, ENode) and shell.op == "outputs":
                result = ch
                continue
            if isinstance(shell, ENode) and shell.op == "ref":
                self.refs.add(shell.value)
                memo[h] = self.view.value_class[shell.value]
                if e is term:                              # the term is a ref itself (a value equal to a cut one)
                    result = memo[h]
                continue
            if isinstance(shell, tuple):                   # opaque: the view's e-node with this key
                node = _opaque(self.view, shell[1], ch)
            elif shell.op == "call":
                node = ENode("call", (), ch, shell.value)
            else:
                node = ENode(shell.op, shell.attrs, ch, shell.value)
            c = self.index.get(node)
            if c is None:
                raise EGraphError(f"egglog's extracted term holds an e-node the view does not know: {node}")
            memo[h] = c
            self.choice[c] = node
            if e is term:
                result = c
        return result


def _opaque(view: View, key: str, children: tuple) -> ENode:
    got = view._cache.get("keys")
    if got is None:
        got = view._cache["keys"] = {}
        for e in view._index:
            if e.op not in ("leaf", "zeros", "call") and e.op not in TYPED:
                got[(f"{e.op}{sorted(e.attr_dict.items())!r}", e.children)] = e
    node = got.get((key, children))
    if node is None:
        raise EGraphError(f"egglog's extracted term holds an opaque operator the view does not know: {key}")
    return node


# ----------------------------------------------------------------------------- one rewrite on small graphs
def apply_rules(specs, nodes: list) -> list:
    """Run the rules ``specs`` (one rewrite's) for one egglog iteration on an e-graph holding the
    IR nodes ``nodes`` (each the left-hand side of an instance), and read each right-hand side
    back as an IR value built with :func:`compile.ir.graph.call` (so its shapes are inferred
    again); None where no rule applied. The read-back follows the e-node the rule added to the
    root's e-class; an e-class holding an original value stands for that value (so a right-hand
    side that names the left-hand side gets the original node). EGraphError if the rules add more
    than one e-node to a root's e-class."""
    with Session(specs) as s:
        s.add_graph(list(nodes))
        s.saturate(max_iters=1, time_limit=float("inf"), max_enodes=1 << 40)
        view = s.view()
    return [_read_back(view, n) for n in nodes]


def _read_back(view: View, lhs):
    from compile.ir.graph import Node
    root = view.class_of(lhs)
    own = _own_enode(view, lhs)
    new = [n for n in view.classes[root].nodes if n != own]
    if not new:
        return None
    if len(new) > 1:
        raise EGraphError(f"the rules added {len(new)} e-nodes to the left-hand side's e-class: {new}")
    if new[0] in view.own:                       # the right-hand side is an original value (x)
        return view.own[new[0]]
    built: dict[int, object] = {}

    def value_of(c):
        cls = view.classes[c]
        if c == root:
            return lhs
        if cls.origin is not None:
            return cls.origin
        return built[c]
    stack = [(new[0], root, False)]
    result = None
    while stack:
        n, c, done = stack.pop()
        if c in built:                           # a shared e-class reached again: built once
            continue
        kids = [o for o in n.children if o != root and view.classes[o].origin is None and o not in built]
        if not done and kids:
            stack.append((n, c, True))
            for o in kids:
                nodes = view.classes[o].nodes
                if len(nodes) != 1:
                    raise EGraphError(f"an e-class of the right-hand side holds {len(nodes)} e-nodes: {nodes}")
                stack.append((nodes[0], o, False))
            continue
        v = enode_to_ir(n, [value_of(o) for o in n.children], source=getattr(lhs, "source", ""))
        if c == root:
            result = v
        else:
            built[c] = v
    return result


def _own_enode(view: View, lhs) -> ENode:
    from compile.ir.graph import Node
    if not isinstance(lhs, Node):
        return ENode("leaf", (), (), lhs.uid)
    want = ir_enode(lhs, tuple(view.class_of(a) for a in lhs.args))
    if want not in view.classes[view.class_of(lhs)].nodes:
        raise EGraphError(f"the left-hand side {lhs.op} is not in its own e-class")
    return want


def ir_enode(node, children: tuple) -> ENode:
    """The ENode of IR node ``node`` over operand e-classes ``children`` (attributes as the view
    decodes them)."""
    if node.op in TYPED:
        _, _, spec = TYPED[node.op]
        try:
            return ENode(node.op, tuple(sorted((name, _canon(kind, node.attrs[name])) for name, kind in spec)), children)
        except (TypeError, ValueError, KeyError):
            pass
    return ENode(node.op, tuple(sorted(node.attrs.items())), children)


def _canon(kind: str, v):
    if kind == _VEC:
        return tuple(int(x) for x in v)
    if kind == _PADS:
        from compile.ir.ops import _pads
        return tuple(int(x) for x in _pads(v))
    if kind == _PAIRS:
        return tuple((int(a), int(b)) for a, b in v)
    return _decode(kind, v)


def enode_to_ir(n: ENode, args: list, source: str = ""):
    """The IR value of e-node ``n`` over the operand values ``args``: a node built with
    :func:`compile.ir.graph.call` (shape inferred; ShapeMismatchError when ill-formed), or a zero
    constant for ``zeros``. Not for ``leaf`` / ``call`` e-nodes."""
    from compile.ir.graph import call, const
    if n.op == "zeros":
        a = n.attr_dict
        return const(np.zeros(a["shape"], a["dtype"]), source=source)
    if n.op in ("leaf", "call"):
        raise ValueError(f"{n.op} e-nodes have no IR operator")
    return call(n.op, *args, source=source, **n.attr_dict)
