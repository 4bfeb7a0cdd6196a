"""pipeline.schedule: retries, the hunt for the rows to blame, fatal failures.

The tasks are real (pipeline.worker runs them, reading a real file and writing real parts);
the executor is scripted: it runs them here, and a task that reaches the poison puzzle
either raises (the engine failed) or is reported lost (its worker died).
"""

from __future__ import annotations

import concurrent.futures as cf

import polars as pl
import pytest
from conftest import LEET, PUZZLE, SOLUTION, InlineExecutor

from pipeline import plan, schedule, schema, worker
from pipeline.errors import InputChanged, RunFailed, WorkerLost
from pipeline.folder import RunFolder
from pipeline.storage import Location
from pipeline.tasks import Solve

POISON = SOLUTION  # a distinct puzzle (a full grid): the fault hook fires on it


class Scripted(InlineExecutor):
    """Runs tasks inline; the fault hook's RuntimeError becomes a lost worker ('crash')."""

    def __init__(self, how: str, retries: int = 2):
        self.how = how
        self.retries = retries
        self.kinds: list[str] = []

    def submit(self, task):
        self.kinds.append("probe" if task.window else "final" if task.poisoned else "solve")
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
    inp = plan.open_input(str(path), 0, None, None, schema.OURS)
    plan.plan_inputs([inp], InlineExecutor(), 1000)
    inp.range_bytes = range_bytes
    plan.plan_inputs([inp], InlineExecutor(), 1000,
                     {"definition": {"inputs": [{**inp.describe(), "range_bytes": range_bytes}]}})
    folder = RunFolder(Location(str(tmp_path / "out")))
    folder.open()
    folder.results.makedirs()
    tasks = [Solve(r, inp.location, inp.layout, inp.source, folder.results, (), False, 2, False)
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
    schedule.solve_all(executor, iter(tasks), 3, done.append)
    assert sorted(f.part for f in done) == [t.range.part for t in tasks]
    frame = _results(folder)
    assert frame["row"].to_list() == list(range(40))
    errors = frame.filter(pl.col("status") == "error")
    assert errors["row"].to_list() == [at]
    assert errors["reason"][0].startswith("solver failed: ")
    assert (frame.filter(pl.col("row") != at)["status"] == "solved").all()
    assert executor.kinds.count("solve") == len(tasks) + 2  # the poisoned range, twice more
    assert executor.kinds.count("final") == 1 and executor.kinds.count("probe") >= 2


def test_two_poison_rows_in_one_range(tmp_path, monkeypatch):
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    puzzles = [PUZZLE] * 30
    puzzles[4] = puzzles[21] = POISON
    tasks, folder = _solve_tasks(tmp_path, puzzles, 82 * 100)
    assert len(tasks) == 1
    schedule.solve_all(Scripted("crash", retries=0), iter(tasks), 2, lambda f: None)
    frame = _results(folder)
    assert frame.filter(pl.col("status") == "error")["row"].to_list() == [4, 21]


def test_no_poison_no_retries(tmp_path):
    tasks, folder = _solve_tasks(tmp_path, [PUZZLE, LEET] * 20, 82 * 7)
    executor = Scripted("crash")
    figures = []
    schedule.solve_all(executor, iter(tasks), 2, figures.append)
    assert executor.kinds == ["solve"] * len(tasks) and len(tasks) > 3
    assert sum(f.rows for f in figures) == 40 == _results(folder).height


def test_a_single_row_range_that_fails_is_an_error_row(tmp_path, monkeypatch):
    monkeypatch.setenv(worker.FAULT_ENV, f"raise:{POISON}")
    tasks, folder = _solve_tasks(tmp_path, [POISON, PUZZLE], 10)
    schedule.solve_all(Scripted("raise"), iter(tasks), 2, lambda f: None)
    assert _results(folder)["status"].to_list() == ["error", "solved"]


def test_an_input_changed_under_the_run_ends_it(tmp_path):
    tasks, folder = _solve_tasks(tmp_path, [PUZZLE] * 10, 82 * 3)
    path = tasks[0].location.path
    data = open(path, "rb").read()
    open(path, "wb").write(data.replace(PUZZLE.encode(), LEET.encode(), 1))
    with pytest.raises(RunFailed, match="changed while the run read it"):
        schedule.solve_all(Scripted("raise"), iter(tasks), 2, lambda f: None)
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
