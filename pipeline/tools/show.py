"""`pipeline show`: the rows of a run with given statuses, and why they are what they are."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from pipeline.io import runfolder
from pipeline.io.storage import Location


def main(folder: str, statuses: list[str], limit: int = 20, fmt: str = "table") -> int:
    """`pipeline show`: the rows of a run with the given statuses (source, row, status,
    reason, puzzle), read lazily: only the rows shown are held."""
    root = Path(folder)
    runfolder.existing_run(Location(folder))
    parts = sorted((root / runfolder.RESULTS).glob("part-*.parquet"))
    if not parts:
        return 0
    query = (pl.scan_parquet(parts)
             .filter(pl.col("status").is_in(statuses))
             .select("source", "row", "status", "reason", "puzzle")
             .sort("source", "row"))
    frame = (query.head(limit) if limit else query).collect()
    total = pl.scan_parquet(parts).filter(pl.col("status").is_in(statuses)).select(
        pl.len()).collect().item()
    if fmt == "csv":
        print(frame.write_csv(), end="")
    elif fmt == "json":
        for row in frame.iter_rows(named=True):
            print(json.dumps(row))
    else:
        from rich.console import Console
        from rich.table import Table

        which = ", ".join(statuses[:-1]) + " or " + statuses[-1] if len(statuses) > 1 \
            else statuses[0]
        if total == 0:
            Console().print(f"no row of {folder} is {which}", highlight=False)
            return 0
        table = Table(title=f"{frame.height:,} of {total:,} rows of {folder} ({which})",
                      title_justify="left")
        for name in frame.columns:
            table.add_column(name, overflow="fold")
        for row in frame.iter_rows():
            table.add_row(*["" if v is None else str(v) for v in row])
        Console().print(table)
    return 0
