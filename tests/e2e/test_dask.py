"""The Dask executor: a local cluster, a real `dask scheduler` + `dask worker` cluster on
loopback, and the same results as the local process pool, row for row.

Every process a test starts is stopped by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from conftest import RAW, REPO

pytest.importorskip("distributed")

from pipeline.errors import WorkerLost  # noqa: E402
from pipeline.job import RUNNER  # noqa: E402
from pipeline.job.worker import FAULT_ENV  # noqa: E402

CURATED = RAW / "kaggle_radcliffe_3m" / "sudoku_curated_5000.csv"
HARD = RAW / "tdoku_benchmark_sets" / "puzzles5_forum_hardest_1905_11+"
BIN = Path(sys.executable).parent
PIPELINE = BIN / "pipeline" if (BIN / "pipeline").exists() else REPO / ".venv/bin/pipeline"
DASK = BIN / "dask" if (BIN / "dask").exists() else REPO / ".venv/bin/dask"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not RAW.is_dir(), reason=f"shared data absent ({RAW})"),
    pytest.mark.skipif(not DASK.exists(), reason=f"no dask command at {DASK}"),
]

N_GOOD = 400  # rows of the curated set in the mixed input
FAULT_ROW = 123  # the row whose puzzle makes the worker raise (PIPELINE_FAULT_INJECT)
RUN_FLAGS = ["--workers", "2", "--chunk-size", "40", "--fail-on", "error,invalid", "--json",
             "--quiet"]


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIPELINE_", "DASK_"))}
    env.update(extra)
    return env


def _cli(args: list[str], env: dict[str, str], timeout: float = 150):
    proc = subprocess.run([str(PIPELINE), "run", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO)
    summary = None
    if proc.stdout.strip():
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return SimpleNamespace(code=proc.returncode, summary=summary, stderr=proc.stderr)


def _results(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "results" / "*.parquet").sort("source", "row")


def _stat_counts(out: Path) -> pl.DataFrame:
    cols = ["scope", "source", "rows", "solved", "multiple", "unsolvable", "invalid",
            "malformed", "error"]
    return pl.read_parquet(out / "stats.parquet").select(cols).sort("scope", "source")


def _assert_same_run(ours: SimpleNamespace, out: Path, base: SimpleNamespace,
                     base_out: Path, ignore: tuple[str, ...] = ("solve_us",)) -> None:
    """Same exit code, counts, per-file stats counts and rows (every column but timings)."""
    assert ours.code == base.code, ours.stderr
    assert ours.summary["counts"] == base.summary["counts"]
    assert ours.summary["rows"] == base.summary["rows"]
    a, b = _results(out), _results(base_out)
    assert a.height == a.select("source", "row").unique().height  # each row once
    assert a.drop(*ignore).equals(b.drop(*ignore))
    assert _stat_counts(out).equals(_stat_counts(base_out))
    solved = a.filter(pl.col("status") == "solved")
    assert solved["solve_us"].null_count() == 0  # the workers' cycle rate came back


def _solve_tasks(path: Path, range_bytes: int) -> list:
    """The Solve tasks of a text file, planned here (each a description of a byte range)."""
    from conftest import InlineExecutor

    from pipeline.io import inputs, schema
    from pipeline.io.storage import Location
    from pipeline.job import plan
    from pipeline.job.tasks import Solve

    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    plan.plan_inputs([inp], InlineExecutor(), 1000)
    inp.range_bytes = range_bytes
    plan.plan_inputs([inp], InlineExecutor(), 1000,
                     {"definition": {"inputs": [{**inp.describe(), "range_bytes": range_bytes}]}})
    results = Location(str(path.parent / "out" / "results"))
    results.makedirs()
    return [Solve(r, inp.location, inp.shape, inp.source, results, (), False, 2, True)
            for r in inp.ranges]


def _hard_slice(data_dir: Path, name: str, n: int) -> Path:
    """The first n puzzles of the forum's hardest (skip the test where that set is absent)."""
    if not HARD.exists():
        pytest.skip(f"data set {HARD} is absent")
    path = data_dir / name
    with open(HARD) as src, open(path, "w") as dst:
        dst.writelines(line for _, line in zip(range(n), src, strict=False))
    return path


def _bare(role: str) -> list[str]:
    """A Dask scheduler or worker command that cannot import this project (as on a
    cluster where it is not installed everywhere); a worker without a nanny, whose fresh
    process would import it again."""
    return [sys.executable, "-c", "import sys; sys.modules['pipeline'] = None; "
            f"from distributed.cli.dask_{role} import main; main()"]


