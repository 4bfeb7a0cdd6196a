"""Parquet inputs: the shape from the schema, ranges from row groups, rows read by row group.

Many published puzzle sets are Parquet. The puzzle column is found as in a CSV (by name,
else the first string column holding puzzles in the first row group); the others are
carried as strings. A range is a run of whole row groups (about `chunk_size` rows), its
bytes the span of their column chunks: the planner hashes that span, and a worker reads
it once, checks its hash, and decodes its row groups from those very bytes (the footer is
read from the file). Memory holds one range at a time, whatever the file's size.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np

from pipeline.errors import InputChanged, InputError
from pipeline.io import records
from pipeline.io.shape import (
    PUZZLE_NAMES,
    SOLUTION_NAMES,
    Shape,
    carried_columns,
    find_column,
    looks_like_puzzle,
    no_puzzle_column,
)
from pipeline.io.storage import Location

MAGIC = b"PAR1"


BATCH = 65_536  # rows decoded at once from a piece of a big row group


def _file(loc: Location):
    import pyarrow.parquet as pq

    source = loc.path if loc.local else loc.fs.open(loc.path, "rb")
    return pq.ParquetFile(source)


def detect(loc: Location, name: str, puzzle_column: str | None, solution_column: str | None,
           reserved: tuple[str, ...]) -> Shape:
    """The shape of a Parquet file, from its schema (and its first row group, when the
    puzzle column has to be found by its content)."""
    try:
        f = _file(loc)
    except Exception as exc:  # pyarrow says "not Parquet" in many ways
        raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
    names = list(f.schema_arrow.names)
    puzzle = find_column(names, puzzle_column, PUZZLE_NAMES, "puzzle", name)
    if puzzle is None and f.metadata.num_row_groups:
        first = f.read_row_group(0).slice(0, 50)
        puzzle = next((i for i, col in enumerate(first.columns)
                       if any(looks_like_puzzle(v) for v in _strings(col))), None)
    if puzzle is None:
        raise no_puzzle_column(name, names)
    solution = find_column(names, solution_column, SOLUTION_NAMES, "solution", name)
    if solution == puzzle:
        solution = None
    carried = carried_columns(names, (puzzle, solution), reserved)
    return Shape("parquet", n_fields=len(names), puzzle_field=puzzle, solution_field=solution,
                  header=True, carried=carried, columns=tuple(names))


def _strings(col) -> list:
    import pyarrow as pa

    try:
        return col.cast(pa.string()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return []


def row_groups(meta) -> list[tuple[int, int, int]]:
    """(first byte, end byte, rows) of every row group: the span of its column chunks."""
    out = []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        starts, ends = [], []
        for c in range(rg.num_columns):
            col = rg.column(c)
            first = col.data_page_offset
            if col.has_dictionary_page and col.dictionary_page_offset is not None:
                first = min(first, col.dictionary_page_offset)
            starts.append(first)
            ends.append(first + col.total_compressed_size)
        out.append((min(starts), max(ends), rg.num_rows))
    return out


def row_group_ranges(loc: Location, chunk_size: int) -> list[tuple[int, int, int, int]]:
    """The ranges of a Parquet file: (first byte, end byte, rows, rows skipped) of runs of
    whole row groups holding about chunk_size rows each; a row group of more rows is cut
    into ranges of chunk_size rows over its bytes (each skips the rows before it), so no
    range holds more rows than that, whatever the file's row groups."""
    groups = row_groups(_file(loc).metadata)
    out: list[list[int]] = []
    for start, end, rows in groups:
        if rows > chunk_size:
            out.extend([start, end, min(chunk_size, rows - k), k]
                       for k in range(0, rows, chunk_size))
        elif out and out[-1][3] == 0 and out[-1][2] + rows <= chunk_size:
            out[-1][1] = max(out[-1][1], end)
            out[-1][2] += rows
        else:
            out.append([start, end, rows, 0])
    return [tuple(s) for s in out]


def range_digest(loc: Location, start: int, end: int) -> str:
    """The hash of a range's bytes (a planning task)."""
    h = records.hasher()
    with loc.reader(start, end) as read:
        while block := read(8 << 20):
            h.update(block)
    return h.hexdigest()


