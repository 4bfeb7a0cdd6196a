"""Where chunks are solved: a local process pool or a Dask cluster, behind one interface.

The rest of the pipeline sees `Executor` (submit a task, wait for some to finish, recover
from a lost worker) and `schedule`, which keeps a bounded number of tasks in flight,
retries tasks whose worker died, and splits a task that keeps failing until the row that
fails is alone (it becomes an `error` row; the rest of its chunk is still solved).

Workers receive numpy arrays and return numpy arrays. They never touch polars or pyarrow,
which is what makes the `fork` start method safe here: the parent's polars thread pool is
copied into the child, but the child never calls into it.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from pipeline import solver
from pipeline.solver import NULL, Outcome, Status

log = logging.getLogger("pipeline.executors")

RETRIES = 2  # attempts of a task whose worker died or which raised, before it is split
FAULT_ENV = "PIPELINE_FAULT_INJECT"  # test hook: "crash:<puzzle>" or "raise:<puzzle>"


@dataclass
class Task:
    """One chunk (or a piece of one) to solve; all numpy, cheap to pickle."""

    chunk_id: int
    first: int  # index of this piece's first row within its chunk
    offsets: np.ndarray
    data: np.ndarray
    expected: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    malformed: dict[int, str]
    limit: int
    timings: bool
    attempts: int = 0
    last_error: str = ""
    alone: bool = False  # a suspect of a worker crash: run with no other task in flight

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def split(self) -> tuple[Task, Task]:
        """Two halves of this task, each with its own slice of the rows."""
        mid = len(self) // 2
        return self._piece(0, mid), self._piece(mid, len(self))

    def _piece(self, lo: int, hi: int) -> Task:
        offs = self.offsets[lo : hi + 1]
        base = offs[0]
        data = self.data[base : offs[-1]]
        expected = None
        if self.expected is not None:
            e_offs, e_data, present = self.expected
            e = e_offs[lo : hi + 1]
            expected = (e - e[0], e_data[e[0] : e[-1]], present[lo:hi])
        malformed = {i - lo: why for i, why in self.malformed.items() if lo <= i < hi}
        return replace(self, first=self.first + lo, offsets=offs - base, data=data,
                       expected=expected, malformed=malformed, attempts=0, last_error="")


@dataclass
class Done:
    """A finished task: its outcome and who solved it."""

    task: Task
    outcome: Outcome
    pid: int = 0
    seconds: float = 0.0
    cycles_per_us: float | None = None  # the worker's cycle-counter rate, for solve_us


def run_task(task: Task) -> Done:
    """Solve one task (runs in a worker)."""
    started = time.perf_counter()
    _maybe_inject_fault(task)
    outcome = solver.solve_buffers(task.offsets, task.data, task.limit, task.expected,
                                   task.timings, task.malformed)
    seconds = time.perf_counter() - started
    log.debug("chunk %d rows %d..%d solved in %.3f s", task.chunk_id, task.first,
              task.first + len(task) - 1, seconds, extra={"chunk": task.chunk_id})
    rate = _cycle_rate() if task.timings else None
    return Done(task, outcome, os.getpid(), seconds, rate)


_CYCLE_RATE: list[float | None] = []


def _cycle_rate() -> float | None:
    """Cycles per microsecond of the counter the kernel reads, measured once per process."""
    if not _CYCLE_RATE:
        from pipeline import engine

        _CYCLE_RATE.append(engine.cycles_per_us())
    return _CYCLE_RATE[0]


def _maybe_inject_fault(task: Task) -> None:
    """Fail on purpose on a named puzzle, so tests can do the bad thing for real."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    how, _, puzzle = spec.partition(":")
    needle = puzzle.encode()
    if needle not in task.data.tobytes():
        return
    if how == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError(f"injected fault on puzzle {puzzle[:12]}...")


class WorkerLost(Exception):
    """The process running a task died (killed, crashed, out of memory)."""


