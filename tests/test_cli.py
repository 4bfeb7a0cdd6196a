"""`pipeline run` end to end: in process through the CLI's entry point, and as a real process.

Every input shape, every row exactly once, stats that agree with the results, exit codes,
--json, one stderr line on failure, --help of every command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import typer
from conftest import (
    LEET,
    LEET_SOLUTION,
    PUZZLE,
    SAMPLE_CSV,
    SOLUTION,
    comparable,
    part_codecs,
    read_results,
    write_input,
)

from pipeline.cli.app import app

P0 = PUZZLE.replace(".", "0")
BAD_FULL = SOLUTION[0] * 2 + SOLUTION[2:]  # digit twice in grid row 1
UNSOLVABLE = "12345678." + "........9" + "." * 63
CONTRACT_COLUMNS = ["source", "row", "puzzle", "status", "solution", "n_solutions", "guesses",
                    "reason", "expected_match"]
STATUSES = ["solved", "multiple", "unsolvable", "invalid", "malformed", "error"]

# name -> (content, rows). Every shape the pipeline promises to read.
SHAPES: dict[str, tuple[str | bytes, int]] = {
    "kaggle.csv": (f"quizzes,solutions\n{P0},{SOLUTION}\n{P0},{SOLUTION}\n{P0},{SOLUTION}\n", 3),
    "radcliffe.csv": ("id,puzzle,solution,clues,difficulty\r\n"
                      f"1,{PUZZLE},{SOLUTION},26,2.2\r\n2,{LEET},{LEET_SOLUTION},30,0.0\r\n", 2),
    "noheader.csv": (f"{P0},{SOLUTION}\n{LEET.replace('.', '0')},{LEET_SOLUTION}\n", 2),
    "comments.txt": (f"# c\n\n{PUZZLE}\n# c2\n{LEET}\n\n", 2),
    "norvig.txt": (f"3\n{PUZZLE}\n{LEET}\n{PUZZLE}", 3),
    "royle.txt": (f"Gordon F. Royle, A collection of 49,151 Sudoku\n{P0}\n{P0}\n", 2),
    "bom_crlf.csv": (b"\xef\xbb\xbfpuzzle,solution\r\n" + f"{PUZZLE},{SOLUTION}\r\n".encode(), 1),
    "fixed.txt": (f"00015097c6c3 {P0}  7.2\n0001d2888928 {P0}  7.1\n", 2),
    "kaggle.csv.gz": (f"quizzes,solutions\n{P0},{SOLUTION}\n", 1),
    "text.txt.gz": (f"# gz\n{PUZZLE}\n{LEET}\n", 2),
}


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
        bad = frame.filter(pl.col("status").is_in(["invalid", "malformed", "error"]))
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


# ---------------------------------------------------------------------------------------
# In process (the run_cli fixture: the entry point, its streams captured)


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_input_shape(run_cli, tmp_path, name):
    content, n = SHAPES[name]
    path = write_input(tmp_path / name, content)
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1", "--chunk-size", "2",
              "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["rows"] == n and summary["counts"]["solved"] == n
    frame = check_run(tmp_path / "out", {str(path): n})
    assert (frame["status"] == "solved").all()
    if "expected_solution" in frame.columns:
        assert frame["expected_match"].all()
    else:
        assert frame["expected_match"].is_null().all()


def test_radcliffe_columns_carried(run_cli, tmp_path):
    path = write_input(tmp_path / "r.csv", SHAPES["radcliffe.csv"][0])
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out")
    assert frame.columns[-4:] == ["id", "clues", "difficulty", "expected_solution"]
    assert frame["id"].to_list() == ["1", "2"]
    assert frame["solution"].to_list() == [SOLUTION, LEET_SOLUTION]


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


def test_expected_mismatch_is_reported(run_cli, tmp_path):
    wrong = LEET_SOLUTION
    path = write_input(tmp_path / "e.csv", f"puzzle,solution\n{PUZZLE},{SOLUTION}\n"
                                           f"{PUZZLE},{wrong}\n{PUZZLE},\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out")
    assert frame["expected_match"].to_list() == [True, False, None]


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


def test_several_inputs_and_globs(run_cli, tmp_path):
    for i in range(3):
        write_input(tmp_path / f"in{i}.txt", "\n".join([PUZZLE] * (i + 2)))
    write_input(tmp_path / "other.csv", SHAPES["kaggle.csv"][0])
    out = tmp_path / "out"
    res = run_cli("run", "-i", tmp_path / "in*.txt", "-i", tmp_path / "other.csv", "-o", out,
              "--workers", "2", "--chunk-size", "2")
    assert res.returncode == 0, res.stderr
    frame = check_run(out, {str(tmp_path / f"in{i}.txt"): i + 2 for i in range(3)}
                      | {str(tmp_path / "other.csv"): 3})
    stats = pl.read_parquet(out / "stats.parquet")
    assert stats.filter(pl.col("scope") == "file").height == 4
    assert frame.height == 12


def test_stdin(run_cli, tmp_path):
    res = run_cli("run", "-i", "-", "-o", tmp_path / "out", "--workers", "1", "--json",
              input=f"{PUZZLE}\n{LEET}\n".encode())
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {"-": 2})
    assert frame["solution"].to_list() == [SOLUTION, LEET_SOLUTION]


def test_default_output_folder_is_named_after_first_input(run_cli, tmp_path):
    path = write_input(tmp_path / "my.puzzles.txt.gz", PUZZLE + "\n")
    res = run_cli("run", "-i", path, "--workers", "1")
    assert res.returncode == 0, res.stderr
    check_run(tmp_path / "output" / "my")


def test_different_definition_needs_overwrite(run_cli, tmp_path):
    a = write_input(tmp_path / "a.txt", PUZZLE + "\n")
    out = tmp_path / "out"
    assert run_cli("run", "-i", a, "-o", out, "--workers", "1").returncode == 0
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1", "--first-solution")
    assert res.returncode == 2 and "--overwrite" in res.stderr
    a.write_text(LEET + "\n")  # same path, other content
    res = run_cli("run", "-i", a, "-o", out, "--workers", "1")
    assert res.returncode == 2
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


def _part_sizes(out: Path) -> list[int]:
    return [pl.read_parquet(p).height for p in sorted((out / "results").glob("*.parquet"))]


def test_env_and_flags_reach_the_run(run_cli, tmp_path):
    path = write_input(tmp_path / "a.txt", "\n".join([PUZZLE] * 10) + "\n")
    assert run_cli("run", "-i", path, "-o", tmp_path / "o1", "--workers", "1",
                   env={"PIPELINE_CHUNK_SIZE": "3"}).returncode == 0
    assert _part_sizes(tmp_path / "o1") == [3, 3, 3, 1]
    assert run_cli("run", "-i", path, "-o", tmp_path / "o2", "--workers", "1",
               "--chunk-size", "5").returncode == 0
    assert _part_sizes(tmp_path / "o2") == [5, 5]
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nchunk_size = 2\nfail_on = ['solved']\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "o3", "--workers", "1", "-c", cfg)
    assert res.returncode == 1
    assert _part_sizes(tmp_path / "o3") == [2] * 5


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


@pytest.mark.parametrize("cmd", ["run", "solve"])
def test_help_mentions_every_option(run_cli, cmd):
    res = run_cli(cmd, "--help")
    assert res.returncode == 0
    command = typer.main.get_command(app).commands[cmd]
    text = " ".join(res.stdout.split())
    for param in command.params:
        for opt in param.opts + param.secondary_opts:
            if opt.startswith("-"):
                assert opt in text, f"{cmd} --help does not mention {opt}"


def test_help_lists_commands(run_cli):
    res = run_cli("--help")
    assert res.returncode == 0
    for name in typer.main.get_command(app).commands:
        assert name in res.stdout


def test_solve_command(run_cli):
    res = run_cli("solve", PUZZLE, "--format", "line")
    assert res.returncode == 0 and res.stdout.strip() == SOLUTION
    res = run_cli("solve", LEET)
    assert res.returncode == 0 and res.stdout.startswith("solved")
    res = run_cli("solve", "-", "-f", "line", input=f"# c\n{PUZZLE}\n\n{BAD_FULL}\n")
    assert res.returncode == 1
    assert res.stdout.splitlines() == [SOLUTION, "invalid"]
    assert res.stderr.splitlines() == [f"row 1: invalid: digit {SOLUTION[0]} twice in grid row 1"]
    res = run_cli("solve", PUZZLE, "--format", "fancy")
    assert res.returncode == 2


# ---------------------------------------------------------------------------------------
# The console script as a real process: its streams, its stdin, its pool from a cold start


@pytest.mark.slow
@pytest.mark.parametrize("name", ["radcliffe.csv", "kaggle.csv.gz"])
def test_every_input_shape_as_a_process(run_process, tmp_path, name):
    content, n = SHAPES[name]
    path = write_input(tmp_path / name, content)
    res = run_process("run", "-i", path, "-o", "out", "--workers", "2", "--chunk-size", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == n
    assert res.stdout.count("\n") == 1  # one JSON object, one line
    check_run(tmp_path / "out", {str(path): n})


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


@pytest.mark.slow
def test_stdin_as_a_process(run_process, tmp_path):
    data = f"quizzes,solutions\n{P0},{SOLUTION}\n{P0},{SOLUTION}\n".encode()
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", "--json", input=data)
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {"-": 2})
    assert frame["expected_match"].all()
    # A run from stdin cannot be resumed or recognised: refused without --overwrite.
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", input=data)
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", "--overwrite",
                  input=data)
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------------------------------
# In process again: globs, failures, exit codes, the shared sets


def test_glob(run_cli, tmp_path):
    (tmp_path / "d").mkdir()
    for i in range(3):
        write_input(tmp_path / "d" / f"p{i}.txt", "\n".join([PUZZLE] * (i + 1)))
    res = run_cli("run", "-i", "d/*.txt", "-o", "out", "--workers", "2", "--chunk-size", "1",
                  "--json")
    assert res.returncode == 0, res.stderr
    check_run(tmp_path / "out", {f"d/p{i}.txt": i + 1 for i in range(3)})


def _one_line_failure(res, code: int, out: Path | None = None, needle: str | None = None):
    assert res.returncode == code, (res.returncode, res.stderr)
    assert len(res.stderr_lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    if needle:
        assert needle in res.stderr
    if out is not None:
        assert not (out / "_SUCCESS").exists()


def test_usage_and_input_errors_exit_2_with_one_line(run_cli, tmp_path):
    good = write_input(tmp_path / "good.txt", PUZZLE + "\n")
    write_input(tmp_path / "bin.dat", b"\x00\x01\x02" * 50)
    write_input(tmp_path / "noise.txt", bytes(range(0x80, 0x100)) * 40)
    write_input(tmp_path / "cols.csv", "a,b,c\n1,2,3\n")
    (tmp_path / "folder").mkdir()
    cases = [
        (("run", "-i", "missing.txt"), "no such file"),
        (("run", "-i", "folder"), "folder"),
        (("run", "-i", "bin.dat"), "not a text file"),
        (("run", "-i", "noise.txt"), "not a text file"),
        (("run", "-i", "cols.csv"), "no puzzle column"),
        (("run", "-i", "good.txt", "--puzzle-column", "nope"), None),
        (("run", "-i", "nothing*.csv"), "no file matches"),
        (("run", "-i", "good.txt", "--fail-on", "bogus"), "bogus"),
        (("run", "-i", "good.txt", "--executor", "spark"), "spark"),
        (("run", "-i", "good.txt", "--log-level", "loud"), None),
        (("run", "-i", "good.txt", "--workers", "abc"), None),
        (("run", "-i", "good.txt", "--workers", "-2"), None),
        (("run", "-i", "good.txt", "--chunk-size", "0"), None),
        (("run", "-i", "good.txt", "--no-such-option"), None),
        (("run",), "--input"),
        (("run", "-i", "good.txt", "-c", "missing.toml"), "missing.toml"),
        (("run", "-i", "-", "-i", "-"), None),
        (("frobnicate",), None),
    ]
    for args, needle in cases:
        res = run_cli(*args, "-o", "out") if args[0] == "run" and len(args) > 1 else run_cli(*args)
        _one_line_failure(res, 2, tmp_path / "out", needle)
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    assert good.exists()


def test_env_usage_error(run_cli, tmp_path):
    write_input(tmp_path / "g.txt", PUZZLE + "\n")
    res = run_cli("run", "-i", "g.txt", "-o", "out", env={"PIPELINE_WORKERS": "many"})
    _one_line_failure(res, 2, tmp_path / "out", "workers")


def test_bare_command_exit_2(run_cli):
    res = run_cli()
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert "run" in res.stdout  # the help, on stdout


def test_fail_on_and_already_done(run_cli, tmp_path):
    write_input(tmp_path / "m.txt", f"{PUZZLE}\n{BAD_FULL}\n")
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--fail-on", "invalid")
    _one_line_failure(res, 1)
    assert (tmp_path / "out" / "_SUCCESS").exists()  # finished; only the exit code says no
    res = run_cli("run", "-i", "m.txt", "-o", "out", "--workers", "1", "--json")
    assert res.returncode == 0
    summary = json.loads(res.stdout)
    assert summary["already_done"] is True and summary["rows"] == 2


def test_output_is_a_file(run_cli, tmp_path):
    write_input(tmp_path / "g.txt", PUZZLE + "\n")
    (tmp_path / "out").write_text("not a folder")
    res = run_cli("run", "-i", "g.txt", "-o", "out", "--workers", "1")
    assert res.returncode in (2, 3)
    assert len(res.stderr_lines) == 1 and "Traceback" not in res.stderr


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


def test_shared_norvig_and_royle(run_cli, tmp_path, shared_data):
    files = [shared_data / "norvig" / "top95.txt", shared_data / "norvig" / "hardest.txt"]
    res = run_cli("run", *sum((["-i", str(f)] for f in files), []), "-o", "out",
                  "--workers", "2", "--chunk-size", "20", "--json")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {str(files[0]): 95, str(files[1]): 11})
    assert (frame["status"] == "solved").all()


def test_shared_sets_counts(run_cli, tmp_path, shared_data):
    # Small or medium shared files, whole: counts as SOURCES.md states them.
    cases = {
        "tdoku_benchmark_sets/puzzles6_forum_hardest_1106": (375, "solved"),
        "kaggle_radcliffe_3m/sudoku_curated_5000.csv": (5000, "solved"),
        "kaggle_bryanpark_1m/sudoku_small.csv": (9999, "solved"),
    }
    inputs = []
    for rel in cases:
        inputs += ["-i", str(shared_data / rel)]
    res = run_cli("run", *inputs, "-o", "out", "--workers", "2", "--chunk-size", "2500",
                  "--json", "--quiet")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {str(shared_data / k): v[0] for k, v in cases.items()})
    for rel, (_, status) in cases.items():
        part = frame.filter(pl.col("source") == str(shared_data / rel))
        assert (part["status"] == status).all(), rel
        if "expected_solution" in part.columns and part["expected_solution"].is_not_null().any():
            assert part["expected_match"].all(), rel


def test_shared_serg_is_multiple_and_crlf(run_cli, tmp_path, shared_data):
    src = shared_data / "tdoku_benchmark_sets" / "puzzles7_serg_benchmark"
    head = b"".join(src.read_bytes().splitlines(keepends=True)[:502])
    path = write_input(tmp_path / "serg.txt", head)
    res = run_cli("run", "-i", path, "-o", "out", "--workers", "2", "--chunk-size", "100")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {str(path): 500})
    assert (frame["status"] == "multiple").all()
    assert (frame["n_solutions"] == 2).all()


def test_shared_royle_and_diabolical_heads(run_cli, tmp_path, shared_data):
    royle = shared_data / "royle_17clue" / "sudoku17.txt"
    diab = shared_data / "sudoku_exchange_bank" / "diabolical.txt"
    a = write_input(tmp_path / "royle.txt", b"".join(royle.read_bytes().splitlines(True)[:301]))
    b = write_input(tmp_path / "diab.txt.gz", b"".join(diab.read_bytes().splitlines(True)[:300]))
    res = run_cli("run", "-i", a, "-i", b, "-o", "out", "--workers", "2", "--chunk-size", "64")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {str(a): 300, str(b): 300})
    assert (frame["status"] == "solved").all()


def test_copy_of_folder_is_done(run_cli, tmp_path):
    write_input(tmp_path / "a.txt", PUZZLE + "\n")
    assert run_cli("run", "-i", "a.txt", "-o", "out", "--workers", "1").returncode == 0
    shutil.copytree(tmp_path / "out", tmp_path / "copy")
    res = run_cli("run", "-i", "a.txt", "-o", "copy", "--workers", "1")
    assert res.returncode == 0 and "already done" in res.stderr


def test_a_file_named_twice_is_read_once(run_cli, tmp_path):
    write_input(tmp_path / "a.txt", f"{PUZZLE}\n{LEET}\n")
    write_input(tmp_path / "b.txt", f"{LEET}\n")
    res = run_cli("run", "-i", "a.txt", "-i", "*.txt", "-i", "./a.txt", "-o", "out",
              "--workers", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == 3
    check_run(tmp_path / "out", {"a.txt": 2, "b.txt": 1})


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
