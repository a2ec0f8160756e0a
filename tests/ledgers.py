"""Test helper: ledgers seeded with the committed rewrite certificates.

A flexible compilation with ``certify="sim"`` on an empty ledger first certifies every compiler-IR
rewrite of the registry (22 property tests, about 140 s on one core) before it certifies any
accelerator call. Tests about calls, chains or co-simulation start instead from the rewrite
certificates in ``paper_results/ledger.json`` that are current for today's sources (their digest
is recomputed: a certificate made from other sources is left out, and the compilation certifies
that rewrite again on demand, as it would for a user)."""
from __future__ import annotations

import pathlib

from verify import ledger


def with_rewrite_certificates(path) -> pathlib.Path:
    """Store at ``path`` (a ledger file, created if absent) every current ``rewrite`` entry of the
    committed ledger; returns ``path``. The accelerator calls' certificates are not copied."""
    path = pathlib.Path(path)
    entries = ledger.load(ledger.committed_path())
    for e in ledger.current([e for e in entries if e["method"] == "rewrite"]):
        ledger.store(e, path=path)
    return path
