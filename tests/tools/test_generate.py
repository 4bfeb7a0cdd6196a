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


def test_a_reachable_target_that_falls_short_exits_1_writes_nothing_advises_what_works(
        tmp_path, monkeypatch):
    monkeypatch.setattr(search, "ATTEMPT_FACTOR", 1)
    monkeypatch.setattr(search, "ATTEMPT_FLOOR", 2048)
    monkeypatch.setattr(search, "PROJECT_AFTER", 1024)
    res = invoke(["generate", "--count", "200", "--grade", "hard", "--clues", "32", "--seed",
                  "1", "-o", str(tmp_path / "out.csv")])
    assert res.returncode == 1, res.stderr
    assert not list(tmp_path.iterdir())  # no file, no temporary file either
    assert len(res.stderr_lines) == 1 and "more clues" not in res.stderr
    advice = res.stderr.split("ask for ")[1].strip()
    assert advice == "fewer puzzles or no --clues"
    code, out = make(tmp_path, "--count", "200", "--grade", "hard", "--seed", "1")  # it works
    assert code == 0 and set(read(out)["difficulty"]) == {"hard"}


def _options(text: str) -> dict[str, str]:
    words = text.split()
    return dict(zip(words[::2], words[1::2], strict=True))


@pytest.mark.parametrize("asked", ["--grade expert --clues 40", "--clues 17", "--clues 21",
                                   "--grade extreme", "--grade extreme --clues 25",
                                   "--grade hard --clues 35", "--grade expert --min-clues 30",
                                   "--grade medium --min-clues 45"])
def test_an_unreachable_combination_is_refused_before_trying_with_advice_that_works(
        tmp_path, asked):
    out = tmp_path / "out.csv"
    res = invoke(["generate", "--count", "2", "--seed", "4", *asked.split(), "-o", str(out)])
    assert res.returncode == 2, res.stderr
    assert len(res.stderr_lines) == 1 and not out.exists()
    assert res.stderr.startswith(f"pipeline: error: {asked}: not reachable: ")
    advice = _options(res.stderr.rsplit("; try ", 1)[1])
    before = _options(asked)
    if "--grade" in before:  # never more clues for a grade: more clues make puzzles easier
        for name in ("--clues", "--min-clues"):
            assert int(advice.get(name, 0)) <= int(before.get(name, 81))
    code, out = make(tmp_path, "--count", "2", "--seed", "4",
                     *[w for kv in advice.items() for w in kv])
    assert code == 0
    df = read(out)
    assert df.height == 2
    if "--grade" in advice:
        assert set(df["difficulty"]) == {advice["--grade"]}
    if "--clues" in advice:
        assert set(df["clues"]) == {advice["--clues"]}
    if "--min-clues" in advice:
        assert df["clues"].cast(int).min() >= int(advice["--min-clues"])


def test_the_help_says_what_is_reachable(tmp_path):
    text = " ".join(invoke(["generate", "--help"]).stdout.split())
    assert f"Reachable: {search.reach_summary()}." in text
    low, high = search.REACH[None][0]
    assert f"{low} to {high}" in text
    for name in search.REACH:  # the advice is always reachable, and itself where it is
        for clues, least in [*((k, None) for k in range(0, 90)),
                             *((None, k) for k in range(17, 81)), (None, None)]:
            near = search.nearest_reachable(clues, least, name)
            assert search.reachable(*near)
            if search.reachable(clues, least, name):
                assert near == (clues, least, name)


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


# ---------------------------------------------------------------------------------------
# Made to a SER band (issue 25, 3)


