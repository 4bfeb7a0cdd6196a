"""What goes wrong during a run, each done for real against a `pipeline run` process (README:
Nothing lost): a worker killed, even halfway through sending its result, loses only its
range; a row that kills or fails its worker every time becomes `error` alone; an input
edited under the run ends it (exit 3) rather than let it finish as if it had read what it
hashed; a full disk (real mounts: a tiny tmpfs) or a write error ends it with exit 3 and
one line, every part written whole. Where a race decides, a test hook (pipeline.testhooks)
stops the process at the moment in question, and the test is repeated.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import polars as pl
import psutil
import pytest
from conftest import LEET, PUZZLE, SAMPLE_CSV, comparable, read_results
from helpers import (
    BIG,
    BIG_ROWS,
    assert_every_row_once,
    big_args,
    check_run,
    finish,
    kill_group,
    mount_or_skip,
    one_line,
    parts_in,
    run,
    start,
    start_big_at,
    wait_file,
    wait_for,
)

pytestmark = pytest.mark.slow


def workers_of(pid: int) -> list[psutil.Process]:
    """The pool's worker processes (forked by the run's forkserver, named pipeline-worker)."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if child.name() == "pipeline-worker":
                found.append(child)
        except psutil.Error:
            pass
    return found


# ---------------------------------------------------------------------------------------
# A worker killed


