"""Campaigns on Dask: many independent tasks (data points of a co-simulation, proofs at shapes),
run on a ``dask.distributed`` cluster, with every finished result written as it arrives.

``run(tasks, results_path, scheduler=None, workers=2, retries=2, progress=True)``: a
:class:`Task` is a key (unique text), a picklable top-level function and its arguments (plain
data). Results go to a JSON-lines file, one record per finished task:
``{"key", "ok": true, "result", "seconds", "worker"}`` or, for a task that still raised after its
retries, ``{"key", "ok": false, "error"}``. A rerun skips the keys already recorded with
``ok`` (resume after an interruption; errors are retried), so an interrupted campaign never redoes
finished work. A worker process that dies takes its running task with it; the scheduler re-runs
that task on another worker (``retries`` counts such losses and exceptions), so no result is lost.

The cluster: a ``LocalCluster`` of ``workers`` processes with one thread each on this machine
(default), or an existing scheduler (``scheduler="tcp://host:8786"``). Progress: a tqdm bar.
Errors: :class:`CampaignError` (a D2AError) for an unreachable scheduler (naming the address), a
corrupt results file (naming file and line) or duplicate task keys.
"""
from __future__ import annotations

import json
import logging
import os
import pathlib
import time
from dataclasses import dataclass
from typing import Callable

from ila.errors import D2AError


class CampaignError(D2AError):
    """A campaign cannot run: bad scheduler address, corrupt results file, duplicate keys."""


@dataclass(frozen=True)
class Task:
    key: str
    fn: Callable
    args: tuple = ()


def load(path) -> list[dict]:
    """The records of a results file (empty if it does not exist). CampaignError names a corrupt line."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if n == len(path.read_text().splitlines()):      # a last line cut by a crash: ignore it
                break
            raise CampaignError(f"{path}: line {n} is not a JSON record ({exc.msg})") from None
        if not isinstance(rec, dict) or "key" not in rec:
            raise CampaignError(f"{path}: line {n} is not a campaign record (no 'key')")
        out.append(rec)
    return out


def _execute(fn, args):
    """Runs on a worker: the result, the seconds it took and the worker's process id."""
    t0 = time.perf_counter()
    res = fn(*args)
    return {"result": res, "seconds": time.perf_counter() - t0, "worker": os.getpid()}


def _client(scheduler, workers: int):
    from distributed import Client, LocalCluster
    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as exc:
            raise CampaignError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    if workers < 1:
        raise CampaignError(f"workers must be >= 1 (got {workers})")
    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker"):
        logging.getLogger(name).setLevel(logging.ERROR)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    return Client(cluster), cluster


def run(tasks: list[Task], results_path, *, scheduler: str | None = None, workers: int = 2, retries: int = 2,
        progress: bool = True, desc: str = "campaign") -> list[dict]:
    """Run the tasks not yet finished in ``results_path``; return every record of the file (old and
    new) for the given tasks' keys, in task order. See the module docstring."""
    from distributed import as_completed
    from tqdm import tqdm
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise CampaignError(f"duplicate task keys: {dup[:3]}")
    path = pathlib.Path(results_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {r["key"] for r in load(path) if r.get("ok")}
    todo = [t for t in tasks if t.key not in done]
    if todo:
        client, cluster = _client(scheduler, workers)
        bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc=desc, unit="task", disable=not progress)
        try:
            futures = {client.submit(_execute, t.fn, t.args, key=f"{desc}-{t.key}-{time.time_ns()}", retries=retries,
                                     pure=False): t for t in todo}
            with path.open("a") as fh:
                for fut in as_completed(futures):
                    t = futures[fut]
                    try:
                        rec = {"key": t.key, "ok": True, **fut.result()}
                    except Exception as exc:                       # noqa: BLE001 (recorded, not lost)
                        rec = {"key": t.key, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    bar.update(1)
        finally:
            bar.close()
            client.close()
            if cluster is not None:
                cluster.close()
    latest = {}
    for r in load(path):
        if r["key"] in latest and latest[r["key"]].get("ok") and not r.get("ok"):
            continue
        latest[r["key"]] = r
    return [latest[k] for k in keys if k in latest]


# ----------------------------------------------------------------------------- CLI options
def add_arguments(ap) -> None:
    """The campaign options every campaign CLI takes: ``--scheduler``, ``--workers``,
    ``--results`` (the JSON-lines file; resume), ``--no-progress``."""
    ap.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (default: a LocalCluster here)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (>= 1)")
    ap.add_argument("--results", metavar="PATH", help="the campaign's results file (JSON lines; a rerun resumes it)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")


def default_results(name: str) -> pathlib.Path:
    """``<cache>/campaigns/<name>.jsonl`` (the cache of :func:`benchmarks.train.cache_dir`:
    ``$D2A_CACHE``, else ``$XDG_CACHE_HOME/d2a``, else ``~/.cache/d2a``)."""
    from benchmarks.train import cache_dir
    return cache_dir() / "campaigns" / f"{name}.jsonl"


def results_path(args, default) -> pathlib.Path:
    return pathlib.Path(args.results) if args.results else pathlib.Path(default)


def run_from_args(args, tasks: list[Task], path, desc: str = "campaign") -> list[dict]:
    """:func:`run` with the options of :func:`add_arguments`."""
    if args.workers < 1:
        raise CampaignError(f"--workers must be >= 1 (got {args.workers})")
    return run(tasks, path, scheduler=args.scheduler, workers=args.workers, progress=not args.no_progress, desc=desc)
