"""The shapes at which an invalid clause of an all-sizes proof fails (shared by the CHC checker,
:mod:`verify.chc`, and the phase checker, :mod:`verify.phases`): the clause's negation solved for
the size symbols, small bounds first, then unbounded, minimised and maximised."""
from __future__ import annotations

import time

from ila.ops import Op
from ila.simplify import Rewriter
from ila.walk import toposort


def countershapes(spec, clauses: list, *, solver: str = "z3", limit: int = 4,
                  budget: float = 120.0) -> list[dict]:
    """Shapes at which an invalid clause of a symbolic-size proof fails: each clause's negation
    is solved for the size terms (``spec.size_vars``), first under the spec's small bounds
    (``small_sizes``, in turn), then without a bound -- a bug that shows only at large sizes,
    up to the largest the side conditions allow, is found there -- and the unbounded answer is
    made as small as the clause allows (each size in turn, by bisection), and each size is also made as large as the clause allows with
    the others at their smallest (:func:`_maximise`). ``spec.shape_of`` turns
    the values into a shape. At most ``limit`` clauses; ``budget`` seconds in all."""
    from ila.smt import SmtEncoder, axiom_instances, check
    if not spec.size_vars or spec.shape_of is None:
        return []
    t_end = time.perf_counter() + budget
    out: list[dict] = []
    for clause in clauses[:limit]:
        goal = Rewriter().one(~clause.formula)
        apps = [n for n in toposort([goal]) if n.op is Op.APPLY]
        axioms = axiom_instances([goal]) + spec.axioms(apps)

        def solve(extra):
            left = t_end - time.perf_counter()
            if left <= 0:
                return None
            enc = SmtEncoder()
            fs = enc.encode_all([goal, *axioms, *extra])
            res = check(enc, fs, solver=solver, timeout=min(20.0, left),
                        want=[enc.encode(v) for v in spec.size_vars])
            if res.status != "sat":
                return None
            return {v: int(res.values[enc.encode(v)]) for v in spec.size_vars}
        for bound in [*spec.small_sizes, None]:    # one shape per bound: a shape can be degenerate
            extra = [] if bound is None else [v.ule(b) for v, b in zip(spec.size_vars, bound)]
            vals = solve(extra)                    # (a loop that never ends), the next one is tried
            if vals is None:
                continue
            found = [vals]
            if bound is None:
                vals = found[0] = _minimise(solve, spec.size_vars, vals)
                found += [_maximise(solve, spec.size_vars, vals, v) for v in spec.size_vars]
            for vals in found:
                shape = spec.shape_of({v.name: x for v, x in vals.items()})
                if shape not in out:
                    out.append(shape)
    return out


def _minimise(solve, size_vars: list, vals: dict) -> dict:
    """Make each size of a failing assignment as small as the clause allows, one after another,
    by bisection (the others kept at most their current values)."""
    for v in size_vars:
        lo, hi = 0, vals[v]
        while lo < hi:
            mid = (lo + hi) // 2
            got = solve([v.ule(mid)] + [u.ule(vals[u]) for u in size_vars if u is not v])
            if got is None:
                lo = mid + 1
            else:
                vals = got
                hi = min(mid, got[v])
    return vals


def _maximise(solve, size_vars: list, low: dict, v) -> dict:
    """The failing assignment with size ``v`` as large as the clause allows (inside the side
    conditions the clause states) and every other size at most its value in ``low`` (the minimised
    assignment), by bisection: where a bug shows only near the largest sizes, a spurious failure of
    a weak invariant at small sizes must not hide it."""
    best, lo, hi = low, low[v], (1 << v.width) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        got = solve([v.uge(mid)] + [u.ule(low[u]) for u in size_vars if u is not v])
        if got is None:
            hi = mid - 1
        else:
            best, lo = got, max(mid, got[v])
    return best


