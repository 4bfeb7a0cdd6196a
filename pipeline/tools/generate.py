"""`pipeline generate`: make puzzles (sudoku/search.py), write them in the Radcliffe CSV shape."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.errors import UsageError
from pipeline.io.outputs import check_output, write_stdout
from pipeline.sudoku import grade, grid
from pipeline.sudoku.search import Generated, generate


def to_csv_bytes(made: Generated) -> bytes:
    """The Radcliffe shape: id,puzzle,solution,clues,difficulty ('.' blanks)."""
    n = len(made.puzzles)
    frame = pl.DataFrame({
        "id": np.arange(1, n + 1, dtype=np.int64),
        "puzzle": pl.Series(grid.to_ascii(made.puzzles, ".")).cast(pl.String),
        "solution": pl.Series(grid.to_ascii(made.solutions, "0")).cast(pl.String),
        "clues": made.clues,
        "difficulty": pl.Series(grade.GRADES).gather(grade.grade_of_guesses(made.guesses)),
    })
    if made.ratings is not None:  # with SER bands: each puzzle's ER, EP, ED
        frame = frame.with_columns(
            [pl.Series(name, made.ratings[:, k] / 10.0) for k, name in
             enumerate(("ser", "ser_pearl", "ser_diamond"))])
    return frame.write_csv(line_terminator="\n").encode()


# ---------------------------------------------------------------------------------------
# The command


def main(count: int, output: str, clues: int | None = None, min_clues: int | None = None,
         seed: int | None = None, grade_name: str | None = None, quiet: bool = False,
         bands: tuple | None = None) -> None:
    """`pipeline generate`: make, write, and say what was written (on stderr)."""
    import secrets
    import sys
    import time

    if seed is None:
        seed = secrets.randbelow(2**32)
    out = None if output == "-" else check_output(output)
    if out is not None and not out.name.lower().endswith((".csv", ".txt")):
        raise UsageError(f"--output {output}: generate writes CSV; name it .csv (or .txt), "
                         f"or - for standard output")
    started = time.perf_counter()
    made = generate(count, clues, min_clues, seed, grade_name, bands=bands)
    if out is None:
        write_stdout(to_csv_bytes(made))
    else:
        out.write_atomic(to_csv_bytes(made))
    if quiet:
        return
    seconds = time.perf_counter() - started
    c = made.clues
    spread = f"{c.min()}-{c.max()} clues (mean {c.mean():.1f})" if len(c) else "no puzzles"
    names, counts = np.unique(made.grades.astype(str), return_counts=True) if len(c) else ((), ())
    by_grade = {str(n): int(k) for n, k in zip(names, counts, strict=True)}
    grades = ", ".join(f"{g} {by_grade[g]:,}" for g in grade.GRADES if g in by_grade)
    print(f"wrote {len(c):,} puzzles to {output if out else 'stdout'} in {seconds:.2f} s (seed {seed}; {spread}"
          + (f"; {grades}" if grades else "") + f"; {made.attempts:,} tried)", file=sys.stderr)