def _private_cluster(log: Path, cwd: Path, names: list[str], procs: list[subprocess.Popen],
                     worker_env: dict[str, str] | None = None, bare: str = ""
                     ) -> tuple[str, dict]:
    """A scheduler and one single-threaded worker per name, each in a session of its own
    (appended to `procs`, for _stop); the address and the workers' pids by address.
    `bare`: "scheduler" or "worker", that one cannot import this project."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = _bare("scheduler") if bare == "scheduler" else [str(DASK), "scheduler"]
    worker = _bare("worker") + ["--no-nanny"] if bare == "worker" else [str(DASK), "worker"]
    with open(log, "w") as logs:
        procs.append(subprocess.Popen(
            [*scheduler, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=logs, stderr=logs, env=_env(), cwd=cwd, start_new_session=True))
        for name in names:
            procs.append(subprocess.Popen(
                [*worker, address, "--nthreads", "1", "--host", "127.0.0.1",
                 "--no-dashboard", "--name", name], stdout=logs, stderr=logs,
                env=worker_env or _env(), cwd=cwd, start_new_session=True))
    with Client(address, timeout=60, set_as_default=False) as c:
        c.wait_for_workers(len(names), timeout=90)
        pids = c.run(os.getpid)
    return address, pids


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each started process group (a worker's nanny and its child), then SIGKILL."""
    for p in reversed(procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)


# --------------------------------------------------------------------------------------
# inputs and the local-pool baseline
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dask")


