"""Campaigns on Dask (benchmarks.campaign): a worker killed mid-campaign loses no result, a rerun
resumes without redoing finished work, failing tasks are recorded, bad input gets clear errors."""
import os
import pathlib
import sys

import pytest

pytest.importorskip("distributed")
import cloudpickle  # noqa: E402  (ships with distributed)

from benchmarks import campaign  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])     # the workers cannot import this test module


def square(k: int, marks: str) -> int:
    """Counts its executions with a marker file per run."""
    d = pathlib.Path(marks)
    n = len(list(d.glob(f"{k}-*")))
    (d / f"{k}-{n}").write_text("")
    return k * k


def die_once(k: int, marks: str) -> int:
    """Kills its worker process the first time it runs (a crash, not an exception)."""
    flag = pathlib.Path(marks) / "died"
    if not flag.exists():
        flag.write_text(str(os.getpid()))
        os._exit(1)
    return square(k, marks)


def always_fails(k: int) -> int:
    raise ValueError(f"bad task {k}")


def _tasks(n, marks, killer=None):
    return [campaign.Task(f"t{k}", die_once if k == killer else square, (k, str(marks))) for k in range(n)]


def test_a_killed_worker_loses_no_result(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    recs = campaign.run(_tasks(12, marks, killer=5), tmp_path / "r.jsonl", workers=2, progress=False)
    assert [r["key"] for r in recs] == [f"t{k}" for k in range(12)]
    assert all(r["ok"] for r in recs) and [r["result"] for r in recs] == [k * k for k in range(12)]
    assert (marks / "died").exists()                          # the worker really died once
    assert len(campaign.load(tmp_path / "r.jsonl")) == 12      # each result written exactly once


def test_a_rerun_resumes_without_redoing_finished_work(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    path = tmp_path / "r.jsonl"
    campaign.run(_tasks(10, marks)[:4], path, workers=1, progress=False)       # "interrupted" after 4
    recs = campaign.run(_tasks(10, marks), path, workers=1, progress=False)
    assert [r["result"] for r in recs] == [k * k for k in range(10)]
    runs = sorted(p.name for p in marks.iterdir())
    assert len(runs) == 10 and all(r.endswith("-0") for r in runs)             # none ran twice
    assert campaign.run(_tasks(10, marks), path, workers=1, progress=False) == recs   # nothing to do


def test_failing_tasks_are_recorded_not_lost(tmp_path):
    tasks = [campaign.Task("ok", square, (3, str(tmp_path))), campaign.Task("bad", always_fails, (7,))]
    recs = campaign.run(tasks, tmp_path / "r.jsonl", workers=1, retries=0, progress=False)
    assert recs[0]["ok"] and recs[0]["result"] == 9
    assert not recs[1]["ok"] and "bad task 7" in recs[1]["error"]


def test_bad_input_gets_clear_errors(tmp_path):
    with pytest.raises(campaign.CampaignError, match="tcp://127.0.0.1:9"):
        campaign.run([campaign.Task("a", square, (1, str(tmp_path)))], tmp_path / "r.jsonl",
                     scheduler="tcp://127.0.0.1:9", progress=False)
    with pytest.raises(campaign.CampaignError, match="duplicate task keys"):
        campaign.run([campaign.Task("a", square, (1, ".")), campaign.Task("a", square, (2, "."))], tmp_path / "x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a", "ok": true}\nnot json\n{"key": "b", "ok": true}\n')
    with pytest.raises(campaign.CampaignError, match="bad.jsonl: line 2"):
        campaign.load(bad)
