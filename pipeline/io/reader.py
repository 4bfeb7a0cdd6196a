"""The rows of a byte range: records (pipeline.io.records) -> fields -> Arrow columns.

Every row comes out, a bad one as a `malformed` row with its reason: a record with the wrong
number of fields, broken quoting, bytes that are not UTF-8, a record over the length limit
(its text kept truncated). We do not hand the bytes to a CSV parser, because one ragged
record would abort it or be silently misread.

Two ways through, with the same result:

* strided: every record of the batch is a row of the same length, with its commas in the
  same places, ASCII, no quotes (Kaggle's `quizzes,solutions`, tdoku's sets). The fields
  are then columns of a 2-D view of the bytes; nothing is split.
* careful: anything else. Records are gathered into one string column and split into
  fields with polars expressions; the rare quoted record goes through Python's csv module.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from pipeline import compiled
from pipeline.io import records
from pipeline.io.shape import Shape

_COMMA, _QUOTE = 44, 34


@dataclass
class Rows:
    """Rows read from a range: their input columns as Arrow arrays, and reasons for the
    rows that are not records we could read (index -> why)."""

    n: int
    columns: dict[str, pa.Array]  # puzzle, carried columns, expected_solution
    reasons: dict[int, str] = field(default_factory=dict)

    @classmethod
    def concat(cls, parts: list[Rows], names: list[str]) -> Rows:
        if len(parts) == 1:
            return parts[0]
        reasons: dict[int, str] = {}
        offset = 0
        for p in parts:
            reasons.update({offset + i: why for i, why in p.reasons.items()})
            offset += p.n
        cols = {}
        for name in names:
            chunks = [p.columns[name] for p in parts]
            cols[name] = pa.chunked_array(chunks, type=chunks[0].type).combine_chunks()
        return cls(offset, cols, reasons)


def column_names(shape: Shape) -> list[str]:
    """The input columns a range of this shape yields, in order."""
    names = ["puzzle", *[c for _, c in shape.carried]]
    if shape.solution_field is not None:
        names.append("expected_solution")
    return names


PLAIN_SPAN = 64 << 20  # a range up to this size is read whole and tried the strided way


def read_rows(read: records.Read, start: int, end: int, shape: Shape, hasher=None
              ) -> Rows:
    """Every row of the records starting in [start, end); `read` is positioned at start."""
    names = column_names(shape)
    if end - start <= PLAIN_SPAN:
        data = records.read_exactly(read, end - start)
        if hasher is not None:
            hasher.update(data)
            hasher = None
        rows = _plain_span(data, start, shape)
        if rows is not None:
            return rows
        read = io.BytesIO(data).read
    parts = [_batch_rows(b, shape) for b in records.iter_batches(
        read, start, end, shape.rules(), hasher=hasher)]
    parts = [p for p in parts if p.n] or [_empty(names)]
    return Rows.concat(parts, names)


def iter_rows(read: records.Read, start: int, shape: Shape) -> Iterator[Rows]:
    """Rows batch by batch, to the end of the input (for one pass over a whole file)."""
    for b in records.iter_batches(read, start, 1 << 62, shape.rules()):
        rows = _batch_rows(b, shape)
        if rows.n:
            yield rows


def warm_up() -> None:
    """Load the compiled steps of reading (no pyarrow compute: it would start threads)."""
    data = np.frombuffer(b"1,2\n3,4\n", dtype=np.uint8)
    view = data.reshape(2, 4)
    _alike(view, 3, np.array([1], np.int64))
    starts = np.array([0, 4], np.int64)
    ends = np.array([3, 7], np.int64)
    out = np.empty(8, np.uint8)
    _gather(data, starts, ends, np.array([0, 1], np.int64), 8, out, np.empty(3, np.int64),
            np.empty(2, np.int8))
    records.warm_up()


def _empty(names: list[str]) -> Rows:
    return Rows(0, {n: pa.array([], pa.string()) for n in names})


# ---------------------------------------------------------------------------------------
# One batch of records -> rows


def _batch_rows(batch: records.Block, shape: Shape) -> Rows:
    idx = batch.rows()
    if not len(idx):
        return _empty(column_names(shape))
    if not batch.long:
        strided = _strided(batch, idx, shape)
        if strided is not None:
            return strided
    return _careful(batch, idx, shape)


def _strided(batch: records.Block, idx: np.ndarray, shape: Shape) -> Rows | None:
    """The fields as columns of a 2-D view, when the rows are alike records back to back."""
    n = len(idx)
    if n < 2 or shape.kind == "fixed" or int(idx[-1]) != len(batch.kinds) - 1 \
            or int(idx[-1] - idx[0]) != n - 1:
        return None  # rows must be the batch's last records, with nothing between them
    starts = batch.starts[idx]
    ends = batch.ends[idx]
    length = int(ends[0] - starts[0])
    stride = int(starts[1] - starts[0])
    eol = stride - length
    if length == 0 or eol not in (1, 2):
        return None
    if not (np.all(np.diff(starts) == stride) and np.all(ends - starts == length)):
        return None
    data = np.frombuffer(batch.data, dtype=np.uint8)
    first = int(starts[0])
    body = data[first: first + stride * n]
    missing = stride * n - len(body)
    if missing:
        if missing != eol:
            return None
        # The file's last record has no line end: lend it the others'.
        body = np.concatenate([body, data[first + length: first + stride]])
    view = body.reshape(n, stride)
    if eol == 2 and not np.all(view[:, length] == 13):
        return None
    return _view_rows(view, length, shape)


def _plain_span(data: bytes, base: int, shape: Shape) -> Rows | None:
    """Every row of a range's bytes, when they are alike records back to back (each line
    the same length, same line end), without scanning them record by record: the strided
    way of _strided for a whole range at once. None when they are not like that."""
    skip = max(0, shape.data_start - base)  # a range may begin with the preamble
    if shape.kind == "fixed":
        return None
    arr = np.frombuffer(data, dtype=np.uint8)[skip:]
    first_lf = data.find(b"\n", skip) - skip
    if first_lf <= 0 or len(arr) < 2 * (first_lf + 1):
        return None
    eol = 2 if arr[first_lf - 1] == 13 else 1
    length = first_lf + 1 - eol
    stride = length + eol
    if length < 1 or length > records.MAX_RECORD:
        return None  # an empty record is blank, a long one malformed: the careful way

    n, extra = divmod(len(arr), stride)
    if extra:
        if extra != length:
            return None
        # The file's last record has no line end: lend it the others'.
        arr = np.concatenate([arr, arr[length: stride]])
        n += 1
    view = arr.reshape(n, stride)
    if not np.all(view[:, stride - 1] == 10) or (eol == 2 and not np.all(view[:, length] == 13)):
        return None
    return _view_rows(view, length, shape)


def _view_rows(view: np.ndarray, length: int, shape: Shape) -> Rows | None:
    """The fields of alike records (one a row of `view`) as columns, or None when they
    are not alike or not all rows (a record the scanner would call blank or a comment)."""
    n = len(view)
    lead = view[:, 0]
    # A first byte that is not white space (nor '#' where '#' is a comment): every record
    # is a row, as the scanner would say.
    if np.any((lead == 32) | (lead == 9) | (lead == 11) | (lead == 12)) or (
            shape.kind != "csv" and np.any(lead == 35)):
        return None
    commas = np.flatnonzero(view[0, :length] == _COMMA)
    if shape.kind == "csv":
        if len(commas) + 1 != shape.n_fields:
            return None
    elif len(commas):
        return None
    if not _alike(view, length, commas.astype(np.int64)):
        return None
    bounds = [0, *(commas + 1).tolist()]
    limits = [*commas.tolist(), length]

    def column(k: int) -> pa.Array:
        a, b = bounds[k], limits[k]
        width = b - a
        text = np.ascontiguousarray(view[:, a:b])
        offsets = np.arange(0, width * n + 1, width, dtype=np.int32) if width else \
            np.zeros(n + 1, np.int32)
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                      pa.py_buffer(text)])

    if shape.kind == "text":
        return Rows(n, {"puzzle": column(0)})
    cols = {"puzzle": column(shape.puzzle_field)}
    for i, name in shape.carried:
        cols[name] = column(i)
    if shape.solution_field is not None:
        cols["expected_solution"] = column(shape.solution_field)
    return Rows(n, cols)


@compiled.kernel("(readonly u1[:, ::1], i8, readonly i8[::1]) -> b1", nogil=True)
def _alike(view, length, commas):
    """Every record: commas exactly where the first has them, no quote, no CR or LF inside,
    ASCII only. Branch-free over a record, so the compiler can use vector instructions."""
    template = np.zeros(length, np.uint8)
    for k in commas:
        template[k] = 1
    bad = 0
    for r in range(view.shape[0]):
        row = view[r]
        for c in range(length):
            b = row[c]
            bad |= (b >> 7) | (b == _QUOTE) | (b == 13) | (b == 10) | ((b == _COMMA) ^ template[c])
        if bad:
            return False
    return True


@compiled.kernel("(readonly u1[::1], readonly i8[::1], readonly i8[::1], readonly i8[::1], i8, "
                 "u1[::1], i8[::1], i1[::1]) -> i8", nogil=True)
def _gather(data, starts, ends, idx, keep, out, offsets, flags):
    """Copy the records idx into out (at most `keep` bytes each); flags: 1 a byte >= 128,
    2 a quote."""
    o = 0
    offsets[0] = 0
    for j in range(len(idx)):
        i = idx[j]
        s = starts[i]
        e = min(ends[i], s + keep)
        f = 0
        for p in range(s, e):
            b = data[p]
            out[o] = b
            o += 1
            if b >= 128:
                f |= 1
            elif b == _QUOTE:
                f |= 2
        flags[j] = f
        offsets[j + 1] = o
    return o


def _careful(batch: records.Block, idx: np.ndarray, shape: Shape) -> Rows:
    """Rows and fields of any batch, record by record in spirit (vectorised where it can)."""
    data = np.frombuffer(batch.data, dtype=np.uint8)
    n = len(idx)
    keep = 4 * records.KEEP if batch.long else records.MAX_RECORD + 1
    lengths = np.minimum(batch.ends[idx] - batch.starts[idx], keep)
    out = np.empty(int(lengths.sum()), np.uint8)
    offsets = np.empty(n + 1, np.int64)
    flags = np.empty(n, np.int8)
    used = _gather(data, batch.starts, batch.ends, idx, keep, out, offsets, flags)
    out = out[:used]
    reasons: dict[int, str] = {}
    long = {}  # position in idx (sorted record numbers) -> the record's full length
    for i, length in batch.long.items():  # a few records over 1 MiB, not every row
        j = int(np.searchsorted(idx, i))
        if j < n and idx[j] == i:
            long[j] = length
    fixed: dict[int, str] = {}  # rows whose text must be put right: not UTF-8, too long
    for j in np.flatnonzero(flags & 1).tolist():
        raw = out[offsets[j]: offsets[j + 1]].tobytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if j in long and exc.start >= len(raw) - 4:
                fixed[j] = raw[:exc.start].decode("utf-8")  # only cut through a character
                continue
            fixed[j] = raw.decode("utf-8", "replace")
            reasons[j] = "record is not valid UTF-8"
    for j, length in long.items():
        reasons[j] = (f"record of {length:,} bytes is over the {records.MAX_RECORD:,}-byte "
                      "limit (text kept truncated)")
        if j not in fixed:
            fixed[j] = out[offsets[j]: offsets[j + 1]].tobytes().decode("utf-8")
        fixed[j] = fixed[j][: records.KEEP]
    valid = np.ones(n, dtype=bool)
    valid[list(fixed)] = False
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    text = pa.Array.from_buffers(pa.large_string(), n,
                                 [validity, pa.py_buffer(offsets), pa.py_buffer(out)])
    if fixed:
        text = _put(text, fixed)
    quoted = np.flatnonzero(flags & 2)
    if shape.kind == "text":
        cols = {"puzzle": text}
    elif shape.kind == "fixed":
        cols = _fixed_fields(text, reasons, shape)
    else:
        cols = _csv_fields(text, quoted, reasons, shape)
    return Rows(n, {k: v.cast(pa.string()) for k, v in cols.items()}, reasons)


def _put(arr: pa.Array, values: dict[int, str | None]) -> pa.Array:
    """The array with a few of its entries replaced."""
    import pyarrow.compute as pc

    mask = np.zeros(len(arr), dtype=bool)
    where = sorted(values)
    mask[where] = True
    return pc.replace_with_mask(arr, pa.array(mask), pa.array([values[i] for i in where],
                                                              arr.type))


def _spread(values: pa.Array, good: np.ndarray, type_: pa.DataType) -> pa.Array:
    """Values for the rows where `good` is True, nulls elsewhere."""
    import pyarrow.compute as pc

    if good.all():
        return values
    return pc.replace_with_mask(pa.nulls(len(good), type_), pa.array(good), values)


def _fixed_fields(text: pa.Array, reasons: dict[int, str], shape: Shape) -> dict:
    import pyarrow.compute as pc

    tokens = pc.utf8_split_whitespace(pc.utf8_trim_whitespace(text))
    count = pc.fill_null(pc.list_value_length(tokens), 0).to_numpy(zero_copy_only=False)
    good = count == shape.n_fields
    for i in np.flatnonzero(~good).tolist():
        reasons.setdefault(i, f"{count[i]} fields, expected {shape.n_fields}")
    split = tokens.filter(pa.array(good)) if not good.all() else tokens
    puzzle = _spread(pc.list_element(split, shape.puzzle_field), good, text.type)
    if reasons:  # a record we cannot split keeps its whole text as `puzzle`
        puzzle = _put(puzzle, {i: text[i].as_py() for i in reasons})
    cols = {"puzzle": puzzle}
    for i, name in shape.carried:  # null where the record has not the file's tokens
        cols[name] = _spread(pc.list_element(split, i), good, text.type)
    if shape.solution_field is not None:
        cols["expected_solution"] = _spread(pc.list_element(split, shape.solution_field),
                                            good, text.type)
    return cols


def _csv_fields(text: pa.Array, quoted: np.ndarray, reasons: dict[int, str],
                shape: Shape) -> dict:
    import pyarrow.compute as pc

    n = len(text)
    parts = pc.split_pattern(text, ",")
    count = pc.fill_null(pc.list_value_length(parts), 0).to_numpy(
        zero_copy_only=False).astype(np.int64)
    wanted = [(shape.puzzle_field, "puzzle"), *shape.carried]
    if shape.solution_field is not None:
        wanted.append((shape.solution_field, "expected_solution"))
    fixes: dict[int, list[str] | None] = {}
    for i in quoted.tolist():  # quotes are rare in puzzle files: parse those records properly
        fields, bad = _parse_quoted(text[i].as_py())
        fixes[i] = fields
        count[i] = len(fields) if fields is not None else -1
        if bad:
            reasons.setdefault(i, bad)
    good = count == shape.n_fields
    good[list(fixes)] = False
    for i in np.flatnonzero((count != shape.n_fields) & (count >= 0)).tolist():
        reasons.setdefault(i, f"ragged record: {count[i]} fields, expected {shape.n_fields}")
    split = parts.filter(pa.array(good)) if not good.all() else parts
    columns = {}
    for k, name in wanted:
        col = _spread(pc.list_element(split, k), good, text.type) if good.any() else \
            pa.nulls(n, text.type)
        quoted_ok = {i: f[k] for i, f in fixes.items() if f is not None and i not in reasons}
        if quoted_ok:
            col = _put(col, quoted_ok)
        if reasons:
            # A record we cannot split keeps its text as `puzzle` and no other field.
            col = _put(col, {i: text[i].as_py() if name == "puzzle" else None
                             for i in reasons})
        columns[name] = col
    return columns


def _parse_quoted(record: str | None) -> tuple[list[str] | None, str | None]:
    """Fields of one CSV record with quotes, or None and why it cannot be read."""
    if record is None:
        return None, None
    try:
        rows = list(csv.reader([record], strict=True))
    except csv.Error as exc:
        return None, f"broken quoting ({exc})"
    if len(rows) != 1:
        return None, "broken quoting"
    return rows[0], None
