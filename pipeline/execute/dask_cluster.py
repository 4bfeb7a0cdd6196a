"""The Dask executor: the same tasks as the local pool, run on a Dask cluster.

`--executor dask --scheduler tcp://HOST:PORT` (or DASK_SCHEDULER_ADDRESS, or `scheduler` in
the config file) connects to an existing cluster; `--executor dask` with no address starts
a local one on 127.0.0.1 (worker processes, one thread each, `workers` of them, no
dashboard). To the rest of the pipeline it is just another `executors.Executor`; a command
runs it in a process of its own (dask_client.py).

Where the data goes
-------------------
Nowhere near the client. A task is a description of a range (input URL, byte bounds,
first row, expected hash: a few hundred bytes); the worker reads those bytes from the
input itself, writes its part into the output folder itself (fixed name, temporary file
and rename, or one PUT on an object store) and returns a few figures. So the inputs and
the output folder must be where every worker sees them under the same name: a shared file
system (NFS) or an object store. Local paths are made absolute by the client, so workers
started from another folder find them. A task Dask runs twice (after a worker died) writes
the same part twice, whole each time: harmless.

Dask clusters that require TLS work through Dask's own security configuration
(`distributed.comm.tls.*` in the Dask config, or DASK_DISTRIBUTED__COMM__TLS__* variables)
with a `tls://` scheduler address.

Other details
-------------
* Tasks are submitted with `pure=False` and a key unique to the run and the attempt
  (`pipeline-<run token>-<n>`), so a retry is never mistaken for a cached result and two
  runs sharing a cluster never share keys.
* Dask's `KilledWorker` (Dask gave up on a task because workers kept dying under it, after
  the scheduler's `allowed-failures`) and a task cancelled under us become
  `errors.WorkerLost`, so `schedule` goes straight to hunting the row to blame (Dask has
  retried already: `retries = 0`); any other exception a task raises comes back as
  itself. A local cluster this executor starts allows one failure per task, so a row that
  kills its worker is found after fewer deaths.
* Losing the scheduler itself is not a task's fault: it ends the run with RunFailed
  (exit 3); the parts written so far stay, and the same command resumes.
* A worker plugin loads every compiled step of a task (`worker.warm_up()`) and calibrates
  the cycle counter once per worker process, when the worker joins (including one
  restarted by its nanny after a crash). A task takes that step first if the plugin has
  not finished yet, outside its own timings; the load time is logged per worker.
* Records of the `pipeline.*` loggers emitted by this run's tasks on the workers are sent
  to the client through a per-run Dask event topic and handled by the client's loggers,
  so they land in DIR/logs/run.jsonl (with the worker's pid) like the local pool's do.
  `Client.forward_logging` (present in distributed 2026.8) works the same way but with
  one topic per logger name for every client of the cluster, so two runs sharing a
  cluster would file each other's records; the per-run topic and a filter on the task
  key avoid that. On a local cluster, Dask's own "Compute Failed" report of a task's
  exception is dropped on the worker: `schedule` already logs it once, in the client.
* `close()` shuts down a local cluster this executor started; on an external cluster it
  removes this run's plugin and closes only the client, leaving the cluster running.
* A worker that goes silent is restarted by its nanny, or without one removed from the
  cluster (`check`): one whose running task sends no news for `stall_timeout` seconds, or
  one that holds our tasks and sends the scheduler no heartbeat for that long (a process
  stopped between two tasks never starts the next, so no task of it would ever be late).
  The scheduler's own `worker-ttl` does the latter too, but after five minutes by
  default, and it is the cluster's setting. A task's news says whether it is solving or
  reading and writing: when Dask gives up on a task whose workers went silent in I/O, no
  row is to blame (`WorkerLost(storage=True)`), as in the local pool.
* On an external cluster the number of tasks kept in flight follows the cluster's thread
  count when the run starts (`workers`); workers added later are used, but do not raise it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import itertools
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable

from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.errors import RunFailed, UsageError, WorkerLost
from pipeline.execute.base import STALL_TIMEOUT, Executor, Runner, set_progress_reporter
from pipeline.execute.logship import handle_record, record_attributes

log = logging.getLogger("pipeline.dask_executor")

CONNECT_TIMEOUT = 10.0  # seconds to reach an external scheduler
WORKER_TIMEOUT = 120.0  # seconds to wait for a first worker (or a local cluster's workers)
NO_WORKER_WARNING = 60.0  # seconds without progress and without workers before a warning
ASK_TIMEOUT = 5.0  # seconds for the scheduler to say which workers are silent
RESTART_TIMEOUT = 15.0  # seconds for a nanny to restart its silent worker
LOGGER = "pipeline"  # the logger tree forwarded from the workers

# ------------------------------------------------------------------------------------------
# Worker side
# ------------------------------------------------------------------------------------------

_warm_lock = threading.Lock()
_warm: list[float] = []  # seconds the warm-up took, once it is done in this process


def _ensure_warm(runner: Runner) -> float | None:
    """Ready this process for tasks (load the kernels) once; seconds taken, or None."""
    if _warm:
        return None
    with _warm_lock:
        if _warm:
            return None
        started = time.perf_counter()
        runner.warm_up()
        _warm.append(time.perf_counter() - started)
        return _warm[0]


def run_on_worker(runner: Runner, topic: str, task):
    """What a Dask worker runs for one task: warm up if need be (not timed), then run it,
    its progress sent to the run's topic (the client's sign that the task is alive)."""
    seconds = _ensure_warm(runner)
    if seconds is not None:
        log.info("worker pid %d: kernel loaded in %.2f s (in its first task)", os.getpid(),
                 seconds)
    from distributed import get_worker

    worker = get_worker()
    key, address = worker.get_current_task(), worker.address

    def send(rows: int, solving: bool = True) -> None:
        worker.log_event(topic, {"progress": rows, "key": key, "worker": address,
                                 "solving": solving})

    set_progress_reporter(send)
    try:
        send(0, solving=False)  # started: it reads first
        return runner.execute(task)
    finally:
        set_progress_reporter(None)


class _ForwardRunRecords(logging.Handler):
    """On a worker: send records emitted by one run's tasks to that run's event topic."""

    def __init__(self, worker, topic: str, key_prefix: str):
        super().__init__(logging.NOTSET)
        self.worker = worker
        self.topic = topic
        self.key_prefix = key_prefix

    def emit(self, record: logging.LogRecord) -> None:
        try:
            key = self.worker.get_current_task()
        except Exception:  # not in a task thread
            return
        if not (isinstance(key, str) and key.startswith(self.key_prefix)):
            return
        try:
            attrs = record_attributes(record)
            attrs["worker"] = self.worker.address
            self.worker.log_event(self.topic, attrs)
        except Exception:
            self.handleError(record)


class _QuietLocalWorker(logging.Filter):
    """Drop what a local cluster's worker would print that the client reports itself.

    A "Compute Failed" report of one of our tasks (`schedule` logs the failure, once), and
    a failed heartbeat: the scheduler lives in our client process, which says so itself if
    it is lost, and on a stop it closes while a worker may still be sending one."""

    def __init__(self, key_prefix: str):
        super().__init__()
        self.key_prefix = key_prefix

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        if msg.startswith("Failed to communicate with scheduler during heartbeat"):
            return False
        if not msg.startswith("Compute Failed"):
            return True
        try:
            return self.key_prefix not in record.getMessage()
        except Exception:
            return True


class _RunPlugin(WorkerPlugin):
    """Per run, on every worker: warm the kernel up, forward this run's log records."""

    def __init__(self, runner: Runner, token: str, level: int, topic: str,
                 local: bool = False):
        self.runner = runner
        self.token = token
        self.level = level
        self.topic = topic
        self.local = local  # a cluster we started, whose stderr is the user's terminal
        self._handler: logging.Handler | None = None
        self._saved: tuple[int, bool] | None = None

    async def setup(self, worker) -> None:
        logger = logging.getLogger(LOGGER)
        self._saved = (logger.level, logger.propagate)
        if logger.level == logging.NOTSET or logger.level > self.level:
            logger.setLevel(self.level)
        # The client prints and files these records; the worker's own stderr need not.
        logger.propagate = False
        self._handler = _ForwardRunRecords(worker, self.topic, f"pipeline-{self.token}-")
        logger.addHandler(self._handler)
        if self.local:
            logging.getLogger("distributed.worker").addFilter(
                _QuietLocalWorker(f"pipeline-{self.token}-"))
        loop = asyncio.get_running_loop()
        try:
            seconds = await loop.run_in_executor(None, _ensure_warm, self.runner)
        except Exception as exc:  # the first task will raise it again, as itself
            self._emit(worker, logging.ERROR, "worker %s: kernel warm-up failed: %r",
                       worker.address, exc)
            return
        if seconds is not None:
            self._emit(worker, logging.INFO, "worker %s (pid %d): kernel loaded in %.2f s",
                       worker.address, os.getpid(), seconds)

    def _emit(self, worker, level: int, msg: str, *args) -> None:
        if level < self.level:
            return
        record = log.makeRecord(log.name, level, __file__, 0, msg, args, None)
        attrs = record_attributes(record)
        attrs["worker"] = worker.address
        worker.log_event(self.topic, attrs)

    def teardown(self, worker) -> None:
        logger = logging.getLogger(LOGGER)
        if self._handler is not None:
            logger.removeHandler(self._handler)
            self._handler = None
        # A local cluster's worker keeps its filter: teardown comes early in its close, and
        # its process ends with the run.
        if self._saved is not None and not any(
                isinstance(h, _ForwardRunRecords) for h in logger.handlers):
            logger.setLevel(self._saved[0])
            logger.propagate = self._saved[1]


