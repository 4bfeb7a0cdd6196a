"""The independent replayer: does a solving trace lead from its puzzle to its solution?

It shares no code with the rater (nor with the engine or grid.py), as check.py shares none
with the engine. A trace is a list of steps, each its placements and its eliminations, every
one a (square, digit) pair; a step is a `(placements, eliminations)` pair or anything with
those two attributes (the rater's Step). Replaying keeps nine candidate bits per square:

- a given or a placement fixes its square and removes its digit from the square's 20 peers
  (that is what placing a digit does; a trace lists only what its technique removes);
- a placement must be of an open square, a digit still possible there, and the solution's;
- an elimination must remove a candidate still there, and never the solution's digit;
- a step must do something, and after the last one every square is placed.

The first rule broken is the verdict; a trace that breaks none replays. `candidates_along`
gives the candidates after each step, for comparing a trace with another solver's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def _peers(square: int) -> list[int]:
    """The 20 squares sharing a grid row, column or box with the square."""
    r, c = divmod(square, 9)
    top, left = r - r % 3, c - c % 3
    same = {r * 9 + i for i in range(9)} | {i * 9 + c for i in range(9)}
    same |= {(top + i // 3) * 9 + left + i % 3 for i in range(9)}
    return sorted(same - {square})


_PEERS = [_peers(s) for s in range(81)]


def square_name(square: int) -> str:
    """A square in players' notation: r1c1 .. r9c9."""
    return f"r{square // 9 + 1}c{square % 9 + 1}"


def _as_digits(grid: str | Sequence[int] | np.ndarray, what: str) -> list[int]:
    if isinstance(grid, str):
        digits = [0 if ch in ".0" else ord(ch) - 48 for ch in grid.strip()]
    else:
        digits = [int(v) for v in np.asarray(grid).reshape(-1)]
    if len(digits) != 81 or any(not 0 <= d <= 9 for d in digits):
        raise ValueError(f"{what}: expected 81 digits 0..9")
    return digits


def _parts(step) -> tuple[Iterable, Iterable]:
    if hasattr(step, "placements"):
        return step.placements, step.eliminations
    placements, eliminations = step
    return placements, eliminations


class _Board:
    """Candidates (nine bits a square) and placed digits (0 for open) while replaying."""

    def __init__(self) -> None:
        self.candidates = [0b1_1111_1111] * 81
        self.placed = [0] * 81

    def place(self, square: int, digit: int) -> None:
        self.placed[square] = digit
        self.candidates[square] = 1 << (digit - 1)
        for p in _PEERS[square]:
            self.candidates[p] &= ~(1 << (digit - 1))


def why_not(
    puzzle: str | Sequence[int] | np.ndarray,
    solution: str | Sequence[int] | np.ndarray,
    steps: Iterable,
) -> str | None:
    """Why the trace does not replay (the first rule it breaks), or None when it does."""
    given = _as_digits(puzzle, "puzzle")
    answer = _as_digits(solution, "solution")
    if 0 in answer:
        return "the solution has blanks"
    board = _Board()
    for square, digit in enumerate(given):
        if digit and digit != answer[square]:
            return f"the solution changes the given {square_name(square)}={digit}"
        if digit:
            if not board.candidates[square] >> (digit - 1) & 1:
                return f"the given {square_name(square)}={digit} clashes with another given"
            board.place(square, digit)
    for number, step in enumerate(steps, 1):
        placements, eliminations = _parts(step)
        acted = False
        for square, digit in placements:
            square, digit = int(square), int(digit)
            where = f"step {number}: {square_name(square)}={digit}"
            if not (0 <= square < 81 and 1 <= digit <= 9):
                return f"{where} is not a square and digit"
            if board.placed[square]:
                return f"{where} places a square already placed"
            if not board.candidates[square] >> (digit - 1) & 1:
                return f"{where} places a digit no longer possible there"
            if digit != answer[square]:
                return f"{where} is not the solution's {answer[square]}"
            board.place(square, digit)
            acted = True
        for square, digit in eliminations:
            square, digit = int(square), int(digit)
            where = f"step {number}: {square_name(square)}<>{digit}"
            if not (0 <= square < 81 and 1 <= digit <= 9):
                return f"{where} is not a square and digit"
            if digit == answer[square]:
                return f"{where} removes the solution's digit"
            if not board.candidates[square] >> (digit - 1) & 1:
                return f"{where} removes a candidate already gone"
            board.candidates[square] &= ~(1 << (digit - 1))
            acted = True
        if not acted:
            return f"step {number} places and removes nothing"
    still_open = board.placed.count(0)
    if still_open:
        return f"the trace ends with {still_open} squares open"
    return None


def candidates_along(puzzle: str | Sequence[int] | np.ndarray, steps: Iterable):
    """The candidates (nine bits a square) once the givens are placed, then after each step,
    each step applied as it says without any check (why_not's rules)."""
    board = _Board()
    for square, digit in enumerate(_as_digits(puzzle, "puzzle")):
        if digit:
            board.place(square, digit)
    yield list(board.candidates)
    for step in steps:
        placements, eliminations = _parts(step)
        for square, digit in placements:
            board.place(int(square), int(digit))
        for square, digit in eliminations:
            board.candidates[int(square)] &= ~(1 << (int(digit) - 1))
        yield list(board.candidates)


def replays(puzzle, solution, steps: Iterable) -> bool:
    """Whether applying the trace's steps in order reaches the solution and never removes a
    digit of it."""
    return why_not(puzzle, solution, steps) is None
