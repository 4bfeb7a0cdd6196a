"""`pipeline explain`: a puzzle's solving path as a person would take it, one step a line.

The path is the rater's (pipeline.sudoku.rate.path): at each step the easiest technique of
Sudoku Explainer's ladder, with its rating. A step reads as players write it:

    1.5 Hidden Single: r5c6=3
    4.4 XYZ-Wing: r9c5,r1c5,r8c4 on 3 => r9c4<>3

then ER, EP and ED with the technique that set each. `--board N` draws the grid with its
candidates before step N; `--format json` gives the steps as objects.
"""

from __future__ import annotations

import json
import re

import click
import numpy as np

from pipeline.errors import UsageError
from pipeline.sudoku.grid import eliminations_text, placements_text, square_name
from pipeline.sudoku.rate.board import PEERS  # the rater's board: explain shows its path


def placement(square: int, digit: int) -> str:
    return placements_text([(square, digit)])


def elimination(square: int, digit: int) -> str:
    return eliminations_text([(square, digit)])


def notation(step) -> str:
    """A step in players' notation: a hidden single's placement and house, a naked
    single's placement, else the pattern (as the rater's text names it) and `=>` what the
    step places and removes."""
    detail = step.text.split(": ", 1)[1] if ": " in step.text else ""
    if step.technique == "Hidden Single":
        unit = re.search(r" in (block|row|column)$", step.text)
        where = f" ({'box' if unit.group(1) == 'block' else unit.group(1)})" if unit else ""
        return placements_text(step.placements) + where
    if step.technique == "Naked Single":
        return placements_text(step.placements)
    detail = re.sub(r"^Cells ", "", detail)
    detail = re.sub(r" on value (\d)", r" on \1", detail)
    done = ", ".join(t for t in (placements_text(step.placements),
                                 eliminations_text(step.eliminations)) if t)
    if not detail or _SAYS_ONLY_WHAT.match(detail):
        return f"=> {done}"  # the rater's text says no more than the step does
    return f"{detail} => {done}"


# a text that only names candidates and whether they go on or off (a forcing chain's)
_SAYS_ONLY_WHAT = re.compile(r"^(r\dc\d\.\d,?)+ (on|off)$")


def candidates_before(puzzle: np.ndarray, steps, k: int) -> list[int]:
    """Nine candidate bits a square (a placed square: its digit's bit alone) before step k
    (from 0): the digits its peers do not hold, less what the earlier steps removed."""
    placed = [int(v) for v in puzzle]
    cands = [0 if v else 0x1FF for v in placed]

    def place(square: int, digit: int) -> None:
        placed[square] = digit
        cands[square] = 0
        for p in PEERS[square].tolist():
            cands[p] &= ~(1 << (digit - 1))

    for square, digit in enumerate(list(placed)):
        if digit:
            place(square, digit)
    for step in steps[:k]:
        for square, digit in step.placements:
            place(square, digit)
        for square, digit in step.eliminations:
            cands[square] &= ~(1 << (digit - 1))
    return [(1 << (placed[s] - 1)) | PLACED if placed[s] else cands[s] for s in range(81)]


PLACED = 0x200  # beside the nine candidate bits: the square holds that one digit


def draw(cells: list[int]) -> str:
    """The grid with every open square's candidates (a 3x3 block of digits per square)."""
    lines = []
    for r in range(9):
        if r and r % 3 == 0:
            lines.append("=" * 37)
        elif r:
            lines.append("-" * 37)
        for sub in range(3):
            row = []
            for c in range(9):
                bits = cells[r * 9 + c]
                if bits & PLACED:
                    digit = (bits & 0x1FF).bit_length()
                    text = f" {digit} " if sub == 1 else "   "
                else:
                    text = "".join(str(d) if bits >> (d - 1) & 1 else "."
                                   for d in range(sub * 3 + 1, sub * 3 + 4))
                row.append(text + ("‖" if c in (2, 5) else "|" if c < 8 else ""))
            lines.append("".join(row))
    return "\n".join(lines)


def not_rated(rated: str, reached: float, steps: bool) -> str:
    """The line of a puzzle the rater did not rate (`budget` or `beyond`)."""
    came = ("the steps above are as far as the rater came" if steps else
            "no step: the first one needs a technique past the rater's ladder"
            if rated == "beyond" else "no step within the budget")
    return f"not rated: {rated} (reached {reached:.1f}); {came}"


