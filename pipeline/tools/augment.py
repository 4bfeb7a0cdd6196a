"""`pipeline augment`: K random equivalents of every solved row, each pair checked.

The transformations of row r of source i come from a numpy Generator seeded by
(seed, i, r // B) drawing symmetry.random_transforms for every row slot of that block of B
rows (B = block_rows(K), about 8192 / K), so they depend on (seed, K, source, row) only,
never on the parts or batch sizes. Each pair is checked by check.is_solution; a failure is
a bug and raises.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from pipeline.errors import UsageError
from pipeline.io.outputs import TableWriter, check_output, format_of, write_one
from pipeline.io.runfolder import BATCH_ROWS, ROW_BITS, Run, open_run, part_batches
from pipeline.io.strings import buffers, grid_strings
from pipeline.sudoku import check, grid, symmetry
from pipeline.tools.split import check_seed

BLOCK_DRAWS = 8192  # augment: transformations per seeded Generator (see block_rows)


MAX_COPIES = 1000


@dataclass
class AugmentSummary:
    run: str
    output: str
    solved: int
    copies: int
    written: int
    seed: int
    seconds: float = 0.0

    def line(self) -> str:
        return (f"augment {self.run}: {self.solved:,} solved rows x {self.copies} copies -> "
                f"{self.written:,} puzzle/solution pairs written to {self.output}, each "
                f"checked (seed {self.seed}) in {self.seconds:.1f} s")


def block_rows(copies: int) -> int:
    """Rows per seeded Generator: about BLOCK_DRAWS transformations a draw (a constant of the
    output for a given number of copies)."""
    return min(4096, max(8, BLOCK_DRAWS // copies))


def block_transforms(seed: int, source: int, block: int, copies: int) -> np.ndarray:
    """(rows, copies, 34) int8: the transformations of rows block*rows.. of a source, rows =
    block_rows(copies)."""
    rows = block_rows(copies)
    rng = np.random.default_rng([seed, source, block])
    return symmetry.random_transforms(rng, rows * copies).reshape(rows, copies, -1)


class _Blocks:
    """block_transforms with the last few blocks kept (parts cut blocks; rows come in order)."""

    def __init__(self, seed: int, copies: int):
        self.seed, self.copies, self.rows = seed, copies, block_rows(copies)
        self._kept: dict[tuple[int, int], np.ndarray] = {}

    def get(self, source: int, block: int) -> np.ndarray:
        key = (source, block)
        if key not in self._kept:
            if len(self._kept) >= 4:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = block_transforms(self.seed, source, block, self.copies)
        return self._kept[key]

    def of_rows(self, src: np.ndarray, row: np.ndarray) -> np.ndarray:
        """(N, copies, 34): each row's transformations, whatever rows come together."""
        out = np.empty((len(row), self.copies, symmetry.TRANSFORM_WIDTH), np.int8)
        blocks = np.stack([src, row // self.rows], axis=1)
        uniq, inv = np.unique(blocks, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        for j, (s, b) in enumerate(uniq.tolist()):  # a few blocks per batch, not rows
            at = np.flatnonzero(inv == j)
            out[at] = self.get(s, b)[row[at] % self.rows]
        return out


def _grids(arr, what: str) -> np.ndarray:
    grids, bad = grid.encode_buffers(*buffers(arr))
    if bad:
        raise RuntimeError(f"augment: a solved row whose {what} does not encode (a bug)")
    return grids


def augment(run_dir, copies: int, seed: int, output: str) -> AugmentSummary:
    """K random equivalents of every solved row, with their solutions, each pair checked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    started = time.perf_counter()
    out = check_output(output, run_dir)
    fmt = format_of(output)
    if isinstance(copies, bool) or not isinstance(copies, (int, np.integer)) or not (
            1 <= copies <= MAX_COPIES):
        raise UsageError(f"--copies {copies}: must be a whole number from 1 to {MAX_COPIES}")
    seed = check_seed(seed)
    run = open_run(run_dir, need_canonical=False)
    has_form = "canonical" in run.columns
    fields = [pa.field("source", pa.string()), pa.field("row", pa.int64()),
              pa.field("copy", pa.int32()), pa.field("puzzle", pa.string()),
              pa.field("solution", pa.string())]
    if has_form:
        fields.append(pa.field("canonical", pa.string()))
    schema = pa.schema(fields)
    columns = ["source", "row", "status", "puzzle", "solution"] + (["canonical"] * has_form)
    solved = [0]
    per_batch = max(1, BATCH_ROWS // copies)
    blocks = _Blocks(seed, copies)

    def fill(w: TableWriter) -> None:
        for part in run.parts:
            for batch in part_batches(part, columns):
                t = pa.Table.from_batches([batch])
                t = t.filter(pc.equal(t.column("status"), "solved"))
                if not t.num_rows:
                    continue
                key = (run.source_index(t.column("source")) << ROW_BITS
                       | t.column("row").to_numpy())
                t = t.take(np.argsort(key, kind="stable"))
                for lo in range(0, t.num_rows, per_batch):
                    _augment_rows(t.slice(lo, per_batch), run, blocks, has_form, schema, w)
                solved[0] += t.num_rows

    written = write_one(out, fmt, schema, fill)
    return AugmentSummary(run.shown, out.shown, solved[0], copies, written, seed,
                          time.perf_counter() - started)


def _augment_rows(t, run: Run, blocks: _Blocks, has_form: bool, schema, w) -> None:
    """One batch of solved rows -> their copies, checked, written."""
    import pyarrow as pa

    n, copies = t.num_rows, blocks.copies
    src = run.source_index(t.column("source"))
    row = t.column("row").to_numpy()
    puzzles = np.repeat(_grids(t.column("puzzle"), "puzzle"), copies, axis=0)
    solutions = np.repeat(_grids(t.column("solution"), "solution"), copies, axis=0)
    trans = blocks.of_rows(src, row).reshape(n * copies, -1)
    new_p = symmetry.transform(puzzles, trans)
    new_s = symmetry.transform(solutions, trans)
    ok = check.is_solution(new_p, new_s)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0]) // copies
        raise RuntimeError(f"augment: a transformed pair fails the check (source "
                           f"{t.column('source')[bad]}, row {row[bad]}): a bug")
    rep = np.repeat(np.arange(n), copies)
    cols = {"source": t.column("source").take(rep), "row": pa.array(row[rep], pa.int64()),
            "copy": pa.array(np.tile(np.arange(copies, dtype=np.int32), n)),
            "puzzle": grid_strings(new_p, "."), "solution": grid_strings(new_s, "0")}
    if has_form:
        cols["canonical"] = t.column("canonical").take(rep)
    w.write(pa.table(cols).cast(schema))


def main(run_dir: str, copies: int, seed: int, output: str,
                 quiet: bool = False) -> int:
    """`pipeline augment DIR --copies K --seed S --output FILE`: write, print one line on
    stderr, return 0."""
    summary = augment(run_dir, copies, seed, output)
    if not quiet:
        print(summary.line(), file=sys.stderr)
    return 0
