"""Re-running a ledger entry of ``verify``'s checkers (``python -m verify.ledger --recheck``).

:func:`recheck` takes an entry recorded by ``verify.bmc`` (or ``verify.symmetry``), ``verify.chc``
or ``verify.simval`` and runs the same check again on today's sources at the recorded scope: the
shape (or ``symbolic``), the numerics (``/exact`` suffix: bit-precise, else uninterpreted functions), the
invariants (``/inferred``: inferred, else the mapping's), the solver; a validation with its
recorded sample count and seed (entries without a seed were made with seed 0, the default of
``verify.mapping`` and of the compiler's on-demand validations) and, for ``fuzz``, the default
number of examples. It returns what it found (:func:`verify.ledger.differences` compares). The
entry is untrusted input: a scope, solver or method that the checkers do not have is a
LedgerError, never a guess.

Imported by :mod:`verify.ledger` through :data:`verify.ledger.RECHECKERS` only, so it is no part
of any verdict's digest.
"""
from __future__ import annotations

from .ledger import LedgerError, scope_label

SOLVERS = ("z3", "cvc5")


def recheck(entry: dict, *, timeout: float | None = None) -> dict:
    """Run ``entry``'s check again: ``{"result", ...}`` with ``samples``/``mean_error``/``std_error``
    for validations, ``covers`` for proofs. Raises a D2AError for an entry that names no check."""
    from mappings.registry import get
    m = get(entry["mapping"])
    method = entry["method"]
    if method in ("sim", "fuzz"):
        return _validation(m, entry)
    if method in ("bmc", "chc"):
        return _proof(m, entry, timeout)
    raise LedgerError(f"method {method!r} is not one of verify's checkers (bmc, chc, sim, fuzz)")


def _validation(m, entry: dict) -> dict:
    from .simval import run_fuzz, run_sim
    seed = entry.get("seed", 0)
    if entry["method"] == "sim":
        samples = entry.get("samples")
        if not samples:
            raise LedgerError("a sim entry must record its number of samples (>= 1)")
        rep = run_sim(m, shape=m.parse_shape(entry["scope"]), samples=samples, seed=seed)
    else:
        if entry["scope"] != "hypothesis":
            raise LedgerError(f"a fuzz entry's scope is 'hypothesis', not {entry['scope']!r}")
        rep = run_fuzz(m, seed=seed)
    return {"result": "passed" if rep.passed else "failed", "samples": len(rep.errors),
            "mean_error": rep.mean, "std_error": rep.std, "seconds": rep.seconds,
            "detail": rep.failure.splitlines()[0] if rep.failure else ""}


def _proof(m, entry: dict, timeout: float | None) -> dict:
    scope, solver, method = entry["scope"], entry.get("solver", ""), entry["method"]
    shape_text, *flags = scope.split("/")
    numerics = "exact" if "exact" in flags else "uf"
    infer = "inferred" in flags
    if scope_label(shape_text, numerics, infer) != scope:
        raise LedgerError(f"scope {scope!r} is not a shape or 'symbolic' followed by /exact and/or /inferred")
    if solver not in SOLVERS:
        raise LedgerError(f"solver {solver!r} is not one of {', '.join(SOLVERS)}")
    symbolic = shape_text == "symbolic"
    shape = None if symbolic else m.parse_shape(shape_text)
    if method == "bmc":
        if symbolic or infer:
            raise LedgerError(f"bmc proves fixed shapes with no invariants: scope {scope!r} is not one of its scopes")
        if m.proof is None:
            raise LedgerError(f"{m.name} has no proof setup for BMC")
        from .bmc import check_bmc
        from .symmetry import check_bmc_symmetric
        check = check_bmc_symmetric if entry.get("checker") == "verify.symmetry" else check_bmc
        v = check(m.proof.bmc(shape, numerics=numerics), solver=solver, timeout=timeout,
                  inline_ufs=numerics == "exact", label=f"{m.name}.{shape_text}", scope=shape_text)
    else:
        if m.proof is None or m.proof.chc is None:
            raise LedgerError(f"{m.name} has no CHC setup")
        from .chc import check_chc
        v = check_chc(m, shape, solver=solver, timeout=timeout, numerics=numerics, infer=infer)
    out = {"result": v.kind, "seconds": v.seconds,
           "detail": " ".join((v.detail or getattr(v, "reason", "") or "").split())[:400]}
    if v.kind == "proved":
        out["covers"] = list(getattr(v, "covers", ()) or ())
    return out