@pytest.fixture(scope="module")
def mixed(data_dir) -> SimpleNamespace:
    """Curated puzzles plus one row of every other status and a wrong expected solution."""
    if not CURATED.exists():
        pytest.skip(f"data set {CURATED} is absent")
    with open(CURATED, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [r for _, r in zip(range(N_GOOD), reader, strict=False)]
    width = len(header)
    wrong = list(rows[7])
    wrong[1] = wrong[1][::-1]  # an expected solution that is not the solution
    extra = [
        ["12345"],  # malformed: too short
        ["11" + "." * 79],  # invalid: a digit twice in a row
        ["12345678." + "........9" + "." * 63],  # unsolvable: r1c9 has no digit left
        ["." * 81],  # multiple solutions
        wrong,
    ]
    path = data_dir / "mixed.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows + [e + [""] * (width - len(e)) for e in extra]:
            w.writerow(r)
    return SimpleNamespace(path=path, fault=f"raise:{rows[FAULT_ROW][0]}",
                           rows=len(rows) + len(extra))


@pytest.fixture(scope="module")
def baseline(mixed, data_dir) -> SimpleNamespace:
    out = data_dir / "local"
    run = _cli(["-i", str(mixed.path), "-o", str(out), "--executor", "local", *RUN_FLAGS],
               _env(**{FAULT_ENV: mixed.fault}))
    assert run.code == 1, run.stderr  # --fail-on error,invalid
    counts = run.summary["counts"]
    assert counts["error"] == 1 and counts["invalid"] == 1 and counts["malformed"] == 1
    assert counts["unsolvable"] == 1 and counts["multiple"] == 1
    assert run.summary["rows"] == mixed.rows
    run.out = out
    return run


# --------------------------------------------------------------------------------------
# a cluster of real `dask scheduler` / `dask worker` processes on loopback
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(mixed, data_dir, s3_server):
    """A scheduler and two workers, started from another folder than the client's, with
    the S3 server's environment (workers read inputs and write parts themselves)."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    logs = open(data_dir / "cluster.log", "w")  # noqa: SIM115
    env = _env(**{FAULT_ENV: mixed.fault}, **s3_server)  # the workers read the fault hook

    def start(*args: str) -> None:
        procs.append(subprocess.Popen([str(DASK), *args], stdout=logs, stderr=logs, env=env,
                                      cwd=data_dir, start_new_session=True))

    client = None
    try:
        start("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        for i in range(2):
            start("worker", address, "--nthreads", "1", "--nworkers", "1", "--host",
                  "127.0.0.1", "--no-dashboard", "--name", f"w{i}")
        client = Client(address, timeout=60, set_as_default=False)
        client.wait_for_workers(2, timeout=90)
        yield SimpleNamespace(address=address, client=client, procs=procs)
    finally:
        if client is not None:
            client.close()
        _stop(procs)
        logs.close()


# --------------------------------------------------------------------------------------
# the executor itself, in process, on a local cluster
# --------------------------------------------------------------------------------------


async def _heartbeat_to_nowhere(dask_worker=None, port: int = 0) -> None:
    """On a worker: one real heartbeat to a port where no scheduler listens, then an error."""
    import logging

    import dask

    scheduler = dask_worker.scheduler
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
            dask_worker.scheduler = dask_worker.rpc(f"tcp://127.0.0.1:{port}")
            await dask_worker.heartbeat()
    finally:
        dask_worker.scheduler = scheduler
    logging.getLogger("distributed.worker").error("an error of the worker's own")


def test_a_local_workers_failed_heartbeat_is_not_printed(capfd):
    """A local cluster's scheduler may close while a worker still sends a heartbeat (a stop
    under load): the worker's report of it would follow the stop's one line. Its other
    errors still reach stderr."""
    from pipeline.execute.dask_cluster import DaskExecutor

    ex = DaskExecutor(None, 1, RUNNER)
    try:
        ex.ready()
        ex._client.run(_heartbeat_to_nowhere, port=_free_port())
    finally:
        ex.close()
    stderr = capfd.readouterr().err
    assert "an error of the worker's own" in stderr
    assert "heartbeat" not in stderr, stderr


def test_executor_on_local_cluster(monkeypatch, tmp_path):
    """Parts written by worker processes, WorkerLost when Dask gives up, the cluster closed."""
    import dask

    from pipeline.execute.dask_cluster import DaskExecutor
    from pipeline.sudoku import engine

    if not CURATED.exists():
        pytest.skip(f"data set {CURATED} is absent")
    good = pl.read_csv(CURATED, n_rows=30, infer_schema=False)["puzzle"].to_list()
    poison = good[-1]
    (tmp_path / "good.txt").write_text("\n".join(good[:20]) + "\n")
    (tmp_path / "bad.txt").write_text(f"{good[0]}\n{poison}\n")
    tasks = _solve_tasks(tmp_path / "good.txt", 82 * 10)
    bad_task = _solve_tasks(tmp_path / "bad.txt", 1000)[0]
    assert [t.range.rows for t in tasks] == [10, 10]
    monkeypatch.setenv(FAULT_ENV, f"crash:{poison}")  # workers inherit it when spawned
    # Dask gives up at the first worker death here (its default is 3 retries), so the
    # poison task reaches KilledWorker quickly.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        ex = DaskExecutor(None, 2, RUNNER)
    try:
        ex.ready()
        assert ex.workers == 2 and ex.retries == 0
        scheduler = ex._cluster.scheduler_address
        assert scheduler.startswith("tcp://127.0.0.1:")
        f1, f2 = ex.submit(tasks[0]), ex.submit(tasks[1])
        assert f1.key != f2.key  # a key per attempt, never a cached result
        for f, task in ((f1, tasks[0]), (f2, tasks[1])):
            while not ex.wait([f], timeout=60):
                pass
            figures = ex.result(f)
            assert figures.rows == 10 and figures.tally.count_of()["solved"] == 10
            assert figures.pid != os.getpid()
            if engine.cycles_per_us() is not None:
                assert figures.cycles_per_us and figures.cycles_per_us > 0
            part = pl.read_parquet(tmp_path / "out" / "results"
                                   / f"part-{task.range.part:05d}.parquet")
            assert part["row"].to_list() == list(range(task.range.first_row,
                                                       task.range.first_row + 10))
        bad = ex.submit(bad_task)
        assert ex.wait([bad], timeout=90) == {bad}
        with pytest.raises(WorkerLost):
            ex.result(bad)
        ex.ready()
        again = ex.submit(tasks[0])
        assert ex.wait([again], timeout=90) == {again}
        assert ex.result(again).rows == 10
    finally:
        ex.close()
    assert ex._cluster.status.name == "closed"


def test_a_local_cluster_left_without_workers_fails_the_run(monkeypatch, tmp_path):
    """A local cluster whose workers are all gone for good (retired: their nannies close
    too) can never run the task waiting: RunFailed (exit 3, resumable) after a while,
    never a wait for ever; the warning about it is said once, not at every look."""
    import logging

    from pipeline.errors import RunFailed
    from pipeline.execute import dask_cluster

    if not CURATED.exists():
        pytest.skip(f"data set {CURATED} is absent")
    good = pl.read_csv(CURATED, n_rows=10, infer_schema=False)["puzzle"].to_list()
    (tmp_path / "good.txt").write_text("\n".join(good) + "\n")
    task = _solve_tasks(tmp_path / "good.txt", 1000)[0]
    monkeypatch.setattr(dask_cluster, "WORKER_TIMEOUT", 3.0)
    monkeypatch.setattr(dask_cluster, "NO_WORKER_WARNING", 1.0)
    ex = dask_cluster.DaskExecutor(None, 1, RUNNER, stall_timeout=2.0)
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    dask_cluster.log.addHandler(handler)
    try:
        ex.ready()
        ex._client.retire_workers(list(ex._client.nthreads()), close_workers=True)
        deadline = time.monotonic() + 30
        while ex._client.nthreads() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not ex._client.nthreads()
        fut = ex.submit(task)
        deadline = time.monotonic() + 30
        with pytest.raises(RunFailed, match="no worker for 3 s"):
            while time.monotonic() < deadline:  # (as wait() looks, between its naps)
                ex.check(1)
                time.sleep(0.05)
        assert not fut.done()
        assert 1 <= sum("no workers on the cluster" in m for m in said) <= 3
    finally:
        dask_cluster.log.removeHandler(handler)
        ex.close()


# --------------------------------------------------------------------------------------
# the CLI: local cluster and external cluster against the local pool
# --------------------------------------------------------------------------------------


def test_cli_local_cluster_matches_local_pool(mixed, baseline, data_dir):
    out = data_dir / "dask-local"
    run = _cli(["-i", str(mixed.path), "-o", str(out), "--executor", "dask", *RUN_FLAGS],
               _env(**{FAULT_ENV: mixed.fault}))
    _assert_same_run(run, out, baseline, baseline.out)
    assert pl.read_parquet(out / "stats.parquet")["executor"][0] == "dask"


def test_cli_external_cluster_matches_local_pool(mixed, baseline, cluster, data_dir):
    out = data_dir / "dask-external"
    run = _cli(["-i", str(mixed.path), "-o", str(out), "--executor", "dask", "--scheduler",
                cluster.address, "--log-level", "DEBUG", *RUN_FLAGS],
               _env(**{FAULT_ENV: mixed.fault}))
    _assert_same_run(run, out, baseline, baseline.out)

    # The workers' records reached the run's log, from the workers' processes.
    worker_pids = set(cluster.client.run(os.getpid).values())
    records = [json.loads(line) for line in (out / "logs/run.jsonl").read_text().splitlines()]
    from_workers = [r for r in records if r["pid"] in worker_pids]
    assert any(r["logger"] == "pipeline.worker" and "(read" in r["message"]
               and r["part"] is not None for r in from_workers)
    assert any("injected fault" in r["message"] for r in records)
    # Closing the run closed only its client: the cluster is still up, without our plugin.
    assert len(cluster.client.nthreads()) == 2
    plugins = cluster.client.run(lambda dask_worker: list(dask_worker.plugins))
    assert not any(p.startswith("pipeline-run-") for ps in plugins.values() for p in ps)


def test_cli_external_cluster_resume_and_done(mixed, baseline, cluster, data_dir):
    """A half-written folder resumes on the cluster; a finished one is already done."""
    out = data_dir / "resume"
    shutil.copytree(baseline.out, out)
    (out / "_SUCCESS").unlink()
    parts = sorted((out / "results").glob("part-*.parquet"))
    kept = 0
    for p in parts[::2]:
        p.unlink()
    for p in parts[1::2]:
        kept += pl.read_parquet(p).height
    env = _env(**{FAULT_ENV: mixed.fault, "DASK_SCHEDULER_ADDRESS": cluster.address})
    run = _cli(["-i", str(mixed.path), "-o", str(out), "--executor", "dask", *RUN_FLAGS], env)
    assert run.summary["resumed_rows"] == kept > 0
    _assert_same_run(run, out, baseline, baseline.out)

    again = _cli(["-i", str(mixed.path), "-o", str(out), "--executor", "dask",
                  *[f for f in RUN_FLAGS if f != "--quiet"]], env)
    assert again.code == baseline.code
    assert again.summary["already_done"] is True
    assert again.summary["counts"] == baseline.summary["counts"]


def test_cli_worker_killed_mid_run(cluster, data_dir):
    """kill -9 of a worker process mid-run: Dask reruns its task, every row comes once."""
    if not HARD.exists():
        pytest.skip(f"data set {HARD} is absent")
    n = 30000
    path = data_dir / "hard.txt"
    with open(HARD) as src, open(path, "w") as dst:
        dst.writelines(line for _, line in zip(range(n), src, strict=False))
    out = data_dir / "killed"
    worker_pids = cluster.client.run(os.getpid)  # the worker processes, not their nannies
    victim = worker_pids[sorted(worker_pids)[0]]
    proc = subprocess.Popen(
        [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
         "--scheduler", cluster.address, "--chunk-size", "150", "--workers", "2", "--json",
         "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_env(), cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while len(list((out / "results").glob("part-*.parquet"))) < 5:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        written_at_kill = len(list((out / "results").glob("part-*.parquet")))
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert written_at_kill < n // 150, "the run was over before the kill"
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["rows"] == n and summary["counts"]["solved"] == n
    rows = pl.read_parquet(out / "results" / "*.parquet").select("source", "row")
    assert rows.height == n and rows.unique().height == n
    assert sorted(rows["row"].to_list()) == list(range(n))
    # The nanny brought the worker back (with the plugin-free state for later runs).
    cluster.client.wait_for_workers(2, timeout=60)
    assert victim not in cluster.client.run(os.getpid).values()


def test_cli_scheduler_lost_then_resumed(cluster, data_dir):
    """The scheduler dies mid-run: exit 3 with a clear error; rerun elsewhere resumes."""
    n = 10000
    path = _hard_slice(data_dir, "hard-lost.txt", n)
    out = data_dir / "lost"
    procs: list[subprocess.Popen] = []
    try:
        address, _ = _private_cluster(data_dir / "lost-cluster.log", data_dir, ["lost0"],
                                      procs)
        run = subprocess.Popen(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
             "--scheduler", address, "--chunk-size", "50", "--json", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
        procs.append(run)
        deadline = time.monotonic() + 60
        while len(list((out / "results").glob("part-*.parquet"))) < 3:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.05)
        os.kill(procs[0].pid, signal.SIGKILL)  # the scheduler
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 3, stderr
        assert "lost the connection to the Dask scheduler" in stderr
        assert len(stderr.splitlines()) == 1, stderr  # one line, none of Dask's traceback
    finally:
        for p in procs[:2]:  # a worker without its scheduler: no need to be gentle
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        _stop(procs)
    assert not (out / "_SUCCESS").exists()

    again = _cli(["-i", str(path), "-o", str(out), "--executor", "dask", "--scheduler",
                  cluster.address, "--chunk-size", "50", "--json", "--quiet"], _env())
    assert again.code == 0, again.stderr
    assert 0 < again.summary["resumed_rows"] < n
    assert again.summary["rows"] == n and again.summary["counts"]["solved"] == n
    rows = pl.read_parquet(out / "results" / "*.parquet").select("source", "row")
    assert rows.height == n and rows.unique().height == n


def test_cli_s3_input_and_output_on_external_cluster(mixed, baseline, cluster, s3_server):
    """Workers read the input from S3 and PUT their parts there; the client moves no row."""
    import s3fs

    env = _env(**{FAULT_ENV: mixed.fault}, **s3_server)
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server["AWS_ENDPOINT_URL"]},
                           key=s3_server["AWS_ACCESS_KEY_ID"],
                           secret=s3_server["AWS_SECRET_ACCESS_KEY"])
    fs.mkdir("dask-bucket")
    fs.put_file(str(mixed.path), "dask-bucket/in/mixed.csv")
    url_in, url_out = "s3://dask-bucket/in/mixed.csv", "s3://dask-bucket/out"
    run = _cli(["-i", url_in, "-o", url_out, "--executor", "dask", "--scheduler",
                cluster.address, *RUN_FLAGS], env)
    assert run.code == baseline.code, run.stderr
    assert run.summary["counts"] == baseline.summary["counts"]
    files = sorted(fs.glob("dask-bucket/out/results/part-*.parquet"))
    got = pl.concat([pl.read_parquet(fs.cat_file(f)) for f in files]).sort("row")
    want = _results(baseline.out)
    assert got["source"].unique().to_list() == [url_in]
    assert got.drop("source", "solve_us").equals(want.drop("source", "solve_us"))
    assert fs.exists("dask-bucket/out/_SUCCESS")


def test_cli_client_killed_then_resumed(mixed, baseline, cluster, data_dir):
    """kill -9 of the client mid-run; the same command resumes on the cluster."""
    out = data_dir / "client-killed"
    env = _env(**{FAULT_ENV: mixed.fault})
    args = ["-i", str(mixed.path), "-o", str(out), "--executor", "dask", "--scheduler",
            cluster.address, *[f if f != "40" else "10" for f in RUN_FLAGS]]
    proc = subprocess.Popen([str(PIPELINE), "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 90
        while len(list((out / "results").glob("part-*.parquet"))) < 4:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.02)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (out / "_SUCCESS").exists()
    again = _cli(args, env)
    assert again.summary["resumed_rows"] > 0
    _assert_same_run(again, out, baseline, baseline.out)


# --------------------------------------------------------------------------------------
# the client in a process of its own (dask_client.py)
# --------------------------------------------------------------------------------------


def _client_processes(pid: int) -> list[int]:
    """The children of `pid` that are Dask client processes (by the name they take)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:  # a thread of the run may end between the listing and this read
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "pipeline-dask":
                    found.append(int(child))
            except OSError:
                pass
    return found


