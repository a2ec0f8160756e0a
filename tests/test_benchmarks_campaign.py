"""Campaigns on Dask (benchmarks.campaign): a worker killed mid-campaign loses no result, a rerun
resumes without redoing finished work (also after a real interruption), failing tasks are
recorded, bad input gets clear errors, and no process outlives a campaign."""
import os
import pathlib
import sys
import time

import pytest

pytest.importorskip("distributed")
import cloudpickle  # noqa: E402  (ships with distributed)

from benchmarks import campaign  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])     # the workers cannot import this test module


pytestmark = pytest.mark.usefixtures("no_leaked_processes")      # tests/conftest.py


def square(k: int, marks: str) -> int:
    """Counts its executions with a marker file per run."""
    d = pathlib.Path(marks)
    n = len(list(d.glob(f"{k}-*")))
    (d / f"{k}-{n}").write_text("")
    return k * k


def slow_square(k: int, marks: str) -> int:
    time.sleep(0.1)
    return square(k, marks)


def die_once(k: int, marks: str) -> int:
    """Kills its worker process the first time it runs (a crash, not an exception)."""
    flag = pathlib.Path(marks) / "died"
    if not flag.exists():
        flag.write_text(str(os.getpid()))
        os._exit(1)
    return square(k, marks)


def always_fails(k: int) -> int:
    raise ValueError(f"bad task {k}")


def samples(k: int):
    """A task returning per-sample results, as a Table 4 batch does (numpy values become JSON)."""
    import numpy as np
    return [{"sample": i, "label": np.int64(i % 3), "scores": np.arange(3.0) * k} for i in range(k)]


def worker_env(k: int) -> dict:
    import os as _os
    return {name: _os.environ.get(name) for name in ("MALLOC_TRIM_THRESHOLD_", "OPENBLAS_NUM_THREADS")}


def _runs(marks: pathlib.Path, k: int) -> int:
    return len(list(marks.glob(f"{k}-*")))


def _tasks(n, marks, killer=None, fn=square):
    return [campaign.Task(f"t{k}", die_once if k == killer else fn, (k, str(marks))) for k in range(n)]


