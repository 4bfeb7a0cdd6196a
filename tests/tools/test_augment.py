"""pipeline.tools.augment on the planted --canonical run (conftest's `planted`): K copies per
solved row whose pairs all pass the independent checker and map back to their row's class;
the same copies for a seed whatever the parts; CSV that feeds back into `pipeline run`; a
pair that fails the check is an error, and nothing is written.
"""

from __future__ import annotations

import polars as pl
import pytest
from conftest import invoke, read_results
from helpers import pipeline_run

from pipeline.sudoku import canonical, check, grid, symmetry
from pipeline.tools import augment


@pytest.fixture(scope="module")
def augmented(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("aug") / "aug.parquet"
    summary = augment.augment(planted["run"], 3, 11, str(out))
    return out, summary, pl.read_parquet(out)


def test_augment_pairs_check_and_map_back_to_their_class(planted, planted_results, augmented):
    _, summary, aug = augmented
    solved = planted_results.filter(pl.col("status") == "solved")
    assert summary.solved == solved.height and aug.height == 3 * solved.height
    assert aug.columns == ["source", "row", "copy", "puzzle", "solution", "canonical"]
    counts = aug.group_by("source", "row").agg(pl.col("copy").sort()).sort("source", "row")
    assert counts.height == solved.height
    assert counts["copy"].to_list() == [[0, 1, 2]] * solved.height
    p, bad_p = grid.encode(aug["puzzle"].to_list())
    s, bad_s = grid.encode(aug["solution"].to_list())
    assert not any(bad_p) and not any(bad_s)
    assert check.is_solution_numpy(p, s).all() and check.is_solution(p, s).all()
    forms = grid.decode(canonical.minlex(p)[0])
    back = aug.with_columns(pl.Series("form", forms)).join(
        planted_results.select("source", "row", pl.col("canonical").alias("orig")),
        on=["source", "row"])
    assert back.height == aug.height
    assert (back["form"] == back["orig"]).all() and (back["form"] == back["canonical"]).all()
    # Random: the copies differ from the original and from each other (almost surely).
    joined = aug.join(planted_results.select("source", "row", pl.col("puzzle").alias("p0")),
                      on=["source", "row"])
    assert (joined["puzzle"] != joined["p0"]).mean() > 0.99
    assert aug["puzzle"].n_unique() > 0.99 * aug.height


def test_augment_same_seed_same_output_whatever_the_parts(planted, augmented, tmp_path):
    _, _, aug = augmented
    again = tmp_path / "again.parquet"
    augment.augment(planted["run"], 3, 11, str(again))
    assert pl.read_parquet(again).equals(aug)
    # Another run of the same inputs in other parts (chunk size) gives the same copies.
    base = planted["base"]
    args = ["run", "--output", str(tmp_path / "run2"), "--chunk-size", "333", "--canonical",
            "-q", "--input", "a.csv", "--input", "b.txt"]
    assert invoke(args, cwd=base).returncode == 0
    parts = len(list((tmp_path / "run2" / "results").glob("part-*")))
    assert parts < len(list((planted["run"] / "results").glob("part-*")))
    other = tmp_path / "other.parquet"
    augment.augment(tmp_path / "run2", 3, 11, str(other))
    assert pl.read_parquet(other).equals(aug)
    augment.augment(planted["run"], 3, 12, str(tmp_path / "seed12.parquet"))
    assert not pl.read_parquet(tmp_path / "seed12.parquet").equals(aug)


def test_augment_copies_come_from_their_rows_block(planted, augmented):
    """A row's transformations depend on (seed, source, row) only, through its block."""
    _, _, aug = augmented
    row = aug.filter((pl.col("source") == "b.txt") & (pl.col("row") == 300))
    rows = augment.block_rows(3)
    t = augment.block_transforms(11, 1, 300 // rows, 3)[300 % rows]
    results = read_results(planted["run"])
    orig = results.filter((pl.col("source") == "b.txt") & (pl.col("row") == 300))
    g, _ = grid.encode(orig["puzzle"].to_list() * 3)
    assert grid.decode(symmetry.transform(g, t)) == row["puzzle"].to_list()


def test_augment_csv_feeds_back_into_run_as_puzzle_and_solution(planted, tmp_path, capsys):
    out = tmp_path / "aug.csv"
    assert augment.main(str(planted["run"]), 1, 5, str(out)) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "each checked" in err[0]
    pipeline_run(tmp_path, "again", str(out))
    again = read_results(tmp_path / "again")
    assert again.height == pl.read_csv(out, infer_schema=False).height
    assert (again["status"] == "solved").all() and again["expected_match"].all()


def test_augment_raises_on_a_pair_that_fails_the_check(planted, tmp_path, monkeypatch):
    real = symmetry.transform
    calls = []

    def broken(grids, transforms):
        out = real(grids, transforms)
        calls.append(1)
        if len(calls) % 2 == 0:  # the solutions' call
            out[0, :2] = out[0, 1::-1].copy()
        return out

    monkeypatch.setattr(augment.symmetry, "transform", broken)
    with pytest.raises(RuntimeError, match="fails the check"):
        augment.augment(planted["run"], 1, 0, str(tmp_path / "a.parquet"))
    assert not (tmp_path / "a.parquet").exists()
