"""Equivalence classes of a run's puzzles, counted with flat memory: forms, hashes, buckets.

A *class* is an equivalence class of puzzles: the rows sharing a `canonical` (minlex) form.
Rows without one (malformed rows, `canonical` null) are in no class; every tool leaves them
out and says how many. `distinct_classes` counts them (the run's stats, with --canonical);
the data-set tools (tools/datasets/) build on the same passes.

Memory stays flat by a hash spill, never by holding a run:

* A canonical form packs into five uint64 words (19 digits each, a blank as 0), whose order
  is the forms' order. A 64-bit hash u of (seed, words) picks one of K buckets by its top
  bits (u * K / 2^64), so bucket b holds exactly the classes with u in [b/K, (b+1)/K): the
  buckets, in order, list the classes in (u, words) order.
* Pass 1 streams the parts once and appends a 68-byte record per row with a form (words,
  key = source index << 40 | row, stratum code) to K bucket files, K = rows / memory_rows,
  through one buffer of memory_rows records. A run of at most memory_rows rows is one bucket
  and never touches the disk (the same code path); `distinct_classes` counts such a run's
  forms in one hash table instead, without records (`_count_distinct`, compiled).
* Pass 2 takes one bucket at a time, in chunks of memory_rows records merged into the
  bucket's class table (so a class with millions of copies does not break the bound):
  sorted by (u, words, key), a class's rows are adjacent and its first occurrence leads.
  Sorting is by (u, key) alone unless two different forms share a u; then by the words
  too, so counts are exact whatever the hash does. `distinct_classes`, which needs only
  the (class, source) pairs, not their order, walks the rows in u order once instead
  (`_entries`, compiled).
* Pass 3 (dedup, split) streams the parts again in input order and reads each row's fate
  from a second spill partitioned by groups of consecutive parts: (key, copies) of the
  first occurrences, or (key, split) of every row. Output rows come in input order.

Peak memory is about the import baseline (150 MB) plus 250-600 bytes per memory_rows
record, whatever the run's size (benchmarks/bench_datasets.py). Spill files go to a
temporary folder under `spill_dir` (default: the system's, TMPDIR honoured) and are removed
at the end.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pipeline import compiled
from pipeline.errors import InputError, UsageError
from pipeline.io.runfolder import ROW_BITS, Part, Run, part_batches, run_of
from pipeline.io.scratch import SPILL_PREFIX
from pipeline.io.strings import buffers
from pipeline.sudoku.grade import GRADES, SER_BAND_NAMES, SER_BANDS

MEMORY_ROWS = 1 << 19  # records held at once, per pass (peak about 250-450 B a record)
MAX_STRATA = 1000
SER_BAND = "ser_band"  # --stratify by the SER band of `ser` (stats: ser_1_2 .. ser_10_up)

# One spill record: the packed form, its hash (u, under the pass's seed: made once, when the
# record is), the row's key, a count (1 for a row), a stratum code.
RECORD = np.dtype([("w", "<u8", (5,)), ("u", "<u8"), ("key", "<i8"), ("n", "<i8"),
                   ("s", "<i4")])


# What pass 3 reads: a row's key and a value (copies, or the split).
FATE = np.dtype([("key", "<i8"), ("v", "<i8")])


_POW10 = np.array([10**k for k in range(18, -1, -1)], dtype=np.uint64)


_MASK64 = (1 << 64) - 1


_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


_GOLDEN = 0x9E3779B97F4A7C15


def _mix_int(z: int) -> int:
    """splitmix64's finalizer on a Python int."""
    z &= _MASK64
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


_U1, _U2, _UG = np.uint64(_M1), np.uint64(_M2), np.uint64(_GOLDEN)


