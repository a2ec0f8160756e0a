"""Campaign tasks in a fresh process (benchmarks.campaign, ``Task(fresh=True)``): each task runs in a
new Python process started by its worker and returns its data through it; an exception there is
the same error record as in-process, a child killed by a signal is an error record naming it (and
dask's retries apply), a rerun resumes, stdout noise does not touch the result, and no child
outlives its worker or the campaign.

The task functions are top-level functions of this module, pickled by reference: the workers and
their children import this module by the sys.path they inherit (pytest puts tests/ on it)."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed")
import psutil  # noqa: E402  (a dependency of distributed)

from benchmarks import campaign  # noqa: E402


pytestmark = pytest.mark.usefixtures("no_leaked_processes")      # tests/conftest.py


def _mark(marks: str, k) -> int:
    """Counts a task's executions with a marker file per run; returns the run's number."""
    d = pathlib.Path(marks)
    n = len(list(d.glob(f"{k}-*")))
    (d / f"{k}-{n}").write_text(str(os.getpid()))
    return n


def where(k: int, marks: str) -> dict:
    """Its process, its parent (the worker), and data; noise on stdout and stderr on the way."""
    import numpy as np
    _mark(marks, k)
    print("noise on stdout \x80\x04\x95 not a result", flush=True)
    sys.stdout.buffer.write(b"\x80\x04\x95\x00\n")
    sys.stdout.flush()
    print("noise on stderr", file=sys.stderr, flush=True)
    return {"pid": os.getpid(), "parent": os.getppid(), "square": k * k, "values": np.arange(3) * k}


def fails(k: int) -> int:
    raise ValueError(f"bad task {k}")


class Awkward(Exception):
    """An exception that does not unpickle (its __init__ takes two arguments, its args hold one)."""

    def __init__(self, a, b):
        super().__init__(f"awkward {a} and {b}")


def fails_awkwardly(k: int) -> int:
    raise Awkward(k, "more")


def exits(code: int) -> int:
    sys.exit(code)


def killed(marks: str) -> int:
    _mark(marks, "killed")
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


def quits(marks: str) -> int:
    _mark(marks, "quits")
    os._exit(3)


def fails_once(marks: str) -> str:
    if _mark(marks, "once") == 0:
        raise RuntimeError("first time")
    return "second time"


def sleeps(marks: str, seconds: float) -> str:
    _mark(marks, "sleeps")
    time.sleep(seconds)
    return "woke"


def waits_for_sleeper(marks: str) -> str:
    deadline = time.monotonic() + 60
    while not list(pathlib.Path(marks).glob("sleeps-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return "sleeper started"


def worker_pid() -> int:
    return os.getpid()


@pytest.fixture
def marks(tmp_path):
    d = tmp_path / "marks"
    d.mkdir()
    return d


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_fresh_tasks_return_their_data_from_their_own_processes(tmp_path, marks, capfd):
    tasks = [campaign.Task(f"t{k}", where, (k, str(marks)), fresh=True) for k in range(3)] + \
        [campaign.Task("in-worker", worker_pid)]
    recs = campaign.run(tasks, tmp_path / "r.jsonl", workers=1, progress=False)
    assert all(r["ok"] for r in recs)
    fresh, worker = recs[:3], recs[3]["result"]
    assert [r["result"]["square"] for r in fresh] == [0, 1, 4]
    assert [r["result"]["values"] for r in fresh] == [[0, 0, 0], [0, 1, 2], [0, 2, 4]]   # numpy, as in-process
    pids = [r["result"]["pid"] for r in fresh]
    assert [r["worker"] for r in fresh] == pids                 # the record names the process that ran it
    assert len(set(pids)) == 3 and worker not in pids           # a new process each, not the worker
    assert all(r["result"]["parent"] == worker for r in fresh)  # started by the (one) worker
    assert recs[3]["worker"] == worker                           # the default: in the worker process
    assert all(r["seconds"] >= 0 for r in recs)
    assert campaign.load(tmp_path / "r.jsonl") and "noise on stdout" in capfd.readouterr().out


def test_an_exception_in_the_child_is_an_error_record(tmp_path):
    tasks = [campaign.Task("bad", fails, (7,), fresh=True), campaign.Task("awkward", fails_awkwardly, (1,), fresh=True),
             campaign.Task("exit", exits, (4,), fresh=True), campaign.Task("same", fails, (7,))]
    recs = campaign.run(tasks, tmp_path / "r.jsonl", workers=1, retries=0, progress=False)
    assert not any(r["ok"] for r in recs)
    assert recs[0]["error"] == "ValueError: bad task 7" == recs[3]["error"]    # as in-process
    assert recs[1]["error"] == "Awkward: awkward 1 and more"     # same type name and text, though it does not pickle
    assert recs[2]["error"] == "SystemExit: 4"


def test_the_childs_exception_is_raised_on_the_worker(marks):
    """Called directly (as on a worker): the child's exception itself, with its traceback as a note."""
    with pytest.raises(ValueError) as info:
        campaign._execute(fails, (5,), True)
    assert str(info.value) == "bad task 5"
    assert any("in the task's process" in n and "fails" in n for n in info.value.__notes__)
    with pytest.raises(Exception) as info:
        campaign._execute(fails_awkwardly, (2,), True)
    assert type(info.value).__name__ == "Awkward" and str(info.value) == "awkward 2 and more"
    out = campaign._execute(where, (3, str(marks)), True)
    assert out["worker"] == out["result"]["pid"] != os.getpid() and out["result"]["parent"] == os.getpid()