def explain_one(puzzle: np.ndarray, board: int | None, fmt: str, budget: int,
                one: bool = True) -> int:
    """Explain one encoded puzzle (u1[81]); the exit code (1 unless it has one solution).
    A --board past its path is a usage error for the `one` puzzle given, else said."""
    from pipeline.sudoku import grid, rate, solver
    from pipeline.sudoku.status import Status

    text = grid.decode(puzzle[None, :], blank=".")[0]
    outcome = solver.solve_grids(puzzle[None, :].copy(), 2, {})
    status = Status(int(outcome.status[0]))
    if status != Status.SOLVED:
        reason = outcome.reasons.get(0)
        if fmt == "json":
            click.echo(json.dumps({"puzzle": text, "status": status.label, "reason": reason}))
        else:  # (a puzzle of several solutions has no reason beyond its status)
            click.echo(f"{text}: {status.label}" + (f": {reason}" if reason else ""))
        return 1
    got = rate.rate_grids(puzzle[None, :], outcome.solutions[:1], budget, paths=True)
    steps = got.paths[0]
    rated = rate.STATUS_NAMES[got.status[0]]
    er, ep, ed = (float(x[0]) / 10 for x in (got.er, got.ep, got.ed))

    def set_by(value: float) -> str | None:
        """The technique of the first step of that rating (ER's: the rater's own word)."""
        if not steps:
            return None
        if value == er:
            return rate.TECHNIQUES[got.technique[0]]
        return next((s.technique for s in steps if round(s.rating, 1) == value), None)

    if fmt == "json":
        out = {"puzzle": text, "status": "solved", "rating": rated,
               "er": er if rated == "ok" else None, "ep": ep if rated == "ok" else None,
               "ed": ed if rated == "ok" else None,
               "er_technique": set_by(er) if rated == "ok" else None,
               "reached": None if rated == "ok" else float(got.reached[0]) / 10,
               "steps": [{"step": k + 1, "technique": s.technique, "rating": s.rating,
                          "cells": sorted({square_name(q) for q, _ in
                                           (*s.placements, *s.eliminations)}),
                          "digits": sorted({d for _, d in (*s.placements, *s.eliminations)}),
                          "pattern": list(dict.fromkeys(re.findall(r"r\dc\d", s.text))),
                          "placements": [placement(q, d) for q, d in s.placements],
                          "eliminations": [elimination(q, d) for q, d in s.eliminations],
                          "text": s.text} for k, s in enumerate(steps)]}
        click.echo(json.dumps(out))
        return 0
    if board is not None and not 1 <= board <= len(steps):
        why = (f"--board {board}: the path has steps 1 to {len(steps)}" if steps else
               f"--board {board}: the path has no step")
        if one:
            raise UsageError(why)
        click.echo(f"({why}: no board drawn)")
    for k, s in enumerate(steps):
        if board is not None and k + 1 == board:
            click.echo(draw(candidates_before(puzzle, steps, k)))
        click.echo(f"{s.rating:.1f} {s.technique}: {notation(s)}")
    if rated == "ok" and not steps:
        click.echo("no step: the grid is complete (ER 0.0, EP 0.0, ED 0.0, as serate rates it)")
    elif rated == "ok":
        click.echo(f"ER {er:.1f} ({set_by(er)}), EP {ep:.1f} ({set_by(ep)}), "
                   f"ED {ed:.1f} ({set_by(ed)})")
    else:
        click.echo(not_rated(rated, float(got.reached[0]) / 10, bool(steps)))
    return 0


def main(puzzle: str, board: int | None, fmt: str, budget: int) -> int:
    """`pipeline explain`: every puzzle given, explained; exit 1 when one is not solved."""
    from pipeline.sudoku import rate
    from pipeline.tools.solve import given

    if board is not None and fmt == "json":
        raise UsageError("--board draws the grid on the text output: not with --format json")
    code = 0
    first = True
    for _, grids, malformed in given(puzzle):
        for i in range(len(grids)):
            if not first and fmt != "json":
                click.echo("")
            first = False
            if i in malformed:
                if fmt == "json":
                    click.echo(json.dumps({"status": "malformed", "reason": malformed[i]}))
                else:
                    click.echo(f"malformed: {malformed[i]}")
                code = 1
                continue
            code = max(code, explain_one(grids[i], board, fmt, budget or rate.DEFAULT_BUDGET,
                                         one=puzzle != "-"))
    return code
