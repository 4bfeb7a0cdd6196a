"""The plan: every input cut into byte ranges, each with its part number and first row.

A range owns the records that start inside it (as Hadoop's line splits own lines), so no
record is lost or read twice. Ranges have a fixed nominal size per input (`--chunk-size`
rows times the average record length in the file's first bytes); their exact bounds are
record starts, found by the planning tasks, one per range, run in parallel: each finds its
first record start, counts its rows with the reader's own rules (pipeline.io.records) and
hashes its bytes. They run on the workers; while the local pool is still starting (its
forkserver's imports take half a second), or the Dask client connecting, the parent runs
those of local files whose bytes are plain (`parent_piece`, with the compiled module only:
numba is never imported here).
With the workers ready (Dask) they go in a few `Batch`es per worker, since a round trip
through a scheduler costs more than a piece. The parent adds up the counts to number the
rows. A CSV in which quotes appear is planned by one task reading it from the start
instead, because a line end may be inside a quoted field and only a reading from the
start can tell.

Inputs that can be read only once (standard input, a FIFO, a gzip file, an http URL) are
first copied, decompressed, into the output folder's `.spill/` and planned as files.

The plan is the run's definition of its inputs: a rerun plans again with the recorded range
sizes and resumes only if every range hashes the same.
"""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from dataclasses import dataclass, field

from pipeline import compiled
from pipeline.errors import InputError, UsageError
from pipeline.io import records, storage
from pipeline.io import shape as layout_mod
from pipeline.io.shape import Layout
from pipeline.io.storage import Location

GZIP_MAGIC = b"\x1f\x8b"


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

    def as_list(self) -> list:
        return [self.input, self.part, self.start, self.end, self.first_row, self.rows,
                self.digest]


@dataclass
class Input:
    """One input: where it is, how it is read, its layout and, once planned, its ranges."""

    index: int
    given: str  # as given or matched; may hold secrets (never written down)
    location: Location  # where workers read it (its spill, for an input read once)
    stream: str | None  # why it can be read only once: stdin, pipe, gzip, http
    layout: Layout
    head: bytes  # the first bytes, on which the layout was decided
    columns: tuple = (None, None)  # the puzzle and solution columns asked for
    range_bytes: int = 0
    size: int = 0
    ranges: list[Range] = field(default_factory=list)

    @property
    def source(self) -> str:
        """The input as recorded in results, stats and logs (no secrets)."""
        return storage.redact(self.given)

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.ranges)

    def content_hash(self) -> str:
        """A hash of the input's content: of its ranges' bounds, counts and hashes."""
        h = records.hasher()
        for r in self.ranges:
            h.update(f"{r.start}:{r.end}:{r.rows}:{r.digest}\n".encode())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"path": self.source, "size": self.size, "stream": self.stream,
                "range_bytes": self.range_bytes, "content_hash": self.content_hash(),
                "layout": self.layout.describe()}

    @property
    def parquet(self) -> bool:
        return self.layout.kind == "parquet"


# ---------------------------------------------------------------------------------------
# Which inputs


def resolve(patterns: list[str]) -> list[str]:
    """Expand globs (sorted; URLs too); a pattern that matches nothing is an input error."""
    found: list[str] = []
    for pattern in patterns:
        if pattern == "-":
            found.append(pattern)
        elif _url_glob(pattern):
            loc = Location(pattern)
            proto = pattern.split("://", 1)[0]
            matches = sorted(loc.fs.glob(loc.path))
            if not matches:
                raise InputError(f"{loc.shown}: no file matches")
            found.extend(m if "://" in m else f"{proto}://{m}" for m in matches)
        elif not storage.is_url(pattern) and glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise InputError(f"{pattern}: no file matches")
            found.extend(matches)
        else:
            found.append(pattern)
    if not found:
        raise UsageError("no input given (--input PATH)")
    if found.count("-") > 1:
        raise UsageError("standard input (-) can be read only once")
    # A file named twice (by itself and by a glob, say) is one input, read once.
    seen: set[str] = set()
    unique = []
    for p in found:
        key = p if p == "-" or storage.is_url(p) else os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def _url_glob(pattern: str) -> bool:
    """A URL with a glob in its path (an http URL's '?' starts its query: never a glob)."""
    if not storage.is_url(pattern) or pattern.startswith(("http://", "https://")):
        return False
    return glob.has_magic(pattern.split("://", 1)[1])