def _gone(pid: int, timeout: float = 30) -> bool:
    """Whether process `pid` has ended (or is a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _hard_input(data_dir: Path, n: int) -> Path:
    if not HARD.exists():
        pytest.skip(f"data set {HARD} is absent")
    path = data_dir / f"hard-{n}.txt"
    with open(HARD) as src, open(path, "w") as dst:
        dst.writelines(line for _, line in zip(range(n), src, strict=False))
    return path


def _start_run(path: Path, out: Path, cluster) -> subprocess.Popen:
    return subprocess.Popen(
        [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
         "--scheduler", cluster.address, "--chunk-size", "100", "--json", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)


def _run_with_client(path: Path, out: Path, cluster, parts: int) -> tuple[subprocess.Popen,
                                                                             int]:
    """A run on the cluster, once it has written `parts` parts, and its client process."""
    proc = _start_run(path, out, cluster)
    try:
        deadline = time.monotonic() + 60
        while len(list((out / "results").glob("part-*.parquet"))) < parts:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.02)
        clients = _client_processes(proc.pid)
        assert len(clients) == 1
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, clients[0]


def test_cli_client_process_files_its_records_and_counts_its_cpu(cluster, data_dir):
    """The client runs in a child process: its records reach run.jsonl with its pid, and
    its CPU time is part of the run's."""
    path = _hard_input(data_dir, 2000)
    out = data_dir / "client-process"
    run = _cli(["-i", str(path), "-o", str(out), "--executor", "dask", "--scheduler",
                cluster.address, "--chunk-size", "500", "--json", "--quiet"], _env())
    assert run.code == 0, run.stderr
    records = [json.loads(line) for line in (out / "logs" / "run.jsonl").open()]
    ours = int(records[0]["run_id"].rsplit("-", 1)[1])  # the run id ends with our pid
    connected = [r for r in records if r["message"].startswith("dask: external cluster")]
    assert len(connected) == 1 and connected[0]["pid"] not in (ours, None)
    # Importing distributed alone takes the client a few tenths of a second of CPU.
    assert run.summary["cpu_seconds"] > 0.2


