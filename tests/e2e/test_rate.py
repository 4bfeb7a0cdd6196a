"""`pipeline run --rate`: Sudoku Explainer ratings for every solved row (README: Ratings for
a person). What the rater itself rates is tests/sudoku/rate's; here, what the pipeline
promises around it: the columns on solved rows only, a disagreement with the solution
made `error` (never a wrong rating), the budget, stats and resume, and every command
that carries the rating (show, dedup, split, solve, report).
"""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import polars as pl
import pytest
from conftest import BAD_FULL, LEET, PUZZLE, SAMPLE_CSV, UNSOLVABLE, comparable, read_results
from helpers import check_run, kill_group, parts_in, run, start, wait_for

from pipeline.sudoku import grid, rate
from pipeline.sudoku.grade import SER_BAND_NAMES, SER_BANDS

RATED = ["ser", "ser_pearl", "ser_diamond", "ser_technique", "ser_steps", "rate_note"]


@pytest.fixture(scope="module")
def rated_dir(tmp_path_factory):
    """A mixed input (every status) and its finished run with --rate."""
    d = tmp_path_factory.mktemp("rated")
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:400]
    lines = puzzles + ["." * 81, UNSOLVABLE, BAD_FULL, PUZZLE[:80], LEET]
    (d / "in.txt").write_text("\n".join(lines) + "\n")
    code, _, err = run(["run", "-i", "in.txt", "-o", "out", "--rate", "--chunk-size", "150",
                        "--workers", "2", "-q"], d)
    assert code == 0, err
    return d


def test_ratings_go_on_solved_rows_only_as_the_rater_gives_them(rated_dir):
    frame = check_run(rated_dir / "out")
    assert frame.columns[-len(RATED):] == RATED or set(RATED) <= set(frame.columns)
    solved = frame.filter(pl.col("status") == "solved")
    others = frame.filter(pl.col("status") != "solved")
    assert others.select(RATED).null_count().row(0) == (others.height,) * len(RATED)
    # Each solved row: a rating, or no rating and a note saying why.
    assert (solved["ser"].is_null() == solved["rate_note"].is_not_null()).all()
    assert solved["ser"].is_not_null().sum() > 0.5 * solved.height
    # The same figures as the rater's own API on the same puzzles.
    got = rate.rate(solved["puzzle"].to_list())
    ok = got.status == 0
    want = np.where(ok, got.er / 10, np.nan)
    have = solved["ser"].fill_null(np.nan).to_numpy()
    assert np.allclose(have, want, equal_nan=True)
    assert np.allclose(solved["ser_pearl"].fill_null(np.nan).to_numpy(),
                       np.where(ok, got.ep / 10, np.nan), equal_nan=True)
    names = [rate.TECHNIQUES[t] if k else None for t, k in zip(got.technique, ok, strict=True)]
    assert solved["ser_technique"].to_list() == names
    rated = solved.filter(pl.col("ser").is_not_null())
    assert (rated["ser_pearl"] <= rated["ser"]).all() and (rated["ser_diamond"] <= rated["ser"]).all()
    assert (rated["ser_steps"] > 0).all()


