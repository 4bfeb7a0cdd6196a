"""What a run writes and says, end to end (README: What a result looks like, The run
folder): a status for every row, with its reason and grade; the columns, their types and
codecs; stats that agree with the results, per file where true; the manifest and the log;
--first-solution, --no-timings, --canonical; the same rows whatever the workers and the
chunks; off a terminal one summary line, on a terminal a progress bar.
"""

from __future__ import annotations

import json
import subprocess

import polars as pl
import pytest
from conftest import (
    BAD_FULL,
    LEET,
    PUZZLE,
    SAMPLE_CSV,
    SOLUTION,
    UNSOLVABLE,
    comparable,
    part_codecs,
    pipeline_command,
    read_results,
    write_input,
)
from helpers import CONTRACT_COLUMNS, check_run, on_a_terminal, run_stats

# ---------------------------------------------------------------------------------------
# The results


def test_every_status_and_fail_on(run_cli, tmp_path):
    lines = [PUZZLE, "." * 81, UNSOLVABLE, BAD_FULL, PUZZLE[:80], PUZZLE[:40] + "x" + PUZZLE[41:]]
    path = write_input(tmp_path / "all.txt", "\n".join(lines) + "\n")
    out = tmp_path / "out"
    res = run_cli("run", "-i", path, "-o", out, "--workers", "1", "--chunk-size", "4", "--json",
              "--fail-on", "invalid,unsolvable")
    assert res.returncode == 1, res.stderr
    summary = json.loads(res.stdout)
    assert summary["exit_code"] == 1 and sorted(summary["failing"]) == ["invalid", "unsolvable"]
    frame = check_run(out)
    assert frame["status"].to_list() == ["solved", "multiple", "unsolvable", "invalid",
                                         "malformed", "malformed"]
    assert frame["n_solutions"].to_list() == [1, 2, 0, None, None, None]
    assert frame["reason"].to_list()[3:] == [f"digit {SOLUTION[0]} twice in grid row 1",
                                             "length 80, expected 81",
                                             "character 'x' at position 41"]
    assert frame["grade"].to_list()[0] is not None
    assert frame["grade"].to_list()[1:] == [None] * 5
    # A finished folder: the same command is "already done" and fails on the same statuses.
    res = run_cli("run", "-i", path, "-o", out, "--workers", "1", "--fail-on", "invalid")
    assert res.returncode == 1
    res = run_cli("run", "-i", path, "-o", out, "--workers", "2", "--chunk-size", "1")
    assert res.returncode == 0 and "already done" in res.stderr


def test_first_solution_mode(run_cli, tmp_path):
    path = write_input(tmp_path / "f.txt", f"{PUZZLE}\n{'.' * 81}\n{UNSOLVABLE}\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1", "--first-solution")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out")
    assert frame["status"].to_list() == ["solved", "solved", "unsolvable"]
    assert frame["n_solutions"].to_list() == [None, None, 0]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["uniqueness_checked"] is False


def test_no_timings(run_cli, tmp_path):
    path = write_input(tmp_path / "f.txt", f"{PUZZLE}\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1", "--no-timings")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out")
    assert frame["solve_us"].is_null().all()


def test_compression_of_the_grid_columns(run_cli, tmp_path):
    """The same results whatever the codec; auto leaves a local folder's grids uncompressed,
    every other column is zstd; an unknown codec is a usage error."""
    frames = {}
    for codec in ("auto", "zstd", "none"):
        out = tmp_path / codec
        res = run_cli("run", "-i", SAMPLE_CSV, "-o", out, "--compression", codec, "--quiet",
                      "--canonical")
        assert res.returncode == 0, res.stderr
        frames[codec] = comparable(read_results(out))
        codecs = part_codecs(out / "results" / "part-00000.parquet")
        grids = {c: k for c, k in codecs.items()
                 if c in ("puzzle", "solution", "canonical", "expected_solution")}
        assert len(grids) == 4
        want = "ZSTD" if codec == "zstd" else "UNCOMPRESSED"
        assert set(grids.values()) == {want}, codecs
        assert {k for c, k in codecs.items() if c not in grids} == {"ZSTD"}
        assert json.loads((out / "manifest.json").read_text())["config"]["compression"] == codec
    assert frames["auto"].equals(frames["zstd"]) and frames["none"].equals(frames["zstd"])
    bad = run_cli("run", "-i", SAMPLE_CSV, "-o", tmp_path / "bad", "--compression", "lz4")
    assert bad.returncode == 2 and "--compression" in bad.stderr