# ------------------------------------------------------------------------------------------
# Client side
# ------------------------------------------------------------------------------------------


def _seconds(x: float) -> str:
    return f"{x:.1f} s" if x < 10 else f"{x:.0f} s"


async def _remove_worker(dask_scheduler=None, address: str = "") -> str:
    """On the scheduler: forget a worker that has gone silent (its tasks are rescheduled)."""
    return await dask_scheduler.remove_worker(address=address,
                                              stimulus_id=f"pipeline-stalled-{time.time()}")


async def _restart_worker(dask_scheduler=None, address: str = "",
                          timeout: float = 0.0) -> str:
    """On the scheduler: have a silent worker's nanny restart it, not waiting for the new
    process to join; "OK", "removed" (no nanny: the scheduler closed it), "timed out" or
    why not."""
    done = await dask_scheduler.restart_workers(
        [address], timeout=timeout, wait_for_workers=False, on_error="return",
        stimulus_id=f"pipeline-stalled-{time.time()}")
    return done.get(address, "gone")


def _silent_holders(dask_scheduler=None, prefix: str = "", quiet: float = 0.0) -> dict:
    """On the scheduler: {address: seconds since its last heartbeat} of each worker that
    holds a task whose key starts with `prefix` and has not sent a heartbeat for `quiet`
    seconds, or for ten heartbeat intervals on a big cluster (the scheduler's own floor)."""
    from distributed.scheduler import heartbeat_interval

    now = time.time()
    quiet = max(quiet, 10 * heartbeat_interval(len(dask_scheduler.workers)))
    return {ws.address: now - ws.last_seen for ws in dask_scheduler.workers.values()
            if now - ws.last_seen > quiet
            and any(str(ts.key).startswith(prefix) for ts in ws.processing)}


