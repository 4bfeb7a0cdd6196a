"""pipeline.tools.overlap against answers computed here: disguised copies planted under random
symmetries are all found (row and match), two splits of `pipeline split` share none, a leaky
split is refused (exit 1), the spilled path gives the same rows, and URLs on the loopback S3
server work as inputs and output."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import SAMPLE_CSV
from helpers import equivalents, first_occurrences

from pipeline.errors import InputError, UsageError
from pipeline.io import classes
from pipeline.tools import overlap, split

COLUMNS = ["source", "row", "puzzle", "match_source", "match_row"]


@pytest.fixture(scope="module")
def planted_pair(tmp_path_factory):
    """a.txt: 400 sample puzzles; b.txt: 150 others with 25 disguised copies of a.txt's rows
    and a malformed line slipped in; the answer: (b row, a row) of every copy."""
    base = tmp_path_factory.mktemp("overlap")
    rng = np.random.default_rng(25)
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()
    a, others = puzzles[:400], puzzles[400:550]
    picked = rng.choice(len(a), 25, replace=False)
    b: list[tuple[str, int | None]] = [(p, None) for p in others]
    for i, copy in zip(picked, equivalents([a[i] for i in picked], rng), strict=True):
        b.insert(int(rng.integers(0, len(b) + 1)), (copy, int(i)))
    b.insert(int(rng.integers(0, len(b) + 1)), ("x" * 81, None))
    (base / "a.txt").write_text("".join(p + "\n" for p in a))
    (base / "b.txt").write_text("".join(p + "\n" for p, _ in b))
    answer = [(row, i) for row, (_, i) in enumerate(b) if i is not None]
    return base, answer, b


@pytest.mark.parametrize("memory_rows", [overlap.MEMORY_ROWS, 7])
def test_disguised_copies_are_all_found(planted_pair, tmp_path, memory_rows):
    base, answer, b = planted_pair
    out = tmp_path / "found.parquet"
    summary = overlap.overlap(str(base / "a.txt"), str(base / "b.txt"), str(out),
                              memory_rows=memory_rows, spill_dir=str(tmp_path))  # fmt: skip
    found = pl.read_parquet(out)
    assert found.columns == COLUMNS
    assert list(zip(found["row"], found["match_row"], strict=True)) == answer  # B's order
    assert found["puzzle"].to_list() == [b[row][0] for row, _ in answer]
    assert set(found["source"]) == {str(base / "b.txt")}
    assert set(found["match_source"]) == {str(base / "a.txt")}
    assert (summary.found, summary.classes, summary.formless) == (25, 25, 1)
    assert summary.rows_b == len(b)
    assert [p.name for p in tmp_path.iterdir()] == ["found.parquet"]  # spill files removed


def test_the_cli_refuses_a_leak_and_passes_a_clean_pair(planted_pair, run_cli, tmp_path):
    base, answer, _ = planted_pair
    leaky = run_cli("overlap", base / "a.txt", base / "b.txt", "-o", tmp_path / "f.csv")
    assert leaky.returncode == 1, leaky.stderr
    assert "25 rows of B (25 classes)" in leaky.stderr_lines[-1]
    found = pl.read_csv(tmp_path / "f.csv")
    assert found.columns == COLUMNS and found.height == len(answer)
    copies = {row for row, _ in answer}
    lines = (base / "b.txt").read_text().splitlines()
    (tmp_path / "c.txt").write_text("".join(f"{p}\n" for r, p in enumerate(lines)
                                            if r not in copies))  # fmt: skip
    clean = run_cli("overlap", base / "a.txt", tmp_path / "c.txt")
    assert clean.returncode == 0, clean.stderr
    assert "0 rows of B" in clean.stderr_lines[-1]
    piped = run_cli("overlap", base / "a.txt", "-", input=(base / "b.txt").read_bytes())
    assert piped.returncode == 1 and "25 rows of B" in piped.stderr_lines[-1], piped.stderr
    alone = run_cli("overlap", base)
    assert alone.returncode == 2 and "not a split folder" in alone.stderr


def test_a_run_against_itself_matches_each_row_to_its_class_s_first_occurrence(
    planted, planted_results, tmp_path
):
    out = tmp_path / "self.parquet"
    summary = overlap.overlap(str(planted["run"]), str(planted["run"]), str(out))
    found = pl.read_parquet(out)
    firsts = first_occurrences(planted_results, planted["sources"])
    expect = (
        planted_results.filter(pl.col("canonical").is_not_null())
        .join(firsts.select("canonical", match_source="source", match_row="row"),
              on="canonical")  # fmt: skip
        .select(COLUMNS[:2] + COLUMNS[3:])
        .sort("source", "row")
    )
    assert found.select(COLUMNS[:2] + COLUMNS[3:]).sort("source", "row").equals(expect)
    assert summary.found == expect.height and summary.classes == planted["classes"]


@pytest.fixture(scope="module")
def splits(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("split") / "s"
    split.split(planted["run"], "0.7,0.2,0.1", None, 5, str(out))
    return out


def test_the_splits_of_split_share_no_class(splits, run_cli, tmp_path):
    summaries = overlap.overlap_splits(str(splits), str(tmp_path / "pairs.csv"))
    assert [(s.a, s.b) for s in summaries] == [("train", "val"), ("train", "test"),
                                               ("val", "test")]  # fmt: skip
    assert all(s.found == 0 and s.rows_a and s.rows_b for s in summaries)
    assert pl.read_csv(tmp_path / "pairs.csv").columns == [*COLUMNS, "split", "match_split"]
    res = run_cli("overlap", splits)
    assert res.returncode == 0, res.stderr
    assert len(res.stderr_lines) == 3


def test_a_leaky_split_is_found(splits, tmp_path):
    """Test rows and disguised copies of some train rows, given as puzzles to canonicalise."""
    train = pl.read_parquet(splits / "train.parquet")
    test = pl.read_parquet(splits / "test.parquet")
    rng = np.random.default_rng(7)
    picked = sorted(rng.choice(train.height, 12, replace=False).tolist())
    copies = equivalents(train["puzzle"].gather(picked).to_list(), rng)
    (tmp_path / "test.txt").write_text("".join(p + "\n" for p in test["puzzle"].to_list()
                                               + copies))  # fmt: skip
    out = tmp_path / "leak.csv"
    summary = overlap.overlap(str(splits / "train.parquet"), str(tmp_path / "test.txt"), str(out))
    found = pl.read_csv(out)
    assert summary.found == 12 and found["row"].to_list() == list(
        range(test.height, test.height + 12))
    # Each copy matches the first train row of its class, by the run's source and row.
    for k, i in enumerate(picked):
        same = train.filter(pl.col("canonical") == train["canonical"][i]).row(0, named=True)
        assert (found["match_source"][k], found["match_row"][k]) == (same["source"], same["row"])


def test_an_output_that_is_an_input_is_refused_and_left_whole(splits, run_cli, tmp_path):
    """`-o` naming a file the check reads (a split's own file, either side, by another
    path) would replace it with the leak table, and the next check would then pass."""
    train = splits / "train.parquet"
    before = train.read_bytes()
    res = run_cli("overlap", splits, "-o", train)
    assert res.returncode == 2 and res.stderr_lines == [
        f"pipeline: error: --output {train}: is also an input ({train}); write it elsewhere"]
    (tmp_path / "b.csv").write_text(SAMPLE_CSV.read_text()[:2000])
    (tmp_path / "link.csv").symlink_to(tmp_path / "b.csv")
    for out in (train, tmp_path / "b.csv", f"file://{tmp_path}/b.csv"):
        with pytest.raises(UsageError, match="is also an input"):
            overlap.overlap(str(train), str(tmp_path / "link.csv"), str(out))
    assert train.read_bytes() == before
    assert (tmp_path / "b.csv").read_text() == SAMPLE_CSV.read_text()[:2000]


def test_a_table_of_other_columns_is_read_as_an_input_and_a_cut_one_is_refused(
        splits, run_cli, tmp_path):
    """A Parquet file with `canonical` but not a run's rows (no source, row) is read as any
    input, its puzzles canonicalised (it was an internal error: no field "row"); one cut
    short is an input error naming it (it was an internal error, exit 3)."""
    train = splits / "train.parquet"
    pl.read_parquet(train).select("puzzle", "canonical").write_parquet(tmp_path / "mine.parquet")
    (tmp_path / "cut.parquet").write_bytes(train.read_bytes()[:300])
    same = overlap.overlap(str(train), str(tmp_path / "mine.parquet"))
    assert same.found == same.rows_b == pl.read_parquet(train).height
    res = run_cli("overlap", "cut.parquet", train)
    assert res.returncode == 2 and len(res.stderr_lines) == 1
    assert res.stderr_lines[0].startswith("pipeline: error: cut.parquet: ")


def test_usage_errors(planted_pair, tmp_path):
    base, _, _ = planted_pair
    with pytest.raises(UsageError):
        overlap.overlap("-", "-")
    with pytest.raises(InputError):
        overlap.overlap_splits(str(base))
    with pytest.raises(InputError):
        overlap.overlap(str(base / "a.txt"), str(tmp_path / "missing.txt"))


def test_unpack_forms_undoes_pack_forms():
    rng = np.random.default_rng(3)
    digits = rng.integers(0, 10, (50, 81)).astype(np.uint8)
    assert (classes.unpack_forms(classes.pack_forms(digits)) == digits).all()


@pytest.mark.slow
def test_urls_on_s3_as_inputs_and_output(s3, planted_pair, run_cli):
    fs, bucket = s3
    base, answer, _ = planted_pair
    fs.put_file(str(base / "a.txt"), f"{bucket}/a.txt")
    fs.put_file(str(base / "b.txt"), f"{bucket}/b.txt")
    res = run_cli("overlap", f"s3://{bucket}/a.txt", f"s3://{bucket}/b.txt",
                  "-o", f"s3://{bucket}/found.parquet")  # fmt: skip
    assert res.returncode == 1, res.stderr
    found = pl.read_parquet(fs.cat_file(f"{bucket}/found.parquet"))
    assert list(zip(found["row"], found["match_row"], strict=True)) == answer
    assert set(found["source"]) == {f"s3://{bucket}/b.txt"}