def test_worker_killed_mid_run(workdir, baseline):
    out = workdir / "wk"
    proc = start(big_args("wk", "--json"), workdir)
    try:
        assert wait_for(lambda: len(parts_in(out)) >= 3, proc), "run never got going"
        victims = workers_of(proc.pid)
        assert victims, "no worker process found"
        victims[0].send_signal(signal.SIGKILL)
        code, stdout, err = finish(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert code == 0, err
    assert json.loads(stdout)["rows"] == BIG_ROWS
    frame = comparable(read_results(out))
    assert frame.select("source", "row").is_duplicated().sum() == 0
    assert frame.equals(baseline), "the killed worker's range was not retried cleanly"
    assert (frame["status"] != "error").all()
    log = (out / "logs" / "run.jsonl").read_text()
    assert f"worker process {victims[0].pid} died (killed by SIGKILL)" in log


@pytest.mark.parametrize("attempt", range(3))
def test_a_worker_killed_halfway_through_sending_its_result(tmp_path, big, attempt):
    proc, hooks = start_big_at("half-send", tmp_path, big)
    try:
        wait_file(hooks / "half-send.fired", proc)
        time.sleep(0.2)  # it has written half of its message and is waiting
        victim = int((hooks / "half-send.fired").read_text())
        os.kill(victim, signal.SIGKILL)
        code, out, err = finish(proc, timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 0, err
    assert json.loads(out)["rows"] == 18_000
    frame = read_results(tmp_path / "out")
    assert frame["row"].to_list() == list(range(18_000))
    assert f"worker process {victim} died (killed by SIGKILL)" in (
        tmp_path / "out" / "logs" / "run.jsonl").read_text()


# ---------------------------------------------------------------------------------------
# A row that kills or fails its worker every time


@pytest.mark.parametrize("how", ["crash", "raise"])
def test_poison_row_becomes_error_alone(tmp_path, sample_rows, how):
    puzzles = [p for p, _ in sample_rows[:60]]
    poison = puzzles[21]
    (tmp_path / "p.txt").write_text("\n".join(puzzles) + "\n")
    code, out, err = run(["run", "-i", "p.txt", "-o", "out", "--workers", "2",
                               "--chunk-size", "8", "--json", "-q"], tmp_path,
                              env={"PIPELINE_FAULT_INJECT": f"{how}:{poison}"}, timeout=280)
    assert code == 0, err
    frame = assert_every_row_once(tmp_path / "out", 60, "p.txt")
    errors = frame.filter(pl.col("status") == "error")
    assert errors["row"].to_list() == [21]
    assert errors["reason"][0].startswith("solver failed")
    assert "\n" not in errors["reason"][0]
    assert errors["solution"][0] is None
    assert (frame.filter(pl.col("row") != 21)["status"] == "solved").all()
    assert json.loads(out)["counts"]["error"] == 1
    assert (tmp_path / "out" / "_SUCCESS").exists()


def test_poison_row_next_to_malformed_rows(tmp_path):
    lines = ["bad1", PUZZLE, "bad2", LEET]
    (tmp_path / "p.txt").write_text("\n".join(lines) + "\n")
    code, _, err = run(["run", "-i", "p.txt", "-o", "out", "--workers", "1",
                             "--chunk-size", "4", "-q"], tmp_path,
                            env={"PIPELINE_FAULT_INJECT": f"raise:{PUZZLE}"})
    assert code == 0, err
    frame = assert_every_row_once(tmp_path / "out", 4, "p.txt")
    assert frame["status"].to_list() == ["malformed", "error", "malformed", "solved"]
    assert frame["reason"][0] == "length 4, expected 81"


# ---------------------------------------------------------------------------------------
# An input edited under the run


def test_an_input_edited_during_the_run_ends_it_and_its_advice_works(tmp_path, big):
    proc, hooks = start_big_at("after-plan", tmp_path, big)
    try:
        wait_file(hooks / "after-plan.reached", proc)
        data = big.read_bytes()
        at = len(data) // 2
        big.write_bytes(data[:at] + data[at:at + 81].replace(b".", b"1", 1) + data[at + 81:])
        (hooks / "after-plan.go").touch()
        code, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 3
    line = one_line(err)
    assert "big.txt changed while the run read it" in line
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    # The advice, followed as said: the same command with --overwrite.
    assert "run the same command with --overwrite" in line
    code, out, err = run(["run", "-i", big, "-o", "out", *BIG, "--overwrite"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["rows"] == len(big.read_text().splitlines())
    check_run(tmp_path / "out")


def test_parquet_edited_under_a_run_is_caught(tmp_path):
    from conftest import InlineExecutor

    from pipeline.errors import InputChanged
    from pipeline.io import inputs, schema
    from pipeline.io.storage import Location
    from pipeline.job import plan, worker
    from pipeline.job.tasks import Solve

    pl.DataFrame({"puzzle": [PUZZLE] * 50}).write_parquet(tmp_path / "p.parquet",
                                                         row_group_size=10)
    inp = inputs.open_input(str(tmp_path / "p.parquet"), 0, None, None, schema.OURS)
    plan.plan_inputs([inp], InlineExecutor(), 20)
    assert [r.rows for r in inp.ranges] == [20, 20, 10]
    pl.DataFrame({"puzzle": [LEET] * 50}).write_parquet(tmp_path / "p.parquet",
                                                       row_group_size=10)
    results = Location(str(tmp_path / "out"))
    results.makedirs()
    task = Solve(inp.ranges[0], inp.location, inp.shape, inp.source, results, (), False, 2,
                 False)
    with pytest.raises(InputChanged):
        worker.execute(task)


# ---------------------------------------------------------------------------------------
# A full disk, a write error


@pytest.fixture
def tiny_tmpfs(tmp_path):
    where = tmp_path / "tiny"
    where.mkdir()
    mount_or_skip("-t", "tmpfs", "-o", "size=128k", "tmpfs", str(where))
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_before_the_run_starts(tmp_path, tiny_tmpfs):
    (tiny_tmpfs / "filler").write_bytes(b"x" * (128 << 10))
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", tiny_tmpfs / "out", "-q"], tmp_path)
    assert code == 3, err
    line = one_line(err)
    assert "no space left on device" in line and "internal error" not in line


def test_a_full_disk_mid_run(tmp_path, tiny_tmpfs):
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", tiny_tmpfs / "out", "--chunk-size",
                        "100", "-q"], tmp_path)
    assert code == 3, err
    assert "no space left on device" in one_line(err)
    assert not (tiny_tmpfs / "out" / "_SUCCESS").exists()


def test_disk_full_exit_3(workdir, tiny_disk):
    out = tiny_disk / "out"
    code, _, err = run(["run", "-i", str(workdir / "big.txt"), "-o", out, "--workers",
                             "2", "--chunk-size", "200"], workdir)
    assert code == 3, err
    line = one_line(err)
    assert "No space left" in line or "space" in line.lower()
    assert not (out / "_SUCCESS").exists()
    for p in parts_in(out):  # no half-written part: every part reads whole
        assert pl.read_parquet(p).height > 0
    # Temporary names never match *.parquet, so a reader of results/*.parquet sees no half.
    assert not [p for p in out.rglob("*.parquet") if p.name.startswith(".")]


def test_write_error_mid_run_exit_3(workdir):
    """The results folder vanishes under a running job (a write error): exit 3, one line."""
    out = workdir / "werr"
    shutil.rmtree(out, ignore_errors=True)
    proc = start(big_args("werr", "--chunk-size", "10"), workdir)  # 1,800 parts
    try:
        assert wait_for(lambda: len(parts_in(out)) >= 3, proc)
        if proc.poll() is not None:
            pytest.skip("the run finished before the write error could be made")
        (out / "results").rename(out / "moved")
        code, _, err = finish(proc, timeout=120)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert code == 3, err
    line = one_line(err)
    assert "cannot write" in line
    assert not (out / "_SUCCESS").exists()
    for p in sorted((out / "moved").glob("*.parquet")):
        assert pl.read_parquet(p).height > 0