def test_the_stats_count_ratings_per_band(rated_dir):
    frame = read_results(rated_dir / "out")
    stats = pl.read_parquet(rated_dir / "out" / "stats.parquet")
    run_row = stats.filter(pl.col("scope") == "run").row(0, named=True)
    ser = frame["ser"].drop_nulls()
    assert run_row["ser_rated"] == len(ser)
    tenths = (ser * 10).round().cast(pl.Int64)
    for (low, high), name in zip(SER_BANDS, SER_BAND_NAMES, strict=True):
        assert run_row[name] == ((tenths >= low) & (tenths < high)).sum(), name
    assert run_row["ser_max"] == pytest.approx(ser.max())
    assert run_row["ser_p50"] == pytest.approx(ser.sort()[(len(ser) - 1) // 2], abs=0.051)


def test_a_rating_that_disagrees_with_the_solution_makes_the_row_error(tmp_path):
    """The rater checks its path against the engine's solution; here the solution it is
    given is wrong (a test hook swaps two digits): the row is `error`, never rated."""
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:30]
    (tmp_path / "in.txt").write_text("\n".join(puzzles) + "\n")
    code, _, err = run(["run", "-i", "in.txt", "-o", "out", "--rate", "-q"], tmp_path,
                       env={"PIPELINE_FAULT_INJECT": f"rate-disagrees:{puzzles[7]}"})
    assert code == 0, err
    frame = check_run(tmp_path / "out")
    bad = frame.filter(pl.col("status") == "error")
    assert bad["row"].to_list() == [7]
    assert bad["reason"][0].startswith("rating failed")
    assert bad.select(RATED).null_count().row(0) == (1,) * len(RATED)
    assert (frame.filter(pl.col("row") != 7)["status"] == "solved").all()


def test_past_the_budget_ser_is_null_and_the_note_says_how_far(tmp_path):
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:40]
    (tmp_path / "in.txt").write_text("\n".join(puzzles) + "\n")
    code, _, err = run(["run", "-i", "in.txt", "-o", "out", "--rate", "--rate-budget", "1",
                        "-q"], tmp_path)
    assert code == 0, err
    frame = check_run(tmp_path / "out")
    assert (frame["status"] == "solved").all()
    assert frame["ser"].is_null().all()
    assert frame["rate_note"].str.starts_with("past the rating budget at ").all()
    # show says why a solved row has no rating
    code, out, err = run(["show", "out", "--status", "solved", "--limit", "0", "-f", "json"],
                         tmp_path)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["rate_note"] for r in rows] == frame["rate_note"].to_list()
    assert all(r["ser"] is None for r in rows)


def test_rate_needs_uniqueness_proven(tmp_path):
    code, _, err = run(["run", "-i", str(SAMPLE_CSV), "-o", "out", "--rate",
                        "--first-solution"], tmp_path)
    assert code == 2 and "--first-solution" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_rated_run_resumed_after_kill_9_equals_an_undisturbed_one(tmp_path):
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()
    (tmp_path / "in.txt").write_text("\n".join(puzzles) + "\n")
    args = ["run", "-i", "in.txt", "--rate", "--workers", "2", "--chunk-size", "100", "-q"]
    code, _, err = run([*args, "-o", "base"], tmp_path)
    assert code == 0, err
    for seed in range(2):
        out = tmp_path / f"k{seed}"
        proc = start([*args, "-o", out.name], tmp_path)
        target = random.Random(seed).randint(1, 20)
        wait_for(lambda o=out, t=target: len(parts_in(o)) >= t or (o / "_SUCCESS").exists(),
                 proc)
        kill_group(proc)
        code, _, err = run([*args, "-o", out.name], tmp_path)
        assert code == 0, err
        assert comparable(read_results(out)).equals(comparable(read_results(tmp_path / "base")))
        base = pl.read_parquet(tmp_path / "base" / "stats.parquet").filter(
            pl.col("scope") == "run")
        again = pl.read_parquet(out / "stats.parquet").filter(pl.col("scope") == "run")
        for c in ["ser_rated", *SER_BAND_NAMES, "ser_p50", "ser_max"]:
            assert again[c][0] == base[c][0], c
        shutil.rmtree(out)


# ---------------------------------------------------------------------------------------
# Every command that carries the rating


