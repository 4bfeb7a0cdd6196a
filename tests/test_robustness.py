"""The robustness promises, each with a real process doing the bad thing.

Crashing and raising rows, a worker killed with kill -9, the whole run killed with kill -9 at
a random moment and run again, SIGTERM/SIGINT, two runs into one folder, a full disk, a
100 MB line, a gzip bomb, and hypothesis feeding random bytes and CSV-ish text.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from conftest import LEET, PUZZLE, SAMPLE_CSV, SOLUTION, comparable, pipeline_command, read_results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli.exits import exit_code
from pipeline.errors import InputError, PipelineError
from pipeline.job import run as run_mod
from pipeline.job.settings import Settings

UNSOLVABLE = "12345678." + "........9" + "." * 63
BAD_FULL = SOLUTION[0] * 2 + SOLUTION[2:]

pytestmark = pytest.mark.slow  # real processes, kills and signals (and a few fuzzing runs)


# ---------------------------------------------------------------------------------------
# helpers


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


def start(args, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The CLI in its own process group (so the group can be killed like a terminal would)."""
    return subprocess.Popen([*pipeline_command(), *map(str, args)], cwd=cwd,
                            env={**_base_env(), **(env or {})}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=60)
    # Workers are in the same group; give the kernel a moment to reap them.
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)


def run_sync(args, cwd: Path, env=None, timeout: float = 240) -> tuple[int, str, str]:
    return finish(start(args, cwd, env), timeout)


def parts_in(out: Path) -> list[Path]:
    return sorted((out / "results").glob("part-*.parquet")) if (out / "results").is_dir() else []


def wait_for(predicate, proc: subprocess.Popen | None = None, timeout: float = 120,
             every: float = 0.01) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        if proc is not None and proc.poll() is not None:
            return predicate()
        time.sleep(every)
    return False


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


def one_line(err: str) -> list[str]:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines


