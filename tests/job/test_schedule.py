"""pipeline.job.schedule: retries, the hunt for the rows to blame, fatal failures.

The tasks are real (pipeline.job.worker runs them, reading a real file and writing real parts);
the executor is scripted: it runs them here, and a task that reaches the poison puzzle
either raises (the engine failed) or is reported lost (its worker died). And run_all, which
shares tasks between this process and the workers without losing or repeating one.
"""

from __future__ import annotations

import concurrent.futures as cf

import polars as pl
import pytest
from conftest import LEET, PUZZLE, SOLUTION, InlineExecutor

from pipeline.errors import InputChanged, RunFailed, WorkerLost
from pipeline.io import inputs, schema
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location
from pipeline.job import plan, schedule, worker
from pipeline.job.tasks import Bundle, Solve

POISON = SOLUTION  # a distinct puzzle (a full grid): the fault hook fires on it


class Scripted(InlineExecutor):
    """Runs tasks inline; the fault hook's RuntimeError becomes a lost worker ('crash')."""

    def __init__(self, how: str, retries: int = 2, batches: bool = False):
        self.how = how
        self.retries = retries
        self.batches = batches
        self.kinds: list[str] = []
        self.sizes: list[int] = []  # ranges per task handed out, probes and finals aside

    def submit(self, task):
        if isinstance(task, Bundle):
            self.kinds.append("batch")
            self.sizes.append(len(task.tasks))
        else:
            self.kinds.append("probe" if task.window else "final" if task.poisoned else "solve")
            if self.kinds[-1] == "solve":
                self.sizes.append(1)
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(worker.execute(task))
        except RuntimeError as exc:
            fut.set_exception(WorkerLost(f"worker died ({exc})") if self.how == "crash" else exc)
        except Exception as exc:
            fut.set_exception(exc)
        return fut


def _solve_tasks(tmp_path, puzzles: list[str], range_bytes: int) -> tuple[list[Solve], RunFolder]:
    path = tmp_path / "in.txt"
    path.write_text("\n".join(puzzles) + "\n")
    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    plan.plan_inputs([inp], InlineExecutor(), 1000)
    inp.range_bytes = range_bytes
    plan.plan_inputs([inp], InlineExecutor(), 1000,
                     {"definition": {"inputs": [{**inp.describe(), "range_bytes": range_bytes}]}})
    folder = RunFolder(Location(str(tmp_path / "out")))
    folder.open()
    folder.results.makedirs()
    tasks = [Solve(r, inp.location, inp.shape, inp.source, folder.results, (), False, 2, False)
             for r in inp.ranges]
    return tasks, folder


def _results(folder: RunFolder) -> pl.DataFrame:
    return pl.read_parquet(f"{folder.results.path}/*.parquet").sort("row")


@pytest.mark.parametrize("how", ["crash", "raise"])
@pytest.mark.parametrize("at", [0, 13, 39])
def test_only_the_poison_row_is_an_error(tmp_path, monkeypatch, how, at):
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    puzzles = [PUZZLE if i % 2 else LEET for i in range(40)]
    puzzles[at] = POISON
    tasks, folder = _solve_tasks(tmp_path, puzzles, 82 * 10)
    executor = Scripted(how)
    done = []
    schedule.solve_all(executor, tasks, 3, done.append)
    assert sorted(f.part for f in done) == [t.range.part for t in tasks]
    frame = _results(folder)
    assert frame["row"].to_list() == list(range(40))
    errors = frame.filter(pl.col("status") == "error")
    assert errors["row"].to_list() == [at]
    assert errors["reason"][0].startswith("solver failed: ")
    assert (frame.filter(pl.col("row") != at)["status"] == "solved").all()
    assert executor.kinds.count("solve") == len(tasks) + 2  # the poisoned range, twice more
    assert executor.kinds.count("final") == 1 and executor.kinds.count("probe") >= 2


