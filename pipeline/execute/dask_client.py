"""The Dask client in a process of its own, forked when the run makes its executor.

Importing `distributed` costs 0.3-0.45 s of CPU beyond our own imports, and a run on Dask
cannot hand out a task before it has. Done in the command's process, that time comes
before planning, the second core idle beside it. So the run forks a client process as it
makes its executor (`executor()`): the child imports `distributed` (numpy, click and the
rest are imported already: the fork shares them), connects and runs
`dask_executor.DaskExecutor`, while the command plans, taking the pieces itself
(`warming()`). The command sees an `executors.Executor` like any other (`ClientProcess`).

A fork is safe while the process runs no thread but its own and numpy's OpenBLAS pool
(which stops around a fork): polars and pyarrow not imported, no Python thread started,
as in a command's run on local text files. Elsewhere (a Parquet input, an object store
whose client runs an event loop thread, a run from Python with polars loaded) the
DaskExecutor runs in this process.

Between the two, one socket pair and pickled messages::

    command -> client   ("open", address, workers, level, runner, stall)   once, first
                        ("submit", n, task)                 a task, numbered by the command
                        ("cpu",)                            how much CPU the client has used
                        ("close", cancel)                   last
    client -> command   ("ready", workers)                  connected, workers warm
                        ("failed", exc)                     cannot connect; scheduler lost
                        ("done", n, figures) ("error", n, exc)   a task's outcome
                        ("log", attrs)                      a record of the client's loggers
                        ("progress", rows)                  rows solved within tasks
                        ("cpu", seconds)

A task goes to the cluster when it arrives and its outcome comes back when Dask has it (a
done callback), so the command's futures are plain `concurrent.futures` ones. Records of
the workers' `pipeline.*` loggers reach the client (dask_executor.py) and, with the
client's own, come here as "log" messages, filed as if they had been logged here.

The client process has a session of its own (a Ctrl-C at the terminal is the command's,
which then closes the client, its tasks cancelled), closes its client at end-of-file on
its socket, and is killed by the kernel if the command dies (PR_SET_PDEATHSIG). It never
touches what it inherits (the folder's lock, the log files: it ends with os._exit, so
nothing of the command's is flushed or closed twice). Its CPU time is part of the run's
`cpu_seconds`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import itertools
import logging
import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from pipeline.errors import RunFailed, WorkerLost
from pipeline.execute.base import STALL_TIMEOUT, Executor, Runner, how_it_ended, picklable
from pipeline.execute.lifecycle import die_with_parent
from pipeline.execute.logship import LogSender, handle_record

CLIENT_NAME = b"pipeline-dask"  # what ps, top and psutil call the client process
CHECK_INTERVAL = 60.0  # seconds without news before the client checks its scheduler
CLOSE_TIMEOUT = 30.0  # seconds for the client to close (its client, a local cluster)

THREADED = ("polars", "pyarrow")  # modules whose import may start threads of their own
SCHEMES = ("tcp", "tls", "ws", "wss", "inproc", "ucx")  # Dask's, as of distributed 2024
_HOST_PORT = ("tcp", "tls", "ws", "wss")


def address_problem(address: str) -> str | None:
    """What makes a scheduler address one Dask cannot use (a scheme it lacks, no port),
    or None; without importing distributed, whose threads would keep the client in this
    process (executor())."""
    scheme, sep, location = address.partition("://")
    if not sep:
        scheme, location = "tcp", address
    if scheme not in SCHEMES:
        return f"unknown address scheme {scheme!r}"
    _, sep_port, port = location.rpartition(":")
    if scheme in _HOST_PORT and (not sep_port or not port.isdigit()):
        return f"missing port number in address {address!r}"
    return None


def executor(address: str | None, workers: int, runner: Runner,
             level: int | str = logging.INFO, stall_timeout: float = STALL_TIMEOUT) -> Executor:
    """The run's Dask executor: in a client process of its own where a fork is safe."""
    if threading.active_count() == 1 and not any(m in sys.modules for m in THREADED):
        return ClientProcess(address, workers, runner, level, stall_timeout)
    from pipeline.execute.dask_cluster import DaskExecutor

    return DaskExecutor(address, workers, runner, level, stall_timeout)