def assert_every_row_once(out: Path, n: int, source: str) -> pl.DataFrame:
    frame = read_results(out)
    assert frame.height == n
    assert frame["source"].unique().to_list() == [source]
    assert frame["row"].to_list() == list(range(n))
    return frame


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder with a medium input (every status) and an undisturbed run of it."""
    d = tmp_path_factory.mktemp("robust")
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()
    lines = []
    for i in range(6):
        lines += puzzles
        lines += ["." * 81, UNSOLVABLE, BAD_FULL, PUZZLE[:80], f"junk {i}"]
    (d / "big.txt").write_text("\n".join(lines) + "\n")
    code, out, err = run_sync(["run", "-i", "big.txt", "-o", "base", "--workers", "2",
                               "--chunk-size", "40", "--quiet"], d)
    assert code == 0, err
    return d


BIG_ROWS = 6 * (3000 + 5)


@pytest.fixture(scope="module")
def baseline(workdir) -> pl.DataFrame:
    return comparable(read_results(workdir / "base"))


def big_args(out: str, *extra) -> list[str]:
    return ["run", "-i", "big.txt", "-o", out, "--workers", "2", "--chunk-size", "40", *extra]


# ---------------------------------------------------------------------------------------
# A row that kills or fails its worker every time


@pytest.mark.parametrize("how", ["crash", "raise"])
def test_poison_row_becomes_error_alone(tmp_path, sample_rows, how):
    puzzles = [p for p, _ in sample_rows[:60]]
    poison = puzzles[21]
    (tmp_path / "p.txt").write_text("\n".join(puzzles) + "\n")
    code, out, err = run_sync(["run", "-i", "p.txt", "-o", "out", "--workers", "2",
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
    code, _, err = run_sync(["run", "-i", "p.txt", "-o", "out", "--workers", "1",
                             "--chunk-size", "4", "-q"], tmp_path,
                            env={"PIPELINE_FAULT_INJECT": f"raise:{PUZZLE}"})
    assert code == 0, err
    frame = assert_every_row_once(tmp_path / "out", 4, "p.txt")
    assert frame["status"].to_list() == ["malformed", "error", "malformed", "solved"]
    assert frame["reason"][0] == "length 4, expected 81"


# ---------------------------------------------------------------------------------------
# kill -9 of a worker mid-run


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


# ---------------------------------------------------------------------------------------
# kill -9 of the whole run at a random moment, then the same command again


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kill_9_anywhere_then_resume(workdir, baseline, seed):
    rng = random.Random(seed)
    name = f"k9_{seed}"
    out = workdir / name
    shutil.rmtree(out, ignore_errors=True)
    # Seed 0 kills during start-up; the others after a random number of parts.
    target = 0 if seed == 0 else rng.randint(1, 150)
    proc = start(big_args(name), workdir)
    if target == 0:
        time.sleep(rng.uniform(0.05, 0.6))
    else:
        wait_for(lambda: len(parts_in(out)) >= target, proc)
    kill_group(proc)
    assert not (out / "_SUCCESS").exists() or proc.returncode == 0
    before = {p.name: p.read_bytes() for p in parts_in(out)}
    # A temporary file as a killed writer would leave it.
    if (out / "results").is_dir():
        (out / "results" / ".part-09999.parquet.tmp").write_bytes(b"PAR1 half")
    code, stdout, err = run_sync(big_args(name, "--json"), workdir)
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["rows"] == BIG_ROWS
    if not summary["already_done"]:
        assert summary["resumed_rows"] == sum(
            pl.read_parquet(out / "results" / n).height for n in before)
    for n, data in before.items():  # complete parts are reused as they were
        assert (out / "results" / n).read_bytes() == data
    assert not list(out.rglob("*.tmp"))
    assert comparable(read_results(out)).equals(baseline)
    # And done is done.
    code, _, err = run_sync(big_args(name), workdir)
    assert code == 0 and "already done" in err


# ---------------------------------------------------------------------------------------
# SIGTERM / SIGINT


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
    line = one_line(err)[0]
    assert "resume" in line
    assert not (out / "_SUCCESS").exists()
    # No worker outlives the run.
    assert wait_for(lambda: not _group_alive(proc.pid), timeout=10)
    got, _, err = run_sync(big_args(name), workdir)
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
# Two runs into one folder; kill -9 leaves no stale lock


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
        code, _, err = run_sync(big_args("locked"), workdir)
        assert code == 2
        line = one_line(err)[0]
        assert f"pid {first.pid}" in line
        # Different options do not get in either.
        code, _, err = run_sync(big_args("locked", "--first-solution", "--overwrite"), workdir)
        assert code == 2 and f"pid {first.pid}" in err
        assert first.poll() is None, "the refused run disturbed the first"
    finally:
        kill_group(first)
    code, _, err = run_sync(big_args("locked"), workdir)
    assert code == 0, err
    assert comparable(read_results(out)).equals(baseline)


# ---------------------------------------------------------------------------------------
# A full disk


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("needs root on Linux to mount a tiny tmpfs")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                         capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_exit_3(workdir, tiny_disk):
    out = tiny_disk / "out"
    code, _, err = run_sync(["run", "-i", str(workdir / "big.txt"), "-o", out, "--workers",
                             "2", "--chunk-size", "200"], workdir)
    assert code == 3, err
    line = one_line(err)[0]
    assert "No space left" in line or "space" in line.lower()
    assert not (out / "_SUCCESS").exists()
    for p in parts_in(out):  # no half-written part: every part reads whole
        assert pl.read_parquet(p).height > 0
    # Temporary names never match *.parquet, so a reader of results/*.parquet sees no half.
    assert not [p for p in out.rglob("*.parquet") if p.name.startswith(".")]


def test_disk_full_then_space_freed_resumes(workdir, baseline, tiny_disk, tmp_path):
    out = tiny_disk / "out"
    code, _, err = run_sync(["run", "-i", "big.txt", "-o", out, "--workers", "2",
                             "--chunk-size", "40"], workdir)
    assert code == 3, err
    # Move what was written to roomy storage and finish there.
    roomy = workdir / "from_full"
    shutil.rmtree(roomy, ignore_errors=True)
    shutil.copytree(out, roomy)
    code, stdout, err = run_sync(["run", "-i", "big.txt", "-o", roomy, "--workers", "2",
                                  "--chunk-size", "40", "--json"], workdir)
    assert code == 0, err
    assert comparable(read_results(roomy)).equals(baseline)


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
    line = one_line(err)[0]
    assert "cannot write" in line
    assert not (out / "_SUCCESS").exists()
    for p in sorted((out / "moved").glob("*.parquet")):
        assert pl.read_parquet(p).height > 0


# ---------------------------------------------------------------------------------------
# Huge lines and gzip bombs: streamed, memory flat


def _peak_rss_mb(args, cwd: Path) -> tuple[int, float, str]:
    """Exit code and the peak RSS (MB) of the run's own process, via a fresh wrapper."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "sys.stderr.write(r.stderr.decode('utf-8', 'replace'))\n"
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    res = subprocess.run([sys.executable, "-c", wrapper, *pipeline_command(), *map(str, args)],
                         cwd=cwd, env=_base_env(), capture_output=True, timeout=280)
    code, kb = res.stdout.decode().split()
    return int(code), int(kb) / 1024, res.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def small_peak(workdir) -> float:
    (workdir / "small.txt").write_text(f"{PUZZLE}\n{LEET}\n")
    code, peak, err = _peak_rss_mb(["run", "-i", "small.txt", "-o", "small_out", "--workers",
                                    "1"], workdir)
    assert code == 0, err
    return peak


