"""pipeline.executors.schedule against a scripted executor: retries, splitting, crash blame.

The scripted pool breaks the way a process pool does: when a worker dies, every task in
flight on the pool is lost with it. These tests pin down who gets blamed.
"""

from __future__ import annotations

import concurrent.futures as cf
import concurrent.futures.process  # noqa: F401  (cf.process)

import numpy as np
import pytest
from conftest import LEET, PUZZLE, SOLUTION

from pipeline import executors
from pipeline.executors import Done, Executor, Task, WorkerLost, schedule
from pipeline.solver import Status

POISON = SOLUTION  # any distinct, valid puzzle


def make_task(chunk_id: int, puzzles: list[str]) -> Task:
    raw = [p.encode() for p in puzzles]
    offsets = np.cumsum([0] + [len(r) for r in raw]).astype(np.int64)
    data = np.frombuffer(b"".join(raw), dtype=np.uint8).copy()
    return Task(chunk_id, 0, offsets, data, None, {}, 2, False)


class ScriptedPool(Executor):
    """Runs tasks at wait(); a task holding POISON kills the pool ('crash') or raises."""

    def __init__(self, how: str = "crash", workers: int = 2):
        self.how = how
        self.workers = workers
        self.in_flight: dict[cf.Future, Task] = {}
        self.recoveries = 0
        self.max_together = 0
        self.runs: list[tuple[int, int, int, int]] = []  # (chunk, first, len, together)

    def submit(self, task: Task):
        fut: cf.Future = cf.Future()
        self.in_flight[fut] = task
        return fut

    def wait(self, futures, timeout=None):
        futures = list(futures)
        tasks = [self.in_flight.pop(f) for f in futures if f in self.in_flight]
        self.max_together = max(self.max_together, len(tasks))
        poisoned = any(POISON.encode() in t.data.tobytes() for t in tasks)
        for f, t in zip([f for f in futures if not f.done()], tasks, strict=True):
            self.runs.append((t.chunk_id, t.first, len(t), len(tasks)))
            if poisoned and self.how == "crash":
                f.set_exception(cf.process.BrokenProcessPool("worker died"))
            elif self.how == "raise" and POISON.encode() in t.data.tobytes():
                f.set_exception(RuntimeError("injected"))
            else:
                f.set_result(executors.run_task(t))
        return set(futures)

    def result(self, future) -> Done:
        try:
            return future.result()
        except cf.process.BrokenProcessPool as exc:
            raise WorkerLost(str(exc)) from None

    def recover(self) -> None:
        self.recoveries += 1


def run_schedule(pool: ScriptedPool, chunks: list[list[str]], max_in_flight: int = 4):
    got: dict[int, list[str]] = {}

    def on_done(number, outcome, pieces):
        got[number] = [Status(int(s)).label for s in outcome.status]
        assert len(outcome) == len(chunks[number])

    schedule(pool, iter([make_task(i, c) for i, c in enumerate(chunks)]), max_in_flight,
             on_done)
    return got


@pytest.mark.parametrize("how", ["crash", "raise"])
@pytest.mark.parametrize("at", [0, 5, 7])
def test_only_the_poison_row_is_an_error(how, at):
    chunks = [[PUZZLE] * 8 for _ in range(6)]
    chunks[2][at] = POISON
    pool = ScriptedPool(how)
    got = run_schedule(pool, chunks)
    assert sorted(got) == list(range(6))
    for i, statuses in got.items():
        want = ["solved"] * 8
        if i == 2:
            want[at] = "error"
        assert statuses == want, (i, statuses)


def test_suspects_run_alone_and_innocents_are_not_charged():
    chunks = [[PUZZLE, LEET] for _ in range(5)]
    chunks[0][1] = POISON
    pool = ScriptedPool("crash")
    run_schedule(pool, chunks)
    # After the first break, every retried suspect ran with nothing else in flight.
    first_break = next(i for i, r in enumerate(pool.runs) if r[3] > 1)
    assert pool.recoveries >= 1
    for chunk, _first, _n, together in pool.runs[first_break + 4:]:
        if chunk == 0:
            assert together == 1


def test_no_poison_no_retries():
    pool = ScriptedPool("crash")
    got = run_schedule(pool, [[PUZZLE] * 3 for _ in range(7)], max_in_flight=3)
    assert all(s == ["solved"] * 3 for s in got.values())
    assert pool.recoveries == 0 and pool.max_together <= 3


def test_single_row_poison_chunk():
    got = run_schedule(ScriptedPool("crash"), [[POISON], [PUZZLE]])
    assert got == {0: ["error"], 1: ["solved"]}


def test_error_outcome_keeps_reader_malformed_rows():
    task = make_task(0, [PUZZLE, "bad"])
    task.malformed = {1: "ragged line: 2 fields, expected 3"}
    out = executors._error_outcome(task, "boom")
    assert [Status(int(s)).label for s in out.status] == ["error", "malformed"]
    assert out.reasons == {0: "solver failed: boom", 1: "ragged line: 2 fields, expected 3"}


def test_task_split_keeps_rows_and_malformed():
    task = make_task(3, [PUZZLE, LEET, "x", SOLUTION, PUZZLE])
    task.malformed = {2: "why", 4: "why4"}
    a, b = task.split()
    assert (len(a), len(b)) == (2, 3) and (a.first, b.first) == (0, 2)
    assert a.malformed == {} and b.malformed == {0: "why", 2: "why4"}
    assert bytes(b.data[b.offsets[0]:b.offsets[1]]) == b"x"
    c, d = b.split()
    assert (c.first, d.first) == (2, 3)