def _fork() -> tuple[_Forked, Connection]:
    ours, theirs = socket.socketpair()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the client process; it never returns from here
        try:
            ours.close()
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            main(theirs.detach(), parent)
        finally:
            os._exit(1)
    theirs.close()
    return _Forked(pid), Connection(ours.detach())


class _Forked:
    """A forked child, with the few methods of subprocess.Popen that ClientProcess uses."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------------------------------
# The command's side
# ------------------------------------------------------------------------------------------


class ClientProcess(Executor):
    """Tasks run on a Dask cluster through a client in a process of its own."""

    name = "dask"
    retries, batches = 0, True  # as DaskExecutor's

    def __init__(self, address: str | None, workers: int, runner: Runner,
                 level: int | str = logging.INFO, stall_timeout: float = STALL_TIMEOUT):
        self.workers = max(1, workers)
        self.stall_timeout = stall_timeout
        self._proc, self._conn = _fork()
        self._ids = itertools.count()
        self._futures: dict[int, cf.Future] = {}
        self._ready = False
        self._failure: BaseException | None = None
        self._cpu: float | None = 0.0
        self._closed = False
        level = logging.getLevelName(level) if isinstance(level, str) else level
        self._send(("open", address, self.workers, level, runner, stall_timeout))

    def warming(self) -> bool:
        self._pump(0)
        return not self._ready

    def ready(self) -> None:
        while not self._ready:
            self._pump(None)

    def submit(self, task) -> cf.Future:
        fut: cf.Future = cf.Future()
        n = next(self._ids)
        self._futures[n] = fut
        self._send(("submit", n, task))
        return fut

    def client_cpu_seconds(self) -> float:
        if self._failure is None and not self._closed:
            self._cpu = None
            self._send(("cpu",))
            while self._cpu is None:
                self._pump(None)
        return self._cpu or 0.0

    def close(self, cancel: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._conn.send(("close", cancel))
        # Its last records come before it exits. A message that a stop cut short leaves
        # the rest unreadable: then we only wait for it to exit.
        deadline = time.monotonic() + CLOSE_TIMEOUT
        try:
            while self._proc.poll() is None and time.monotonic() < deadline:
                if self._conn.poll(0.05):
                    self._handle(self._conn.recv(), closing=True)
            while self._conn.poll(0):
                self._handle(self._conn.recv(), closing=True)
        except Exception:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(max(0.0, deadline - time.monotonic()))
        finally:
            if self._proc.poll() is None:
                with contextlib.suppress(OSError):
                    self._proc.kill()
            self._proc.wait()
            self._conn.close()
            for fut in self._futures.values():
                if not fut.done():
                    fut.set_exception(WorkerLost("the Dask client was closed"))
            self._futures.clear()

    # The socket --------------------------------------------------------------------------

    def _send(self, message) -> None:
        if self._failure is not None:
            raise self._failure
        try:
            self._conn.send(message)
        except OSError:
            self._pump(0)  # what ended it, if it said
            raise self._lost() from None

    def _pump(self, timeout: float | None) -> None:
        """Wait up to `timeout` seconds for messages, and act on every one waiting."""
        if self._failure is not None:
            raise self._failure
        try:
            if not self._conn.poll(timeout):
                return
            while True:
                self._handle(self._conn.recv())
                if not self._conn.poll(0):
                    return
        except (EOFError, OSError, pickle.UnpicklingError):
            raise self._lost() from None

    def _lost(self) -> BaseException:
        if self._failure is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            how = how_it_ended(self._proc.returncode)
            self._failure = RunFailed(f"the Dask client process ended ({how}); run the same "
                                      "command again to resume")
        return self._failure

    def _handle(self, message, closing: bool = False) -> None:
        kind, *body = message
        if kind == "log":
            handle_record(body[0])
        elif kind == "progress":
            if self.on_progress is not None:
                self.on_progress(body[0])
        elif kind in ("done", "error"):
            fut = self._futures.pop(body[0], None)
            if fut is not None and not fut.done():
                if kind == "done":
                    fut.set_result(body[1])
                else:
                    fut.set_exception(body[1])
        elif kind == "ready":
            self.workers, self._ready = body[0], True
        elif kind == "cpu":
            self._cpu = body[0]
        elif kind == "failed" and not closing:
            self._failure = body[0]
            raise self._failure


# ------------------------------------------------------------------------------------------
# The client's side
# ------------------------------------------------------------------------------------------


_INHERITED: list = []  # the command's log handlers: kept from the collector, never used


def main(fd: int, parent: int) -> None:
    """The client process: import distributed (while the command plans), then serve."""
    die_with_parent(CLIENT_NAME)
    if os.getppid() != parent:  # the command died before the line above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A stop ends a local cluster's processes before their semaphores are released; the
    # resource tracker (started with this process's -W options) releases them, and need
    # not say so on the user's terminal after the stop's one line.
    sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    conn = Connection(fd)
    server = _Server(conn)
    root = logging.getLogger()
    _INHERITED.append(root.handlers)
    root.handlers = [LogSender(server.send)]
    logging.raiseExceptions = False  # a record that cannot reach the command is dropped
    from pipeline.execute import dask_cluster  # the slow import, beside the command's planning

    try:
        server.serve(dask_cluster.DaskExecutor)
    except (EOFError, OSError, pickle.UnpicklingError):
        pass  # the command is gone, or a stop cut its message short
    finally:
        server.shut(cancel=True)
    os._exit(0)  # nothing of ours to flush; the interpreter's teardown would take 0.2 s


class _Server:
    """Runs a DaskExecutor for the command at the other end of `conn`."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.executor = None
        self.closed = False
        self.failure: BaseException | None = None
        self.pending: set[int] = set()
        self.check_every = CHECK_INTERVAL
        self._lock = threading.Lock()  # sends come from this thread and Dask's callbacks

    def send(self, message) -> None:
        with self._lock:
            self.conn.send(message)

    def serve(self, make) -> None:
        """Open a DaskExecutor with `make` as the command asks, run its tasks, close it."""
        kind, *body = self.conn.recv()
        if kind != "open":
            return  # closed before it was opened
        address, workers, level, runner, stall = body
        logging.getLogger().setLevel(level)
        self.check_every = min(CHECK_INTERVAL, stall / 4)
        try:
            self.executor = make(address, workers, runner, level, stall)
            self.executor.on_progress = lambda rows: self.send(("progress", rows))
            self.executor.ready()
        except BaseException as exc:  # the command raises it; tasks get it too
            self.failure = picklable(exc)
            self.send(("failed", self.failure))
        else:
            self.send(("ready", self.executor.workers))
        while True:
            if not self.conn.poll(self.check_every):
                self._check()
                continue
            kind, *body = self.conn.recv()
            if kind == "submit":
                self._submit(*body)
            elif kind == "cpu":
                self.send(("cpu", _cpu_seconds()))
            elif kind == "close":
                self.shut(cancel=body[0])
                return

    def _submit(self, n: int, task) -> None:
        if self.failure is not None:
            self.send(("error", n, self.failure))
            return
        try:
            future = self.executor.submit(task)
        except BaseException as exc:
            self.send(("error", n, picklable(exc)))
            return
        self.pending.add(n)
        future.add_done_callback(functools.partial(self._report, n, self.executor))

    def _report(self, n: int, executor, future) -> None:
        """In Dask's callback thread: send a task's outcome, as DaskExecutor.result says."""
        self.pending.discard(n)
        try:
            message = ("done", n, executor.result(future))
        except BaseException as exc:
            message = ("error", n, picklable(exc))
        with contextlib.suppress(OSError):
            self.send(message)

    def _check(self) -> None:
        if self.executor is None or self.failure is not None:
            return
        try:
            self.executor.check(len(self.pending))
        except RunFailed as exc:
            self.failure = exc
            self.send(("failed", exc))

    def shut(self, cancel: bool) -> None:
        if self.executor is not None and not self.closed:
            self.closed = True
            try:
                self.executor.close(cancel=cancel)
            except Exception as exc:  # the cluster may be gone already
                logging.getLogger("pipeline.dask_client").debug("closing: %r", exc)
