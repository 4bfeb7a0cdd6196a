"""pipeline.io.classes: the equivalence classes of a run's canonical forms, in flat memory.

On the planted --canonical run (conftest's `planted`: inputs with equivalents planted on
purpose) against answers computed here (polars over the results, the minlex forms of the
planted puzzles): distinct_classes per source and in total, whatever the memory; and on
small synthetic run folders, the properties of distinct_classes, dedup and split over
the same classes, hash collisions that never merge two, the form hash pinned.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import MALFORMED
from helpers import first_occurrences
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import InputError
from pipeline.io import classes, runfolder
from pipeline.sudoku.grade import GRADES
from pipeline.tools import dedup, split

# ---------------------------------------------------------------------------------------
# distinct_classes


def test_the_planted_run_holds_what_was_planted(planted, planted_results):
    assert planted["sources"] == sorted(planted_results["source"].unique().to_list())
    assert planted_results["canonical"].null_count() == MALFORMED
    assert planted_results["canonical"].drop_nulls().n_unique() == planted["classes"]
    assert planted_results.height - MALFORMED > planted["classes"] + 800  # many duplicates


@pytest.mark.parametrize("memory_rows", [classes.MEMORY_ROWS, 300, 7])
def test_distinct_classes_per_source_and_in_total(planted, planted_results, memory_rows):
    want = (planted_results.filter(pl.col("canonical").is_not_null()).group_by("source")
            .agg(pl.col("canonical").n_unique()))
    per_source, total = classes.distinct_classes(planted["run"], memory_rows=memory_rows)
    assert list(per_source) == planted["sources"]  # the run's input order
    assert per_source == dict(want.iter_rows())
    assert total == planted["classes"] == planted_results["canonical"].drop_nulls().n_unique()


def test_distinct_classes_takes_a_list_of_parts(planted, planted_results):
    parts = sorted(str(p) for p in (planted["run"] / "results").glob("part-*.parquet"))
    assert classes.distinct_classes(parts, memory_rows=100) == classes.distinct_classes(
        planted["run"])
    assert classes.distinct_classes([]) == ({}, 0)


def test_distinct_classes_works_before_success(planted, tmp_path):
    """The run calls it before writing _SUCCESS."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(planted["run"], copy)
    (copy / runfolder.SUCCESS).unlink()
    assert classes.distinct_classes(copy) == classes.distinct_classes(planted["run"])


# ---------------------------------------------------------------------------------------
# Properties on small synthetic run folders


def form(c: int) -> str:
    """A fake canonical form for class c (only '.' and 1-9, as the run writes them)."""
    return f"{c:081d}".replace("0", ".")


def fake_run(folder: Path, sources: list[list[tuple[int | None, str | None]]],
             part_rows: int, meta: bool = True) -> pl.DataFrame:
    """A finished run folder: parts of up to part_rows rows per source; returns its rows."""
    (folder / "results").mkdir(parents=True)
    names = [f"s{i}.txt" for i in range(len(sources))]
    frames, number = [], 0
    for i, rows in enumerate(sources):
        frame = pl.DataFrame({
            "source": [names[i]] * len(rows), "row": list(range(len(rows))),
            "puzzle": [("p" if c is None else form(c)) for c, _ in rows],
            "status": [("malformed" if c is None else "solved") for c, _ in rows],
            "solution": [None] * len(rows),
            "grade": [g for _, g in rows],
            "canonical": [None if c is None else form(c) for c, _ in rows],
        }, schema={"source": pl.String, "row": pl.Int64, "puzzle": pl.String,
                   "status": pl.String, "solution": pl.String, "grade": pl.String,
                   "canonical": pl.String})
        frames.append(frame)
        for lo in range(0, max(len(rows), 1), part_rows):  # an empty input: one empty part
            t = frame.slice(lo, part_rows).to_arrow()
            if meta:
                info = {"input": i, "first_row": lo, "rows": t.num_rows}
                t = t.replace_schema_metadata({runfolder.PART_META: json.dumps(info)})
            pq.write_table(t, folder / "results" / runfolder.part_name(number))
            number += 1
    (folder / runfolder.MANIFEST).write_text(json.dumps(
        {"definition": {"inputs": [{"path": n} for n in names]}}))
    (folder / runfolder.SUCCESS).write_text("")
    return pl.concat(frames)


rows_st = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 12)),
                             st.sampled_from([None, *GRADES[:3]])), max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources=st.lists(rows_st, min_size=1, max_size=3), part_rows=st.integers(1, 15),
       memory_rows=st.integers(1, 30), meta=st.booleans())
