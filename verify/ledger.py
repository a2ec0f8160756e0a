"""The proof ledger: every verdict recorded with a digest of everything it depends on.

An entry holds the mapping name, the method (``bmc``, ``chc``, ``sim``, ``fuzz``), the checker
module that produced it, the scope (a shape such as ``16x64``, or ``symbolic`` for all sizes,
with ``/exact`` or ``/inferred`` suffixes), the claims a proof covers (``verify.scope``), the
solver, seconds, result and detail, and the **digest**: sha256 over the source of every file in
the import closure (:mod:`verify.closure`) of the mapping's module and of the checker, i.e. the
mapping package, the proof modules it names, the models, ``ila/`` and ``verify/`` as far as they
are used. Editing any one of those files invalidates the entry; :func:`certified` and
:func:`certificates` return current entries only, and ``compile/`` offloads only what they list.

Where it lives. ``$D2A_LEDGER`` when set (it must not be empty); otherwise a per-user file,
``$XDG_DATA_HOME/d2a/ledger.json`` (default ``~/.local/share/d2a/ledger.json``), so running the
main job never dirties a checkout. The committed record of the paper tables is
``paper_results/ledger.json``, which the benchmark scripts write on purpose (``path=``).

Safety. Writes take an exclusive ``flock`` on ``<ledger>.lock`` for the read-modify-write and
replace the file atomically (temporary file + ``os.replace``), so concurrent recorders lose
nothing. A ledger file that does not parse as a JSON list of entries, or is empty, is a
:class:`LedgerError` naming the file; it is never silently replaced. An ``unknown`` verdict never
replaces a ``proved`` entry of the same key (mapping, method, scope, solver) and digest.

``python -m verify.ledger`` shows the ledger and whether each entry is current.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pathlib
import sys
import tempfile
import time

from ila.errors import D2AError

from .closure import ROOT, closure, import_graph

CHECKERS = {"bmc": "verify.bmc", "chc": "verify.chc", "sim": "verify.simval", "fuzz": "verify.simval"}


class LedgerError(D2AError):
    """The ledger file is unusable (corrupt, empty, unwritable) or its location is malformed."""


def default_path() -> pathlib.Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return pathlib.Path(base) / "d2a" / "ledger.json"


def ledger_path(path=None) -> pathlib.Path:
    """``path``, else ``$D2A_LEDGER``, else :func:`default_path`; LedgerError for an empty
    ``D2A_LEDGER``."""
    if path is not None:
        return pathlib.Path(path)
    env = os.environ.get("D2A_LEDGER")
    if env is not None:
        if not env.strip():
            raise LedgerError("D2A_LEDGER is set but empty: give a file path, or unset it for the default "
                              f"{default_path()}")
        return pathlib.Path(env)
    return default_path()


# ----------------------------------------------------------------------------- digests
_GRAPH: dict = {}


def _graph():
    if not _GRAPH:
        _GRAPH.update(import_graph())
    return _GRAPH


def closure_files(mapping, method: str = "bmc") -> list[pathlib.Path]:
    """The source files a verdict of ``method`` on ``mapping`` depends on (sorted)."""
    from mappings.registry import MODULES
    from .closure import module_files
    roots = [MODULES[mapping.name], CHECKERS.get(method, "verify.bmc")]
    files = module_files()
    return sorted(files[m] for m in closure(roots, _graph()) if m in files)


def _hash(files) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def digest(mapping, method: str = "bmc") -> str:
    """sha256 (16 hex digits) over the path and source of every file of :func:`closure_files`."""
    return _hash(closure_files(mapping, method))


def module_digest(roots: list[str]) -> str:
    """The digest over the import closure of the dotted modules ``roots`` (entries that are not
    mappings, e.g. certified compiler-IR rewrites: their rules module and checker)."""
    from .closure import module_files
    files = module_files()
    return _hash(sorted(files[m] for m in closure(roots, _graph()) if m in files))


# ----------------------------------------------------------------------------- reading and writing
def _parse(p: pathlib.Path, text: str) -> list[dict]:
    if not text.strip():
        raise LedgerError(f"ledger {p} is empty (a ledger file holds a JSON list; delete the file to start a new one)")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerError(f"ledger {p} is corrupt: {exc.msg} at line {exc.lineno}; it was left as it is") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "mapping" in e for e in entries):
        raise LedgerError(f"ledger {p} is not a JSON list of entries; it was left as it is")
    return entries


def load(path=None) -> list[dict]:
    """The ledger's entries ([] when the file does not exist yet)."""
    p = ledger_path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise LedgerError(f"ledger {p} cannot be read: {exc.strerror}") from None
    return _parse(p, text)


