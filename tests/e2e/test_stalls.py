"""Nothing hangs: a worker that stops without dying is noticed and replaced, the progress
bar moves within a part, and no process of a run outlives it, whatever its state.

(Attacks of the third round on hangs and runaway resources; each failed before its fix.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import time

import psutil
import pytest
from conftest import load_set
from helpers import finish, kill_group, on_a_terminal, start, wait_for

pytestmark = pytest.mark.slow


def _hard(tmp_path, n: int = 96_000):
    """A text file of n forum-hardest puzzles (each at about 20,000 a second a core)."""
    grids = load_set("tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+")
    rows = ["".join(map(str, g)).replace("0", ".") for g in grids]
    path = tmp_path / "hard.txt"
    path.write_text("\n".join((rows * (n // len(rows) + 1))[:n]) + "\n")
    return path


def _workers(proc) -> list[psutil.Process]:
    """The run's worker processes (children of its forkserver, named pipeline-worker)."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [k for k in kids if _name(k) == "pipeline-worker"]


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return ""


def test_a_stopped_worker_is_killed_and_its_range_done_again(tmp_path):
    """SIGSTOP a worker (as a read from a dead NFS server would stop it): after
    --stall-timeout seconds without a word it is killed, a new one does its range, the run
    ends with every row and says why in its log."""
    data = _hard(tmp_path)
    proc = start(["run", "-i", str(data), "-o", "out", "--workers", "1", "--chunk-size",
                  "100000", "--stall-timeout", "3", "-q", "--json"], tmp_path)
    wait_for(lambda: _workers(proc), proc, timeout=60)
    time.sleep(1.0)  # its range under way
    victim = _workers(proc)[0]
    victim.send_signal(signal.SIGSTOP)
    code, out, err = finish(proc, timeout=180)
    assert code == 0, err
    assert json.loads(out)["rows"] == 96_000
    assert not victim.is_running() or victim.status() == psutil.STATUS_ZOMBIE
    log = (tmp_path / "out" / "logs" / "run.jsonl").read_text()
    assert f"worker process {victim.pid} made no progress for" in log