class Executor:
    """The one interface both executors offer to `schedule`."""

    name = "executor"
    workers = 1
    # True when a lost worker takes every task in flight down with it (a process pool);
    # False when only the task that was running there is lost (Dask reschedules the rest).
    shared_fate = True

    def submit(self, task: Task):
        raise NotImplementedError

    def wait(self, futures: Iterable, timeout: float | None = None) -> set:
        """Block until at least one future is done (or the timeout passes); the done ones."""
        raise NotImplementedError

    def result(self, future) -> Done:
        """The task's result; WorkerLost if its worker died, else the task's own exception."""
        raise NotImplementedError

    def ready(self) -> None:
        """Block until the workers are started and their kernel is loaded."""

    def recover(self) -> None:
        """Make the executor usable again after a worker was lost."""

    def close(self, cancel: bool = False) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(cancel=exc_type is not None)


def _worker_init(log_level: int) -> None:
    # The parent handles Ctrl-C and SIGTERM and stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    logging.getLogger().setLevel(log_level)
    solver.warm_up()
    _cycle_rate()


class LocalExecutor(Executor):
    """A pool of forked worker processes on this machine."""

    name = "local"

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._context = multiprocessing.get_context("fork")
        self._pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=self._context, initializer=_worker_init,
            initargs=(logging.getLogger().getEffectiveLevel(),))

    def pids(self) -> list[int]:
        return [p.pid for p in (self._pool._processes or {}).values()]

    def submit(self, task: Task):
        try:
            return self._pool.submit(run_task, task)
        except cf.process.BrokenProcessPool as exc:
            # The pool broke after the last wait (a worker died): hand back a failed
            # future, so `schedule` sees the task lost like the others and recovers.
            failed: cf.Future = cf.Future()
            failed.set_exception(exc)
            return failed

    def ready(self) -> None:
        # Each worker runs its initializer (the kernel's cache load) before any task.
        cf.wait([self._pool.submit(os.getpid) for _ in range(self.workers)])

    def wait(self, futures: Iterable, timeout: float | None = None) -> set:
        done, _ = cf.wait(list(futures), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return done

    def result(self, future) -> Done:
        try:
            return future.result()
        except cf.process.BrokenProcessPool as exc:
            raise WorkerLost(f"worker process died ({exc})") from None

    def recover(self) -> None:
        log.warning("a worker process died; starting a new pool")
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()

    def close(self, cancel: bool = False) -> None:
        if not cancel:
            self._pool.shutdown(wait=True)
            return
        # (shutdown() forgets the result queue and manager thread: take them first.)
        results = getattr(self._pool, "_result_queue", None)
        manager = getattr(self._pool, "_executor_manager_thread", None)
        procs = list((self._pool._processes or {}).values())
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)
        # A worker stopped while writing its result leaves half a message in the result
        # pipe, and the pool's manager thread waits for the rest forever (shutdown(wait=True)
        # and interpreter exit then hang). With the workers gone, closing our own write end
        # lets it read end-of-file: it marks the pool broken and ends cleanly.
        try:
            results._writer.close()
        except (AttributeError, OSError):
            pass
        if manager is not None:
            manager.join(timeout=10)


@dataclass
class _Pending:
    """A chunk whose pieces are still being solved."""

    pieces: int = 1
    done: dict[int, Outcome] = field(default_factory=dict)  # first row -> outcome


