"""HORN output: the product program's clauses with unknown predicates, for external CHC solvers
and for z3's Spacer engine (``(set-logic HORN)``).

The loop predicates ``Inv_<loop>`` range over the loop system's variables (model states and
tracked cells) and the rigid parameters; transitions, prefixes and the refinement map come from
the same :func:`verify.chc.build` as the supplied-invariant check, with the supplied invariants
left out, so a CHC solver has to find them. Loop variables no instruction writes (the
configuration registers) are replaced by their start values and left out of the predicates.
Uninterpreted functions are Ackermannised (:func:`ackermannize`), because Spacer does not accept
them. Measured: Spacer answers neither 'safe' for the maxpool mapping nor 'unsafe' for a seeded
bug (wrong mode) within 120 s / 40 s even at 2x16, so its answer is reported but not relied on
(the supplied or inferred invariants check in seconds).

Encodings tried on flexasr.maxpool at 2x16 (z3 5.4.0.0, November 2026; none committed as a
default because none solves the FlexASR loop): the IR loop alone is solved ('safe') in ~6 s with
``fp.xform.bit_blast=true`` and not in 90 s without it; the FlexASR LayerReduce loop alone stays
unknown with bit-blasting (400 s; the trace shows Spacer blocking single proof obligations, some
10^5 of them, i.e. enumerating data values), with the functions' own axioms left out (only the
link axioms: 87 KB instead of 327 KB), with the scalar part of the invariant conjoined to the
step clauses as a background fact, with 8-bit data re-sorted to Int (only =, ite and predicate
arguments use it), with an exact bit-vector to linear-integer translation (div/mod by constants,
one conditional subtraction per add), and even with the tracked cell fixed to a constant (60 s
each). The cell-morphed loop is small (22 variables, 7 instructions); what defeats Spacer is
generalising over 32-bit address and counter registers together with symbolic data.
Handing Spacer the supplied invariants as lemmas (``Fixedpoint.add_cover(-1, ...)``, which needs
``xform.slice=false``) answers at once, but covers at level -1 are trusted, not checked: the
seeded wrong_mode bug, whose supplied invariant fails initiation, is then answered 'safe' too, so
covers are never used here; ``fp.validate=true`` raises an internal error on the correct mapping.
"""
from __future__ import annotations

from ila.expr import Expr, implies, land
from ila.ops import Op
from ila.simplify import Rewriter
from ila.simplify import replace_nodes as _replace
from ila.smt import SmtEncoder, axiom_instances
from ila.walk import toposort


def _params(built, spec) -> list[Expr]:
    loop_vars = {v.uid for s in built.systems for v in s.vars}
    havocs = {h.uid for s in built.systems for h in s.havocs}
    roots = [spec.pre] + [s.enabled for s in built.systems] + [e for s in built.systems for e in s.next.values()] \
        + [e for st in built.starts for e in st.values()] + built.posts
    return [n for n in toposort(roots) if n.op is Op.VAR and n.uid not in loop_vars and n.uid not in havocs]


def horn_clauses(spec, *, inline_ufs: bool = False):
    """(encoder, predicate declarations, list of (name, body Exprs, head)) of the product program.
    A head is (predicate index, argument Exprs) or None for ``false``."""
    from .clauses import build
    built = build(spec)
    params = _params(built, spec)
    preds = []
    clauses = []
    posts = []
    for k, s in enumerate(built.systems):
        start = built.starts[k]
        # variables no instruction writes (the configuration) keep their start values: substitute
        # them and leave them out of the predicate (fewer unknowns for the CHC solver)
        loop = {v.uid for v in s.vars}
        frozen = {v: start[v] for v in s.vars if v in start and all(u.get(v, v) is v for u in s.next_by_instr)
                  and not any(n.op is Op.VAR and n.uid in loop for n in toposort([start[v]]))}
        rw = Rewriter(frozen)
        live = [v for v in s.vars if v not in frozen]
        args = live + params
        preds.append((f"Inv_{spec.loops[k].name}", args))
        post = rw.one(built.posts[k])
        posts.append(post)
        clauses.append((f"{spec.loops[k].name}: init", [spec.pre], (k, [start.get(v, v) for v in live] + params)))
        clauses.append((f"{spec.loops[k].name}: step", [("pred", k, args), rw.one(s.enabled)],
                        (k, [rw.one(s.next[v]) for v in live] + params)))
        clauses.append((f"{spec.loops[k].name}: exit", [("pred", k, args), ~rw.one(s.enabled), ~post], None))
    clauses.append(("safety", [spec.pre] + posts + [~spec.final(built.systems)], None))
    return built, preds, clauses


