"""The proof ledger: every verdict recorded with the hash of what it is about.

An entry holds the mapping name, a digest of the mapping's module and of the model modules it
depends on, the method, the scope (shape such as ``16x64`` or ``symbolic``), the solver, the
seconds and the result. A changed model or mapping changes the digest, which invalidates its
entries: :func:`certified` only returns entries whose digest matches the current sources, and
``compile/`` loads only rules with such an entry. ``python -m verify.ledger`` shows the ledger.

The ledger file is ``verify/ledger.json`` in the repository (override with ``D2A_LEDGER``).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import pathlib
import sys
import time

DEFAULT_PATH = pathlib.Path(__file__).with_name("ledger.json")


def ledger_path() -> pathlib.Path:
    return pathlib.Path(os.environ.get("D2A_LEDGER", DEFAULT_PATH))


def _module_files(modname: str) -> list[pathlib.Path]:
    mod = importlib.import_module(modname)
    f = pathlib.Path(mod.__file__)
    if f.name == "__init__.py":
        return sorted(f.parent.rglob("*.py"))
    return [f]


def digest(mapping) -> str:
    """sha256 over the source of the mapping's module and of the modules it depends on."""
    from mappings.registry import MODULES
    mods = [MODULES.get(mapping.name, "")] + []  # (being replaced by the computed import closure)
    h = hashlib.sha256()
    for modname in mods:
        if not modname:
            continue
        for f in _module_files(modname):
            h.update(str(f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def load() -> list[dict]:
    p = ledger_path()
    if not p.exists():
        return []
    return json.loads(p.read_text() or "[]")


def scope_label(scope: str, numerics: str = "uf", inferred: bool = False) -> str:
    """The ledger's scope of a verdict: the shape (``16x64``) or ``symbolic``, then ``/exact`` for
    bit-precise numerics and ``/inferred`` for inferred invariants (``16x64/exact``)."""
    return scope + ("" if numerics == "uf" else "/exact") + ("/inferred" if inferred else "")


def record(mapping, verdict, *, scope: str) -> dict:
    """Append a verdict for ``mapping`` to the ledger; return the entry."""
    entry = {"mapping": mapping.name, "digest": digest(mapping), "method": verdict.method, "scope": scope,
             "solver": verdict.solver, "seconds": round(verdict.seconds, 3), "result": verdict.kind,
             "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    entries = [e for e in load() if not (e["mapping"] == entry["mapping"] and e["method"] == entry["method"]
                                         and e["scope"] == entry["scope"] and e["solver"] == entry["solver"])]
    entries.append(entry)
    p = ledger_path()
    p.write_text(json.dumps(entries, indent=1) + "\n")
    return entry


def certified(name: str) -> list[dict]:
    """Current (digest-matching) 'proved' entries for mapping ``name``."""
    from mappings.registry import get
    d = digest(get(name))
    return [e for e in load() if e["mapping"] == name and e["digest"] == d and e["result"] == "proved"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.ledger", description="show the proof ledger")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    entries = load()
    from mappings.registry import MODULES, get
    current = {}
    for e in entries:
        if e["mapping"] not in current:
            try:
                current[e["mapping"]] = digest(get(e["mapping"])) if e["mapping"] in MODULES else None
            except Exception:  # a mapping that no longer imports invalidates its entries
                current[e["mapping"]] = None
        e["valid"] = e["digest"] == current[e["mapping"]]
    if args.json:
        print(json.dumps(entries, indent=1))
        return 0
    if not entries:
        print(f"ledger {ledger_path()} is empty")
        return 0
    print(f"{'mapping':22} {'method':6} {'scope':10} {'solver':6} {'seconds':>9} {'result':15} valid")
    for e in entries:
        print(f"{e['mapping']:22} {e['method']:6} {e['scope']:10} {e['solver']:6} {e['seconds']:9.2f} "
              f"{e['result']:15} {'yes' if e['valid'] else 'no (source changed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
