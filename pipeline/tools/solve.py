"""`pipeline solve`: puzzles from the command line or standard input, solved and shown."""

from __future__ import annotations

import io
import sys

import click

BOARD_SNIFF = 4096  # bytes of standard input read to tell drawn boards from records
BOARD_SNIFF_LINES = 12  # ... in its first lines (a title or status line may come first)


class _Prefixed(io.RawIOBase):
    """A stream that gives `head` first, then the rest of `rest`."""

    def __init__(self, head: bytes, rest):
        self.head, self.rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if len(self.head):
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def ratings(grids, outcome) -> dict[int, str]:
    """The SER of each solved puzzle, as `ER/EP/ED technique` (serate's %r/%p/%d), or why
    it has none."""
    import numpy as np

    from pipeline.sudoku import rate
    from pipeline.sudoku.status import Status

    rows = np.flatnonzero(outcome.status == Status.SOLVED)
    got = rate.rate_grids(grids[rows], outcome.solutions[rows])
    out = {}
    for k, i in enumerate(rows.tolist()):
        status = rate.STATUS_NAMES[got.status[k]]
        if status == "ok" and got.steps[k] == 0:
            out[i] = "0.0/0.0/0.0 (a complete grid: no step to rate)"
        elif status == "ok":
            out[i] = (f"{got.er[k] / 10:.1f}/{got.ep[k] / 10:.1f}/{got.ed[k] / 10:.1f} "
                      f"{rate.TECHNIQUES[got.technique[k]]}")
        else:
            out[i] = f"not rated ({status}, {got.reached[k] / 10:.1f}+ so far)"
    return out


def given(puzzle: str):
    """The puzzles of the command line: PUZZLE, or `-`: standard input read as `run` reads
    it, or boards drawn as `solve` draws them. Yields (first row, grids, malformed rows)."""
    from pipeline.io import inputs
    from pipeline.io.strings import buffers
    from pipeline.sudoku import grid

    if puzzle != "-":
        grids, why = grid.encode([puzzle])
        yield 0, grids, {i: w for i, w in enumerate(why) if w}
        return
    from pipeline.io import schema

    stdin = sys.stdin.buffer
    head = stdin.read(BOARD_SNIFF)
    lines = head.decode("utf-8", "replace").splitlines()[:BOARD_SNIFF_LINES]
    if any(grid.is_board_row(line) for line in lines):  # drawn boards, as we print them
        texts, short = grid.read_boards((head + stdin.read()).decode("utf-8", "replace"))
        grids, why = grid.encode(texts)
        yield 0, grids, {i: w for i, w in enumerate(why) if w} | short
        return
    stdin = io.BufferedReader(_Prefixed(head, stdin))
    inp = inputs.open_input("-", 0, None, None, schema.OURS, stdin=stdin)
    for first, rows in inputs.read_whole(inp, stdin):
        grids, malformed = grid.encode_buffers(*buffers(rows.columns["puzzle"]))
        malformed.update(rows.reasons)
        yield first, grids, malformed


def main(puzzle: str, fmt: str, first_solution: bool, rate: bool = False) -> int:
    """`pipeline solve`: read, solve, print; the exit code."""
    from pipeline.sudoku import grid, solver
    from pipeline.sudoku.status import Status

    ok = True
    shown = 0
    for first, grids, malformed in given(puzzle):
        outcome = solver.solve_grids(grids, 1 if first_solution else 2, malformed)
        rated = ratings(grids, outcome) if rate else {}
        texts = grid.decode(outcome.solutions, blank="0")
        for i in range(len(outcome)):
            status = Status(int(outcome.status[i]))
            has = status in (Status.SOLVED, Status.MULTIPLE)
            ok &= has
            reason = outcome.reasons.get(i)
            if fmt == "line":
                line = {Status.SOLVED: texts[i], Status.MULTIPLE: f"multiple {texts[i]}"}
                click.echo(line.get(status, status.label)
                           + (f" {rated[i]}" if i in rated else ""))
                if not has or reason:
                    click.echo(f"row {first + i}: {status.label}: {reason or status.label}",
                               err=True)
                continue
            if shown:
                click.echo("")
            shown += 1
            head = status.label
            if outcome.guesses[i] >= 0:
                head += f", {outcome.guesses[i]} guesses"
            if reason:
                head += f": {reason}"
            if i in rated:
                head += f", SER {rated[i]}"
            click.echo(head)
            if has:
                click.echo(grid.show(outcome.solutions[i]))
    return 0 if ok else 1