def test_show_filters_by_band_and_sorts_hardest_first(rated_dir, run_cli):
    frame = read_results(rated_dir / "out")
    rated = frame.filter(pl.col("ser").is_not_null())
    hi = float(rated["ser"].max())
    res = run_cli("show", "out", "--sort", "ser", "--limit", "3", "-f", "json", cwd=rated_dir)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["ser"] for r in rows] == sorted(rated["ser"].to_list(), reverse=True)[:3]
    assert rows[0]["ser"] == hi
    # ties go in input order, whatever --limit keeps (each batch's top was picked by ser
    # alone, so a limited list could hold a later row of a tie than the whole list did)
    whole = [json.loads(line) for line in run_cli("show", "out", "--sort", "ser", "--limit",
                                                   "0", "-f", "json", cwd=rated_dir).stdout.splitlines()]
    assert whole == sorted(whole, key=lambda r: (-(r["ser"] or -1), r["source"], r["row"]))
    for k in (1, 5, 17):
        res = run_cli("show", "out", "--sort", "ser", "--limit", str(k), "-f", "json",
                      cwd=rated_dir)
        assert [json.loads(line) for line in res.stdout.splitlines()] == whole[:k]
    band = f"{hi - 0.5:.1f}-{hi:.1f}"
    res = run_cli("show", "out", "--ser", band, "--limit", "0", "-f", "csv", cwd=rated_dir)
    assert res.returncode == 0, res.stderr
    shown = pl.read_csv(res.stdout.encode())
    want = rated.filter(pl.col("ser").is_between(hi - 0.5 - 1e-9, hi + 1e-9))
    assert sorted(shown["row"].to_list()) == sorted(want["row"].to_list())
    res = run_cli("show", "out", "--ser", "seven", cwd=rated_dir)
    assert res.returncode == 2
    # A band no row is in: said as the band, not as if no row had the statuses.
    res = run_cli("show", "out", "--ser", f"{hi + 0.1:.1f}+", "--status", "solved",
                  cwd=rated_dir, env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"no row of out is solved with SER {hi + 0.1:.1f}+"


def test_dedup_carries_ser_and_split_stratifies_by_band(tmp_path, run_cli):
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:200]
    (tmp_path / "in.txt").write_text("\n".join(puzzles + puzzles[:20]) + "\n")
    res = run_cli("run", "-i", "in.txt", "-o", "out", "--rate", "--canonical", "-q")
    assert res.returncode == 0, res.stderr
    frame = read_results(tmp_path / "out")
    res = run_cli("dedup", "out", "-o", "d.parquet", "-q")
    assert res.returncode == 0, res.stderr
    d = pl.read_parquet(tmp_path / "d.parquet")
    assert "ser" in d.columns and d.height == 200
    joined = d.join(frame.select("source", "row", pl.col("ser").alias("want")),
                    on=["source", "row"])
    assert joined.filter(pl.col("ser").ne_missing(pl.col("want"))).height == 0
    res = run_cli("split", "out", "-o", "splits", "--fractions", "0.5,0.5", "--stratify",
                  "ser_band", "-q")
    assert res.returncode == 0, res.stderr
    files = sorted((tmp_path / "splits").glob("*.parquet"))
    assert len(files) == 2
    halves = [pl.read_parquet(f) for f in files]
    for low, high in SER_BANDS:  # each band's classes divided evenly (within one)
        n = [h.filter(((pl.col("ser") * 10).round() >= low) & ((pl.col("ser") * 10).round()
                                                              < high))["canonical"].n_unique()
             for h in halves]
        assert abs(n[0] - n[1]) <= 1, (low, n)


def test_split_by_band_needs_a_rated_run(tmp_path, run_cli):
    (tmp_path / "in.txt").write_text(PUZZLE + "\n" + LEET + "\n")
    assert run_cli("run", "-i", "in.txt", "-o", "out", "--canonical", "-q").returncode == 0
    res = run_cli("split", "out", "-o", "s", "--fractions", "0.5,0.5", "--stratify", "ser_band")
    assert res.returncode == 2 and "--rate" in res.stderr


def test_solve_rate_prints_er_ep_ed(run_cli):
    res = run_cli("solve", "--rate", "-f", "line", LEET)
    assert res.returncode == 0, res.stderr
    got = rate.rate([LEET])
    text, ratings, *technique = res.stdout.split(" ", 2)
    assert text == grid.decode(rate._solved(grid.encode([LEET])[0])[0], blank="0")[0]
    assert ratings == f"{got.er[0] / 10:.1f}/{got.ep[0] / 10:.1f}/{got.ed[0] / 10:.1f}"
    assert technique[0].strip() == rate.TECHNIQUES[got.technique[0]]


