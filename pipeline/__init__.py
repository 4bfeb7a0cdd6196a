"""sudoku-pipeline: solve, check and summarise Sudoku puzzles at data-set scale.

The public API; everything else is private to the package and may change.

    Batches (numpy):  encode, decode, solve_strings, solve_grids, is_solution
    Classic boards:   is_valid_sudoku, solve_sudoku
    Results:          Status, Outcome
    Errors:           PipelineError and its subclasses, PuzzleError and its subclasses

Names are imported on first use, so that `import pipeline` (and the command line's start)
does not load numba.
"""

from __future__ import annotations

import importlib

__version__ = VERSION = "0.1.0"

_WHERE = {
    "is_solution": "pipeline.sudoku.check",
    "is_valid_sudoku": "pipeline.sudoku.classic", "solve_sudoku": "pipeline.sudoku.classic",
    "decode": "pipeline.sudoku.grid", "encode": "pipeline.sudoku.grid",
    "Outcome": "pipeline.sudoku.solver", "Status": "pipeline.sudoku.solver",
    "solve_grids": "pipeline.sudoku.solver", "solve_strings": "pipeline.sudoku.solver",
    **dict.fromkeys(["InputError", "InvalidPuzzle", "MalformedPuzzle", "PipelineError",
                     "PuzzleError", "RunFailed", "UnsolvablePuzzle", "UsageError"],
                    "pipeline.errors"),
}

__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