def ackermannize(spec, built, preds, clauses, *, inline_ufs: bool = False):
    """Eliminate uninterpreted functions (Spacer rejects them): an application whose arguments are
    rigid parameters becomes a new parameter; any other becomes a clause-local variable with
    functional-consistency constraints against the parameter applications. Axioms (the
    functions' own and the mapping's) are instantiated on the applications first. Dropping
    consistency across clauses only adds behaviours, so a 'safe' answer remains a proof."""
    from ila.unroll import symbol
    params = _params(built, spec)
    pset = {p.uid for p in params}

    def is_param_app(n):
        return all(v.uid in pset for v in toposort([n]) if v.op is Op.VAR)

    def items(body, head):
        out = [b for b in body if not isinstance(b, tuple)] + [a for b in body if isinstance(b, tuple) for a in b[2]]
        return out + ([] if head is None else list(head[1]))
    every = [e for _, body, head in clauses for e in items(body, head)]
    apps = [n for n in toposort(every) if n.op is Op.APPLY and not (inline_ufs and n.payload.expr_body is not None)]
    ax = axiom_instances(every, inline_ufs=inline_ufs) + (spec.axioms(apps) if not inline_ufs else [])
    all_apps = [n for n in toposort(every + ax) if n.op is Op.APPLY
                and not (inline_ufs and n.payload.expr_body is not None)]
    param_apps = [n for n in all_apps if is_param_app(n)]
    pmap = {n.uid: symbol(f"ack_{n.payload.name}_{k}", n.sort) for k, n in enumerate(param_apps)}
    global_ax = [a for a in ax if all(n.uid in pmap for n in toposort([a]) if n.op is Op.APPLY)]
    new_params = list(pmap.values())
    out_preds = [(name, list(args) + new_params) for name, args in preds]
    out = []
    for cname, body, head in clauses:
        mine = items(body, head)
        local_ax = [a for a in axiom_instances(mine, inline_ufs=inline_ufs)
                    + (spec.axioms([n for n in toposort(mine) if n.op is Op.APPLY]) if not inline_ufs else [])
                    if a not in global_ax]
        locals_ = [n for n in toposort(mine + local_ax) if n.op is Op.APPLY and n.uid not in pmap
                   and not (inline_ufs and n.payload.expr_body is not None)]
        mapping = dict(pmap)
        for k, n in enumerate(locals_):
            mapping[n.uid] = symbol(f"app_{k}_{n.payload.name}", n.sort)
        extra = []
        for n in locals_:
            (n_args,) = [_replace(list(n.args), mapping)]
            for m in param_apps:          # consistency with the rigid applications only
                if m is n or m.payload is not n.payload:
                    continue
                m_args = _replace(list(m.args), mapping)
                extra.append(implies(land(*[x.eq(y) for x, y in zip(n_args, m_args)]),
                                     mapping[n.uid].eq(mapping[m.uid])))
        nb = []
        for b in body:
            if isinstance(b, tuple):
                nb.append(("pred", b[1], _replace(list(b[2]), mapping) + new_params))
            else:
                nb.append(_replace([b], mapping)[0])
        nb += _replace(local_ax + global_ax, mapping) + extra
        nh = None if head is None else (head[0], _replace(list(head[1]), mapping) + new_params)
        out.append((cname, nb, nh))
    return out_preds, out


def horn_smtlib(spec, *, inline_ufs: bool = False) -> str:
    """The product program as an SMT-LIB2 HORN script (loop predicates unknown, uninterpreted
    functions Ackermannised)."""
    built, preds, clauses = horn_clauses(spec, inline_ufs=inline_ufs)
    preds, clauses = ackermannize(spec, built, preds, clauses, inline_ufs=inline_ufs)
    enc = SmtEncoder(inline_ufs=inline_ufs)
    from pysmt.smtlib.printers import to_smtlib

    def ty(e):
        return enc.smt_type(e.sort).as_smtlib(funstyle=False)

    def sm(e):
        with enc.active():
            return to_smtlib(enc.encode(e), daggify=True)
    lines = ["(set-logic HORN)"]
    for name, args in preds:
        lines.append(f"(declare-fun {name} ({' '.join(ty(a) for a in args)}) Bool)")
    for cname, body, head in clauses:
        parts, free = [], []
        for b in body:
            if isinstance(b, tuple):
                _, k, args = b
                parts.append(f"({preds[k][0]} {' '.join(sm(a) for a in args)})")
                free.extend(args)
            else:
                parts.append(sm(b))
                free.append(b)
        if head is None:
            concl = "false"
        else:
            concl = f"({preds[head[0]][0]} {' '.join(sm(a) for a in head[1])})"
            free.extend(head[1])
        vs = {n.uid: n for n in toposort(free) if n.op is Op.VAR}.values()
        binders = " ".join(f"(|{v.name}| {ty(v)})" for v in vs)
        body_s = f"(and true {' '.join(parts)})"
        lines.append(f"; {cname}")
        lines.append(f"(assert (forall ({binders}) (=> {body_s} {concl})))" if binders else f"(assert (=> {body_s} {concl}))")
    lines.append("(check-sat)")
    return "\n".join(lines) + "\n"


def solve_spacer(spec, *, timeout: float | None = None, inline_ufs: bool = False):
    """Hand the HORN problem to z3's Spacer engine. Returns (Status, seconds): HOLDS when Spacer
    answers safe (invariants exist: proved), FAILS when unsafe, UNKNOWN otherwise."""
    from ila.verdict import Status
    import time

    import z3
    text = horn_smtlib(spec, inline_ufs=inline_ufs)
    t0 = time.perf_counter()
    s = z3.SolverFor("HORN")
    s.set("engine", "spacer")
    if timeout:
        s.set("timeout", int(timeout * 1000))
    s.from_string(text)
    r = s.check()
    secs = time.perf_counter() - t0
    answer = Status.HOLDS if r == z3.sat else Status.FAILS if r == z3.unsat else Status.UNKNOWN
    return answer, secs