def test_a_child_killed_by_a_signal_is_an_error_record_and_retried(tmp_path, marks):
    t0 = time.monotonic()
    tasks = [campaign.Task("killed", killed, (str(marks),), fresh=True),
             campaign.Task("quits", quits, (str(marks),), fresh=True),
             campaign.Task("once", fails_once, (str(marks),), fresh=True)]
    recs = campaign.run(tasks, tmp_path / "r.jsonl", workers=1, retries=1, progress=False)
    assert time.monotonic() - t0 < 120
    assert not recs[0]["ok"] and recs[0]["error"].startswith("TaskProcessDied: the task's process (pid ")
    assert recs[0]["error"].endswith("was killed by signal 9 (SIGKILL) without a result")
    assert not recs[1]["ok"] and recs[1]["error"].endswith("exited with code 3 without a result")
    assert recs[2]["ok"] and recs[2]["result"] == "second time"               # dask's retries apply
    assert len(list(marks.glob("killed-*"))) == 2 and len(list(marks.glob("quits-*"))) == 2   # tried again once
    with pytest.raises(campaign.TaskProcessDied, match="killed by signal 9"):
        campaign._execute(killed, (str(marks),), True)


def test_a_rerun_skips_finished_fresh_tasks(tmp_path, marks):
    path = tmp_path / "r.jsonl"
    tasks = [campaign.Task(f"t{k}", where, (k, str(marks)), fresh=True) for k in range(4)]
    first = campaign.run(tasks[:2], path, workers=2, progress=False)
    recs = campaign.run(tasks, path, workers=2, progress=False)
    assert recs[:2] == first and [r["result"]["square"] for r in recs] == [0, 1, 4, 9]
    assert sorted(p.name for p in marks.iterdir()) == [f"{k}-0" for k in range(4)]      # none ran twice
    assert campaign.run(tasks, path, workers=2, progress=False) == recs


def test_an_interrupted_campaign_leaves_no_child(tmp_path, marks):
    """Ctrl-C while a fresh task runs: the cluster closes and the task's process goes with its worker."""
    tasks = [campaign.Task("sleeps", sleeps, (str(marks), 300.0), fresh=True),
             campaign.Task("waits", waits_for_sleeper, (str(marks),))]

    def interrupt(rec):
        raise KeyboardInterrupt

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        campaign.run(tasks, tmp_path / "r.jsonl", workers=2, progress=False, on_result=interrupt)
    child = int(next(marks.glob("sleeps-*")).read_text())
    assert _gone(child), "the sleeping task's process outlived the campaign"
    assert time.monotonic() - t0 < 120


def test_a_child_dies_with_its_killed_worker(marks):
    """The worker process killed outright (SIGKILL, no clean-up of its own): its task's process dies too."""
    code = ("import sys; sys.path[:] = %r\n"
            "from benchmarks import campaign\n"
            "import test_benchmarks_campaign_fresh as t\n"
            "campaign._execute(t.sleeps, (%r, 300.0), True)\n") % (sys.path, str(marks))
    worker = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while not list(marks.glob("sleeps-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(next(marks.glob("sleeps-*")).read_text())
        assert psutil.Process(child).ppid() == worker.pid
        worker.kill()
        worker.wait()
        assert _gone(child), "the task's process outlived its killed worker"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_tasks_default_to_the_worker_process():
    t = campaign.Task("k", worker_pid)
    assert t.fresh is False and campaign.Task("k", worker_pid, (), fresh=True).fresh
