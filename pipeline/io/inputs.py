"""The inputs of a command: which files a pattern means, each opened and its shape decided.

`resolve` expands globs (local ones as fsspec does for URLs); `open_input` checks an input
and decides its shape from its first bytes (io/shape.py, or io/parquet.py by its magic
bytes). Inputs that can be read only once (standard input, a FIFO, a gzip file, an http URL)
are copied, decompressed, by `spill` and `spill_stream`, and planned as files; `read_whole`
reads an input in one pass from the start, for the commands that read a file in one
process (validate, solve -).
"""

from __future__ import annotations

import errno
import glob
import gzip
import os
import re
import tempfile
import zlib
from dataclasses import dataclass, field

from pipeline.errors import InputError, UsageError
from pipeline.io import records, storage
from pipeline.io import shape as shape_mod
from pipeline.io.ranges import Range
from pipeline.io.shape import Shape
from pipeline.io.storage import Location

GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class Input:
    """One input: where it is, how it is read, its shape and, once planned, its ranges."""

    index: int
    given: str  # as given or matched; may hold secrets (never written down)
    location: Location  # where workers read it (its spill, for an input read once)
    stream: str | None  # why it can be read only once: stdin, pipe, gzip, http
    shape: Shape
    head: bytes  # the first bytes, on which the shape was decided
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
                "layout": self.shape.describe()}

    @property
    def parquet(self) -> bool:
        return self.shape.kind == "parquet"

    @property
    def decided_after_spill(self) -> bool:
        """Whether the shape is decided on the spilled copy: a stream read once, or a
        Parquet file inside gzip (Parquet is read by its footer, at the end)."""
        from pipeline.io import parquet

        return self.stream in ("stdin", "pipe", "http") or (
            self.stream == "gzip" and self.head.startswith(parquet.MAGIC))


def as_text(name: str) -> str:
    """A path as text: bytes of a name that are not UTF-8 (surrogates, as os gives them)
    shown as \\xNN escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_name(shown: str) -> None:
    """InputError for a name that is not UTF-8: `source` could not hold it, nor Parquet
    write it."""
    text = as_text(shown)
    if text != shown:
        raise InputError(f"{text}: its name is not UTF-8 text, which a source must be "
                         "(rename it)")


def _shortest_ways(paths) -> list[str]:
    """Paths sorted, each file once by its shortest way (a folder reached again through a
    symbolic link under `**` names its files again, at more depth)."""
    best: dict[str, str] = {}
    for p in paths:
        key = os.path.realpath(p)
        if key not in best or (p.count(os.sep), p) < (best[key].count(os.sep), best[key]):
            best[key] = p
    return sorted(best.values())


def _loops(path: str) -> bool:
    """Whether a path goes through too many symbolic links to be resolved (a loop)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def resolve(patterns: list[str]) -> list[str]:
    """Expand globs (sorted; URLs too); a pattern that matches nothing is an input error.

    A glob means files, as fsspec's do, on local paths as at URLs: `**` is any depth of
    folders (none included), and the folders a pattern also matches are not inputs."""
    found: list[str] = []
    for pattern in patterns:
        if pattern == "-":
            found.append(pattern)
        elif _url_glob(pattern):
            loc = Location(pattern)
            proto = pattern.split("://", 1)[0]
            with storage.store_failures_as(InputError, loc.shown, "listed"):
                listed = loc.fs.glob(loc.path, detail=True)
            matches = sorted(p for p, info in listed.items()
                             if info.get("type") != "directory")
            if not matches:
                raise InputError(f"{loc.shown}: no file matches")
            found.extend(m if "://" in m else f"{proto}://{m}" for m in matches)
        elif not storage.is_url(pattern) and glob.has_magic(pattern):
            # (a symlink loop under `**` is followed until the path cannot be resolved:
            # that path names no file, and the files on the way are found once)
            matches = _shortest_ways(p for p in glob.glob(pattern, recursive=True)
                                     if not os.path.isdir(p) and not _loops(p))
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


def outside(inputs: list[str], folder: Location) -> tuple[list[str], list[str]]:
    """The inputs that are not inside `folder` (an output folder is never an input), and
    those that are."""
    keep, inside = [], []
    for given in inputs:
        (inside if given != "-" and storage.within(Location(given), folder) else keep
         ).append(given)
    return keep, inside


