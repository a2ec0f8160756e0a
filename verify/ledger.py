"""The proof ledger: every verdict recorded with a digest of everything it depends on.

An entry holds the mapping name, the method (``bmc``, ``chc``, ``sim``, ``fuzz``), the checker
module that produced it, the scope (a shape such as ``16x64``, or ``symbolic`` for all sizes,
with ``/exact`` or ``/inferred`` suffixes), the claims a proof covers (``verify.scope``), the
solver, seconds, result and detail, and the **digest**: sha256 over the source of every file in
the import closure (:mod:`verify.closure`) of the mapping's module and of the checker, i.e. the
mapping package, the proof modules it names, the models, ``ila/`` and ``verify/`` as far as they
are used. Editing any one of those files invalidates the entry; :func:`certified` and
:func:`certificates` return current entries only, and ``compile/`` offloads only what they list.
Simulation validations also record their ``seed`` (entries without one were made with seed 0).

Where it lives: two layers. The **user's ledger** is read-write: ``$D2A_LEDGER`` when set (it
must not be empty), otherwise a per-user file, ``$XDG_DATA_HOME/d2a/ledger.json`` (default
``~/.local/share/d2a/ledger.json``), so running the main job never dirties a checkout. Under it,
**read-only**, the **base layer**: the committed record of the paper tables,
``paper_results/ledger.json`` of the source tree (``$D2A_LEDGER_BASE`` names another file; set
but empty, there is no base layer). Readers (:func:`load`, :func:`certified`,
:func:`certificates`, :func:`refutations`) see both: an entry of the user's ledger hides the
base entry of the same key (mapping, method, scope, solver) *and* digest; entries for other
sources stay visible, and :func:`current` keeps those matching today's sources, so a stale
user entry never hides a current committed certificate. Writers (:func:`record`,
:func:`record_validation`, :func:`store`) write the user's ledger only. Given ``path=``
explicitly (the benchmark scripts write ``paper_results/ledger.json`` on purpose), every
function reads and writes that one file, with no base layer.

Safety. Every entry is checked on load (:data:`FIELDS`: required fields and their types, the
result among :data:`RESULTS`); a file that is not UTF-8, not JSON, not a list of entries, empty,
or holds an entry with a missing or mistyped field is a :class:`LedgerError` naming the file,
the entry (index and mapping) and the field; it is never silently replaced, and nothing is
written next to it. Writes take an exclusive ``flock`` on ``<ledger>.lock`` for the
read-modify-write and replace the file atomically (temporary file ``<ledger>.XXXXXXXX.tmp`` +
``os.replace``), so concurrent recorders lose nothing; temporary files left by a writer that was
killed are removed by the next write (under the lock). An ``unknown`` verdict never replaces a
``proved`` entry of the same key and digest (in either layer).

Anyone can write the file, so a verdict is only as good as its re-run: ``python -m verify.ledger
--recheck [--sample N] [--seed S] [--max-seconds T] [--timeout T] [--path P] [--json]`` re-runs
current entries through their checker (:data:`RECHECKERS`) at their recorded scope, seed and
sample count, and reports every entry that does not reproduce (exit 1). Stale entries (digest
not of today's sources: nothing trusts them) are counted, not re-run.

``python -m verify.ledger`` shows the ledger (both layers) and whether each entry is current.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import json
import math
import os
import pathlib
import random
import re
import sys
import tempfile
import time

from ila.errors import D2AError

from .closure import ROOT, closure, import_graph

CHECKERS = {"bmc": "verify.bmc", "chc": "verify.chc", "sim": "verify.simval", "fuzz": "verify.simval"}
# method -> every checker module that may record it (the first is the method's own, CHECKERS): a
# BMC verdict with symmetry reduction (verify.symmetry) is a BMC verdict of another checker, whose
# digest covers that checker's sources.
METHOD_CHECKERS = {"bmc": ("verify.bmc", "verify.symmetry"), "chc": ("verify.chc",), "sim": ("verify.simval",),
                   "fuzz": ("verify.simval",)}
RESULTS = ("proved", "counterexample", "unknown", "passed", "failed")
BASE_ENV = "D2A_LEDGER_BASE"

# The checkers whose verdicts can be re-run, and the function that re-runs an entry:
# ``function(entry) -> dict`` (given ``timeout=`` too when it takes one: the solver timeout of a
# re-run proof) with the ``result`` found (one of RESULTS) and,
# where the checker measures them, ``samples``, ``mean_error``, ``std_error``, ``covers``,
# ``detail``. The ledger file is untrusted input: only these modules are ever imported for it.
# (Module and function are separate strings, so :mod:`verify.closure` does not count them as
# dependencies of the ledger: re-running is not part of any verdict.)
RECHECKERS = {
    "verify.bmc": ("verify.recheck", "recheck"),
    "verify.chc": ("verify.recheck", "recheck"),
    "verify.symmetry": ("verify.recheck", "recheck"),
    "verify.simval": ("verify.recheck", "recheck"),
    "compile.rewrites.certify": ("compile.rewrites.certify", "recheck"),
    "compile.certify": ("compile.certify", "recheck"),
}


class LedgerError(D2AError):
    """The ledger file is unusable (not UTF-8, not JSON, an entry with a missing or mistyped
    field, unwritable) or its location is malformed."""


def default_path() -> pathlib.Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return pathlib.Path(base) / "d2a" / "ledger.json"


def committed_path() -> pathlib.Path:
    """The committed record of the paper tables in this source tree, ``paper_results/ledger.json``."""
    return ROOT / "paper_results" / "ledger.json"


def ledger_path(path=None) -> pathlib.Path:
    """The ledger that is written: ``path``, else ``$D2A_LEDGER``, else :func:`default_path`;
    LedgerError for an empty ``D2A_LEDGER``."""
    if path is not None:
        return pathlib.Path(path)
    env = os.environ.get("D2A_LEDGER")
    if env is not None:
        if not env.strip():
            raise LedgerError("D2A_LEDGER is set but empty: give a file path, or unset it for the default "
                              f"{default_path()}")
        return pathlib.Path(env)
    return default_path()


def _same_file(a: pathlib.Path, b: pathlib.Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def base_path(path=None) -> pathlib.Path | None:
    """The read-only layer under the user's ledger: None when ``path`` is given (one file, no
    layers); else ``$D2A_LEDGER_BASE`` (set but empty: None), else :func:`committed_path` when it
    exists; None when it is the user's ledger itself. LedgerError for a ``D2A_LEDGER_BASE`` naming
    a file that does not exist."""
    if path is not None:
        return None
    env = os.environ.get(BASE_ENV)
    if env is not None:
        if not env.strip():
            return None
        base = pathlib.Path(env)
        if not base.is_file():
            raise LedgerError(f"{BASE_ENV}={env!r} names no ledger file (set it empty for no base layer, or unset "
                              f"it for the committed {committed_path()})")
    else:
        base = committed_path()
        if not base.is_file():
            return None
    return None if _same_file(base, ledger_path()) else base


def layers(path=None) -> list[tuple[str, pathlib.Path]]:
    """The files readers see, lowest first: ``[("base", committed), ("user", user's ledger)]``
    (no base layer with an explicit ``path``)."""
    base = base_path(path)
    return ([("base", base)] if base is not None else []) + [("user" if path is None else "file", ledger_path(path))]


# ----------------------------------------------------------------------------- digests
_GRAPH: dict = {}


def _graph():
    if not _GRAPH:
        _GRAPH.update(import_graph())
    return _GRAPH


_FILES: dict = {}


def _files() -> dict:
    """The project's modules -> source files (read once per process, like the import graph)."""
    if not _FILES:
        from .closure import module_files
        _FILES.update(module_files())
    return _FILES


def _checker_of(method: str, checker: str | None) -> str:
    """``checker`` when it may record ``method`` (:data:`METHOD_CHECKERS`), the method's own checker
    for None; LedgerError otherwise (a ledger entry is untrusted input)."""
    if checker is None:
        return CHECKERS.get(method, "verify.bmc")
    if checker not in METHOD_CHECKERS.get(method, ()):
        raise LedgerError(f"checker {checker!r} does not record method {method!r}")
    return checker


def closure_files(mapping, method: str = "bmc", checker: str | None = None) -> list[pathlib.Path]:
    """The source files a verdict of ``method`` (by ``checker``: None for the method's own) on
    ``mapping`` depends on (sorted)."""
    from mappings.registry import MODULES
    roots = [MODULES[mapping.name], _checker_of(method, checker)]
    files = _files()
    return sorted(files[m] for m in closure(roots, _graph()) if m in files)


def _hash(files) -> str:
    key = tuple((str(f), *_signature(f)) for f in files)
    got = _HASHES.get(key)
    if got is None:
        h = hashlib.sha256()
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(b"\0")
            h.update(f.read_bytes())
        got = _HASHES[key] = h.hexdigest()[:16]
    return got


def _signature(f: pathlib.Path) -> tuple:
    """What identifies a source file's present contents for the digest cache: inode, size,
    modification and change times (ns); saving a file changes them."""
    st = f.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


_HASHES: dict = {}          # file signatures -> digest (sources are hashed once per change)


def digest(mapping, method: str = "bmc", checker: str | None = None) -> str:
    """sha256 (16 hex digits) over the path and source of every file of :func:`closure_files`."""
    return _hash(closure_files(mapping, method, checker))


def module_digest(roots: list[str]) -> str:
    """The digest over the import closure of the dotted modules ``roots`` (entries that are not
    mappings, e.g. certified compiler-IR rewrites: their rules module and checker). A root outside
    the project's packages (a mapping registered at run time from another module, e.g. a user's
    accelerator) contributes its own source file and the closure of the project modules it names."""
    from .closure import external_module
    files = _files()
    inside, outside = [r for r in roots if r in files or not r], []
    for r in roots:
        if r and r not in files:
            ext = external_module(r)
            if ext is None:
                raise LedgerError(f"module {r!r} has no source file to digest")
            outside.append(ext[0])
            inside += sorted(ext[1])
    return _hash(sorted(files[m] for m in closure(inside, _graph()) if m in files) + sorted(outside))


# ----------------------------------------------------------------------------- the entries' schema
def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_TYPES = {
    "text": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "result": (lambda v: v in RESULTS, "one of " + ", ".join(RESULTS)),
    "seconds": (lambda v: _is_number(v) and math.isfinite(v) and v >= 0, "a finite number of seconds >= 0"),
    "number": (_is_number, "a number"),
    "number-or-null": (lambda v: v is None or _is_number(v), "a number or null"),
    "count": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "strs": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
}
# field -> (type, required). Other fields are allowed (kept as they are, not interpreted).
FIELDS = {
    "mapping": ("text", True), "method": ("text", True), "scope": ("text", True), "digest": ("text", True),
    "checker": ("text", True), "result": ("result", True), "seconds": ("seconds", True),
    "covers": ("strs", True), "date": ("str", True),
    "solver": ("str", False), "detail": ("str", False), "module": ("text", False), "samples": ("count", False),
    "mean_error": ("number-or-null", False), "std_error": ("number-or-null", False), "seed": ("count", False),
}


def entry_problem(e) -> str | None:
    """What is wrong with ledger entry ``e`` (one phrase naming the field), or None."""
    if not isinstance(e, dict):
        return f"is not an object but {type(e).__name__} {_short(e)}"
    for name, (kind, required) in FIELDS.items():
        if name not in e:
            if required:
                return f"lacks the field {name!r}"
            continue
        ok, what = _TYPES[kind]
        if not ok(e[name]):
            return f"field {name!r} must be {what}, not {_short(e[name])}"
    return None


def _short(v) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(e, index) -> str:
    name = e.get("mapping") if isinstance(e, dict) else None
    return f"entry [{index}]" + (f" (mapping {name!r})" if isinstance(name, str) else "")


# ----------------------------------------------------------------------------- reading and writing
def _parse(p: pathlib.Path, data: bytes) -> list[dict]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LedgerError(f"ledger {p} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                          "it was left as it is") from None
    if not text.strip():
        raise LedgerError(f"ledger {p} is empty (a ledger file holds a JSON list; delete the file to start a new one)")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerError(f"ledger {p} is corrupt: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                          "it was left as it is") from None
    except RecursionError:
        raise LedgerError(f"ledger {p} is corrupt: nested too deeply; it was left as it is") from None
    if not isinstance(entries, list):
        raise LedgerError(f"ledger {p} is not a JSON list of entries but a JSON {type(entries).__name__}; "
                          "it was left as it is")
    for i, e in enumerate(entries):
        bad = entry_problem(e)
        if bad:
            raise LedgerError(f"ledger {p}: {_describe(e, i)} {bad} (fix or delete the entry; the file was left "
                              "as it is)")
    return entries


def _load_file(p: pathlib.Path) -> list[dict]:
    """The entries of ledger file ``p``, each a fresh dict (the parse of the same bytes is reused)."""
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise LedgerError(f"ledger {p} cannot be read: {exc.strerror}") from None
    got = _PARSED.get(str(p))
    if got is None or got[0] != data:
        got = _PARSED[str(p)] = (data, _parse(p, data))
    return [dict(e) for e in got[1]]


_PARSED: dict = {}          # ledger path -> (its bytes, their parsed entries)


def _key(e: dict) -> tuple:
    """What one entry is about: mapping, method, scope, solver, and for a call certificate
    (``compile.certify``) its subject; a new entry replaces an older one of the same key."""
    return e["mapping"], e["method"], e["scope"], e.get("solver", ""), e.get("subject_digest", "")


def _layered(path=None) -> list[tuple[str, dict]]:
    """(layer, entry) of every visible entry, base entries first (those the user's ledger does not
    hide: same key and digest), then the user's."""
    got = [(name, _load_file(p)) for name, p in layers(path)]
    if len(got) == 1:
        return [(got[0][0], e) for e in got[0][1]]
    (_, base), (_, own) = got
    hidden = {(_key(e), e["digest"]) for e in own}
    return [("base", e) for e in base if (_key(e), e["digest"]) not in hidden] + [("user", e) for e in own]


def load(path=None) -> list[dict]:
    """The ledger's entries ([] when no file exists yet): with ``path``, that file's; otherwise the
    base layer's under the user's (see the module docstring). Raises LedgerError."""
    return [e for _, e in _layered(path)]


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


def _tmp_files(p: pathlib.Path) -> list[pathlib.Path]:
    """Temporary files of :func:`_write` for ``p`` (``<name>.XXXXXXXX.tmp``, as mkstemp names them)."""
    pat = re.compile(re.escape(p.name) + r"\.[A-Za-z0-9_]{8}\.tmp")
    try:
        return sorted(f for f in p.parent.iterdir() if pat.fullmatch(f.name))
    except OSError:
        return []


def _clean_tmp(p: pathlib.Path) -> None:
    """Remove temporary files of interrupted writes (call under the lock: no write is under way)."""
    for f in _tmp_files(p):
        with contextlib.suppress(OSError):
            f.unlink()


def _write(p: pathlib.Path, entries: list[dict]) -> None:
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name + ".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(entries, indent=1) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise LedgerError(f"ledger {p} cannot be written: {exc.strerror}") from None


def scope_label(scope: str, numerics: str = "uf", inferred: bool = False) -> str:
    """The ledger's scope of a verdict: the shape (``16x64``) or ``symbolic``, then ``/exact`` for
    bit-precise numerics and ``/inferred`` for inferred invariants (``16x64/exact``)."""
    return scope + ("" if numerics == "uf" else "/exact") + ("/inferred" if inferred else "")


def _store(entry: dict, path=None) -> dict:
    bad = entry_problem(entry)
    if bad:
        raise LedgerError(f"the entry to record {bad}: {_short(entry)}")
    p = ledger_path(path)
    base = base_path(path)
    with _locked(p):
        _clean_tmp(p)
        entries = _load_file(p)
        if entry["result"] == "unknown":
            pool = entries + (_load_file(base) if base is not None else [])
            proved = [e for e in pool if _key(e) == _key(entry) and e["result"] == "proved"
                      and e["digest"] == entry["digest"]]
            if proved:
                return proved[0]
        entries = [e for e in entries if _key(e) != _key(entry)] + [entry]
        _write(p, entries)
    return entry


def store(entry: dict, path=None) -> dict:
    """Record a complete entry (it carries ``module`` when its subject is not a registered
    mapping, and then its digest is :func:`module_digest` of ``[module, checker]``) in the user's
    ledger (or ``path``). Raises LedgerError, also for an entry that does not fit :data:`FIELDS`."""
    return _store(entry, path)


def record(mapping, verdict, *, scope: str, path=None, checker: str | None = None) -> dict:
    """Record a proof verdict (``ila.verdict``) for ``mapping``, found by ``checker`` (None: the
    method's own, :data:`CHECKERS`; ``verify.symmetry`` for a BMC verdict with symmetry
    reduction); return the entry kept (an ``unknown`` never replaces a current ``proved``).
    Raises LedgerError."""
    checker = _checker_of(verdict.method, checker) if verdict.method in CHECKERS else ""
    entry = {"mapping": mapping.name, "digest": digest(mapping, verdict.method, checker or None),
             "method": verdict.method, "checker": checker, "scope": scope, "solver": verdict.solver,
             "seconds": round(verdict.seconds, 3), "result": verdict.kind,
             "covers": list(getattr(verdict, "covers", ()) or ()),
             "detail": " ".join((verdict.detail or getattr(verdict, "reason", "") or "").split())[:400],
             "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    return _store(entry, path)


def record_validation(mapping, report, *, path=None) -> dict:
    """Record a ``--method sim|fuzz`` validation report (``verify.simval``): result ``passed`` or
    ``failed`` at its shape (``fuzz``: over the drawn shapes), with the error statistics and the
    seed (so ``--recheck`` re-runs the same inputs)."""
    entry = {"mapping": mapping.name, "digest": digest(mapping, report.method), "method": report.method,
             "checker": CHECKERS[report.method], "scope": str(report.shape), "solver": "",
             "seconds": round(report.seconds, 3), "result": "passed" if report.passed else "failed",
             "covers": [], "samples": len(report.errors), "seed": int(report.seed), "mean_error": float(report.mean),
             "std_error": float(report.std), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    return _store(entry, path)


def current_digest(e: dict) -> str | None:
    """The digest ``e`` would have if it were made from today's sources (None: its subject is no
    registered mapping nor project module)."""
    from mappings.registry import MODULES, get
    try:
        if e.get("module"):
            if e["module"] not in _files() and e["mapping"] not in MODULES:
                return None               # an outside module digests only as a registered mapping's
            return module_digest([e["module"], e.get("checker", "")])
        if e["mapping"] not in MODULES:
            return None
        return digest(get(e["mapping"]), e["method"], e.get("checker") or None)
    except D2AError:
        return None


def current(entries: list[dict]) -> list[dict]:
    """The entries whose digest matches the current sources."""
    memo: dict = {}
    out = []
    for e in entries:
        k = (e["mapping"], e["method"], e.get("module"), e.get("checker"))
        if k not in memo:
            memo[k] = current_digest(e)
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


# ----------------------------------------------------------------------------- re-checking
def _rechecker(entry: dict):
    """The function re-running ``entry``'s check (:data:`RECHECKERS`), or LedgerError."""
    checker = entry["checker"]
    if checker not in RECHECKERS:
        raise LedgerError(f"checker {checker!r} is not one whose verdicts can be re-run "
                          f"({', '.join(sorted(RECHECKERS))})")
    if not entry.get("module") and checker not in METHOD_CHECKERS.get(entry["method"], ()):
        raise LedgerError(f"method {entry['method']!r} is not checked by {checker!r}")
    module, function = RECHECKERS[checker]
    return getattr(importlib.import_module(module), function)


def _close(a, b) -> bool:
    """Equal counts; error statistics equal to 1e-4 relative. Re-runs of the same seeded inputs are
    not bit-identical everywhere: float32 matrix products in BLAS change their summation order with
    the thread count (flexasr.linear at 20x256x256: std_error 2.516575e-4 recorded, 2.516584e-4
    re-run, 3e-6 relative); a hand edit that small changes nothing anyone reads."""
    if not (_is_number(a) and _is_number(b)):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-12)


def differences(entry: dict, found: dict) -> list[str]:
    """How the re-run ``found`` differs from the recorded ``entry``: the result, and the measured
    values both have (sample count, error statistics, claims covered by a proof)."""
    out = []
    if found.get("result") != entry["result"]:
        out.append(f"result: recorded {entry['result']}, found {found.get('result')}")
    for k in ("samples", "mean_error", "std_error"):
        if k in found and k in entry and not _close(entry[k], found[k]):
            out.append(f"{k}: recorded {entry[k]!r}, found {found[k]!r}")
    if entry["result"] == "proved" and found.get("result") == "proved" and "covers" in found \
            and sorted(entry["covers"]) != sorted(found["covers"]):
        out.append(f"covers: recorded {sorted(entry['covers'])}, found {sorted(found['covers'])}")
    return out


def recheck_entry(entry: dict, *, timeout: float | None = None) -> dict:
    """Re-run one entry's check at its recorded scope: ``{"status": "reproduces" | "differs" |
    "error", "found": dict, "differences": [...], "seconds"}`` (``error``: it could not be re-run,
    e.g. its checker or scope is not one that exists; that does not reproduce either)."""
    t0 = time.perf_counter()
    try:
        fn = _rechecker(entry)
        found = fn(entry, timeout=timeout) if "timeout" in inspect.signature(fn).parameters else fn(entry)
        if not isinstance(found, dict):
            raise LedgerError(f"the checker's recheck returned {type(found).__name__}, not a dict")
    except Exception as exc:          # noqa: BLE001 (untrusted entries: every failure is reported)
        msg = " ".join(str(exc).split())
        if not isinstance(exc, D2AError):
            msg = f"{type(exc).__name__}: {msg}"
        return {"status": "error", "found": {}, "differences": [f"could not be re-run: {msg}"],
                "seconds": time.perf_counter() - t0}
    diffs = differences(entry, found)
    return {"status": "differs" if diffs else "reproduces", "found": found, "differences": diffs,
            "seconds": time.perf_counter() - t0}


def _label(e: dict) -> str:
    return f"{e['mapping']} {e['method']} {e['scope']}" + (f" {e['solver']}" if e.get("solver") else "")


def recheck(path=None, *, sample: int | None = None, seed: int | None = None, max_seconds: float | None = None,
            timeout: float | None = None, log=print) -> dict:
    """Re-run current entries of the ledger (both layers, or the file ``path``): all of them, or
    ``sample`` drawn at random (``seed``) among those whose recorded seconds are at most
    ``max_seconds`` (default 60 with ``sample``). ``timeout``: the solver timeout of re-run proofs
    (default: 10x the recorded time, at least 120 s). Returns a summary with one row per entry
    re-run; ``log`` gets one line per entry as it finishes."""
    rows = _layered(path)
    live = {id(e) for e in current([e for _, e in rows])}
    stale = [(layer, e) for layer, e in rows if id(e) not in live]
    pool = [(layer, e) for layer, e in rows if id(e) in live]
    if sample is not None and max_seconds is None:
        max_seconds = 60.0
    slow = [(layer, e) for layer, e in pool if max_seconds is not None and e["seconds"] > max_seconds]
    pool = [(layer, e) for layer, e in pool if max_seconds is None or e["seconds"] <= max_seconds]
    if sample is not None:
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        chosen = sorted(random.Random(seed).sample(range(len(pool)), min(sample, len(pool))))
        pool = [pool[k] for k in chosen]
    summary = {"ledger": [f"{n}: {p}" for n, p in layers(path)], "entries": len(rows), "stale": len(stale),
               "skipped_slow": len(slow), "max_seconds": max_seconds, "sample": sample, "seed": seed,
               "rechecked": [], "stale_entries": [{"layer": layer, **e} for layer, e in stale]}
    log(f"recheck of {', '.join(summary['ledger'])}: {len(rows)} entries, {len(rows) - len(stale)} current, "
        f"{len(stale)} stale (sources changed since: not re-run, nothing trusts them)"
        + (f"; {len(slow)} current entries recorded slower than {max_seconds:g} s skipped" if slow else "")
        + (f"; a sample of {len(pool)} (seed {seed}; replay with --sample {sample} --seed {seed})"
           if sample is not None else f"; re-running {len(pool)}"))
    if sample is None:
        for layer, e in stale:
            log(f"  stale         {_label(e)} [{layer}]: {e['result']} recorded for digest {e['digest']}, "
                f"today's sources give {current_digest(e)}")
    for layer, e in pool:
        t = timeout if timeout is not None else max(120.0, 10 * e["seconds"])
        r = recheck_entry(e, timeout=t)
        row = {"layer": layer, "entry": e, **r}
        summary["rechecked"].append(row)
        if r["status"] == "reproduces":
            log(f"  reproduces    {_label(e)} [{layer}]: {e['result']} ({r['seconds']:.1f} s)")
        else:
            log(f"  DOES NOT REPRODUCE {_label(e)} [{layer}]: {'; '.join(r['differences'])} "
                f"({e['date']}, {r['seconds']:.1f} s)")
    bad = [r for r in summary["rechecked"] if r["status"] != "reproduces"]
    summary["failures"] = len(bad)
    log(f"{len(summary['rechecked']) - len(bad)} reproduce, {len(bad)} do not reproduce, {len(stale)} stale")
    return summary


# ----------------------------------------------------------------------------- the CLI
def main(argv: list[str] | None = None) -> int:
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m verify.ledger", description="show the proof ledger, or re-run its entries (--recheck)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--path", help="one ledger file (default: $D2A_LEDGER, else the per-user file, over the "
                                   "committed paper_results/ledger.json or $D2A_LEDGER_BASE)")
    ap.add_argument("--recheck", action="store_true",
                    help="re-run current entries and report each one that does not reproduce (exit 1)")
    ap.add_argument("--sample", type=int, help="--recheck: N current entries drawn at random")
    ap.add_argument("--seed", type=int, help="--recheck --sample: the seed of the draw (default: a random one, printed)")
    ap.add_argument("--max-seconds", type=float,
                    help="--recheck: only entries recorded at most this many seconds (default with --sample: 60)")
    ap.add_argument("--timeout", type=float,
                    help="--recheck: solver timeout of re-run proofs (default: 10x the recorded time, >= 120 s)")
    args = ap.parse_args(argv)
    try:
        if not args.recheck and (args.sample, args.seed, args.max_seconds, args.timeout) != (None,) * 4:
            raise LedgerError("--sample, --seed, --max-seconds and --timeout apply to --recheck only")
        if args.sample is not None and args.sample < 1:
            raise LedgerError(f"--sample {args.sample}: must be >= 1")
        if args.seed is not None and args.sample is None:
            raise LedgerError("--seed applies to --sample only")
        for name in ("max_seconds", "timeout"):
            v = getattr(args, name)
            if v is not None and not (0 < v < float("inf")):
                raise LedgerError(f"--{name.replace('_', '-')} {v!r}: must be a finite number > 0 (seconds)")
        if args.path is not None and not os.path.lexists(args.path):
            raise LedgerError(f"--path {args.path!r}: no such ledger file")
        if args.recheck:
            summary = recheck(args.path, sample=args.sample, seed=args.seed, max_seconds=args.max_seconds,
                              timeout=args.timeout, log=(lambda s: None) if args.json else print)
            if args.json:
                print(json.dumps(summary, indent=1, default=str))
            return 1 if summary["failures"] else 0
        rows = _layered(args.path)
        where = layers(args.path)
        live = {id(e) for e in current([e for _, e in rows])}
    except D2AError as exc:
        from ila.errors import report
        return report(exc, args.json)
    if args.json:
        print(json.dumps([{**e, "layer": layer, "valid": id(e) in live} for layer, e in rows], indent=1))
        return 0
    for name, p in where:
        print(f"ledger {p}" + {"base": " (base layer, read-only)", "user": " (read-write)", "file": ""}[name])
    if not rows:
        print("no entries")
        return 0
    print(f"{'mapping':22} {'method':6} {'scope':18} {'solver':6} {'seconds':>9} {'result':15} {'layer':5} current")
    for layer, e in rows:
        print(f"{e['mapping']:22} {e['method']:6} {e['scope']:18} {e.get('solver', ''):6} {e['seconds']:9.2f} "
              f"{e['result']:15} {layer:5} {'yes' if id(e) in live else 'no (sources changed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
