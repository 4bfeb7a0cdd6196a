"""Ctrl-C and SIGTERM at any moment, to a real `pipeline run` process (README: exit 130 / 143,
the same command resumes): early in start-up, while planning, mid-run, while writing the
stats, a second Ctrl-C while stopping; one line and no traceback, no process left behind,
a folder that resumes. Where a race decides, a test hook (pipeline.testhooks) stops the
process at the moment in question, and the test is repeated.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from conftest import PUZZLE, SAMPLE_CSV, comparable, read_results
from helpers import (
    BIG,
    big_args,
    finish,
    kill_group,
    one_line,
    parts_in,
    run,
    start,
    start_big_at,
    wait_file,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("sig, code, group", [(signal.SIGTERM, 143, False),
                                              (signal.SIGINT, 130, True)])
def test_stop_signals_leave_a_resumable_folder(workdir, baseline, sig, code, group):
    name = f"sig{int(sig)}"
    out = workdir / name
    shutil.rmtree(out, ignore_errors=True)
    proc = start(big_args(name), workdir)
    try:
        assert wait_for(lambda: len(parts_in(out)) >= 5, proc)
        if proc.poll() is not None:
            pytest.skip("the run finished before it could be stopped")
        if group:
            os.killpg(proc.pid, sig)  # like Ctrl-C in a terminal
        else:
            proc.send_signal(sig)  # like `kill PID`
        got, _, err = finish(proc, timeout=60)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert got == code, err
    line = one_line(err)
    assert "resume" in line
    assert not (out / "_SUCCESS").exists()
    # No worker outlives the run.
    assert wait_for(lambda: not _group_alive(proc.pid), timeout=10)
    got, _, err = run(big_args(name), workdir)
    assert got == 0, err
    assert comparable(read_results(out)).equals(baseline)


def _group_alive(pgid: int) -> bool:
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.info["pid"]) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error, OSError):
            continue
    return False


# ---------------------------------------------------------------------------------------
# In start-up, while planning, while writing the stats


def test_sigterm_during_start_up_is_one_line_143(tmp_path):
    """SIGTERM while the run is still reading its inputs (before the pool exists)."""
    path = tmp_path / "many.txt"
    path.write_text((PUZZLE + "\n") * 400_000)  # ~33 MB: hashing it takes a moment
    out = tmp_path / "out"
    proc = start(["run", "-i", path, "-o", out, "--workers", "1"], tmp_path)
    try:
        assert wait_for(lambda: (out / ".lock").exists(), proc, every=0.002)
        proc.send_signal(signal.SIGTERM)
        code, _, err = finish(proc, timeout=60)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    if code == 0:
        pytest.skip("the run finished before the signal arrived")
    assert code == 143, err
    assert "SIGTERM" in one_line(err)
    assert not (out / "_SUCCESS").exists()
    code, _, err = run(["run", "-i", path, "-o", out, "--workers", "2", "-q"], tmp_path)
    assert code == 0, err
    assert read_results(out).height == 400_000


def _wait_for_our_handlers(proc: subprocess.Popen) -> None:
    """Until the process catches SIGTERM (pipeline.__main__ sets both handlers first; the
    interpreter's own start, before it, is out of reach: on a loaded machine it can take
    over 0.1 s)."""
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            return
        caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.002)


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("after", [0.1, 0.2, 0.3, 0.5])
def test_a_stop_signal_early_in_start_up(tmp_path, sig, code, after):
    proc = start(["run", "-i", SAMPLE_CSV, "-o", "out", "-q"], tmp_path)
    _wait_for_our_handlers(proc)
    time.sleep(after)
    proc.send_signal(sig)
    got, _, err = finish(proc)
    if got == 0:
        return  # it finished first: nothing to stop
    assert got == code
    assert f"stopped by {sig.name}" in one_line(err)


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_tool_that_starts_over_promises_no_resume(tmp_path, sig, code):
    """`generate` (as `augment`, `dedup`, ...) starts over when run again: a stop says so
    by not promising a resume, as `run`'s does, and leaves no output."""
    proc = start(["generate", "-n", "10000000", "-o", "g.csv", "--seed", "1"], tmp_path)
    _wait_for_our_handlers(proc)
    time.sleep(0.5)
    proc.send_signal(sig)
    got, _, err = finish(proc)
    assert got == code, err
    assert one_line(err) == f"pipeline: error: stopped by {sig.name}"
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize("point", ["after-plan", "before-stats"])
def test_ctrl_c_while_planning_or_writing_the_stats(tmp_path, big, point):
    proc, hooks = start_big_at(point, tmp_path, big)
    try:
        wait_file(hooks / f"{point}.reached", proc)
        os.killpg(proc.pid, signal.SIGINT)
        code, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130
    assert "stopped by SIGINT" in one_line(err)
    assert not (tmp_path / "out" / "_SUCCESS").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_at_the_commit_is_too_late(tmp_path, big, sig):
    """Found by a new user: a SIGTERM landing as `_SUCCESS` was written exited 143, "run
    the same command again to resume", with the run finished."""
    proc, hooks = start_big_at("commit", tmp_path, big)
    try:
        wait_file(hooks / "commit.reached", proc)
        os.killpg(proc.pid, sig)
        code, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 0, err
    assert (tmp_path / "out" / "_SUCCESS").exists() and "stopped" not in err


