"""Campaigns on Dask: many independent tasks (data points of a co-simulation, proofs at shapes),
run on a ``dask.distributed`` cluster, with every finished result written as it arrives.

``run(tasks, results_path, *, scheduler=None, workers=2, threads_per_worker=1, retries=2,
progress=True, desc="campaign", on_result=None, connect_timeout=10.0)``: a :class:`Task` is a key
(unique text), a picklable top-level function and its arguments (plain data); the function returns
plain data (JSON-serialisable: a dict, a list of per-sample results, ...). Results go to a
JSON-lines file, one record per finished task, appended and flushed as each result arrives:
``{"key", "ok": true, "result", "seconds", "worker"}`` or, for a task that still raised after its
retries, ``{"key", "ok": false, "error"}`` (the exception's type and text; the campaign goes on,
and the number of failed tasks is printed at the end). A rerun skips the keys already recorded
with ``ok`` (resume after an interruption; errors are tried again), so an interrupted campaign
never redoes finished work; a last line cut by a crash is dropped. ``run`` returns the records of
the given tasks (old and new), in task order.

Failures: a task that raises is re-run up to ``retries`` times (``Client.submit(retries=)``). A
worker process that dies takes its running task with it; the nanny restarts the worker and the
scheduler re-runs the task on a live worker; only a task that has killed more than
``distributed.scheduler.allowed-failures`` (default 3) workers is given up (a ``KilledWorker``
error record), so one crash loses no result.

The cluster: a ``LocalCluster`` of ``workers`` processes with ``threads_per_worker`` threads each
on this machine (default; dashboard off, logs quiet), or an existing scheduler
(``scheduler="tcp://host:8786"``). Progress: a tqdm bar. Errors: :class:`CampaignError` (a
D2AError) for an unreachable or malformed scheduler address (naming it), a corrupt results file
(naming file and line), duplicate task keys or a non-JSON result.
"""
from __future__ import annotations

import gc
import json
import logging
import os
import pathlib
import sys
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
    return _load(pathlib.Path(path))[0]


