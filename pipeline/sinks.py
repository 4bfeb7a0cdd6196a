"""What a run leaves behind: result parts, stats, manifest, the success marker, the lock.

Every file is written under a temporary name that never matches `*.parquet`
(`.part-00003.parquet.tmp`) and renamed into place, so it is whole or absent.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (loaded at start-up: casts need it, and it takes 50 ms)
import pyarrow.parquet as pq

from pipeline import grid
from pipeline.errors import OutputBusy, RunFailed
from pipeline.grade import GRADES
from pipeline.solver import NULL, STATUS_NAMES, Outcome

RESULTS = "results"
STATS = "stats.parquet"
MANIFEST = "manifest.json"
SUCCESS = "_SUCCESS"
LOCK = ".lock"
PART_GLOB = "part-*.parquet"

_STATUS_DICT = pa.array(STATUS_NAMES, type=pa.string())
_GRADE_DICT = pa.array(GRADES, type=pa.string())


def part_path(out: Path, number: int) -> Path:
    return out / RESULTS / f"part-{number:05d}.parquet"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary sibling and rename it into place: whole or absent."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise RunFailed(f"cannot write {path}: {exc.strerror or exc}") from None


def write_json(path: Path, obj: dict) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n"))


# Dictionary pages pay off only for the columns with few distinct values; min/max statistics
# of 81-character grids help no reader, so they are not written.
_DICTIONARY_COLUMNS = ["source", "status", "grade", "reason", "difficulty", "clues"]
_NO_STATISTICS = {"puzzle", "solution", "expected_solution", "reason"}


def write_table(path: Path, table: pa.Table) -> None:
    names = table.column_names
    dictionary = [c for c in _DICTIONARY_COLUMNS if c in names]
    statistics = [c for c in names if c not in _NO_STATISTICS]
    atomic_write(path, lambda tmp: pq.write_table(
        table, tmp, compression="zstd", compression_level=1, use_dictionary=dictionary,
        write_statistics=statistics))


class PartWriter:
    """Writes parts on a background thread (pyarrow lets go of the GIL while it encodes),
    so reading and dispatching the next chunks go on meanwhile. At most `pending` parts wait;
    the first write error is raised by the next call."""

    def __init__(self, pending: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="part-writer")
        self._slots = threading.BoundedSemaphore(pending)
        self._futures: list[Future] = []

    def submit(self, path: Path, table: pa.Table) -> None:
        self._raise_failed()
        self._slots.acquire()
        fut = self._pool.submit(write_table, path, table)
        fut.add_done_callback(lambda _: self._slots.release())
        self._futures.append(fut)

    def _raise_failed(self) -> None:
        still = []
        for fut in self._futures:
            if fut.done():
                fut.result()  # raises the write's RunFailed
            else:
                still.append(fut)
        self._futures = still

    def close(self) -> None:
        """Wait for every pending write; raise the first failure."""
        try:
            for fut in self._futures:
                fut.result()
        finally:
            self._futures = []
            self._pool.shutdown(wait=True)


def remove_leftovers(out: Path) -> list[Path]:
    """Delete temporary files a killed run left behind."""
    gone = []
    for folder in (out, out / RESULTS):
        if folder.is_dir():
            for p in folder.glob(".*.tmp"):
                p.unlink(missing_ok=True)
                gone.append(p)
    return gone


def results_schema(carried: list[str], expected: bool, timings: bool,
                   grades: bool = True) -> pa.Schema:
    """The schema every part of a run shares."""
    fields = [
        pa.field("source", pa.string()), pa.field("row", pa.int64()),
        pa.field("puzzle", pa.string()), pa.field("status", pa.string()),
        pa.field("solution", pa.string()), pa.field("n_solutions", pa.int8()),
        pa.field("guesses", pa.int64()), pa.field("reason", pa.string()),
        pa.field("expected_match", pa.bool_()),
    ]
    if timings:
        fields.append(pa.field("solve_us", pa.float64()))
    if grades:
        fields.append(pa.field("grade", pa.string()))
    fields += [pa.field(name, pa.string()) for name in carried]
    if expected:
        fields.append(pa.field("expected_solution", pa.string()))
    return pa.schema(fields)


def results_table(schema: pa.Schema, source: str, frame: pl.DataFrame, outcome: Outcome,
                  cycles_per_us: float | None = None, grades: np.ndarray | None = None
                  ) -> pa.Table:
    """One part: the chunk's input columns and the outcome's, in the run's schema.

    `grades` holds grade codes (indices into grade.GRADES, NULL for none).
    """
    n = frame.height
    has = outcome.has_solution()
    text = grid.to_ascii(outcome.solutions)
    solution = pa.Array.from_buffers(
        pa.string(), n,
        [pa.py_buffer(np.packbits(has, bitorder="little")),
         pa.py_buffer(np.arange(0, 81 * (n + 1), 81, dtype=np.int32)),
         pa.py_buffer(text.tobytes())])
    if outcome.reasons:
        # The few reasons, then a take() that spreads them over the rows (nulls elsewhere).
        rows = np.fromiter(outcome.reasons, dtype=np.int64, count=len(outcome.reasons))
        where = _positions(rows, n)
        reason = pa.array(list(outcome.reasons.values()), pa.string()).take(
            pa.array(where, mask=where < 0))
    else:
        reason = pa.nulls(n, pa.string())
    cols: dict[str, pa.Array] = {
        "source": pa.repeat(pa.scalar(source, pa.string()), n),
        "row": pa.array(frame["row"].to_numpy(), pa.int64()),
        "puzzle": frame["puzzle"].to_arrow().cast(pa.string()),
        "status": _labels(outcome.status.astype(np.int8), _STATUS_DICT),
        "solution": solution,
        "n_solutions": _masked(outcome.n_solutions, pa.int8()),
        "guesses": _masked(outcome.guesses, pa.int64()),
        "reason": reason,
        "expected_match": pa.array(outcome.expected_match == 1,
                                   mask=outcome.expected_match == NULL, type=pa.bool_()),
    }
    if "solve_us" in schema.names:
        if outcome.cycles is not None and cycles_per_us:
            us = outcome.cycles / cycles_per_us
            cols["solve_us"] = pa.array(us, mask=outcome.cycles == NULL, type=pa.float64())
        else:
            cols["solve_us"] = pa.nulls(n, pa.float64())
    if "grade" in schema.names:
        cols["grade"] = (_labels(grades, _GRADE_DICT) if grades is not None
                         else pa.nulls(n, pa.string()))
    for f in schema:
        if f.name not in cols:
            if f.name in frame.columns:
                cols[f.name] = frame[f.name].to_arrow().cast(pa.string())
            else:
                cols[f.name] = pa.nulls(n, f.type)
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)


def _labels(codes: np.ndarray, names: pa.Array) -> pa.Array:
    """Small int codes (NULL = null) as strings, through a dictionary: no per-row objects."""
    codes = np.asarray(codes, dtype=np.int8)
    indices = pa.array(codes, mask=codes == NULL, type=pa.int8())
    return pa.DictionaryArray.from_arrays(indices, names).cast(pa.string())


def _positions(rows: np.ndarray, n: int) -> np.ndarray:
    """For each of n rows, its position in `rows`, or -1."""
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    return where


def _masked(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, mask=values == NULL, type=type_)


class OutputLock:
    """An exclusive lock on an output folder; the kernel drops it when its holder dies."""

    def __init__(self, out: Path):
        self.path = out / LOCK
        self._fd: int | None = None

    def acquire(self, holder: str) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            who = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another run"
            os.close(fd)
            raise OutputBusy(f"{self.path.parent}: in use by {who}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
