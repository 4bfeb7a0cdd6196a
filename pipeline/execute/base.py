"""The executor protocol: how tasks are handed out, what comes back, how a death is seen.

    submit(task) -> Future        hand a task over (it may wait in a queue)
    wait(futures, timeout)        block until at least one is done; the done ones
    result(future)                its result; WorkerLost when its worker died, else the
                                  task's own exception, as raised where it ran
    ready() / warming()           wait for the workers / whether none can take a task yet
    close(cancel)                 stop; with cancel, tasks under way are abandoned

A task running on a worker may call `report_progress(rows)` now and then: the rows it has
done since it last said so. The executor passes them to `on_progress` (a progress bar),
and takes them as a sign of life: a worker whose task says nothing for `stall_timeout`
seconds (stopped with SIGSTOP, stuck in a read from a dead NFS server) is treated as lost,
its task retried elsewhere (`WorkerLost`), never waited for without end.

An executor knows nothing of what its tasks are: it runs them through a `Runner` (the
functions a worker calls, given by the job that makes the executor), and what to do about a
failure (retry, hunt the row to blame) is the job's scheduler's. Two executors stand behind
it: a local pool of processes (local.py) and a Dask cluster (dask_cluster.py, its client in a
process of its own: dask_client.py).
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import pickle
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Runner:
    """What a worker does with tasks: the module that does it, named by the job.

    The module offers `execute(task)` (run one task), `warm_up()` (ready a process for
    tasks, once) and `hello()` (what a worker reports as it starts); `preload` is the module
    the local pool's forkserver imports, so that workers fork warm. Named, not imported: a
    worker process imports them (the forkserver already has), the process making an
    executor need not (its start-up stays short), and this layer depends on no job."""

    module: str
    preload: str

    def _module(self):
        return importlib.import_module(self.module)

    def execute(self, task):
        return self._module().execute(task)

    def warm_up(self) -> None:
        self._module().warm_up()

    def hello(self):
        return self._module().hello()


_REPORTER = threading.local()  # in a worker's task thread: how its news reaches the run


def report_progress(rows: int, solving: bool = True) -> None:
    """In a task: `rows` more rows are done (0: still alive), and whether it goes on
    solving (False: it reads or writes now, so that a silence from here on is the
    storage's, not the rows'). Nothing outside a worker."""
    send = getattr(_REPORTER, "send", None)
    if send is not None:
        send(rows, solving)


def set_progress_reporter(send) -> None:
    """In a worker's task thread: send(rows, solving) carries report_progress's news to the
    executor (None: nothing)."""
    _REPORTER.send = send


STALL_TIMEOUT = 300.0  # seconds a task may go without news before its worker counts as lost


class Executor:
    """The interface every executor offers to the scheduler."""

    name = "executor"
    workers = 1
    stall_timeout = STALL_TIMEOUT
    on_progress = None  # called with the rows a running task reports (report_progress)
    # Worker deaths a task may cause before the scheduler hunts for the row to blame
    # (Dask has already retried a task on other workers before it reports it lost).
    retries = 2
    # Whether consecutive ranges go several to a task (schedule.batch_size): where a round
    # trip costs milliseconds of CPU (Dask's), not a local pipe's microseconds.
    batches = False

    def submit(self, task) -> cf.Future:
        raise NotImplementedError

    def wait(self, futures: Iterable, timeout: float | None = None) -> set:
        """Block until at least one future is done (or the timeout passes); the done ones."""
        futures = list(futures)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            done = {f for f in futures if f.done()}
            if done or not futures:
                return done
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._pump(left)
            if deadline is not None and time.monotonic() >= deadline:
                return {f for f in futures if f.done()}

    def _pump(self, timeout: float | None) -> None:
        """Wait up to `timeout` seconds for news (of the workers, or from the Dask client's
        process), and act on it."""
        raise NotImplementedError

    def result(self, future):
        """The task's result; WorkerLost if its worker died, else the task's own exception."""
        return future.result()

    def limit(self, tasks: int) -> None:
        """There are only `tasks` tasks to do (the executor may start fewer workers)."""

    def ready(self) -> None:
        """Block until the workers are started."""

    def warming(self) -> bool:
        """Whether no worker can take a task yet (the pool is starting); never blocks."""
        return False

    def client_cpu_seconds(self) -> float:
        """CPU time spent so far for this run in helper processes of ours that are not
        workers (the Dask client's process), counted as this process's own."""
        return 0.0

    def close(self, cancel: bool = False) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(cancel=exc_type is not None)



def how_it_ended(code: int | None) -> str:
    """A process's exit code in words: "killed by SIGKILL", "exit code 1"."""
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def picklable(exc: BaseException) -> BaseException:
    """The exception itself if it survives pickling, else a RuntimeError that names it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
