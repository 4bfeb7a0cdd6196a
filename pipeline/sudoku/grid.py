"""Grids as text and as arrays: encoding, decoding, the givens check and display.

Glossary (after Norvig):
    Digit   an integer 1..9; 0 marks a blank.
    Square  an index 0..80 into a grid, row-major (row = s // 9, column = s % 9).
    Unit    nine squares that must hold nine different digits: a row, a column or a box.
    Grid    a (81,) uint8 array of digits.
    Batch   an (N, 81) uint8 array of grids.

Everything here is numpy over whole batches; Python touches a row only to word the
reason for a row that is already known to be bad.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from pipeline import compiled

Batch = np.ndarray  # (N, 81) uint8
Grid = np.ndarray  # (81,) uint8

SQUARES = 81
ROWS = [[r * 9 + c for c in range(9)] for r in range(9)]
COLUMNS = [[r * 9 + c for r in range(9)] for c in range(9)]
BOXES = [
    [(br * 3 + r) * 9 + bc * 3 + c for r in range(3) for c in range(3)]
    for br in range(3)
    for bc in range(3)
]
UNITS = np.array(ROWS + COLUMNS + BOXES, dtype=np.intp)  # (27, 9)
# "grid row", not "row": a result's `row` is the record's number in its input.
UNIT_NAMES = [f"grid row {i + 1}" for i in range(9)] + [
    f"grid column {i + 1}" for i in range(9)] + [f"box {i + 1}" for i in range(9)]

BLANKS = b".0"
NOT_A_DIGIT = 255
# Byte -> digit: '1'..'9' -> 1..9, '.' and '0' -> 0 (blank), anything else -> NOT_A_DIGIT.
_BYTE_TO_DIGIT = np.full(256, NOT_A_DIGIT, dtype=np.uint8)
_BYTE_TO_DIGIT[ord("0") : ord("9") + 1] = np.arange(10, dtype=np.uint8)
_BYTE_TO_DIGIT[ord(".")] = 0
_WHITESPACE = b" \t\r\n\x0b\x0c"


def encode(texts: Sequence[str]) -> tuple[Batch, list[str | None]]:
    """Encode puzzle strings into a batch; a reason per string that is not a puzzle."""
    raw = [t.encode("utf-8", "surrogatepass") if isinstance(t, str) else b"" for t in texts]
    lengths = np.fromiter((len(b) for b in raw), dtype=np.int64, count=len(raw))
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(raw), dtype=np.uint8)
    grids, reasons = encode_buffers(offsets, data)
    out: list[str | None] = [None] * len(texts)
    for i, why in reasons.items():
        out[i] = why
    for i, t in enumerate(texts):
        if t is None:
            out[i] = "missing puzzle field"
    return grids, out


def checked_batch(puzzles) -> tuple[Batch, dict[int, str]]:
    """The public API's puzzles (a sequence of strings, or an integer array of N x 81
    digits) as a batch, and {row: reason} for the rows that are not puzzles (a string
    encode refuses, a value outside 0..9: never wrapped into one; `as_batch`, for the
    symmetry kernels, reads such a value as a blank instead). TypeError for one string
    (a sequence of its characters is never meant) or an array not of integers."""
    if isinstance(puzzles, str | bytes):
        raise TypeError("puzzles: a sequence of puzzle strings, not one string "
                        "(put it in a list)")
    if not isinstance(puzzles, np.ndarray):
        grids, why = encode(list(puzzles))
        return grids, {i: w for i, w in enumerate(why) if w}
    if puzzles.size == 0:
        return np.zeros((0, SQUARES), np.uint8), {}
    if puzzles.dtype.kind not in "iub" or puzzles.size % SQUARES:
        raise TypeError(f"puzzles: an array of integers, 81 a puzzle (got {puzzles.dtype} "
                        f"of shape {puzzles.shape})")
    g = puzzles.reshape(-1, SQUARES)
    if g.dtype == np.uint8 and g.max() <= 9:  # a batch already (the pipeline's): no copy
        return g, {}
    out_of_range = (g < 0) | (g > 9)
    reasons = {int(i): f"square {int(k)} holds {g[i, k]}, not a digit 0..9"
               for i, k in zip(*np.nonzero(out_of_range), strict=True)
               if not out_of_range[i, :k].any()}
    batch = np.where(out_of_range, 0, g).astype(np.uint8)
    if reasons:
        batch[list(reasons)] = 0
    return batch, reasons


def encode_buffers(offsets: np.ndarray, data: np.ndarray) -> tuple[Batch, dict[int, str]]:
    """Encode N UTF-8 strings given as Arrow-style offsets (N+1,) and bytes into a batch.

    Returns the batch (malformed rows are all blanks) and {row: reason} for malformed rows.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    n = len(offsets) - 1
    grids = np.zeros((n, SQUARES), dtype=np.uint8)
    if n == 0:
        return grids, {}
    slow = np.flatnonzero(_encode_rows(data, offsets, grids))
    reasons: dict[int, str] = {}
    # The slow path: rows of another length or with a stray character. Most are malformed;
    # some only carry whitespace around the 81 characters.
    for i in slow.tolist():
        text = bytes(data[offsets[i]: offsets[i + 1]])
        grid, why = _encode_one(text)
        if why is None:
            grids[i] = grid
        else:
            reasons[i] = why
    return grids, reasons