def test_cli_stop_cancels_the_tasks_and_ends_the_client(cluster, data_dir):
    """SIGINT mid-run: exit 130, the client process ends, the cluster is left idle, and the
    same command resumes."""
    path = _hard_input(data_dir, 20000)
    out = data_dir / "client-stopped"
    proc, client = _run_with_client(path, out, cluster, 3)
    try:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "stopped by SIGINT" in stderr and "Traceback" not in stderr
    assert _gone(client)
    assert not (out / "_SUCCESS").exists()

    def tasks_left(dask_scheduler):
        return sum(key.startswith("pipeline-") for key in map(str, dask_scheduler.tasks))

    deadline = time.monotonic() + 30
    while cluster.client.run_on_scheduler(tasks_left) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.client.run_on_scheduler(tasks_left) == 0
    again = _cli(["-i", str(path), "-o", str(out), "--executor", "dask", "--scheduler",
                  cluster.address, "--chunk-size", "100", "--json", "--quiet"], _env())
    assert again.code == 0, again.stderr
    assert again.summary["resumed_rows"] > 0 and again.summary["rows"] == 20000


def test_cli_client_process_dies_with_a_killed_run(cluster, data_dir):
    """kill -9 of the run: the kernel ends its client process too (PR_SET_PDEATHSIG)."""
    path = _hard_input(data_dir, 20000)
    out = data_dir / "client-orphan"
    proc, client = _run_with_client(path, out, cluster, 2)
    proc.kill()
    proc.wait(timeout=30)
    assert _gone(client)


