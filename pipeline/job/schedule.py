"""Keeping workers busy, and what to do when a task fails.

`run_all` runs a batch of planning or copying tasks, all needed: a lost worker is retried,
anything else ends the run. `solve_all` keeps a bounded number of Solve tasks in flight and
hands each finished part's figures to a callback. When a Solve fails (its worker died, or
the engine raised), it is retried `executor.retries` times; then the rows to blame are
hunted down with probes (the range's rows in halves, solved without writing, halving again
where the failure is) until each culprit is a single row, and the part is written with
those rows as `error`. A worker killed for a silence while it read or wrote (a store that
stopped answering) blames no row: its task is tried again, and the run fails (to be
resumed) when that keeps happening. Failures that no retry can mend (an input that
changed, a write the store refused) end the run at once.

On an executor whose round trip is dear (Dask: some 10 ms of CPU across client, scheduler
and worker) consecutive ranges go several to a task, fewer as the end nears, one each at
the end (guided self-scheduling: the 41 ranges of a 2M-row file go in 14 tasks on 2
workers). A Bundle that fails is tried again range by range, so all of the above holds.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pipeline.errors import InputError, RunFailed, WorkerLost
from pipeline.execute.local import Executor
from pipeline.job.tasks import Bundle, Figures, Solve

log = logging.getLogger("pipeline.schedule")

FATAL = (RunFailed, InputError)
IN_FLIGHT_PER_WORKER = 2  # tasks handed out per worker: one running, one waiting
GUIDE = 2  # a Bundle takes 1/(GUIDE x workers) of the ranges left ...
MAX_BATCH = 8  # ... and at most this many (what a lost worker costs, the progress's steps)


def _outcome(executor: Executor, fut, solving: bool = True):
    """(result, None, False) or (None, the failure as a line, whether it was the storage's
    silence, not the rows'); fatal failures are raised: an input found unusable before any
    row is solved (planning, spilling) as InputError (exit 2, as at the start), any other
    as RunFailed."""
    try:
        return executor.result(fut), None, False
    except WorkerLost as exc:
        return None, str(exc), exc.storage
    except InputError as exc:
        raise (RunFailed if solving else InputError)(str(exc)) from None
    except FATAL as exc:  # (its own kind kept: InputChanged is told apart by its callers)
        raise (type(exc) if isinstance(exc, RunFailed) else RunFailed)(str(exc)) from None
    except Exception as exc:  # the task's own failure: the engine, a bug
        return None, f"{type(exc).__name__}: {exc}", False


def run_all(executor: Executor, tasks: list, helper: Callable | None = None) -> list:
    """The results of every task, in order; a bounded number in flight (a wait looks at
    every future in flight, and a plan may hold thousands of ranges).

    While no worker is ready (the pool or the Dask client starting up), this process runs
    `helper` on the waiting tasks, from the last one back: its result, or None for a task
    it leaves to the workers. It hands the workers none until one of them is ready (or
    `helper` has declined every task left): a task handed over would wait, and we for it.
    """
    results: list = [None] * len(tasks)
    attempts = [0] * len(tasks)
    waiting = deque(range(len(tasks)))
    declined: set[int] = set()
    in_flight: dict = {}
    limit = executor.workers * IN_FLIGHT_PER_WORKER
    while waiting or in_flight:
        if (helper is not None and waiting and waiting[-1] not in declined
                and executor.warming()):
            i = waiting.pop()
            value = helper(tasks[i])
            if value is None:
                declined.add(i)
                waiting.appendleft(i)  # so the next from the back is another one
            else:
                results[i] = value
            continue
        while waiting and len(in_flight) < limit:
            i = waiting.popleft()
            in_flight[executor.submit(tasks[i])] = i
        for fut in executor.wait(list(in_flight)):
            i = in_flight.pop(fut)
            value, failure, _ = _outcome(executor, fut, solving=False)
            if failure is None:
                results[i] = value
                continue
            attempts[i] += 1
            if attempts[i] > max(executor.retries, 1):
                raise RunFailed(f"a planning task keeps failing: {failure}")
            log.warning("planning task failed (%s); retrying", failure)
            waiting.appendleft(i)
    return results


@dataclass
class _Hunt:
    """The search for the rows of one part that make its task fail."""

    task: Solve
    why: str
    windows: list[tuple[int, int, int]] = field(default_factory=list)  # (lo, hi, depth)
    poisoned: dict[int, str] = field(default_factory=dict)
    probes: int = 0  # in flight
    finals: int = 0  # final writes tried
    windows_at: dict[int, list] = field(default_factory=dict)  # depth -> windows probed
    failed_at: dict[int, int] = field(default_factory=dict)  # depth -> of which failed
    pervasive: bool = False  # every window of a deep enough level failed: not rows' fault


# A level of GIVE_UP windows or more whose every probe failed ends a hunt: no few rows are
# to blame (rows that fail whatever they hold: the input's shape, or a bug), so the rows of
# those windows become `error` after some 4 x GIVE_UP probes, not after one per row.
GIVE_UP = 8


def batch_size(executor: Executor, left: int) -> int:
    """How many of the `left` ranges the next task takes (1 unless `executor.batches`)."""
    if not executor.batches:
        return 1
    return max(1, min(MAX_BATCH, left // (GUIDE * executor.workers)))


def solve_all(executor: Executor, tasks: list[Solve], max_in_flight: int,
              on_done: Callable[[Figures], None]) -> None:
    """Solve every range; call on_done with each written part's figures."""
    in_flight: dict = {}  # future -> (task, kind): "solve", "batch", "probe" or "final"
    attempts: dict[int, int] = {}
    silences: dict[int, int] = {}  # part -> its tasks killed for a silence in reading/writing
    hunts: dict[int, _Hunt] = {}
    ready: list[tuple[Solve, str]] = []  # retries, probes and final writes to submit first
    waiting = deque(tasks)

    def submit(task: Solve | Bundle, kind: str) -> None:
        in_flight[executor.submit(task)] = (task, kind)

    def submit_next() -> None:
        size = batch_size(executor, len(waiting))
        if size == 1:
            submit(waiting.popleft(), "solve")
        else:
            submit(Bundle(tuple(waiting.popleft() for _ in range(size))), "batch")

    def start_hunt(task: Solve, why: str) -> None:
        n = task.rows
        log.warning("%s keeps failing (%s); looking for the rows to blame", task, why,
                    extra={"part": task.part})
        hunt = hunts[task.part] = _Hunt(task, why)
        if n <= 1:
            hunt.poisoned = {0: f"solver failed: {why}"} if n == 1 else {}
            finish_hunt(hunt)
            return
        hunt.windows = [(0, n // 2, 1), (n // 2, n, 1)]
        probe_more(hunt)

    def probe_more(hunt: _Hunt) -> None:
        while hunt.windows:
            lo, hi, depth = hunt.windows.pop()
            probe = replace(hunt.task, window=(lo, hi),
                            poisoned=tuple(sorted(hunt.poisoned.items())))
            ready.append((probe, f"probe{depth}"))
            hunt.probes += 1
            hunt.windows_at.setdefault(depth, []).append((lo, hi))

    def finish_hunt(hunt: _Hunt) -> None:
        hunt.finals += 1
        if hunt.finals > max(executor.retries, 1) + 1:
            raise RunFailed(f"{hunt.task} keeps failing even without the rows to blame "
                            f"({hunt.why})")
        final = replace(hunt.task, poisoned=tuple(sorted(hunt.poisoned.items())))
        ready.append((final, "final"))

    def failed(task: Solve, kind: str, why: str) -> None:
        part = task.part
        if kind == "solve":
            attempts[part] = attempts.get(part, 0) + 1
            if attempts[part] <= executor.retries:
                log.warning("%s failed (%s); retrying", task, why, extra={"part": part})
                ready.append((task, "solve"))
            else:
                start_hunt(task, why)
            return
        hunt = hunts[part]
        if kind == "final":
            hunt.why = why
            finish_hunt(hunt)
            return
        hunt.probes -= 1
        lo, hi = task.window
        depth = int(kind[len("probe"):])
        hunt.failed_at[depth] = hunt.failed_at.get(depth, 0) + 1
        if hunt.pervasive:
            pass  # given up already: the probes still out only come back
        elif (len(hunt.windows_at[depth]) >= GIVE_UP
              and hunt.failed_at[depth] == len(hunt.windows_at[depth])):
            hunt.pervasive = True
            hunt.windows.clear()
            rows = sorted({i for a, b in hunt.windows_at[depth] for i in range(a, b)})
            log.error("%s fails whatever rows it holds (%s); %d of its rows are marked error",
                      task, why, len(rows), extra={"part": part})
            hunt.poisoned.update({i: f"solver failed on every piece of its range ({why})"
                                  for i in rows})
        elif hi - lo == 1:
            source, row = task.locate(lo)
            log.error("%s row %d: %s; marked error", source, row, why, extra={"part": part})
            hunt.poisoned[lo] = f"solver failed: {why}"
        else:
            mid = (lo + hi) // 2
            hunt.windows += [(lo, mid, depth + 1), (mid, hi, depth + 1)]
            probe_more(hunt)
        if hunt.probes == 0:
            finish_hunt(hunt)

    while True:
        while ready and len(in_flight) < max_in_flight + 2:
            submit(*ready.pop(0))
        while waiting and len(in_flight) < max_in_flight:
            submit_next()
        if not in_flight:
            if not waiting and not ready:
                return
            continue
        for fut in executor.wait(list(in_flight)):
            task, kind = in_flight.pop(fut)
            value, why, storage = _outcome(executor, fut)
            if storage and kind != "batch":  # the store's silence: no row is to blame
                silences[task.part] = silences.get(task.part, 0) + 1
                if silences[task.part] > max(executor.retries, 1):
                    raise RunFailed(f"{task}: its input or output did not answer, "
                                    f"{silences[task.part]} times ({why}); once it does, "
                                    "the same command resumes the run")
                log.warning("%s: %s; tried again", task, why, extra={"part": task.part})
                ready.append((task, kind))
                continue
            if kind == "batch":
                if why is None:
                    for figures in value:
                        on_done(figures)
                else:  # which range failed is for each alone to tell (and to retry)
                    log.warning("%d ranges from %s failed together (%s); each goes again "
                                "alone", len(task.tasks), task.tasks[0], why)
                    ready.extend((t, "solve") for t in task.tasks)
            elif why is not None:
                failed(task, kind, why)
            elif kind.startswith("probe"):
                hunt = hunts[task.part]
                hunt.probes -= 1
                if hunt.probes == 0:
                    finish_hunt(hunt)
            else:
                hunts.pop(task.part, None)
                on_done(value)