@compiled.kernel("(readonly u1[::1], readonly i8[::1], u1[:, ::1]) -> b1[::1]", nogil=True)
def _encode_rows(data, offsets, grids):
    """Digits of every row of 81 digits or dots into `grids`; (N,) bool: rows not like that."""
    n = len(offsets) - 1
    slow = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        start = offsets[i]
        if offsets[i + 1] - start != 81:
            slow[i] = True
            continue
        for c in range(81):
            b = data[start + c]
            if b == 46:
                grids[i, c] = 0
            elif b >= 48 and b <= 57:
                grids[i, c] = b - 48
            else:
                slow[i] = True
                break
        if slow[i]:
            grids[i, :] = 0
    return slow


@compiled.kernel("(readonly i8[::1], readonly u1[::1], readonly u1[:, ::1]) -> b1[::1]",
                 nogil=True)
def same_text(offsets, data, grids):
    """(N,) bool: string i (Arrow-style offsets and bytes) is grid i written as 81 digits."""
    n = grids.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        start = offsets[i]
        if offsets[i + 1] - start != 81:
            continue
        ok = True
        for c in range(81):
            if data[start + c] != grids[i, c] + 48:
                ok = False
                break
        out[i] = ok
    return out


def _encode_one(raw: bytes) -> tuple[Grid | None, str | None]:
    """Encode one puzzle the slow way, with the reason it is not one."""
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return None, "empty puzzle field"
    if len(text) != SQUARES:
        return None, f"length {len(text)}, expected {SQUARES}"
    body = text.encode("utf-8")  # 81 chars; all ASCII when every char is valid
    if len(body) == SQUARES:
        digits = _BYTE_TO_DIGIT[np.frombuffer(body, dtype=np.uint8)]
        bad = np.flatnonzero(digits == NOT_A_DIGIT)
        if len(bad) == 0:
            return digits, None
        first = int(bad[0])
    else:
        first = next(i for i, ch in enumerate(text) if ch.encode("utf-8") not in _DIGIT_BYTES)
    return None, f"character {text[first]!r} at position {first + 1}"


_DIGIT_BYTES = {bytes([b]) for b in b"0123456789."}


def decode(grids: Batch, blank: str = ".") -> list[str]:
    """Decode a batch into 81-character strings (blanks as `blank`)."""
    return [s.decode("ascii") for s in to_ascii(grids, blank).tolist()]