@pytest.mark.parametrize("how", ["crash", "raise"])
@pytest.mark.parametrize("at", [None, 0, 57, 99])
def test_where_a_round_trip_is_dear_ranges_go_several_to_a_task(tmp_path, monkeypatch, how,
                                                                 at):
    """Fewer ranges a task as the end nears, one each at the end, every part written once;
    a Bundle that fails goes again range by range, and the poison row is the only error."""
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    puzzles = [PUZZLE if i % 2 else LEET for i in range(100)]
    if at is not None:
        puzzles[at] = POISON
    tasks, folder = _solve_tasks(tmp_path, puzzles, 82 * 5)
    assert len(tasks) == 20
    executor = Scripted(how, retries=0, batches=True)
    executor.workers = 2
    done = []
    schedule.solve_all(executor, tasks, 4, done.append)
    assert sorted(f.part for f in done) == [t.range.part for t in tasks]
    frame = _results(folder)
    assert frame["row"].to_list() == list(range(100))
    errors = frame.filter(pl.col("status") == "error")["row"].to_list()
    assert errors == ([] if at is None else [at])
    first = executor.sizes[:executor.sizes.index(1)] + [1]
    assert first == sorted(first, reverse=True) and first[0] == 20 // (schedule.GUIDE * 2)
    if at is None:
        assert sum(executor.sizes) == 20 and len(executor.sizes) < 20
        assert executor.sizes[-1] == 1
    else:  # the Bundle that held it failed, and its ranges went again one by one
        held = _batch_holding(executor.sizes, at // 5)
        assert sum(executor.sizes) == 20 + (held if held > 1 else 0)
        assert "probe" in executor.kinds


def _batch_holding(sizes: list[int], index: int) -> int:
    """The size of the task, among the first pass's, that held range `index`."""
    for size in sizes:
        if index < size:
            return size
        index -= size
    raise AssertionError("no task held it")


def test_a_cheap_round_trip_sends_every_range_alone(tmp_path):
    tasks, _ = _solve_tasks(tmp_path, [PUZZLE, LEET] * 20, 82 * 4)
    executor = Scripted("crash")
    executor.workers = 2
    schedule.solve_all(executor, tasks, 4, lambda f: None)
    assert executor.sizes == [1] * len(tasks)


def test_two_poison_rows_in_one_range(tmp_path, monkeypatch):
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    puzzles = [PUZZLE] * 30
    puzzles[4] = puzzles[21] = POISON
    tasks, folder = _solve_tasks(tmp_path, puzzles, 82 * 100)
    assert len(tasks) == 1
    schedule.solve_all(Scripted("crash", retries=0), tasks, 2, lambda f: None)
    frame = _results(folder)
    assert frame.filter(pl.col("status") == "error")["row"].to_list() == [4, 21]


def test_no_poison_no_retries(tmp_path):
    tasks, folder = _solve_tasks(tmp_path, [PUZZLE, LEET] * 20, 82 * 7)
    executor = Scripted("crash")
    figures = []
    schedule.solve_all(executor, tasks, 2, figures.append)
    assert executor.kinds == ["solve"] * len(tasks) and len(tasks) > 3
    assert sum(f.rows for f in figures) == 40 == _results(folder).height


def test_a_single_row_range_that_fails_is_an_error_row(tmp_path, monkeypatch):
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    tasks, folder = _solve_tasks(tmp_path, [POISON, PUZZLE], 10)
    schedule.solve_all(Scripted("raise"), tasks, 2, lambda f: None)
    assert _results(folder)["status"].to_list() == ["error", "solved"]


def test_an_input_changed_under_the_run_ends_it(tmp_path):
    tasks, folder = _solve_tasks(tmp_path, [PUZZLE] * 10, 82 * 3)
    path = tasks[0].location.path
    data = open(path, "rb").read()
    open(path, "wb").write(data.replace(PUZZLE.encode(), LEET.encode(), 1))
    with pytest.raises(RunFailed, match="changed while the run read it"):
        schedule.solve_all(Scripted("raise"), tasks, 2, lambda f: None)
    with pytest.raises(InputChanged):
        worker.execute(tasks[0])


def test_planning_tasks_are_retried_when_a_worker_is_lost():
    calls = []

    class Flaky(InlineExecutor):
        def submit(self, task):
            calls.append(task)
            fut: cf.Future = cf.Future()
            if len(calls) == 1:
                fut.set_exception(WorkerLost("died"))
            else:
                fut.set_result(task)
            return fut

    assert schedule.run_all(Flaky(), ["a", "b"]) == ["a", "b"]
    assert calls == ["a", "b", "a"]


class Warming(InlineExecutor):
    """Inline, but no worker is ready for the first `calls` questions."""

    def __init__(self, calls: int):
        self.calls = calls
        self.ran: list = []

    def warming(self) -> bool:
        self.calls -= 1
        return self.calls >= 0

    def submit(self, task):
        self.ran.append(task)
        fut: cf.Future = cf.Future()
        fut.set_result(("worker", task))
        return fut


@pytest.mark.parametrize("calls", [0, 3, 100])
def test_run_all_shares_the_tasks_with_this_process(calls):
    tasks = list(range(20))
    here: list = []

    def helper(task):
        here.append(task)
        return None if task % 3 == 0 else ("here", task)  # multiples of 3: for a worker

    ex = Warming(calls)
    results = schedule.run_all(ex, tasks, helper=helper)
    assert [r[1] for r in results] == tasks  # each result in its place
    done_here = {r[1] for r in results if r[0] == "here"}
    assert sorted(done_here | set(ex.ran)) == tasks and not done_here & set(ex.ran)
    assert all(t % 3 for t in done_here)
    assert here == sorted(here, reverse=True)  # from the back, each looked at once
    if calls == 0:
        assert not here
    if calls == 100:  # warming throughout: only what this process declined was handed over
        assert sorted(ex.ran) == [t for t in tasks if t % 3 == 0]


def test_a_range_that_fails_whatever_its_rows_is_not_hunted_row_by_row(tmp_path, monkeypatch):
    """When every piece of a range fails (the input's shape, a bug: not a few rows), the
    hunt stops at a level of eight pieces that all failed: their rows become `error` after
    some 30 probes (the levels of 2, 4 and 8, and the next level's already out), not a
    probe per row (a real data set would take hours)."""
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    tasks, folder = _solve_tasks(tmp_path, [POISON] * 200, 82 * 1000)
    assert len(tasks) == 1
    executor = Scripted("raise", retries=0)
    schedule.solve_all(executor, tasks, 2, lambda f: None)
    frame = _results(folder)
    assert frame.height == 200 and (frame["status"] == "error").all()
    assert frame["reason"].str.contains("every piece of its range").all()
    assert executor.kinds.count("probe") <= 2 + 4 + 8 + 16