def _connect(address: str):
    """A client of the scheduler at `address`, within CONNECT_TIMEOUT seconds in all.

    Client's own timeout covers the connection, not the handshake after it: a server
    that accepts and never answers held it for minutes. So the client is made in a thread
    of its own, and given up on (TimeoutError) when it is not there in time."""
    from distributed import Client

    made: list = []

    def connect() -> None:
        try:
            made.append(Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False))
        except BaseException as exc:  # raised in the caller's thread below
            made.append(exc)

    thread = threading.Thread(target=connect, name="pipeline-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT + 2)
    if not made:
        raise TimeoutError(f"no answer in {CONNECT_TIMEOUT:.0f} s")
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]


def check_address(address: str) -> None:
    """A usage error for an address Dask cannot use (before a Client half-starts on it)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except ValueError as exc:
        raise UsageError(f"--scheduler {address!r}: {exc}") from None


class DaskExecutor(Executor):
    """Tasks run on a Dask cluster: an existing one at `address`, or a local one."""

    name = "dask"
    retries = 0  # Dask has retried a task on other workers before it says it is lost
    batches = True

    def __init__(self, address: str | None, workers: int, runner: Runner,
                 level: int | str = logging.INFO, stall_timeout: float = STALL_TIMEOUT):
        import dask
        from distributed import LocalCluster

        self.token = uuid.uuid4().hex[:12]
        self.runner = runner
        self.stall_timeout = stall_timeout
        # key -> (its last news, its worker, whether it was solving then: else reading or
        # writing, and a silence from there on is the storage's, not its rows')
        self._news: dict[str, tuple[float, str, bool]] = {}
        # keys on a worker replaced for its silence: that were solving then, and others
        # (reading, writing or waiting their turn: no fault of their rows)
        self._blamed: set[str] = set()
        self._spared: set[str] = set()
        self._no_workers_since: float | None = None  # since when no worker, and said so
        self._no_workers_said: float | None = None
        self.address = address
        self.workers = max(1, workers)
        self._topic = f"pipeline-log-{self.token}"
        self._plugin = f"pipeline-run-{self.token}"
        self._keys = itertools.count()
        self._open: dict[str, object] = {}  # key -> future whose result was not taken yet
        self._cluster = None
        self._client = None
        self._closed = False
        # Dask's own INFO chatter (and a local scheduler's) stays out of the run's log.
        dask_logger = logging.getLogger("distributed")
        self._dask_level = dask_logger.level
        dask_logger.setLevel(max(logging.WARNING, dask_logger.level))
        if address:
            check_address(address)
        try:
            if address:
                self._client = _connect(address)
            else:
                # One failure per task: a row that kills its worker is found sooner.
                with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
                    self._cluster = LocalCluster(
                        n_workers=self.workers, threads_per_worker=1, processes=True,
                        host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                        # no dashboard; the scheduler's small HTTP endpoint on a free port
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                        # only errors from its processes: a stop cancels their tasks,
                        # which each would log as a warning after the stop's one line
                        silence_logs=logging.ERROR)
                from distributed import Client

                self._client = Client(self._cluster, set_as_default=False)
        except ValueError as exc:  # an address Dask cannot parse
            self.close()
            raise UsageError(f"--scheduler {address!r}: {exc}") from None
        except (OSError, TimeoutError) as exc:
            self.close()
            where = f"the Dask scheduler at {address}" if address else "a local Dask cluster"
            raise RunFailed(f"cannot reach {where}: {exc}") from None
        except MemoryError:  # a reply read as a frame of exabytes: another kind of server
            self.close()
            raise RunFailed(f"--scheduler {address}: what answers there is not a Dask "
                            "scheduler") from None
        self._client.subscribe_topic(self._topic, self._on_record)
        level = logging.getLevelName(level) if isinstance(level, str) else level
        try:
            self._register(_RunPlugin(runner, self.token, level, self._topic,
                                      local=self._cluster is not None))
        except BaseException:
            self.close()
            raise
        where = address or self._cluster.scheduler_address
        log.info("dask: %s cluster at %s, %d worker(s)",
                 "external" if address else "local", where, len(self._client.nthreads()))
        self._ready = False

    def _register(self, plugin: _RunPlugin) -> None:
        """Register the run's plugin: this waits for every current worker to run its setup
        (the kernel's warm-up), but for at most `stall_timeout` seconds (and at most
        WORKER_TIMEOUT). A stopped worker never answers; the scheduler keeps the plugin for
        it all the same, and `check` removes the worker once it holds one of our tasks."""
        wait = min(self.stall_timeout, WORKER_TIMEOUT)
        try:  # register_plugin itself has no timeout
            self._client.sync(self._client._register_worker_plugin, plugin, self._plugin,
                              False, callback_timeout=wait)
        except TimeoutError:
            log.info("dask: not every worker had warmed up after %.0f s; the run goes on",
                     wait)
        except Exception as exc:
            self._check_installed(exc)
            raise

    # The interface ----------------------------------------------------------------------

    def ready(self) -> None:
        """Wait for workers: all of a local cluster's, at least one of an external one."""
        if self._ready:
            return
        wanted = 1 if self.address else self.workers
        try:
            self._client.wait_for_workers(wanted, timeout=WORKER_TIMEOUT)
        except TimeoutError:
            raise RunFailed(f"the Dask scheduler at {self.address or 'localhost'} has no "
                            f"workers after {WORKER_TIMEOUT:.0f} s") from None
        if self.address:
            self.workers = max(1, sum(self._client.nthreads().values()))
        self._ready = True

    def submit(self, task):
        self.ready()
        key = f"pipeline-{self.token}-{next(self._keys)}"
        future = self._client.submit(run_on_worker, self.runner, self._topic, task, key=key,
                                     pure=False)
        self._open[key] = future
        return future

    def wait(self, futures: Iterable, timeout: float | None = None) -> set:
        from distributed import wait

        futures = list(futures)
        if not futures:
            return set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = min(NO_WORKER_WARNING, self.stall_timeout / 4)
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            try:
                with self._client.as_current():  # our client, not the process's default
                    done, _ = wait(futures, timeout=step, return_when="FIRST_COMPLETED")
                return set(done)
            except TimeoutError:
                pass
            except cf.CancelledError:
                self._check_connected()
                return {f for f in futures if f.done()}
            if deadline is not None and time.monotonic() >= deadline:
                return {f for f in futures if f.done()}
            self.check(len(futures))

    def check(self, waiting: int) -> None:
        """RunFailed once the scheduler is lost; a warning while `waiting` tasks (if any)
        have had no worker to run on for NO_WORKER_WARNING seconds. A worker is replaced
        (`_replace`: its tasks then run again, and a part it may still write is fenced off
        by the run) when its running task has said nothing for `stall_timeout` seconds (a
        read that never ends), or when it holds tasks of ours and has sent the scheduler
        no heartbeat for that long (stopped between two tasks, or before its first: no
        task of it ever starts to say anything)."""
        self._check_connected()
        now = time.monotonic()
        silent: dict[str, str] = {}  # address -> why
        solving: dict[str, bool] = {}  # key -> whether it was solving, by its last news
        for key, (when, address, busy) in list(self._news.items()):
            if key not in self._open:
                del self._news[key]
            elif now - when > self.stall_timeout and address:
                del self._news[key]
                solving[key] = busy
                silent[address] = f"made no progress on a task for {_seconds(now - when)}"
                if not busy:
                    silent[address] += " while it read or wrote"
        # A scheduler lost meanwhile: the next check says so. Bounded, as a client that
        # is reconnecting would hold the call for a minute.
        with contextlib.suppress(Exception):
            held = self._client.run_on_scheduler(
                _silent_holders, prefix=f"pipeline-{self.token}-", quiet=self.stall_timeout,
                callback_timeout=ASK_TIMEOUT)
            for address, seconds in held.items():
                silent.setdefault(address, f"holds a task and has sent no heartbeat for "
                                           f"{_seconds(seconds)}")
        for address, why in silent.items():
            self._mark_held(address, solving)
            log.warning("dask: worker %s %s (stopped? a read that never ends?): %s, its "
                        "tasks run again", address, why, self._replace(address))
        if not waiting or self._client.nthreads():
            self._no_workers_since = self._no_workers_said = None
            return
        if self._no_workers_since is None:
            self._no_workers_since = self._no_workers_said = now
        elif self._cluster is not None and now - self._no_workers_since > WORKER_TIMEOUT:
            raise RunFailed(f"the local Dask cluster has had no worker for "
                            f"{WORKER_TIMEOUT:.0f} s; run the same command again to resume")
        elif now - self._no_workers_said >= NO_WORKER_WARNING:  # (an external one may
            self._no_workers_said = now                          # yet gain workers)
            log.warning("dask: no workers on the cluster; %d task(s) waiting", waiting)

    def _mark_held(self, address: str, solving: dict[str, bool]) -> None:
        """Before a silent worker is replaced: which of our tasks it holds were solving
        (by their last news) and which were not (in I/O, or not started)."""
        held: tuple = ()
        with contextlib.suppress(Exception):  # (asked of all: one gone meanwhile is no error)
            held = self._client.processing().get(address, ())
        for key in held:
            news = self._news.pop(key, None)
            busy = solving.get(key, news is not None and news[2])
            if key in self._open:
                (self._blamed if busy else self._spared).add(key)

    def _replace(self, address: str) -> str:
        """Restart a silent worker through its nanny (the cluster keeps its size: a local
        one would otherwise shrink for good, down to no worker); one without a nanny is
        removed from the cluster, as is one of an external cluster whose nanny does not
        answer (a local cluster's nannies are ours: such a worker is left to its nanny).
        What was done."""
        try:
            done = self._client.run_on_scheduler(
                _restart_worker, address=address, timeout=RESTART_TIMEOUT,
                callback_timeout=RESTART_TIMEOUT + ASK_TIMEOUT)
        except Exception as exc:
            done = repr(exc)
        said = {"OK": "restarted", "removed": "removed from the cluster (it has no nanny)",
                "gone": "gone already"}
        if done in said:
            return said[done]
        log.debug("dask: restarting worker %s failed: %s", address, done)
        if self._cluster is not None:
            return "left to its nanny (its restart did not finish)"
        with contextlib.suppress(Exception):
            self._client.run_on_scheduler(_remove_worker, address=address,
                                          callback_timeout=ASK_TIMEOUT)
        return "removed from the cluster"

    def result(self, future):
        from distributed import KilledWorker

        key = future.key
        self._open.pop(key, None)
        spared = key in self._spared and key not in self._blamed
        self._spared.discard(key)
        self._blamed.discard(key)
        try:
            return future.result()
        except KilledWorker as exc:
            if spared:  # its workers replaced while it read, wrote or waited
                raise WorkerLost("Dask gave up on the task: its workers went silent while "
                                 "it read or wrote", storage=True) from None
            raise WorkerLost(f"Dask gave up on the task, its workers died ({exc})") from None
        except cf.CancelledError as exc:  # distributed's FutureCancelledError
            self._check_connected()
            raise WorkerLost(f"the task was cancelled by Dask ({exc})") from None
        except Exception as exc:  # (after CancelledError, an Exception too)
            self._check_installed(exc)
            raise

    def _check_installed(self, exc: BaseException) -> None:
        """RunFailed when `exc` says that the scheduler or a worker lacks this package: no
        task can run there, which is the cluster's setup, not a row's fault (nothing to
        retry, no row to blame)."""
        where = self.address or "the local cluster"
        said = str(exc)
        if said.startswith("Error during deserialization of the task graph"):
            raise RunFailed(f"the Dask scheduler at {where} cannot unpickle our tasks: it "
                            f"needs sudoku-pipeline installed, as the workers do") from None
        if "No module named 'pipeline" in said:
            raise RunFailed(f"a worker of the Dask cluster at {where} cannot import our "
                            f"code ({said.strip()}): every worker needs sudoku-pipeline "
                            f"installed") from None

    def _check_connected(self) -> None:
        """RunFailed (exit 3, resumable) once the client has lost its scheduler."""
        if self._client.status != "running":
            where = self.address or "the local cluster"
            raise RunFailed(f"lost the connection to the Dask scheduler at {where} "
                            f"({self._client.status}); run the same command again to resume")

    def close(self, cancel: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        client, cluster = self._client, self._cluster
        try:
            if client is not None and client.status == "running":
                try:
                    if self._open:
                        client.cancel(list(self._open.values()))
                    self._open.clear()
                    if cluster is None:  # leave an external cluster's workers as we found them
                        client.unregister_worker_plugin(self._plugin)
                    client.unsubscribe_topic(self._topic)
                except Exception as exc:  # the cluster may be gone already
                    log.debug("dask: cleanup before closing the client failed: %r", exc)
            if client is not None:
                client.close(timeout=10)
        finally:
            if cluster is not None:
                cluster.close()
            logging.getLogger("distributed").setLevel(self._dask_level)

    # Log records from the workers ---------------------------------------------------------

    def _on_record(self, event) -> None:
        attrs = event[1]
        if "progress" in attrs:  # a task's news: it is alive, and so many rows are done
            self._news[attrs["key"]] = (time.monotonic(), attrs.get("worker"),
                                        attrs.get("solving", True))
            if attrs["progress"] and self.on_progress is not None:
                self.on_progress(attrs["progress"])
            return
        handle_record(attrs)
