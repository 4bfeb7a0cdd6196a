"""`pipeline show`: the rows of a run with given statuses, and why they are what they are."""

from __future__ import annotations

import json
import sys

import polars as pl

from pipeline.io import runfolder
from pipeline.io.terminal import visible


def main(folder: str, statuses: list[str], limit: int = 20, fmt: str = "table") -> int:
    """`pipeline show`: the rows of a run with the given statuses (source, row, status,
    reason, puzzle), read lazily: only the rows shown are held."""
    run = runfolder.open_run(folder, need_canonical=False, finished=False, empty=True)
    columns = ["source", "row", "status", "reason", "puzzle"]
    # Part by part, only the rows asked for are kept.
    chosen = [pl.from_arrow(b).filter(pl.col("status").is_in(statuses))
              for p in run.parts for b in runfolder.part_batches(p, columns)]
    if not chosen:
        return 0
    matched = pl.concat(chosen, how="vertical_relaxed").sort("source", "row")
    total = matched.height
    frame = matched.head(limit) if limit else matched
    if fmt == "csv":
        text = frame.write_csv()
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
        where = visible(run.shown)
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
