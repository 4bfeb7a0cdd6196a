"""The independent checker: is a grid a solution of its puzzle?

It shares no code with the engine (nor with grid.py): a unit is right when its nine digits
are exactly 1..9. `is_solution` is compiled (it runs on every row of a run); the numpy
functions beside it say the same thing in array terms, and the tests hold them to agree.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_ALL_DIGITS = 0b11_1111_1110  # bits 1..9


def _units(solutions: np.ndarray) -> np.ndarray:
    """All 27 units of each grid as an (N, 27, 9) view-built array."""
    g = solutions.reshape(-1, 9, 9)
    rows = g
    cols = g.transpose(0, 2, 1)
    boxes = g.reshape(-1, 3, 3, 3, 3).transpose(0, 1, 3, 2, 4).reshape(-1, 9, 9)
    return np.concatenate([rows, cols, boxes], axis=1)


def is_complete_grid(solutions: np.ndarray) -> np.ndarray:
    """(N,) bool: every square holds 1..9 and every unit is a permutation of 1..9."""
    s = np.asarray(solutions)
    if s.ndim != 2 or s.shape[1] != 81:
        raise ValueError(f"expected an (N, 81) array, got shape {s.shape}")
    in_range = ((s >= 1) & (s <= 9)).all(axis=1)
    bits = np.left_shift(np.uint16(1), np.clip(s, 0, 15).astype(np.uint16))
    seen = np.bitwise_or.reduce(_units(bits), axis=2)  # (N, 27)
    # Nine squares covering all nine digits means each digit exactly once.
    return in_range & (seen == _ALL_DIGITS).all(axis=1)


def keeps_givens(puzzles: np.ndarray, solutions: np.ndarray) -> np.ndarray:
    """(N,) bool: every given of the puzzle stands unchanged in the solution."""
    p = np.asarray(puzzles)
    return ((p == 0) | (p == np.asarray(solutions))).all(axis=1)


def is_solution(puzzles: np.ndarray, solutions: np.ndarray) -> np.ndarray:
    """(N,) bool: each solution is a complete valid grid that keeps its puzzle's givens."""
    p = np.ascontiguousarray(puzzles, dtype=np.uint8)
    s = np.ascontiguousarray(solutions, dtype=np.uint8)
    if p.shape != s.shape or (s.ndim != 2 or s.shape[1] != 81):
        raise ValueError(f"expected two (N, 81) arrays, got {p.shape} and {s.shape}")
    return _is_solution(p, s)


def is_solution_numpy(puzzles: np.ndarray, solutions: np.ndarray) -> np.ndarray:
    """The same verdict as is_solution, in numpy."""
    return is_complete_grid(solutions) & keeps_givens(puzzles, solutions)


@njit(cache=True)
def _is_solution(puzzles, solutions):
    n = solutions.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    rows = np.zeros(9, dtype=np.int64)
    cols = np.zeros(9, dtype=np.int64)
    boxes = np.zeros(9, dtype=np.int64)
    for i in range(n):
        rows[:] = 0
        cols[:] = 0
        boxes[:] = 0
        ok = True
        for s in range(81):
            d = solutions[i, s]
            given = puzzles[i, s]
            if d < 1 or d > 9 or (given != 0 and given != d):
                ok = False
                break
            r = s // 9
            c = s % 9
            bit = 1 << d
            rows[r] |= bit
            cols[c] |= bit
            boxes[(r // 3) * 3 + c // 3] |= bit
        if ok:
            for k in range(9):
                if rows[k] != _ALL_DIGITS or cols[k] != _ALL_DIGITS or boxes[k] != _ALL_DIGITS:
                    ok = False
                    break
        out[i] = ok
    return out
