"""The attacks that once broke a promise, each done for real against a `pipeline run` process.

Rows lost, doubled or mislabelled (CSV shapes); hangs and stale locks (kills, signals);
provenance (an input edited under a run); messages for conditions of the machine (real
mounts: a tiny tmpfs, a read-only bind mount; an immutable file); durability (a torn part).
Where a race decides, a test hook (pipeline.testhooks) stops the process at the moment in
question, and the test is repeated.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from conftest import LEET, PUZZLE, SAMPLE_CSV, SOLUTION, comparable, pipeline_command, read_results

pytestmark = pytest.mark.slow

RAW = Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"
KAGGLE = RAW / "kaggle_bryanpark_1m" / "sudoku_small.csv"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPELINE_", "DASK_"))}
    env.update(extra)
    return env


def start(args, cwd: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([*pipeline_command(), *map(str, args)], cwd=cwd, env=_env(**env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run(args, cwd: Path, **env: str) -> tuple[int, str, str]:
    return finish(start(args, cwd, **env))


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def start_big_at(hook: str, tmp_path: Path, big: Path) -> tuple[subprocess.Popen, Path]:
    """The big run with a test hook armed (pipeline.testhooks); the hooks' marker folder."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    proc = start(["run", "-i", big, "-o", "out", *BIG], tmp_path,
                 PIPELINE_TEST_HOOK=hook, PIPELINE_TEST_HOOK_DIR=str(hooks))
    return proc, hooks