def _load(path: pathlib.Path) -> tuple[list[dict], int | None]:
    """(records, byte offset of a last line cut by a crash, else None)."""
    if not path.exists():
        return [], None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CampaignError(f"results file {path} cannot be read: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    out, offset = [], 0
    for n, raw in enumerate(lines, 1):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except RecursionError:
            raise CampaignError(f"{path}: line {n} is not a JSON record (nested too deeply)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if n == len(lines) and not data.endswith(b"\n"):   # a last line cut by a crash: dropped
                return out, start
            raise CampaignError(f"{path}: line {n} is not a JSON record "
                                f"({getattr(exc, 'msg', None) or exc.reason})") from None
        if not isinstance(rec, dict) or "key" not in rec:
            raise CampaignError(f"{path}: line {n} is not a campaign record (no 'key')")
        out.append(rec)
    return out, None


def _execute(fn, args):
    """Runs on a worker: the result, the seconds it took and the worker's process id.

    The cyclic garbage collector is off while the task runs and collects in the task's own thread
    after it: otherwise the worker's event-loop thread may collect the task's cyclic garbage while
    the task is inside a solver call (ctypes releases the GIL), and z3's reference counts are not
    thread-safe (a z3 "unreachable" assertion or a dead worker in the middle of a proof)."""
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    try:
        res = fn(*args)
    finally:
        gc.enable()
        gc.collect()
    return {"result": res, "seconds": time.perf_counter() - t0, "worker": os.getpid()}


_LOGGERS = ("distributed", "distributed.client", "distributed.core", "distributed.nanny", "distributed.scheduler",
            "distributed.worker", "distributed.deploy.spec")


def _plain(x):
    """JSON for numpy scalars and arrays in a result (``.tolist()``); anything else is refused."""
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON data")


def _client(scheduler, workers: int, threads_per_worker: int, connect_timeout: float):
    from distributed import Client, LocalCluster
    if scheduler:
        try:
            return Client(scheduler, timeout=connect_timeout), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise CampaignError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    # quiet: a task's exception and a lost worker end in the results (error record, re-run), not in the log
    cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    try:
        return Client(cluster), cluster
    except BaseException:
        cluster.close()
        raise


def run(tasks: list[Task], results_path, *, scheduler: str | None = None, workers: int = 2,
        threads_per_worker: int = 1, retries: int = 2, progress: bool = True, desc: str = "campaign",
        on_result: Callable[[dict], None] | None = None, connect_timeout: float = 10.0) -> list[dict]:
    """Run the tasks not yet finished in ``results_path``; return every record of the file (old and
    new) for the given tasks' keys, in task order. ``on_result(record)`` is called in this process
    after each new record is written (an exception there stops the campaign; what was written
    stays). See the module docstring."""
    from distributed import as_completed
    from tqdm import tqdm
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise CampaignError(f"duplicate task keys: {dup[:3]}")
    if workers < 1 or threads_per_worker < 1 or retries < 0:
        raise CampaignError(f"workers and threads_per_worker must be >= 1, retries >= 0 "
                            f"(got {workers}, {threads_per_worker}, {retries})")
    path = pathlib.Path(results_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    old, cut = _load(path)
    if cut is not None:                     # drop the partial line so that appended records stay whole
        with path.open("r+b") as fh:
            fh.truncate(cut)
    elif path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with path.open("ab") as fh:         # a whole last record without its newline
            fh.write(b"\n")
    done = {r["key"] for r in old if r.get("ok")}
    todo = [t for t in tasks if t.key not in done]
    failed = 0
    if todo:
        quiet = {n: logging.getLogger(n).level for n in _LOGGERS}
        for n in _LOGGERS:
            logging.getLogger(n).setLevel(logging.CRITICAL)
        try:
            client, cluster = _client(scheduler, workers, threads_per_worker, connect_timeout)
        except BaseException:
            for n, level in quiet.items():
                logging.getLogger(n).setLevel(level)
            raise
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
                    try:
                        line = json.dumps(rec, default=_plain)
                    except (TypeError, ValueError) as exc:
                        rec = {"key": t.key, "ok": False, "error": f"the result is not JSON data: {exc}"}
                        line = json.dumps(rec)
                    fh.write(line + "\n")
                    fh.flush()
                    failed += not rec["ok"]
                    bar.update(1)
                    if on_result is not None:
                        on_result(rec)
        finally:
            bar.close()
            client.close()
            if cluster is not None:
                cluster.close()
            for n, level in quiet.items():
                logging.getLogger(n).setLevel(level)
        if failed:
            print(f"{desc}: {failed} of {len(todo)} task(s) failed (error records in {path})", file=sys.stderr)
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


WORKER_BYTES = 256 << 20      # the least memory a LocalCluster worker process needs (interpreter, numpy, distributed)


def check_scheduler(address: str, timeout: float = 5.0) -> None:
    """CampaignError unless ``address`` is a Dask scheduler address (a known scheme) and, for TCP
    and TLS, something listens there (checked with one connection, before any work starts)."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend
    try:
        scheme, loc = parse_address(address)
        get_backend(scheme)
        host, port = parse_host_port(loc, 8786) if scheme in ("tcp", "tls", "ws", "wss") else (None, None)
    except (ValueError, TypeError) as exc:
        raise CampaignError(f"--scheduler {address!r}: not a Dask scheduler address ({exc})") from None
    if host is None:
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise CampaignError(f"--scheduler {address!r}: cannot reach the Dask scheduler "
                            f"({exc.strerror or type(exc).__name__})") from None


def check_arguments(args, default_results) -> pathlib.Path:
    """Check the options of :func:`add_arguments` before any work: ``--workers`` (>= 1, and no more
    worker processes than the available memory holds), ``--scheduler`` (:func:`check_scheduler`),
    ``--results`` (a writable file whose every line is a record: CampaignError naming the line).
    Returns the results path. Reads, never writes."""
    from ila.cli import ArgumentError, check_count, output_file
    try:
        check_count("--workers", args.workers, 1, item_bytes=WORKER_BYTES, what="worker processes")
        path = results_path(args, default_results)
        output_file(path, "--results")
    except ArgumentError as exc:
        raise CampaignError(str(exc)) from None
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    load(path)
    return path


def repo_relative(path) -> str:
    """``path`` relative to the repository when inside it (so keys and reports name the same file
    in every clone), else absolute."""
    p, root = pathlib.Path(path).resolve(), pathlib.Path(__file__).resolve().parents[1]
    return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)


def results_path(args, default) -> pathlib.Path:
    return pathlib.Path(args.results) if args.results else pathlib.Path(default)


def run_from_args(args, tasks: list[Task], path, desc: str = "campaign", on_result=None) -> list[dict]:
    """:func:`run` with the options of :func:`add_arguments`."""
    if args.workers < 1:
        raise CampaignError(f"--workers must be >= 1 (got {args.workers})")
    return run(tasks, path, scheduler=args.scheduler, workers=args.workers, progress=not args.no_progress, desc=desc,
               on_result=on_result)