def test_100mb_line_is_one_truncated_malformed_row(tmp_path, workdir, small_peak):
    path = tmp_path / "long.txt"
    piece = b"123456789" * (1 << 16)
    with open(path, "wb") as f:
        f.write(f"# a comment\n{PUZZLE}\n".encode())
        while f.tell() < 100 * (1 << 20):
            f.write(piece)
        f.write(f"\n{LEET}\n".encode())
    length = path.stat().st_size - len(f"# a comment\n{PUZZLE}\n") - len(f"\n{LEET}\n")
    code, peak, err = _peak_rss_mb(["run", "-i", path, "-o", tmp_path / "out", "--workers", "1"],
                                   tmp_path)
    assert code == 0, err
    frame = assert_every_row_once(tmp_path / "out", 3, str(path))
    assert frame["status"].to_list() == ["solved", "malformed", "solved"]
    reason = frame["reason"][1]
    assert "truncated" in reason and f"{length:,}" in reason
    assert len(frame["puzzle"][1]) < 10_000
    assert frame["puzzle"][1].startswith("123456789")
    assert peak - small_peak < 80, f"peak RSS {peak:.0f} MB vs {small_peak:.0f} MB for 2 rows"
    path.unlink()


def test_gzip_bomb_is_streamed(tmp_path, workdir, small_peak):
    path = tmp_path / "bomb.txt.gz"
    raw_size = 0
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(f"{PUZZLE}\n".encode() * 5)
        block = b"0" * (1 << 20)
        for _ in range(150):
            f.write(block)
        f.write(f"\n{LEET}\n".encode() * 5)
        raw_size = 150 * (1 << 20)
    assert raw_size / path.stat().st_size > 900
    code, peak, err = _peak_rss_mb(["run", "-i", path, "-o", tmp_path / "out", "--workers", "1"],
                                   tmp_path)
    assert code == 0, err
    frame = assert_every_row_once(tmp_path / "out", 11, str(path))
    assert frame["status"].to_list() == ["solved"] * 5 + ["malformed"] + ["solved"] * 5
    assert peak - small_peak < 80, f"peak RSS {peak:.0f} MB vs {small_peak:.0f} MB for 2 rows"


