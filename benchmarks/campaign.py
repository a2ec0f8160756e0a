"""Campaigns on Dask: many independent tasks (data points of a co-simulation, proofs at shapes),
run on a ``dask.distributed`` cluster, with every finished result written as it arrives.

``run(tasks, results_path, *, scheduler=None, workers=2, threads_per_worker=1, retries=2,
progress=True, desc="campaign", on_result=None, connect_timeout=10.0)``: a :class:`Task` is a key
(unique text), a picklable top-level function and its arguments (plain data), and whether it runs
in a fresh process (``fresh``, below; by default in the worker process); the function returns
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

A fresh process per task: ``Task(key, fn, args, fresh=True)`` runs the function in a new Python
process that the worker starts for it (``subprocess``; a worker process is daemonic and may not
use ``multiprocessing`` children), so nothing one task leaves in memory (hash-consing tables, lru
caches, z3 contexts) slows the next one down: a proof that takes 60 s in a fresh process took 368 s
in a worker that had already run big proofs. The worker passes the function and its arguments
pickled (cloudpickle: an importable function by module and qualified name, anything else by
value), with its own ``sys.path`` (so the child imports what the worker imports), in a temporary
file; the child writes its result, the seconds the function took and its process id to another
(the record's ``worker`` is the child's pid), so the child's stdout and stderr (inherited: they go
where the worker's go) never mix with the result. An exception in the child is raised again on
the worker: the same exception when it pickles, else one of the same type name and message, so
the error record reads the same as in-process (``"ValueError: ..."``) and the task's ``retries``
apply; a child that dies without a result (a signal, ``os._exit``, a crash inside a solver) raises
:class:`TaskProcessDied` naming the exit code or signal. The child runs in its own session (a
Ctrl-C in the terminal reaches the campaign, which closes the cluster) and dies with the worker
(Linux: ``PR_SET_PDEATHSIG``, else a thread watching its parent; also killed when the worker exits
normally or the waiting thread is interrupted): no process outlives the campaign. Costs per task
an interpreter start (about 0.1 s) and the task's imports and cold caches (vta.add's BMC proof at
32: 1.1 s fresh, 0.2 s in a worker that has run it before).
``fresh=False`` (the default) runs the function in the worker process itself.

The cluster: a ``LocalCluster`` of ``workers`` processes with ``threads_per_worker`` threads each
on this machine (default; dashboard off, logs quiet; one BLAS thread per worker as Dask sets, but
without Dask's ``MALLOC_TRIM_THRESHOLD_=65536``, :data:`WORKER_ENV_UNSET`), or an existing scheduler
(``scheduler="tcp://host:8786"``). Progress: a tqdm bar. Errors: :class:`CampaignError` (a
D2AError) for an unreachable or malformed scheduler address (naming it), a corrupt results file
(naming file and line), duplicate task keys or a non-JSON result.
"""
from __future__ import annotations

import atexit
import gc
import json
import logging
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from ila.errors import D2AError


class CampaignError(D2AError):
    """A campaign cannot run: bad scheduler address, corrupt results file, duplicate keys."""


class TaskProcessDied(Exception):
    """A task's fresh process ended without a result (killed by a signal, ``os._exit``, a crash)."""


@dataclass(frozen=True)
class Task:
    """``key``: unique text; ``fn(*args)`` returns plain data; ``fresh``: run it in a new Python
    process started by the worker (see the module docstring), else in the worker process."""
    key: str
    fn: Callable
    args: tuple = ()
    fresh: bool = False


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


def _execute(fn, args, fresh: bool = False):
    """Runs on a worker: the result, the seconds it took and the process id that ran it (the
    worker's, or with ``fresh`` the new process's: :func:`_execute_fresh`).

    The cyclic garbage collector is off while the task runs and collects in the task's own thread
    after it: otherwise the worker's event-loop thread may collect the task's cyclic garbage while
    the task is inside a solver call (ctypes releases the GIL), and z3's reference counts are not
    thread-safe (a z3 "unreachable" assertion or a dead worker in the middle of a proof)."""
    if fresh:
        return _execute_fresh(fn, args)
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    try:
        res = fn(*args)
    finally:
        gc.enable()
        gc.collect()
    return {"result": res, "seconds": time.perf_counter() - t0, "worker": os.getpid()}


# ----------------------------------------------------------------------------- a fresh process per task
# the child's first code: the worker's sys.path before any import (so it imports what the worker
# imports, this module included), then _child_main
_BOOT = ("import pickle, sys\n"
         "with open(sys.argv[1], 'rb') as f:\n"
         "    path, parent, payload = pickle.load(f)\n"
         "sys.path[:] = path\n"
         "from benchmarks.campaign import _child_main\n"
         "_child_main(parent, payload, sys.argv[2])\n")

_CHILDREN: set = set()                      # this worker's running task processes (killed at exit)
_CHILDREN_LOCK = threading.Lock()


@atexit.register
def _kill_children() -> None:
    with _CHILDREN_LOCK:
        procs = list(_CHILDREN)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()


def _signal_text(code: int) -> str:
    try:
        return f"was killed by signal {-code} ({signal.Signals(-code).name})"
    except ValueError:
        return f"was killed by signal {-code}"


