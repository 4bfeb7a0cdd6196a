"""sudoku-pipeline: solve, check and summarise Sudoku puzzles at data-set scale.

The public API; everything else is private to the package and may change.

    Runs:             run, Settings, Summary
    Batches (numpy):  encode, decode, solve_strings, solve_grids, is_solution
    Classic boards:   is_valid_sudoku, solve_sudoku
    Results:          Status, Outcome
    Errors:           PipelineError and its subclasses, PuzzleError and its subclasses

Names are imported on first use, so that `import pipeline` (and the command line's start)
does not load numba.

The house, in layers whose imports only go down (.importlinter says it; `make lint` checks)::

    cli         the command line                                  may import every layer
    tools, job  commands over files and runs; `pipeline run`      io, sudoku (job: execute)
    io, execute bytes <-> rows <-> parts; where tasks run         io: sudoku; execute: none
    sudoku      the puzzle: arrays in, arrays out
    errors, compiled, testhooks   the foundation every layer may import

Glossary (one word per idea):

    digit       1..9; 0 is a blank
    square      an index 0..80 into a grid, row-major
    unit        nine squares that hold nine different digits: a grid row, column or box
                ("grid row", so as not to be read as a result's `row`)
    grid        a (81,) uint8 array; a batch is an (N, 81) array of grids
    puzzle      a grid with blanks; its givens are its digits; a solution fills it
    status      what became of a row: solved, multiple, unsolvable, invalid, malformed, error
    input       a file, URL or stream given to `run`
    shape       how an input's records and fields lie: csv, text, fixed or parquet
    record      bytes up to a line end (a quoted CSV field may hold line ends)
    row         a record that holds a puzzle, numbered from 0 in its input
    range       the records of one input starting in [start, end): one task, one part;
                `--chunk-size` is the rows a range is planned to hold
    part        the Parquet file of one range's results: results/part-NNNNN.parquet
                (small inputs' ranges share one; `piece`: one input's range in it)
    plan        every input cut into ranges, with their row counts and hashes
    task        a message to a worker (io/ranges.py's planning tasks, job/tasks.py)
    bundle      several tasks in one, where a round trip costs milliseconds (Dask)
    run folder  what `run` writes: parts, manifest.json, stats.parquet, logs, _SUCCESS
    class       the puzzles equivalent under the grid's symmetries; its canonical form
    rating      Sudoku Explainer's (SER): ER, EP (pearl), ED (diamond), in tenths inside
    step        one move of a solving path: a technique, its rating, its placements and
                eliminations; a trace is a row's steps, written as players write them
"""

from __future__ import annotations

import importlib

__version__ = VERSION = "0.1.0"

_WHERE = {
    "run": "pipeline.job.run", "Settings": "pipeline.job.settings",
    "Summary": "pipeline.job.summary",
    "is_solution": "pipeline.sudoku.check",
    "is_valid_sudoku": "pipeline.sudoku.classic", "solve_sudoku": "pipeline.sudoku.classic",
    "decode": "pipeline.sudoku.grid", "encode": "pipeline.sudoku.grid",
    "rate": "pipeline.sudoku.rate", "RateResult": "pipeline.sudoku.rate",
    "Outcome": "pipeline.sudoku.solver", "Status": "pipeline.sudoku.solver",
    "solve_grids": "pipeline.sudoku.solver", "solve_strings": "pipeline.sudoku.solver",
    **dict.fromkeys(["DefinitionMismatch", "InputChanged", "InputError", "InvalidPuzzle",
                     "MalformedPuzzle", "OutputBusy", "PipelineError", "PuzzleError",
                     "RunFailed", "Stopped", "TargetNotReached", "UnsolvablePuzzle",
                     "UsageError"], "pipeline.errors"),
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
