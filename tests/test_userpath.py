"""The user's path: honest figures, the progress bar and summary line, the conventions of a
command-line tool, --limit, Parquet inputs, `pipeline show`, `solve -`, `generate -o -`.

Most run in process (the run_cli fixture); the bar needs a real terminal (a pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest
from conftest import LEET, PUZZLE, SAMPLE_CSV, SOLUTION, comparable, pipeline_command, read_results

from pipeline.job import tally
from pipeline.sudoku import grade
from pipeline.sudoku.status import Status

# ---------------------------------------------------------------------------------------
# Conventions


@pytest.mark.slow
def test_version_and_python_dash_m(run_cli):
    from pipeline import __version__

    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"pipeline {__version__}"
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--version"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"pipeline {__version__}"


def test_help_shows_choices_metavars_and_completion(run_cli):
    top = run_cli("--help").stdout
    assert "--install-completion" in top and "--show-completion" in top
    text = " ".join(run_cli("run", "--help").stdout.split())
    for words in ("[local|dask]", "[debug|info|warning|error]", "--input PATH", "--workers N",
                  "--fail-on STATUS,...", "--output DIR", "--config FILE",
                  "env var: PIPELINE_WORKERS", "--limit N"):
        assert words in text, words
    assert "<list" not in text and "TEXT" not in text
    assert "[board|line]" in " ".join(run_cli("solve", "--help").stdout.split())


def test_the_default_config_needs_no_file(run_cli, tmp_path):
    """Defaults are built in: a run from any folder (or after `pip install .`) has them."""
    (tmp_path / "p.txt").write_text(PUZZLE + "\n")
    assert run_cli("run", "-i", "p.txt", "-o", "out", "-q").returncode == 0
    config = json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]
    assert config["chunk_size"] == 50000 and config["timings"] is True


# ---------------------------------------------------------------------------------------
# Figures


def _stats(out) -> dict[str, dict]:
    frame = pl.read_parquet(out / "stats.parquet")
    return {r["source"] or "run": r for r in frame.iter_rows(named=True)}


def test_per_file_figures_are_true_or_absent(run_cli, tmp_path):
    (tmp_path / "a.txt").write_text("\n".join([PUZZLE] * 300) + "\n")
    (tmp_path / "b.txt").write_text(LEET + "\n")
    assert run_cli("run", "-i", "a.txt", "-i", "b.txt", "-o", "two", "-q").returncode == 0
    st = _stats(tmp_path / "two")
    assert st["a.txt"]["wall_seconds"] is None and st["b.txt"]["rows_per_second"] is None
    assert st["a.txt"]["worker_seconds"] > 0 and st["b.txt"]["worker_seconds"] > 0
    assert st["run"]["wall_seconds"] > 0
    assert run_cli("run", "-i", "b.txt", "-o", "one", "-q").returncode == 0
    st = _stats(tmp_path / "one")
    assert st["b.txt"]["wall_seconds"] == st["run"]["wall_seconds"] > 0


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
    st = _stats(tmp_path / "out")["run"]
    assert st["resumed_rows"] == kept
    assert st["rows_per_second"] == pytest.approx((400 - kept) / st["wall_seconds"], rel=1e-6)


def test_overwrite_redoes_a_finished_run(run_cli, tmp_path):
    (tmp_path / "a.txt").write_text(PUZZLE + "\n")
    assert run_cli("run", "-i", "a.txt", "-o", "out", "-q").returncode == 0
    first = json.loads((tmp_path / "out" / "manifest.json").read_text())["run_id"]
    time.sleep(1.1)
    res = run_cli("run", "-i", "a.txt", "-o", "out", "--overwrite", "--json", "-q")
    assert res.returncode == 0 and json.loads(res.stdout)["already_done"] is False
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["run_id"] != first


def test_grade_boundaries():
    guesses = np.array([0, 1, 2, 3, 9, 10, 49, 50, 10_000])
    assert [grade.GRADES[g] for g in grade.grade_of_guesses(guesses)] == [
        "easy", "medium", "medium", "hard", "hard", "expert", "expert", "extreme", "extreme"]


def test_percentiles_are_exact_for_guesses_and_within_a_bin_for_times():
    t = tally.Tally()
    status = np.zeros(100, dtype=np.int64)
    t.add(status, np.arange(100), np.full(100, 1.0))
    t.add(np.array([Status.MALFORMED]), np.array([-1]), np.array([np.nan]))
    g = t.guesses_figures()
    assert (g["guesses_mean"], g["guesses_p99"], g["guesses_max"]) == (49.5, 98, 99)
    us = t.solve_us_figures()
    assert us["solve_us_max"] == 1.0
    assert all(abs(us[k] - 1.0) / 1.0 < 0.006 for k in ("solve_us_p50", "solve_us_p99"))
    assert t.count_of()["malformed"] == 1 and t.rows == 101


# ---------------------------------------------------------------------------------------
# Progress and the summary line


@pytest.mark.slow
def test_off_a_terminal_one_summary_line(tmp_path):
    proc = subprocess.run([*pipeline_command(), "run", "-i", str(SAMPLE_CSV), "-o", "out"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("pipeline: 3,000 rows in ") and "3,000 solved" in lines[0]
    assert lines[0].endswith("-> out")


@pytest.mark.slow
def test_on_a_terminal_a_bar_with_percent_and_time_left(tmp_path):
    """A real pty: the bar shows a percentage, rows/s and the time left, then the table."""
    (tmp_path / "big.txt").write_text("\n".join([PUZZLE] * 30000) + "\n")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execv(pipeline_command()[0], [*pipeline_command(), "run", "-i", "big.txt", "-o",
                                         "out", "--chunk-size", "1000", "--workers", "1"])
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
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "%" in text and "rows/s" in text and "solving into out" in text
    assert "30,000 rows in" in text and "solved" in text


# ---------------------------------------------------------------------------------------
# --limit, Parquet inputs


def test_limit_reads_only_the_first_rows(run_cli, tmp_path):
    text = "id,puzzle\n" + "".join(f"{i},{PUZZLE if i % 2 else LEET}\n" for i in range(100))
    (tmp_path / "a.csv").write_text(text)
    res = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "7", "--json", "-q")
    assert res.returncode == 0 and json.loads(res.stdout)["rows"] == 7
    frame = read_results(tmp_path / "out")
    assert frame["id"].to_list() == [str(i) for i in range(7)]
    assert not (tmp_path / "out" / ".spill").exists()
    again = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "7", "--json", "-q")
    assert json.loads(again.stdout)["already_done"] is True
    other = run_cli("run", "-i", "a.csv", "-o", "out", "--limit", "9", "-q")
    assert other.returncode == 2  # another limit is another run


def test_parquet_input_gives_the_rows_of_its_csv(run_cli, tmp_path):
    frame = pl.read_csv(SAMPLE_CSV, infer_schema=False)
    frame.write_parquet(tmp_path / "s.parquet", row_group_size=400)
    res = run_cli("run", "-i", "s.parquet", "-o", "pq", "--chunk-size", "1000", "-q")
    assert res.returncode == 0, res.stderr
    assert run_cli("run", "-i", str(SAMPLE_CSV), "-o", "csv", "-q").returncode == 0
    a = comparable(read_results(tmp_path / "pq")).drop("source")
    b = comparable(read_results(tmp_path / "csv")).drop("source")
    assert a.equals(b)
    parts = list((tmp_path / "pq" / "results").glob("part-*.parquet"))
    assert len(parts) == 4  # whole row groups of 400 rows, about 1000 rows a range
    res = run_cli("validate", "s.parquet")
    assert res.returncode == 0 and "3,000 valid" in res.stderr


@pytest.mark.slow
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
# show, solve -, generate -o -, validate causes


def test_show_the_rows_of_a_status(run_cli, tmp_path):
    lines = [PUZZLE, "bad1", "11" + "." * 79, "bad2", LEET, "bad3"]
    (tmp_path / "m.txt").write_text("\n".join(lines) + "\n")
    assert run_cli("run", "-i", "m.txt", "-o", "out", "-q").returncode == 0
    res = run_cli("show", "out", "--status", "malformed", "--limit", "2", "--format", "json")
    rows = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [(r["row"], r["status"]) for r in rows] == [(1, "malformed"), (3, "malformed")]
    assert rows[0]["reason"] == "length 4, expected 81" and rows[0]["source"] == "m.txt"
    res = run_cli("show", "out", "--format", "csv", "--limit", "0")
    assert pl.read_csv(res.stdout.encode())["row"].to_list() == [1, 2, 3, 5]
    res = run_cli("show", "out")
    assert res.returncode == 0 and "4 of 4" in res.stdout
    assert run_cli("show", "nowhere").returncode == 2


def test_solve_dash_reads_what_run_reads(run_cli):
    norvig = f"2\n{PUZZLE}\n{LEET}\n"
    res = run_cli("solve", "-", "-f", "line", input=norvig)
    assert res.returncode == 0 and res.stdout.split() == [SOLUTION, _solution(LEET)]
    kaggle = f"quizzes,solutions\n{PUZZLE.replace('.', '0')},{SOLUTION}\n"
    res = run_cli("solve", "-", "-f", "line", input=kaggle)
    assert res.returncode == 0 and res.stdout.split() == [SOLUTION]
    res = run_cli("solve", "-", "-f", "line", input="." * 81 + "\n")
    assert res.returncode == 0 and res.stdout.startswith("multiple ")
    assert len(res.stdout.split()[1]) == 81


def _solution(puzzle: str) -> str:
    from pipeline.sudoku import grid, solver

    return grid.decode(solver.solve_strings([puzzle]).solutions, blank="0")[0]


def test_generate_to_stdout(run_cli, tmp_path):
    res = run_cli("generate", "-n", "3", "--seed", "4", "-o", "-", "-q")
    assert res.returncode == 0
    frame = pl.read_csv(res.stdout.encode(), infer_schema=False)
    assert frame.columns == ["id", "puzzle", "solution", "clues", "difficulty"]
    assert frame.height == 3 and not (tmp_path / "-").exists()


def test_validate_json_causes_keep_words_with_digits(run_cli, tmp_path):
    (tmp_path / "u.txt").write_bytes(b"\xff" + PUZZLE[1:].encode() + b"\n" + PUZZLE.encode())
    res = run_cli("validate", "u.txt", "--json")
    doc = json.loads(res.stdout)
    assert "record is not valid UTF-8" in " ".join(doc["causes"])


# ---------------------------------------------------------------------------------------
# The data-set commands on a --canonical run (the tools are tested on their own too)


def test_dedup_split_augment_commands_and_distinct_classes(run_cli, tmp_path):
    from pipeline.sudoku import grid, symmetry

    base = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:40]
    g, _ = grid.encode(base)
    twins = grid.decode(symmetry.transform(
        g, symmetry.random_transforms(np.random.default_rng(1), len(g))))
    (tmp_path / "a.txt").write_text("\n".join(base) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(twins[:10] + ["junk"]) + "\n")
    res = run_cli("run", "-i", "a.txt", "-i", "b.txt", "-o", "run", "--canonical", "-q")
    assert res.returncode == 0, res.stderr
    st = _stats(tmp_path / "run")
    assert (st["run"]["distinct_classes"], st["a.txt"]["distinct_classes"],
            st["b.txt"]["distinct_classes"]) == (40, 40, 10)
    res = run_cli("dedup", "run", "-o", "classes.csv")
    assert res.returncode == 0, res.stderr
    classes = pl.read_csv(tmp_path / "classes.csv", infer_schema=False)
    assert classes.height == 40 and set(classes["source"]) == {"a.txt"}
    assert sorted(classes["copies"].cast(int).to_list()) == [1] * 30 + [2] * 10
    res = run_cli("split", "run", "--fractions", "0.5,0.5", "--names", "x,y", "-o", "splits",
              "--seed", "2")
    assert res.returncode == 0, res.stderr
    x = pl.read_parquet(tmp_path / "splits" / "x.parquet")
    y = pl.read_parquet(tmp_path / "splits" / "y.parquet")
    assert x.height + y.height == 50 and not set(x["canonical"]) & set(y["canonical"])
    res = run_cli("augment", "run", "-k", "3", "-o", "aug.parquet", "--seed", "5")
    assert res.returncode == 0, res.stderr
    assert pl.read_parquet(tmp_path / "aug.parquet").height == 3 * 50
    (tmp_path / "plain").mkdir()
    assert run_cli("run", "-i", "a.txt", "-o", "plain/run", "-q").returncode == 0
    res = run_cli("dedup", "plain/run", "-o", "x.csv")
    assert res.returncode == 2 and "canonical" in res.stderr
