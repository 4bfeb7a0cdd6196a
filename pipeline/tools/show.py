"""`pipeline show`: the rows of a run with given statuses (and SER band), and why they are
what they are, in input order or hardest first."""

from __future__ import annotations

import json
import sys

import polars as pl

from pipeline.errors import UsageError
from pipeline.io import runfolder
from pipeline.io.outputs import defused
from pipeline.io.terminal import visible
from pipeline.sudoku.grade import parse_ser_band, ser_band_text

SORTS = ("input", "ser", "guesses", "solve_us")  # input order, else that column's highest first


def parse_band(text: str, option: str = "--ser") -> tuple[int, int]:
    """A SER band in tenths (grade.parse_ser_band); UsageError when it is not one."""
    try:
        return parse_ser_band(text)
    except ValueError as exc:
        why = str(exc) if "tenth" in str(exc) else "not a SER band (7.0-8.0, 9+ or 8.3)"
        raise UsageError(f"{option} {text}: {why}") from None


def main(folder: str, statuses: list[str], limit: int = 20, fmt: str = "table",
         ser: tuple[int, int] | None = None, sort: str = "input") -> int:
    """`pipeline show`: the rows of a run with the given statuses (source, row, status,
    reason, puzzle, and in a run made with --rate ser, its technique and rate_note), read lazily:
    only the rows shown are held (the `limit` highest of each batch, with a sort)."""
    run = runfolder.open_run(folder, need_canonical=False, finished=False, empty=True)
    rated = "ser" in run.columns
    if (ser is not None or sort == "ser") and not rated:
        raise UsageError(f"{run.shown}: no ser column (a run made with --rate has it)")
    if sort not in SORTS:
        raise UsageError(f"--sort {sort}: one of {', '.join(SORTS)}")
    columns = ["source", "row", "status", "reason", "puzzle"]
    if rated:
        columns += ["ser", "ser_technique", "rate_note"]  # (the note: why a row has no ser)
    if sort in ("guesses", "solve_us"):
        columns.append(sort)
    limit = min(limit, 1 << 48)  # a limit past every row is no limit (polars takes 64 bits)
    keep = pl.col("status").is_in(statuses)
    if ser is not None:
        keep &= (pl.col("ser") * 10).round().is_between(ser[0], ser[1])
    chosen, total = [], 0
    for p in run.parts:  # part by part, only the rows asked for are kept
        for b in runfolder.part_batches(p, columns):
            got = pl.from_arrow(b).filter(keep)
            total += got.height
            if sort != "input" and limit:  # each batch's first rows in the final order
                got = got.sort(sort, "source", "row", descending=[True, False, False],
                               nulls_last=True).head(limit)
            chosen.append(got)
    # (no part at all, an empty or unfinished run: no rows, said as for a run without them)
    matched = (pl.concat(chosen, how="vertical_relaxed") if chosen
               else pl.DataFrame(schema=dict.fromkeys(columns, pl.String)))
    matched = (matched.sort("source", "row") if sort == "input"
               else matched.sort(sort, "source", "row", descending=[True, False, False],
                                 nulls_last=True))
    frame = matched.head(limit) if limit else matched
    if fmt == "csv":  # (defused, as every tool's CSV: a cell a spreadsheet would run)
        text = pl.from_arrow(defused(frame.to_arrow())).write_csv()
        print(visible(text) if sys.stdout.isatty() else text, end="")
    elif fmt == "json":
        for row in frame.iter_rows(named=True):
            print(json.dumps(row))
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        which = ", ".join(statuses[:-1]) + " or " + statuses[-1] if len(statuses) > 1 \
            else statuses[0]
        if ser is not None:
            which += f" with SER {ser_band_text(ser)}"
        where = visible(run.shown) + ("" if run.finished else " (unfinished: so far)")
        if total == 0:
            Console().print(Text(f"no row of {where} is {which}"))
            return 0
        table = Table(title=Text(f"{frame.height:,} of {total:,} rows of {where} ({which})"),
                      title_justify="left")
        for name in frame.columns:
            table.add_column(name, overflow="fold")
        for row in frame.iter_rows():  # Text: data is never markup
            table.add_row(*[Text("" if v is None else visible(str(v))) for v in row])
        Console().print(table)
    return 0
