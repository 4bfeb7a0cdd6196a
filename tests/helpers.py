"""Helpers (not fixtures: those are in conftest.py) that several test files share.

The command line as a real process in its own process group, waited for, stopped and killed
as a terminal would; the invariants of a finished run folder; the data-set tools' answers
computed here, independently of pipeline.tools; the test grids of the canonical form and
the symmetries; the rater's grid before a step of a path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import invoke, pipeline_command, read_results

# ---------------------------------------------------------------------------------------
# The command line as a real process


def on_a_terminal(cwd: Path, *args: str) -> tuple[int, str]:
    """The CLI on a real pty (the pipeline's variables as clean_env has them): its exit code and what the terminal
    showed (escape sequences removed)."""
    import pty
    import re

    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.environ.update(clean_env())
        os.execv(pipeline_command()[0], [*pipeline_command(), *args])
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    return os.waitstatus_to_exitcode(status), text


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without our settings and Dask's (PIPELINE_*, DASK_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPELINE_", "DASK_"))}
    env.update(extra)
    return env


def start(args, cwd: Path, env: dict[str, str] | None = None, **extra: str) -> subprocess.Popen:
    """The CLI in its own process group (so the group can be killed like a terminal would);
    `env` (or keywords) added to a clean environment."""
    return subprocess.Popen([*pipeline_command(), *map(str, args)], cwd=cwd,
                            env={**clean_env(), **(env or {}), **extra},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run(args, cwd: Path, env: dict[str, str] | None = None, timeout: float = 240,
        **extra: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the CLI run to its end as a real process."""
    return finish(start(args, cwd, env, **extra), timeout)


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


def wait_file(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert proc.poll() is None, finish(proc)
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def one_line(err: str) -> str:
    """The one line a failed command says on stderr (and no traceback)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def mount_or_skip(*args: str) -> None:
    """`mount ARGS`, or the test is skipped where mounting is not allowed."""
    res = subprocess.run(["mount", *args], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount here ({res.stderr.strip() or res.returncode})")


# The big run (the `big` fixture: 18,000 rows), long enough to be caught in the middle.
BIG = ["--workers", "2", "--chunk-size", "200", "--json", "-q"]


def start_big_at(hook: str, tmp_path: Path, big: Path) -> tuple[subprocess.Popen, Path]:
    """The big run with a test hook armed (pipeline.testhooks); the hooks' marker folder."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    proc = start(["run", "-i", big, "-o", "out", *BIG], tmp_path,
                 PIPELINE_TEST_HOOK=hook, PIPELINE_TEST_HOOK_DIR=str(hooks))
    return proc, hooks


# The run of the `workdir` fixture's big.txt (every status; the `baseline` fixture).
BIG_ROWS = 6 * (3000 + 5)


def big_args(out: str, *extra) -> list[str]:
    return ["run", "-i", "big.txt", "-o", out, "--workers", "2", "--chunk-size", "40", *extra]


# ---------------------------------------------------------------------------------------
# Run folders


CONTRACT_COLUMNS = ["source", "row", "puzzle", "status", "solution", "n_solutions", "guesses",
                    "reason", "expected_match"]
STATUSES = ["solved", "multiple", "unsolvable", "invalid", "malformed", "error"]


def parts_in(out: Path) -> list[Path]:
    return sorted((out / "results").glob("part-*.parquet")) if (out / "results").is_dir() else []


def assert_every_row_once(out: Path, n: int, source: str) -> pl.DataFrame:
    frame = read_results(out)
    assert frame.height == n
    assert frame["source"].unique().to_list() == [source]
    assert frame["row"].to_list() == list(range(n))
    return frame


def check_run(out: Path, expected_rows: dict[str, int] | None = None) -> pl.DataFrame:
    """The invariants of a finished run folder; returns its results."""
    out = Path(out)
    assert (out / "_SUCCESS").exists()
    assert not list(out.rglob("*.tmp"))
    parts = sorted((out / "results").glob("part-*.parquet"))
    schemas = {tuple(pl.read_parquet_schema(p).items()) for p in parts}
    assert len(schemas) <= 1, "all parts share one schema"
    frame = read_results(out)
    if parts:
        assert frame.columns[: len(CONTRACT_COLUMNS)] == CONTRACT_COLUMNS
        assert frame.schema["row"] == pl.Int64 and frame.schema["n_solutions"] == pl.Int8
        assert frame.schema["guesses"] == pl.Int64
        assert frame.schema["expected_match"] == pl.Boolean
        for c in ("solve_us", "grade"):
            assert c in frame.columns
    # Every row exactly once, numbered from 0 per file.
    assert frame.select("source", "row").is_duplicated().sum() == 0
    for src, group in frame.group_by("source"):
        assert sorted(group["row"].to_list()) == list(range(group.height)), src
    if expected_rows is not None:
        got = dict(frame.group_by("source").len().iter_rows())
        assert got == {k: v for k, v in expected_rows.items() if v}
    # Every row has a known status; solutions exactly where promised.
    assert set(frame["status"].unique().to_list()) <= set(STATUSES)
    if frame.height == 0:
        assert not parts or "solution" in frame.columns
    has = frame["status"].is_in(["solved", "multiple"])
    if parts:
        assert (frame["solution"].is_not_null() == has).all()
        assert (frame.filter(has)["solution"].str.len_chars() == 81).all()
        bad = frame.filter(pl.col("status").is_in(["unsolvable", "invalid", "malformed", "error"]))
        assert bad["reason"].is_not_null().all()
        assert not frame["reason"].drop_nulls().str.contains("\n").any()
    # Stats agree with the results.
    stats = pl.read_parquet(out / "stats.parquet")
    run_row = stats.filter(pl.col("scope") == "run")
    assert run_row.height == 1
    assert run_row["rows"][0] == frame.height
    for status in STATUSES:
        assert run_row[status][0] == frame.filter(pl.col("status") == status).height, status
    files = stats.filter(pl.col("scope") == "file")
    for src, n in files.select("source", "rows").iter_rows():
        assert n == frame.filter(pl.col("source") == src).height
    assert files["rows"].sum() == frame.height
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "finished" and manifest["rows"] == frame.height
    assert sum(p["rows"] for p in manifest["parts"]) == frame.height
    return frame


def run_stats(out) -> dict[str, dict]:
    """stats.parquet's rows by source (the run's row as "run")."""
    frame = pl.read_parquet(out / "stats.parquet")
    return {r["source"] or "run": r for r in frame.iter_rows(named=True)}


# ---------------------------------------------------------------------------------------
# The data-set tools (the `planted` fixture's run)


def pipeline_run(cwd: Path, out: str, *inputs: str, extra: tuple[str, ...] = ()) -> None:
    args = ["run", "--output", out, "--chunk-size", "50", "-q", *extra]
    for i in inputs:
        args += ["--input", i]
    done = invoke(args, cwd=cwd)
    assert done.returncode == 0, done.stderr


def equivalents(texts: list[str], rng: np.random.Generator) -> list[str]:
    from pipeline.sudoku import grid, symmetry

    g, bad = grid.encode(texts)
    assert not any(bad)
    return grid.decode(symmetry.transform(g, symmetry.random_transforms(rng, len(g))))


def first_occurrences(df: pl.DataFrame, sources: list[str]) -> pl.DataFrame:
    """One row per class, computed here: smallest (source order, row), and the copies."""
    order = pl.DataFrame({"source": sources, "_order": list(range(len(sources)))})
    return (df.filter(pl.col("canonical").is_not_null()).join(order, on="source")
            .sort("_order", "row")
            .group_by("canonical", maintain_order=True)
            .agg(pl.col("source").first(), pl.col("row").first(), pl.len().alias("copies"),
                 pl.col("_order").first())
            .sort("_order", "row").drop("_order"))


# ---------------------------------------------------------------------------------------
# Grids for the canonical form and the symmetries


def grid(text: str) -> np.ndarray:
    return (np.frombuffer(text.replace(".", "0").encode(), np.uint8) - 48).reshape(1, 81)


def random_grids(rng: np.random.Generator, n: int, lo: int, hi: int) -> np.ndarray:
    """n grids with lo..hi givens of random digits in random squares (clashes allowed)."""
    out = np.zeros((n, 81), np.uint8)
    for i in range(n):
        k = rng.integers(lo, hi + 1)
        out[i, rng.choice(81, k, replace=False)] = rng.integers(1, 10, k)
    return out


# ---------------------------------------------------------------------------------------
# The rater's grids


def grid_before(puzzle: str, k: int, steps) -> tuple[np.ndarray, np.ndarray]:
    """The placed digits and candidate masks before step k of the puzzle's path (steps:
    rate.path's)."""
    from pipeline.sudoku import grid as grids
    from pipeline.tools.explain import PLACED, candidates_before

    bits = candidates_before(grids.checked_batch([puzzle])[0][0], steps, k)
    val = np.array([(b & 0x1FF).bit_length() if b & PLACED else 0 for b in bits], np.int64)
    cand = np.array([0 if b & PLACED else b for b in bits], np.int64)
    return val, cand
