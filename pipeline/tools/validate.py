"""`pipeline validate`: the Valid Sudoku problem as a command, for whole files of boards.

A file is read the way `pipeline run` reads it (pipeline.io.reader: CSV with or without a
header, a board a line, fixed-width records, gzip), so rows are numbered the same way:
from 0, data rows only. Each row is one of

    a board     (no solution column): valid when no row, column or box repeats a digit;
                blanks are allowed (a partly filled board) unless --complete is given;
    a pair      (a CSV with a solution column): valid when the puzzle's givens do not
                repeat a digit and the solution is a complete, valid grid that keeps
                every given.

The verdict on a pair comes from pipeline.sudoku.check (the independent checker); pipeline.sudoku.grid
only words the reason. Everything is numpy over a batch at a time, so memory stays flat.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import InputError
from pipeline.io import inputs
from pipeline.io.reader import Rows
from pipeline.io.strings import buffers
from pipeline.sudoku import check, grid

MAX_LISTED = 100_000  # rows listed in --json output at most


@dataclass
class Verdicts:
    """The verdicts on one chunk, row by row."""

    rows: np.ndarray  # (N,) int64 row numbers
    valid: np.ndarray  # (N,) bool
    reasons: dict[int, str]  # index in chunk -> why not valid
    kinds: np.ndarray  # (N,) object: 'complete grid', 'partial board', 'pair'


@dataclass
class Summary:
    file: str
    shape: str = "boards"  # "boards" or "pairs"
    rows: int = 0
    valid: int = 0
    kinds: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    listed: list[dict] = field(default_factory=list)
    truncated: bool = False

    @property
    def invalid(self) -> int:
        return self.rows - self.valid

    @property
    def exit_code(self) -> int:
        return 1 if self.invalid else 0

    def as_dict(self) -> dict:
        return {"file": self.file, "shape": self.shape, "rows": self.rows,
                "valid": self.valid, "invalid": self.invalid,
                "kinds": dict(self.kinds), "causes": dict(self.causes.most_common()),
                "exit_code": self.exit_code, "listed": self.listed,
                "listed_truncated": self.truncated}


def _cause(reason: str) -> str:
    """A reason with its numbers taken out, to count like reasons together."""
    # A number on its own (1, 41, 1,048,576), not one inside a word (UTF-8).
    numbers = re.sub(r"(?<![\w-])\d+(?:,\d{3})*(?!\w)", "N", reason)
    return re.sub(r"'[^']*'", "'?'", numbers)


def _squares(grid_: np.ndarray, mask: np.ndarray) -> str:
    first = int(np.flatnonzero(mask)[0])
    return f"grid row {first // 9 + 1}, column {first % 9 + 1}"


def _expected(rows: Rows):
    """The expected-solution column as (offsets, bytes, present), or None."""
    if "expected_solution" not in rows.columns:
        return None
    offsets, data = buffers(rows.columns["expected_solution"])
    present = np.diff(offsets) > 0
    return offsets, data, present


def check_rows(first_row: int, rows: Rows, complete: bool = False) -> Verdicts:
    """Judge every row of a batch."""
    n = rows.n
    reasons: dict[int, str] = {}
    puzzles, bad = grid.encode_buffers(*buffers(rows.columns["puzzle"]))
    expected = _expected(rows)
    pair = expected is not None
    label = "puzzle: " if pair else ""
    for i, why in {**bad, **rows.reasons}.items():
        reasons[i] = label + ("not a board: " if not pair else "") + why
    readable = np.ones(n, dtype=bool)
    readable[list(reasons)] = False
    rows = np.flatnonzero(readable)
    for i, why in grid.find_clashes(puzzles[rows]).items():
        reasons[int(rows[i])] = label + why
    blanks = np.count_nonzero(puzzles == 0, axis=1)
    kinds = np.where(blanks == 0, "complete grid", "partial board").astype(object)
    kinds[~readable] = "unreadable row"
    if not pair:
        if complete:
            for i in np.flatnonzero((blanks > 0) & readable).tolist():
                reasons.setdefault(i, f"not complete: {blanks[i]} blank squares")
    else:
        kinds[readable] = "pair"
        reasons.update(_check_pairs(expected, puzzles, reasons))
    valid = np.ones(n, dtype=bool)
    valid[list(reasons)] = False
    return Verdicts(np.arange(first_row, first_row + n), valid, reasons, kinds)


def _check_pairs(expected, puzzles: np.ndarray, known: dict[int, str]) -> dict[int, str]:
    """Reasons for pairs whose puzzle is fine but whose solution is not."""
    offsets, data, present = expected
    solutions, bad = grid.encode_buffers(offsets, data)
    ok = check.is_solution(puzzles, solutions)
    ok[list(bad)] = False
    ok[~present] = False
    out: dict[int, str] = {}
    todo = [i for i in np.flatnonzero(~ok).tolist() if i not in known]
    if not todo:
        return out
    clashes = grid.find_clashes(solutions[todo])
    complete = check.is_complete_grid(solutions[todo])
    for j, i in enumerate(todo):
        if not present[i]:
            out[i] = "no solution given"
        elif i in bad:
            out[i] = f"solution: {bad[i]}"
        elif j in clashes:
            out[i] = f"solution: {clashes[j]}"
        elif not complete[j]:
            out[i] = f"solution: not complete ({np.count_nonzero(solutions[i] == 0)} blanks)"
        else:
            changed = (puzzles[i] != 0) & (puzzles[i] != solutions[i])
            if changed.any():
                s = int(np.flatnonzero(changed)[0])
                out[i] = (f"solution changes the given {puzzles[i][s]} at "
                          f"{_squares(puzzles[i], changed)} to {solutions[i][s]}")
            else:
                out[i] = "solution fails the check"
    return out


def verdicts(path: str, complete: bool = False, puzzle_column: str | None = None,
             solution_column: str | None = None) -> tuple[str, Iterator[Verdicts]]:
    """The file's shape ('boards' or 'pairs') and its verdicts batch by batch."""
    from pipeline.io import schema

    inp = inputs.open_input(path, 0, puzzle_column, solution_column, schema.OURS,
                          stdin=sys.stdin.buffer if path == "-" else None)
    batches = inputs.read_whole(inp, sys.stdin.buffer if path == "-" else None)
    first = next(batches, None)  # reading the first batch settles a stream's shape
    shape = "pairs" if inp.shape.solution_field is not None else "boards"

    def gen() -> Iterator[Verdicts]:
        if first is None:
            return
        yield check_rows(*first, complete)
        for first_row, rows in batches:
            yield check_rows(first_row, rows, complete)

    return shape, gen()


