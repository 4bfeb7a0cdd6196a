"""Input files -> chunks of rows: every shape people have, read defensively and streamed.

A file is read in blocks of bytes (plain or gzip, any size: memory stays flat) and cut into
lines with numpy; polars then splits lines into fields for a whole block at once. We do not
hand the file to a CSV parser because one ragged line, a broken quote or a stray byte would
abort the stream or be silently truncated: here each becomes a `malformed` row instead.

What is a row: in a CSV, each non-blank record after the header; in a text file, each puzzle
line. Blank lines, `#` comment lines (text files), a leading count line and a free-text
first line are not rows. Rows count from 0 per file.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.errors import InputError

BLOCK_BYTES = 8 << 20  # bytes read at a time
MAX_LINE = 1 << 20  # a longer line is one malformed row, its text kept truncated
KEEP_OF_LONG_LINE = 200  # characters of an over-long line kept in `puzzle`
SNIFF_BYTES = 64 << 10  # how much of a file decides its shape
PUZZLE_NAMES = ("puzzle", "puzzles", "quizzes", "quiz", "grid", "board", "sudoku")
SOLUTION_NAMES = ("solution", "solutions")
# Our own result columns; an input column of the same name is carried as input_<name>.
RESULT_COLUMNS = ("source", "row", "puzzle", "status", "solution", "n_solutions", "guesses",
                  "reason", "expected_match", "expected_solution", "solve_us", "grade")

_PUZZLE_RE = re.compile(r"^[0-9.]{81}$")
_COUNT_RE = re.compile(r"^\d{1,9}$")
_BOM = b"\xef\xbb\xbf"


def looks_like_puzzle(text: str | None) -> bool:
    """True for 81 characters of digits and dots (surrounding whitespace aside)."""
    return text is not None and bool(_PUZZLE_RE.match(text.strip()))


@dataclass(frozen=True)
class Layout:
    """Where the rows and their fields are in a file."""

    kind: str  # "csv", "text" (a puzzle a line) or "fixed" (whitespace-separated records)
    n_fields: int = 1  # fields (csv) or tokens (fixed) per record
    puzzle_field: int = 0
    solution_field: int | None = None
    header: bool = False  # csv: the first record names the columns
    skip_first: bool = False  # text/fixed: the first line is a count or a title
    carried: tuple[tuple[int, str], ...] = ()  # other csv fields kept: (index, column name)
    columns: tuple[str, ...] = ()  # csv: every column name (header or column_N)

    def describe(self) -> dict:
        return {
            "kind": self.kind, "n_fields": self.n_fields, "puzzle_field": self.puzzle_field,
            "solution_field": self.solution_field, "header": self.header,
            "skip_first": self.skip_first, "columns": list(self.columns),
        }


@dataclass
class Chunk:
    """A run of rows from one input, ready to ship to a worker (numpy) and to write (polars)."""

    source: str  # the input path as given or matched
    source_index: int
    frame: pl.DataFrame  # row, puzzle (as read), carried columns, expected_solution
    reasons: dict[int, str] = field(default_factory=dict)  # rows the reader found malformed

    def __len__(self) -> int:
        return self.frame.height

    @property
    def rows(self) -> np.ndarray:
        return self.frame["row"].to_numpy()

    def puzzle_buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The puzzle column as Arrow-style (offsets, bytes) numpy arrays."""
        return string_buffers(self.frame["puzzle"])

    def expected_buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The expected-solution column as (offsets, bytes, present), or None."""
        if "expected_solution" not in self.frame.columns:
            return None
        col = self.frame["expected_solution"]
        present = (col.is_not_null() & (col.str.strip_chars() != "")).fill_null(False)
        return (*string_buffers(col), present.to_numpy())

    def subset(self, keep: np.ndarray) -> Chunk:
        """The chunk restricted to the rows where `keep` is True."""
        where = np.flatnonzero(keep)
        new_index = {int(old): new for new, old in enumerate(where)}
        reasons = {new_index[i]: why for i, why in self.reasons.items() if i in new_index}
        return Chunk(self.source, self.source_index, self.frame[where], reasons)


def string_buffers(col: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A String series as Arrow-style (offsets, bytes); nulls are empty strings."""
    arr = col.fill_null("").to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


