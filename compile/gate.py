"""The verified-only gate: the compiler offloads mapping M at shape S only on a certificate.

A certificate is a current ledger entry (``verify.ledger.certificates``: its digest matches the
sources of everything it depends on) for M whose scope covers S: a proof at S or for every size
(``symbolic``), else a passing simulation validation at S (the paper's own standard for most
mappings). ``require='proved'`` accepts proofs only. Missing certificates can be obtained on demand
(``certify='sim'``: a seeded simulation validation; ``certify='proof'``: BMC at S, then a
simulation if the mapping has no proof setup), within a time budget (seconds: the proof's solver
timeout, or the wall-clock bound of a simulation validation, run in a forked process); they are
recorded in the ledger. A current refutation at S (a failed validation or a
counterexample, recorded for the same sources) is not re-run: the checks are seeded and
deterministic. Otherwise the offload is refused, and the decision says which mapping, which shape,
and the command that would certify it (or the refutation that stands).
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
                        f"python -m compile MODEL --certify sim")


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


@dataclass(frozen=True)
class Decision:
    """Whether mapping ``mapping`` may be offloaded at ``shape`` (e.g. ``16x64``), on which
    certificate (a ledger entry), and otherwise why not."""
    mapping: str
    shape: str
    allowed: bool
    certificate: dict | None = None
    reason: str = ""

    def describe(self) -> str:
        if self.allowed:
            c = self.certificate
            what = "proof" if c["result"] == "proved" else "simulation validation"
            return (f"{self.mapping} at {self.shape}: {what} {c['method']} at {c['scope']} ({c['date']}, "
                    f"covers: {', '.join(c.get('covers') or []) or 'simulated outputs'})")
        return f"{self.mapping} at {self.shape}: not offloaded — {self.reason}"


def command(name: str, shape_text: str, has_proof: bool) -> str:
    """The command that would certify ``name`` at ``shape_text``."""
    method = "bmc" if has_proof else "sim"
    return f"python -m verify.mapping {name} --method {method} --shape {shape_text}"


def _certificates(name, shape_text, require, path):
    from verify.ledger import certificates
    got = certificates(name, shape_text, path=path)
    return [c for c in got if c["result"] == "proved"] if require == "proved" else got


def decide(name: str, shape: dict, *, require: str = "any", certify: str = "none", budget: float = 60.0,
           path=None) -> Decision:
    """The gate's decision for offloading mapping ``name`` at ``shape`` (dimension -> int).
    Raises CompileError for an unknown mapping or option value."""
    from mappings.base import MappingError, format_shape
    from mappings.registry import get
    if require not in REQUIRE or certify not in CERTIFY:
        raise CompileError(f"require must be one of {REQUIRE} and certify one of {CERTIFY} "
                           f"(got {require!r}, {certify!r})")
    if not budget > 0:
        raise CompileError(f"the certification budget must be > 0 seconds (got {budget!r})")
    try:
        m = get(name)
    except MappingError as exc:
        raise CompileError(str(exc)) from None
    missing = [d for d in m.shape_dims if d not in shape]
    if missing:
        raise CompileError(f"{name}: shape {shape} lacks dimension(s) {missing}; expected {m.shape_dims}")
    text = format_shape({d: shape[d] for d in m.shape_dims})
    try:
        m.check_shape(shape)
    except MappingError as exc:
        return Decision(name, text, False, reason=str(exc))
    certs = _certificates(name, text, require, path)
    if not certs and certify != "none" and not _refuted(name, text, path):
        _obtain(m, shape, text, certify, budget, path)
        certs = _certificates(name, text, require, path)
    if certs:
        return Decision(name, text, True, certs[0])
    bad = _refuted(name, text, path)
    if bad:
        e = bad[0]
        what = "simulation validation failed" if e["result"] == "failed" else "proof found a counterexample"
        return Decision(name, text, False, reason=f"the ledger holds a current refutation at {text}: {e['method']} "
                        f"{what} ({e['date']}); it is not re-run until the sources change")
    need = "a proof" if require == "proved" else "a proof or a passing simulation validation"
    late = f" (on-demand certification did not finish within its budget of {budget:g} s)" if certify != "none" else ""
    return Decision(name, text, False, reason=f"the ledger holds no current certificate ({need}) at {text}{late}; "
                    f"certify with: {command(name, text, m.proof is not None)}")


def _refuted(name: str, text: str, path) -> list[dict]:
    from verify.ledger import refutations
    return refutations(name, text, path=path)


def _obtain(m, shape: dict, text: str, how: str, budget: float, path) -> None:
    from verify import ledger
    if how == "proof" and m.proof is not None:
        from verify.bmc import check_bmc
        numerics = "exact" if m.accelerator == "vta" else "uf"
        v = check_bmc(m.proof.bmc(shape, numerics=numerics), solver="z3", timeout=budget,
                      inline_ufs=numerics == "exact", label=f"{m.name}.{text}", scope=text)
        ledger.record(m, v, scope=ledger.scope_label(text, numerics), path=path)
        return
    key = (m.name, text, str(path))
    if _ABANDONED.get(key, 0) >= budget:       # not retried in this process with no larger budget
        return
    v = _sim_within(m, shape, budget)
    if v is None:
        _ABANDONED[key] = budget
    else:
        ledger.record_validation(m, v, path=path)


_ABANDONED: dict = {}    # (mapping, shape, ledger) -> the budget a validation was abandoned at


def _sim_within(m, shape: dict, budget: float):
    """The seeded simulation validation of ``m`` at ``shape`` (``verify.simval.run_sim``), run in a
    forked process and abandoned after ``budget`` seconds of wall-clock time (then None: nothing is
    recorded and the offload is refused). Exceptions of the validation are raised here."""
    import multiprocessing as mp
    from verify.simval import run_sim
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def work():
        try:
            send.send(("ok", run_sim(m, shape=shape, samples=20, seed=0)))
        except BaseException as exc:          # noqa: BLE001 (re-raised in the parent)
            try:
                send.send(("error", exc))
            except Exception:                  # an exception that does not pickle
                send.send(("error", CompileError(f"{m.name}: validation failed: {type(exc).__name__}: {exc}")))

    proc = ctx.Process(target=work, daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(budget):
            return None
        kind, value = recv.recv()
    except EOFError:                           # the process died without an answer
        raise CompileError(f"{m.name}: the simulation validation process died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    if kind == "error":
        raise value
    return value