def wait_file(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert proc.poll() is None, finish(proc)
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def workers() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name"]):
        if p.info["name"] == "pipeline-worker":
            found.append(p)
    return found


@pytest.fixture
def big(tmp_path) -> Path:
    """A text file long enough for a run to be caught in the middle (18,000 rows)."""
    lines = (pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list() * 6)
    path = tmp_path / "big.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


BIG = ["--workers", "2", "--chunk-size", "200", "--json", "-q"]


# ---------------------------------------------------------------------------------------
# 1-5: rows lost, doubled or mislabelled


def test_1_quoted_newlines_are_data(tmp_path):
    (tmp_path / "r1.csv").write_text(
        f'id,puzzle,note\n1,{PUZZLE},"a\nb"\n2,{PUZZLE},ok\n3,{LEET},"x, ""y"""\n')
    code, out, err = run(["run", "-i", "r1.csv", "-o", "out", "--json", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["note"].to_list() == ["a\nb", "ok", 'x, "y"']
    assert frame["id"].to_list() == ["1", "2", "3"]
    assert (frame["status"] == "solved").all()


@pytest.mark.parametrize("chunk", ["1", "3", "1000"])
def test_1_quoted_newlines_across_ranges_as_python_csv_reads_them(tmp_path, chunk):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(["id", "puzzle", "note"])
    for i in range(60):
        note = ["plain", "two\nlines", "comma, and \"quote\"", "cr\ronly", ""][i % 5]
        writer.writerow([i, [PUZZLE, LEET][i % 2], note])
    (tmp_path / "q.csv").write_text(buf.getvalue(), newline="")
    expected = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))[1:]
    code, _, err = run(["run", "-i", "q.csv", "-o", "out", "--chunk-size", chunk, "-q"],
                       tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["row"].to_list() == list(range(60))
    assert frame["note"].to_list() == [r[2] for r in expected]
    assert (frame["status"] == "solved").all()


def test_2_a_bad_first_record_of_a_headerless_csv_is_a_row(tmp_path):
    (tmp_path / "r2.csv").write_text(f"1,-{PUZZLE[1:]}\n2,{PUZZLE}\n3,{LEET}\n")
    code, _, err = run(["run", "-i", "r2.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["malformed", "solved", "solved"]
    assert frame["column_1"].to_list() == ["1", "2", "3"]


def test_2_a_header_by_shape_alone_is_said(tmp_path):
    (tmp_path / "h.csv").write_text(f"key,grid_text\n1,{PUZZLE}\n")
    code, _, err = run(["run", "-i", "h.csv", "-o", "out"], tmp_path)
    assert code == 0 and "first record (key,grid_text) is taken for the column names" in err
    assert read_results(tmp_path / "out").height == 1


def test_3_comment_lines_before_a_header(tmp_path):
    (tmp_path / "r3.csv").write_text(
        f"# exported 2026-11-30\n#by hand\n\nquizzes,solutions\n{PUZZLE},{SOLUTION}\n")
    code, _, err = run(["run", "-i", "r3.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["solved"] and frame["expected_match"].to_list() == [True]


@pytest.mark.parametrize("header, carried", [
    ("id,id,puzzle", ["id", "id_2"]),
    ("row,input_row,puzzle", ["input_row", "input_row_2"]),
    ("status,puzzle,status", ["input_status", "input_status_2"]),
])
def test_4_clashing_column_names_are_all_carried(tmp_path, header, carried):
    (tmp_path / "r4.csv").write_text(f"{header}\na,b,c\n".replace("a,b,c", _row(header)))
    code, _, err = run(["run", "-i", "r4.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert [c for c in frame.columns if c in carried] == carried
    assert frame["status"].to_list() == ["solved"]


def _row(header: str) -> str:
    return ",".join(PUZZLE if name == "puzzle" else f"v{i}"
                    for i, name in enumerate(header.split(",")))


@pytest.mark.skipif(not KAGGLE.exists(), reason="shared data absent")
def test_5_cr_only_line_ends(tmp_path):
    data = KAGGLE.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    (tmp_path / "mac.csv").write_bytes(data)
    code, out, err = run(["run", "-i", "mac.csv", "-o", "out", "--chunk-size", "1000",
                          "--json", "-q"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["counts"]["solved"] == 9999


# ---------------------------------------------------------------------------------------
# 6-8: hangs and stale locks


@pytest.mark.parametrize("attempt", range(3))
def test_6_a_worker_killed_halfway_through_sending_its_result(tmp_path, big, attempt):
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


def test_7_workers_die_with_their_parent_and_hold_no_lock(tmp_path, big):
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


@pytest.mark.parametrize("attempt", range(4))
def test_8_a_second_ctrl_c_while_stopping(tmp_path, big, attempt):
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
def test_8_two_quick_ctrl_c_at_any_moment(tmp_path, big, delay):
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


def test_9_fifo_and_process_substitution(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = f"{PUZZLE}\n{LEET}\n"
    writer = threading.Thread(target=lambda: fifo.write_text(text), daemon=True)
    writer.start()
    code, out, err = run(["run", "-i", fifo, "-o", "out", "--json", "-q"], tmp_path)
    assert code == 0, err
    assert read_results(tmp_path / "out")["status"].to_list() == ["solved", "solved"]
    (tmp_path / "f.txt").write_text(text)
    cmd = " ".join(pipeline_command()) + " run -i <(cat f.txt) -o out2 --json -q"
    res = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True,
                         env=_env())
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counts"]["solved"] == 2


def test_9_gzip_on_stdin(tmp_path):
    data = gzip.compress(f"quizzes,solutions\n{PUZZLE},{SOLUTION}\n".encode())
    proc = subprocess.run([*pipeline_command(), "run", "-i", "-", "-o", "out", "--json", "-q"],
                          input=data, cwd=tmp_path, capture_output=True, env=_env())
    assert proc.returncode == 0, proc.stderr
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["solved"] and frame["expected_match"].to_list() == [True]


# ---------------------------------------------------------------------------------------
# 10: provenance


def test_10_an_input_edited_during_the_run(tmp_path, big):
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
    assert "big.txt changed while the run read it" in one_line(err)
    assert not (tmp_path / "out" / "_SUCCESS").exists()


# ---------------------------------------------------------------------------------------
# 11-13: messages for conditions of the machine, and signals at start-up


def _mount(*args: str) -> None:
    res = subprocess.run(["mount", *args], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount here ({res.stderr.strip() or res.returncode})")


@pytest.fixture
def tiny_tmpfs(tmp_path):
    where = tmp_path / "tiny"
    where.mkdir()
    _mount("-t", "tmpfs", "-o", "size=128k", "tmpfs", str(where))
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def read_only(tmp_path):
    """(a folder, a read-only view of it at another path)."""
    src, view = tmp_path / "rw", tmp_path / "ro"
    src.mkdir()
    view.mkdir()
    _mount("--bind", str(src), str(view))
    res = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
    if res.returncode != 0:
        subprocess.run(["umount", str(view)], check=False)
        pytest.skip("cannot remount read-only here")
    yield src, view
    subprocess.run(["umount", "-l", str(view)], check=False)


def test_11_a_read_only_output_folder(tmp_path, read_only):
    _, view = read_only
    for out in (view, view / "new"):
        code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", out, "-q"], tmp_path)
        assert code == 3, err
        line = one_line(err)
        assert "read-only file system" in line and str(view) in line
        assert "internal error" not in line


def test_11_a_full_disk_before_the_run_starts(tmp_path, tiny_tmpfs):
    (tiny_tmpfs / "filler").write_bytes(b"x" * (128 << 10))
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", tiny_tmpfs / "out", "-q"], tmp_path)
    assert code == 3, err
    line = one_line(err)
    assert "no space left on device" in line and "internal error" not in line


def test_11_a_full_disk_mid_run(tmp_path, tiny_tmpfs):
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", tiny_tmpfs / "out", "--chunk-size",
                        "100", "-q"], tmp_path)
    assert code == 3, err
    assert "no space left on device" in one_line(err)
    assert not (tiny_tmpfs / "out" / "_SUCCESS").exists()


def test_11_an_immutable_lock_file(tmp_path):
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


def test_11_output_naming_a_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", "afile", "-q"], tmp_path)
    assert code == 2 and "is a file, not a folder" in one_line(err)


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
def test_12_a_stop_signal_early_in_start_up(tmp_path, sig, code, after):
    proc = start(["run", "-i", SAMPLE_CSV, "-o", "out", "-q"], tmp_path)
    _wait_for_our_handlers(proc)
    time.sleep(after)
    proc.send_signal(sig)
    got, _, err = finish(proc)
    if got == 0:
        return  # it finished first: nothing to stop
    assert got == code
    assert f"stopped by {sig.name}" in one_line(err)


@pytest.mark.parametrize("point", ["after-plan", "before-stats"])
def test_12_ctrl_c_while_planning_or_writing_the_stats(tmp_path, big, point):
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


def test_13_a_finished_run_on_read_only_storage_is_already_done(tmp_path, read_only):
    src, view = read_only
    code, _, err = run(["run", "-i", SAMPLE_CSV, "-o", src / "out", "-q"], tmp_path)
    assert code == 0, err
    code, out, err = run(["run", "-i", SAMPLE_CSV, "-o", view / "out", "--json"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["already_done"] is True


# ---------------------------------------------------------------------------------------
# 14: durability


def test_14_a_torn_part_after_a_power_cut_is_done_again(tmp_path):
    args = ["run", "-i", SAMPLE_CSV, "-o", "out", "--chunk-size", "500", "--json", "-q"]
    code, _, err = run(args, tmp_path)
    assert code == 0, err
    before = comparable(read_results(tmp_path / "out"))
    parts = sorted((tmp_path / "out" / "results").glob("part-*.parquet"))
    lost = pl.read_parquet(parts[2]).height + pl.read_parquet(parts[4]).height
    os.truncate(parts[2], 0)
    with open(parts[4], "r+b") as f:  # a part cut short
        f.truncate(parts[4].stat().st_size // 2)
    (tmp_path / "out" / "_SUCCESS").unlink()
    code, out, err = run(args, tmp_path)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["resumed_rows"] == 3000 - lost
    assert comparable(read_results(tmp_path / "out")).equals(before)
    log = (tmp_path / "out" / "logs" / "run.jsonl").read_text()
    assert f"results/{parts[2].name} cannot be read whole" in log
    assert f"results/{parts[4].name} cannot be read whole" in log


def test_14_every_file_is_synced_before_its_rename(tmp_path):
    """strace: each part, the stats, the manifest and _SUCCESS are fsynced, then renamed,
    and the folder fsynced after; _SUCCESS comes last."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace"
    cmd = ["strace", "-f", "-qq", "-e", "trace=fsync,rename,renameat,renameat2", "-o",
           str(trace), *pipeline_command(), "run", "-i", str(SAMPLE_CSV), "-o", "out",
           "--chunk-size", "1000", "-q"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=_env())
    assert res.returncode == 0, res.stderr
    calls = [ln.split(None, 1) for ln in trace.read_text().splitlines() if "(" in ln]
    renames = [c for _, c in calls if c.startswith("rename")]
    assert renames[-1].count("_SUCCESS") == 2
    parts = list((tmp_path / "out" / "results").glob("part-*.parquet"))
    assert sum("part-" in r for r in renames) == len(parts) >= 3
    synced: dict[str, bool] = {}  # per process: an fsync since its last rename
    for pid, call in calls:
        if call.startswith("fsync"):
            synced[pid] = True
        elif call.startswith("rename"):
            assert synced.get(pid), call
            synced[pid] = False
