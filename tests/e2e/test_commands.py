"""The other commands end to end, from the command line (README: Other commands, Data-set
tools): solve (a puzzle, or `-`: what run reads), show over a run, generate to stdout,
validate's causes, and dedup, split and augment over a --canonical run. (Each command's
own module is tested in tests/tools/.)
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import BAD_FULL, LEET, PUZZLE, SAMPLE_CSV, SOLUTION
from helpers import run_stats


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


def test_solve_dash_reads_the_board_solve_prints(run_cli):
    from pipeline.sudoku import grid

    printed = run_cli("solve", PUZZLE)
    assert printed.returncode == 0
    res = run_cli("solve", "-", "-f", "line", input=printed.stdout)  # status line and all
    assert res.returncode == 0 and res.stdout.split() == [SOLUTION], res.stderr
    drawn = [grid.show(grid.encode([p])[0][0]) for p in (PUZZLE, LEET)]
    nine = "\n".join(LEET[i:i + 9] for i in range(0, 81, 9))  # nine lines of nine cells
    res = run_cli("solve", "-", "-f", "line", input="\n\n".join([*drawn, nine]) + "\n")
    assert res.returncode == 0 and res.stdout.split() == [SOLUTION, *[_solution(LEET)] * 2]
    cut = "\n".join(drawn[0].splitlines()[:4])
    res = run_cli("solve", "-", input=f"{cut}\n\n{drawn[1]}\n")
    assert res.returncode == 1
    assert res.stdout.splitlines()[0] == "malformed: a board of 3 grid rows, expected 9"
    assert "solved" in res.stdout.splitlines()[2]


def test_solve_dash_boards_with_a_bad_line_and_puzzle_lines_each_one_row(run_cli):
    """Found by a new user: a bad character in a drawn board split it into two short
    boards (three rows for two boards, the later rows misnumbered), and puzzle lines after
    a board were dropped without a word (exit 0)."""
    from pipeline.sudoku import grid

    board = grid.show(grid.encode([PUZZLE])[0][0]).splitlines()
    bad = list(board)
    bad[5] = "x" + bad[5][1:]  # grid row 5 (a band rule is line 3)
    res = run_cli("solve", "-", "-f", "line", input="\n".join([*bad, "", *board]) + "\n")
    assert res.returncode == 1
    assert res.stdout.split() == ["malformed", SOLUTION]
    assert "row 0: malformed: grid row 5: character 'x'" in res.stderr
    short = [ln for ln in board if "." in ln]  # (a row of the board without a cell)
    short[2] = short[2][:-2]
    res = run_cli("solve", "-", "-f", "line", input="\n".join(short) + "\n")
    assert res.returncode == 1 and "grid row 3: 8 cells, expected 9" in res.stderr
    tail = [LEET, "11" + "." * 79, "." * 81]
    res = run_cli("solve", "-", "-f", "line", input="\n".join([*board, "", *tail]) + "\n")
    assert res.returncode == 1
    out = res.stdout.splitlines()
    assert out[:3] == [SOLUTION, _solution(LEET), "invalid"] and out[3].startswith("multiple ")


def _solution(puzzle: str) -> str:
    from pipeline.sudoku import grid, solver

    return grid.decode(solver.solve_strings([puzzle]).solutions, blank="0")[0]


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
    (tmp_path / "out" / "_SUCCESS").unlink()  # a run stopped: what it holds so far, said so
    res = run_cli("show", "out", "--status", "error", env={"COLUMNS": "200"})
    assert res.stdout.strip() == "no row of out (unfinished: so far) is error"


def test_show_csv_is_defused_as_every_tool_s_csv(run_cli, tmp_path):
    """A cell a spreadsheet would run as a formula (a source named `=cmd.csv`) gets a
    leading apostrophe in show's CSV, as in dedup's, split's, ..."""
    (tmp_path / "=cmd.csv").write_text(f"puzzle\n{PUZZLE}\nbad\n")
    assert run_cli("run", "-i", "=cmd.csv", "-o", "out", "-q").returncode == 0
    res = run_cli("show", "out", "-f", "csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[1].startswith("'=cmd.csv,1,malformed,"), res.stdout


def test_show_on_a_run_without_rows_says_so(run_cli, tmp_path):
    """An empty input's run has no part with rows: show says there is no such row, and its
    CSV is the header alone (it printed nothing at all)."""
    (tmp_path / "empty.txt").write_text("")
    assert run_cli("run", "-i", "empty.txt", "-o", "out").returncode == 0
    res = run_cli("show", "out")
    assert res.returncode == 0 and res.stdout.startswith("no row of out is"), res.stdout
    res = run_cli("show", "out", "--format", "csv", "--limit", "99999999999999999999")
    assert res.returncode == 0 and res.stdout == "source,row,status,reason,puzzle\n"


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
    st = run_stats(tmp_path / "run")
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


@pytest.mark.slow
def test_make_solve_dataset_input_my_puzzles_csv_output_out(tmp_path):
    """README: `make solve-dataset INPUT="my puzzles.csv" OUTPUT=out/`, a space in the name."""
    import shutil
    import subprocess

    from conftest import REPO, read_results

    if shutil.which("make") is None:
        pytest.skip("no make here")
    source = tmp_path / "my puzzles.csv"
    shutil.copy(SAMPLE_CSV, source)
    out = tmp_path / "my out"
    done = subprocess.run(["make", "-C", str(REPO), "solve-dataset", f"INPUT={source}",
                           f"OUTPUT={out}/"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (out / "_SUCCESS").exists() and read_results(out).height == 3000