# ---------------------------------------------------------------------------------------
# Opening a file: checks that give a clear no, then the layout from a sample.


class Source:
    """One input: its path, how to open it, its layout."""

    def __init__(self, given: str, index: int, puzzle_column: str | None = None,
                 solution_column: str | None = None):
        self.given = given
        self.index = index
        self.is_stdin = given == "-"
        self.path = None if self.is_stdin else Path(given)
        self._stdin_head: bytes | None = None
        self._digest: str | None = None
        self.size: int | None = None
        if not self.is_stdin:
            self._check_file()
        head = self._read_head()
        self.layout = detect_layout(head, given, puzzle_column, solution_column)

    def _check_file(self) -> None:
        path = self.path
        if not path.exists():
            raise InputError(f"{self.given}: no such file")
        if path.is_dir():
            raise InputError(f"{self.given}: is a folder, not a file")
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise InputError(f"{self.given}: cannot be read ({exc.strerror or exc})") from None
        self.size = path.stat().st_size

    def _open_raw(self):
        if self.is_stdin:
            return sys.stdin.buffer
        f = open(self.path, "rb")
        magic = f.read(2)
        f.seek(0)
        if magic == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=f, mode="rb")
        return f

    def _read_head(self) -> bytes:
        """The first SNIFF_BYTES of the decompressed content."""
        if self.is_stdin:
            self._stdin_head = _read_upto(sys.stdin.buffer, SNIFF_BYTES)
            return self._stdin_head
        with self._open_raw() as f:
            try:
                return _read_upto(f, SNIFF_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"{self.given}: cannot be decompressed ({exc})") from None

    def sha256(self) -> str:
        """The content hash of the file as stored (for stdin: known once it was read)."""
        if self._digest is None and not self.is_stdin:
            h = hashlib.sha256()
            with open(self.path, "rb") as f:
                while block := f.read(BLOCK_BYTES):
                    h.update(block)
            self._digest = h.hexdigest()
        return self._digest or ""

    def describe(self) -> dict:
        return {"path": self.given, "size": self.size, "sha256": self.sha256(),
                "layout": self.layout.describe()}

    def chunks(self, chunk_size: int, skip: np.ndarray | None = None) -> Iterator[Chunk]:
        """The file's rows in chunks of at most `chunk_size`, minus rows marked in `skip`."""
        reader = _RowReader(self.layout)
        for block, long in self._blocks():
            for chunk in reader.rows(block, long, self.given, self.index, chunk_size):
                if skip is not None:
                    rows = chunk.rows
                    done = np.zeros(len(rows), dtype=bool)
                    inside = rows < len(skip)
                    done[inside] = skip[rows[inside]]
                    if done.all():
                        continue
                    if done.any():
                        chunk = chunk.subset(~done)
                yield chunk

    def _blocks(self) -> Iterator[tuple[bytes, dict[int, int]]]:
        hasher = hashlib.sha256() if self.is_stdin else None
        if self.is_stdin:
            stream = _Prefixed(self._stdin_head or b"", sys.stdin.buffer, hasher)
            if hasher is not None:
                hasher.update(self._stdin_head or b"")
            self.size = 0
        else:
            stream = self._open_raw()
        try:
            yield from _line_blocks(stream)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{self.given}: read failed ({exc})") from None
        finally:
            if not self.is_stdin:
                stream.close()
        if hasher is not None:
            self._digest = hasher.hexdigest()
            self.size = stream.total


