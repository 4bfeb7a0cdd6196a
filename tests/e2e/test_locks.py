"""The folder lock and folders that cannot be written, for real (README: the folder is
locked, `flock` on DIR/.lock): a second run into a held folder exits 2 naming the holder
and does not disturb it; the lock dies with its holder, and the workers with the run (no
stale lock, no orphan); an immutable lock file; a read-only folder (a real read-only bind
mount): a new run says so (exit 3), a finished one is already done.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import psutil
import pytest
from conftest import SAMPLE_CSV, comparable, read_results
from helpers import BIG, big_args, finish, kill_group, mount_or_skip, one_line, run, start, wait_for

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------------------------
# A held folder; no stale lock


def test_second_run_is_refused_and_lock_dies_with_holder(workdir, baseline):
    out = workdir / "locked"
    shutil.rmtree(out, ignore_errors=True)
    # The first run, its inputs planned, waits at a test hook: it holds the folder.
    hooks = workdir / "lock-hooks"
    shutil.rmtree(hooks, ignore_errors=True)
    hooks.mkdir()
    first = start(big_args("locked"), workdir,
                  {"PIPELINE_TEST_HOOK": "after-plan", "PIPELINE_TEST_HOOK_DIR": str(hooks)})
    try:
        assert wait_for(lambda: (hooks / "after-plan.reached").exists(), first)
        code, _, err = run(big_args("locked"), workdir)
        assert code == 2
        line = one_line(err)
        assert f"pid {first.pid}" in line
        # Different options do not get in either.
        code, _, err = run(big_args("locked", "--first-solution", "--overwrite"), workdir)
        assert code == 2 and f"pid {first.pid}" in err
        assert first.poll() is None, "the refused run disturbed the first"
    finally:
        kill_group(first)
    code, _, err = run(big_args("locked"), workdir)
    assert code == 0, err
    assert comparable(read_results(out)).equals(baseline)


def workers() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name"]):
        if p.info["name"] == "pipeline-worker":
            found.append(p)
    return found


def test_workers_die_with_their_parent_and_hold_no_lock(tmp_path, big):
    proc = start(["run", "-i", big, "-o", "out", *BIG], tmp_path)
    try:
        deadline = time.time() + 60
        while len(list((tmp_path / "out" / "results").glob("part-*.parquet"))) < 2:
            assert proc.poll() is None and time.time() < deadline, finish(proc)
            time.sleep(0.02)
        pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert len([p for p in workers() if p.pid in pids]) == 2
        os.kill(proc.pid, signal.SIGKILL)  # the parent alone
        proc.wait(timeout=30)
        deadline = time.time() + 10
        while any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                  for p in pids):
            assert time.time() < deadline, "a worker outlived its parent"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    code, out, err = run(["run", "-i", big, "-o", "out", *BIG], tmp_path)  # not "in use"
    assert code == 0, err
    assert json.loads(out)["resumed_rows"] > 0


def test_an_immutable_lock_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").touch()
    if subprocess.run(["chattr", "+i", str(out / ".lock")], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        code, out_, err = run(["run", "-i", SAMPLE_CSV, "-o", out, "--json", "-q"], tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(out / ".lock")], check=False)
    assert code == 0, err
    assert json.loads(out_)["rows"] == 3000


# ---------------------------------------------------------------------------------------
# Read-only folders


@pytest.fixture
def read_only(tmp_path):
    """(a folder, a read-only view of it at another path)."""
    src, view = tmp_path / "rw", tmp_path / "ro"
    src.mkdir()
    view.mkdir()
    mount_or_skip("--bind", str(src), str(view))
    res = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
    if res.returncode != 0:
        subprocess.run(["umount", str(view)], check=False)
        pytest.skip("cannot remount read-only here")
    yield src, view
    subprocess.run(["umount", "-l", str(view)], check=False)


def test_a_read_only_output_folder(tmp_path, read_only):
    _, view = read_only
    for out in (view, view / "new"):
        code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", out, "-q"], tmp_path)
        assert code == 3, err
        line = one_line(err)
        assert "read-only file system" in line and str(view) in line
        assert "internal error" not in line


def test_a_finished_run_on_read_only_storage_is_already_done(tmp_path, read_only):
    src, view = read_only
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", src / "out", "-q"], tmp_path)
    assert code == 0, err
    code, out, err = run(["run", "-i", SAMPLE_CSV, "-o", view / "out", "--json"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["already_done"] is True