def to_ascii(grids: Batch, blank: str = "0") -> np.ndarray:
    """The batch (digits 0..9) as an (N,) array of 81-byte strings, with no Python loop."""
    g = np.asarray(grids, dtype=np.uint8)
    chars = g + np.uint8(ord("0"))  # adds beat a table lookup (7x for "." blanks)
    if blank != "0":  # the blanks move from "0" to `blank`, in uint8's wrapping arithmetic
        chars += (g == 0).view(np.uint8) * np.uint8((ord(blank) - ord("0")) % 256)
    return np.ascontiguousarray(chars).view(f"S{SQUARES}").reshape(len(chars))


def find_clashes(grids: Batch) -> dict[int, str]:
    """Rows whose givens repeat a digit in a unit: {row: 'digit 5 twice in row 3'}."""
    grids = np.ascontiguousarray(grids, dtype=np.uint8)
    if len(grids) == 0:
        return {}
    bad_rows = np.flatnonzero(_has_clash(grids))
    return {int(i): clash_reason(grids[i]) for i in bad_rows}


@compiled.kernel("(readonly u1[:, ::1]) -> b1[::1]")
def _has_clash(grids):
    """(N,) bool: some row, column or box of the grid holds a given digit twice."""
    out = np.zeros(grids.shape[0], dtype=np.bool_)
    rows = np.zeros(9, dtype=np.int64)
    cols = np.zeros(9, dtype=np.int64)
    boxes = np.zeros(9, dtype=np.int64)
    for i in range(grids.shape[0]):
        rows[:] = 0
        cols[:] = 0
        boxes[:] = 0
        for s in range(81):
            d = grids[i, s]
            if d == 0 or d > 9:
                continue
            r = s // 9
            c = s % 9
            b = (r // 3) * 3 + c // 3
            bit = 1 << d
            if (rows[r] | cols[c] | boxes[b]) & bit:
                out[i] = True
                break
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    return out


def clash_reason(grid: Grid) -> str:
    """Word the first repeated digit of a grid, by unit order: rows, columns, boxes."""
    for name, squares in zip(UNIT_NAMES, UNITS, strict=True):
        values = grid[squares]
        counts = np.bincount(values, minlength=10)[1:]
        repeated = np.flatnonzero(counts > 1)
        if len(repeated):
            d = int(repeated[0]) + 1
            times = {2: "twice", 3: "three times"}.get(int(counts[d - 1]), f"{counts[d - 1]} times")
            return f"digit {d} {times} in {name}"
    raise ValueError("grid has no clash")


def no_solution_reason(grid: Grid, guesses: int) -> str:
    """Why consistent givens have no solution: the first blank square no digit fits, else
    the first digit with no place left in a unit, else what the search found (the engine's
    guesses: each branch ended in a contradiction)."""
    g = np.asarray(grid, dtype=np.intp)
    present = np.zeros((len(UNITS), 10), dtype=bool)  # unit, digit
    present[np.repeat(np.arange(len(UNITS)), 9), g[UNITS].ravel()] = True
    present[:, 0] = False
    square_units = np.array([[s // 9, 9 + s % 9, 18 + (s // 27) * 3 + (s % 9) // 3]
                             for s in range(SQUARES)])
    # candidates[s, d]: digit d is in none of square s's units, and s is blank
    candidates = ~present[square_units].any(axis=1) & (g == 0)[:, None]
    candidates[:, 0] = False
    for s in np.flatnonzero((g == 0) & ~candidates.any(axis=1)):
        return f"no digit fits the square at grid row {s // 9 + 1}, column {s % 9 + 1}"
    for u, squares in enumerate(UNITS):
        placeable = candidates[squares].any(axis=0) | present[u]
        for d in np.flatnonzero(~placeable[1:]) + 1:
            return f"digit {d} has no place left in {UNIT_NAMES[u]}"
    if guesses <= 0:
        return "no solution: propagating the givens ends in a contradiction"
    return f"no solution: every branch of the search ends in a contradiction ({guesses:,} guesses)"


def square_name(square: int) -> str:
    """A square in players' notation: r1c1 .. r9c9."""
    return f"r{square // 9 + 1}c{square % 9 + 1}"


def placements_text(pairs) -> str:
    """(square, digit) placements as players write them: `r5c6=3, r1c1=9`."""
    return ", ".join(f"{square_name(s)}={d}" for s, d in pairs)


def eliminations_text(pairs) -> str:
    """(square, digit) eliminations as players write them: `r7c4<>1, r8c4<>1`."""
    return ", ".join(f"{square_name(s)}<>{d}" for s, d in pairs)


def clues(grids: Batch) -> np.ndarray:
    """The number of givens in each grid."""
    return np.count_nonzero(np.asarray(grids), axis=1)


def show(grid: Grid | Sequence[int]) -> str:
    """Draw one grid as a 9x9 board with box lines."""
    g = [int(x) for x in grid]
    lines = []
    for r in range(9):
        if r in (3, 6):
            lines.append("------+-------+------")
        cells = [str(g[r * 9 + c]) if g[r * 9 + c] else "." for c in range(9)]
        lines.append(" | ".join(" ".join(cells[b : b + 3]) for b in (0, 3, 6)))
    return "\n".join(lines)


_BOARD_ROW = re.compile(r"^[\s|]*(?:[0-9.][\s|]*){9}$")  # nine cells, spaces and bars
_BOARD_RULE = re.compile(r"^[\s|+]*[-=][-=\s|+]*$")  # a line between bands


def is_board_row(line: str) -> bool:
    """Whether a line is a grid row of a drawn board (as `show` draws it, or 9 characters)."""
    return bool(_BOARD_ROW.match(line))


def read_boards(text: str) -> tuple[list[str], dict[int, str]]:
    """The rows of a text of drawn boards (`show`'s, or nine lines of nine cells): each
    board as an 81-character string, each line that is a puzzle record (no blank inside,
    as `run` reads a puzzle a line) as itself, in order; and {row: reason} for a board
    that is not whole. Band rules are skipped; a line that looks like a grid row but is
    not one (a stray character, too few cells) is the board's fault; any other line (a
    title, `solve`'s status line) or a blank line ends a board."""
    puzzles: list[str] = []
    faults: dict[int, str] = {}
    rows: list[str] = []
    fault: list[str] = []

    def close() -> None:
        if rows:
            if fault:
                faults[len(puzzles)] = fault[0]
            elif len(rows) < 9:
                faults[len(puzzles)] = f"a board of {len(rows)} grid rows, expected 9"
            puzzles.append("".join(rows).ljust(SQUARES, ".")[:SQUARES])
            rows.clear()
            fault.clear()

    for line in text.splitlines():
        if is_board_row(line):
            rows.append("".join(c for c in line if c in "0123456789."))
        elif _BOARD_RULE.match(line):
            continue
        elif (why := _broken_board_row(line)) is not None:
            fault.append(f"grid row {len(rows) + 1}: {why}")
            rows.append("." * 9)
        else:
            close()
            record = line.strip()
            if record and " " not in record and "\t" not in record:
                puzzles.append(record)  # (a puzzle a line: encode judges it)
            continue
        if len(rows) == 9:
            close()
    close()
    return puzzles, faults


def _broken_board_row(line: str) -> str | None:
    """What is wrong with a line drawn as a grid row (cells of one character between
    spaces or bars) that is not one; None for a line that is not drawn so."""
    cells = line.replace("|", " ").split()
    if len(cells) < 5 or any(len(c) != 1 for c in cells):
        return None
    odd = next((c for c in cells if c not in "0123456789."), None)
    if odd is not None:
        return f"character {odd!r}"
    return f"{len(cells)} cells, expected 9"


def as_batch(grids: np.ndarray) -> np.ndarray:
    """An (N, 81) contiguous uint8 batch; outside 0..255 (not cast, which would wrap) -> 0."""
    g = np.asarray(grids)
    if g.dtype != np.uint8:
        g = np.where((g >= 1) & (g <= 9), g, 0)
    g = np.ascontiguousarray(g, dtype=np.uint8)
    if g.ndim == 1:
        g = g.reshape(1, -1)
    if g.ndim != 2 or g.shape[1] != 81:
        raise ValueError(f"expected an (N, 81) array, got shape {np.shape(grids)}")
    return g
