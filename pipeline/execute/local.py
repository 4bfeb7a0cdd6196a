"""The local pool: worker processes on this machine, forked warm by a forkserver.

Workers are started by multiprocessing's *forkserver*: a clean process that imports the
runner's preload module (numpy, pyarrow and the compiled kernels) once, with no thread
started (OpenBLAS held to one thread, Arrow's jemalloc without its background thread:
lifecycle.FORKSERVER_ENV), and forks each worker from that state. A worker is thus warm at
once and never inherits the parent's threads (polars', pyarrow's), its locks or its files:
the output folder's lock stays with the parent. polars, whose import starts threads, is
imported by a worker only when it needs it. Starting a worker waits for the forkserver's
imports (about 0.4 s with the ahead-of-time kernels, a second when numba loads them:
compiled.py), so the pool starts its workers from a thread: it takes tasks at once, and
says it is `warming()` until a worker is ready (the parent plans in that time). A run may
leave with a start under way (a stop, an exit): the start is cut short, quietly
(forkserved.py), and nothing waits for it.

Each worker has its own pipe to the parent, for tasks in and for results and log records
out, and nothing else is shared, so a worker that dies, even halfway through a message,
loses only its own task. The parent waits on the pipes and on the processes' sentinels
together: a death is always noticed, whatever the worker was doing. Workers ask the
kernel to kill them when their parent dies (PR_SET_PDEATHSIG; the forkserver exits with the
parent), and an idle worker also stops at end-of-file on its pipe, so none outlives a run.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
import time
from collections import deque

from pipeline import testhooks
from pipeline.errors import RunFailed, WorkerLost
from pipeline.execute.base import (
    STALL_TIMEOUT,
    Executor,
    Runner,
    how_it_ended,
    picklable,
    set_progress_reporter,
)
from pipeline.execute.lifecycle import FORKSERVER_ENV, die_with_parent, start_forkserver
from pipeline.execute.logship import LogSender, handle_record

log = logging.getLogger("pipeline.executors")

READY_TIMEOUT = 120.0  # seconds for the workers to start
STALL_CHECK = 5.0  # seconds between looks for workers gone silent
MAX_FAILED_STARTS = 3  # workers dying before they are ready, before the run gives up


# ---------------------------------------------------------------------------------------
# Worker side


WORKER_NAME = b"pipeline-worker"  # what ps, top and psutil call a worker process


def _worker_main(conn, level: int, environ: dict[str, str], runner: Runner) -> None:
    """A worker process: tasks in, results out, until the pipe closes or None comes. It
    runs in the environment of the run that started it (the forkserver's is older: an AWS
    variable or a test hook set since then must reach the worker too), and never prints:
    a parent gone (a broken pipe) ends it quietly."""
    parent = os.getppid()
    die_with_parent(WORKER_NAME)
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    _let_go_of_the_forkserver()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for us all
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(environ)
    for k, v in FORKSERVER_ENV.items():  # one thread per worker for what it imports later
        os.environ.setdefault(k, v)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(LogSender(conn.send))
    root.setLevel(level)
    logging.raiseExceptions = False  # a record that cannot reach the parent is dropped quietly
    try:
        _serve(conn, runner)
    except (EOFError, OSError):
        pass  # the parent is gone
    os._exit(0)


def _let_go_of_the_forkserver() -> None:
    """Close this worker's copy of the run's end of the forkserver's alive pipe.

    The forkserver hands every child that descriptor, and it leaves only when the pipe has
    no writer left: with the run gone, it would wait for its workers, while they (asking the
    kernel to die with their parent, the forkserver) wait for it. A busy worker ends that
    when its task is done; a stopped one never did. Closed here, the run is the pipe's only
    writer: kill -9 of the run ends the forkserver, and with it every worker, stopped or
    not (PR_SET_PDEATHSIG), and the resource tracker once they are gone."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None


def _serve(conn, runner: Runner) -> None:
    set_progress_reporter(lambda rows, solving: conn.send(("progress", rows, solving)))
    conn.send(("ready", os.getpid(), runner.hello()))
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            result = ("done", runner.execute(task))
        except BaseException as exc:  # sent back whole; the scheduler decides
            result = ("error", picklable(exc))
        if result[0] == "done" and hasattr(result[1], "tally") and testhooks.once("half-send"):
            testhooks.half_send(conn, result)
        conn.send(result)