def _read_upto(f, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


class _Prefixed(io.RawIOBase):
    """A stream that replays an already-read head, then goes on with the rest."""

    def __init__(self, head: bytes, rest, hasher):
        self._head = head
        self._rest = rest
        self._hasher = hasher
        self.total = len(head)

    def read(self, n: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        b = self._rest.read(n)
        if b and self._hasher is not None:
            self._hasher.update(b)
        self.total += len(b or b"")
        return b


def detect_layout(head: bytes, name: str, puzzle_column: str | None = None,
                  solution_column: str | None = None) -> Layout:
    """Decide a file's layout from its first bytes; InputError when it is unusable."""
    if b"\x00" in head:
        at = head.index(b"\x00")
        raise InputError(f"{name}: not a text file (NUL byte at offset {at})")
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    text = head.decode("utf-8", "replace")
    if head and text.count("\ufffd") * 2 > len(head):
        raise InputError(f"{name}: not a text file (most of its first bytes are not UTF-8)")
    lines = text.splitlines()
    if len(head) >= SNIFF_BYTES - len(_BOM) and lines:
        lines = lines[:-1]  # the last line may be cut
    content = [ln for ln in lines if ln.strip()]
    commas = sum("," in ln for ln in content[:50])
    # A one-column CSV has no commas: its header is a puzzle column's name alone.
    named = bool(content) and content[0].strip().strip('"').lower() in PUZZLE_NAMES
    if puzzle_column is not None or named or (
            content and commas * 2 > min(len(content), 50)):
        return _csv_layout(content, name, puzzle_column, solution_column)
    content = [ln for ln in content if not ln.lstrip().startswith("#")]
    if not content:
        return Layout("text")
    first = content[0].strip()
    skip_first = _is_title(first)
    sample = content[1] if skip_first and len(content) > 1 else first
    tokens = sample.split()
    if len(tokens) > 1:
        hits = [i for i, t in enumerate(tokens) if looks_like_puzzle(t)]
        if hits:
            return Layout("fixed", n_fields=len(tokens), puzzle_field=hits[0],
                          skip_first=skip_first)
    return Layout("text", skip_first=skip_first)


def _is_title(line: str) -> bool:
    """A leading count line ('95') or a line of words, not a puzzle."""
    if _COUNT_RE.match(line):
        return True
    tokens = line.split()
    return (len(tokens) >= 2 and not any(looks_like_puzzle(t) for t in tokens)
            and any(any(ch.isalpha() for ch in t) for t in tokens))


def _csv_layout(content: list[str], name: str, puzzle_column: str | None,
                solution_column: str | None) -> Layout:
    if not content:
        if puzzle_column is not None:
            raise InputError(f"{name}: empty, no column '{puzzle_column}'")
        return Layout("csv", columns=("puzzle",))
    records = list(csv.reader(content[:50]))
    first = records[0]
    header = not any(looks_like_puzzle(f) or _digits_only(f) for f in first)
    if header:
        names = [f.strip() for f in first]
        data = records[1:]
    else:
        names = [f"column_{i + 1}" for i in range(len(first))]
        data = records
    lowered = [n.lower() for n in names]

    def find(wanted: str | None, defaults: tuple[str, ...], what: str) -> int | None:
        if wanted is not None:
            if wanted in names:
                return names.index(wanted)
            if wanted.lower() in lowered:
                return lowered.index(wanted.lower())
            raise InputError(f"{name}: no {what} column '{wanted}' (columns: {', '.join(names)})")
        for d in defaults:
            if d in lowered:
                return lowered.index(d)
        return None

    puzzle = find(puzzle_column, PUZZLE_NAMES, "puzzle")
    if puzzle is None:
        puzzle = next((i for i in range(len(names))
                       if any(i < len(r) and looks_like_puzzle(r[i]) for r in data)), None)
        if puzzle is None and not data:
            puzzle = 0
        if puzzle is None:
            raise InputError(
                f"{name}: no puzzle column found (none is named {'/'.join(PUZZLE_NAMES[:6])} "
                f"and none holds 81-character puzzles; columns: {', '.join(names)})")
    solution = find(solution_column, SOLUTION_NAMES, "solution")
    if solution is None and not header:
        solution = next((i for i in range(len(names)) if i != puzzle and data
                         and all(i < len(r) and looks_like_puzzle(r[i]) and "0" not in r[i]
                                 and "." not in r[i] for r in data[:5])), None)
    if solution == puzzle:
        solution = None
    carried = []
    for i, n in enumerate(names):
        if i in (puzzle, solution):
            continue
        out = f"input_{n}" if n in RESULT_COLUMNS else n
        carried.append((i, out or f"column_{i + 1}"))
    return Layout("csv", n_fields=len(names), puzzle_field=puzzle, solution_field=solution,
                  header=header, carried=tuple(carried), columns=tuple(names))


def _digits_only(text: str) -> bool:
    t = text.strip()
    return len(t) >= 17 and all(ch in "0123456789." for ch in t)


# ---------------------------------------------------------------------------------------
# Bytes -> lines (numpy) -> rows and fields (polars).


@dataclass
class _Lines:
    """A block of whole lines: a String series (null = not UTF-8) and over-long lines."""

    text: pl.Series
    long: dict[int, int]  # line index -> its length in bytes, for lines over MAX_LINE
    not_utf8: list[int] = field(default_factory=list)  # lines kept with U+FFFD for bad bytes


def _line_blocks(stream) -> Iterator[tuple[bytes, dict[int, int]]]:
    """Cut a byte stream into blocks of whole lines; never hold more than a block and a line."""
    carry = b""
    long_head: bytes | None = None  # the start of an over-long line we are skipping through
    long_len = 0
    first = True
    while True:
        block = stream.read(BLOCK_BYTES)
        if first:
            first = False
            if block.startswith(_BOM):
                block = block[len(_BOM):]
        if long_head is not None:
            nl = block.find(b"\n")
            if block and nl < 0:
                long_len += len(block)
                continue
            long_len += nl if nl >= 0 else 0
            yield long_head + b"\n", {0: long_len}
            long_head = None
            block = block[nl + 1:] if nl >= 0 else b""
            if not block:
                continue
        if not block:
            if carry:
                yield carry + b"\n", {}
            return
        data = carry + block
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
        else:
            yield data[: cut + 1], {}
            carry = data[cut + 1:]
        if len(carry) > MAX_LINE:
            long_head, long_len, carry = carry[: 4 * KEEP_OF_LONG_LINE], len(carry), b""


def _lines_of(buf: bytes, long: dict[int, int]) -> _Lines:
    """Split a buffer of whole lines (each ending in \\n) into a String series."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)
    n = len(ends)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = ends + 1
    lengths = np.diff(offsets) - 1
    valid = np.ones(n, dtype=bool)
    high = arr >= 0x80
    if high.any():
        # Only lines with non-ASCII bytes need a real UTF-8 check.
        for i in np.flatnonzero(_per_line(np.flatnonzero(high), ends)).tolist():
            try:
                buf[offsets[i] : offsets[i + 1]].decode("utf-8")
            except UnicodeDecodeError:
                valid[i] = False
    for i in np.flatnonzero(lengths > MAX_LINE).tolist():
        long[i] = int(lengths[i])
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arrow = pa.Array.from_buffers(pa.large_string(), n,
                                  [validity, pa.py_buffer(offsets), pa.py_buffer(buf)])
    text = pl.Series("line", arrow).str.strip_chars_end("\r\n")
    not_utf8 = np.flatnonzero(~valid).tolist()
    if not_utf8:
        # Keep such a line "as read" as far as text can: bad bytes become U+FFFD.
        lossy = [buf[offsets[i] : offsets[i + 1]].decode("utf-8", "replace").rstrip("\r\n")
                 for i in not_utf8]
        text = text.scatter(pl.Series(not_utf8, dtype=pl.UInt32), pl.Series(lossy))
    if long:
        idx = pl.Series(list(long), dtype=pl.UInt32)
        cut = text.gather(idx).str.slice(0, KEEP_OF_LONG_LINE)
        text = text.scatter(idx, cut)
    return _Lines(text, long, not_utf8)


def _per_line(positions: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many of the byte positions fall in each line (lines end at `ends`)."""
    return np.bincount(np.searchsorted(ends, positions), minlength=len(ends))[: len(ends)]


class _RowReader:
    """Turns blocks of lines into chunks of rows, keeping count across blocks."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.next_row = 0
        self.before_first = layout.header or layout.skip_first

    def rows(self, buf: bytes, long: dict[int, int], source: str, index: int,
             chunk_size: int) -> Iterator[Chunk]:
        """The rows of a block of whole lines, cut into chunks."""
        frame = None if long else self._clean_block(buf)
        reasons: dict[int, str] = {}
        if frame is None:
            frame, reasons = self._careful(_lines_of(buf, long))
        if frame is None or frame.height == 0:
            return
        n = frame.height
        frame = frame.with_columns(
            pl.Series("row", np.arange(self.next_row, self.next_row + n, dtype=np.int64)))
        self.next_row += n
        ordered = ["row", "puzzle", *[c for _, c in self.layout.carried]]
        if "expected_solution" in frame.columns:
            ordered.append("expected_solution")
        frame = frame.select(ordered)
        for start in range(0, n, chunk_size):
            part = frame.slice(start, chunk_size)
            part_reasons = {i - start: r for i, r in reasons.items()
                            if start <= i < start + chunk_size}
            yield Chunk(source, index, part, part_reasons)

    def _careful(self, lines: _Lines) -> tuple[pl.DataFrame | None, dict[int, str]]:
        """Rows and fields of any block, line by line in spirit (vectorised where it can)."""
        text = lines.text
        stripped = text.str.strip_chars()
        keep = (stripped != "").fill_null(True)  # a line that is not UTF-8 is still a row
        if self.layout.kind != "csv":
            keep &= ~stripped.str.starts_with("#").fill_null(False)
        where = np.flatnonzero(keep.to_numpy())
        if self.before_first and len(where):
            where = where[1:]  # the header, count or title line
            self.before_first = False
        if not len(where):
            return None, {}
        return self._fields(text, where, lines.long, lines.not_utf8)

    def _clean_block(self, buf: bytes) -> pl.DataFrame | None:
        """The fast path: a block with nothing unusual is handed to polars' CSV parser.

        Nothing unusual: ASCII only, no quotes, no CR, no blank, comment or over-long lines,
        and (csv) every line with exactly the expected number of fields. Anything else
        goes the careful way, so no odd line is ever parsed silently.
        """
        lay = self.layout
        if lay.kind == "fixed":
            return None
        arr = np.frombuffer(buf, dtype=np.uint8)
        if self.before_first:
            first_end = buf.find(b"\n")
            head = buf[:first_end].strip() if first_end >= 0 else b""
            if not head or (lay.kind != "csv" and head.startswith(b"#")):
                return None  # blank or comment lines first: let the careful path judge
            arr = arr[first_end + 1:]
        if not len(arr):
            if self.before_first:
                self.before_first = False
            return pl.DataFrame()
        if (arr >= 0x80).any() or (arr == 34).any():
            return None
        ends = np.flatnonzero(arr == 10)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        lengths = ends - starts
        crs = np.count_nonzero(arr == 13)
        if crs:
            # CRLF throughout is fine (polars drops the CR); a stray CR is not.
            if crs != len(ends) or (arr[ends - 1] != 13).any():
                return None
            lengths = lengths - 1
        if lengths.min() == 0 or lengths.max() > MAX_LINE:
            return None
        if lay.kind == "text" or lay.n_fields == 1:
            # Any whitespace (space, tab, VT, FF) may make a line blank: careful path.
            if (arr == 44).any() or (arr[starts] == 35).any() or (arr == 32).any() or (
                    (arr >= 9) & (arr <= 12) & (arr != 10)).any():
                return None
            n_fields = 1
        else:
            commas = _per_line(np.flatnonzero(arr == 44), ends)
            if (commas != lay.n_fields - 1).any():
                return None
            n_fields = lay.n_fields
        names = [f"f{i}" for i in range(n_fields)]
        try:
            table = pl.read_csv(arr.tobytes() if len(arr) != len(buf) else buf,
                                has_header=False, new_columns=names,
                                schema=dict.fromkeys(names, pl.String), quote_char=None,
                                empty_string_is_null=False)
        except pl.exceptions.PolarsError:
            return None
        if table.height != len(ends):
            return None
        self.before_first = False
        cols = {"puzzle": table[f"f{lay.puzzle_field}"]}
        for i, name in lay.carried:
            cols[name] = table[f"f{i}"]
        if lay.solution_field is not None:
            cols["expected_solution"] = table[f"f{lay.solution_field}"]
        return pl.DataFrame(cols)

    def _fields(self, text: pl.Series, where: np.ndarray, long: dict[int, int],
                not_utf8: list[int]) -> tuple[pl.DataFrame, dict[int, str]]:
        """The row's fields as columns, and reasons for rows that are not records."""
        lay = self.layout
        lines = text.gather(where)
        reasons: dict[int, str] = {}
        position = {int(j): i for i, j in enumerate(where)} if long or not_utf8 else {}
        for j in not_utf8:
            if j in position:
                reasons[position[j]] = "line is not valid UTF-8"
        if long:
            for j, length in long.items():
                if j in position:
                    reasons[position[j]] = (f"line of {length:,} bytes is over the "
                                            f"{MAX_LINE:,}-byte limit (puzzle kept truncated)")
        if lay.kind == "text":
            return pl.DataFrame({"puzzle": lines}), reasons
        if lay.kind == "fixed":
            tokens = lines.str.extract_all(r"\S+")
            count = tokens.list.len().to_numpy()
            puzzle = tokens.list.get(lay.puzzle_field, null_on_oob=True)
            for i in np.flatnonzero(count != lay.n_fields).tolist():
                reasons.setdefault(i, f"{count[i]} fields, expected {lay.n_fields}")
            if reasons:  # a line we cannot split keeps its whole text as `puzzle`
                idx = pl.Series(sorted(reasons), dtype=pl.UInt32)
                puzzle = puzzle.scatter(idx, lines.gather(idx))
            return pl.DataFrame({"puzzle": puzzle}), reasons
        return self._csv_fields(lines, reasons, long, where)

    def _csv_fields(self, lines: pl.Series, reasons: dict[int, str], long: dict[int, int],
                    where: np.ndarray) -> tuple[pl.DataFrame, dict[int, str]]:
        lay = self.layout
        parts = lines.str.split(",")
        count = parts.list.len().fill_null(0).to_numpy().astype(np.int64)
        wanted = [(lay.puzzle_field, "puzzle")] + list(lay.carried)
        if lay.solution_field is not None:
            wanted.append((lay.solution_field, "expected_solution"))
        columns = {name: parts.list.get(i, null_on_oob=True) for i, name in wanted}
        quoted = np.flatnonzero(lines.str.contains('"', literal=True).fill_null(False).to_numpy())
        if len(quoted):
            # Quotes are rare in puzzle files: parse those lines properly, one by one.
            fixes: dict[str, list] = {name: [] for _, name in wanted}
            for i in quoted.tolist():
                fields, why = _parse_quoted(lines[i])
                count[i] = len(fields) if fields is not None else -1
                if why:
                    reasons.setdefault(i, why)
                for k, name in wanted:
                    fixes[name].append(fields[k] if fields and k < len(fields) else None)
            idx = pl.Series(quoted.astype(np.uint32))
            for name, values in fixes.items():
                columns[name] = columns[name].scatter(idx, pl.Series(values, dtype=pl.String))
        for i in np.flatnonzero((count != lay.n_fields) & (count >= 0)).tolist():
            reasons.setdefault(i, f"ragged line: {count[i]} fields, expected {lay.n_fields}")
        if long or reasons:
            # A line we cannot split keeps its text as `puzzle` and no other field.
            bad = np.array(sorted(reasons), dtype=np.uint32)
            idx = pl.Series(bad)
            for name in columns:
                values = lines.gather(idx) if name == "puzzle" else pl.Series(
                    [None] * len(bad), dtype=pl.String)
                columns[name] = columns[name].scatter(idx, values)
        return pl.DataFrame(columns), reasons


def _parse_quoted(line: str | None) -> tuple[list[str] | None, str | None]:
    """Fields of one CSV line with quotes, or None and why it cannot be read."""
    if line is None:
        return None, None
    try:
        rows = list(csv.reader([line], strict=True))
    except csv.Error as exc:
        return None, f"broken quoting ({exc})"
    if len(rows) != 1:
        return None, "broken quoting"
    return rows[0], None
