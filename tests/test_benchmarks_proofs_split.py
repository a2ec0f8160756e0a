"""benchmarks.proofs: a proof split into pieces (SPLIT) runs as several campaign tasks, and its
assembled verdict is reported and recorded in the ledger once (issue 26, item 3)."""
import json

import pytest

pytest.importorskip("distributed")

from benchmarks import proofs  # noqa: E402
from verify import ledger  # noqa: E402


def test_split_proof_pieces_are_tasks_and_the_verdict_is_recorded_once(tmp_path, monkeypatch):
    monkeypatch.setattr(proofs, "PLAN", {"flexasr.maxpool": [("bmc", "4x16", "uf", True)]})
    monkeypatch.setattr(proofs, "SPLIT", {("flexasr.maxpool", "bmc", "4x16", "uf"): 2})
    todo, _ = proofs.tasks(True, False, 300.0, str(tmp_path / "ledger.json"))
    assert [t.fn for t in todo] == [proofs.piece_task, proofs.piece_task]
    assert [t.args[5:] for t in todo] == [(0, 16), (16, 32)]
    results = tmp_path / "r.jsonl"
    recs = [{"key": t.key, "ok": True, "result": proofs.piece_task(*t.args), "seconds": 1.0, "worker": 0} for t in todo]
    assert all(r["result"]["kind"] == "proved" for r in recs)
    results.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "p.md"
    assert proofs.main(["--quick", "--no-mutations", "--no-progress", "--out", str(out), "--results",
                        str(results)]) == 0
    text = out.read_text()
    assert text.count("| `flexasr.maxpool` | bmc | 4x16 |") == 1 and "in 2 pieces of 0-15, 16-31" in text
    entries = [e for e in ledger.load(tmp_path / "ledger.json") if e["mapping"] == "flexasr.maxpool"]
    assert len(entries) == 1 and entries[0]["result"] == "proved" and entries[0]["scope"] == "4x16"