def test_the_report_shows_ser_against_guesses(rated_dir, run_cli, tmp_path):
    res = run_cli("report", "out", cwd=rated_dir)
    assert res.returncode == 0, res.stderr
    assert "SER: p50" in res.stdout
    # An unfinished run (no stats yet): the same figures, from its rows.
    copy = tmp_path / "unfinished"
    shutil.copytree(rated_dir / "out", copy)
    (copy / "_SUCCESS").unlink()
    (copy / "stats.parquet").unlink()
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("SER: "))
    again = run_cli("report", str(copy), "--no-html")
    assert again.returncode == 0, again.stderr
    assert line in again.stdout.splitlines()
    html = (rated_dir / "out" / "report.html").read_text()
    for section in ('id="ser"', 'id="ser-guesses"', 'id="chart-techniques"'):
        assert section in html


# ---------------------------------------------------------------------------------------
# Traces: the steps of every rated row (run --rate --trace; issue 25, 2)


@pytest.fixture(scope="module")
def traced_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("traced")
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:240]
    (d / "a.txt").write_text("\n".join(puzzles[:200] + ["." * 81, PUZZLE[:80]]) + "\n")
    (d / "b.txt").write_text("\n".join(puzzles[200:]) + "\n")  # shares a part with a.txt
    code, _, err = run(["run", "-i", "a.txt", "-i", "b.txt", "-o", "out", "--rate", "--trace",
                        "--chunk-size", "90", "-q"], d)
    assert code == 0, err
    return d


def test_a_trace_part_beside_each_result_part_every_trace_replays(traced_dir):
    from pipeline.sudoku import replay
    from pipeline.tools.traces import parse

    out = traced_dir / "out"
    results = check_run(out)
    names = sorted(p.name for p in (out / "results").glob("part-*.parquet"))
    assert sorted(p.name for p in (out / "traces").glob("part-*.parquet")) == names
    steps = pl.read_parquet(out / "traces" / "*.parquet")
    assert steps.columns == ["source", "row", "step", "technique", "rating", "placements",
                             "eliminations"]
    rated = results.filter(pl.col("ser").is_not_null())
    traced = steps.select("source", "row").unique()
    assert traced.sort("source", "row").equals(rated.select("source", "row")
                                               .sort("source", "row"))
    for (source, row), group in steps.group_by(["source", "row"]):
        group = group.sort("step")
        one = rated.filter((pl.col("source") == source) & (pl.col("row") == row)).row(
            0, named=True)
        path = [(parse(p, "="), parse(e, "<>")) for p, e in
                group.select("placements", "eliminations").iter_rows()]
        assert replay.why_not(one["puzzle"], one["solution"], path) is None, (source, row)
        assert group["rating"].max() == one["ser"] and group.height == one["ser_steps"]


def test_validate_traces_judges_a_run_and_finds_a_tampered_step(traced_dir, run_cli,
                                                                tmp_path):
    res = run_cli("validate", "--traces", "out", cwd=traced_dir)
    assert res.returncode == 0, res.stderr
    assert " 0 faults" in res.stderr
    copy = tmp_path / "copy"
    shutil.copytree(traced_dir / "out", copy)
    part = sorted((copy / "traces").glob("part-*.parquet"))[0]
    steps = pl.read_parquet(part)
    first = steps.filter(pl.col("placements") != "").row(0, named=True)
    wrong = int(first["placements"][-1]) % 9 + 1  # another digit in the same square
    bad = steps.with_columns(pl.when((pl.col("source") == first["source"])
                                     & (pl.col("row") == first["row"])
                                     & (pl.col("step") == first["step"]))
                             .then(pl.lit(first["placements"][:-1] + str(wrong)))
                             .otherwise(pl.col("placements")).alias("placements"))
    bad.write_parquet(part)
    res = run_cli("validate", "--traces", str(copy))
    assert res.returncode == 1
    assert res.stdout.startswith(f"{first['source']} row {first['row']}: ")
    res = run_cli("validate", "--traces", str(copy), "--json")
    got = json.loads(res.stdout)
    assert res.returncode == got["exit_code"] == 1 and got["rows"] > 0
    assert [(f["source"], f["row"]) for f in got["faults"]] == [(first["source"],
                                                                 first["row"])]