def stem(path: str) -> str:
    """A file's name without folder and suffixes ('data/x.csv.gz' -> 'x')."""
    if path == "-":
        return "stdin"
    name = os.path.basename(storage.redact(path).rstrip("/"))
    return name.split(".")[0] or name


# ---------------------------------------------------------------------------------------
# Opening: the checks that give a clear no, then the layout from the first bytes


def open_input(given: str, index: int, puzzle_column: str | None,
               solution_column: str | None, reserved: tuple[str, ...], stdin=None) -> Input:
    """An input checked and its layout decided; InputError when it cannot be used."""
    if given == "-":
        loc = Location("-")
        head = _read_upto(stdin, layout_mod.SNIFF_BYTES)
        return Input(index, given, loc, "stdin", _unknown_layout(), head,
                     columns=(puzzle_column, solution_column))
    loc = Location(given)
    shown = loc.shown
    kind = loc.kind()
    if kind == "missing":
        raise InputError(f"{shown}: no such file")
    if kind == "folder":
        raise InputError(f"{shown}: is a folder, not a file")
    if kind == "stream":
        why_once = "http" if not loc.local else "pipe"
        return Input(index, given, loc, why_once, _unknown_layout(), b"",
                     columns=(puzzle_column, solution_column))
    try:
        first = loc.read_at(0, layout_mod.SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{shown}: cannot be read ({storage.why(exc)})") from None
    from pipeline.io import parquet

    if first.startswith(parquet.MAGIC):
        layout = parquet.detect(loc, shown, puzzle_column, solution_column, reserved)
        return Input(index, given, loc, None, layout, b"",
                     columns=(puzzle_column, solution_column))
    stream = None
    if first.startswith(GZIP_MAGIC):
        stream = "gzip"
        with loc.open_stream() as raw:
            head, at_end = _gzip_head(raw, shown)
    else:
        head, at_end = first, len(first) < layout_mod.SNIFF_BYTES
    layout = layout_mod.detect(head, shown, at_end, puzzle_column, solution_column, reserved)
    return Input(index, given, loc, stream, layout, head, columns=(puzzle_column, solution_column))


def detect_spilled(inp: Input) -> None:
    """Decide the layout of an input read once, on its copy's first bytes."""
    head = inp.location.read_at(0, layout_mod.SNIFF_BYTES)
    inp.layout = layout_mod.detect(head, inp.source, len(head) < layout_mod.SNIFF_BYTES,
                                   *_columns(inp))
    inp.head = head


def _unknown_layout() -> Layout:
    return Layout("text")  # decided on the spilled copy's first bytes


def _gzip_head(raw, name: str) -> tuple[bytes, bool]:
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as z:
            head = _read_upto(z, layout_mod.SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{name}: cannot be decompressed ({exc})") from None
    return head, len(head) < layout_mod.SNIFF_BYTES


def _read_upto(f, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def range_bytes(head: bytes, layout: Layout, chunk_size: int) -> int:
    """The nominal range size: about chunk_size records of the file's first bytes."""
    body = head[layout.start:]
    lines = max(1, body.count(b"\n") + body.count(b"\r") - body.count(b"\r\n"))
    mean = max(1.0, len(body) / lines)
    return max(64, int(chunk_size * mean))


def read_whole(inp: Input, stdin=None, batch_rows: int = 50_000):
    """Every row of an input, in one pass from the start, as (first row, reader.Rows): for
    the commands that read a file in one process (validate, solve -)."""
    from pipeline.io import reader

    if inp.parquet:
        from pipeline.io import parquet

        row = 0
        for rows in parquet.iter_whole(inp.location, inp.layout):
            yield row, rows
            row += rows.n
        return
    if inp.stream == "stdin":
        raw = Replay(inp.head, stdin)
    elif inp.location.local and inp.stream == "pipe":
        raw = open(inp.location.path, "rb")
    else:
        raw = inp.location.open_stream()
    try:
        gz, raw2 = is_gzip_stream(raw)
        stream = gzip.GzipFile(fileobj=raw2, mode="rb") if gz else raw2
        if inp.stream in ("stdin", "pipe", "http"):
            head = _read_upto(stream, layout_mod.SNIFF_BYTES)
            inp.layout = layout_mod.detect(head, inp.source, len(head) < layout_mod.SNIFF_BYTES,
                                           *_columns(inp))
            stream = Replay(head, stream)
        _read_upto(stream, inp.layout.start)  # the BOM
        row = 0
        try:
            for rows in reader.iter_rows(stream.read, inp.layout.start, inp.layout):
                yield row, rows
                row += rows.n
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{inp.source}: read failed ({exc})") from None
    finally:
        if inp.stream != "stdin":
            raw.close()


def _columns(inp: Input) -> tuple:
    from pipeline.io import schema

    return inp.columns + (schema.OURS,)


# ---------------------------------------------------------------------------------------
# Spilling an input that can be read only once


def spill(source, dest: Location, gzipped: bool, name: str, rows: int = 0,
          layout: Layout | None = None) -> int:
    """Copy a stream (decompressing gzip) into `dest`, whole or, with `rows`, up to the end of
    its rows-th row (by `layout`'s rules); the copy's size. Runs where the bytes are."""
    def copy(f) -> None:
        src = gzip.GzipFile(fileobj=source, mode="rb") if gzipped else source
        try:
            if rows and layout is not None:
                _copy_rows(src, f, rows, layout)
                return
            while block := src.read(records.BLOCK):
                f.write(block)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{name}: read failed ({exc})") from None

    dest.write_atomic(copy)
    return dest.size()


def spill_stream(raw, dest: Location, inp: Input, rows: int = 0) -> None:
    """Copy a stream only this process can read (stdin, a local pipe) into `dest`,
    decompressed; with `rows`, only up to its rows-th row."""
    gz, replay = is_gzip_stream(raw)
    stream = gzip.GzipFile(fileobj=replay, mode="rb") if gz else replay
    lay = None
    if rows:  # the rows are counted by the layout of the stream's first bytes
        head = _read_upto(stream, layout_mod.SNIFF_BYTES)
        lay = layout_mod.detect(head, inp.source, len(head) < layout_mod.SNIFF_BYTES,
                                *_columns(inp))
        stream = Replay(head, stream)
    spill(stream, dest, False, inp.source, rows, lay)


def _copy_rows(src, f, rows: int, layout: Layout) -> None:
    """Copy src to f up to the end of its rows-th row (f's extra bytes cut off after)."""
    f.write(_read_upto(src, layout.start))

    def read(n: int) -> bytes:
        block = src.read(n)
        f.write(block)
        return block

    kept = 0
    for batch in records.iter_batches(read, layout.start, 1 << 62, layout.rules()):
        idx = batch.rows()
        if kept + len(idx) >= rows:
            j = int(idx[rows - kept - 1])
            cut = (batch.base + int(batch.starts[j + 1]) if j + 1 < len(batch.starts)
                   else batch.next_start)
            f.seek(cut)
            f.truncate()
            return
        kept += len(idx)


def is_gzip_stream(stream) -> tuple[bool, object]:
    """Whether a stream starts with gzip's magic; and the stream with those bytes replayed."""
    first = _read_upto(stream, 2)
    return first == GZIP_MAGIC, Replay(first, stream)


class Replay:
    """A stream with its first bytes put back."""

    def __init__(self, head: bytes, rest):
        self._head = head
        self._rest = rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n < 0:
                out, self._head = self._head + self._rest.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._rest.read(n)

    def readable(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------
# Planning tasks (they run on the workers) and putting their answers together


@dataclass(frozen=True)
class Piece:
    """A planning task: find, count and hash the records of nominal range k of an input."""

    input: int
    location: Location
    layout: Layout
    start: int  # the nominal start (a record start for the first range)
    stop: int
    first: bool


@dataclass(frozen=True)
class Sweep:
    """A planning task for an input that must be read from the start (a CSV with quotes)."""

    input: int
    location: Location
    layout: Layout
    range_bytes: int


@dataclass(frozen=True)
class Span:
    """A planning task for a range of a Parquet file: hash its bytes (its rows are known
    from the file's footer)."""

    input: int
    location: Location
    start: int
    end: int
    rows: int


def hash_span(task: Span) -> Cut:
    from pipeline.io import parquet

    sha = parquet.span_digest(task.location, task.start, task.end)
    return Cut(task.start, records.Scan(task.end, task.rows, sha, False))


BATCHES_PER_WORKER = 2


def run_planning(executor, tasks: list) -> list:
    """Every planning task's result, in order. While the local pool starts, task by task,
    this process taking some (parent_piece); with workers ready, a few Batches per worker."""
    from pipeline.job import schedule
    from pipeline.job.tasks import Batch

    if executor.warming() or len(tasks) <= executor.workers:
        return schedule.run_all(executor, tasks, helper=parent_piece)
    size = -(-len(tasks) // (executor.workers * BATCHES_PER_WORKER))
    batches = [Batch(tuple(tasks[i:i + size])) for i in range(0, len(tasks), size)]
    return [r for done in schedule.run_all(executor, batches) for r in done]


@dataclass(frozen=True)
class Cut:
    """What planning found for one nominal range."""

    start: int
    scan: records.Scan


def scan_piece(task: Piece, plain_only: bool = False) -> Cut | None:
    """Run a Piece: the range's exact first record start, its rows, hash and next start.
    With `plain_only`, None unless its bytes are plain (records.plain_lines)."""
    loc = task.location
    start = task.start if task.first else records.first_start(loc.read_at, task.start)
    if start >= task.stop and not task.first:
        return Cut(start, records.Scan(start, 0, "", False))
    with loc.span(start) as read:
        scan = records.count(read, start, task.stop, task.layout.rules(),
                             plain_only=plain_only)
    return None if scan is None else Cut(start, scan)


def parent_piece(task) -> Cut | None:
    """A planning task this process can run while the workers start: a Piece of a local
    file whose bytes are plain (no row kept), with the compiled module loaded (without it,
    counting lines would import numba here); None otherwise, and on any read error, which
    the worker that runs it then reports."""
    if not isinstance(task, Piece) or not task.location.local or compiled.loaded() is None:
        return None
    try:
        return scan_piece(task, plain_only=True)
    except OSError:
        return None


def sweep(task: Sweep) -> list[Cut]:
    """Run a Sweep: every nominal range of the input, read once from the start."""
    loc, lay = task.location, task.layout
    size = loc.size()
    cuts = []
    start = lay.start
    k = 1
    with loc.span(start) as read:
        stream = records.Pushback(read)
        while start < size:
            stop = lay.start + k * task.range_bytes
            k += 1
            if stop <= start:
                continue  # a record longer than the range started before it
            scan = records.count(stream.read, start, stop, lay.rules(), stream)
            cuts.append(Cut(start, scan))
            start = scan.next_start
    return cuts


def pieces(inp: Input, size: int) -> list[Piece]:
    """The planning tasks of an input of `size` bytes."""
    lay, step = inp.layout, inp.range_bytes
    out = []
    k, start = 0, lay.start
    while start < size or k == 0:
        out.append(Piece(inp.index, inp.location, lay, start, start + step, k == 0))
        k += 1
        start += step
    return out


def ranges_from_cuts(inp: Input, cuts: list[Cut], first_part: int) -> list[Range]:
    """Ranges numbered from `first_part`, empty ones dropped, rows numbered in order."""
    out = []
    row = 0
    part = first_part
    for cut in cuts:
        if cut.scan.next_start <= cut.start:
            continue
        out.append(Range(inp.index, part, cut.start, cut.scan.next_start, row, cut.scan.rows,
                         cut.scan.digest))
        row += cut.scan.rows
        part += 1
    return out


def consistent(cuts: list[Cut], lay: Layout, size: int) -> bool:
    """Each range ends where the next begins, from the first record to the end, and (in a
    CSV) no quote could have hidden a line end from the pieces' line-by-line cutting."""
    if lay.kind == "csv" and any(c.scan.quotes for c in cuts):
        return False
    full = [c for c in cuts if c.scan.next_start > c.start]
    if not full:
        return size <= lay.start or all(c.scan.next_start >= size for c in cuts)
    return (full[0].start == lay.start and full[-1].scan.next_start == size
            and all(a.scan.next_start == b.start for a, b in zip(full, full[1:], strict=False)))


def plan_inputs(inputs: list[Input], executor, chunk_size: int, manifest: dict | None = None
                ) -> None:
    """Cut every input into ranges (the planning tasks run on the executor's workers) and
    number the parts and rows. A range size recorded in `manifest` for the same input and
    layout is kept, so that a rerun plans the same ranges whatever its chunk size."""
    from pipeline.job import schedule

    recorded = {}
    for entry in ((manifest or {}).get("definition") or {}).get("inputs", []):
        recorded[entry.get("path")] = entry
    tasks, owners = [], []
    for inp in inputs:
        inp.size = inp.location.size()
        earlier = recorded.get(inp.source)
        if earlier and earlier.get("layout") == inp.layout.describe() \
                and earlier.get("range_bytes"):
            inp.range_bytes = int(earlier["range_bytes"])
        else:  # a Parquet file's ranges are counted in rows: its row groups
            inp.range_bytes = chunk_size if inp.parquet else range_bytes(
                inp.head, inp.layout, chunk_size)
        if inp.parquet:  # row groups, counted by the footer: only their bytes to hash
            from pipeline.io import parquet

            spans = parquet.spans(inp.location, inp.range_bytes)
            tasks.extend(Span(inp.index, inp.location, a, b, n) for a, b, n in spans)
            owners.extend((inp, k) for k in range(len(spans)))
        elif inp.layout.quoted:
            tasks.append(Sweep(inp.index, inp.location, inp.layout, inp.range_bytes))
            owners.append((inp, None))
        else:
            these = pieces(inp, inp.size)
            tasks.extend(these)
            owners.extend((inp, k) for k in range(len(these)))
    results = run_planning(executor, tasks) if tasks else []
    cuts: dict[int, list] = {i.index: [] for i in inputs}
    for (inp, k), result in zip(owners, results, strict=True):
        if k is None:
            cuts[inp.index] = result
        else:
            cuts[inp.index].append(result)
    redo = [inp for inp in inputs if not inp.layout.quoted and not inp.parquet
            and not consistent(cuts[inp.index], inp.layout, inp.size)]
    if redo:  # quotes seen: only a reading from the start can tell where records end
        swept = schedule.run_all(executor, [Sweep(i.index, i.location, i.layout, i.range_bytes)
                                            for i in redo])
        for inp, result in zip(redo, swept, strict=True):
            cuts[inp.index] = result
    part = 0
    for inp in inputs:
        inp.ranges = ranges_from_cuts(inp, cuts[inp.index], part)
        part += len(inp.ranges)