# ---------------------------------------------------------------------------------------
# Parent side


class _Worker:
    def __init__(self, process, conn):
        self.process = process
        self.conn = conn
        self.pid = process.pid
        self.future: cf.Future | None = None
        self.ready = False
        self.news = time.monotonic()  # when its task last said something (or was sent)
        self.stalled = 0.0  # seconds of silence for which it was killed
        self.solving = False  # its task last said it was solving (else reading or writing)


class LocalExecutor(Executor):
    """A pool of worker processes on this machine."""

    name = "local"

    def __init__(self, workers: int, runner: Runner, level: int | str = logging.INFO,
                 stall_timeout: float = STALL_TIMEOUT):
        most, why = machine_holds()
        if workers > most:
            # (at most: fewer start when the run has fewer ranges, which the log says)
            log.warning("%d workers asked for: at most %d, what this machine holds (%s)",
                        workers, most, why)
        self.workers = max(1, min(workers, most))
        self.stall_timeout = stall_timeout
        self._runner = runner
        self._context = multiprocessing.get_context("forkserver")
        start_forkserver(runner.preload)
        self._level = logging.getLevelName(level) if isinstance(level, str) else level
        self._procs: list[_Worker] = []
        self._queue: deque[tuple[cf.Future, object]] = deque()
        self._closed = False
        self._failed_starts = 0
        self.cycles_per_us: float | None = None
        # A start blocks until the forkserver has finished its imports (about a second):
        # the workers are started from a thread, and the parent plans in the meantime.
        self._start_error: BaseException | None = None
        self._starter: threading.Thread | None = threading.Thread(
            target=self._start_all, name="pipeline-start-workers", daemon=True)
        self._starter.start()

    def _start_all(self) -> None:
        try:
            started = 0
            while started < self.workers:  # (fewer, once limit() says there is less to do)
                self._start_worker()
                started += 1
        except BaseException as exc:  # raised in the main thread, by _started()
            self._start_error = exc

    def _started(self, check: bool = True, timeout: float | None = None) -> None:
        """Wait for the workers' start (only the first call may block, at most `timeout`
        seconds); raise what made it fail, if `check`."""
        if self._starter is not None:
            self._starter.join(timeout)
            if self._starter.is_alive():
                return  # a forkserver that does not answer: close() goes on without it
            self._starter = None
            if self._start_error is not None and check:
                raise self._start_error

    def _start_worker(self) -> None:
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_worker_main, name="pipeline-worker",
                                        args=(theirs, self._level, dict(os.environ), self._runner),
                                        daemon=True)
        process.start()
        theirs.close()  # so that a dead worker reads as end-of-file here
        self._procs.append(_Worker(process, ours))

    def limit(self, tasks: int) -> None:
        """There are only `tasks` tasks to do: no more workers than that are started."""
        if tasks < self.workers:
            log.info("%d range(s) to do: %d worker process(es), not %d", tasks,
                     max(1, tasks), self.workers)
            self.workers = max(1, tasks)

    def pids(self) -> list[int]:
        self._started()
        return [w.pid for w in self._procs]

    def ready(self) -> None:
        self._started()
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(w.ready for w in self._procs):
            if time.monotonic() > deadline:
                raise RunFailed(f"the worker processes did not start in {READY_TIMEOUT:.0f} s")
            self._pump(1.0)

    def warming(self) -> bool:
        if self._starter is not None and self._starter.is_alive():
            return True
        self._pump(0)
        return not any(w.ready for w in self._procs)

    def submit(self, task) -> cf.Future:
        fut: cf.Future = cf.Future()
        self._queue.append((fut, task))
        self._dispatch()
        return fut

    # The loop ---------------------------------------------------------------------------

    def _dispatch(self) -> None:
        if self._starter is not None:
            return  # the tasks wait in the queue; _pump() hands them out
        for w in self._procs:
            if not self._queue:
                return
            if w.ready and w.future is None:
                fut, task = self._queue.popleft()
                try:
                    w.conn.send(task)
                except (OSError, EOFError):
                    self._queue.appendleft((fut, task))
                    continue  # its sentinel will tell us it died
                w.future = fut
                w.news = time.monotonic()
                w.solving = False  # it reads first

    def _pump(self, timeout: float | None) -> None:
        """Wait for messages or deaths, and act on them; kill a worker gone silent."""
        self._started()
        by_object = {}
        for w in self._procs:
            by_object[w.conn] = w
            by_object[w.process.sentinel] = w
        if not by_object:
            return
        # Wake up now and then even with nothing to wait for: a stalled worker says nothing.
        beat = min(STALL_CHECK, self.stall_timeout / 4)
        ready = multiprocessing.connection.wait(
            list(by_object), beat if timeout is None else min(timeout, beat))
        dead = []  # a death shows on the pipe, the sentinel or both: listed once
        for obj in ready:
            w = by_object[obj]
            if w not in dead and (obj is not w.conn or not self._receive(w)):
                dead.append(w)
        now = time.monotonic()
        for w in self._procs:
            if w.future is not None and w not in dead and now - w.news > self.stall_timeout:
                log.warning("worker process %d made no progress for %.0f s (stopped? a read "
                            "that never ends?): killed, its range is done again", w.pid,
                            now - w.news)
                w.stalled = now - w.news
                dead.append(w)
        for w in dead:
            self._lost(w)
        self._dispatch()

    def _receive(self, w: _Worker) -> bool:
        """Handle every message waiting on a worker's pipe; False when the pipe broke."""
        while True:
            try:
                if not w.conn.poll():
                    return True
                kind, *body = w.conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                return False  # died, perhaps halfway through a message
            if kind == "progress":
                w.news = time.monotonic()
                w.solving = body[1]
                if self.on_progress is not None and body[0]:
                    self.on_progress(body[0])
            elif kind == "log":
                handle_record(body[0])
            elif kind == "ready":
                w.ready = True
                self.cycles_per_us = self.cycles_per_us or body[1]
            elif w.future is not None:
                fut, w.future = w.future, None
                if kind == "done":
                    fut.set_result(body[0])
                else:
                    fut.set_exception(body[0])

    def _lost(self, w: _Worker) -> None:
        if w.process.is_alive():  # its pipe broke: of no use any more
            with contextlib.suppress(OSError):
                os.kill(w.pid, signal.SIGKILL)
        w.process.join(timeout=10)
        code = w.process.exitcode
        with contextlib.suppress(OSError):
            w.conn.close()
        self._procs.remove(w)
        how = how_it_ended(code)
        if w.stalled:
            how = f"no progress for {w.stalled:.0f} s, killed"
            if not w.solving:
                how = f"no progress for {w.stalled:.0f} s reading or writing, killed"
        if w.future is not None:
            w.future.set_exception(WorkerLost(f"worker process {w.pid} died ({how})",
                                              storage=bool(w.stalled) and not w.solving))
            w.future = None
        if not w.ready:
            self._failed_starts += 1
            if self._failed_starts > MAX_FAILED_STARTS:
                raise RunFailed(f"worker processes die as they start ({how}); see the "
                                "messages above")
        if not self._closed:
            if not w.stalled:  # (a stalled one was said already)
                log.warning("worker process %d died (%s); starting another", w.pid, how)
            self._start_worker()

    # Stopping ---------------------------------------------------------------------------

    def close(self, cancel: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        self._started(check=False, timeout=READY_TIMEOUT / 4)
        for fut, _ in self._queue:
            fut.set_exception(WorkerLost("the pool was closed"))
        self._queue.clear()
        procs = list(self._procs)
        if not cancel:
            for w in procs:
                with contextlib.suppress(OSError, EOFError):
                    w.conn.send(None)
            for w in procs:
                w.process.join(timeout=10)
        for w in procs:
            if w.process.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(w.pid, signal.SIGKILL)
        for w in procs:
            w.process.join(timeout=10)
            with contextlib.suppress(OSError):
                w.conn.close()
            if w.future is not None and not w.future.done():
                w.future.set_exception(WorkerLost("the pool was closed"))
        self._procs.clear()


PER_WORKER = 300 << 20  # bytes a worker may take at its peak (a 50,000-row range: ~250 MB)
PER_CORE = 4  # workers a core can keep busy at most (more would only wait for it)


def machine_holds() -> tuple[int, str]:
    """How many workers this machine holds, and why in words: PER_CORE a core, and as
    many as its available memory has room for."""
    import psutil

    cores = os.cpu_count() or 1
    free = psutil.virtual_memory().available
    most = max(1, min(cores * PER_CORE, free // PER_WORKER))
    return most, f"{cores} cores, {free / 2**30:.1f} GiB available"
