"""Resume and rerun (README: Nothing lost): the parts are the journal. A run killed at any
moment (kill -9, a power cut, a full disk) is resumed by the same command, with the rows of
an undisturbed run and only the rows it solved counted; a torn part is done again; every
file is synced before its rename; the same command on a finished folder (or a copy of it)
is already done; a folder holding another run, or none, is refused unless --overwrite.
A run from standard input or `<(...)` is known by its copy's hashes: stopped, it resumes.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import time

import polars as pl
import pytest
from conftest import (
    LEET,
    PUZZLE,
    SAMPLE_CSV,
    comparable,
    pipeline_command,
    read_results,
    write_input,
)
from helpers import (
    BIG_ROWS,
    big_args,
    check_run,
    clean_env,
    finish,
    kill_group,
    one_line,
    parts_in,
    run,
    run_stats,
    start,
    wait_for,
)

# ---------------------------------------------------------------------------------------
# Killed, then the same command


@pytest.mark.slow
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
    code, stdout, err = run(big_args(name, "--json"), workdir)
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
    code, _, err = run(big_args(name), workdir)
    assert code == 0 and "already done" in err


@pytest.mark.slow
def test_killed_before_its_manifest_then_resumed(workdir, baseline):
    """The folder a kill -9 leaves between creating results/ and writing the manifest."""
    out = workdir / "early"
    shutil.rmtree(out, ignore_errors=True)
    (out / "results").mkdir(parents=True)
    (out / "logs").mkdir()
    (out / ".lock").write_text("pid 1 on nowhere since long ago")
    (out / "results" / ".part-00000.parquet.tmp").write_bytes(b"PAR1")
    code, _, err = run(big_args("early"), workdir)
    assert code == 0, err
    assert not list(out.rglob("*.tmp"))
    assert comparable(read_results(out)).equals(baseline)


@pytest.mark.slow
def test_resume_with_other_workers_and_chunk_size(workdir, baseline):
    out = workdir / "other_chunks"
    shutil.rmtree(out, ignore_errors=True)
    proc = start(big_args("other_chunks"), workdir)
    wait_for(lambda: len(parts_in(out)) >= 60, proc)
    kill_group(proc)
    code, stdout, err = run(["run", "-i", "big.txt", "-o", "other_chunks", "--workers", "1",
                                  "--chunk-size", "777", "--json"], workdir)
    assert code == 0, err
    assert comparable(read_results(out)).equals(baseline)


@pytest.mark.slow
def test_disk_full_then_space_freed_resumes(workdir, baseline, tiny_disk, tmp_path):
    out = tiny_disk / "out"
    code, _, err = run(["run", "-i", "big.txt", "-o", out, "--workers", "2",
                             "--chunk-size", "40"], workdir)
    assert code == 3, err
    # Move what was written to roomy storage and finish there.
    roomy = workdir / "from_full"
    shutil.rmtree(roomy, ignore_errors=True)
    shutil.copytree(out, roomy)
    code, stdout, err = run(["run", "-i", "big.txt", "-o", roomy, "--workers", "2",
                                  "--chunk-size", "40", "--json"], workdir)
    assert code == 0, err
    assert comparable(read_results(roomy)).equals(baseline)


def test_a_resume_counts_only_the_rows_it_solved(run_cli, tmp_path):
    (tmp_path / "a.txt").write_text("\n".join([PUZZLE, LEET] * 200) + "\n")
    args = ["run", "-i", "a.txt", "-o", "out", "--chunk-size", "100", "--json", "-q"]
    assert run_cli(*args).returncode == 0
    parts = sorted((tmp_path / "out" / "results").glob("part-*.parquet"))
    kept = sum(pl.read_parquet(p).height for p in parts[1:])
    parts[0].unlink()
    (tmp_path / "out" / "_SUCCESS").unlink()
    res = run_cli(*args)
    summary = json.loads(res.stdout)
    assert summary["resumed_rows"] == kept and summary["rows"] == 400
    st = run_stats(tmp_path / "out")["run"]
    assert st["resumed_rows"] == kept
    assert st["rows_per_second"] == pytest.approx((400 - kept) / st["wall_seconds"], rel=1e-6)


# ---------------------------------------------------------------------------------------
# Every file whole or absent


@pytest.mark.slow
def test_a_torn_part_after_a_power_cut_is_done_again(tmp_path):
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


@pytest.mark.slow
def test_every_file_is_synced_before_its_rename(tmp_path):
    """strace: each part, the stats, the manifest and _SUCCESS are fsynced, then renamed,
    and the folder fsynced after; _SUCCESS comes last."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace"
    cmd = ["strace", "-f", "-qq", "-e", "trace=fsync,rename,renameat,renameat2", "-o",
           str(trace), *pipeline_command(), "run", "-i", str(SAMPLE_CSV), "-o", "out",
           "--chunk-size", "1000", "-q"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=clean_env())
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