class _Overlay(io.RawIOBase):
    """The file as pyarrow sees it: the range's bytes from memory, the rest (the footer)
    from the file itself."""

    def __init__(self, loc: Location, start: int, data: bytes, size: int):
        self._loc, self._start, self._data, self._size = loc, start, data, size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = {0: offset, 1: self._pos + offset, 2: self._size + offset}[whence]
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, b) -> int:
        n = min(len(b), max(0, self._size - self._pos))
        lo, hi = self._start, self._start + len(self._data)
        if lo <= self._pos and self._pos + n <= hi:
            chunk = self._data[self._pos - lo: self._pos - lo + n]
        else:
            chunk = self._loc.read_at(self._pos, n)
        b[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


def read_rows(loc: Location, start: int, end: int, shape: Shape, digest: str, source: str,
              skip: int = 0, rows: int | None = None):
    """The rows of a range (reader.Rows), from bytes whose hash is checked first: its row
    groups' rows, or (a piece of a big row group) `rows` of them after the first `skip`,
    decoded batch by batch so that memory holds the piece, never the whole group."""
    import pyarrow.parquet as pq

    with loc.reader(start, end) as read:
        data = b"".join(iter(lambda: read(8 << 20), b""))
    if records.hasher(data).hexdigest() != digest:
        raise InputChanged.at(source, start, end)
    f = pq.ParquetFile(_Overlay(loc, start, data, loc.size()))
    meta = row_groups(f.metadata)
    groups = [g for g, (s, _, _) in enumerate(meta) if start <= s < end]
    columns = list(shape.columns)
    if not skip and (rows is None or rows == sum(meta[g][2] for g in groups)):
        return _rows(f.read_row_groups(groups, columns=columns), shape)
    import pyarrow as pa

    kept, seen = [], 0
    for batch in f.iter_batches(batch_size=BATCH, row_groups=groups, columns=columns):
        lo, hi = max(skip - seen, 0), min(skip + rows - seen, batch.num_rows)
        if lo < hi:
            kept.append(batch.slice(lo, hi - lo))
        seen += batch.num_rows
        if seen >= skip + rows:
            break
    table = (pa.Table.from_batches(kept) if kept
             else f.schema_arrow.empty_table().select(columns))
    return _rows(table, shape)


def iter_whole(loc: Location, shape: Shape) -> Iterator:
    """Every row of a Parquet file, one row group at a time (reader.Rows)."""
    f = _file(loc)
    for g in range(f.metadata.num_row_groups):
        yield _rows(f.read_row_group(g, columns=list(shape.columns)), shape)


def _rows(table, shape: Shape):

    from pipeline.io.reader import Rows

    def text(i: int):
        return as_text(table.column(i).combine_chunks())

    cols = {"puzzle": text(shape.puzzle_field)}
    for i, name in shape.carried:
        cols[name] = text(i)
    if shape.solution_field is not None:
        cols["expected_solution"] = text(shape.solution_field)
    reasons = {int(i): "missing puzzle field"
               for i in np.flatnonzero(~np.asarray(cols["puzzle"].is_valid()))}
    return Rows(table.num_rows, cols, reasons)


def as_text(col):
    """A column as strings, as every carried column is: strings as they are, nested values
    (structs, lists, maps) as JSON text, anything else cast (or, where Arrow cannot, its
    Python text): never a failure for the column's type."""
    import json

    import pyarrow as pa

    if col.type == pa.string():
        return col
    nested = pa.types.is_nested(col.type) or pa.types.is_map(col.type)
    if not nested:
        try:
            return col.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    values = col.to_pylist()
    if nested:
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False, default=str)
                         for v in values], pa.string())
    return pa.array([None if v is None else v.decode("utf-8", "replace")
                     if isinstance(v, bytes) else str(v) for v in values], pa.string())


def copy_rows(src: Location, dest: Location, rows: int) -> int:
    """A Parquet file of the first `rows` rows of another (`run --limit`); its size."""
    import pyarrow.parquet as pq

    f = _file(src)
    tables, got = [], 0
    for g in range(f.metadata.num_row_groups):
        if got >= rows:
            break
        t = f.read_row_group(g)
        tables.append(t.slice(0, rows - got))
        got += min(t.num_rows, rows - got)
    import pyarrow as pa

    table = pa.concat_tables(tables) if tables else f.schema_arrow.empty_table()
    dest.write_atomic(lambda out: pq.write_table(table, out))
    return dest.size()