def test_puzzles_made_to_a_ser_band_are_rated_in_it(tmp_path):
    from pipeline.sudoku import rate

    code, out = make(tmp_path, "--count", "12", "--ser", "6.0-8.0", "--ser-pearl", "1.2-2.5",
                     "--seed", "5")
    assert code == 0
    df = read(out)
    assert df.columns == ["id", "puzzle", "solution", "clues", "difficulty", "ser",
                          "ser_pearl", "ser_diamond"]
    assert df.height == 12
    got = rate.rate(df["puzzle"].to_list())
    assert (got.status == 0).all()
    assert df["ser"].cast(float).to_list() == [v / 10 for v in got.er]
    assert df["ser_pearl"].cast(float).to_list() == [v / 10 for v in got.ep]
    assert ((got.er >= 60) & (got.er <= 80)).all() and ((got.ep >= 12) & (got.ep <= 25)).all()
    puzzles, _ = grid.encode(df["puzzle"].to_list())
    solutions, _ = grid.encode(df["solution"].to_list())
    assert check.is_solution(puzzles, solutions).all()
    # Reproducible from the seed, and a prefix of a longer run.
    code, again = make(tmp_path, "--count", "6", "--ser", "6.0-8.0", "--ser-pearl", "1.2-2.5",
                       "--seed", "5", name="again.csv")
    assert code == 0 and read(again).equals(df.head(6))


def test_puzzles_made_to_a_band_are_minimal_and_in_it_by_serate_too(tmp_path):
    """The recorded puzzles of a seed (tests/tools/data: made by this command, rated by
    serate once): the same puzzles again, each minimal, and serate's figures in the bands."""
    recorded = pl.read_csv(Path(__file__).parent / "data" / "generated_ser.csv")
    code, out = make(tmp_path, "--count", "12", "--ser", "6.0-8.0", "--ser-pearl", "1.2-2.5",
                     "--seed", "5")
    assert code == 0
    df = read(out)
    assert df["puzzle"].to_list() == recorded["puzzle"].to_list()
    assert recorded["serate_er"].is_between(6.0, 8.0).all()
    assert recorded["serate_ep"].is_between(1.2, 2.5).all()
    for text in df["puzzle"].to_list()[:4]:  # minimal: no given can go (reference solver)
        p, _ = grid.encode([text])
        for sq in np.flatnonzero(p[0]):
            q = p[0].copy()
            q[sq] = 0
            assert reference.count_solutions(q.tolist(), limit=2) == 2


@pytest.mark.parametrize("args", [["--ser", "9.5+"], ["--ser", "eight"], ["--ser", "8-7"],
                                  ["--ser-diamond", "9.0-9.9"], ["--ser-pearl", "9.5"]])
def test_a_ser_band_out_of_reach_or_malformed_is_refused_before_trying(tmp_path, args):
    res = invoke(["generate", "--count", "1", "--output", str(tmp_path / "x.csv"), *args])
    assert res.returncode == 2 and len(res.stderr_lines) == 1, res.stderr
    assert not (tmp_path / "x.csv").exists()
    if "too rare" in res.stderr:  # the band as it was asked for
        assert f"{args[0]} {args[1]}: " in res.stderr


@pytest.mark.parametrize("asked, said", [
    ("--ser 2.0-4.0 --ser-pearl 7.0-8.0", "--ser-pearl 7.0-8.0 is above --ser 2.0-4.0"),
    ("--ser-pearl 3.0-4.0 --ser-diamond 5+", "is above --ser-pearl 3.0-4.0"),
    ("--ser 0-0.5", "no step rates below 1.0"),
])
def test_ser_bands_no_puzzle_can_have_are_refused_before_trying(tmp_path, asked, said):
    """ED <= EP <= ER, and no step rates below 1.0: such bands are refused at once, where
    they cost 20,000 puzzles' tries."""
    res = invoke(["generate", "-n", "1", "--seed", "1", *asked.split(), "-o",
                  str(tmp_path / "x.csv")])
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("name", ["x.csv.gz", "x.parquet", "x.json"])
def test_generate_writes_csv_only_under_a_csv_name(tmp_path, name):
    res = invoke(["generate", "-n", "1", "--seed", "1", "-o", str(tmp_path / name)])
    assert res.returncode == 2 and "generate writes CSV" in res.stderr
    assert not (tmp_path / name).exists()