def test_canonical_column(run_cli, tmp_path):
    """--canonical: the minlex form for every well-formed row, equal for equivalent puzzles
    (a transposed and relabelled copy), null for malformed rows."""
    import numpy as np

    from pipeline.sudoku import canonical, grid, symmetry

    g, _ = grid.encode([PUZZLE])
    t = symmetry.random_transforms(np.random.default_rng(5), 1)
    twin = grid.decode(symmetry.transform(g, t))[0]
    bad_given = "11" + "." * 79
    (tmp_path / "c.txt").write_text("\n".join([PUZZLE, twin, "x" * 81, bad_given]) + "\n")
    result = run_cli("run", "-i", str(tmp_path / "c.txt"), "-o", str(tmp_path / "out"),
                 "--canonical", "-q")
    assert result.returncode == 0, result.output
    frame = read_results(tmp_path / "out")
    forms = frame["canonical"].to_list()
    assert forms[0] == forms[1] is not None and forms[2] is None and forms[3] is not None
    assert forms[0] == grid.decode(canonical.minlex(g)[0])[0]
    assert frame["automorphisms"].to_list()[:2] == [1, 1]
    assert frame["status"].to_list() == ["solved", "solved", "malformed", "invalid"]


@pytest.mark.parametrize("content", ["id,puzzle,solution\n", "", "# nothing\n\n"])
def test_file_without_rows_is_a_finished_run(run_cli, tmp_path, content):
    path = write_input(tmp_path / "h.csv", content)
    out = tmp_path / "out"
    res = run_cli("run", "-i", path, "-o", out, "--workers", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == 0
    frame = check_run(out)
    assert frame.height == 0
    # The results still read as a table, with the run's columns.
    whole = pl.read_parquet(out / "results" / "*.parquet")
    assert whole.height == 0 and whole.columns[:9] == CONTRACT_COLUMNS
    stats = pl.read_parquet(out / "stats.parquet")
    assert stats.filter(pl.col("scope") == "run")["rows"].to_list() == [0]


def test_deterministic_whatever_workers_and_chunks(run_cli, tmp_path, sample_rows):
    lines = [p for p, _ in sample_rows[:120]] + ["junk", "." * 81, UNSOLVABLE, BAD_FULL]
    path = write_input(tmp_path / "d.txt", "\n".join(lines) + "\n")
    frames = []
    for i, (w, c) in enumerate([(1, 1000), (2, 7), (1, 1)]):
        out = tmp_path / f"o{i}"
        res = run_cli("run", "-i", path, "-o", out, "--workers", w, "--chunk-size", c)
        assert res.returncode == 0, res.stderr
        frames.append(comparable(check_run(out)))
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])


@pytest.mark.slow
def test_sample_file_as_a_process(run_process, tmp_path):
    res = run_process("run", "-i", SAMPLE_CSV, "-o", "out", "--workers", "2", "--chunk-size", "400",
                  "--json", "--quiet")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    summary = json.loads(res.stdout)
    assert summary["rows"] == 3000 and summary["counts"]["solved"] == 3000
    frame = check_run(tmp_path / "out", {str(SAMPLE_CSV): 3000})
    assert frame["expected_match"].all()
    assert set(frame["grade"].unique().to_list()) <= {"easy", "medium", "hard", "expert",
                                                       "extreme"}
    assert (frame["solve_us"] >= 0).all()
    log = tmp_path / "out" / "logs" / "run.jsonl"
    assert log.exists()
    for line in log.read_text().splitlines():
        json.loads(line)


# ---------------------------------------------------------------------------------------
# The figures