def test_no_process_of_a_run_outlives_it_even_a_stopped_one(tmp_path):
    data = _hard(tmp_path)
    proc = start(["run", "-i", str(data), "-o", "out", "--workers", "2", "-q"], tmp_path)
    wait_for(lambda: len(_workers(proc)) == 2, proc, timeout=60)
    time.sleep(0.5)
    ours = psutil.Process(proc.pid).children(recursive=True)  # forkserver, tracker, workers
    _workers(proc)[0].send_signal(signal.SIGSTOP)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(p.is_running() and
                                              p.status() != psutil.STATUS_ZOMBIE for p in ours):
        time.sleep(0.1)
    left = [p for p in ours if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [(p.pid, _name(p), p.status()) for p in left]


def test_the_bar_moves_within_a_part(tmp_path):
    """One range of 40,000 hard puzzles on one worker (two seconds or so): the bar shows
    rows done before the part is written, not 0 until it is."""
    data = _hard(tmp_path, 40_000)
    code, text = on_a_terminal(tmp_path, "run", "-i", str(data), "-o", "out", "--chunk-size",
                               "100000", "--workers", "1")
    assert code == 0, text
    shown = {int(n.replace(",", "")) for n in re.findall(r"([\d,]+) rows(?! in)", text)}
    assert any(0 < n < 40_000 for n in shown), sorted(shown)


def test_a_pool_is_capped_by_the_machine_and_the_work(tmp_path):
    """--workers 100000 starts what the machine holds (and no more than the ranges to
    do), and says so, instead of forking without end."""
    from conftest import SAMPLE_CSV

    from pipeline.execute.local import machine_holds

    proc = start(["run", "-i", str(SAMPLE_CSV), "-o", "out", "--workers", "100000",
                  "--json"], tmp_path)
    most = 0
    while proc.poll() is None:
        most = max(most, len(_workers(proc)))
        time.sleep(0.05)
    code, out, err = finish(proc)
    assert code == 0, err
    cap, _ = machine_holds()
    assert 0 < most <= cap
    assert f"100000 workers asked for: at most {cap}, what this machine holds" in err
    assert json.loads(out)["rows"] == 3000
    log = (tmp_path / "out" / "logs" / "run.jsonl").read_text()
    assert "range(s) to do" in log or cap <= 6


def test_nothing_of_a_killed_command_is_left_for_good(tmp_path):
    """kill -9 of a run leaves its pymp-* folder (the forkserver's socket), of a data-set
    tool its spill folder and its output's temporary file: all under names that carry the
    process's id, and the next command reclaims those of processes that are gone."""
    import subprocess

    from conftest import SAMPLE_CSV

    from pipeline.io import scratch

    data = _hard(tmp_path, 30_000)
    proc = start(["run", "-i", str(data), "-o", "out", "--workers", "1", "-q",
                  "--canonical"], tmp_path)
    wait_for(lambda: _workers(proc), proc, timeout=60)
    base = os.path.join(scratch.tempfile.gettempdir(), f"sudoku-pipeline-{os.getuid()}")
    mine = os.path.join(base, str(proc.pid))
    assert os.path.isdir(mine) and any(n.startswith("pymp-") for n in os.listdir(mine))
    proc.kill()
    proc.wait()
    assert os.path.isdir(mine)  # left behind by the kill...
    finish(start(["run", "-i", str(SAMPLE_CSV), "-o", "out2", "-q"], tmp_path))
    assert not os.path.exists(mine)  # ...and reclaimed by the next command
    # A data-set tool's leftovers beside its output, reclaimed the same way.
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f".pipeline-spill-{dead.pid}-abc").mkdir()
    (tmp_path / f".d.parquet.{dead.pid}-0123abcd.tmp").write_bytes(b"x" * 100)
    (tmp_path / ".keep.12-notours.tmp").write_bytes(b"x")
    ok = start(["dedup", "out2", "-o", "d.parquet", "-q"], tmp_path)
    code, _, err = finish(ok)
    assert code != 0 or err == ""  # (out2 has no canonical column: refused, after reclaiming)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left == [".keep.12-notours.tmp"]


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_store_that_stops_answering_blames_no_row(tmp_path, executor):
    """Found by a new user: an object store silent for a minute, with a short
    --stall-timeout, made hundreds of good rows `error` ("fails whatever rows it holds")
    and the run exit 0; on a local Dask cluster the silent workers were removed for good,
    and the run waited for ever with none. A worker replaced for a silence while it reads
    or writes blames no row: its range is tried again, and when that keeps happening the
    run fails, to be resumed; the resumed run has every row solved."""
    from conftest import SAMPLE_CSV, read_results

    if executor == "dask":
        pytest.importorskip("distributed")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "read-silence.on").touch()  # every read waits: a store that does not answer
    args = ["run", "-i", str(SAMPLE_CSV), "-o", "out", "--workers", "2", "--chunk-size",
            "1000", "--stall-timeout", "1", "-q", "--executor", executor]
    proc = start(args, tmp_path, PIPELINE_TEST_HOOK="read-silence",
                 PIPELINE_TEST_HOOK_DIR=str(hooks))
    try:
        log = tmp_path / "out" / "logs" / "run.jsonl"
        deadline = time.monotonic() + 200  # (the Dask run takes about a minute)
        while proc.poll() is None and time.monotonic() < deadline:
            if log.exists() and "marked error" in log.read_text():
                (hooks / "read-silence.on").unlink()  # the store back as rows were blamed
                break
            time.sleep(0.05)
        code, _, err = finish(proc, timeout=30)
    finally:
        kill_group(proc)
    assert code == 3, err
    assert "did not answer" in err and "Traceback" not in err
    parts = list((tmp_path / "out" / "results").glob("part-*.parquet"))
    assert not parts or (read_results(tmp_path / "out")["status"] != "error").all()
    (hooks / "read-silence.on").unlink(missing_ok=True)  # it answers again: resume
    code, _, err = finish(start(args, tmp_path, PIPELINE_TEST_HOOK="read-silence",
                                PIPELINE_TEST_HOOK_DIR=str(hooks)), timeout=60)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame.height == 3000 and (frame["status"] == "solved").all()