# ---------------------------------------------------------------------------------------
# Rerun: already done, another run's folder, --overwrite


def test_copy_of_folder_is_done(run_cli, tmp_path):
    write_input(tmp_path / "a.txt", PUZZLE + "\n")
    assert run_cli("run", "-i", "a.txt", "-o", "out", "--workers", "1").returncode == 0
    shutil.copytree(tmp_path / "out", tmp_path / "copy")
    res = run_cli("run", "-i", "a.txt", "-o", "copy", "--workers", "1")
    assert res.returncode == 0 and "already done" in res.stderr


def test_different_definition_needs_overwrite(run_cli, tmp_path):
    a = write_input(tmp_path / "a.txt", PUZZLE + "\n")
    out = tmp_path / "out"
    assert run_cli("run", "-i", a, "-o", out, "--workers", "1").returncode == 0
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1", "--first-solution")
    assert res.returncode == 2 and "--overwrite" in res.stderr
    # the message names what differs (it said "other inputs, columns or limit" of all)
    assert "holds a different run (other --first-solution)" in res.stderr
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1", "--no-timings", "--canonical")
    assert "(other --canonical, other --timings)" in res.stderr
    a.write_text(LEET + "\n")  # same path, other content
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1")
    assert res.returncode == 2 and "(inputs of other content)" in res.stderr
    assert (out / "_SUCCESS").exists()  # the old run is untouched
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1", "--overwrite")
    assert res.returncode == 0, res.stderr
    assert check_run(out)["puzzle"].to_list() == [LEET]


def test_foreign_folder_is_refused(run_cli, tmp_path):
    a = write_input(tmp_path / "a.txt", PUZZLE + "\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1")
    assert res.returncode == 2 and "precious.txt" in res.stderr
    assert (out / "precious.txt").read_text() == "keep me"


def test_overwrite_redoes_a_finished_run(run_cli, tmp_path):
    (tmp_path / "a.txt").write_text(PUZZLE + "\n")
    assert run_cli("run", "-i", "a.txt", "-o", "out", "-q").returncode == 0
    first = json.loads((tmp_path / "out" / "manifest.json").read_text())["run_id"]
    time.sleep(1.1)
    res = run_cli("run", "-i", "a.txt", "-o", "out", "--overwrite", "--json", "-q")
    assert res.returncode == 0 and json.loads(res.stdout)["already_done"] is False
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["run_id"] != first


def test_overwrite_clears_old_parts(run_cli, tmp_path):
    write_input(tmp_path / "a.txt", "\n".join([PUZZLE] * 6))
    assert run_cli("run", "-i", "a.txt", "-o", "out", "--workers", "1",
                   "--chunk-size", "1").returncode == 0
    write_input(tmp_path / "a.txt", "\n".join([LEET] * 2))
    res = run_cli("run", "-i", "a.txt", "-o", "out", "--workers", "1", "--chunk-size", "1",
                  "--overwrite")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {"a.txt": 2})
    assert frame["puzzle"].to_list() == [LEET, LEET]


# ---------------------------------------------------------------------------------------
# Inputs read once: standard input and process substitution, known by their copy's hashes


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stdin", "process substitution"])
def test_a_run_from_a_stream_stopped_by_ctrl_c_is_resumed_by_the_same_command(
        workdir, baseline, how):
    exe = " ".join(shlex.quote(p) for p in pipeline_command())
    flags = "--workers 2 --chunk-size 40 --json"
    if how == "stdin":
        out = workdir / "from-stdin"
        command = f"cat big.txt | {exe} run -i - -o {out.name} {flags}"
    else:  # its default folder is named for what it is, not for its descriptor's number
        out = workdir / "output" / "pipe"
        command = f"{exe} run -i <(cat big.txt) {flags}"
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.Popen(["bash", "-c", command], cwd=workdir, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert wait_for(lambda: len(parts_in(out)) >= 5, proc)
        if proc.poll() is not None:
            pytest.skip("the run finished before it could be stopped")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole pipeline, cat too
        code, _, err = finish(proc, timeout=60)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert code == 130, err
    line = one_line(err)
    assert "run the same command again to resume" in line
    assert how == "stdin" or "standard input" not in line

    again = subprocess.run(["bash", "-c", command], cwd=workdir, env=clean_env(),
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert 0 < summary["resumed_rows"] < BIG_ROWS and not summary["already_done"]
    assert comparable(read_results(out)).drop("source").equals(baseline.drop("source"))
    check_run(out)
    assert not (out / ".spill").exists()

    done = subprocess.run(["bash", "-c", command.replace(" --json", "")], cwd=workdir,
                          env=clean_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "already done" in done.stderr and str(out.relative_to(workdir)) in done.stderr
    assert not (out / ".spill").exists()