@compiled.helper(inline="always")
def _mix(z):
    """splitmix64's finalizer (uint64, wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * _U1
    z = (z ^ (z >> np.uint64(27))) * _U2
    return z ^ (z >> np.uint64(31))


@compiled.kernel("(readonly u8[:, ::1], u8, u8[::1]) -> void", nogil=True)
def _hash_rows(words, start, out):
    """out[i]: the hash of words[i] from `start` (form_hash's, one row at a time)."""
    for i in range(words.shape[0]):
        h = start
        for k in range(words.shape[1]):
            h = _mix(h ^ words[i, k])
        out[i] = _mix(h + _UG)


def form_hash(words: np.ndarray, seed: int) -> np.ndarray:
    """(N,) uint64 hash of (seed, packed form): the same on every machine and version."""
    out = np.empty(len(words), np.uint64)
    _hash_rows(np.ascontiguousarray(words, np.uint64), np.uint64(_mix_int(seed * _GOLDEN + 1)),
               out)
    return out


def pack_forms(digits: np.ndarray) -> np.ndarray:
    """(N,81) digits 0..9 -> (N,5) uint64 words of 19 digits (the last of 5), order kept."""
    d = np.asarray(digits).astype(np.uint64)
    words = np.empty((len(d), 5), np.uint64)
    for k in range(5):
        block = d[:, 19 * k: 19 * k + 19]
        words[:, k] = block @ _POW10[19 - block.shape[1]:]
    return words


def unpack_forms(words: np.ndarray) -> np.ndarray:
    """(N,5) uint64 words -> (N,81) digits: pack_forms undone."""
    w = np.asarray(words, np.uint64)
    out = np.empty((len(w), 81), np.uint8)
    for k in range(5):
        width = min(19, 81 - 19 * k)
        out[:, 19 * k: 19 * k + width] = (w[:, k, None] // _POW10[19 - width:]) % np.uint64(10)
    return out


@compiled.kernel("(readonly u1[::1], u8[:, ::1]) -> b1", nogil=True)
def _pack_text(chars, words):
    """(M*81,) bytes of M forms ('.' or 1-9) -> (M,5) words; False on another byte."""
    bad = False
    for i in range(words.shape[0]):
        base = 81 * i
        for k in range(5):
            # a sum of digit * 10^place, not Horner's rule: its products do not wait on
            # one another (a third of the time)
            stop = min(19 * k + 19, 81)
            w = np.uint64(0)
            for j in range(19 * k, stop):
                c = np.int64(chars[base + j])
                d = c - 48
                dot = c == 46
                bad |= (d < 1 or d > 9) and not dot
                w += np.uint64(0 if dot else d) * _POW10[18 - (stop - 1 - j)]
            words[i, k] = w
        if bad:
            return False
    return True


@compiled.helper(inline="always")
def _same_words(words, a, b):
    """Whether rows a and b of words are equal."""
    for k in range(words.shape[1]):
        if words[a, k] != words[b, k]:
            return False
    return True


@compiled.kernel("(readonly u8[::1], readonly u8[:, ::1], readonly i8[::1], readonly i8[::1], "
                 "i8, i8[::1], b1[::1]) -> i8", nogil=True)
def _entries(u, words, key, order, shift, out, new_class):
    """Given rows in hash order (`order` sorts `u`), write to `out` one row per (class,
    source), the one of the least key, and mark in `new_class` the first entry of each
    class; their number. Rows sharing a hash are compared word by word, so the classes are
    exact whatever the hash does."""
    n = order.shape[0]
    m = 0
    i = 0
    while i < n:
        h = u[order[i]]
        j = i
        first = m
        while j < n and u[order[j]] == h:
            r = order[j]
            src = key[r] >> shift
            seen = False
            found = -1
            for q in range(first, m):  # the hash's entries so far
                if _same_words(words, out[q], r):
                    seen = True
                    if key[out[q]] >> shift == src:
                        found = q
                        break
            if found < 0:
                out[m] = r
                new_class[m] = not seen
                m += 1
            elif key[r] < key[out[found]]:
                out[found] = r
            j += 1
        i = j
    return m


@compiled.kernel("(readonly u8[::1], readonly u8[:, ::1], readonly i8[::1], i8[::1]) -> i8",
                 nogil=True)
def _count_distinct(u, words, src, per_source):
    """The distinct rows of `words` (the classes), and in per_source[s] those among the rows
    of source src[i] == s. Tables with open addressing, slots from the hash u (of the form;
    with the source for the pairs), rows compared word by word: exact whatever u is."""
    n = u.shape[0]
    size = 2
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    one_source = True
    for r in range(1, n):
        if src[r] != src[0]:
            one_source = False
            break
    forms = np.full(size, -1, np.int32)  # a row of each form
    pairs = np.full(1 if one_source else size, -1, np.int32)  # a row of each (form, source)
    total = 0
    for r in range(n):
        i = np.int64(u[r] & mask)
        while forms[i] >= 0 and not _same_words(words, forms[i], r):
            i = (i + 1) & (size - 1)
        if forms[i] < 0:
            forms[i] = r
            total += 1
        if one_source:
            continue
        i = np.int64(_mix(u[r] ^ np.uint64(src[r])) & mask)
        while pairs[i] >= 0 and not (src[pairs[i]] == src[r]
                                     and _same_words(words, pairs[i], r)):
            i = (i + 1) & (size - 1)
        if pairs[i] < 0:
            pairs[i] = r
            per_source[src[r]] += 1
    if one_source and n:
        per_source[src[0]] = total
    return total


def forms(arr, shown: str) -> tuple[np.ndarray, np.ndarray]:
    """A canonical column -> ((N,) mask of rows with a form, (M,5) packed words)."""
    offsets, data = buffers(arr)
    lengths = np.diff(offsets)
    has = lengths > 0
    if not np.all(lengths[has] == 81):
        raise InputError(f"{shown}: a canonical form that is not 81 characters long")
    # Nulls are empty, so the forms lie back to back in the data buffer.
    words = np.empty((int(has.sum()), 5), np.uint64)
    if not _pack_text(data[offsets[0]: offsets[-1]], words):
        raise InputError(f"{shown}: a canonical form with a character other than . and 1-9")
    return has, words


def bucket_of(u: np.ndarray, k: int) -> np.ndarray:
    """Bucket 0..k-1 of each hash, monotone in the hash (its top 32 bits times k)."""
    return ((u >> np.uint64(32)) * np.uint64(k)) >> np.uint64(32)


def sort_order(u: np.ndarray, words: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The permutation sorting by (u, words, minor, position); by (u, minor, position) when
    no u is shared by two different forms (the words then never decide)."""
    return _order(u, words, minor)[0]


def _order(u: np.ndarray, words: np.ndarray, minor: np.ndarray) -> tuple[np.ndarray, bool]:
    """sort_order's permutation, and whether two different forms share a hash."""
    # An unstable sort of the hashes alone first (numpy's vectorised one, about 5x a stable
    # sort's speed): in a set without copies, no two rows share a hash and it is the order.
    p = np.argsort(u)
    us = u[p]
    tie = np.flatnonzero(us[1:] == us[:-1])
    if not len(tie):
        return p, False
    collide = bool((words[p[tie]] != words[p[tie + 1]]).any())  # two forms share a hash
    if not collide and len(p) < 1 << 32 and (minor[1:] >= minor[:-1]).all():
        # Rows in key order: a hash's rows go in position order. One more unstable sort,
        # of (the hash's rank, the position) in one word, puts them so.
        rank = np.zeros(len(p), np.uint64)
        rank[1:] = np.cumsum(us[1:] != us[:-1])
        both = rank << np.uint64(32) | p.astype(np.uint64)
        both.sort()
        return (both & np.uint64(0xFFFFFFFF)).astype(np.intp), False
    # Keys out of order (chunks merged) or two forms sharing a hash: stable sorts by every key.
    wkeys = [words[:, k] for k in range(words.shape[1] - 1, -1, -1)] if collide else []
    return np.lexsort((minor, *wkeys, u)), collide


def _aggregate(rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records -> one per (class, source), in (u, words, key) order, each with its first
    key, that key's stratum and the summed count; also their u and a mask of class starts."""
    if len(rec) == 0:
        return rec, np.zeros(0, np.uint64), np.zeros(0, bool)
    u = rec["u"]
    p, collide = _order(u, rec["w"], rec["key"])
    u = u[p]
    new_class = np.ones(len(rec), bool)
    new_class[1:] = u[1:] != u[:-1]
    if collide:  # the same hash as the row before: the same form only if the words agree
        same = np.flatnonzero(~new_class[1:]) + 1
        w = rec["w"]
        new_class[same] = (w[p[same]] != w[p[same - 1]]).any(axis=1)
    src = rec["key"][p] >> ROW_BITS
    new_entry = new_class.copy()
    new_entry[1:] |= src[1:] != src[:-1]
    starts = np.flatnonzero(new_entry)
    out = rec[p[starts]]
    out["n"] = np.add.reduceat(rec["n"][p], starts)
    return out, u[starts], new_class[starts]


def per_class(entries: np.ndarray, starts_mask: np.ndarray) -> np.ndarray:
    """(class, source) entries -> one record per class: its first key and stratum, copies."""
    starts = np.flatnonzero(starts_mask)
    out = entries[starts]
    if len(starts):
        out["n"] = np.add.reduceat(entries["n"], starts)
    return out


class Spill:
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
def spill_folder(spill_dir: str | None, needed: bool):
    """A temporary folder for spill files (None when the run fits in memory), removed after."""
    if not needed:
        yield None
        return
    path = tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-", dir=spill_dir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Strata:
    """Codes for the values of the column to stratify by: 0 is null, then values as met
    (grades in their own order first), so the codes are the same for the same run.
    `ser_band` is not a column: the strata are the SER bands of the `ser` column."""

    def __init__(self, column: str | None):
        self.by = column
        self.column = "ser" if column == SER_BAND else column  # the column read
        first = {"grade": list(GRADES), SER_BAND: list(SER_BAND_NAMES)}.get(column or "", [])
        self.labels: list[str | None] = [None, *first]
        self._codes = {v: i for i, v in enumerate(self.labels)}

    def codes(self, arr) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.column is None:
            return np.zeros(len(arr), np.int32)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if self.by == SER_BAND:  # band k (from 1) of each rating, 0 for none
            tenths = np.rint(pc.fill_null(arr, 0.0).to_numpy(zero_copy_only=False) * 10)
            lows = np.array([lo for lo, _ in SER_BANDS])
            band = np.searchsorted(lows, tenths, side="right")
            return np.where(tenths >= lows[0], band, 0).astype(np.int32)
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


@dataclass
class Buckets:
    spill: Spill
    k: int
    seed: int
    memory_rows: int
    rows: np.ndarray  # rows per source
    formless: np.ndarray  # rows without a form per source

    def classes(self, b: int, ordered: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Bucket b's (class, source) entries and the class-start mask: in (u, words) order
        (dedup, split), or, not `ordered`, as one compiled walk gives them (a count)."""
        entries = np.zeros(0, RECORD)
        starts = np.zeros(0, bool)
        for i, chunk in enumerate(self.spill.read(b, self.memory_rows)):
            merged = chunk if i == 0 else np.concatenate([entries, chunk])
            if ordered:
                entries, _, starts = _aggregate(merged)
            else:
                entries, starts = _walk(merged)
        return entries, starts


def _walk(rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records -> one per (class, source), the first key's, and the class-start mask, in no
    particular order (`_entries`)."""
    u = np.ascontiguousarray(rec["u"])
    out = np.empty(len(rec), np.int64)
    starts = np.empty(len(rec), bool)
    m = _entries(u, np.ascontiguousarray(rec["w"]), np.ascontiguousarray(rec["key"]),
                 np.argsort(u), ROW_BITS, out, starts)
    return rec[out[:m]], starts[:m]


def grown(a: np.ndarray, n: int) -> np.ndarray:
    return a if len(a) >= n else np.concatenate([a, np.zeros(n - len(a), a.dtype)])


def pass1(run: Run, folder: str | None, seed: int, memory_rows: int,
           strata: Strata | None = None) -> Buckets:
    """Stream the parts once into hash buckets of records."""
    k = max(1, math.ceil(run.rows / memory_rows))
    spill = Spill(folder if k > 1 else None, "bucket", k, RECORD, memory_rows)
    rows = np.zeros(len(run.sources), np.int64)
    formless = np.zeros(len(run.sources), np.int64)
    by = strata.column if strata is not None else None
    columns = ["source", "row", "canonical"] + ([by] if by and by not in ("source", "row")
                                                else [])
    for part in run.parts:
        for batch in part_batches(part, columns):
            if not batch.num_rows:
                continue
            src = run.source_index(batch.column("source"))
            row = batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
            if row.min() < 0 or row.max() >= 1 << ROW_BITS:
                raise InputError(f"{run.shown}: a row number outside 0..2^{ROW_BITS}")
            key = src << ROW_BITS | row
            part.first_key = int(key.min()) if part.first_key < 0 else min(part.first_key,
                                                                            int(key.min()))
            has, words = forms(batch.column("canonical"), run.shown)
            n_src = len(run.sources)
            rows = grown(rows, n_src)
            formless = grown(formless, n_src)
            rows += np.bincount(src, minlength=n_src)
            formless += np.bincount(src[~has], minlength=n_src)
            rec = np.empty(len(words), RECORD)
            rec["w"] = words
            rec["u"] = form_hash(words, seed)
            rec["key"] = key[has]
            rec["n"] = 1
            rec["s"] = strata.codes(batch.column(by))[has] if by else 0
            spill.add(bucket_of(rec["u"], k), rec)
    spill.finish()
    return Buckets(spill, k, seed, memory_rows, rows, formless)


@dataclass
class Groups:
    """Consecutive parts in input order, about memory_rows rows a group (pass 3's unit)."""

    parts: list[list[Part]]
    first_keys: np.ndarray

    def of(self, keys: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.first_keys, keys, side="right") - 1


def group_parts(run: Run, memory_rows: int) -> Groups:
    parts = sorted((p for p in run.parts if p.first_key >= 0), key=lambda p: p.first_key)
    groups: list[list[Part]] = []
    size = 0
    for p in parts:
        if not groups or size + p.rows > memory_rows:
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += p.rows
    first = np.array([g[0].first_key for g in groups], np.int64)
    return Groups(groups, first)


def read_fates(g: int, spill: Spill) -> tuple[np.ndarray, np.ndarray]:
    """Group g's (keys, values), sorted by key."""
    fates = spill.read_all(g)
    order = np.argsort(fates["key"], kind="stable")
    return fates["key"][order], fates["v"][order]


def find_keys(keys: np.ndarray, known: np.ndarray, values: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """(mask of keys found in the sorted `known`, their values there, -1 elsewhere)."""
    if not len(known):
        return np.zeros(len(keys), bool), np.full(len(keys), -1, np.int64)
    pos = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    hit = known[pos] == keys
    return hit, np.where(hit, values[pos], -1)


def distinct_classes(run, *, memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None
                     ) -> tuple[dict[str, int], int]:
    """Distinct canonical forms per source and for the whole run (exact, flat memory).

    `run` is a run folder (finished or not: a run may call this before its `_SUCCESS`) or a
    list of result part paths/URLs. Sources come in the run's input order (the manifest's,
    else as met), each with its count, 0 for a source whose rows are all malformed.
    """
    r = run_of(run)
    if not r.parts:
        return {}, 0
    if r.rows <= memory_rows and r.rows < 1 << 31:
        return _count_at_once(r)
    k = math.ceil(r.rows / memory_rows)
    with spill_folder(spill_dir, k > 1) as folder:
        buckets = pass1(r, folder, 0, memory_rows)
        per_source = np.zeros(len(r.sources), np.int64)
        total = 0
        for b in range(buckets.k):
            entries, starts = buckets.classes(b, ordered=False)
            total += int(starts.sum())
            per_source += np.bincount(entries["key"] >> ROW_BITS, minlength=len(r.sources))
    return {s: int(per_source[i]) for i, s in enumerate(r.sources)}, total


def _count_at_once(r: Run) -> tuple[dict[str, int], int]:
    """distinct_classes of a run of at most memory_rows rows (< 2^31): its forms in one
    table, no bucket, no record (what --canonical adds to a run: a third less time)."""
    words = np.empty((r.rows, 5), np.uint64)
    src = np.empty(r.rows, np.int64)
    m = 0
    for part in r.parts:
        for batch in part_batches(part, ["source", "canonical"]):
            if not batch.num_rows:
                continue
            s = r.source_index(batch.column("source"))
            has, w = forms(batch.column("canonical"), r.shown)
            words[m: m + len(w)] = w
            src[m: m + len(w)] = s[has]
            m += len(w)
    per_source = np.zeros(len(r.sources), np.int64)
    total = _count_distinct(form_hash(words[:m], 0), words[:m], src[:m], per_source)
    return {s: int(per_source[i]) for i, s in enumerate(r.sources)}, int(total)
