"""The two classic problems as functions on the seeds' board: list[list[str]] with '.' blanks.

    is_valid_sudoku(board)  Valid Sudoku: no digit twice in a row, column or box (givens only).
    solve_sudoku(board)     Sudoku Solver: fill the board in place with its solution.

Both go through the same code as the pipeline (grid encoding, the engine, the checker).
"""

from __future__ import annotations

from pipeline.errors import InvalidPuzzle, MalformedPuzzle, UnsolvablePuzzle
from pipeline.sudoku import grid, solver
from pipeline.sudoku.status import Status

Board = list[list[str]]


def _board_text(board: Board) -> str:
    if len(board) != 9 or any(len(row) != 9 for row in board):
        raise MalformedPuzzle("a board is 9 rows of 9 cells")
    return "".join(str(cell) for row in board for cell in row)


def is_valid_sudoku(board: Board) -> bool:
    """True when no given digit repeats in a row, column or box (blanks are '.')."""
    grids, reasons = grid.encode([_board_text(board)])
    if reasons[0]:
        raise MalformedPuzzle(reasons[0])
    return not grid.find_clashes(grids)


def solve_sudoku(board: Board) -> None:
    """Fill the board in place with its solution (the first one, if it has several)."""
    outcome = solver.solve_strings([_board_text(board)], limit=1)
    status = Status(int(outcome.status[0]))
    why = outcome.reasons.get(0, "")
    if status == Status.MALFORMED:
        raise MalformedPuzzle(why)
    if status == Status.INVALID:
        raise InvalidPuzzle(why)
    if status != Status.SOLVED:
        raise UnsolvablePuzzle(why or "the puzzle has no solution")
    digits = outcome.solutions[0].tolist()
    for r in range(9):
        for c in range(9):
            board[r][c] = str(digits[r * 9 + c])
