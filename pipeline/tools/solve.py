"""`pipeline solve`: puzzles from the command line or standard input, solved and shown."""

from __future__ import annotations

import sys

import click


def main(puzzle: str, fmt: str, first_solution: bool) -> int:
    """`pipeline solve`: read, solve, print; the exit code."""
    from pipeline.io import inputs
    from pipeline.io.strings import buffers
    from pipeline.sudoku import grid, solver
    from pipeline.sudoku.status import Status

    if puzzle == "-":
        from pipeline.io import schema

        inp = inputs.open_input("-", 0, None, None, schema.OURS, stdin=sys.stdin.buffer)
        batches = [(first, rows) for first, rows in inputs.read_whole(inp, sys.stdin.buffer)]
    else:
        batches = [(0, None)]
    ok = True
    shown = 0
    for first, rows in batches:
        if rows is None:
            grids, why = grid.encode([puzzle])
            malformed = {i: w for i, w in enumerate(why) if w}
        else:
            grids, malformed = grid.encode_buffers(*buffers(rows.columns["puzzle"]))
            malformed.update(rows.reasons)
        outcome = solver.solve_grids(grids, 1 if first_solution else 2, malformed)
        texts = grid.decode(outcome.solutions, blank="0")
        for i in range(len(outcome)):
            status = Status(int(outcome.status[i]))
            has = status in (Status.SOLVED, Status.MULTIPLE)
            ok &= has
            reason = outcome.reasons.get(i)
            if fmt == "line":
                line = {Status.SOLVED: texts[i], Status.MULTIPLE: f"multiple {texts[i]}"}
                click.echo(line.get(status, status.label))
                if not has or reason:
                    click.echo(f"row {first + i}: {status.label}: {reason or status.label}",
                               err=True)
                continue
            if shown:
                click.echo("")
            shown += 1
            head = status.label
            if outcome.guesses[i] >= 0:
                head += f", {outcome.guesses[i]} guesses"
            if reason:
                head += f": {reason}"
            click.echo(head)
            if has:
                click.echo(grid.show(outcome.solutions[i]))
    return 0 if ok else 1