def _url_glob(pattern: str) -> bool:
    """A URL with a glob in its path (an http URL's '?' starts its query: never a glob)."""
    if not storage.is_url(pattern) or pattern.startswith(("http://", "https://")):
        return False
    return glob.has_magic(pattern.split("://", 1)[1])


# A process substitution's path, `<(zcat x.gz)`: its number says nothing of what it holds.
_DESCRIPTOR = re.compile(r"/(dev|proc/self|proc/\d+)/fd/\d+")


def stem(path: str) -> str:
    """A file's name without folder and suffixes ('data/x.csv.gz' -> 'x'); 'stdin' for
    standard input, 'pipe' for a process substitution (/dev/fd/N)."""
    if path == "-":
        return "stdin"
    if _DESCRIPTOR.fullmatch(path):
        return "pipe"
    name = os.path.basename(storage.redact(path).rstrip("/"))
    return name.split(".")[0] or name


def open_input(given: str, index: int, puzzle_column: str | None,
               solution_column: str | None, reserved: tuple[str, ...], stdin=None) -> Input:
    """An input checked and its shape decided; InputError when it cannot be used."""
    with storage.store_failures_as(InputError, storage.redact(given), "read"):
        return _open_input(given, index, puzzle_column, solution_column, reserved, stdin)


