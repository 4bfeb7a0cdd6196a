"""`pipeline overlap A B`: the rows of B whose equivalence class occurs in A (a leak).

A side is a finished run made with --canonical (its `canonical` column), a Parquet table
with source, row, puzzle and canonical columns (a `split` or `dedup` output, its source and
row kept), or puzzles in any input shape `run` reads, canonicalised here. `pipeline
overlap DIR` takes a `split` folder and checks every pair of its splits (each later split
against each earlier one).

Memory stays flat by the data-set tools' hash spill (io/classes.py), at any size:

* pass 0 streams each side once into a file of records in its input order (packed form,
  the row's key = source index << 40 | row, packed puzzle); rows without a form (malformed)
  are counted and left out;
* pass 1 spreads both sides' records over the same K buckets by the forms' hash, K = the
  larger side's rows / memory_rows;
* pass 2 takes one bucket at a time: A's classes with their first occurrence, and B's
  records in chunks of memory_rows looked up among them; each hit (B's position in its
  record file, A's key) goes to a spill partitioned by blocks of memory_rows positions;
* pass 3 reads B's record file block by block with that block's hits, and writes the rows
  found in B's input order.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError, UsageError
from pipeline.io.classes import (
    FATE,
    MEMORY_ROWS,
    RECORD,
    Buckets,
    Spill,
    bucket_of,
    form_hash,
    forms,
    pack_forms,
    per_class,
    sort_order,
    spill_folder,
    unpack_forms,
)
from pipeline.io.outputs import TableWriter, check_output, format_of, scratch_near, write_one
from pipeline.io.runfolder import ROW_BITS, Run, open_parquet, open_run, part_batches, run_of
from pipeline.io.storage import as_location
from pipeline.io.strings import buffers
from pipeline.sudoku import canonical, grid

OVERLAP_COLUMNS = ("source", "row", "puzzle", "match_source", "match_row")
SPLIT_COLUMNS = ("split", "match_split")  # `overlap DIR`: which split each row is of
SEED = 0

# One row of a side in its input order: packed form, key, packed puzzle.
SIDE = np.dtype([("w", "<u8", (5,)), ("key", "<i8"), ("p", "<u8", (5,))])
# One record of B in a bucket: packed form, position in B's record file.
PROBE = np.dtype([("w", "<u8", (5,)), ("pos", "<i8")])
_ROW_MASK = (1 << ROW_BITS) - 1


@dataclass
class Side:
    """One side streamed into records (pass 0)."""

    shown: str
    sources: list[str]
    records: Spill  # one partition: the rows with a form, in input order
    rows: int = 0  # every row read
    formless: int = 0  # rows without a form (left out)

    @property
    def kept(self) -> int:
        return int(self.records.sizes[0])


@dataclass
class OverlapSummary:
    a: str
    b: str
    output: str | None
    rows_a: int
    rows_b: int
    found: int  # rows of B whose class occurs in A
    classes: int  # A's classes they fall in
    formless: int
    seconds: float = 0.0

    def line(self) -> str:
        where = f", written to {self.output}" if self.output else ""
        return (f"overlap {self.a} {self.b}: {self.found:,} rows of B ({self.classes:,} "
                f"classes) are equivalent to a puzzle of A{where} (A {self.rows_a:,} rows, B "
                f"{self.rows_b:,}; {self.formless:,} malformed rows left out) in "
                f"{self.seconds:.1f} s")  # fmt: skip


def _schema(with_splits: bool = False):
    import pyarrow as pa

    fields = [pa.field("source", pa.string()), pa.field("row", pa.int64()),
              pa.field("puzzle", pa.string()), pa.field("match_source", pa.string()),
              pa.field("match_row", pa.int64())]  # fmt: skip
    if with_splits:
        fields += [pa.field("split", pa.string()), pa.field("match_split", pa.string())]
    return pa.schema(fields)


_TABLE = {"source", "row", "puzzle", "canonical"}  # a run's rows: read as they are


def _is_table(loc) -> bool:
    """A Parquet file of a run's rows with their canonical forms (results, dedup's, a
    split's), read as it is; any other input is read (and canonicalised) as `run` reads
    it, which also says what is wrong with a file that cannot be read."""
    from pipeline.io import parquet

    try:
        if loc.read_at(0, 4) != parquet.MAGIC:
            return False
        with open_parquet(loc) as pf:
            return _TABLE <= set(pf.schema_arrow.names)
    except (OSError, ValueError):  # (pyarrow's ArrowInvalid is a ValueError)
        return False


Batches = Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def _run_batches(run: Run) -> Batches:
    """(keys, rows with a form, their packed forms and puzzles) of a run's batches."""
    for part in run.parts:
        for batch in part_batches(part, ["source", "row", "puzzle", "canonical"]):
            if not batch.num_rows:
                continue
            src = run.source_index(batch.column("source"))
            row = batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
            if row.min() < 0 or row.max() > _ROW_MASK:
                raise InputError(f"{run.shown}: a row number outside 0..2^{ROW_BITS}")
            has, words = forms(batch.column("canonical"), run.shown)
            digits, _ = grid.encode_buffers(*buffers(batch.column("puzzle")))
            yield src << ROW_BITS | row, has, words, digits[has]


