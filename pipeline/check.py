"""The independent checker: is a grid a solution of its puzzle?

It shares no code with the engine (nor with grid.py): rows, columns and boxes come from
reshaping the batch, and a unit is right when its nine digits are exactly 1..9.
"""

from __future__ import annotations

import numpy as np

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
    return is_complete_grid(solutions) & keeps_givens(puzzles, solutions)