def test_per_file_figures_are_true_or_absent(run_cli, tmp_path):
    (tmp_path / "a.txt").write_text("\n".join([PUZZLE] * 300) + "\n")
    (tmp_path / "b.txt").write_text(LEET + "\n")
    assert run_cli("run", "-i", "a.txt", "-i", "b.txt", "-o", "two", "-q").returncode == 0
    st = run_stats(tmp_path / "two")
    assert st["a.txt"]["wall_seconds"] is None and st["b.txt"]["rows_per_second"] is None
    assert st["a.txt"]["worker_seconds"] > 0 and st["b.txt"]["worker_seconds"] > 0
    assert st["run"]["wall_seconds"] > 0
    assert run_cli("run", "-i", "b.txt", "-o", "one", "-q").returncode == 0
    st = run_stats(tmp_path / "one")
    assert st["b.txt"]["wall_seconds"] == st["run"]["wall_seconds"] > 0


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
    code, text = on_a_terminal(tmp_path, "run", "-i", "big.txt", "-o", "out", "--chunk-size",
                                "1000", "--workers", "1")
    assert code == 0, text
    assert "%" in text and "rows/s" in text and "solving into out" in text
    assert "30,000 rows in" in text and "solved" in text


@pytest.mark.slow
def test_on_a_terminal_a_resumed_run_says_the_rows_reused(tmp_path):
    (tmp_path / "p.txt").write_text("\n".join([PUZZLE] * 3000) + "\n")
    args = ("run", "-i", "p.txt", "-o", "out", "--chunk-size", "500", "--workers", "1")
    assert on_a_terminal(tmp_path, *args)[0] == 0
    part = tmp_path / "out" / "results" / "part-00002.parquet"
    lost = pl.read_parquet(part).height
    part.unlink()
    (tmp_path / "out" / "_SUCCESS").unlink()
    code, text = on_a_terminal(tmp_path, *args)
    assert code == 0, text
    assert (f"3,000 rows: {3000 - lost:,} reused from before, {lost:,} solved in "
            in " ".join(text.split())), text


def test_an_unsolvable_row_says_why_in_the_results(run_cli, tmp_path):
    """README: `reason`, why a row is not solved, in one line: unsolvable rows too."""
    from conftest import UNSOLVABLE

    path = tmp_path / "u.txt"
    path.write_text(f"{UNSOLVABLE}\n")
    assert run_cli("run", "-i", path, "-o", "out", "--workers", "1", "-q").returncode == 0
    row = read_results(tmp_path / "out").row(0, named=True)
    assert row["status"] == "unsolvable"
    assert row["reason"] == "no digit fits the square at grid row 1, column 9"


def test_no_tool_writes_over_a_run_folders_own_files(run_cli, tmp_path):
    """A tool's --output (or --html) naming a part, the stats, or a place inside results/ of
    a run is a usage error, and the run's files stay as they were (report's own file,
    DIR/report.html, it may write)."""
    write_input(tmp_path / "p.txt", f"{PUZZLE}\n{LEET}\n{PUZZLE}\n")
    assert run_cli("run", "-i", "p.txt", "-o", "run", "--canonical").returncode == 0
    part = "run/results/part-00000.parquet"
    before = {p: (tmp_path / p).read_bytes() for p in (part, "run/stats.parquet")}
    for target in (part, "run/stats.parquet", "run/results/x.csv", "run/logs/y.csv"):
        for args in (("report", "run", "--html", target), ("overlap", "p.txt", "p.txt", "-o", target),
                     ("generate", "--count", "1", "--seed", "1", "-o", target),
                     ("dedup", "run", "-o", target), ("augment", "run", "-k", "1", "-o", target)):
            res = run_cli(*args)
            assert res.returncode == 2 and "the run's" in res.stderr, (args, res.stderr)
            said = "--html" if args[0] == "report" else "--output"  # the option, named
            assert res.stderr.startswith(f"pipeline: error: {said} {target}: "), res.stderr
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    res = run_cli("split", "run", "--fractions", "0.5,0.5", "-o", "run")
    assert res.returncode == 2 and "a run folder" in res.stderr, res.stderr
    assert run_cli("report", "run", "--html", "run/report.html").returncode == 0
    assert run_cli("show", "run").returncode == 0
