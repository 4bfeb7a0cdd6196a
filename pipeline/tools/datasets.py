"""Data-set tools on a finished run: class counts, one row per class, class-disjoint splits,
random equivalents.

A *class* is an equivalence class of puzzles: the rows sharing a `canonical` (minlex) form.
Rows without one (malformed rows, `canonical` null) are in no class; every tool leaves them
out and says how many.

Memory stays flat by a hash spill, never by holding a run:

* A canonical form packs into five uint64 words (19 digits each, a blank as 0), whose order
  is the forms' order. A 64-bit hash u of (seed, words) picks one of K buckets by its top
  bits (u * K / 2^64), so bucket b holds exactly the classes with u in [b/K, (b+1)/K): the
  buckets, in order, list the classes in (u, words) order.
* Pass 1 streams the parts once and appends a 60-byte record per row with a form (words,
  key = source index << 40 | row, stratum code) to K bucket files, K = rows / memory_rows,
  through one buffer of memory_rows records. A run of at most memory_rows rows is one bucket
  and never touches the disk (the same code path).
* Pass 2 takes one bucket at a time, in chunks of memory_rows records merged into the
  bucket's class table (so a class with millions of copies does not break the bound):
  sorted by (u, words, key), a class's rows are adjacent and its first occurrence leads.
  Sorting is by (u, key) alone unless two different forms share a u; then by the words
  too, so counts are exact whatever the hash does.
* Pass 3 (dedup, split) streams the parts again in input order and reads each row's fate
  from a second spill partitioned by groups of consecutive parts: (key, copies) of the
  first occurrences, or (key, split) of every row. Output rows come in input order.

Split: within each stratum (the class's first occurrence's grade by default; null is a
stratum of its own) the classes are ranked by (u, words), u hashed from the seed -- a seeded
random order that does not depend on K or on the parts -- and cut at round(n_s * cumulative
fraction): each split holds within one class of its fraction of every stratum, so within S
classes of its fraction of the whole (S = the strata present, at most 6 for grades).
Deterministic for a seed; not stable when the run grows (ranks shift), which a pure hash
threshold would be, at the price of binomial noise in the fractions.

Augment: the transformations of row r of source i come from a numpy Generator seeded by
(seed, i, r // B) drawing canonical.random_transforms for every row slot of that block of B
rows (B = block_rows(K), about 8192 / K), so they depend on (seed, K, source, row) only,
never on the parts or batch sizes. Each pair is checked by check.is_solution; a failure is
a bug and raises.

Peak memory is about the import baseline (150 MB) plus 250-600 bytes per memory_rows
record, whatever the run's size (benchmarks/bench_datasets.py). Every output is written whole or absent (pipeline.io.storage); run folders and outputs may be
local paths or fsspec URLs. Spill files go to a temporary folder under `spill_dir` (default:
the system's, TMPDIR honoured) and are removed at the end.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pipeline import compiled
from pipeline.errors import InputError, RunFailed, UsageError
from pipeline.io import runfolder
from pipeline.io.schema import write_options
from pipeline.io.storage import Location, as_location, fsync_dir, why
from pipeline.sudoku import canonical, check, grid
from pipeline.sudoku.grade import GRADES

__all__ = [
    "BLOCK_DRAWS",
    "MEMORY_ROWS",
    "AugmentSummary",
    "DedupSummary",
    "SplitSummary",
    "augment",
    "augment_main",
    "block_rows",
    "block_transforms",
    "dedup",
    "dedup_main",
    "distinct_classes",
    "split",
    "split_main",
]

MEMORY_ROWS = 1 << 19  # records held at once, per pass (peak about 250-450 B a record)
BLOCK_DRAWS = 8192  # augment: transformations per seeded Generator (see block_rows)
MAX_COPIES = 1000
MAX_STRATA = 1000
ROW_BITS = 40  # key = source index << ROW_BITS | row
BATCH_ROWS = 65_536
OUTPUT_FORMATS = {"parquet": ".parquet", "csv": ".csv", "csv.gz": ".csv.gz"}
DEDUP_COLUMNS = ("source", "row", "puzzle", "canonical", "solution", "status", "copies")
DEFAULT_NAMES = {1: ("all",), 2: ("train", "test"), 3: ("train", "val", "test")}

# One spill record: the packed form, the row's key, a count (1 for a row), a stratum code.
RECORD = np.dtype([("w", "<u8", (5,)), ("key", "<i8"), ("n", "<i8"), ("s", "<i4")])
# What pass 3 reads: a row's key and a value (copies, or the split).
FATE = np.dtype([("key", "<i8"), ("v", "<i8")])

_POW10 = np.array([10**k for k in range(18, -1, -1)], dtype=np.uint64)
_MASK64 = (1 << 64) - 1
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_GOLDEN = 0x9E3779B97F4A7C15


# ---------------------------------------------------------------------------------------
# Forms, hashes and buckets


def _mix_int(z: int) -> int:
    """splitmix64's finalizer on a Python int."""
    z &= _MASK64
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer on a uint64 array (wrapping arithmetic)."""
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(_M1)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def form_hash(words: np.ndarray, seed: int) -> np.ndarray:
    """(N,) uint64 hash of (seed, packed form): the same on every machine and version."""
    h = np.full(len(words), _mix_int(seed * _GOLDEN + 1), np.uint64)
    for k in range(words.shape[1]):
        h = _mix(h ^ words[:, k])
    return _mix(h + np.uint64(_GOLDEN))


def pack_forms(digits: np.ndarray) -> np.ndarray:
    """(N,81) digits 0..9 -> (N,5) uint64 words of 19 digits (the last of 5), order kept."""
    d = np.asarray(digits).astype(np.uint64)
    words = np.empty((len(d), 5), np.uint64)
    for k in range(5):
        block = d[:, 19 * k: 19 * k + 19]
        words[:, k] = block @ _POW10[19 - block.shape[1]:]
    return words


def _string_buffers(arr) -> tuple[np.ndarray, np.ndarray]:
    """A string array as (offsets, bytes) numpy arrays; nulls are empty."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = arr.fill_null("")
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


