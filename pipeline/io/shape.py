"""An input's shape, decided from its first bytes: CSV, a puzzle a line, or fixed-width records.

| shape  | example                               | the puzzle is                                  |
|--------|---------------------------------------|------------------------------------------------|
| csv    | Kaggle `quizzes,solutions`; Radcliffe | the column named like a puzzle, else the first |
|        | `id,puzzle,solution,...`; headerless  | column holding puzzles                         |
| text   | tdoku sets, top95.txt, sudoku17.txt   | the record                                     |
| fixed  | sudoku-exchange `hash puzzle rating`  | the whitespace-separated token of 81 characters|

What comes before the first row is the preamble (`data_start`): a UTF-8 BOM, blank and `#`
lines, a CSV header, a text file's count or title line. A first CSV record is a header only
when no field is a puzzle or a run of digits, and either a known name is among them (then
every other field is a name too: `1st`, `id:v2`) or every field is a word (letters of any
script, digits and the usual punctuation) and the records after it hold puzzles where it
holds a name; so a bad first record of a headerless file stays a row. A headerless CSV's
fields and fixed-width records' tokens are counted as most of the sampled records have
them, so that an odd first record is one malformed row; a title line has no long run of
digits (a broken puzzle is a row).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError
from pipeline.io import records

SNIFF_BYTES = 64 << 10  # how much of a file decides its shape
PUZZLE_NAMES = ("puzzle", "puzzles", "quizzes", "quiz", "grid", "board", "sudoku")
SOLUTION_NAMES = ("solution", "solutions")
BOM = b"\xef\xbb\xbf"

_PUZZLE_RE = re.compile(r"^[0-9.]{81}$")
_COUNT_RE = re.compile(r"^\d{1,9}$")
_NAME_RE = re.compile(r"^[^\W\d][\w .()/#:?%\[\]-]{0,63}$")  # (\w: letters of any script)
_SAMPLE = 50  # records looked at


def looks_like_puzzle(text: str | None) -> bool:
    """True for 81 characters of digits and dots (surrounding whitespace aside)."""
    return text is not None and bool(_PUZZLE_RE.match(text.strip()))


@dataclass(frozen=True)
class Shape:
    """Where the rows and their fields are in a file."""

    kind: str  # "csv", "text" or "fixed"
    n_fields: int = 1  # fields (csv) or tokens (fixed) per record
    puzzle_field: int = 0
    solution_field: int | None = None
    header: bool = False  # csv: the first record names the columns
    carried: tuple[tuple[int, str], ...] = ()  # other fields kept: (index, column name)
    columns: tuple[str, ...] = ()  # csv, fixed: every column name (header or column_N)
    start: int = 0  # where records start (after a BOM)
    data_start: int = 0  # where the first row may start (after the preamble)
    quoted: bool = False  # csv: quotes seen in the first bytes
    guessed: bool = False  # csv: a header by its shape alone (the run says so in its log)

    def rules(self) -> records.Rules:
        """How records are told apart in this file."""
        return records.Rules(quotes=self.kind == "csv", comments=self.kind != "csv",
                             data_start=self.data_start)

    def describe(self) -> dict:
        return {
            "kind": self.kind, "n_fields": self.n_fields, "puzzle_field": self.puzzle_field,
            "solution_field": self.solution_field, "header": self.header,
            "columns": list(self.columns), "carried": [name for _, name in self.carried],
            "data_start": self.data_start,
        }


def detect(head: bytes, name: str, at_end: bool, puzzle_column: str | None = None,
           solution_column: str | None = None, reserved: tuple[str, ...] = ()) -> Shape:
    """Decide a file's shape from its first bytes; InputError when it is unusable.

    `at_end`: the head is the whole file. `reserved`: our own column names, which a carried
    input column must not take.
    """
    refuse_binary(head, name)
    start = len(BOM) if head.startswith(BOM) else 0
    plain = _records(head, start, at_end, quotes=False)
    content = [(s, t) for s, t in plain if t is not None and t.strip()]
    # '#' lines are comments before a CSV's header and anywhere in a text file: not votes.
    sample = [t for _, t in content if not t.lstrip().startswith("#")][:_SAMPLE]
    commas = sum("," in t for t in sample)
    named = bool(sample) and sample[0].strip().strip('"').lower() in PUZZLE_NAMES
    # (a fixed-width file's fields are named as a headerless CSV's: column_2 is one of them)
    fixed_column = puzzle_column is not None and commas == 0 and bool(
        re.fullmatch(r"column_[1-9]\d*", puzzle_column))
    if (puzzle_column is not None and not fixed_column) or named or (
            sample and commas * 2 > min(len(sample), _SAMPLE)):
        return _csv(head, start, at_end, name, puzzle_column, solution_column, reserved)
    lines = [(s, t) for s, t in content if not t.lstrip().startswith("#")]
    if not lines:
        return Shape("text", start=start, data_start=start)
    first_start, first = lines[0][0], lines[0][1].strip()
    title = _is_title(first)
    data_start = start
    if title:
        data_start = _next_start(plain, first_start)
    # Fixed-width records: the layout most of the sampled records share (an odd first
    # record is one malformed row, not the rule the others are read by)
    layouts = [(len(tokens), next(i for i, t in enumerate(tokens) if looks_like_puzzle(t)))
               for _, t in lines[int(title):][:_SAMPLE] if len(tokens := t.split()) > 1
               and any(looks_like_puzzle(x) for x in tokens)]
    if fixed_column:
        n_tokens = _most_common([len(t.split()) for _, t in lines[int(title):][:_SAMPLE]])
        layouts = [(n_tokens, int(puzzle_column.split("_")[1]) - 1)]
        if layouts[0][1] >= n_tokens >= 2:
            raise InputError(f"{name}: no puzzle column {puzzle_column!r} (its fields: "
                             f"{', '.join(f'column_{i + 1}' for i in range(n_tokens))})")
        if n_tokens < 2:
            return _csv(head, start, at_end, name, puzzle_column, solution_column, reserved)
    if layouts:  # the other tokens are carried, named as a headerless CSV's columns
        n_tokens, puzzle = _most_common(layouts)
        names = [f"column_{i + 1}" for i in range(n_tokens)]
        solution = None
        if solution_column is not None:  # a field named as the others are: column_N
            if solution_column not in names or names.index(solution_column) == puzzle:
                raise InputError(f"{name}: no solution column {solution_column!r} (its "
                                 f"fields: {', '.join(names)}; column_{puzzle + 1} is the "
                                 "puzzle)")
            solution = names.index(solution_column)
        carried = carried_columns(names, (puzzle, solution), reserved)
        return Shape("fixed", n_fields=n_tokens, puzzle_field=puzzle, solution_field=solution,
                     start=start, data_start=data_start, carried=carried, columns=tuple(names))
    if solution_column is not None:  # (a typo would leave expected_match null unnoticed)
        raise InputError(f"{name}: no solution column {solution_column!r} (a puzzle a line: "
                         "no other field)")
    return Shape("text", start=start, data_start=data_start)


def _most_common(values: list):
    """The value most of `values` have; of those as common, the first met."""
    counts: dict = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=counts.__getitem__)


# Control bytes that text does not hold (tab, LF, CR aside): random bytes are a tenth them
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])


def refuse_binary(head: bytes, name: str) -> None:
    """InputError for first bytes that are not text: control bytes (NUL, ...), four or more
    and one in a hundred (a stray one or two make malformed rows, wherever they are), or
    mostly not UTF-8."""
    control = len(head) - len(head.translate(None, _CONTROL))
    if control >= 4 and control * 100 >= len(head):
        at = next(i for i, b in enumerate(head) if b in _CONTROL)
        which = "NUL" if head[at] == 0 else f"{head[at]:#04x}"
        raise InputError(f"{name}: not a text file (control bytes: {which} at offset {at})")
    text_bytes = head[len(BOM):] if head.startswith(BOM) else head
    decoded = text_bytes.decode("utf-8", "replace")
    if text_bytes and decoded.count("\ufffd") * 2 > len(text_bytes):
        raise InputError(f"{name}: not a text file (most of its first bytes are not UTF-8)")


def _records(head: bytes, start: int, at_end: bool, quotes: bool) -> list[tuple[int, str]]:
    """(start offset, text) of the whole records in the head, and (offset, None) last: where
    the record after them starts."""
    cap = len(head) // 2 + 2
    starts = np.empty(cap, np.int64)
    ends = np.empty(cap, np.int64)
    kinds = np.empty(cap, np.int8)
    # The scanner as Python (a few KiB: quick), on bytes: indexing gives ints.
    n, stop, _ = records.scan(head, start, len(head) + 1, len(head), at_end, quotes, False, 0,
                              records.MAX_RECORD, starts, ends, kinds)
    found = [(int(s), head[s:e].decode("utf-8", "replace"))
             for s, e in zip(starts[:n], ends[:n], strict=True)]
    return [*found, (int(stop), None)]


def _next_start(recs: list[tuple[int, str | None]], after: int) -> int:
    """The start of the record after the one starting at `after`."""
    return next(s for s, _ in recs if s > after)


def _is_title(line: str) -> bool:
    """A leading count line ('95') or a line of words: none of its tokens a puzzle, nor a
    run of digits long enough to be a broken one (that line is a malformed row)."""
    if _COUNT_RE.match(line):
        return True
    tokens = line.split()
    return (len(tokens) >= 2 and not any(_digits_only(t) for t in tokens)
            and any(any(ch.isalpha() for ch in t) for t in tokens))


def _digits_only(text: str) -> bool:
    t = text.strip()
    return len(t) >= 17 and all(ch in "0123456789." for ch in t)


def _is_header(first: list[str], data: list[list[str]]) -> tuple[bool, bool]:
    """Whether the first record names the columns (see the module's docstring), and whether
    that was decided by shape alone (no known column name in it)."""
    if any(looks_like_puzzle(f) or _digits_only(f) for f in first):
        return False, False
    names = [f.strip() for f in first]
    if {n.lower() for n in names} & set(PUZZLE_NAMES + SOLUTION_NAMES):
        return True, False
    if not all(_NAME_RE.match(n) for n in names if n):
        return False, False
    if not data:
        return True, True  # a lone record of names: a header with no rows under it
    by_shape = any(i < len(r) and looks_like_puzzle(r[i]) and not looks_like_puzzle(names[i])
                   for r in data for i in range(len(names)))
    return by_shape, by_shape


def _csv(head: bytes, start: int, at_end: bool, name: str, puzzle_column: str | None,
         solution_column: str | None, reserved: tuple[str, ...]) -> Shape:
    recs = _records(head, start, at_end, quotes=True)
    content = [(s, t) for s, t in recs
               if t is not None and t.strip() and not t.lstrip().startswith("#")]
    quoted = b'"' in head
    if not content:
        if puzzle_column is not None:
            raise InputError(f"{name}: empty, no column '{puzzle_column}'")
        return Shape("csv", columns=("puzzle",), start=start, data_start=start,
                      quoted=quoted)
    parsed = []
    for _, t in content[:_SAMPLE]:
        try:
            parsed.append(next(csv.reader([t])))
        except (csv.Error, StopIteration):
            parsed.append(t.split(","))
    first = parsed[0]
    header, guessed = _is_header(first, parsed[1:])
    first_start = content[0][0]
    if header:
        names = [f.strip() for f in first]
        data = parsed[1:]
        data_start = _next_start(recs, first_start)
    else:  # as many columns as most records have: an odd first record is one bad row
        names = [f"column_{i + 1}" for i in range(_most_common([len(r) for r in parsed]))]
        data = parsed
        data_start = first_start  # leading blank and '#' lines are the preamble
    puzzle = find_column(names, puzzle_column, PUZZLE_NAMES, "puzzle", name)
    if puzzle is None:
        puzzle = next((i for i in range(len(names))
                       if any(i < len(r) and looks_like_puzzle(r[i]) for r in data)), None)
        if puzzle is None and not data:
            puzzle = 0
        if puzzle is None:
            raise no_puzzle_column(name, names)
    solution = find_column(names, solution_column, SOLUTION_NAMES, "solution", name)
    if solution is None and not header:
        whole = [r for r in data if len(r) == len(names)][:5]
        solution = next((i for i in range(len(names)) if i != puzzle and whole
                         and all(looks_like_puzzle(r[i]) and "0" not in r[i]
                                 and "." not in r[i] for r in whole)), None)
    if solution == puzzle:
        solution = None
    carried = carried_columns(names, (puzzle, solution), reserved)
    return Shape("csv", n_fields=len(names), puzzle_field=puzzle, solution_field=solution,
                  header=header, carried=carried, columns=tuple(names), start=start,
                  data_start=data_start, quoted=quoted, guessed=guessed)


def find_column(names: list[str], wanted: str | None, defaults: tuple[str, ...], what: str,
                file_name: str) -> int | None:
    """The index of the column asked for (exactly, else ignoring case; InputError when there
    is none), or of the first known name among `defaults` (None when none is there): the
    one rule of CSV headers and Parquet schemas."""
    lowered = [n.lower() for n in names]
    if wanted is not None:
        if wanted in names:
            return names.index(wanted)
        if wanted.lower() in lowered:
            return lowered.index(wanted.lower())
        raise InputError(f"{file_name}: no {what} column '{wanted}' "
                         f"(columns: {', '.join(names)})")
    return next((lowered.index(d) for d in defaults if d in lowered), None)


def no_puzzle_column(file_name: str, names: list[str]) -> InputError:
    """The error of an input in which no column holds the puzzles."""
    return InputError(f"{file_name}: no puzzle column found (none is named "
                      f"{'/'.join(PUZZLE_NAMES)} and none holds 81-character puzzles; "
                      f"columns: {', '.join(names)})")


def carried_columns(names: list[str], skip: tuple, reserved) -> tuple[tuple[int, str], ...]:
    """(field, name) of the fields carried into the results (all but `skip`): each keeps
    its own name where it can (the first of a repeated one), the others take _2, _3, ...,
    never a name the input has itself (`id,id,id_2`: the input's id_2 stays id_2)."""
    names = [n or f"column_{i + 1}" for i, n in enumerate(names)]
    kept = [i for i in range(len(names)) if i not in skip]
    taken: set[str] = set()
    out: dict[int, str] = {}
    for i in kept:  # first the names that are free
        if names[i] not in reserved and names[i] not in taken:
            out[i] = names[i]
            taken.add(names[i])
    taken |= set(names)  # then the others, around every name the input has
    for i in kept:
        if i not in out:
            out[i] = unique_name(names[i], taken, set(reserved))
    return tuple((i, out[i]) for i in kept)


def unique_name(name: str, taken: set[str], reserved: frozenset[str] | set[str] = frozenset()
                ) -> str:
    """A column name no other column has: input_<name> for one of ours, then _2, _3, ..."""
    base = f"input_{name}" if name in reserved else name
    out, k = base, 2
    while out in taken or out in reserved:
        out = f"{base}_{k}"
        k += 1
    taken.add(out)
    return out