def test_cli_unreachable_or_bad_scheduler_is_one_line(data_dir):
    """No scheduler at the address: exit 3; an address Dask cannot parse: exit 2. One line
    each, no traceback, no process left behind."""
    path = data_dir / "three.txt"
    path.write_text("." * 81 + "\n")
    for address, code, says in ((f"tcp://127.0.0.1:{_free_port()}", 3, "cannot reach"),
                                ("nonsense://x", 2, "--scheduler")):
        run = subprocess.Popen(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(data_dir / f"bad-{code}"),
             "--executor", "dask", "--scheduler", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
        clients: list[int] = []
        while run.poll() is None and not clients:
            clients = _client_processes(run.pid)
            time.sleep(0.01)
        _, stderr = run.communicate(timeout=60)
        assert run.returncode == code, stderr
        lines = [line for line in stderr.splitlines() if line.startswith("pipeline: error:")]
        assert len(lines) == 1 and says in lines[0], stderr
        assert "Traceback" not in stderr
        assert all(_gone(c, timeout=5) for c in clients)


def test_a_process_with_threads_keeps_the_client_in_process(cluster):
    """Forking is for a process with no thread but its own (the command's); here (pytest,
    polars loaded) the executor is a DaskExecutor in this process."""
    from pipeline.execute import dask_client
    from pipeline.execute.dask_cluster import DaskExecutor

    assert "polars" in sys.modules
    ex = dask_client.executor(cluster.address, 2, RUNNER)
    try:
        assert isinstance(ex, DaskExecutor)
    finally:
        ex.close()


# --------------------------------------------------------------------------------------
# nothing hangs: a stopped worker, a scheduler that never answers
# --------------------------------------------------------------------------------------


def test_a_stopped_dask_worker_is_restarted_and_its_task_runs_again(data_dir):
    """SIGSTOP a Dask worker mid-run: after --stall-timeout seconds without news of its
    task, the client has its nanny restart it (the cluster keeps its two workers); the task
    runs again, every row once."""
    n = 40000
    path = _hard_slice(data_dir, "hard-stalled.txt", n)
    out = data_dir / "stalled"
    procs: list[subprocess.Popen] = []
    victim = None
    try:
        address, pids = _private_cluster(data_dir / "stalled-cluster.log", data_dir,
                                         ["s0", "s1"], procs)
        run = subprocess.Popen(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
             "--scheduler", address, "--chunk-size", "4000", "--stall-timeout", "3",
             "--json", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_env(), cwd=REPO)
        procs.append(run)
        deadline = time.monotonic() + 90
        while not list((out / "results").glob("part-*.parquet")):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.05)
        victim = pids[sorted(pids)[0]]
        os.kill(victim, signal.SIGSTOP)
        stdout, stderr = run.communicate(timeout=180)
        assert run.returncode == 0, stderr
        summary = json.loads(stdout.strip().splitlines()[-1])
        assert summary["rows"] == n and summary["counts"]["solved"] == n
        rows = pl.read_parquet(out / "results" / "*.parquet").select("row")
        assert rows.height == n and rows.unique().height == n
        log = (out / "logs" / "run.jsonl").read_text()
        assert "made no progress on a task for" in log and "restarted" in log
        from distributed import Client

        with Client(address, timeout=30, set_as_default=False) as c:
            c.wait_for_workers(2, timeout=60)
            assert victim not in c.run(os.getpid).values()
    finally:
        if victim is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        for p in procs[:3]:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        _stop(procs)


