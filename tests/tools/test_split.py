"""pipeline.tools.split on the planted --canonical run (conftest's `planted`), against answers
computed here: no class in two splits, every row kept, in input order; the fractions and
the grade mix held; deterministic for a seed, also through spilled buckets; the summary.
And the usage errors of the data-set tools (split's, dedup's, augment's).
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import MALFORMED, REPO
from helpers import first_occurrences

from pipeline.cli.exits import exit_code
from pipeline.errors import UsageError
from pipeline.tools import augment, dedup, split


@pytest.fixture(scope="module")
def splits(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("split") / "s"
    summary = split.split(planted["run"], "0.8,0.1,0.1", None, 7, str(out))
    frames = {n: pl.read_parquet(out / f"{n}.parquet") for n in ("train", "val", "test")}
    return out, summary, frames


def test_split_no_class_in_two_splits_and_every_row_kept(planted, planted_results, splits):
    _, summary, frames = splits
    seen: dict[str, str] = {}
    for name, f in frames.items():
        for c in f["canonical"].unique().to_list():
            assert seen.setdefault(c, name) == name, f"class in {seen[c]} and {name}"
    assert len(seen) == planted["classes"]
    allrows = pl.concat(list(frames.values()))
    with_class = planted_results.filter(pl.col("canonical").is_not_null())
    assert allrows.height == with_class.height == int(summary.rows.sum())
    assert allrows.columns == planted_results.columns  # all the results' columns
    key = ["source", "row"]
    assert allrows.sort(key).equals(with_class.sort(key))
    for f in frames.values():  # in input order
        order = f.join(pl.DataFrame({"source": planted["sources"], "o": [0, 1]}), on="source")
        assert order.select("o", "row").equals(order.select("o", "row").sort("o", "row"))


def test_split_fractions_and_grade_mix(planted, planted_results, splits):
    _, summary, frames = splits
    n = planted["classes"]
    firsts = first_occurrences(planted_results, planted["sources"]).join(
        planted_results.select("source", "row", "grade"), on=["source", "row"])
    strata = firsts.group_by("grade").len()
    for name, frac in zip(("train", "val", "test"), (0.8, 0.1, 0.1), strict=True):
        classes = frames[name]["canonical"].n_unique()
        # The bound: within one class of f * n_s in every stratum, so within S of f * n.
        assert abs(classes - frac * n) <= strata.height
        assert abs(classes / n - frac) < 0.01
        mine = firsts.filter(pl.col("canonical").is_in(frames[name]["canonical"].implode()))
        for grade, n_s in strata.iter_rows():
            got = mine.filter(pl.col("grade").eq_missing(grade)).height
            assert abs(got - frac * n_s) <= 1, (name, grade, got, n_s)
    assert summary.classes.sum() == n
    assert set(summary.strata) >= {"easy", "medium", "hard", "none"}


def test_split_is_deterministic_and_seeded(planted, splits, tmp_path):
    out, _, frames = splits
    again = tmp_path / "again"
    split.split(planted["run"], "0.8,0.1,0.1", None, 7, str(again), memory_rows=41,
                   spill_dir=str(tmp_path))
    for name, f in frames.items():
        assert pl.read_parquet(again / f"{name}.parquet").equals(f)  # also through buckets
    other = tmp_path / "other"
    split.split(planted["run"], "0.8,0.1,0.1", None, 8, str(other))
    assert not pl.read_parquet(other / "test.parquet").equals(frames["test"])
    info = json.loads((out / "split.json").read_text())
    assert info["seed"] == 7 and info["classes"]["train"] == frames["train"][
        "canonical"].n_unique()
    assert info["malformed_rows_left_out"] == MALFORMED


def test_split_unstratified_csv_and_names(planted, planted_results, tmp_path, capsys):
    out = tmp_path / "s"
    code = split.main(str(planted["run"]), "0.5,0.5", str(out), names="x,y",
                               seed=3, fmt="csv", stratify=None)
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("split ") and "not stratified" in err[0]
    assert err[1].split() == ["split", "rows", "classes", "none"]
    assert err[-1].startswith("(total)")  # (not `all`: a split may be named so)
    x = pl.read_csv(out / "x.csv", infer_schema=False)
    y = pl.read_csv(out / "y.csv", infer_schema=False)
    assert x.height + y.height == planted_results["canonical"].drop_nulls().len()
    assert abs(x["canonical"].n_unique() - y["canonical"].n_unique()) <= 1
    assert not set(x["canonical"]) & set(y["canonical"])


def test_split_main_table_lists_grades(planted, tmp_path, capsys):
    split.main(str(planted["run"]), "0.8,0.1,0.1", str(tmp_path / "s"), seed=1)
    err = capsys.readouterr().err.splitlines()
    assert err[1].split()[:4] == ["split", "rows", "classes", "easy"]
    assert [line.split()[0] for line in err[2:]] == ["train", "val", "test", "(total)"]


# ---------------------------------------------------------------------------------------
# Usage


def test_usage_errors(planted, tmp_path):
    run = planted["run"]
    for fractions in ("0.8,0.1", "a,b", "0.5,0.5,0", "1.5,-0.5", ""):
        with pytest.raises(UsageError):
            split.split(run, fractions, None, 1, str(tmp_path / "s"))
    # the message shows the fractions as given, not rounded to look right
    with pytest.raises(UsageError, match=r"--fractions 1\.0000001: each must be"):
        split.parse_fractions("1.0000001")
    with pytest.raises(UsageError, match=r"0\.5,0\.50001: they add up to 1\.00001, not 1"):
        split.parse_fractions("0.5,0.50001")
    with pytest.raises(UsageError, match=r"--fractions 1e-400,1: each must be"):
        split.parse_fractions("1e-400, 1")
    from conftest import invoke

    # a seed past 64 bits was taken modulo 2^64 (the same split as --seed 0, recorded as
    # the big one)
    res = invoke(["split", str(run), "--fractions", "1", "-o", str(tmp_path / "s"),
                  "--seed", str(2**64)])
    assert res.returncode == 2 and not (tmp_path / "s").exists()
    with pytest.raises(UsageError, match="2 names for 3"):
        split.split(run, "0.8,0.1,0.1", "a,b", 1, str(tmp_path / "s"))
    with pytest.raises(UsageError, match="twice"):
        split.split(run, "0.5,0.5", "a,a", 1, str(tmp_path / "s"))
    with pytest.raises(UsageError, match="plain file name"):
        split.split(run, "0.5,0.5", "a,../b", 1, str(tmp_path / "s"))
    with pytest.raises(UsageError, match="--format"):
        split.split(run, "0.5,0.5", None, 1, str(tmp_path / "s"), fmt="json")
    with pytest.raises(UsageError, match="--stratify"):
        split.split(run, "0.5,0.5", None, 1, str(tmp_path / "s"), stratify="nope")
    with pytest.raises(UsageError, match="--seed"):
        split.split(run, "0.5,0.5", None, -1, str(tmp_path / "s"))
    with pytest.raises(UsageError, match="unknown file type"):
        dedup.dedup(run, str(tmp_path / "d.json"))
    with pytest.raises(UsageError, match="is a folder"):
        dedup.dedup(run, str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        dedup.dedup(run, str(tmp_path / "no" / "d.parquet"))
    with pytest.raises(UsageError, match="inside the run"):
        dedup.dedup(run, str(run / "results" / "dedup.parquet"))
    with pytest.raises(UsageError, match="--copies"):
        augment.augment(run, 0, 1, str(tmp_path / "a.parquet"))
    assert exit_code(UsageError("x")) == 2
    assert not list((run / "results").glob("*dedup*"))


@pytest.mark.parametrize("fractions", ["1", "0.5,0.5", "0.8,0.1,0.1", "0.25,0.25,0.25,0.25"])
def test_default_names_are_the_ones_the_help_gives(planted, tmp_path, fractions):
    import re

    from conftest import invoke

    text = " ".join(invoke(["split", "--help"]).stdout.split())
    said = dict(re.findall(r"([\w,]+) for (one|two|three)\b", text))
    k = len(fractions.split(","))
    if k <= 3:
        expected = {v: n for n, v in said.items()}[("one", "two", "three")[k - 1]].split(",")
    else:  # "else split0,split1,..."
        assert "else split0,split1,..." in text
        expected = [f"split{i}" for i in range(k)]
    out = tmp_path / "s"
    res = invoke(["split", str(planted["run"]), "--fractions", fractions, "-o", str(out), "-q"])
    assert res.returncode == 0, res.stderr
    assert sorted(p.stem for p in out.glob("*.parquet")) == sorted(expected)
    assert list(json.loads((out / "split.json").read_text())["files"]) == expected


def test_a_split_into_a_folder_of_an_earlier_one_leaves_none_of_its_files(planted, tmp_path):
    """Each file an earlier split wrote there (its split.json says) and this one did not
    goes: a stale val.parquet would hold classes of the new train, unseen by overlap DIR."""
    out = tmp_path / "s"
    split.split(planted["run"], "0.8,0.1,0.1", None, 7, str(out))
    split.split(planted["run"], "0.5,0.5", None, 3, str(out), fmt="csv")
    (out / "notes.txt").write_text("mine")  # not a split's: kept
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "split.json", "test.csv",
                                                     "train.csv"]


@pytest.mark.parametrize("fractions", ["0.8,0.2", "0.8,0.1,0.1"])
def test_strata_of_one_class_each_still_fill_every_split(run_cli, tmp_path, fractions):
    """--stratify on a column with a value a row: every stratum one class. Each split
    still gets its share of the classes in all, within one (each stratum rounded alone,
    all went to the first split)."""
    lines = (REPO / "data" / "sample.csv").read_text().splitlines()[:301]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    assert run_cli("run", "-i", "p.csv", "-o", "run", "--canonical").returncode == 0
    summary = split.split(tmp_path / "run", fractions, None, 7, str(tmp_path / "s"),
                          stratify="row")
    got = summary.classes.sum(axis=1)
    assert (summary.classes.sum(axis=0) <= 1).all()  # a class a stratum at most
    want = [float(f) * got.sum() for f in fractions.split(",")]
    assert all(abs(g - w) <= 1 for g, w in zip(got, want, strict=True)), (got, want)
