"""pipeline.tools.dedup on the planted --canonical run (conftest's `planted`), against answers
computed here: every class once, its first occurrence in input order, with its copies; the
same through spilled buckets; CSV (and .csv.gz) that feeds back into `pipeline run`; URLs.
A folder that is not a finished run, or a run without --canonical, is an input error.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import EMPTY, MALFORMED, read_results
from helpers import first_occurrences, pipeline_run

from pipeline.cli.exits import exit_code
from pipeline.errors import InputError
from pipeline.tools import augment, dedup, split


def test_dedup_keeps_each_class_once_its_first_occurrence(planted, planted_results, tmp_path):
    out = tmp_path / "classes.parquet"
    summary = dedup.dedup(planted["run"], str(out))
    got = pl.read_parquet(out)
    assert got.columns == list(dedup.DEDUP_COLUMNS)
    assert got.height == summary.classes == planted["classes"]
    assert got["canonical"].n_unique() == got.height  # every class once
    want = first_occurrences(planted_results, planted["sources"])
    # In input order of the first occurrences, with their copies.
    assert got.select("source", "row", "canonical", "copies").equals(
        want.select("source", "row", "canonical", "copies").cast({"copies": pl.Int64}))
    assert got["copies"].sum() == planted_results["canonical"].drop_nulls().len()
    # The other columns are the kept row's own.
    joined = got.join(planted_results, on=["source", "row"], suffix="_r")
    assert joined.height == got.height
    for col in ("puzzle", "canonical", "solution", "status"):
        assert joined[col].equals(joined[col + "_r"], null_equal=True), col
    assert summary.formless == MALFORMED and summary.rows == planted_results.height


def test_dedup_first_occurrence_is_by_source_order_then_row(planted, tmp_path):
    out = tmp_path / "classes.parquet"
    dedup.dedup(planted["run"], str(out))
    got = pl.read_parquet(out)
    results = read_results(planted["run"])
    b0 = results.filter((pl.col("source") == "b.txt") & (pl.col("row") == 0))
    kept = got.filter(pl.col("canonical") == b0["canonical"][0])
    assert kept["source"].to_list() == ["a.csv"] and kept["copies"][0] >= 2
    invalid = got.filter(pl.col("status") == "invalid")
    assert invalid.height == 1 and invalid["source"][0] == "a.csv"
    assert invalid["copies"][0] == 2  # a.csv's and its equivalent in b.txt
    empty = got.filter(pl.col("puzzle") == EMPTY)
    assert empty["copies"].to_list() == [2] and empty["status"][0] == "multiple"


@pytest.mark.parametrize("memory_rows", [1, 7, 333])
def test_dedup_bucket_path_equals_the_in_memory_answer(planted, tmp_path, memory_rows,
                                                       monkeypatch):
    whole = tmp_path / "whole.parquet"
    dedup.dedup(planted["run"], str(whole))
    seen = []
    real = dedup.pass1
    monkeypatch.setattr(dedup, "pass1", lambda *a, **k: seen.append(real(*a, **k))
                        or seen[-1])
    spilled = tmp_path / "spilled.parquet"
    dedup.dedup(planted["run"], str(spilled), memory_rows=memory_rows,
                   spill_dir=str(tmp_path))
    assert seen[0].k > 1 and seen[0].spill.paths is not None  # it did spill to files
    assert pl.read_parquet(spilled).equals(pl.read_parquet(whole))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("pipeline-datasets-")]


def test_dedup_csv_feeds_back_into_run_one_row_per_class(planted, tmp_path):
    out = tmp_path / "classes.csv"
    dedup.dedup(planted["run"], str(out))
    header = out.read_text().splitlines()[0]
    assert header == ",".join(dedup.DEDUP_COLUMNS)
    pipeline_run(tmp_path, "again", str(out), extra=("--canonical",))
    again = read_results(tmp_path / "again")
    assert again.height == planted["classes"]
    assert again["canonical"].null_count() == 0
    assert again["canonical"].n_unique() == again.height  # no duplicates
    original = pl.read_csv(out, infer_schema=False)
    assert set(again["canonical"]) == set(original["canonical"])
    # The dedup's solution is the expected solution of the rerun.
    solved = again.filter(pl.col("status") == "solved")
    assert solved["expected_match"].all()


def test_dedup_csv_gz(planted, tmp_path):
    dedup.dedup(planted["run"], str(tmp_path / "classes.csv.gz"))
    dedup.dedup(planted["run"], str(tmp_path / "classes.csv"))
    with gzip.open(tmp_path / "classes.csv.gz") as f:
        assert f.read() == (tmp_path / "classes.csv").read_bytes()


def test_dedup_main_prints_one_line_and_returns_0(planted, tmp_path, capsys):
    assert dedup.main(str(planted["run"]), str(tmp_path / "d.parquet")) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"{planted['classes']:,} classes" in err[0] and "2 malformed rows left out" in err[0]
    assert dedup.main(str(planted["run"]), str(tmp_path / "e.parquet"),
                               quiet=True) == 0
    assert capsys.readouterr().err == ""


def test_dedup_accepts_file_urls(planted, tmp_path):
    out = tmp_path / "u.parquet"
    dedup.dedup(f"file://{planted['run']}", f"file://{out}")
    assert pl.read_parquet(out).height == planted["classes"]


# ---------------------------------------------------------------------------------------
# Bad input


@pytest.fixture(scope="module")
def plain_run(planted) -> Path:
    """A finished run without --canonical."""
    base = planted["base"]
    pipeline_run(base, "plain", "a.csv")
    return base / "plain"


def test_not_a_finished_run_or_no_canonical_is_an_input_error(planted, plain_run, tmp_path):
    out = str(tmp_path / "d.parquet")
    with pytest.raises(InputError, match="no such folder"):
        dedup.dedup(tmp_path / "nowhere", out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: not a run folder \(no manifest.json or"):
        dedup.dedup(tmp_path / "empty", out)
    unfinished = tmp_path / "unfinished"
    shutil.copytree(plain_run, unfinished)
    (unfinished / "_SUCCESS").unlink()
    with pytest.raises(InputError, match=r"unfinished: not a finished run \(no _SUCCESS\)"):
        dedup.dedup(unfinished, out)
    with pytest.raises(InputError, match="without --canonical"):
        dedup.dedup(plain_run, out)
    with pytest.raises(InputError, match="without --canonical"):
        split.split(plain_run, "0.5,0.5", None, 1, str(tmp_path / "s"))
    assert exit_code(InputError("x")) == 2
    # augment needs no canonical form
    s = augment.augment(plain_run, 1, 0, str(tmp_path / "aug.parquet"))
    assert s.written == s.solved > 0
    assert "canonical" not in pl.read_parquet(tmp_path / "aug.parquet").columns
    assert not Path(out).exists()