def test_a_worker_stopped_before_the_run_is_replaced_and_never_holds_it_up(data_dir,
                                                                           tmp_path):
    """A worker SIGSTOPped before the run starts answers nothing: neither the run's plugin
    (the run goes on after --stall-timeout seconds) nor the tasks it is given (none of
    them starts, so none says anything; its heartbeats stop). The client has it replaced
    (its nanny restarts it); its tasks run again, every row once."""
    n = 8000
    path = _hard_slice(data_dir, "hard-stopped-before.txt", n)
    out = tmp_path / "out"
    procs: list[subprocess.Popen] = []
    victim = None
    try:
        address, pids = _private_cluster(tmp_path / "cluster.log", data_dir,
                                         ["b0", "b1"], procs)
        victim = pids[sorted(pids)[0]]
        os.kill(victim, signal.SIGSTOP)
        run = subprocess.run(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
             "--scheduler", address, "--chunk-size", "1000", "--stall-timeout", "3",
             "--json", "--quiet"], capture_output=True, text=True, env=_env(), cwd=REPO,
            timeout=180)
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout.strip().splitlines()[-1])
        assert summary["rows"] == n and summary["counts"]["solved"] == n
        rows = pl.read_parquet(out / "results" / "*.parquet").select("row")
        assert rows.height == n and rows.unique().height == n
        log = (out / "logs" / "run.jsonl").read_text()
        assert f"worker {sorted(pids)[0]} holds a task and has sent no heartbeat" in log
    finally:
        if victim is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        _stop(procs)


@pytest.mark.parametrize("bare, said", [
    ("scheduler", "scheduler at {} cannot unpickle our tasks: it needs sudoku-pipeline"),
    ("worker", "a worker of the Dask cluster at {} cannot import our code"),
])
def test_a_cluster_without_the_package_ends_the_run_at_once_saying_so(data_dir, tmp_path,
                                                                      bare, said):
    """A scheduler unpickles every task, and a worker the run's plugin: one that cannot
    import this project fails them all. That is the cluster's setup, not a row's fault:
    the run stops at once (exit 3, resumable) with one line that says what to install,
    and blames no row."""
    path = _hard_slice(data_dir, "hard-bare.txt", 4000)
    out = tmp_path / "out"
    procs: list[subprocess.Popen] = []
    try:
        address, _ = _private_cluster(tmp_path / "cluster.log", data_dir, ["bare"], procs,
                                      bare=bare)
        run = subprocess.run(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--scheduler", address,
             "--chunk-size", "1000"], capture_output=True, text=True, env=_env(), cwd=REPO,
            timeout=180)
        assert run.returncode == 3, run.stderr
        line, = run.stderr.strip().splitlines()
        assert said.format(address) in line and "installed" in line, line
        assert "blame" not in (out / "logs" / "run.jsonl").read_text()
    finally:
        _stop(procs)