def _execute_fresh(fn, args) -> dict:
    """``fn(*args)`` in a new Python process (see the module docstring); the child is killed if
    this thread is interrupted, and with the worker process."""
    import cloudpickle
    payload = cloudpickle.dumps((fn, tuple(args)))
    with tempfile.TemporaryDirectory(prefix="d2a-task-") as tmp:
        src, dst = os.path.join(tmp, "task.pkl"), os.path.join(tmp, "result.pkl")
        with open(src, "wb") as fh:
            pickle.dump((list(sys.path), os.getpid(), payload), fh)
        proc = subprocess.Popen([sys.executable, "-c", _BOOT, src, dst], stdin=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
        with _CHILDREN_LOCK:
            _CHILDREN.add(proc)
        try:
            code = proc.wait()
        finally:
            if proc.poll() is None:         # interrupted while waiting: the child goes too
                proc.kill()
                proc.wait()
            with _CHILDREN_LOCK:
                _CHILDREN.discard(proc)
        if not os.path.exists(dst):
            how = _signal_text(code) if code < 0 else f"exited with code {code}"
            raise TaskProcessDied(f"the task's process (pid {proc.pid}) {how} without a result")
        try:
            with open(dst, "rb") as fh:
                out = pickle.load(fh)
        except Exception as exc:           # a result the worker cannot load: that error, named
            exc.add_note(f"loading the result of the task's process (pid {proc.pid})")
            raise
    if out["ok"]:
        return {"result": out["result"], "seconds": out["seconds"], "worker": out["pid"]}
    raise _child_exception(out)


def _child_exception(out: dict) -> Exception:
    """The child's exception: itself when it unpickles here, else one of the same type name and text."""
    exc = None
    if out.get("exc") is not None:
        try:
            exc = pickle.loads(out["exc"])
        except Exception:                  # noqa: BLE001 (falls back to name and text)
            exc = None
    if not isinstance(exc, Exception) or type(exc).__name__ != out["type"] or str(exc) != out["message"]:
        exc = type(out["type"], (Exception,), {"__module__": __name__})(out["message"])
    if out.get("traceback"):
        exc.add_note(f"in the task's process (pid {out['pid']}):\n{out['traceback'].rstrip()}")
    return exc


def _die_with_parent(parent: int) -> None:
    """This process ends when ``parent`` (the worker) does: Linux's parent-death signal, else a
    daemon thread polling the parent pid; also if the parent is already gone."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            armed = ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:
        os._exit(70)
    if not armed:
        def watch():
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(70)
        threading.Thread(target=watch, daemon=True, name="watch-parent").start()


def _child_main(parent: int, payload: bytes, dst: str) -> None:
    """The fresh process: run the task, write its outcome to ``dst`` (pickled, atomically) and exit
    without the interpreter's teardown (freeing a big proof's solver state takes time; the
    process's memory goes back to the system in any case). The cyclic garbage collector is off
    while the task runs, as in :func:`_execute` (the same memory and speed as in a worker; and
    no collection in another thread, such as the parent watch, while z3 runs)."""
    _die_with_parent(parent)
    try:
        import cloudpickle
        fn, args = cloudpickle.loads(payload)
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        res = fn(*args)
        out = {"ok": True, "result": res, "seconds": time.perf_counter() - t0, "pid": os.getpid()}
        data = cloudpickle.dumps(out)
    except BaseException as exc:           # noqa: BLE001 (reported to the worker, which raises it)
        data = _child_error(exc)
    tmp = dst + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, dst)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(0)


def _child_error(exc: BaseException) -> bytes:
    """An exception's report: type name, text, traceback and the exception itself pickled when it
    round-trips (a result that does not pickle is reported the same way)."""
    import cloudpickle
    blob = None
    if isinstance(exc, Exception):
        try:
            blob = cloudpickle.dumps(exc)
            pickle.loads(blob)
        except Exception:                  # noqa: BLE001 (name and text only)
            blob = None
    return pickle.dumps({"ok": False, "type": type(exc).__name__, "message": str(exc), "exc": blob,
                         "traceback": "".join(traceback.format_exception(exc)), "pid": os.getpid()})


_LOGGERS = ("distributed", "distributed.client", "distributed.core", "distributed.nanny", "distributed.scheduler",
            "distributed.worker", "distributed.deploy.spec")


def _plain(x):
    """JSON for numpy scalars and arrays in a result (``.tolist()``); anything else is refused."""
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON data")


# Dask's nanny sets these in every worker's environment before spawning it
# (``distributed.nanny.pre-spawn-environ``); a None in the configuration leaves one out.
# MALLOC_TRIM_THRESHOLD_=65536 turns off glibc's adaptive mmap threshold, so every large numpy
# temporary is mapped and unmapped afresh (page faults on each): measured on a Table 4 point of
# LSTM-WLM-650 in one process, 0.99 s per point without it, 3.02 s with it.
WORKER_ENV_UNSET = ("MALLOC_TRIM_THRESHOLD_",)


def _client(scheduler, workers: int, threads_per_worker: int, connect_timeout: float):
    import dask
    from distributed import Client, LocalCluster
    dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": None for k in WORKER_ENV_UNSET})
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
            futures = {client.submit(_execute, t.fn, t.args, t.fresh, key=f"{desc}-{t.key}-{time.time_ns()}",
                                     retries=retries, pure=False): t for t in todo}
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