def _open_input(given: str, index: int, puzzle_column: str | None,
                solution_column: str | None, reserved: tuple[str, ...], stdin=None) -> Input:
    if given == "-":
        loc = Location("-")
        head = _read_upto(stdin, shape_mod.SNIFF_BYTES)
        return Input(index, given, loc, "stdin", _unknown_layout(), head,
                     columns=(puzzle_column, solution_column))
    loc = Location(given)
    shown = loc.shown
    check_name(shown)
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
        first = loc.read_at(0, shape_mod.SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{shown}: cannot be read ({storage.why(exc)})") from None
    from pipeline.io import parquet

    if first.startswith(parquet.MAGIC):
        shape = parquet.detect(loc, shown, puzzle_column, solution_column, reserved)
        return Input(index, given, loc, None, shape, b"",
                     columns=(puzzle_column, solution_column))
    stream = None
    if first.startswith(GZIP_MAGIC):
        stream = "gzip"
        with loc.open_stream() as raw:
            head, at_end = _gzip_head(raw, shown)
        if head.startswith(parquet.MAGIC):
            return Input(index, given, loc, stream, _unknown_layout(), head,
                         columns=(puzzle_column, solution_column))
    else:
        head, at_end = first, len(first) < shape_mod.SNIFF_BYTES
    shape = shape_mod.detect(head, shown, at_end, puzzle_column, solution_column, reserved)
    return Input(index, given, loc, stream, shape, head, columns=(puzzle_column, solution_column))


def detect_spilled(inp: Input) -> None:
    """Decide the shape of an input read once, on its copy's first bytes (a Parquet file's
    by its schema, as a file's)."""
    head = inp.location.read_at(0, shape_mod.SNIFF_BYTES)
    from pipeline.io import parquet

    if head.startswith(parquet.MAGIC):
        inp.shape = parquet.detect(inp.location, inp.source, *_columns(inp))
        inp.head = b""
        return
    inp.shape = shape_mod.detect(head, inp.source, len(head) < shape_mod.SNIFF_BYTES,
                                   *_columns(inp))
    inp.head = head


def _unknown_layout() -> Shape:
    return Shape("text")  # decided on the spilled copy's first bytes


def _gzip_head(raw, name: str) -> tuple[bytes, bool]:
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as z:
            head = _read_upto(z, shape_mod.SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{name}: cannot be decompressed ({exc})") from None
    return head, len(head) < shape_mod.SNIFF_BYTES


def _read_upto(f, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def read_whole(inp: Input, stdin=None, batch_rows: int = 50_000):
    """Every row of an input, in one pass from the start, as (first row, reader.Rows): for
    the commands that read a file in one process (validate, solve -)."""
    from pipeline.io import parquet, reader

    if inp.parquet:
        yield from _parquet_rows(inp.location, inp.shape)
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
        if inp.decided_after_spill:
            head = _read_upto(stream, shape_mod.SNIFF_BYTES)
            if head.startswith(parquet.MAGIC):
                yield from _parquet_copy(Replay(head, stream), inp)
                return
            inp.shape = shape_mod.detect(head, inp.source, len(head) < shape_mod.SNIFF_BYTES,
                                           *_columns(inp))
            stream = Replay(head, stream)
        _read_upto(stream, inp.shape.start)  # the BOM
        row = 0
        try:
            for rows in reader.iter_rows(stream.read, inp.shape.start, inp.shape):
                yield row, rows
                row += rows.n
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{inp.source}: read failed ({exc})") from None
    finally:
        if inp.stream != "stdin":
            raw.close()


def _parquet_rows(loc: Location, shape: Shape):
    from pipeline.io import parquet

    row = 0
    for rows in parquet.iter_whole(loc, shape):
        yield row, rows
        row += rows.n


def _parquet_copy(stream, inp: Input):
    """read_whole of a Parquet file read once (stdin, inside gzip): from a temporary copy,
    since Parquet is read from its footer, at the end."""
    from pipeline.io import parquet

    with tempfile.TemporaryDirectory() as folder:
        loc = Location(os.path.join(folder, "input.parquet"))
        spill(stream, loc, False, inp.source)
        inp.shape = parquet.detect(loc, inp.source, *_columns(inp))
        yield from _parquet_rows(loc, inp.shape)


def _columns(inp: Input) -> tuple:
    from pipeline.io import schema

    return inp.columns + (schema.OURS,)


def spill(source, dest: Location, gzipped: bool | None, name: str, rows: int = 0,
          shape: Shape | None = None) -> int:
    """Copy a stream (decompressing gzip; `gzipped` None: if it starts as gzip does) into
    `dest`, whole or, with `rows`, up to the end of its rows-th row (by `shape`'s rules);
    the copy's size. Runs where the bytes are."""
    if gzipped is None:
        gzipped, source = is_gzip_stream(source)
    src = _Reading(gzip.GzipFile(fileobj=source, mode="rb") if gzipped else source, name)

    def copy(f) -> None:  # a failed write is the store's: write_atomic says so, naming it
        if rows and shape is not None:
            _copy_rows(src, f, rows, shape)
            return
        while block := src.read(records.BLOCK):
            f.write(block)

    dest.write_atomic(copy)
    return dest.size()


class _Reading:
    """A stream whose read errors are the input's: InputError naming it (a copy's failed
    writes are not: they are the store's, and say so)."""

    def __init__(self, stream, name: str):
        self.stream, self.name = stream, name

    def read(self, n: int = -1) -> bytes:
        try:
            return self.stream.read(n)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # gzip cut short, or corrupt
            raise InputError(f"{self.name}: cannot be decompressed ({exc})") from None
        except OSError as exc:
            raise InputError(f"{self.name}: read failed ({exc})") from None


def spill_stream(raw, dest: Location, inp: Input, rows: int = 0) -> None:
    """Copy a stream only this process can read (stdin, a local pipe) into `dest`,
    decompressed; with `rows`, only up to its rows-th row."""
    from pipeline.io import parquet

    gz, replay = is_gzip_stream(raw)
    stream = _Reading(gzip.GzipFile(fileobj=replay, mode="rb") if gz else replay, inp.source)
    # Its first bytes judged before the rest is copied: a device of endless bytes
    # (/dev/zero) is refused there, not read to its end that never comes.
    head = _read_upto(stream, shape_mod.SNIFF_BYTES)
    shape = None
    if not head.startswith(parquet.MAGIC):  # (Parquet's rows: once it is whole)
        shape_mod.refuse_binary(head, inp.source)
        if rows:  # the rows are counted by the shape of the stream's first bytes
            shape = shape_mod.detect(head, inp.source, len(head) < shape_mod.SNIFF_BYTES,
                                     *_columns(inp))
    spill(Replay(head, stream), dest, False, inp.source, rows if shape is not None else 0,
          shape)


def _copy_rows(src, f, rows: int, shape: Shape) -> None:
    """Copy src to f up to the end of its rows-th row (f's extra bytes cut off after)."""
    f.write(_read_upto(src, shape.start))

    def read(n: int) -> bytes:
        block = src.read(n)
        f.write(block)
        return block

    kept = 0
    for batch in records.iter_batches(read, shape.start, 1 << 62, shape.rules()):
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