# ---------------------------------------------------------------------------------------
# Two Ctrl-C


@pytest.mark.parametrize("attempt", range(4))
def test_a_second_ctrl_c_while_stopping(tmp_path, big, attempt):
    proc, hooks = start_big_at("pause-shutdown", tmp_path, big)
    try:
        deadline = time.time() + 60
        while not list((tmp_path / "out" / "results").glob("part-*.parquet")):
            assert proc.poll() is None and time.time() < deadline, finish(proc)
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C goes to the whole foreground group
        wait_file(hooks / "pause-shutdown.reached", proc)
        os.killpg(proc.pid, signal.SIGINT)
        code, _, err = finish(proc, timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130
    assert one_line(err) == "pipeline: error: stopped by SIGINT; run the same command again " \
                            "to resume"


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_two_quick_ctrl_c_at_any_moment(tmp_path, big, delay):
    proc = start(["run", "-i", big, "-o", "out", *BIG], tmp_path)
    try:
        deadline = time.time() + 60
        while not (tmp_path / "out" / "manifest.json").exists():
            assert proc.poll() is None and time.time() < deadline, finish(proc)
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        code, _, err = finish(proc, timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130, err
    assert "stopped by SIGINT" in one_line(err)


# ---------------------------------------------------------------------------------------
# A tool's output replaced


@pytest.fixture(scope="module")
def canonical_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("canon")
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", "r", "--canonical", "-q"], d)
    assert code == 0, err
    return d / "r"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_split_stopped_as_it_replaces_another_is_never_a_mix(canonical_run, tmp_path, sig):
    """Found by a new user: `split` into the folder of an earlier one, stopped between its
    renames, left the new train.parquet beside the old test.parquet (classes in both) and
    the old split.json, looking finished."""
    args = ["split", canonical_run, "--fractions", "0.5,0.5", "-o", "sp", "-q"]
    assert run([*args, "--seed", "1"], tmp_path)[0] == 0
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    proc = start([*args, "--seed", "2"], tmp_path, PIPELINE_TEST_HOOK="split-publish",
                 PIPELINE_TEST_HOOK_DIR=str(hooks))
    try:
        wait_file(hooks / "split-publish.reached", proc)
        os.killpg(proc.pid, sig)
        (hooks / "split-publish.go").touch()
        code, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    sp = tmp_path / "sp"
    names = {p.name for p in sp.iterdir() if not p.name.startswith(".")}
    if sig == signal.SIGKILL:  # no split: none of the old files, and no split.json
        assert code == -signal.SIGKILL and names == set()
        assert run([*args, "--seed", "2"], tmp_path)[0] == 0  # and run again, it is whole
    else:  # a stop then is too late: the new split is made
        assert code == 0, err
    assert json.loads((sp / "split.json").read_text())["seed"] == 2
    assert not [p for p in sp.iterdir() if p.name.startswith(".")]  # no temporary left
    assert run(["split", canonical_run, "--fractions", "0.5,0.5", "-o", "fresh", "-q",
                "--seed", "2"], tmp_path)[0] == 0
    for name in ("train.parquet", "test.parquet"):
        assert (sp / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()
    code, out, err = run(["overlap", "sp"], tmp_path)
    assert code == 0, out + err