def test_a_killed_worker_loses_no_result(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    path = tmp_path / "r.jsonl"
    recs = campaign.run(_tasks(20, marks, killer=7, fn=slow_square), path, workers=2, progress=False)
    assert [r["key"] for r in recs] == [f"t{k}" for k in range(20)]           # the run completed
    assert all(r["ok"] for r in recs) and [r["result"] for r in recs] == [k * k for k in range(20)]
    dead = int((marks / "died").read_text())                                    # the worker really died once
    assert recs[7]["worker"] != dead                                            # t7 ran again on a live worker
    assert sorted(r["key"] for r in campaign.load(path)) == sorted(f"t{k}" for k in range(20))  # each once
    # (a result still held by the dead worker, not yet gathered, is computed again: at least one run each)
    assert all(_runs(marks, k) >= 1 for k in range(20))


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


def test_an_interrupted_campaign_resumes(tmp_path):
    """Ctrl-C (KeyboardInterrupt in the parent) after 5 results: those stay written and are not redone."""
    marks = tmp_path / "marks"
    marks.mkdir()
    path = tmp_path / "r.jsonl"
    seen = []

    def interrupt(rec):
        seen.append(rec["key"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        campaign.run(_tasks(16, marks, fn=slow_square), path, workers=2, progress=False, on_result=interrupt)
    first = [r["key"] for r in campaign.load(path)]
    assert first == seen and len(first) == 5
    recs = campaign.run(_tasks(16, marks, fn=slow_square), path, workers=2, progress=False)
    assert [r["result"] for r in recs] == [k * k for k in range(16)]
    assert all(_runs(marks, int(key[1:])) == 1 for key in first)                # finished work not redone
    assert len(campaign.load(path)) == 16


def test_a_line_cut_by_a_crash_is_dropped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "t0", "ok": true, "result": 0}\n{"key": "t1", "ok": tr')
    assert [r["key"] for r in campaign.load(path)] == ["t0"]
    marks = tmp_path / "marks"
    marks.mkdir()
    recs = campaign.run(_tasks(2, marks), path, workers=1, progress=False)
    assert [r["result"] for r in recs] == [0, 1] and _runs(marks, 0) == 0 and _runs(marks, 1) == 1
    assert len(campaign.load(path)) == 2                                        # the file is whole again


def test_failing_tasks_are_recorded_not_lost(tmp_path, capsys):
    tasks = [campaign.Task("ok", square, (3, str(tmp_path))), campaign.Task("bad", always_fails, (7,)),
             campaign.Task("batch", samples, (2,))]
    recs = campaign.run(tasks, tmp_path / "r.jsonl", workers=1, retries=0, progress=False)
    assert recs[0]["ok"] and recs[0]["result"] == 9
    assert not recs[1]["ok"] and recs[1]["error"] == "ValueError: bad task 7"
    assert recs[2]["ok"] and recs[2]["result"][1] == {"sample": 1, "label": 1, "scores": [0.0, 2.0, 4.0]}
    assert "1 of 3 task(s) failed" in capsys.readouterr().err
    assert sorted(campaign.load(tmp_path / "r.jsonl"), key=lambda r: r["key"]) == \
        sorted(recs, key=lambda r: r["key"])                                    # as written, so as resumed


def test_bad_input_gets_clear_errors(tmp_path):
    one = [campaign.Task("a", square, (1, str(tmp_path)))]
    with pytest.raises(campaign.CampaignError, match="tcp://127.0.0.1:9"):
        campaign.run(one, tmp_path / "r.jsonl", scheduler="tcp://127.0.0.1:9", progress=False, connect_timeout=1)
    with pytest.raises(campaign.CampaignError, match="'nonsense:::'"):
        campaign.run(one, tmp_path / "r.jsonl", scheduler="nonsense:::", progress=False)
    assert issubclass(campaign.CampaignError, campaign.D2AError)
    with pytest.raises(campaign.CampaignError, match="duplicate task keys"):
        campaign.run([campaign.Task("a", square, (1, ".")), campaign.Task("a", square, (2, "."))], tmp_path / "x")
    with pytest.raises(campaign.CampaignError, match="workers"):
        campaign.run(one, tmp_path / "r.jsonl", workers=0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a", "ok": true}\nnot json\n{"key": "b", "ok": true}\n')
    with pytest.raises(campaign.CampaignError, match="bad.jsonl: line 2"):
        campaign.load(bad)
    with pytest.raises(campaign.CampaignError, match="bad.jsonl: line 2"):
        campaign.run(one, bad)
    bad.write_text('{"key": "a", "ok": true}\n[1, 2]\n')
    with pytest.raises(campaign.CampaignError, match="line 2 is not a campaign record"):
        campaign.load(bad)


def test_cli_options(tmp_path):
    import argparse
    ap = argparse.ArgumentParser()
    campaign.add_arguments(ap)
    args = ap.parse_args(["--scheduler", "tcp://h:8786", "--workers", "3", "--no-progress", "--results",
                          str(tmp_path / "r.jsonl")])
    assert (args.scheduler, args.workers, args.no_progress) == ("tcp://h:8786", 3, True)
    assert campaign.results_path(args, tmp_path / "d.jsonl") == tmp_path / "r.jsonl"
    args = ap.parse_args([])
    assert args.scheduler is None and args.workers == 2 and not args.no_progress
    assert campaign.results_path(args, tmp_path / "d.jsonl") == tmp_path / "d.jsonl"
    with pytest.raises(campaign.CampaignError, match="--workers"):
        campaign.run_from_args(ap.parse_args(["--workers", "0"]), [], tmp_path / "r.jsonl")


def test_workers_run_with_one_blas_thread_and_glibc_s_own_malloc_thresholds(tmp_path, monkeypatch):
    """Dask's nanny would set MALLOC_TRIM_THRESHOLD_=65536 in each worker (every large numpy
    temporary then costs fresh pages: co-simulation 3x slower); the campaign's cluster leaves it out
    and keeps one BLAS thread per worker."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    recs = campaign.run([campaign.Task("env", worker_env, (0,))], tmp_path / "r.jsonl", workers=1, progress=False)
    env = recs[0]["result"]
    assert env == {"MALLOC_TRIM_THRESHOLD_": None, "OPENBLAS_NUM_THREADS": "1"}, env