@contextlib.contextmanager
def _locked(p: pathlib.Path):
    import fcntl
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fh = open(p.with_name(p.name + ".lock"), "a")
    except OSError as exc:
        raise LedgerError(f"ledger {p} cannot be written: {exc.strerror}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write(p: pathlib.Path, entries: list[dict]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name + ".", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(entries, indent=1) + "\n")
        os.replace(tmp, p)
    except OSError as exc:
        raise LedgerError(f"ledger {p} cannot be written: {exc.strerror}") from None


def scope_label(scope: str, numerics: str = "uf", inferred: bool = False) -> str:
    """The ledger's scope of a verdict: the shape (``16x64``) or ``symbolic``, then ``/exact`` for
    bit-precise numerics and ``/inferred`` for inferred invariants (``16x64/exact``)."""
    return scope + ("" if numerics == "uf" else "/exact") + ("/inferred" if inferred else "")


def _key(e: dict) -> tuple:
    return e["mapping"], e["method"], e["scope"], e.get("solver", "")


def _store(entry: dict, path=None) -> dict:
    p = ledger_path(path)
    with _locked(p):
        entries = load(p)
        old = [e for e in entries if _key(e) == _key(entry)]
        if entry["result"] == "unknown" and any(e["result"] == "proved" and e["digest"] == entry["digest"]
                                                for e in old):
            return next(e for e in old if e["result"] == "proved")
        entries = [e for e in entries if _key(e) != _key(entry)] + [entry]
        _write(p, entries)
    return entry


def store(entry: dict, path=None) -> dict:
    """Record a complete entry (it carries ``module`` when its subject is not a registered
    mapping, and then its digest is :func:`module_digest` of ``[module, checker]``)."""
    return _store(entry, path)


def record(mapping, verdict, *, scope: str, path=None) -> dict:
    """Record a proof verdict (``ila.verdict``) for ``mapping``; return the entry kept (an
    ``unknown`` never replaces a current ``proved``). Raises LedgerError."""
    entry = {"mapping": mapping.name, "digest": digest(mapping, verdict.method), "method": verdict.method,
             "checker": CHECKERS.get(verdict.method, ""), "scope": scope, "solver": verdict.solver,
             "seconds": round(verdict.seconds, 3), "result": verdict.kind,
             "covers": list(getattr(verdict, "covers", ()) or ()),
             "detail": " ".join((verdict.detail or getattr(verdict, "reason", "") or "").split())[:400],
             "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    return _store(entry, path)


def record_validation(mapping, report, *, path=None) -> dict:
    """Record a ``--method sim|fuzz`` validation report (``verify.simval``): result ``passed`` or
    ``failed`` at its shape (``fuzz``: over the drawn shapes), with the error statistics."""
    entry = {"mapping": mapping.name, "digest": digest(mapping, report.method), "method": report.method,
             "checker": CHECKERS[report.method], "scope": str(report.shape), "solver": "",
             "seconds": round(report.seconds, 3), "result": "passed" if report.passed else "failed",
             "covers": [], "samples": len(report.errors), "mean_error": float(report.mean),
             "std_error": float(report.std), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    return _store(entry, path)


def current(entries: list[dict]) -> list[dict]:
    """The entries whose digest matches the current sources."""
    from mappings.registry import MODULES, get
    memo: dict = {}
    out = []
    for e in entries:
        k = (e["mapping"], e["method"], e.get("module"))
        if k not in memo:
            try:
                if e.get("module"):
                    memo[k] = module_digest([e["module"], e.get("checker", "")])
                else:
                    memo[k] = digest(get(e["mapping"]), e["method"]) if e["mapping"] in MODULES else None
            except D2AError:
                memo[k] = None
        if e["digest"] == memo[k]:
            out.append(e)
    return out


def certified(name: str, path=None) -> list[dict]:
    """Current ``proved`` entries for mapping ``name``."""
    return [e for e in current([e for e in load(path) if e["mapping"] == name]) if e["result"] == "proved"]


def certificates(name: str, shape_text: str | None = None, path=None) -> list[dict]:
    """Current certificates of mapping ``name``: ``proved`` entries, and ``passed`` simulation
    validations; at ``shape_text`` (e.g. ``16x64``) only those whose scope is that shape or
    ``symbolic`` (proofs for every size). Strongest first (symbolic proofs, shape proofs, sims)."""
    ok = [e for e in current([e for e in load(path) if e["mapping"] == name]) if e["result"] in ("proved", "passed")]
    if shape_text is not None:
        ok = [e for e in ok if e["scope"].split("/")[0] in (shape_text, "symbolic")]
    rank = {"symbolic": 0}
    return sorted(ok, key=lambda e: (e["result"] != "proved", rank.get(e["scope"].split("/")[0], 1)))


def refutations(name: str, shape_text: str, path=None) -> list[dict]:
    """Current entries of mapping ``name`` at ``shape_text`` that refute it there: failed
    simulation validations and counterexamples (the checks are seeded and deterministic, so
    re-running them on the same sources gives the same answer)."""
    bad = [e for e in current([e for e in load(path) if e["mapping"] == name])
           if e["result"] in ("failed", "counterexample")]
    return [e for e in bad if e["scope"].split("/")[0] == shape_text]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.ledger", description="show the proof ledger")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--path", help="ledger file (default: $D2A_LEDGER, else the per-user file)")
    args = ap.parse_args(argv)
    try:
        p = ledger_path(args.path)
        entries = load(p)
        live = {id(e) for e in current(entries)}
    except D2AError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for e in entries:
        e["valid"] = id(e) in live
    if args.json:
        print(json.dumps(entries, indent=1))
        return 0
    if not entries:
        print(f"ledger {p} is empty")
        return 0
    print(f"ledger {p}")
    print(f"{'mapping':22} {'method':6} {'scope':18} {'solver':6} {'seconds':>9} {'result':15} current")
    for e in entries:
        print(f"{e['mapping']:22} {e['method']:6} {e['scope']:18} {e['solver']:6} {e['seconds']:9.2f} "
              f"{e['result']:15} {'yes' if e['valid'] else 'no (sources changed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