def test_properties_on_synthetic_runs(sources, part_rows, memory_rows, meta):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        df = fake_run(tmp / "run", sources, part_rows, meta)
        names = [f"s{i}.txt" for i in range(len(sources))]
        with_class = df.filter(pl.col("canonical").is_not_null())
        per_source, total = classes.distinct_classes(tmp / "run", memory_rows=memory_rows)
        assert total == with_class["canonical"].n_unique()
        assert per_source == {n: with_class.filter(pl.col("source") == n)["canonical"]
                              .n_unique() for n in names}
        dedup.dedup(tmp / "run", str(tmp / "d.parquet"), memory_rows=memory_rows)
        got = pl.read_parquet(tmp / "d.parquet")
        want = first_occurrences(df, names)
        assert got.select("source", "row", "canonical", "copies").equals(
            want.select("source", "row", "canonical", "copies").cast({"copies": pl.Int64}))
        s = split.split(tmp / "run", "0.5,0.3,0.2", None, 5, str(tmp / "s"),
                           memory_rows=memory_rows)
        parts = [pl.read_parquet(tmp / "s" / f"{n}.parquet") for n in ("train", "val", "test")]
        assert sum(p.height for p in parts) == with_class.height
        sets = [set(p["canonical"]) for p in parts]
        assert sum(len(x) for x in sets) == len(set().union(*sets)) == total
        # Every stratum is cut within one class of its fractions.
        assert (np.abs(s.classes - np.outer([0.5, 0.3, 0.2], s.classes.sum(0))) <= 1).all()
        again = split.split(tmp / "run", "0.5,0.3,0.2", None, 5, str(tmp / "t"))
        assert (again.classes == s.classes).all()
        for n in ("train", "val", "test"):
            assert pl.read_parquet(tmp / "t" / f"{n}.parquet").equals(
                pl.read_parquet(tmp / "s" / f"{n}.parquet"))


def test_hash_collisions_do_not_merge_classes(tmp_path, monkeypatch):
    """With a hash of 2 bits, most different forms share a hash: the words decide."""
    rng = np.random.default_rng(0)
    sources = [[(int(c), GRADES[int(c) % 3]) for c in rng.integers(0, 300, 500)]
               for _ in range(2)]
    df = fake_run(tmp_path / "run", sources, 37)
    real = {}
    for mem in (10_000, 23):
        real[mem] = classes.distinct_classes(tmp_path / "run", memory_rows=mem)
        dedup.dedup(tmp_path / "run", str(tmp_path / f"real{mem}.parquet"), memory_rows=mem)
    weak = classes.form_hash
    for module in (classes, split):  # the class passes and the split's ranks
        monkeypatch.setattr(module, "form_hash",
                            lambda words, seed: weak(words, seed) & np.uint64(3) << np.uint64(62))
    for mem in (10_000, 23):
        assert classes.distinct_classes(tmp_path / "run", memory_rows=mem) == real[mem]
        dedup.dedup(tmp_path / "run", str(tmp_path / "weak.parquet"), memory_rows=mem)
        assert pl.read_parquet(tmp_path / "weak.parquet").equals(
            pl.read_parquet(tmp_path / f"real{mem}.parquet"))
        s = split.split(tmp_path / "run", "0.6,0.4", None, 1, str(tmp_path / f"s{mem}"),
                           memory_rows=mem)
        a = pl.read_parquet(tmp_path / f"s{mem}" / "train.parquet")
        b = pl.read_parquet(tmp_path / f"s{mem}" / "test.parquet")
        assert not set(a["canonical"]) & set(b["canonical"])
        assert a.height + b.height == df.height
        assert (np.abs(s.classes - np.outer([0.6, 0.4], s.classes.sum(0))) <= 1).all()
    assert real[10_000][1] == df["canonical"].n_unique()


def test_pack_forms_keeps_the_order_of_the_forms():
    rng = np.random.default_rng(1)
    digits = rng.integers(0, 10, (2000, 81)).astype(np.uint8)
    digits[::7, 40:] = digits[1::7, 40:][: len(digits[::7])]
    words = classes.pack_forms(digits)
    texts = ["".join(map(str, d)) for d in digits.tolist()]
    by_words = np.lexsort(words.T[::-1])
    assert [texts[i] for i in by_words] == sorted(texts)


@given(st.lists(st.text("123456789.", min_size=81, max_size=81), min_size=1, max_size=20),
       st.data())
def test_forms_read_from_text_are_the_packed_digits(texts, data):
    """A canonical column's text packs as its digits do; any other byte is refused."""
    import pyarrow as pa

    has, words = classes.forms(pa.array(texts), "run")
    digits = np.array([[0 if ch == "." else int(ch) for ch in t] for t in texts], np.uint8)
    assert has.all() and (words == classes.pack_forms(digits)).all()
    i = data.draw(st.integers(0, len(texts) - 1))
    j = data.draw(st.integers(0, 80))
    bad = data.draw(st.sampled_from(["0", "/", ":", "a", " ", "-", "\x00", "\x7f"]))
    spoilt = [*texts[:i], texts[i][:j] + bad + texts[i][j + 1:], *texts[i + 1:]]
    with pytest.raises(InputError, match="other than . and 1-9"):
        classes.forms(pa.array(spoilt), "run")


@given(st.lists(st.lists(st.integers(0, 2**64 - 1), min_size=5, max_size=5), max_size=30),
       st.integers(0, 2**32))
def test_form_hash_is_splitmix_over_the_words(rows, seed):
    """The compiled hash is this, written out on Python ints."""
    m = (1 << 64) - 1

    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    golden = 0x9E3779B97F4A7C15
    want = []
    for words in rows:
        h = mix((seed * golden + 1) & m)
        for w in words:
            h = mix(h ^ w)
        want.append(mix((h + golden) & m))
    got = classes.form_hash(np.array(rows, np.uint64).reshape(-1, 5), seed)
    assert got.dtype == np.uint64 and got.tolist() == want


FORM_HASH_7 = 0x58C4EC2279CBEC6D  # computed once and pinned


def test_form_hash_is_fixed():
    """Split assignments rest on this hash: it must not change between versions."""
    words = classes.pack_forms(np.arange(81, dtype=np.uint8)[None, :] % 10)
    assert classes.form_hash(words, 1)[0] != classes.form_hash(words, 0)[0]
    assert int(classes.form_hash(words, 7)[0]) == FORM_HASH_7
