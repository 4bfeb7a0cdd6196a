"""Inputs, end to end (README: Inputs): every shape `pipeline run` reads (CSV with a header
or without, text, fixed-width records, Parquet, gzip, standard input, FIFOs, globs), the
rules for records, headers and quoted fields, the columns carried, the shared data sets;
every odd record a `malformed` row and none lost (random bytes, a 100 MB line, a gzip
bomb), memory flat.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from conftest import (
    LEET,
    LEET_SOLUTION,
    PUZZLE,
    RAW,
    SAMPLE_CSV,
    SOLUTION,
    comparable,
    pipeline_command,
    read_results,
    write_input,
)
from helpers import assert_every_row_once, check_run, clean_env, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli.exits import exit_code
from pipeline.errors import InputError, PipelineError
from pipeline.job import run as run_mod
from pipeline.job.settings import Settings

P0 = PUZZLE.replace(".", "0")


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


KAGGLE = RAW / "kaggle_bryanpark_1m" / "sudoku_small.csv"


# ---------------------------------------------------------------------------------------
# Every shape, in process and as a process


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


def test_expected_mismatch_is_reported(run_cli, tmp_path):
    wrong = LEET_SOLUTION
    path = write_input(tmp_path / "e.csv", f"puzzle,solution\n{PUZZLE},{SOLUTION}\n"
                                           f"{PUZZLE},{wrong}\n{PUZZLE},\n")
    res = run_cli("run", "-i", path, "-o", tmp_path / "out", "--workers", "1")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out")
    assert frame["expected_match"].to_list() == [True, False, None]


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


def test_many_small_files_share_parts(run_cli, tmp_path, sample_rows):
    """README: many small files. Small inputs share a part (of at most --chunk-size rows);
    a bigger one, a file of other columns and an empty one keep the rules; every row comes
    out once with its own source and row; a row that fails its worker is `error` alone in a
    shared part; the manifest stays small; a shared part lost is made again."""
    puzzles = [p for p, _ in sample_rows]
    d = tmp_path / "in"
    d.mkdir()
    expected = {}
    for i in range(120):
        n = i % 4  # 0 to 3 rows
        name = f"f{i:03d}.csv"
        write_input(d / name, "puzzle,note\n" + "".join(
            f"{puzzles[(i * 3 + k) % len(puzzles)]},n{i}.{k}\n" for k in range(n)))
        expected[f"in/{name}"] = n
    write_input(d / "f050.csv", "puzzle\n" + "\n".join(puzzles[:45]) + "\n")  # own parts
    expected["in/f050.csv"] = 45
    write_input(d / "f051.csv", "\n".join(puzzles[:2]) + "\n")  # other columns
    expected["in/f051.csv"] = 2
    poison = "." * 40 + puzzles[7][40:]  # unique to f077.csv
    write_input(d / "f077.csv", f"puzzle,note\n{puzzles[1]},a\n{poison},b\n")
    expected["in/f077.csv"] = 2
    res = run_cli("run", "-i", "in/*.csv", "-o", "out", "--workers", "2", "--chunk-size", "20",
                  env={"PIPELINE_FAULT_INJECT": f"raise:{poison}"})
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    frame = check_run(out, expected)
    assert frame.filter(pl.col("status") == "error").select("source", "row").rows() == \
        [("in/f077.csv", 1)]
    assert frame.filter(pl.col("source") == "in/f010.csv")["note"].to_list() == \
        ["n10.0", "n10.1"]
    parts = sorted((out / "results").glob("part-*.parquet"))
    assert len(parts) <= 20  # 120 files and 227 rows: not 120 parts
    assert pl.read_parquet(parts[0])["source"].n_unique() > 1
    manifest = (out / "manifest.json").read_bytes()
    assert len(manifest) < 400 * len(expected)
    # The report names the files with rows not solved first, and counts the others.
    res = run_cli("report", "out")
    assert res.returncode == 0, res.stderr
    assert "in/f077.csv" in res.stdout
    assert f"{sum(1 for n in expected.values() if n) - 30} more input files" in res.stdout
    # A shared part deleted from the finished run is made again, rows and stats as before.
    before = frame
    parts[1].unlink()
    res = run_cli("run", "-i", "in/*.csv", "-o", "out", "--workers", "2", "--chunk-size", "7")
    assert res.returncode == 0, res.stderr
    assert "made again" in res.stderr
    again = check_run(out, expected)
    keep = ["source", "row", "puzzle", "status", "solution", "note"]
    poisoned = (pl.col("source") == "in/f077.csv") & (pl.col("row") == 1)
    assert again.filter(~poisoned).select(keep).equals(before.filter(~poisoned).select(keep))


def test_glob(run_cli, tmp_path):
    (tmp_path / "d").mkdir()
    for i in range(3):
        write_input(tmp_path / "d" / f"p{i}.txt", "\n".join([PUZZLE] * (i + 1)))
    res = run_cli("run", "-i", "d/*.txt", "-o", "out", "--workers", "2", "--chunk-size", "1",
                  "--json")
    assert res.returncode == 0, res.stderr
    check_run(tmp_path / "out", {f"d/p{i}.txt": i + 1 for i in range(3)})


def test_a_file_named_twice_is_read_once(run_cli, tmp_path):
    write_input(tmp_path / "a.txt", f"{PUZZLE}\n{LEET}\n")
    write_input(tmp_path / "b.txt", f"{LEET}\n")
    res = run_cli("run", "-i", "a.txt", "-i", "*.txt", "-i", "./a.txt", "-o", "out",
              "--workers", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == 3
    check_run(tmp_path / "out", {"a.txt": 2, "b.txt": 1})


def test_stdin(run_cli, tmp_path):
    res = run_cli("run", "-i", "-", "-o", tmp_path / "out", "--workers", "1", "--json",
              input=f"{PUZZLE}\n{LEET}\n".encode())
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {"-": 2})
    assert frame["solution"].to_list() == [SOLUTION, LEET_SOLUTION]


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
def test_stdin_as_a_process(run_process, tmp_path):
    data = f"quizzes,solutions\n{P0},{SOLUTION}\n{P0},{SOLUTION}\n".encode()
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", "--json", input=data)
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {"-": 2})
    assert frame["expected_match"].all()
    # Known by its bytes: the same again is already done, others are another run.
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", "--json",
                      input=data)
    assert res.returncode == 0 and json.loads(res.stdout)["already_done"], res.stderr
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", input=data[:-5])
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert not (tmp_path / "out" / ".spill").exists()
    res = run_process("run", "--input", "-", "-o", "out", "--workers", "1", "--overwrite",
                      input=data[:-5])
    assert res.returncode == 0, res.stderr


@pytest.mark.slow
def test_gzip_on_stdin(tmp_path):
    data = gzip.compress(f"quizzes,solutions\n{PUZZLE},{SOLUTION}\n".encode())
    proc = subprocess.run([*pipeline_command(), "run", "-i", "-", "-o", "out", "--json", "-q"],
                          input=data, cwd=tmp_path, capture_output=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["solved"] and frame["expected_match"].to_list() == [True]


@pytest.mark.slow
def test_fifo_and_process_substitution(tmp_path):
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
                         env=clean_env())
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counts"]["solved"] == 2


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


@pytest.mark.parametrize("how", ["stdin", "gzip"])
@pytest.mark.parametrize("limit", [[], ["--limit", "7"]])
def test_parquet_on_stdin_or_in_gzip_is_read_as_the_file_is(run_cli, tmp_path, limit, how):
    """Parquet is known by its magic bytes on standard input and inside gzip too (it was
    'not a text file'); with --limit, its first rows."""
    frame = pl.read_csv(SAMPLE_CSV, infer_schema=False).head(40)
    frame.write_parquet(tmp_path / "s.parquet", row_group_size=16)
    data = (tmp_path / "s.parquet").read_bytes()
    if how == "gzip":
        (tmp_path / "s.parquet.gz").write_bytes(gzip.compress(data))
        res = run_cli("run", "-i", "s.parquet.gz", "-o", "piped", "-q", *limit)
    else:
        res = run_cli("run", "-i", "-", "-o", "piped", "-q", *limit, input=data)
    assert res.returncode == 0, res.stderr
    assert run_cli("run", "-i", "s.parquet", "-o", "file", "-q", *limit).returncode == 0
    a = comparable(read_results(tmp_path / "piped")).drop("source")
    b = comparable(read_results(tmp_path / "file")).drop("source")
    assert a.height == (7 if limit else 40) and a.equals(b)


def test_validate_and_solve_read_parquet_on_stdin_and_in_gzip(run_cli, tmp_path):
    """The one-process commands read a Parquet stream as the file (through a copy)."""
    frame = pl.read_csv(SAMPLE_CSV, infer_schema=False).head(30)
    frame = frame.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(pl.lit("12"))
                               .otherwise(pl.col("puzzle")).alias("puzzle"))
    frame.write_parquet(tmp_path / "s.parquet", row_group_size=8)
    data = (tmp_path / "s.parquet").read_bytes()
    (tmp_path / "s.parquet.gz").write_bytes(gzip.compress(data))
    want = run_cli("validate", "s.parquet")
    assert want.returncode == 1 and want.stdout.startswith("row 3: puzzle: length 2")
    for args, fed in ((["s.parquet.gz"], None), (["-"], data), (["-"], gzip.compress(data))):
        res = run_cli("validate", *args, input=fed)
        assert (res.returncode, res.stdout) == (1, want.stdout), res.stderr
    solved = run_cli("solve", "-", input=data)
    assert solved.returncode == 1 and solved.stdout.count("solved,") == 29, solved.stderr


def test_a_stray_nul_is_a_malformed_row_wherever_it_is(run_cli, tmp_path):
    """One NUL in a record near the top is that row's fault (as it is further down), not
    the file's: a file is binary when its first bytes are full of control bytes."""
    rows = SAMPLE_CSV.read_text().splitlines()[:2001]
    rows[4] = rows[4][:45] + "\x00" + rows[4][46:]
    (tmp_path / "nul.csv").write_text("\n".join(rows) + "\n")
    res = run_cli("run", "-i", "nul.csv", "-o", "out", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counts"]["malformed"] == 1
    bad = read_results(tmp_path / "out").filter(pl.col("status") == "malformed")
    assert bad["row"].to_list() == [3] and "\\x00" in bad["reason"][0]


def test_endless_or_random_bytes_are_refused_before_they_are_copied(tmp_path):
    """An input read once is judged on its first bytes before the rest is copied: /dev/zero
    (which never ends) and random bytes on stdin are refused at once, exit 2."""
    res = subprocess.run([*pipeline_command(), "run", "-i", "/dev/zero", "-o", "z"],
                         cwd=tmp_path, capture_output=True, text=True, env=clean_env(),
                         timeout=60)
    assert res.returncode == 2 and "not a text file" in res.stderr, res.stderr
    noise = random.Random(3).randbytes(100_000)
    res = subprocess.run([*pipeline_command(), "run", "-i", "-", "-o", "r"], input=noise,
                         cwd=tmp_path, capture_output=True, env=clean_env(), timeout=60)
    assert res.returncode == 2 and b"not a text file" in res.stderr, res.stderr


# ---------------------------------------------------------------------------------------
# Records, headers and columns: no row lost, doubled or mislabelled


@pytest.mark.slow
def test_quoted_newlines_are_data(tmp_path):
    (tmp_path / "r1.csv").write_text(
        f'id,puzzle,note\n1,{PUZZLE},"a\nb"\n2,{PUZZLE},ok\n3,{LEET},"x, ""y"""\n')
    code, out, err = run(["run", "-i", "r1.csv", "-o", "out", "--json", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["note"].to_list() == ["a\nb", "ok", 'x, "y"']
    assert frame["id"].to_list() == ["1", "2", "3"]
    assert (frame["status"] == "solved").all()


@pytest.mark.slow
@pytest.mark.parametrize("chunk", ["1", "3", "1000"])
def test_quoted_newlines_across_ranges_as_python_csv_reads_them(tmp_path, chunk):
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


@pytest.mark.slow
def test_a_bad_first_record_of_a_headerless_csv_is_a_row(tmp_path):
    (tmp_path / "r2.csv").write_text(f"1,-{PUZZLE[1:]}\n2,{PUZZLE}\n3,{LEET}\n")
    code, _, err = run(["run", "-i", "r2.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["malformed", "solved", "solved"]
    assert frame["column_1"].to_list() == ["1", "2", "3"]


@pytest.mark.slow
def test_a_header_by_shape_alone_is_said(tmp_path):
    (tmp_path / "h.csv").write_text(f"key,grid_text\n1,{PUZZLE}\n")
    code, _, err = run(["run", "-i", "h.csv", "-o", "out"], tmp_path)
    assert code == 0 and "first record (key,grid_text) is taken for the column names" in err
    assert read_results(tmp_path / "out").height == 1


@pytest.mark.slow
def test_comment_lines_before_a_header(tmp_path):
    (tmp_path / "r3.csv").write_text(
        f"# exported 2026-11-30\n#by hand\n\nquizzes,solutions\n{PUZZLE},{SOLUTION}\n")
    code, _, err = run(["run", "-i", "r3.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert frame["status"].to_list() == ["solved"] and frame["expected_match"].to_list() == [True]


@pytest.mark.slow
@pytest.mark.parametrize("header, carried", [
    ("id,id,puzzle", ["id", "id_2"]),
    # the input's own input_row keeps its name; its `row` (ours) goes around it
    ("row,input_row,puzzle", ["input_row_2", "input_row"]),
    ("id,id,id_2,puzzle", ["id", "id_3", "id_2"]),
    ("status,puzzle,status", ["input_status", "input_status_2"]),
])
def test_clashing_column_names_are_all_carried(tmp_path, header, carried):
    (tmp_path / "r4.csv").write_text(f"{header}\na,b,c\n".replace("a,b,c", _row(header)))
    code, _, err = run(["run", "-i", "r4.csv", "-o", "out", "-q"], tmp_path)
    assert code == 0, err
    frame = read_results(tmp_path / "out")
    assert [c for c in frame.columns if c in carried] == carried
    assert frame["status"].to_list() == ["solved"]


def _row(header: str) -> str:
    return ",".join(PUZZLE if name == "puzzle" else f"v{i}"
                    for i, name in enumerate(header.split(",")))


@pytest.mark.slow
@pytest.mark.skipif(not KAGGLE.exists(), reason="shared data absent")
def test_cr_only_line_ends(tmp_path):
    data = KAGGLE.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    (tmp_path / "mac.csv").write_bytes(data)
    code, out, err = run(["run", "-i", "mac.csv", "-o", "out", "--chunk-size", "1000",
                          "--json", "-q"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["counts"]["solved"] == 9999


# ---------------------------------------------------------------------------------------
# The shared data sets


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


def test_fixed_width_records_carry_their_other_fields_as_csv_columns_are(run_cli, tmp_path,
                                                                        shared_data):
    """README: sudoku-exchange `hash puzzle rating`: the hash and the rating come out as
    columns, as a headerless CSV's other fields do (column_1, column_3)."""
    diab = shared_data / "sudoku_exchange_bank" / "diabolical.txt"
    lines = diab.read_bytes().splitlines(True)[:500]
    path = write_input(tmp_path / "diab.txt", b"".join(lines))
    res = run_cli("run", "-i", path, "-o", "out", "--workers", "2", "--chunk-size", "64")
    assert res.returncode == 0, res.stderr
    frame = check_run(tmp_path / "out", {str(path): 500})
    tokens = [line.split() for line in lines]
    assert frame["column_1"].to_list() == [t[0].decode() for t in tokens]
    assert frame["column_3"].to_list() == [t[2].decode() for t in tokens]
    assert frame["puzzle"].to_list() == [t[1].decode() for t in tokens]


# ---------------------------------------------------------------------------------------
# Odd records: each a malformed row, none lost, memory flat


def _peak_rss_mb(args, cwd: Path) -> tuple[int, float, str]:
    """Exit code and the peak RSS (MB) of the run's own process, via a fresh wrapper."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "sys.stderr.write(r.stderr.decode('utf-8', 'replace'))\n"
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    res = subprocess.run([sys.executable, "-c", wrapper, *pipeline_command(), *map(str, args)],
                         cwd=cwd, env=clean_env(), capture_output=True, timeout=280)
    code, kb = res.stdout.decode().split()
    return int(code), int(kb) / 1024, res.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def small_peak(workdir) -> float:
    (workdir / "small.txt").write_text(f"{PUZZLE}\n{LEET}\n")
    code, peak, err = _peak_rss_mb(["run", "-i", "small.txt", "-o", "small_out", "--workers",
                                    "1"], workdir)
    assert code == 0, err
    return peak


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    definition = manifest["definition"]
    shape = definition["layouts"][definition["inputs"][0]["layout"]]
    frame = read_results(out)
    assert frame.height == _expected_rows(data, shape), shape
    assert frame["row"].to_list() == list(range(frame.height))
    assert summary.rows == frame.height
    assert frame["status"].is_not_null().all()
    bad = frame.filter(pl.col("status").is_in(["malformed", "invalid", "unsolvable", "error"]))
    assert bad["reason"].is_not_null().all()
    assert not frame["reason"].drop_nulls().str.contains("\n").any()
    assert (frame["status"] != "error").all()


csvish_alphabet = st.sampled_from(
    list("0123456789.,\"\n\r #xé") + [PUZZLE, SOLUTION, "puzzle", "solution", ",", "\n"])


@pytest.mark.slow
@given(st.binary(max_size=600))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_bytes_never_crash(tmp_path, data):
    _check_accounted(data, tmp_path)


@pytest.mark.slow
@given(st.lists(csvish_alphabet, max_size=120).map("".join), st.booleans())
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_csvish_text_never_crashes(tmp_path, text, header):
    prefix = "id,puzzle,solution\n" if header else ""
    _check_accounted((prefix + text).encode("utf-8"), tmp_path)


@pytest.mark.slow
@given(st.lists(st.one_of(st.just(PUZZLE), st.just(LEET), st.just(""), st.just("# c"),
                          st.text(alphabet="0123456789. x", max_size=90)), max_size=60),
       st.sampled_from(["\n", "\r\n"]))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_text_files_keep_every_line(tmp_path, lines, eol):
    data = eol.join(lines).encode()
    _check_accounted(data, tmp_path)


def test_nested_parquet_columns_are_carried_as_json_text(run_cli, tmp_path):
    """A struct, a list and bytes beside `puzzle`: carried as text (JSON for the nested),
    every row solved; `validate` reads the file too (it said "internal error")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 3000
    table = pa.table({"puzzle": [PUZZLE] * n,
                      "meta": pa.array([{"a": i, "b": [1, 2]} for i in range(n)]),
                      "tags": pa.array([["x", "y"]] * n),
                      "blob": pa.array([b"\xff\x00ab"] * n)})
    pq.write_table(table, tmp_path / "nested.parquet", row_group_size=1000)
    res = run_cli("run", "-i", str(tmp_path / "nested.parquet"), "-o", str(tmp_path / "out"),
                  "--json", "-q")
    assert res.returncode == 0, res.stderr
    frame = read_results(tmp_path / "out")
    assert (frame["status"] == "solved").all() and frame.height == n
    assert frame["meta"][5] == '{"a": 5, "b": [1, 2]}' and frame["tags"][0] == '["x", "y"]'
    assert frame["blob"][0] == "\ufffd\x00ab"
    checked = run_cli("validate", str(tmp_path / "nested.parquet"), "--quiet")
    assert checked.returncode == 0, checked.stderr


def test_a_row_group_of_more_than_chunk_size_rows_is_several_ranges(run_cli, tmp_path):
    """One 20,000-row row group with --chunk-size 3000: seven parts of at most 3000 rows
    (one part of 20,000 rows before: a 5M-row group peaked at 2.95 GB), every row once, in
    order; a resume after a lost part redoes only that piece."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    puzzles = [PUZZLE if i % 7 else LEET for i in range(20_000)]
    pq.write_table(pa.table({"id": list(range(20_000)), "puzzle": puzzles}),
                   tmp_path / "one.parquet", row_group_size=20_000)
    out = tmp_path / "out"
    args = ["run", "-i", str(tmp_path / "one.parquet"), "-o", str(out), "--chunk-size", "3000",
            "--json", "-q"]
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    parts = sorted((out / "results").glob("part-*.parquet"))
    assert len(parts) == 7
    assert all(pl.read_parquet(p).height <= 3000 for p in parts)
    frame = read_results(out)
    assert frame["row"].to_list() == list(range(20_000))
    assert frame["id"].to_list() == [str(i) for i in range(20_000)]
    assert (frame["status"] == "solved").all()
    parts[3].unlink()
    (out / "_SUCCESS").unlink()
    again = run_cli(*args)
    assert again.returncode == 0 and json.loads(again.stdout)["resumed_rows"] == 17_000
    assert read_results(out)["id"].to_list() == [str(i) for i in range(20_000)]
