"""benchmarks.table1 --workers: the rows measured in campaign tasks come back as measured (tuple
keys, sets and tuples survive the JSON of a campaign record); a bad worker count exits 2."""
import json

from benchmarks import table1


def test_a_row_survives_the_campaign_record():
    row = {"counts": {("vta", "exact"): 1, ("vta", "flexible"): 3}, "late": {"b at 1", "a at 2"},
           "unproved": {"why": {"x at 1"}}, "stop": {"vta": "saturated (4 it.)"}, "front": 1.5, "ops": [1, (2, 3)]}
    assert table1._decode(json.loads(json.dumps(table1._encode(row)))) == row


def test_a_bad_worker_count_is_a_user_error(capsys):
    assert table1.main(["--workers", "0", "--out", "/tmp/never_written_table1.md"]) == 2
    assert "--workers" in capsys.readouterr().err
