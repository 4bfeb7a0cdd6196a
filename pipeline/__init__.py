"""sudoku-pipeline: solve, check and summarise Sudoku puzzles at data-set scale.

The public API; everything else is private to the package and may change.

    Batches (numpy):  encode, decode, solve_strings, solve_grids, is_solution
    Classic boards:   is_valid_sudoku, solve_sudoku
    Results:          Status, Outcome
    Errors:           PipelineError and its subclasses, PuzzleError and its subclasses
"""

from pipeline.check import is_solution
from pipeline.classic import is_valid_sudoku, solve_sudoku
from pipeline.errors import (
    InputError,
    InvalidPuzzle,
    MalformedPuzzle,
    PipelineError,
    PuzzleError,
    RunFailed,
    UnsolvablePuzzle,
    UsageError,
)
from pipeline.grid import decode, encode
from pipeline.solver import Outcome, Status, solve_grids, solve_strings

__version__ = "0.1.0"

__all__ = [
    "InputError", "InvalidPuzzle", "MalformedPuzzle", "Outcome", "PipelineError",
    "PuzzleError", "RunFailed", "Status", "UnsolvablePuzzle", "UsageError", "decode",
    "encode", "is_solution", "is_valid_sudoku", "solve_grids", "solve_strings",
    "solve_sudoku", "__version__",
]