def test_a_stale_task_never_writes_into_a_later_run(data_dir, tmp_path):
    """README: a finished folder never changes. A Dask worker holds its task just before
    writing its part (as if stopped there); the run is stopped with Ctrl-C, run again
    locally with --overwrite --canonical to its end; then the worker goes on: its part is
    refused (the folder is another run's, and finished), the folder stays as it was, and
    dedup reads it."""
    n = 8000
    path = _hard_slice(data_dir, "hard-stale.txt", n)
    out = tmp_path / "out"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    procs: list[subprocess.Popen] = []
    try:
        held = _env(PIPELINE_TEST_HOOK="stale-write", PIPELINE_TEST_HOOK_DIR=str(hooks))
        address, _ = _private_cluster(tmp_path / "cluster.log", data_dir, ["stale"], procs,
                                      held)
        run = subprocess.Popen(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
             "--scheduler", address, "--chunk-size", "2000", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
        procs.append(run)
        deadline = time.monotonic() + 120
        while not (hooks / "stale-write.reached").exists():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no task reached its write"
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 130, err
        again = subprocess.run(
            [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--overwrite",
             "--canonical", "--workers", "2", "--quiet"], capture_output=True, text=True,
            env=_env(), cwd=REPO, timeout=240)
        assert again.returncode == 0, again.stderr
        before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()
                  and "logs" not in p.parts}
        (hooks / "stale-write.go").touch()
        deadline = time.monotonic() + 120
        while not (hooks / "stale-write.done").exists():
            assert time.monotonic() < deadline, "the held task did not go on"
            time.sleep(0.05)
        after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()
                 and "logs" not in p.parts}
        assert after == before
        rows = pl.read_parquet(out / "results" / "*.parquet")
        assert rows.height == n and rows["canonical"].null_count() == 0
        dedup = subprocess.run([str(PIPELINE), "dedup", str(out), "-o", str(tmp_path / "u.csv"),
                                "-q"], capture_output=True, text=True, env=_env(), cwd=REPO)
        assert dedup.returncode == 0, dedup.stderr
    finally:
        _stop(procs)


def test_a_scheduler_that_never_answers_is_given_up_on(mixed, data_dir, tmp_path):
    """A server that accepts the connection and then says nothing: one line, exit 3,
    within the connect timeout (the handshake used to hang for minutes)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # and never a byte
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        res = _cli(["-i", str(data_dir / "mixed.csv"), "-o", str(tmp_path / "out"),
                    "--executor", "dask", "--scheduler",
                    f"tcp://127.0.0.1:{server.getsockname()[1]}", "--json", "--quiet"],
                   _env(), timeout=90)
        assert res.code == 3, res.stderr
        assert len(res.stderr.splitlines()) == 1 and "Dask scheduler" in res.stderr
        assert time.monotonic() - started < 45
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        server.close()


def test_a_server_that_is_not_dask_at_the_address_is_said_so(mixed, data_dir, tmp_path):
    """Found by a new user: an HTTP server on the scheduler's port gave "internal error:
    MemoryError: Unable to allocate 3.07 EiB"; and an address Dask cannot parse left a
    run folder claimed (its manifest written) that the next run was refused."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def answer() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            with conn:
                with contextlib.suppress(OSError):
                    conn.settimeout(5)
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        res = _cli(["-i", str(data_dir / "mixed.csv"), "-o", str(tmp_path / "out"),
                    "--executor", "dask", "--scheduler",
                    f"tcp://127.0.0.1:{server.getsockname()[1]}", "--quiet"], _env(),
                   timeout=90)
        assert res.code == 3, res.stderr
        assert res.stderr.splitlines() == [f"pipeline: error: --scheduler tcp://127.0.0.1:"
                                           f"{server.getsockname()[1]}: what answers there "
                                           "is not a Dask scheduler"]
    finally:
        stop.set()
        thread.join()
        server.close()
    res = _cli(["-i", str(data_dir / "mixed.csv"), "-o", str(tmp_path / "bad"),
                "--executor", "dask", "--scheduler", "notaurl", "--quiet"], _env())
    assert res.code == 2 and "--scheduler" in res.stderr, res.stderr
    assert not (tmp_path / "bad").exists()


def test_ctrl_c_on_a_local_cluster_prints_one_line(data_dir):
    """Ctrl-C on a terminal reaches the whole process group (the local cluster's processes
    too): exit 130 and the stop's one line, nothing of Dask's after it."""
    path = _hard_input(data_dir, 20000)
    out = data_dir / "local-stopped"
    proc = subprocess.Popen(
        [str(PIPELINE), "run", "-i", str(path), "-o", str(out), "--executor", "dask",
         "--workers", "2", "--chunk-size", "200"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while len(list((out / "results").glob("part-*.parquet"))) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start writing parts"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, stderr = proc.communicate(timeout=90)  # to EOF: every process holding stderr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pipeline: error: stopped by SIGINT"), stderr
