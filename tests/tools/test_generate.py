"""`pipeline generate`: unique puzzles (proved by the plain reference solver, not only the
engine), clue counts, seeds, grades, and files that `pipeline run` reads back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import invoke

from pipeline.sudoku import check, grade, grid, reference, search


def make(tmp_path: Path, *args: str, name: str = "out.csv") -> tuple[int, Path]:
    out = tmp_path / name
    return invoke(["generate", *args, "--output", str(out), "--quiet"]).returncode, out


def read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema=False)


def test_shape_and_uniqueness_by_reference_solver(tmp_path):
    code, out = make(tmp_path, "--count", "40", "--seed", "11")
    assert code == 0
    assert out.read_text().splitlines()[0] == "id,puzzle,solution,clues,difficulty"
    df = read(out)
    assert df.height == 40 and df["id"].to_list() == [str(i) for i in range(1, 41)]
    puzzles, bad = grid.encode(df["puzzle"].to_list())
    solutions, bad2 = grid.encode(df["solution"].to_list())
    assert not any(bad) and not any(bad2)
    assert all("." in p and "0" not in p for p in df["puzzle"])
    assert check.is_solution(puzzles, solutions).all()
    assert (grid.clues(puzzles) == df["clues"].cast(int).to_numpy()).all()
    # The reference backtracker (no shared code with the engine) on a sample.
    for p, s in zip(puzzles[:8], solutions[:8], strict=True):
        assert reference.count_solutions(p.tolist(), limit=2) == 1
        assert reference.solve_grid(p.tolist()) == s.tolist()
    # Default: minimal puzzles, every given is needed (spot check with the reference).
    p = puzzles[0].copy()
    for sq in np.flatnonzero(p)[:6]:
        q = p.copy()
        q[sq] = 0
        assert reference.count_solutions(q.tolist(), limit=2) == 2


def test_exact_and_minimum_clues(tmp_path):
    code, out = make(tmp_path, "--count", "30", "--clues", "27", "--seed", "1")
    assert code == 0
    df = read(out)
    assert set(df["clues"].to_list()) == {"27"}
    puzzles, _ = grid.encode(df["puzzle"].to_list())
    assert (grid.clues(puzzles) == 27).all()
    for p in puzzles[:6]:
        assert reference.count_solutions(p.tolist(), limit=2) == 1
    code, out = make(tmp_path, "--count", "30", "--min-clues", "32", "--seed", "1", name="m.csv")
    assert code == 0
    puzzles, _ = grid.encode(read(out)["puzzle"].to_list())
    assert (grid.clues(puzzles) >= 32).all()
    for p in puzzles:
        assert reference.count_solutions(p.tolist(), limit=2) == 1


def test_seed_reproducible_prefix_and_different(tmp_path):
    _, a = make(tmp_path, "--count", "300", "--seed", "5", name="a.csv")
    _, b = make(tmp_path, "--count", "300", "--seed", "5", name="b.csv")
    _, c = make(tmp_path, "--count", "300", "--seed", "6", name="c.csv")
    _, d = make(tmp_path, "--count", "20", "--seed", "5", name="d.csv")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert set(read(a)["puzzle"]).isdisjoint(read(c)["puzzle"])
    assert read(d)["puzzle"].to_list() == read(a)["puzzle"].to_list()[:20]  # a prefix
    assert len(set(read(a)["solution"])) == 300  # no repeated grids


def test_grade_target_and_difficulty_is_the_grade(tmp_path):
    code, out = make(tmp_path, "--count", "25", "--grade", "hard", "--seed", "2")
    assert code == 0
    df = read(out)
    assert set(df["difficulty"]) == {"hard"}
    made = search.generate(50, seed=3)
    assert set(made.grades) <= set(grade.GRADES)
    assert (made.grades == np.array(grade.GRADES, dtype=object)[
        grade.grade_of_guesses(made.guesses)]).all()


@pytest.mark.parametrize("args", [["--clues", "16"], ["--clues", "81"], ["--min-clues", "5"],
                                  ["--clues", "30", "--min-clues", "30"], ["--grade", "tough"],
                                  ["--seed", "-1"]])
def test_bad_options_exit_2(tmp_path, args):
    code, out = make(tmp_path, "--count", "3", *args)
    assert code == 2
    assert not out.exists()


def test_unreachable_target_exits_1_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "ATTEMPT_FLOOR", 2048)
    monkeypatch.setattr(search, "PROJECT_AFTER", 1024)
    code, out = make(tmp_path, "--count", "5", "--clues", "17", "--seed", "1")
    assert code == 1
    assert not out.exists()
    assert not list(tmp_path.iterdir())  # no temporary file left either


def test_output_feeds_pipeline_run(tmp_path):
    code, out = make(tmp_path, "--count", "200", "--seed", "9")
    assert code == 0
    run = invoke(["run", "-i", str(out), "-o", str(tmp_path / "run"), "--workers", "1",
                  "--quiet"])
    assert run.returncode == 0, run.stderr
    res = pl.read_parquet(tmp_path / "run" / "results" / "*.parquet").sort("row")
    assert res.height == 200
    assert set(res["status"]) == {"solved"}
    assert res["expected_match"].all()
    assert (res["n_solutions"] == 1).all()
    # The difficulty column is the grade `pipeline run` gives the same puzzle.
    assert res["grade"].to_list() == res["difficulty"].to_list()