@pytest.mark.parametrize("damage", ["cut", "columns"])
def test_validate_traces_says_which_rows_a_damaged_trace_part_leaves_unchecked(
        traced_dir, run_cli, tmp_path, damage):
    """A trace part cut short, or without the steps' columns, is a fault of each rated row
    of its result part (it was an internal error, exit 3), the others still replayed."""
    copy = tmp_path / "copy"
    shutil.copytree(traced_dir / "out", copy)
    parts = sorted((copy / "traces").glob("part-*.parquet"))
    assert len(parts) > 1
    rated = pl.read_parquet(copy / "results" / parts[0].name).filter(pl.col("ser").is_not_null())
    if damage == "cut":
        parts[0].write_bytes(parts[0].read_bytes()[:100])
    else:
        pl.read_parquet(parts[0]).drop("placements").write_parquet(parts[0])
    res = run_cli("validate", "--traces", str(copy), "--json")
    got = json.loads(res.stdout)
    assert res.returncode == got["exit_code"] == 1 and got["rows"] > 0, res.stderr
    assert sorted((f["source"], f["row"]) for f in got["faults"]) == sorted(
        rated.select("source", "row").iter_rows())
    assert all(f"trace part traces/{parts[0].name} cannot be read (" in f["why"]
               for f in got["faults"])


def test_a_result_part_whose_trace_is_lost_is_made_again(traced_dir, tmp_path):
    copy = tmp_path / "again"
    shutil.copytree(traced_dir / "out", copy)
    for name in ("a.txt", "b.txt"):
        shutil.copy(traced_dir / name, tmp_path / name)
    lost = sorted((copy / "traces").glob("part-*.parquet"))[1]
    lost.unlink()
    code, _, err = run(["run", "-i", "a.txt", "-i", "b.txt", "-o", "again", "--rate",
                        "--trace", "--chunk-size", "90"], tmp_path)
    assert code == 0, err
    assert "made again" in err
    assert lost.exists()
    assert comparable(read_results(copy)).equals(comparable(read_results(traced_dir / "out")))


@pytest.mark.parametrize("content", ["", "puzzle\n"])
def test_validate_traces_of_a_run_of_no_rows(tmp_path, run_cli, content):
    """Found by a new user: an internal error (exit 3), its one empty part read as none."""
    (tmp_path / "e.csv").write_text(content)
    res = run_cli("run", "-i", "e.csv", "-o", "out", "--rate", "--trace", "--workers", "1",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = run_cli("validate", "--traces", "out", cwd=tmp_path)
    assert res.returncode == 0 and "0 rated rows replayed (0 steps), 0 faults" in res.stderr, \
        (res.stdout, res.stderr)


def test_trace_needs_rate(tmp_path):
    code, _, err = run(["run", "-i", str(SAMPLE_CSV), "-o", "out", "--trace"], tmp_path)
    assert code == 2 and "--rate" in err


def test_the_default_budget_given_is_the_same_run(rated_dir, run_cli):
    """--rate-budget at the rater's default is the run made without it (it was refused as
    a different run); another budget is a different run, named."""
    from pipeline.sudoku.rate import DEFAULT_BUDGET

    args = ["run", "-i", "in.txt", "-o", "out", "--rate", "--chunk-size", "150"]
    res = run_cli(*args, "--rate-budget", str(DEFAULT_BUDGET), cwd=rated_dir)
    assert res.returncode == 0 and "already done" in res.stderr, res.stderr
    res = run_cli(*args, "--rate-budget", "5000", cwd=rated_dir)
    assert res.returncode == 2 and "(other --rate-budget)" in res.stderr, res.stderr