def _input_batches(given: str) -> tuple[str, Batches]:
    """An input's source name and its batches, canonicalised here (as `run --canonical`)."""
    from pipeline.io import inputs, schema

    stdin = sys.stdin.buffer if given == "-" else None
    inp = inputs.open_input(given, 0, None, None, schema.OURS, stdin=stdin)

    def gen():
        for first_row, rows in inputs.read_whole(inp, stdin):
            column = rows.columns["puzzle"]
            digits, bad = grid.encode_buffers(*buffers(column))
            has = np.ones(rows.n, bool)
            has[[i for i in {**bad, **rows.reasons} if i < rows.n]] = False
            kept = np.ascontiguousarray(digits[has])
            words = pack_forms(canonical.minlex(kept)[0])
            keys = first_row + np.arange(rows.n, dtype=np.int64)  # source 0
            yield keys, has, words, kept

    return inp.source, gen()


def read_side(given: str, folder: str | None, name: str, memory_rows: int) -> Side:
    """Pass 0: a side's rows with a form into records, in its input order."""
    loc = None if given == "-" else as_location(given)
    if loc is not None and loc.is_dir():
        run = open_run(given)
        sources, shown, batches = run.sources, run.shown, _run_batches(run)
    elif loc is not None and _is_table(loc):
        run = run_of([given])
        sources, shown, batches = run.sources, loc.shown, _run_batches(run)
    else:
        source, batches = _input_batches(given)
        sources, shown = [source], loc.shown if loc is not None else "-"
    side = Side(shown, sources, Spill(folder, name, 1, SIDE, memory_rows))
    for keys, has, words, digits in batches:
        rec = np.empty(len(words), SIDE)
        rec["w"], rec["key"] = words, keys[has]
        rec["p"] = pack_forms(np.minimum(digits, 9))  # a form, so a puzzle: no other byte
        side.records.add(np.zeros(len(rec), np.int64), rec)
        side.rows += len(keys)
        side.formless += int((~has).sum())
    side.records.finish()
    side.sources = list(sources)  # a table's sources are known once it is read
    return side


def _bucket(spill: Spill, k: int, memory_rows: int, folder: str | None, name: str,
            probe: bool) -> Spill:  # fmt: skip
    """Pass 1: a side's records into k buckets by the forms' hash."""
    out = Spill(folder if k > 1 else None, name, k, PROBE if probe else RECORD, memory_rows)
    at = 0
    for chunk in spill.read(0, memory_rows):
        rec = np.empty(len(chunk), out.dtype)
        rec["w"] = chunk["w"]
        u = form_hash(chunk["w"], SEED)
        if probe:
            rec["pos"] = at + np.arange(len(chunk))
        else:
            rec["u"], rec["key"], rec["n"], rec["s"] = u, chunk["key"], 1, 0
        out.add(bucket_of(u, k), rec)
        at += len(chunk)
    out.finish()
    return out


