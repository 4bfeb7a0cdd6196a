"""The independent checker: is a grid a solution of its puzzle?

It shares no code with the engine (nor with grid.py): a unit is right when its nine digits
are exactly 1..9. `is_solution` is compiled (it runs on every row of a run); the numpy
functions beside it say the same thing in array terms, and the tests hold them to agree.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled

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


@compiled.kernel("(readonly u1[:, ::1], readonly u1[:, ::1]) -> b1[::1]", nogil=True)
def _is_solution(puzzles, solutions):
    # Band by band: a row's nine digits as one bit mask each, the three boxes of the band
    # as three masks, the columns as nine running masks. Flags are OR-ed, no early exits:
    # the loop stays simple enough for the compiler to keep everything in registers.
    n = solutions.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    cols = np.zeros(9, np.int32)
    for i in range(n):
        p = puzzles[i]
        q = solutions[i]
        bad = np.int32(0)
        for c in range(9):
            cols[c] = 0
        for band in range(3):
            box0 = np.int32(0)
            box1 = np.int32(0)
            box2 = np.int32(0)
            for r in range(3):
                base = (band * 3 + r) * 9
                row = np.int32(0)
                for c in range(9):
                    d = np.int32(q[base + c])
                    g = np.int32(p[base + c])
                    bad |= ((d - 1) | (9 - d)) >> 31  # d outside 1..9
                    bad |= (g != 0) & (g != d)  # a given changed
                    bit = np.int32(1) << (d & 15)
                    row |= bit
                    cols[c] |= bit
                    if c < 3:
                        box0 |= bit
                    elif c < 6:
                        box1 |= bit
                    else:
                        box2 |= bit
                bad |= row ^ _ALL_DIGITS
            bad |= (box0 ^ _ALL_DIGITS) | (box1 ^ _ALL_DIGITS) | (box2 ^ _ALL_DIGITS)
        for c in range(9):
            bad |= cols[c] ^ _ALL_DIGITS
        out[i] = bad == 0
    return out