@compiled.kernel("(readonly u1[::1], u8[:, ::1]) -> b1", nogil=True)
def _pack_text(chars, words):
    """(M*81,) bytes of M forms ('.' or 1-9) -> (M,5) words; False on another byte."""
    for i in range(words.shape[0]):
        base = 81 * i
        for k in range(5):
            w = np.uint64(0)
            for j in range(19 * k, min(19 * k + 19, 81)):
                c = chars[base + j]
                if c == 46:
                    d = 0
                elif 49 <= c <= 57:
                    d = c - 48
                else:
                    return False
                w = w * np.uint64(10) + np.uint64(d)
            words[i, k] = w
    return True


def _forms(arr, shown: str) -> tuple[np.ndarray, np.ndarray]:
    """A canonical column -> ((N,) mask of rows with a form, (M,5) packed words)."""
    offsets, data = _string_buffers(arr)
    lengths = np.diff(offsets)
    has = lengths > 0
    if not np.all(lengths[has] == 81):
        raise InputError(f"{shown}: a canonical form that is not 81 characters long")
    # Nulls are empty, so the forms lie back to back in the data buffer.
    words = np.empty((int(has.sum()), 5), np.uint64)
    if not _pack_text(data[offsets[0]: offsets[-1]], words):
        raise InputError(f"{shown}: a canonical form with a character other than . and 1-9")
    return has, words


def _bucket_of(u: np.ndarray, k: int) -> np.ndarray:
    """Bucket 0..k-1 of each hash, monotone in the hash (its top 32 bits times k)."""
    return ((u >> np.uint64(32)) * np.uint64(k)) >> np.uint64(32)


