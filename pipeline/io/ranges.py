"""Ranges: the unit of work. A range is the records of one input starting in [start, end).

A range owns the records that start inside it (as Hadoop's line splits own lines), so no
record is lost or read twice; one range is one Solve task and one part, except that the
ranges of small inputs share one (`share_parts`: a hundred thousand files of three rows are
not a hundred thousand parts). Its exact bounds
are record starts, found by the planning tasks below, which run on the workers (and in the
parent while they start): each finds its first record start, counts its rows with the
reader's own rules (io/records.py) and hashes its bytes. How an input is cut into nominal
ranges, and the answers put together, is the job's plan (job/plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pipeline import compiled
from pipeline.io import records
from pipeline.io.shape import Shape
from pipeline.io.storage import Location


@dataclass(frozen=True)
class Range:
    """The records of one input starting in [start, end): one task, one part."""

    input: int
    part: int
    start: int
    end: int
    first_row: int
    rows: int
    digest: str  # of its bytes (records.hasher)
    # Parquet: rows of the row groups in [start, end) before this range's first (a row
    # group of more than --chunk-size rows is several ranges, over the same bytes)
    skip: int = 0

    def as_list(self) -> list:
        out = [self.input, self.part, self.start, self.end, self.first_row, self.rows,
               self.digest]
        return [*out, self.skip] if self.skip else out


def share_parts(groups: list[tuple[object, list[Range]]], chunk_size: int) -> list[Range]:
    """The ranges numbered by part: each its own, except that consecutive inputs of one
    range each and of the same `key` (their columns) share a part while their rows add up
    to at most chunk_size and they number at most MAX_SHARED. `groups` is (key, ranges) by
    input, in order; a key of None never shares."""
    out: list[Range] = []
    part, rows, members, last = -1, 0, 0, None
    for key, ranges in groups:
        if not ranges:  # an empty input: no part, and no reason to end the sharing
            continue
        small = key is not None and len(ranges) == 1 and ranges[0].rows < chunk_size
        if small and key == last and rows + ranges[0].rows <= chunk_size \
                and members < MAX_SHARED:
            rows += ranges[0].rows
            members += 1
            out.append(replace(ranges[0], part=part))
            continue
        for r in ranges:
            part += 1
            out.append(replace(r, part=part))
        last = key if small else None
        rows, members = (ranges[0].rows, 1) if small else (0, 0)
    return out


MAX_SHARED = 1024  # inputs in one part at most: each is opened and hashed by its task


def by_part(ranges: list[Range]) -> dict[int, list[Range]]:
    """The ranges of each part, in order."""
    out: dict[int, list[Range]] = {}
    for r in ranges:
        out.setdefault(r.part, []).append(r)
    return out


def whole(members: list[Range]) -> Range:
    """The range a part's footer records: its one range, or for a shared part its first
    input's, with the rows of all and a digest of their digests."""
    if len(members) == 1:
        return members[0]
    sha = records.hasher()
    for r in members:
        sha.update(f"{r.input}:{r.digest};".encode())
    first = members[0]
    return replace(first, rows=sum(r.rows for r in members),
                   digest=sha.hexdigest())


def footers(ranges: list[Range]) -> dict[int, tuple[int, str]]:
    """{part: (rows, digest)} as the parts' footers must say."""
    out = {}
    for part, members in by_part(ranges).items():
        w = whole(members)
        out[part] = (w.rows, w.digest)
    return out


@dataclass(frozen=True)
class FindRange:
    """A planning task: find, count and hash the records of nominal range k of an input."""

    input: int
    location: Location
    shape: Shape
    start: int  # the nominal start (a record start for the first range)
    stop: int
    first: bool


@dataclass(frozen=True)
class ScanInput:
    """A planning task for an input that must be read from the start (a CSV with quotes)."""

    input: int
    location: Location
    shape: Shape
    range_bytes: int


@dataclass(frozen=True)
class HashRange:
    """A planning task for a range of a Parquet file: hash its bytes (its rows are known
    from the file's footer)."""

    input: int
    location: Location
    start: int
    end: int
    rows: int
    skip: int = 0  # a piece of a row group: rows of it before this range's


def hash_range(task: HashRange) -> Found:
    from pipeline.io import parquet

    sha = parquet.range_digest(task.location, task.start, task.end)
    return Found(task.start, records.Scan(task.end, task.rows, sha, False), task.skip)


@dataclass(frozen=True)
class Found:
    """What planning found for one nominal range."""

    start: int
    scan: records.Scan
    skip: int = 0  # Parquet: rows of its bytes' row groups before its first


def find_range(task: FindRange, plain_only: bool = False) -> Found | None:
    """Run a FindRange: the range's exact first record start, its rows, hash and next start.
    With `plain_only`, None unless its bytes are plain (records.plain_lines)."""
    loc = task.location
    start = task.start if task.first else records.first_start(loc.read_at, task.start)
    if start >= task.stop and not task.first:
        return Found(start, records.Scan(start, 0, "", False))
    with loc.reader(start) as read:
        scan = records.count(read, start, task.stop, task.shape.rules(),
                             plain_only=plain_only)
    return None if scan is None else Found(start, scan)


def find_in_parent(task) -> Found | None:
    """A planning task this process can run while the workers start: a FindRange of a local
    file whose bytes are plain (no row kept), with the compiled module loaded (without it,
    counting lines would import numba here); None otherwise, and on any read error, which
    the worker that runs it then reports."""
    if not isinstance(task, FindRange) or not task.location.local or compiled.loaded() is None:
        return None
    try:
        return find_range(task, plain_only=True)
    except OSError:
        return None


def scan_input(task: ScanInput) -> list[Found]:
    """Run a ScanInput: every nominal range of the input, read once from the start."""
    loc, shape = task.location, task.shape
    size = loc.size()
    cuts = []
    start = shape.start
    k = 1
    with loc.reader(start) as read:
        stream = records.Pushback(read)
        while start < size:
            stop = shape.start + k * task.range_bytes
            k += 1
            if stop <= start:
                continue  # a record longer than the range started before it
            scan = records.count(stream.read, start, stop, shape.rules(), stream)
            cuts.append(Found(start, scan))
            start = scan.next_start
    return cuts