def test_many_rows_gzip_is_streamed(tmp_path, workdir, small_peak):
    path = tmp_path / "rows.csv.gz"
    row = f"{PUZZLE},{SOLUTION}\n".encode()
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(b"puzzle,solution\n")
        f.write(row * 200_000)  # ~33 MB of text
    code, peak, err = _peak_rss_mb(["run", "-i", path, "-o", tmp_path / "out", "--workers", "2",
                                    "--no-timings"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame.height == 200_000 and frame["row"].to_list() == list(range(200_000))
    assert peak - small_peak < 400, f"peak RSS {peak:.0f} MB vs {small_peak:.0f} MB"


# ---------------------------------------------------------------------------------------
# Hypothesis: random input never crashes the pipeline, and every row is accounted for


def _records(data: bytes, csv: bool) -> list[tuple[int, bytes]]:
    """(start, text) of each record, by the README's rules, written plainly: a record ends
    at LF, CRLF or CR; in a CSV a field starting with a quote runs to its closing quote."""
    out, i, n = [], 0, len(data)
    while i < n:
        start, field_start, end = i, True, None
        while i < n:
            c = data[i:i + 1]
            if c in (b"\n", b"\r"):
                end = i
                i += 2 if data[i:i + 2] == b"\r\n" else 1
                break
            if csv and c == b'"' and field_start:
                j = i + 1
                while j < n:  # the closing quote: a quote not doubled
                    if data[j:j + 1] == b'"':
                        if data[j + 1:j + 2] == b'"':
                            j += 2
                            continue
                        break
                    j += 1
                if j < n:
                    i, field_start = j + 1, False
                    continue
            field_start = c == b","
            i += 1
        out.append((start, data[start:i if end is None else end]))
    return out


def _expected_rows(data: bytes, shape: dict) -> int:
    """How many rows the README's rules find in `data` under the run's shape."""
    csv = shape["kind"] == "csv"
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    rows = 0
    for at, text in _records(data[start:], csv):
        body = text.strip(b" \t\x0b\x0c")
        if at + start < shape["data_start"] or not body:
            continue
        if not csv and body.startswith(b"#"):
            continue
        rows += 1
    return rows


def _run_in_process(path: Path, out: Path):
    settings_ = Settings(inputs=[str(path)], folder=str(out), quiet=True, workers=1,
                         chunk_size=3, timings=False)
    return run_mod.run(settings_)


def _check_accounted(data: bytes, tmp: Path) -> None:
    path = tmp / "in.txt"
    path.write_bytes(data)
    out = tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    try:
        summary = _run_in_process(path, out)
    except InputError:
        return  # an unusable input is a clear no (exit 2), not a crash
    except PipelineError as exc:  # anything else the pipeline refuses must be a usage error
        assert exit_code(exc) == 2, exc
        return
    assert (out / "_SUCCESS").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    shape = manifest["definition"]["inputs"][0]["layout"]
    frame = read_results(out)
    assert frame.height == _expected_rows(data, shape), shape
    assert frame["row"].to_list() == list(range(frame.height))
    assert summary.rows == frame.height
    assert frame["status"].is_not_null().all()
    bad = frame.filter(pl.col("status").is_in(["malformed", "invalid", "error"]))
    assert bad["reason"].is_not_null().all()
    assert not frame["reason"].drop_nulls().str.contains("\n").any()
    assert (frame["status"] != "error").all()


csvish_alphabet = st.sampled_from(
    list("0123456789.,\"\n\r #xé") + [PUZZLE, SOLUTION, "puzzle", "solution", ",", "\n"])


@given(st.binary(max_size=600))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_bytes_never_crash(tmp_path, data):
    _check_accounted(data, tmp_path)


@given(st.lists(csvish_alphabet, max_size=120).map("".join), st.booleans())
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_csvish_text_never_crashes(tmp_path, text, header):
    prefix = "id,puzzle,solution\n" if header else ""
    _check_accounted((prefix + text).encode("utf-8"), tmp_path)


@given(st.lists(st.one_of(st.just(PUZZLE), st.just(LEET), st.just(""), st.just("# c"),
                          st.text(alphabet="0123456789. x", max_size=90)), max_size=60),
       st.sampled_from(["\n", "\r\n"]))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_text_files_keep_every_line(tmp_path, lines, eol):
    data = eol.join(lines).encode()
    _check_accounted(data, tmp_path)


def test_truncated_gzip_is_a_clear_error(run_cli, tmp_path):
    good = gzip.compress(("\n".join([PUZZLE] * 5000) + "\n").encode())
    (tmp_path / "cut.txt.gz").write_bytes(good[: len(good) // 2])
    res = run_cli("run", "-i", "cut.txt.gz", "-o", "out", "--workers", "1")
    assert res.returncode in (2, 3), res.stderr
    assert len(res.stderr_lines) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "out" / "_SUCCESS").exists()



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
    assert "SIGTERM" in one_line(err)[0]
    assert not (out / "_SUCCESS").exists()
    code, _, err = run_sync(["run", "-i", path, "-o", out, "--workers", "2", "-q"], tmp_path)
    assert code == 0, err
    assert read_results(out).height == 400_000


def test_killed_before_its_manifest_then_resumed(workdir, baseline):
    """The folder a kill -9 leaves between creating results/ and writing the manifest."""
    out = workdir / "early"
    shutil.rmtree(out, ignore_errors=True)
    (out / "results").mkdir(parents=True)
    (out / "logs").mkdir()
    (out / ".lock").write_text("pid 1 on nowhere since long ago")
    (out / "results" / ".part-00000.parquet.tmp").write_bytes(b"PAR1")
    code, _, err = run_sync(big_args("early"), workdir)
    assert code == 0, err
    assert not list(out.rglob("*.tmp"))
    assert comparable(read_results(out)).equals(baseline)


def test_resume_with_other_workers_and_chunk_size(workdir, baseline):
    out = workdir / "other_chunks"
    shutil.rmtree(out, ignore_errors=True)
    proc = start(big_args("other_chunks"), workdir)
    wait_for(lambda: len(parts_in(out)) >= 60, proc)
    kill_group(proc)
    code, stdout, err = run_sync(["run", "-i", "big.txt", "-o", "other_chunks", "--workers", "1",
                                  "--chunk-size", "777", "--json"], workdir)
    assert code == 0, err
    assert comparable(read_results(out)).equals(baseline)