def lookup(cls: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each packed form, whether a class of `cls` (RECORD, one per class) has it, and
    that class's first key (-1 where none)."""
    both = np.concatenate([cls["w"], words])
    u = form_hash(both, SEED)
    flag = np.concatenate([np.zeros(len(cls), np.int8), np.ones(len(words), np.int8)])
    p = sort_order(u, both, flag)  # a class sorts before the rows of its form
    is_cls = p < len(cls)
    last = np.maximum.accumulate(np.where(is_cls, np.arange(len(p)), -1))
    probe = np.flatnonzero(~is_cls)
    j = last[probe]
    hit = j >= 0
    hit[hit] = (both[p[j[hit]]] == both[p[probe[hit]]]).all(axis=1)
    out_hit = np.zeros(len(words), bool)
    out_key = np.full(len(words), -1, np.int64)
    rows = p[probe] - len(cls)
    out_hit[rows] = hit
    out_key[rows[hit]] = cls["key"][p[j[hit]]]
    return out_hit, out_key


def _find(a: Side, b: Side, folder: str | None, memory_rows: int, tag: str
          ) -> tuple[Spill, int, int]:  # fmt: skip
    """Passes 1-2: B's hits (position, A's key) by blocks of positions; hits, A classes."""
    k = max(1, math.ceil(max(a.kept, b.kept) / memory_rows))
    a_buckets = Buckets(_bucket(a.records, k, memory_rows, folder, f"{tag}a", False), k, SEED,
                        memory_rows, np.zeros(0, np.int64), np.zeros(0, np.int64))
    b_buckets = _bucket(b.records, k, memory_rows, folder, f"{tag}b", True)
    blocks = max(1, math.ceil(b.kept / memory_rows))
    hits = Spill(folder if blocks > 1 else None, f"{tag}hits", blocks, FATE, memory_rows)
    found = classes = 0
    for bucket in range(k):
        cls = per_class(*a_buckets.classes(bucket))
        touched = np.zeros(len(cls), bool)
        for chunk in b_buckets.read(bucket, memory_rows):
            hit, key = lookup(cls, chunk["w"])
            if not hit.any():
                continue
            fate = np.empty(int(hit.sum()), FATE)
            fate["key"], fate["v"] = chunk["pos"][hit], key[hit]
            hits.add(fate["key"] // memory_rows, fate)
            touched[_index(cls, key[hit])] = True
            found += len(fate)
        classes += int(touched.sum())
    hits.finish()
    return hits, found, classes


def _index(cls: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions in `cls` of classes by their (unique) first keys."""
    order = np.argsort(cls["key"], kind="stable")
    return order[np.searchsorted(cls["key"][order], keys)]


WRITE_ROWS = 1 << 16  # rows a table written at once holds (Arrow arrays, no Python strings)


def _texts(values: np.ndarray, names: list[str]):
    """An Arrow string array of names[values] (a few distinct names, many rows)."""
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(values, pa.int32()),
                                          pa.array(names, pa.string())).cast(pa.string())  # fmt: skip


def _puzzles(words: np.ndarray):
    """An Arrow string array of the packed puzzles, '.' for blanks."""
    import pyarrow as pa

    data = grid.to_ascii(unpack_forms(words), ".").tobytes()
    offsets = np.arange(0, 81 * (len(words) + 1), 81, dtype=np.int32)
    return pa.StringArray.from_buffers(len(words), pa.py_buffer(offsets), pa.py_buffer(data))


def _write_hits(w: TableWriter, a: Side, b: Side, hits: Spill, memory_rows: int, schema,
                splits: tuple[str, str] | None = None) -> None:  # fmt: skip
    """Pass 3: B's rows that were found, in B's input order."""
    import pyarrow as pa

    for block, chunk in enumerate(b.records.read(0, memory_rows)):
        fates = hits.read_all(block) if block < hits.k else np.zeros(0, FATE)
        fates = fates[np.argsort(fates["key"], kind="stable")]
        for at in range(0, len(fates), WRITE_ROWS):
            f = fates[at : at + WRITE_ROWS]
            rec = chunk[f["key"] - block * memory_rows]
            cols = {
                "source": _texts(rec["key"] >> ROW_BITS, b.sources),
                "row": pa.array(rec["key"] & _ROW_MASK),
                "puzzle": _puzzles(rec["p"]),
                "match_source": _texts(f["v"] >> ROW_BITS, a.sources),
                "match_row": pa.array(f["v"] & _ROW_MASK),
            }
            if splits:
                cols["match_split"] = pa.repeat(pa.scalar(splits[0], pa.string()), len(rec))
                cols["split"] = pa.repeat(pa.scalar(splits[1], pa.string()), len(rec))
            w.write(pa.table(cols).select(schema.names).cast(schema))


def _pair(first: str, second: str, folder: str | None, memory_rows: int, tag: str = ""):
    """Passes 0-2 for one pair; `tag` keeps its spill files apart from another pair's."""
    a = read_side(first, folder, f"{tag}a-rows", memory_rows)
    b = read_side(second, folder, f"{tag}b-rows", memory_rows)
    hits, found, classes = _find(a, b, folder, memory_rows, tag)
    return a, b, hits, found, classes


def overlap(first: str, second: str, output: str | None = None, *,
            memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> OverlapSummary:
    """The rows of `second` whose class occurs in `first`, written to `output` if given."""
    started = time.perf_counter()
    out = check_output(output, reads=(first, second)) if output else None
    fmt = format_of(output) if output else None
    if first == "-" and second == "-":
        raise UsageError("overlap: standard input can be only one of the two sides")
    scratch = spill_dir or (scratch_near(out) if out else None)
    with spill_folder(scratch, True) as folder:
        a, b, hits, found, classes = _pair(first, second, folder, memory_rows)
        if out is not None:
            schema = _schema()
            write_one(out, fmt, schema, lambda w: _write_hits(w, a, b, hits, memory_rows,
                                                               schema))  # fmt: skip
    return OverlapSummary(a.shown, b.shown, out.shown if out else None, a.rows, b.rows, found,
                          classes, a.formless + b.formless, time.perf_counter() - started)


def split_files(folder: str) -> list[tuple[str, str]]:
    """A split folder's (name, file) pairs in its splits' order (from split.json)."""
    loc = as_location(folder)
    info_loc = loc.child("split.json")
    if not info_loc.exists():
        raise InputError(f"{loc.shown}: not a split folder (no split.json); give two data sets")
    try:
        info = json.loads(info_loc.read_bytes())
        files = info["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"{info_loc.shown}: not a split.json written by `pipeline split`") from None
    return [(name, loc.child(f).url) for name, f in files.items()]


def overlap_splits(folder: str, output: str | None = None, *, memory_rows: int = MEMORY_ROWS,
                   spill_dir: str | None = None) -> list[OverlapSummary]:  # fmt: skip
    """Every pair of a split folder's splits: the rows of the later one whose class occurs
    in the earlier one, all written to `output` (with the two splits' names) if given."""
    files = split_files(folder)
    out = check_output(output, reads=tuple(f for _, f in files)) if output else None
    scratch = spill_dir or (scratch_near(out) if out else None)
    summaries: list[OverlapSummary] = []
    pairs = [(i, j) for j in range(len(files)) for i in range(j)]
    with spill_folder(scratch, True) as tmp:
        found = []
        for i, j in pairs:
            started = time.perf_counter()
            a, b, hits, n, classes = _pair(files[i][1], files[j][1], tmp, memory_rows, f"{i}-{j}-")
            shown_a, shown_b = files[i][0], files[j][0]
            summaries.append(OverlapSummary(shown_a, shown_b, None, a.rows, b.rows, n,
                                            classes, a.formless + b.formless,
                                            time.perf_counter() - started))  # fmt: skip
            found.append((a, b, hits, (files[i][0], files[j][0])))
        if out is not None:
            schema = _schema(with_splits=True)

            def fill(w: TableWriter) -> None:
                for a, b, hits, names in found:
                    _write_hits(w, a, b, hits, memory_rows, schema, names)

            write_one(out, format_of(output), schema, fill)
            for s in summaries:
                s.output = out.shown
    return summaries


def main(first: str, second: str | None, output: str | None, quiet: bool = False,
         memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> int:
    """`pipeline overlap A B` / `pipeline overlap DIR`: write the rows found, print a count
    on stderr; 1 when any row of B (of a later split) is equivalent to one of A, else 0."""
    if second is None:
        summaries = overlap_splits(first, output, memory_rows=memory_rows, spill_dir=spill_dir)
    else:
        summaries = [overlap(first, second, output, memory_rows=memory_rows,
                             spill_dir=spill_dir)]  # fmt: skip
    if not quiet:
        for s in summaries:
            print(s.line(), file=sys.stderr)
    return 1 if any(s.found for s in summaries) else 0
