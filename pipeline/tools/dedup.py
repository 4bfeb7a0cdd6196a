"""`pipeline dedup`: one row per class, its first occurrence in input order, with its copies."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from pipeline.io.classes import (
    FATE,
    MEMORY_ROWS,
    Spill,
    find_keys,
    group_parts,
    pass1,
    per_class,
    read_fates,
    spill_folder,
)
from pipeline.io.outputs import TableWriter, check_output, format_of, scratch_near, write_one
from pipeline.io.runfolder import ROW_BITS, open_run, part_batches

DEDUP_COLUMNS = ("source", "row", "puzzle", "canonical", "solution", "status", "copies")


@dataclass
class DedupSummary:
    run: str
    output: str
    rows: int  # rows of the run
    classes: int  # rows written
    formless: int  # rows without a canonical form (left out)
    seconds: float = 0.0

    def line(self) -> str:
        dup = self.rows - self.formless - self.classes
        return (f"dedup {self.run}: {self.rows:,} rows -> {self.classes:,} classes written to "
                f"{self.output} ({dup:,} duplicate rows dropped, {self.formless:,} malformed "
                f"rows left out) in {self.seconds:.1f} s")


def _dedup_schema(rated: bool = False):
    """The output's columns; with `ser` after status when the run was made with --rate."""
    import pyarrow as pa

    return pa.schema([pa.field("source", pa.string()), pa.field("row", pa.int64()),
                      pa.field("puzzle", pa.string()), pa.field("canonical", pa.string()),
                      pa.field("solution", pa.string()), pa.field("status", pa.string()),
                      *([pa.field("ser", pa.float64())] if rated else []),
                      pa.field("copies", pa.int64())])


def dedup(run_dir, output: str, *, memory_rows: int = MEMORY_ROWS,
          spill_dir: str | None = None) -> DedupSummary:
    """One row per class: its first occurrence (input order, then row) and its copies."""
    import pyarrow as pa

    started = time.perf_counter()
    out = check_output(output, run_dir)
    fmt = format_of(output)
    run = open_run(run_dir)
    k = max(1, math.ceil(run.rows / memory_rows))
    with spill_folder(spill_dir or scratch_near(out), k > 1) as folder:
        buckets = pass1(run, folder, 0, memory_rows)
        groups = group_parts(run, memory_rows)
        firsts = Spill(folder, "first", len(groups.parts), FATE, memory_rows)
        for b in range(buckets.k):
            entries, starts = buckets.classes(b)
            cls = per_class(entries, starts)
            fate = np.empty(len(cls), FATE)
            fate["key"], fate["v"] = cls["key"], cls["n"]
            firsts.add(groups.of(fate["key"]), fate)
        firsts.finish()
        schema = _dedup_schema("ser" in run.columns)
        names = [c for c in schema.names if c != "copies"]

        def fill(w: TableWriter) -> None:
            for g, parts in enumerate(groups.parts):
                known, copies = read_fates(g, firsts)
                for part in parts:
                    for batch in part_batches(part, names):
                        key = (run.source_index(batch.column("source")) << ROW_BITS
                               | batch.column("row").to_numpy(zero_copy_only=False))
                        hit, found = find_keys(key, known, copies)
                        take = np.flatnonzero(hit)
                        take = take[np.argsort(key[take], kind="stable")]
                        t = pa.Table.from_batches([batch]).select(names).take(take)
                        t = t.append_column("copies", pa.array(found[take], pa.int64()))
                        w.write(t.cast(schema))

        written = write_one(out, fmt, schema, fill)
    return DedupSummary(run.shown, out.shown, run.rows, written, int(buckets.formless.sum()),
                        time.perf_counter() - started)


def main(run_dir: str, output: str, quiet: bool = False,
               memory_rows: int = MEMORY_ROWS, spill_dir: str | None = None) -> int:
    """`pipeline dedup DIR --output FILE`: write, print one line on stderr, return 0."""
    summary = dedup(run_dir, output, memory_rows=memory_rows, spill_dir=spill_dir)
    if not quiet:
        print(summary.line(), file=sys.stderr)
    return 0
