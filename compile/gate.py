"""The verified-only gate: the compiler offloads a call only on a certificate about that call.

A call (:class:`compile.call.Call`) has a subject: the mapping, its shape at the match, and the
matched IR subterm with every attribute, dtype and shape. A certificate is a current ledger entry
of method ``call`` (:mod:`compile.certify`; its digest matches the sources of everything it depends
on, compile/ included) whose subject digest is the call's: a validation of the whole call (IR
operands through the adapters, the emitted stream, the read-back, against the subterm's IR
semantics), or a proof of the whole call (that, a proof of the mapping at the shape or for all
sizes, and the exact adapter check). ``require='proved'`` accepts proofs only. Missing certificates
can be obtained on demand (``certify='sim'`` or ``'proof'``) within a time budget (seconds: the
wall-clock bound of the certification, run in a forked process; also the solver timeout of its
proofs); they are recorded in the ledger. A current refutation of the subject (a failed validation
or a counterexample, recorded for the same sources) is not re-run: the checks are seeded and
deterministic. Otherwise the call is refused, and the decision says which call and why (the
violated side condition, the refutation that stands, or how to certify it).
"""
from __future__ import annotations

from dataclasses import dataclass

from compile.errors import CompileError

REQUIRE = ("any", "proved")
CERTIFY = ("none", "sim", "proof")


@dataclass(frozen=True)
class CallDecision:
    """Whether call ``call`` (:class:`compile.call.Call`) may be offloaded, on which call
    certificate (a ledger entry about exactly its subject), and otherwise why not."""
    call: object
    allowed: bool
    certificate: dict | None = None
    reason: str = ""
    pending: bool = False        # refused only for want of a certificate that on-demand certification may give

    @property
    def mapping(self) -> str:
        return self.call.mapping.name

    @property
    def shape(self) -> str:
        return self.call.shape.text

    def describe(self) -> str:
        if self.allowed:
            c = self.certificate
            what = "proof" if c["result"] == "proved" else "simulation validation"
            return (f"{self.call.where()}: call {what} ({c['date']}; subject {c['subject_digest']}; covers: "
                    f"{', '.join(c.get('covers') or [])})")
        return f"{self.call.where()}: not offloaded — {self.reason}"


def decide_call(call, *, require: str = "any", certify: str = "none", budget: float = 60.0, path=None,
                samples: int = 20) -> CallDecision:
    """The gate's decision for ``call``: allowed on a current call certificate whose subject is the
    call's (:func:`compile.certify.certificates`; ``require='proved'``: a proof of the whole call);
    refused when the shape violates a side condition (naming it), when a current refutation of the
    subject stands (not re-run), or when there is no certificate and ``certify`` is ``none`` or the
    on-demand certification (``sim``: a seeded validation of the whole call; ``proof``: that plus a
    proof of the mapping at the shape and the exact adapter check) does not finish within
    ``budget`` seconds (run in a forked process) or does not certify. Raises CompileError for bad
    option values."""
    from compile import certify as C
    from mappings.base import MappingError
    if require not in REQUIRE or certify not in CERTIFY:
        raise CompileError(f"require must be one of {REQUIRE} and certify one of {CERTIFY} "
                           f"(got {require!r}, {certify!r})")
    if not budget > 0:
        raise CompileError(f"the certification budget must be > 0 seconds (got {budget!r})")
    try:
        call.mapping.check_shape(call.shape)
    except MappingError as exc:
        return CallDecision(call, False, reason=str(exc))
    certs = C.certificates(call, require=require, path=path)
    if certs:
        return CallDecision(call, True, certs[0])
    bad = C.refutations(call, path=path)
    if not bad and certify != "none":
        _certify_within(call, "proof" if certify == "proof" or require == "proved" else "sim", budget, path, samples)
        certs = C.certificates(call, require=require, path=path)
        if certs:
            return CallDecision(call, True, certs[0])
        bad = C.refutations(call, path=path)
    if bad:
        e = bad[0]
        what = "validation failed" if e["result"] == "failed" else "proof found a counterexample"
        return CallDecision(call, False, reason=f"the ledger holds a current refutation of this call: {what} "
                            f"({e['date']}: {e.get('detail', '')[:160]}); it is not re-run until the sources change")
    need = "a proof of the whole call" if require == "proved" else "a proof or a validation of the whole call"
    late = (f" (on-demand certification did not certify within its budget of {budget:g} s)"
            if certify != "none" else "")
    return CallDecision(call, False, reason=f"the ledger holds no current certificate ({need}) for subject "
                        f"{call.subject.digest}{late}; certify on demand with --certify sim (or proof), e.g. "
                        f"python -m compile MODEL --certify sim", pending=certify == "none")


_ABANDONED_CALLS: dict = {}     # (subject digest, method, ledger) -> the budget a certification was abandoned at


def _certify_within(call, method: str, budget: float, path, samples: int) -> None:
    """Certify ``call`` by ``method`` in a forked process, abandoned after ``budget`` seconds
    (nothing recorded then, and not retried in this process with no larger budget); exceptions of
    the certification are raised here."""
    key = (call.subject.digest, method, str(path))
    if _ABANDONED_CALLS.get(key, 0) >= budget:
        return
    from compile import certify as C
    got = _within(lambda: C.certify(call, method=method, samples=samples, timeout=budget, path=path), budget,
                  call.where())
    if got is _LATE:
        _ABANDONED_CALLS[key] = budget


_LATE = object()


def _within(fn, budget: float, what: str):
    """``fn()`` run in a forked process; its value, or :data:`_LATE` after ``budget`` seconds of
    wall-clock time (the process is killed). Exceptions of ``fn`` are raised here."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def work():
        try:
            send.send(("ok", fn()))
        except BaseException as exc:          # noqa: BLE001 (re-raised in the parent)
            try:
                send.send(("error", exc))
            except Exception:                  # an exception that does not pickle
                send.send(("error", CompileError(f"{what}: certification failed: {type(exc).__name__}: {exc}")))

    proc = ctx.Process(target=work, daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(budget):
            return _LATE
        kind, value = recv.recv()
    except EOFError:                           # the process died without an answer
        raise CompileError(f"{what}: the certification process died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    if kind == "error":
        raise value
    return value