def validate(path: str, complete: bool = False, show_all: bool = False, as_json: bool = False,
             puzzle_column: str | None = None, solution_column: str | None = None,
             echo=print) -> Summary:
    """Check a file, print a line per invalid row (or every row) or collect them for JSON."""
    shape, chunks = verdicts(path, complete, puzzle_column, solution_column)
    summary = Summary(file=path, shape=shape)
    for v in chunks:
        summary.rows += len(v.valid)
        summary.valid += int(v.valid.sum())
        summary.kinds.update(v.kinds.tolist())
        summary.causes.update(_cause(r) for r in v.reasons.values())
        show = np.arange(len(v.valid)) if show_all else np.array(sorted(v.reasons), dtype=int)
        for i in show.tolist():
            row = int(v.rows[i])
            if as_json:
                if len(summary.listed) >= MAX_LISTED:
                    summary.truncated = True
                    continue
                entry = {"row": row, "valid": bool(v.valid[i])}
                entry["reason" if not v.valid[i] else "kind"] = v.reasons.get(i, v.kinds[i])
                summary.listed.append(entry)
            elif v.valid[i]:
                echo(f"row {row}: valid ({v.kinds[i]})")
            else:
                echo(f"row {row}: {v.reasons[i]}")
    if summary.rows == 0:
        raise InputError(f"{path}: holds no boards")
    return summary


def describe(summary: Summary) -> str:
    """One line for a person."""
    kinds = ", ".join(f"{n:,} {k}{'s' if n != 1 else ''}"
                      for k, n in summary.kinds.most_common())
    line = (f"{summary.file}: {summary.rows:,} rows ({kinds}): {summary.valid:,} valid, "
            f"{summary.invalid:,} invalid")
    if summary.causes:
        top = "; ".join(f"{c} x{n:,}" for c, n in summary.causes.most_common(3))
        line += f" -- most common: {top}"
    return line


def main(path: str, complete: bool = False, show_all: bool = False, as_json: bool = False,
         puzzle_column: str | None = None, solution_column: str | None = None,
         quiet: bool = False) -> int:
    """`pipeline validate`: print, and return the exit code (0 all valid, 1 some not)."""
    summary = validate(path, complete, show_all, as_json, puzzle_column, solution_column,
                       echo=(lambda s: None) if quiet else print)
    if as_json:
        print(json.dumps(summary.as_dict()))
    elif not quiet:
        print(describe(summary), file=sys.stderr)
    return summary.exit_code
