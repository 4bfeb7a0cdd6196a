"""pipeline.sudoku.check, the independent checker, judged against grids built here (no engine)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PUZZLE, SOLUTION
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import check

BASE = np.array([int(c) for c in SOLUTION], dtype=np.uint8)


def _puzzle() -> np.ndarray:
    return np.array([0 if c == "." else int(c) for c in PUZZLE], dtype=np.uint8)


@st.composite
def valid_grids(draw) -> np.ndarray:
    """A valid solved grid: the canonical pattern under validity-preserving transformations."""
    base = np.array([[(3 * (r % 3) + r // 3 + c) % 9 + 1 for c in range(9)] for r in range(9)],
                    dtype=np.uint8)
    relabel = np.array([0] + draw(st.permutations(range(1, 10))), dtype=np.uint8)
    g = relabel[base]
    bands = draw(st.permutations(range(3)))
    rows = [b * 3 + r for b in bands for r in draw(st.permutations(range(3)))]
    stacks = draw(st.permutations(range(3)))
    cols = [s * 3 + c for s in stacks for c in draw(st.permutations(range(3)))]
    g = g[rows][:, cols]
    if draw(st.booleans()):
        g = g.T
    return np.ascontiguousarray(g).reshape(81)


def _independent_ok(g: np.ndarray) -> bool:
    """A plain-Python judge, for cross-checking."""
    m = g.reshape(9, 9).tolist()
    units = [m[r] for r in range(9)] + [[m[r][c] for r in range(9)] for c in range(9)]
    units += [[m[br + r][bc + c] for r in range(3) for c in range(3)]
              for br in (0, 3, 6) for bc in (0, 3, 6)]
    return all(sorted(u) == list(range(1, 10)) for u in units)


@given(valid_grids())
@settings(max_examples=150, deadline=None)
def test_accepts_valid_grids(g):
    assert _independent_ok(g)
    assert check.is_complete_grid(g[None]).tolist() == [True]
    assert check.is_solution(np.zeros((1, 81), np.uint8), g[None]).tolist() == [True]
    # The grid is a solution of any puzzle made of some of its own squares.
    keep = (np.arange(81) % 3 == 0)
    assert check.is_solution(np.where(keep, g, 0)[None], g[None]).tolist() == [True]


@given(valid_grids(), st.integers(0, 80), st.integers(1, 8))
@settings(max_examples=200, deadline=None)
def test_rejects_one_digit_changed(g, square, shift):
    bad = g.copy()
    bad[square] = (bad[square] - 1 + shift) % 9 + 1
    assert bad[square] != g[square]
    assert not _independent_ok(bad)
    assert check.is_complete_grid(bad[None]).tolist() == [False]
    assert check.is_solution(np.zeros((1, 81), np.uint8), bad[None]).tolist() == [False]


@given(valid_grids(), st.integers(0, 80))
@settings(max_examples=100, deadline=None)
def test_rejects_a_solution_that_drops_a_given(g, square):
    puzzle = np.zeros(81, np.uint8)
    puzzle[square] = g[square] % 9 + 1  # a given the grid does not keep
    assert check.keeps_givens(puzzle[None], g[None]).tolist() == [False]
    assert check.is_solution(puzzle[None], g[None]).tolist() == [False]


@pytest.mark.parametrize("value", [0, 10, 255])
def test_rejects_out_of_range_squares(value):
    bad = BASE.copy()
    bad[40] = value
    assert check.is_complete_grid(bad[None]).tolist() == [False]


def test_rejects_swapped_rows_that_break_boxes():
    g = BASE.reshape(9, 9)[[0, 3, 2, 1, 4, 5, 6, 7, 8]].reshape(81)
    # Rows and columns are still permutations, but boxes 1-3 and 4-6 are not.
    assert _independent_ok(g) is False
    assert check.is_complete_grid(g[None]).tolist() == [False]


def test_batch_and_known_solution():
    batch = np.stack([BASE, np.zeros(81, np.uint8), BASE])
    puzzles = np.stack([_puzzle(), _puzzle(), np.zeros(81, np.uint8)])
    assert check.is_solution(puzzles, batch).tolist() == [True, False, True]
    assert check.is_complete_grid(np.zeros((0, 81), np.uint8)).tolist() == []


def test_rejects_wrong_shape():
    with pytest.raises(ValueError):
        check.is_complete_grid(np.zeros((2, 80), np.uint8))
