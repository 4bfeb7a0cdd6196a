"""The classic problems on list[list[str]] boards: Valid Sudoku and Sudoku Solver."""

from __future__ import annotations

import copy
import re

import pytest
from conftest import LEET, LEET_SOLUTION, SOLUTION

import pipeline
from pipeline import InvalidPuzzle, MalformedPuzzle, PuzzleError, UnsolvablePuzzle
from pipeline.sudoku.classic import is_valid_sudoku, solve_sudoku


def board(text: str) -> list[list[str]]:
    return [[text[r * 9 + c] for c in range(9)] for r in range(9)]


EXAMPLE_1 = [
    ["5", "3", ".", ".", "7", ".", ".", ".", "."],
    ["6", ".", ".", "1", "9", "5", ".", ".", "."],
    [".", "9", "8", ".", ".", ".", ".", "6", "."],
    ["8", ".", ".", ".", "6", ".", ".", ".", "3"],
    ["4", ".", ".", "8", ".", "3", ".", ".", "1"],
    ["7", ".", ".", ".", "2", ".", ".", ".", "6"],
    [".", "6", ".", ".", ".", ".", "2", "8", "."],
    [".", ".", ".", "4", "1", "9", ".", ".", "5"],
    [".", ".", ".", ".", "8", ".", ".", "7", "9"],
]
# Valid Sudoku example 2: the same board with the 5 of the top-left corner replaced by an 8,
# which repeats the 8 of box 1 (and of column 1).
EXAMPLE_2 = copy.deepcopy(EXAMPLE_1)
EXAMPLE_2[0][0] = "8"
EXPECTED_1 = [
    ["5", "3", "4", "6", "7", "8", "9", "1", "2"],
    ["6", "7", "2", "1", "9", "5", "3", "4", "8"],
    ["1", "9", "8", "3", "4", "2", "5", "6", "7"],
    ["8", "5", "9", "7", "6", "1", "4", "2", "3"],
    ["4", "2", "6", "8", "5", "3", "7", "9", "1"],
    ["7", "1", "3", "9", "2", "4", "8", "5", "6"],
    ["9", "6", "1", "5", "3", "7", "2", "8", "4"],
    ["2", "8", "7", "4", "1", "9", "6", "3", "5"],
    ["3", "4", "5", "2", "8", "6", "1", "7", "9"],
]


def test_example_1_is_valid():
    assert board(LEET) == EXAMPLE_1
    assert is_valid_sudoku(EXAMPLE_1) is True


def test_example_2_is_not_valid():
    assert is_valid_sudoku(EXAMPLE_2) is False


def test_valid_does_not_modify_the_board():
    b = copy.deepcopy(EXAMPLE_1)
    is_valid_sudoku(b)
    assert b == EXAMPLE_1


@pytest.mark.parametrize("r1, c1, r2, c2", [(0, 2, 0, 8), (2, 0, 8, 0), (3, 3, 5, 5)])
def test_repeats_in_row_column_box(r1, c1, r2, c2):
    b = [["."] * 9 for _ in range(9)]
    b[r1][c1] = b[r2][c2] = "4"
    assert is_valid_sudoku(b) is False
    b[r2][c2] = "5"
    assert is_valid_sudoku(b) is True


def test_validity_does_not_mean_solvable():
    # Valid Sudoku only looks at the givens: this board is valid and has no solution.
    b = board("12345678." + "........9" + "." * 63)
    assert is_valid_sudoku(b) is True
    with pytest.raises(UnsolvablePuzzle):
        solve_sudoku(b)


def test_empty_and_full_boards_are_valid():
    assert is_valid_sudoku([["."] * 9 for _ in range(9)]) is True
    assert is_valid_sudoku(board(SOLUTION)) is True


def test_solve_example_in_place():
    b = copy.deepcopy(EXAMPLE_1)
    assert solve_sudoku(b) is None
    assert b == EXPECTED_1
    assert "".join("".join(r) for r in b) == LEET_SOLUTION


def test_solve_a_board_with_several_solutions_fills_one():
    b = [["."] * 9 for _ in range(9)]
    solve_sudoku(b)
    text = "".join("".join(r) for r in b)
    assert is_valid_sudoku(b)
    assert sorted(text) == sorted("123456789" * 9)


def test_solve_invalid_board_raises_and_leaves_it():
    b = copy.deepcopy(EXAMPLE_2)
    with pytest.raises(InvalidPuzzle, match="twice in"):
        solve_sudoku(b)
    assert b == EXAMPLE_2


@pytest.mark.parametrize("bad", [
    [["."] * 9 for _ in range(8)],
    [["."] * 8 for _ in range(9)],
    [["."] * 9 for _ in range(8)] + [["."] * 10],
])
def test_wrong_shape_is_malformed(bad):
    with pytest.raises(MalformedPuzzle):
        is_valid_sudoku(bad)
    with pytest.raises(MalformedPuzzle):
        solve_sudoku(bad)


def test_stray_character_is_malformed():
    b = copy.deepcopy(EXAMPLE_1)
    b[4][4] = "x"
    with pytest.raises(MalformedPuzzle, match="square r5c5 holds 'x'"):
        is_valid_sudoku(b)
    with pytest.raises(MalformedPuzzle):
        solve_sudoku(b)


@pytest.mark.parametrize("cell, said", [("10", "'10'"), (None, "None"), (1.0, "1.0"),
                                        ("", "''"), (True, "True")])
def test_a_cell_that_is_not_one_character_is_named(cell, said):
    """Found by a new user: '10' said `length 82, expected 81`, None `length 84`."""
    b = copy.deepcopy(EXAMPLE_1)
    b[0][2] = cell
    with pytest.raises(MalformedPuzzle, match=f"square r1c3 holds {re.escape(said)}"):
        is_valid_sudoku(b)
    with pytest.raises(MalformedPuzzle, match="square r1c3"):
        solve_sudoku(b)


def test_digits_as_ints_are_cells_and_tuple_rows_are_refused_untouched():
    b = [[int(c) if c != "." else 0 for c in row] for row in EXAMPLE_1]
    assert is_valid_sudoku(b)
    rows = copy.deepcopy(EXAMPLE_1)
    rows[8] = tuple(rows[8])
    before = copy.deepcopy(rows)
    with pytest.raises(TypeError, match="rows must be lists, not tuple"):
        solve_sudoku(rows)
    assert rows == before  # (it filled rows 1-8 before failing on the ninth)


def test_errors_are_puzzle_errors_and_value_errors():
    for exc in (InvalidPuzzle, MalformedPuzzle, UnsolvablePuzzle):
        assert issubclass(exc, PuzzleError) and issubclass(exc, ValueError)


def test_public_api():
    assert pipeline.is_valid_sudoku is is_valid_sudoku
    assert pipeline.solve_sudoku is solve_sudoku
