"""pipeline.execute.local: the local pool of forkserver workers, with real processes.

Fork safety (the forkserver runs no thread when it forks), one pipe per worker (a death
loses only its own task), nothing inherited from the parent (not the folder's lock), and a
pool that stops trying when workers die as they start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import PUZZLE

from pipeline.errors import RunFailed, WorkerLost
from pipeline.execute.local import LocalExecutor
from pipeline.io import inputs, schema
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location
from pipeline.job import RUNNER, plan
from pipeline.job.tasks import Solve

pytestmark = pytest.mark.slow


@pytest.fixture
def pool():
    ex = LocalExecutor(2, RUNNER)
    ex.ready()
    yield ex
    ex.close()


def _solve_task(tmp_path, n: int = 200) -> Solve:
    from conftest import InlineExecutor

    path = tmp_path / "in.txt"
    path.write_text((PUZZLE + "\n") * n)
    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    plan.plan_inputs([inp], InlineExecutor(), 10**6)
    results = Location(str(tmp_path / "out" / "results"))
    results.makedirs()
    return Solve(inp.ranges[0], inp.location, inp.shape, inp.source, results, (), False, 2,
                 False)


def test_the_forkserver_runs_no_thread_and_workers_are_named(pool):
    workers = [psutil.Process(pid) for pid in pool.pids()]
    assert {w.name() for w in workers} == {"pipeline-worker"}
    forkserver = workers[0].parent()
    assert forkserver.pid != os.getpid() and forkserver.num_threads() == 1
    assert all(w.num_threads() == 1 for w in workers)


def test_a_dead_worker_loses_only_its_own_task(pool, tmp_path):
    task = _solve_task(tmp_path)
    victim, _ = pool.pids()
    a, b = pool.submit(task), pool.submit(task)
    os.kill(victim, signal.SIGKILL)
    deadline = time.time() + 60
    while not (a.done() and b.done()) and time.time() < deadline:
        pool.wait([f for f in (a, b) if not f.done()], timeout=5)
    assert a.done() and b.done()
    outcomes = []
    for fut in (a, b):
        try:
            outcomes.append(pool.result(fut).rows)
        except WorkerLost as exc:
            outcomes.append(str(exc))
    assert 200 in outcomes  # the other worker's task finished
    lost = [o for o in outcomes if isinstance(o, str)]
    assert all(f"worker process {victim} died (killed by SIGKILL)" in o for o in lost)
    assert len(pool.pids()) == 2 and victim not in pool.pids()  # replaced
    again = pool.submit(task)
    assert pool.wait([again], timeout=60) == {again} and pool.result(again).rows == 200


def test_workers_do_not_hold_the_folders_lock(tmp_path):
    folder = RunFolder(Location(str(tmp_path / "out")))
    folder.open()
    folder.lock("this test")
    ex = LocalExecutor(1, RUNNER)
    try:
        ex.ready()
        lock = str(tmp_path / "out" / ".lock")
        for pid in ex.pids():
            fds = os.listdir(f"/proc/{pid}/fd")
            assert all(os.path.realpath(f"/proc/{pid}/fd/{fd}") != lock for fd in fds)
    finally:
        ex.close()
        folder.unlock()


def test_workers_that_die_as_they_start_end_the_run(monkeypatch):
    from pipeline.execute import local as executors

    monkeypatch.setattr(executors, "_worker_main", _die_at_once)
    ex = LocalExecutor(1, RUNNER)
    try:
        with pytest.raises(RunFailed, match="die as they start"):
            ex.ready()
    finally:
        ex.close()


def _die_at_once(conn, level, hooks) -> None:
    os._exit(7)


def test_tasks_given_while_the_pool_starts_run_once_it_is_up(tmp_path):
    """The workers start from a thread (a start waits for the forkserver's imports): the
    pool takes tasks at once, says it is warming until a worker is ready, and then runs
    them."""
    task = _solve_task(tmp_path, n=50)
    ex = LocalExecutor(2, RUNNER)
    try:
        futures = [ex.submit(task) for _ in range(3)]
        deadline = time.time() + 120
        while ex.warming() and time.time() < deadline:
            time.sleep(0.01)
        assert not ex.warming() and len(ex.pids()) == 2
        for f in futures:
            assert ex.wait([f], timeout=60) == {f}
        assert [ex.result(f).rows for f in futures] == [50, 50, 50]
    finally:
        ex.close()


# A run that leaves while the forkserver starts a worker for it: the worker's start request
# is sent (the forkserver forks), then the run ends with the start data cut short.
LEAVE_MID_START = """\
import os, pickle, sys
from multiprocessing import forkserver, spawn
from pipeline.execute.lifecycle import start_forkserver
from pipeline.job import RUNNER

start_forkserver(RUNNER.preload)
from_child, to_child = forkserver.connect_to_new_process([])
forkserver.read_signed(from_child)  # the new process's pid: it is forked
prepared = spawn.get_preparation_data("pipeline-worker")
del prepared["authkey"]  # (pickled only by a real start)
data = pickle.dumps(prepared)
sent = {"nothing": b"", "half": data[: len(data) // 2],
        "a bad one": pickle.dumps({"dir": "/no/such/folder"})}[sys.argv[1]]
os.write(to_child, sent)
os._exit(0)
"""


@pytest.mark.parametrize("sent", ["nothing", "half"])
def test_a_run_leaving_while_a_worker_starts_leaves_nothing_on_stderr(sent):
    """The start cut short, the new process ends without the traceback Python would print
    on the run's stderr (the forkserver's excepthook: execute/forkserved.py)."""
    out = subprocess.run([sys.executable, "-c", LEAVE_MID_START, sent], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0
    assert out.stderr == ""


def test_a_worker_failing_to_start_for_another_reason_still_says_why():
    """Start data that is whole but cannot be used (a folder that is not there) is a real
    failure: its traceback reaches stderr."""
    out = subprocess.run([sys.executable, "-c", LEAVE_MID_START, "a bad one"],
                         capture_output=True, text=True, timeout=120)
    assert "FileNotFoundError" in out.stderr and "/no/such/folder" in out.stderr