def _order(u: np.ndarray, words: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The permutation sorting by (u, words, minor); by (u, minor) when no u is shared by
    two different forms (the words then never decide)."""
    if len(minor) < 2 or (minor[1:] >= minor[:-1]).all():  # rows come in key order
        p = np.argsort(u, kind="stable")
    else:
        p = np.lexsort((minor, u))
    tie = np.flatnonzero(u[p[1:]] == u[p[:-1]])
    if len(tie) and (words[p[tie]] != words[p[tie + 1]]).any():
        p = np.lexsort((minor, *(words[:, k] for k in range(words.shape[1] - 1, -1, -1)), u))
    return p


def _aggregate(rec: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records -> one per (class, source), in (u, words, key) order, each with its first
    key, that key's stratum and the summed count; also their u and a mask of class starts."""
    if len(rec) == 0:
        return rec, np.zeros(0, np.uint64), np.zeros(0, bool)
    u = form_hash(rec["w"], seed)
    p = _order(u, rec["w"], rec["key"])
    rec, u = rec[p], u[p]
    w = rec["w"]
    new_class = np.ones(len(rec), bool)
    new_class[1:] = (u[1:] != u[:-1]) | (w[1:] != w[:-1]).any(axis=1)
    src = rec["key"] >> ROW_BITS
    new_entry = new_class.copy()
    new_entry[1:] |= src[1:] != src[:-1]
    starts = np.flatnonzero(new_entry)
    out = rec[starts]
    out["n"] = np.add.reduceat(rec["n"], starts)
    return out, u[starts], new_class[starts]


def _classes(entries: np.ndarray, starts_mask: np.ndarray) -> np.ndarray:
    """(class, source) entries -> one record per class: its first key and stratum, copies."""
    starts = np.flatnonzero(starts_mask)
    out = entries[starts]
    if len(starts):
        out["n"] = np.add.reduceat(entries["n"], starts)
    return out


# ---------------------------------------------------------------------------------------
# Spill files


class _Spill:
    """k partitions of fixed-size records: append-only files written through one buffer of
    `buffer_rows` records, or, with no folder, kept in memory (a run that fits)."""

    def __init__(self, folder: str | None, name: str, k: int, dtype: np.dtype,
                 buffer_rows: int):
        self.k, self.dtype, self.buffer_rows = k, dtype, max(1, buffer_rows)
        self.paths = ([os.path.join(folder, f"{name}-{b:05d}.bin") for b in range(k)]
                      if folder else None)
        self.sizes = np.zeros(k, np.int64)
        self._pieces: dict[int, list[np.ndarray]] = {}
        self._pending = 0

    def add(self, parts: np.ndarray, records: np.ndarray) -> None:
        if not len(records):
            return
        if self.k == 1:
            self._pieces.setdefault(0, []).append(records)
        else:
            order = np.argsort(parts, kind="stable")
            records = records[order]
            bounds = np.searchsorted(np.asarray(parts)[order], np.arange(self.k + 1))
            for b in np.flatnonzero(np.diff(bounds)).tolist():
                self._pieces.setdefault(b, []).append(records[bounds[b]: bounds[b + 1]])
        self.sizes += np.bincount(parts, minlength=self.k)
        self._pending += len(records)
        if self.paths is not None and self._pending >= self.buffer_rows:
            self._flush()

    def _flush(self) -> None:
        for b, pieces in sorted(self._pieces.items()):
            with open(self.paths[b], "ab") as f:
                for piece in pieces:
                    piece.tofile(f)
        self._pieces, self._pending = {}, 0

    def finish(self) -> None:
        """Everything added is readable now."""
        if self.paths is not None:
            self._flush()

    def read(self, b: int, chunk_rows: int | None = None) -> Iterator[np.ndarray]:
        """Partition b's records, in chunks of at most chunk_rows (all at once for None)."""
        if self.paths is None:
            pieces = self._pieces.get(b, [])
            yield (np.concatenate(pieces) if len(pieces) > 1 else pieces[0] if pieces
                   else np.zeros(0, self.dtype))
            return
        n = int(self.sizes[b])
        step = chunk_rows or max(n, 1)
        for start in range(0, n, step):
            yield np.fromfile(self.paths[b], self.dtype, count=min(step, n - start),
                              offset=start * self.dtype.itemsize)

    def read_all(self, b: int) -> np.ndarray:
        chunks = list(self.read(b))
        if not chunks:
            return np.zeros(0, self.dtype)
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


@contextlib.contextmanager
def _spill_folder(spill_dir: str | None, needed: bool):
    """A temporary folder for spill files (None when the run fits in memory), removed after."""
    if not needed:
        yield None
        return
    path = tempfile.mkdtemp(prefix="pipeline-datasets-", dir=spill_dir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# The run folder


@dataclass
class _Part:
    loc: Location
    rows: int
    order: tuple[int, int]  # (input, first row): input order of the parts
    first_key: int = -1  # smallest key seen in pass 1


@dataclass
class _Run:
    shown: str
    parts: list[_Part]
    sources: list[str]
    columns: list[str]
    manifest: dict = field(default_factory=dict)
    _index: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    def source_index(self, arr) -> np.ndarray:
        """(N,) int64 index of each row's source in the run's input order (new ones last)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        if not self._index:
            self._index = {s: i for i, s in enumerate(self.sources)}
        lut = []
        for name in arr.dictionary.to_pylist():  # a few distinct sources, not rows
            if name not in self._index:
                self._index[name] = len(self.sources)
                self.sources.append(name)
            lut.append(self._index[name])
        if len(self.sources) >= 1 << (63 - ROW_BITS):
            raise InputError(f"{self.shown}: too many sources")
        idx = arr.indices.to_numpy(zero_copy_only=False)
        return np.asarray(lut, np.int64)[idx] if len(lut) else np.zeros(len(arr), np.int64)


@contextlib.contextmanager
def _open_parquet(loc: Location):
    import pyarrow.parquet as pq

    if loc.local:
        pf = pq.ParquetFile(loc.path)
        try:
            yield pf
        finally:
            pf.close()
    else:
        with loc.fs.open(loc.path, "rb") as f:
            yield pq.ParquetFile(f)


def _batches(part: _Part, columns: list[str]) -> Iterator:
    """A part's record batches of the given columns."""
    with _open_parquet(part.loc) as pf:
        yield from pf.iter_batches(batch_size=BATCH_ROWS, columns=columns)


def _load_parts(shown: str, locs: list[Location]) -> tuple[list[_Part], list[str]]:
    """Footers of the parts: rows, range (for input order), columns."""
    parts, columns = [], None
    for loc in locs:
        try:
            with _open_parquet(loc) as pf:
                meta = pf.metadata
                names = pf.schema_arrow.names
                info = json.loads((meta.metadata or {}).get(runfolder.PART_META, b"{}"))
                first = None
                if "input" not in info and meta.num_rows:
                    t = pf.read_row_group(0, columns=["row"])
                    first = int(t.column("row")[0].as_py())
        except (OSError, ValueError) as exc:
            raise InputError(f"{shown}: cannot read {loc.shown} ({exc})") from None
        if columns is None:
            columns = names
        order = ((int(info["input"]), int(info["first_row"])) if "input" in info
                 else (1 << 30, first or 0))
        parts.append(_Part(loc, meta.num_rows, order))
    parts.sort(key=lambda p: p.order)
    return parts, columns or []


def _open_run(run_dir, need_canonical: bool = True, finished: bool = True) -> _Run:
    """A run folder's parts, sources and columns; InputError when it is not a usable run."""
    loc = as_location(run_dir)
    shown = loc.shown
    runfolder.existing_run(loc, finished)
    manifest: dict = {}
    with contextlib.suppress(OSError, ValueError):
        manifest = json.loads(loc.child(runfolder.MANIFEST).read_bytes())
    results = loc.child(runfolder.RESULTS)
    locs = [results.child(n) for n in results.listdir() if runfolder.is_part(n)]
    if not locs:
        raise InputError(f"{shown}: no result parts in {runfolder.RESULTS}/")
    parts, columns = _load_parts(shown, locs)
    inputs = (manifest.get("definition") or {}).get("inputs") or []
    sources = [str(i.get("path")) for i in inputs if isinstance(i, dict)]
    run = _Run(shown, parts, sources, columns, manifest)
    if need_canonical and "canonical" not in columns:
        raise InputError(f"{shown}: the run has no canonical column (it was made without "
                         "--canonical)")
    return run


def _run_of(run) -> _Run:
    """A run folder (not necessarily finished) or a list of part paths/URLs."""
    if isinstance(run, (str, os.PathLike, Location)):
        return _open_run(run, need_canonical=True, finished=False)
    locs = [as_location(p) for p in run]
    shown = locs[0].shown if locs else "(no parts)"
    parts, columns = _load_parts(shown, locs)
    out = _Run(shown, parts, [], columns)
    if parts and "canonical" not in columns:
        raise InputError(f"{shown}: no canonical column (a run without --canonical)")
    return out


# ---------------------------------------------------------------------------------------
# Strata


class _Strata:
    """Codes for the values of the column to stratify by: 0 is null, then values as met
    (grades in their own order first), so the codes are the same for the same run."""

    def __init__(self, column: str | None):
        self.column = column
        self.labels: list[str | None] = [None] + (list(GRADES) if column == "grade" else [])
        self._codes = {v: i for i, v in enumerate(self.labels)}

    def codes(self, arr) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.column is None:
            return np.zeros(len(arr), np.int32)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = pc.dictionary_encode(arr.cast(pa.string()))
        lut = []
        for value in arr.dictionary.to_pylist():
            if value not in self._codes:
                if len(self.labels) >= MAX_STRATA:
                    raise UsageError(f"--stratify {self.column}: more than {MAX_STRATA} "
                                     "distinct values")
                self._codes[value] = len(self.labels)
                self.labels.append(value)
            lut.append(self._codes[value])
        idx = arr.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        out = np.zeros(len(arr), np.int32)
        if lut:
            out[idx >= 0] = np.asarray(lut, np.int32)[idx[idx >= 0]]
        return out

    def label(self, code: int) -> str:
        value = self.labels[code]
        return "none" if value is None else str(value)


# ---------------------------------------------------------------------------------------
# Pass 1 and 2


@dataclass
class _Buckets:
    spill: _Spill
    k: int
    seed: int
    memory_rows: int
    rows: np.ndarray  # rows per source
    formless: np.ndarray  # rows without a form per source

    def classes(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Bucket b's (class, source) entries in (u, words) order and the class-start mask."""
        entries = np.zeros(0, RECORD)
        starts = np.zeros(0, bool)
        for i, chunk in enumerate(self.spill.read(b, self.memory_rows)):
            merged = chunk if i == 0 else np.concatenate([entries, chunk])
            entries, _, starts = _aggregate(merged, self.seed)
        return entries, starts


def _grow(a: np.ndarray, n: int) -> np.ndarray:
    return a if len(a) >= n else np.concatenate([a, np.zeros(n - len(a), a.dtype)])


def _pass1(run: _Run, folder: str | None, seed: int, memory_rows: int,
           strata: _Strata | None = None) -> _Buckets:
    """Stream the parts once into hash buckets of records."""
    k = max(1, math.ceil(run.rows / memory_rows))
    spill = _Spill(folder if k > 1 else None, "bucket", k, RECORD, memory_rows)
    rows = np.zeros(len(run.sources), np.int64)
    formless = np.zeros(len(run.sources), np.int64)
    by = strata.column if strata is not None else None
    columns = ["source", "row", "canonical"] + ([by] if by and by not in ("source", "row")
                                                else [])
    for part in run.parts:
        for batch in _batches(part, columns):
            if not batch.num_rows:
                continue
            src = run.source_index(batch.column("source"))
            row = batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
            if row.min() < 0 or row.max() >= 1 << ROW_BITS:
                raise InputError(f"{run.shown}: a row number outside 0..2^{ROW_BITS}")
            key = src << ROW_BITS | row
            part.first_key = int(key.min()) if part.first_key < 0 else min(part.first_key,
                                                                            int(key.min()))
            has, words = _forms(batch.column("canonical"), run.shown)
            n_src = len(run.sources)
            rows = _grow(rows, n_src)
            formless = _grow(formless, n_src)
            rows += np.bincount(src, minlength=n_src)
            formless += np.bincount(src[~has], minlength=n_src)
            rec = np.empty(len(words), RECORD)
            rec["w"] = words
            rec["key"] = key[has]
            rec["n"] = 1
            rec["s"] = strata.codes(batch.column(by))[has] if by else 0
            spill.add(_bucket_of(form_hash(words, seed), k), rec)
    spill.finish()
    return _Buckets(spill, k, seed, memory_rows, rows, formless)


@dataclass
class _Groups:
    """Consecutive parts in input order, about memory_rows rows a group (pass 3's unit)."""

    parts: list[list[_Part]]
    first_keys: np.ndarray

    def of(self, keys: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.first_keys, keys, side="right") - 1


def _groups(run: _Run, memory_rows: int) -> _Groups:
    parts = sorted((p for p in run.parts if p.first_key >= 0), key=lambda p: p.first_key)
    groups: list[list[_Part]] = []
    size = 0
    for p in parts:
        if not groups or size + p.rows > memory_rows:
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += p.rows
    first = np.array([g[0].first_key for g in groups], np.int64)
    return _Groups(groups, first)


def _fates(g: int, spill: _Spill) -> tuple[np.ndarray, np.ndarray]:
    """Group g's (keys, values), sorted by key."""
    fates = spill.read_all(g)
    order = np.argsort(fates["key"], kind="stable")
    return fates["key"][order], fates["v"][order]


def _lookup(keys: np.ndarray, known: np.ndarray, values: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """(mask of keys found in the sorted `known`, their values there, -1 elsewhere)."""
    if not len(known):
        return np.zeros(len(keys), bool), np.full(len(keys), -1, np.int64)
    pos = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    hit = known[pos] == keys
    return hit, np.where(hit, values[pos], -1)


# ---------------------------------------------------------------------------------------
# Class counts


def distinct_classes(run, *, memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None
                     ) -> tuple[dict[str, int], int]:
    """Distinct canonical forms per source and for the whole run (exact, flat memory).

    `run` is a run folder (finished or not: a run may call this before its `_SUCCESS`) or a
    list of result part paths/URLs. Sources come in the run's input order (the manifest's,
    else as met), each with its count, 0 for a source whose rows are all malformed.
    """
    r = _run_of(run)
    if not r.parts:
        return {}, 0
    k = max(1, math.ceil(r.rows / memory_rows))
    with _spill_folder(spill_dir, k > 1) as folder:
        buckets = _pass1(r, folder, 0, memory_rows)
        per_source = np.zeros(len(r.sources), np.int64)
        total = 0
        for b in range(buckets.k):
            entries, starts = buckets.classes(b)
            total += int(starts.sum())
            per_source += np.bincount(entries["key"] >> ROW_BITS, minlength=len(r.sources))
    return {s: int(per_source[i]) for i, s in enumerate(r.sources)}, total


# ---------------------------------------------------------------------------------------
# Writing outputs


def _format_of(output: str, option: str = "--output") -> str:
    name = output.lower()
    for fmt, ext in sorted(OUTPUT_FORMATS.items(), key=lambda kv: -len(kv[1])):
        if name.endswith(ext):
            return fmt
    raise UsageError(f"{option} {output}: unknown file type; use .parquet, .csv or .csv.gz")


def _check_output(output: str, run_dir, is_folder: bool = False) -> Location:
    """The output's location; UsageError for a folder given as a file, a missing parent
    folder, or a place inside the run's results (it would become part of the run)."""
    loc = as_location(output)
    if not loc.local:
        return loc
    run = as_location(run_dir)
    if run.local:
        results = os.path.realpath(os.path.join(run.path, runfolder.RESULTS))
        real = os.path.realpath(loc.path)
        if real == results or real.startswith(results + os.sep):
            raise UsageError(f"--output {output}: inside the run's {runfolder.RESULTS}/ folder")
    if is_folder:
        if os.path.exists(loc.path) and not os.path.isdir(loc.path):
            raise UsageError(f"--output {output}: is a file, not a folder")
        return loc
    if os.path.isdir(loc.path):
        raise UsageError(f"--output {output}: is a folder, not a file")
    parent = os.path.dirname(loc.path)
    if not os.path.isdir(parent):
        raise UsageError(f"--output {output}: folder {parent} does not exist")
    return loc


class _TableWriter:
    """Record batches into one binary file as Parquet (zstd) or CSV (header, gzip too)."""

    def __init__(self, f, fmt: str, schema):
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        self._gz = None
        if fmt == "parquet":  # the parts' own options: zstd 1, dictionaries where they pay
            self._w = pq.ParquetWriter(f, schema, **write_options(schema.names))
        else:
            if fmt == "csv.gz":
                self._gz = gzip.GzipFile(fileobj=f, mode="wb", compresslevel=6, mtime=0)
                f = self._gz
            plain = all(re.fullmatch(r"[^\",\r\n]+", n) for n in schema.names)
            options = {"quoting_style": "needed"}
            if plain:
                options["quoting_header"] = "none"  # "needed" quotes every name
            try:
                opts = pacsv.WriteOptions(**options)
            except TypeError:  # pyarrow before quoting_header
                opts = pacsv.WriteOptions(quoting_style="needed")
            self._w = pacsv.CSVWriter(f, schema, write_options=opts)
        self.rows = 0

    def write(self, table) -> None:
        if table.num_rows:
            self._w.write(table)
            self.rows += table.num_rows

    def close(self) -> None:
        self._w.close()
        if self._gz is not None:
            self._gz.close()

    def abandon(self) -> None:
        """Close after a failure (the file is thrown away), saying nothing more."""
        with contextlib.suppress(Exception):
            self.close()


def _write_one(loc: Location, fmt: str, schema, fill: Callable[[_TableWriter], None]) -> int:
    """Write one output whole or absent through Location.write_atomic; its rows."""
    count = [0]

    def body(f) -> None:
        w = _TableWriter(f, fmt, schema)
        try:
            fill(w)
        except BaseException:
            w.abandon()
            raise
        w.close()
        count[0] = w.rows

    loc.write_atomic(body)
    return count[0]


class _Outputs:
    """Several outputs written at once and published together at the end: local ones as
    temporary siblings fsynced and renamed, URLs as a local temporary file put in one go."""

    def __init__(self, folder: Location, names: list[str], fmt: str, schema, tmp: str):
        self.folder, self.fmt = folder, fmt
        self.locs = [folder.child(n + OUTPUT_FORMATS[fmt]) for n in names]
        self.tmp: list[str] = []
        for loc in self.locs:
            base = os.path.dirname(loc.path) if loc.local else tmp
            self.tmp.append(os.path.join(base, f".{loc.name}.{os.getpid()}-"
                                               f"{uuid.uuid4().hex[:8]}.tmp"))
        self.files = [open(p, "wb") for p in self.tmp]  # noqa: SIM115
        self.writers = [_TableWriter(f, fmt, schema) for f in self.files]

    def publish(self) -> None:
        for w, f in zip(self.writers, self.files, strict=True):
            w.close()
            f.flush()
            os.fsync(f.fileno())
            f.close()
        for loc, path in zip(self.locs, self.tmp, strict=True):
            if loc.local:
                os.replace(path, loc.path)
            else:
                with open(path, "rb") as src:
                    loc.write_atomic(lambda f, src=src: shutil.copyfileobj(src, f, 8 << 20))
                os.unlink(path)
        if self.folder.local:
            fsync_dir(self.folder.path)

    def discard(self) -> None:
        for w in self.writers:
            w.abandon()
        for f, path in zip(self.files, self.tmp, strict=True):
            with contextlib.suppress(Exception):
                f.close()
            with contextlib.suppress(OSError):
                os.unlink(path)


# ---------------------------------------------------------------------------------------
# dedup


@dataclass
class DedupSummary:
    run: str
    output: str
    rows: int  # rows of the run
    classes: int  # rows written
    formless: int  # rows without a canonical form (left out)
    seconds: float = 0.0

    def line(self) -> str:
        dup = self.rows - self.formless - self.classes
        return (f"dedup {self.run}: {self.rows:,} rows -> {self.classes:,} classes written to "
                f"{self.output} ({dup:,} duplicate rows dropped, {self.formless:,} malformed "
                f"rows left out) in {self.seconds:.1f} s")


def _dedup_schema():
    import pyarrow as pa

    return pa.schema([pa.field("source", pa.string()), pa.field("row", pa.int64()),
                      pa.field("puzzle", pa.string()), pa.field("canonical", pa.string()),
                      pa.field("solution", pa.string()), pa.field("status", pa.string()),
                      pa.field("copies", pa.int64())])


def dedup(run_dir, output: str, *, memory_rows: int = MEMORY_ROWS,
          spill_dir: str | None = None) -> DedupSummary:
    """One row per class: its first occurrence (input order, then row) and its copies."""
    import pyarrow as pa

    started = time.perf_counter()
    out = _check_output(output, run_dir)
    fmt = _format_of(output)
    run = _open_run(run_dir)
    k = max(1, math.ceil(run.rows / memory_rows))
    with _spill_folder(spill_dir, k > 1) as folder:
        buckets = _pass1(run, folder, 0, memory_rows)
        groups = _groups(run, memory_rows)
        firsts = _Spill(folder, "first", len(groups.parts), FATE, memory_rows)
        for b in range(buckets.k):
            entries, starts = buckets.classes(b)
            cls = _classes(entries, starts)
            fate = np.empty(len(cls), FATE)
            fate["key"], fate["v"] = cls["key"], cls["n"]
            firsts.add(groups.of(fate["key"]), fate)
        firsts.finish()
        schema = _dedup_schema()
        names = [c for c in DEDUP_COLUMNS if c != "copies"]

        def fill(w: _TableWriter) -> None:
            for g, parts in enumerate(groups.parts):
                known, copies = _fates(g, firsts)
                for part in parts:
                    for batch in _batches(part, names):
                        key = (run.source_index(batch.column("source")) << ROW_BITS
                               | batch.column("row").to_numpy(zero_copy_only=False))
                        hit, found = _lookup(key, known, copies)
                        take = np.flatnonzero(hit)
                        take = take[np.argsort(key[take], kind="stable")]
                        t = pa.Table.from_batches([batch]).select(names).take(take)
                        t = t.append_column("copies", pa.array(found[take], pa.int64()))
                        w.write(t.cast(schema))

        written = _write_one(out, fmt, schema, fill)
    return DedupSummary(run.shown, out.shown, run.rows, written, int(buckets.formless.sum()),
                        time.perf_counter() - started)


def dedup_main(run_dir: str, output: str, quiet: bool = False,
               memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> int:
    """`pipeline dedup DIR --output FILE`: write, print one line on stderr, return 0."""
    summary = dedup(run_dir, output, memory_rows=memory_rows, spill_dir=spill_dir)
    if not quiet:
        print(summary.line(), file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------------
# split


@dataclass
class SplitSummary:
    run: str
    output: str
    names: list[str]
    fractions: list[float]
    seed: int
    stratify: str | None
    strata: list[str]  # stratum labels, by code
    classes: np.ndarray  # (splits, strata) classes, by each class's stratum
    rows: np.ndarray  # (splits,) rows written
    formless: int
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        total = int(self.classes.sum())
        parts = " / ".join(
            f"{n} {int(c):,} ({100 * c / max(total, 1):.1f}%)"
            for n, c in zip(self.names, self.classes.sum(axis=1), strict=True))
        how = f"stratified by {self.stratify}" if self.stratify else "not stratified"
        return (f"split {self.run} -> {self.output}: {total:,} classes, "
                f"{int(self.rows.sum()):,} rows: {parts} (seed {self.seed}, {how}; "
                f"{self.formless:,} malformed rows left out) in {self.seconds:.1f} s")

    def table(self) -> str:
        used = [s for s in [*range(1, len(self.strata)), 0] if self.classes[:, s].any()]
        heads = ["split", "rows", "classes", *(self.strata[s] for s in used)]
        body = []
        for i, name in enumerate(self.names):
            c = self.classes[i]
            body.append([name, f"{int(self.rows[i]):,}", f"{int(c.sum()):,}",
                         *(f"{int(c[s]):,}" for s in used)])
        tot = self.classes.sum(axis=0)
        body.append(["all", f"{int(self.rows.sum()):,}", f"{int(tot.sum()):,}",
                     *(f"{int(tot[s]):,}" for s in used)])
        widths = [max(len(r[j]) for r in [heads, *body]) for j in range(len(heads))]
        return "\n".join("  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                   for j, (c, w) in enumerate(zip(r, widths, strict=True)))
                         for r in [heads, *body])

    def as_dict(self) -> dict:
        return {
            "run": self.run, "seed": self.seed, "stratify": self.stratify,
            "fractions": dict(zip(self.names, self.fractions, strict=True)),
            "files": dict(zip(self.names, self.files, strict=True)),
            "rows": {n: int(r) for n, r in zip(self.names, self.rows, strict=True)},
            "classes": {n: int(c) for n, c in zip(self.names, self.classes.sum(1),
                                                  strict=True)},
            "classes_by_stratum": {
                n: {self.strata[s]: int(self.classes[i, s]) for s in range(len(self.strata))
                    if self.classes[:, s].any()} for i, n in enumerate(self.names)},
            "malformed_rows_left_out": self.formless,
        }


def parse_fractions(fractions) -> list[float]:
    """'0.8,0.1,0.1' or numbers -> floats, each in (0, 1], adding up to 1 (UsageError)."""
    if isinstance(fractions, str):
        items = [x.strip() for x in fractions.split(",")]
        try:
            values = [float(x) for x in items]
        except ValueError:
            raise UsageError(f"--fractions {fractions}: not a list of numbers like "
                             "0.8,0.1,0.1") from None
    else:
        values = [float(x) for x in fractions]
    if not values:
        raise UsageError("--fractions: give at least one fraction")
    if not all(math.isfinite(v) and 0 < v <= 1 for v in values):
        raise UsageError(f"--fractions {_show(values)}: each must be above 0 and at most 1")
    if abs(sum(values) - 1) > 1e-6:
        raise UsageError(f"--fractions {_show(values)}: they add up to {sum(values):g}, "
                         "not 1")
    return values


def _show(values: list[float]) -> str:
    return ",".join(f"{v:g}" for v in values)


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def parse_names(names, count: int) -> list[str]:
    """'train,val,test' or names -> a list of `count` distinct file-name-safe names."""
    if names is None:
        if count in DEFAULT_NAMES:
            return list(DEFAULT_NAMES[count])
        return [f"split{i}" for i in range(count)]
    values = [x.strip() for x in names.split(",")] if isinstance(names, str) else list(names)
    if len(values) != count:
        raise UsageError(f"--names {','.join(values)}: {len(values)} names for {count} "
                         "fractions")
    for v in values:
        if not _NAME.match(v):
            raise UsageError(f"--names: {v!r} is not a plain file name (letters, digits, "
                             "_ . -)")
    if len(set(values)) != len(values):
        raise UsageError(f"--names {','.join(values)}: a name given twice")
    return values


def _cuts(counts: np.ndarray, fractions: list[float]) -> np.ndarray:
    """(strata, splits-1) rank bounds: round(n_s * cumulative fraction)."""
    cum = np.cumsum(fractions)[:-1]
    return np.floor(counts[:, None] * cum[None, :] + 0.5).astype(np.int64)


def _match(cls: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """For each row record, the index of its class in `cls` (same form)."""
    words = np.concatenate([cls["w"], rows["w"]])
    u = form_hash(words, seed)
    flag = np.concatenate([np.zeros(len(cls), np.int8), np.ones(len(rows), np.int8)])
    p = _order(u, words, flag)
    del words, u
    is_cls = p < len(cls)
    last = np.maximum.accumulate(np.where(is_cls, np.arange(len(p)), 0))
    out = np.empty(len(rows), np.int64)
    out[p[~is_cls] - len(cls)] = p[last][~is_cls]
    if len(rows) and (not is_cls[0] or (cls["w"][out] != rows["w"]).any()):
        raise RuntimeError("split: a row whose class was not found (a bug)")
    return out


def split(run_dir, fractions, names=None, seed: int = 0, output_dir: str = ".",
          fmt: str = "parquet", stratify: str | None = "grade", *,
          memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> SplitSummary:
    """Every row with a class into OUTDIR/<name>.<fmt> per split, whole classes to a split;
    OUTDIR/split.json records the seed, fractions and counts."""
    import pyarrow as pa

    started = time.perf_counter()
    fractions = parse_fractions(fractions)
    names = parse_names(names, len(fractions))
    if fmt not in OUTPUT_FORMATS:
        raise UsageError(f"--format {fmt}: use parquet, csv or csv.gz")
    seed = _check_seed(seed)
    stratify = None if stratify in (None, "", "none") else stratify
    outdir = _check_output(output_dir, run_dir, is_folder=True)
    run = _open_run(run_dir)
    if stratify is not None and stratify not in run.columns:
        raise UsageError(f"--stratify {stratify}: no such column in the results")
    strata = _Strata(stratify)
    k = max(1, math.ceil(run.rows / memory_rows))
    m = len(fractions)
    with _spill_folder(spill_dir, k > 1) as folder:
        buckets = _pass1(run, folder, seed, memory_rows, strata)
        # Pass 2a: the classes of each bucket, and how many per stratum.
        kept = _Spill(folder, "classes", buckets.k, RECORD, memory_rows)
        per_stratum = np.zeros(len(strata.labels), np.int64)
        for b in range(buckets.k):
            entries, starts = buckets.classes(b)
            cls = _classes(entries, starts)
            per_stratum = _grow(per_stratum, len(strata.labels))
            per_stratum += np.bincount(cls["s"], minlength=len(strata.labels))
            kept.add(np.full(len(cls), b), cls)
        kept.finish()
        cuts = _cuts(per_stratum, fractions)
        # Pass 2b: ranks in (u, words) order within each stratum -> the split of each class,
        # then of each row.
        groups = _groups(run, memory_rows)
        fates = _Spill(folder, "fate", len(groups.parts), FATE, memory_rows)
        before = np.zeros(len(per_stratum), np.int64)
        classes = np.zeros((m, len(per_stratum)), np.int64)
        for b in range(buckets.k):
            cls = kept.read_all(b)
            s = cls["s"].astype(np.int64)
            order = np.argsort(s, kind="stable")
            first = np.searchsorted(s[order], np.arange(len(per_stratum)))
            rank = np.empty(len(cls), np.int64)
            rank[order] = before[s[order]] + np.arange(len(cls)) - first[s[order]]
            before += np.bincount(s, minlength=len(per_stratum))
            which = (rank[:, None] >= cuts[s]).sum(axis=1) if m > 1 else np.zeros(len(cls),
                                                                                 np.int64)
            np.add.at(classes, (which, s), 1)
            for chunk in buckets.spill.read(b, memory_rows):
                fate = np.empty(len(chunk), FATE)
                fate["key"] = chunk["key"]
                fate["v"] = which[_match(cls, chunk, seed)]
                fates.add(groups.of(fate["key"]), fate)
        fates.finish()
        # Pass 3: the rows, in input order, to their split's file.
        schema = _schema_of(run)
        outdir.makedirs()
        outs = _Outputs(outdir, names, fmt, schema, folder or tempfile.gettempdir())
        rows = np.zeros(m, np.int64)
        try:
            for g, parts in enumerate(groups.parts):
                known, where = _fates(g, fates)
                for part in parts:
                    for batch in _batches(part, schema.names):
                        key = (run.source_index(batch.column("source")) << ROW_BITS
                               | batch.column("row").to_numpy(zero_copy_only=False))
                        _, go = _lookup(key, known, where)
                        t = pa.Table.from_batches([batch])
                        for j in range(m):
                            take = np.flatnonzero(go == j)
                            if len(take):
                                take = take[np.argsort(key[take], kind="stable")]
                                outs.writers[j].write(t.take(take).cast(schema))
                                rows[j] += len(take)
            outs.publish()
        except BaseException as exc:
            outs.discard()
            if isinstance(exc, OSError):
                raise RunFailed(f"cannot write {outdir.shown}: {why(exc)}") from None
            raise
    summary = SplitSummary(run.shown, outdir.shown, names, fractions, seed, stratify,
                           [strata.label(i) for i in range(len(per_stratum))], classes, rows,
                           int(buckets.formless.sum()), [loc.name for loc in outs.locs])
    summary.seconds = time.perf_counter() - started
    info = {**summary.as_dict(), "run_id": run.manifest.get("run_id"), "format": fmt}
    outdir.child("split.json").write_atomic((json.dumps(info, indent=2) + "\n").encode())
    return summary


def _schema_of(run: _Run):
    with _open_parquet(run.parts[0].loc) as pf:
        return pf.schema_arrow.remove_metadata()


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"--seed {seed}: must be a whole number, 0 or more")
    return int(seed)


def split_main(run_dir: str, fractions: str, output_dir: str, names: str | None = None,
               seed: int = 0, fmt: str = "parquet", stratify: str | None = "grade",
               quiet: bool = False, memory_rows: int = MEMORY_ROWS,
               spill_dir: str | None = None) -> int:
    """`pipeline split DIR --fractions ... --output OUTDIR`: write the splits and
    OUTDIR/split.json, print a line and a table (classes per stratum) on stderr, return 0."""
    summary = split(run_dir, fractions, names, seed, output_dir, fmt, stratify,
                    memory_rows=memory_rows, spill_dir=spill_dir)
    if not quiet:
        print(summary.line(), file=sys.stderr)
        print(summary.table(), file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------------
# augment


@dataclass
class AugmentSummary:
    run: str
    output: str
    solved: int
    copies: int
    written: int
    seed: int
    seconds: float = 0.0

    def line(self) -> str:
        return (f"augment {self.run}: {self.solved:,} solved rows x {self.copies} copies -> "
                f"{self.written:,} puzzle/solution pairs written to {self.output}, each "
                f"checked (seed {self.seed}) in {self.seconds:.1f} s")


def block_rows(copies: int) -> int:
    """Rows per seeded Generator: about BLOCK_DRAWS transformations a draw (a constant of the
    output for a given number of copies)."""
    return min(4096, max(8, BLOCK_DRAWS // copies))


def block_transforms(seed: int, source: int, block: int, copies: int) -> np.ndarray:
    """(rows, copies, 34) int8: the transformations of rows block*rows.. of a source, rows =
    block_rows(copies)."""
    rows = block_rows(copies)
    rng = np.random.default_rng([seed, source, block])
    return canonical.random_transforms(rng, rows * copies).reshape(rows, copies, -1)


class _Blocks:
    """block_transforms with the last few blocks kept (parts cut blocks; rows come in order)."""

    def __init__(self, seed: int, copies: int):
        self.seed, self.copies, self.rows = seed, copies, block_rows(copies)
        self._kept: dict[tuple[int, int], np.ndarray] = {}

    def get(self, source: int, block: int) -> np.ndarray:
        key = (source, block)
        if key not in self._kept:
            if len(self._kept) >= 4:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = block_transforms(self.seed, source, block, self.copies)
        return self._kept[key]

    def of_rows(self, src: np.ndarray, row: np.ndarray) -> np.ndarray:
        """(N, copies, 34): each row's transformations, whatever rows come together."""
        out = np.empty((len(row), self.copies, canonical.TRANSFORM_WIDTH), np.int8)
        blocks = np.stack([src, row // self.rows], axis=1)
        uniq, inv = np.unique(blocks, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        for j, (s, b) in enumerate(uniq.tolist()):  # a few blocks per batch, not rows
            at = np.flatnonzero(inv == j)
            out[at] = self.get(s, b)[row[at] % self.rows]
        return out


def _strings(grids: np.ndarray, blank: str):
    """An (N,81) batch as an Arrow string array."""
    import pyarrow as pa

    n = len(grids)
    return pa.Array.from_buffers(pa.string(), n, [
        None, pa.py_buffer(np.arange(0, 81 * (n + 1), 81, dtype=np.int32)),
        pa.py_buffer(grid.to_ascii(grids, blank).tobytes())])


def _grids(arr, what: str) -> np.ndarray:
    grids, bad = grid.encode_buffers(*_string_buffers(arr))
    if bad:
        raise RuntimeError(f"augment: a solved row whose {what} does not encode (a bug)")
    return grids


def augment(run_dir, copies: int, seed: int, output: str) -> AugmentSummary:
    """K random equivalents of every solved row, with their solutions, each pair checked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    started = time.perf_counter()
    out = _check_output(output, run_dir)
    fmt = _format_of(output)
    if isinstance(copies, bool) or not isinstance(copies, (int, np.integer)) or not (
            1 <= copies <= MAX_COPIES):
        raise UsageError(f"--copies {copies}: must be a whole number from 1 to {MAX_COPIES}")
    seed = _check_seed(seed)
    run = _open_run(run_dir, need_canonical=False)
    has_form = "canonical" in run.columns
    fields = [pa.field("source", pa.string()), pa.field("row", pa.int64()),
              pa.field("copy", pa.int32()), pa.field("puzzle", pa.string()),
              pa.field("solution", pa.string())]
    if has_form:
        fields.append(pa.field("canonical", pa.string()))
    schema = pa.schema(fields)
    columns = ["source", "row", "status", "puzzle", "solution"] + (["canonical"] * has_form)
    solved = [0]
    per_batch = max(1, BATCH_ROWS // copies)
    blocks = _Blocks(seed, copies)

    def fill(w: _TableWriter) -> None:
        for part in run.parts:
            for batch in _batches(part, columns):
                t = pa.Table.from_batches([batch])
                t = t.filter(pc.equal(t.column("status"), "solved"))
                if not t.num_rows:
                    continue
                key = (run.source_index(t.column("source")) << ROW_BITS
                       | t.column("row").to_numpy())
                t = t.take(np.argsort(key, kind="stable"))
                for lo in range(0, t.num_rows, per_batch):
                    _augment_rows(t.slice(lo, per_batch), run, blocks, has_form, schema, w)
                solved[0] += t.num_rows

    written = _write_one(out, fmt, schema, fill)
    return AugmentSummary(run.shown, out.shown, solved[0], copies, written, seed,
                          time.perf_counter() - started)


def _augment_rows(t, run: _Run, blocks: _Blocks, has_form: bool, schema, w) -> None:
    """One batch of solved rows -> their copies, checked, written."""
    import pyarrow as pa

    n, copies = t.num_rows, blocks.copies
    src = run.source_index(t.column("source"))
    row = t.column("row").to_numpy()
    puzzles = np.repeat(_grids(t.column("puzzle"), "puzzle"), copies, axis=0)
    solutions = np.repeat(_grids(t.column("solution"), "solution"), copies, axis=0)
    trans = blocks.of_rows(src, row).reshape(n * copies, -1)
    new_p = canonical.transform(puzzles, trans)
    new_s = canonical.transform(solutions, trans)
    ok = check.is_solution(new_p, new_s)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0]) // copies
        raise RuntimeError(f"augment: a transformed pair fails the check (source "
                           f"{t.column('source')[bad]}, row {row[bad]}): a bug")
    rep = np.repeat(np.arange(n), copies)
    cols = {"source": t.column("source").take(rep), "row": pa.array(row[rep], pa.int64()),
            "copy": pa.array(np.tile(np.arange(copies, dtype=np.int32), n)),
            "puzzle": _strings(new_p, "."), "solution": _strings(new_s, "0")}
    if has_form:
        cols["canonical"] = t.column("canonical").take(rep)
    w.write(pa.table(cols).cast(schema))


def augment_main(run_dir: str, copies: int, seed: int, output: str,
                 quiet: bool = False) -> int:
    """`pipeline augment DIR --copies K --seed S --output FILE`: write, print one line on
    stderr, return 0."""
    summary = augment(run_dir, copies, seed, output)
    if not quiet:
        print(summary.line(), file=sys.stderr)
    return 0
