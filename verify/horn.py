"""HORN output: the product program's clauses with unknown predicates, for external CHC solvers
and for z3's Spacer engine (``(set-logic HORN)``).

The loop predicates ``Inv_<loop>`` range over the loop system's variables (model states and
tracked cells) and the rigid parameters; transitions, prefixes and the refinement map come from
the same :func:`verify.chc.build` as the supplied-invariant check, with the supplied invariants
left out, so a CHC solver has to find them.
"""
from __future__ import annotations

from ila.expr import Expr, land
from ila.ops import Op
from ila.simplify import Rewriter
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
    from .chc import build
    built = build(spec)
    params = _params(built, spec)
    preds = []
    clauses = []
    for k, s in enumerate(built.systems):
        args = list(s.vars) + params
        preds.append((f"Inv_{spec.loops[k].name}", args))
        start = built.starts[k]
        clauses.append((f"{spec.loops[k].name}: init", [spec.pre], (k, [start.get(v, v) for v in s.vars] + params)))
        clauses.append((f"{spec.loops[k].name}: step", [("pred", k, args), s.enabled],
                        (k, [s.next[v] for v in s.vars] + params)))
        clauses.append((f"{spec.loops[k].name}: exit", [("pred", k, args), ~s.enabled, ~built.posts[k]], None))
    clauses.append(("safety", [spec.pre] + built.posts + [~spec.final(built.systems)], None))
    return built, preds, clauses


def horn_smtlib(spec, *, inline_ufs: bool = False) -> str:
    """The product program as an SMT-LIB2 HORN script (loop predicates unknown)."""
    built, preds, clauses = horn_clauses(spec, inline_ufs=inline_ufs)
    enc = SmtEncoder(inline_ufs=inline_ufs)
    lines = ["(set-logic HORN)"]
    from pysmt.smtlib.printers import to_smtlib

    def ty(e):
        return enc.smt_type(e.sort).as_smtlib(funstyle=False)
    declared = set()
    body_exprs = []
    for _, body, head in clauses:
        for b in body:
            if not isinstance(b, tuple):
                body_exprs.append(b)
        if head is not None:
            body_exprs.extend(head[1])
    apps = [n for n in toposort(body_exprs) if n.op is Op.APPLY]
    for n in apps:
        f = n.payload
        if f.name not in declared and not (inline_ufs and f.expr_body is not None):
            declared.add(f.name)
            dom = " ".join(enc.smt_type(s).as_smtlib(funstyle=False) for s in f.domain)
            lines.append(f"(declare-fun uf_{f.name} ({dom}) {enc.smt_type(f.range).as_smtlib(funstyle=False)})")
    for name, args in preds:
        lines.append(f"(declare-fun {name} ({' '.join(ty(a) for a in args)}) Bool)")
    axioms = axiom_instances(body_exprs, inline_ufs=inline_ufs) + ([] if inline_ufs else spec.axioms(apps))
    for cname, body, head in clauses:
        parts = []
        for b in body:
            if isinstance(b, tuple):
                _, k, args = b
                parts.append(f"({preds[k][0]} {' '.join(to_smtlib(enc.encode(a), daggify=True) for a in args)})")
            else:
                parts.append(to_smtlib(enc.encode(Rewriter().one(b)), daggify=True))
        parts.extend(to_smtlib(enc.encode(a), daggify=True) for a in axioms)
        if head is None:
            concl = "false"
        else:
            k, args = head
            concl = f"({preds[k][0]} {' '.join(to_smtlib(enc.encode(a), daggify=True) for a in args)})"
        free = [n for n in toposort([b for b in body if not isinstance(b, tuple)]
                                    + [a for b in body if isinstance(b, tuple) for a in b[2]]
                                    + ([] if head is None else list(head[1])) + axioms) if n.op is Op.VAR]
        binders = " ".join(f"(|{v.name}| {ty(v)})" for v in {v.uid: v for v in free}.values())
        lines.append(f"; {cname}")
        lines.append(f"(assert (forall ({binders}) (=> (and true {' '.join(parts)}) {concl})))"
                     if binders else f"(assert (=> (and true {' '.join(parts)}) {concl}))")
    lines.append("(check-sat)")
    return "\n".join(lines) + "\n"


def solve_spacer(spec, *, timeout: float | None = None, inline_ufs: bool = False) -> tuple[str, float]:
    """Hand the HORN problem to z3's Spacer engine: 'safe' (invariants exist: proved), 'unsafe',
    or 'unknown'. Returns (answer, seconds)."""
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
    answer = "safe" if r == z3.sat else "unsafe" if r == z3.unsat else "unknown"
    return answer, secs


_ = land
