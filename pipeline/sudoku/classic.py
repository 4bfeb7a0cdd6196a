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
    """The board as 81 characters; MalformedPuzzle naming the first cell that is not one
    character ('1'-'9', '.' or '0')."""
    if len(board) != 9 or any(len(row) != 9 for row in board):
        raise MalformedPuzzle("a board is 9 rows of 9 cells")
    cells = []
    for r, row in enumerate(board):
        for c, cell in enumerate(row):
            text = cell if isinstance(cell, str) else (
                str(cell) if isinstance(cell, int) and not isinstance(cell, bool) else None)
            if text is None or len(text) != 1 or text not in "0123456789.":
                raise MalformedPuzzle(f"square r{r + 1}c{c + 1} holds {cell!r}, not a digit "
                                      f"or '.'")
            cells.append(text)
    return "".join(cells)


def is_valid_sudoku(board: Board) -> bool:
    """True when no given digit repeats in a row, column or box (blanks are '.')."""
    grids, reasons = grid.encode([_board_text(board)])
    if reasons[0]:
        raise MalformedPuzzle(reasons[0])
    return not grid.find_clashes(grids)


def solve_sudoku(board: Board) -> None:
    """Fill the board in place with its solution (the first one, if it has several)."""
    text = _board_text(board)
    rows = [row for row in board if not hasattr(row, "__setitem__")]
    if rows:  # (a board is filled whole or not at all)
        raise TypeError(f"solve_sudoku fills the board in place: its rows must be lists, "
                        f"not {type(rows[0]).__name__}")
    outcome = solver.solve_strings([text], limit=1)
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