def schedule(executor: Executor, tasks: Iterator[Task], max_in_flight: int,
             on_done: Callable[[int, Outcome, list[Done]], None]) -> None:
    """Solve every task, at most `max_in_flight` at once; call on_done per whole chunk.

    A task whose worker died or which raised is retried RETRIES times, then split in two;
    a single row that still fails comes back as an `error` row with the reason.

    A dead worker takes every task on its pool with it, so when several were in flight the
    culprit is unknown: each of them is retried alone (nothing else in flight), and only a
    crash while alone counts as an attempt. Innocent neighbours never become `error` rows.
    """
    in_flight: dict = {}  # future -> task
    retry: list[Task] = []
    pending: dict[int, _Pending] = {}
    pieces_done: dict[int, list[Done]] = {}
    exhausted = False

    def finish(task: Task, outcome: Outcome, done: Done | None) -> None:
        p = pending[task.chunk_id]
        p.done[task.first] = outcome
        if done is not None:
            pieces_done.setdefault(task.chunk_id, []).append(done)
        if len(p.done) == p.pieces:
            del pending[task.chunk_id]
            parts = [p.done[k] for k in sorted(p.done)]
            whole = parts[0] if len(parts) == 1 else Outcome.concat(parts)
            on_done(task.chunk_id, whole, pieces_done.pop(task.chunk_id, []))

    def fail(task: Task, why: str) -> None:
        task.attempts += 1
        task.last_error = why
        if task.attempts <= RETRIES:
            log.warning("chunk %d (rows %d..%d): %s; retrying", task.chunk_id, task.first,
                        task.first + len(task) - 1, why, extra={"chunk": task.chunk_id})
            retry.append(task)
        elif len(task) > 1:
            log.warning("chunk %d: rows %d..%d keep failing (%s); splitting", task.chunk_id,
                        task.first, task.first + len(task) - 1, why,
                        extra={"chunk": task.chunk_id})
            pending[task.chunk_id].pieces += 1
            retry.extend(task.split())
        else:
            log.error("chunk %d row %d: %s; marked error", task.chunk_id, task.first, why,
                      extra={"chunk": task.chunk_id})
            finish(task, _error_outcome(task, why), None)

    def suspect(task: Task, why: str) -> None:
        log.warning("chunk %d (rows %d..%d): %s; retrying it alone", task.chunk_id,
                    task.first, task.first + len(task) - 1, why, extra={"chunk": task.chunk_id})
        task.alone = True
        task.last_error = why
        retry.append(task)

    while True:
        while len(in_flight) < max_in_flight and (retry or not exhausted):
            if any(t.alone for t in in_flight.values()):
                break  # a suspect runs by itself
            if retry:
                if retry[0].alone and in_flight:
                    break  # let the others finish, then run the suspect alone
                task = retry.pop(0)
            else:
                task = next(tasks, None)
                if task is None:
                    exhausted = True
                    break
                pending[task.chunk_id] = _Pending()
            in_flight[executor.submit(task)] = task
        if not in_flight:
            if exhausted and not retry:
                return
            continue
        lost = False
        # Tasks that may share the blame for a lost worker.
        together = len(in_flight) if executor.shared_fate else 1
        for fut in executor.wait(in_flight):
            task = in_flight.pop(fut)
            try:
                done = executor.result(fut)
            except WorkerLost as exc:
                lost = True
                if together == 1:
                    fail(task, str(exc))  # it was alone: it is the culprit
                else:
                    suspect(task, str(exc))
            except Exception as exc:  # the engine itself failed on this task
                fail(task, f"{type(exc).__name__}: {exc}")
            else:
                finish(task, done.outcome, done)
        if lost and executor.shared_fate:
            # Every task still on the broken pool is lost with it: take them back too.
            for fut, task in list(in_flight.items()):
                try:
                    done = executor.result(fut) if fut.done() else None
                except Exception:
                    done = None
                in_flight.pop(fut)
                if done is not None:
                    finish(task, done.outcome, done)
                else:
                    suspect(task, "its worker pool was replaced after a crash")
        if lost:
            executor.recover()


def _error_outcome(task: Task, why: str) -> Outcome:
    """An outcome of `error` rows for a task the engine could not finish."""
    n = len(task)
    out = Outcome(
        status=np.full(n, Status.ERROR, dtype=np.uint8),
        solutions=np.zeros((n, 81), dtype=np.uint8),
        n_solutions=np.full(n, NULL, dtype=np.int8),
        guesses=np.full(n, NULL, dtype=np.int64),
        expected_match=np.full(n, NULL, dtype=np.int8),
        reasons={i: f"solver failed: {why}" for i in range(n)},
        cycles=np.full(n, NULL, dtype=np.int64) if task.timings else None,
    )
    for i, why_bad in task.malformed.items():  # a row the reader rejected stays malformed
        out.status[i] = Status.MALFORMED
        out.reasons[i] = why_bad
    return out
