"""`pipeline run`: inputs -> chunks -> workers -> result parts -> stats, manifest, _SUCCESS.

Data flows one way: sources read and cut chunks, the executor solves them, sinks write
them. This module holds the order of things and the rules of resuming:

* A run is defined by its inputs (path and content hash), their layouts (columns, shape)
  and the solution limit. Workers, chunk size, executor and log level are not part of it.
* A finished folder (`_SUCCESS`) with the same definition: nothing to do, exit 0.
  With another definition: refused (exit 2) unless --overwrite.
* An unfinished folder with the same definition: resumed. The part files are the journal
  (each is whole or absent), so the rows they hold are skipped and the rest is solved.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import logging
import os
import platform
import shutil
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from pipeline import grade, sinks
from pipeline.config import Settings
from pipeline.errors import (
    DefinitionMismatch,
    InputError,
    Interrupted,
    RunFailed,
    Stopped,
    UsageError,
    raise_interrupted,
)
from pipeline.executors import Done, Executor, Task, schedule
from pipeline.solver import NULL, STATUS_NAMES, Outcome
from pipeline.sources import Chunk, Source
from pipeline.tally import Tally

log = logging.getLogger("pipeline.run")

VERSION = "0.1.0"


@dataclass
class Summary:
    """The counts of a run; it owns the exit code."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUS_NAMES, 0))
    rows: int = 0
    wall_seconds: float = 0.0
    output: str = ""
    already_done: bool = False
    resumed_rows: int = 0
    fail_on: list[str] = field(default_factory=list)
    steady_seconds: float = 0.0  # from warm workers to the last part: start-up aside
    processed_files: list[str] = field(default_factory=list)  # --incremental
    skipped_files: list[str] = field(default_factory=list)  # --incremental

    @property
    def failing(self) -> list[str]:
        return [s for s in self.fail_on if self.counts.get(s, 0) > 0]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "output": self.output, "rows": self.rows, "counts": self.counts,
            "wall_seconds": round(self.wall_seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "steady_seconds": round(self.steady_seconds, 3),
            "steady_rows_per_second": round(
                (self.rows - self.resumed_rows) / self.steady_seconds, 1)
            if self.steady_seconds > 0 else 0.0,
            "already_done": self.already_done, "resumed_rows": self.resumed_rows,
            "exit_code": self.exit_code, "failing": self.failing,
            "processed_files": self.processed_files, "skipped_files": self.skipped_files,
        }


def resolve_inputs(patterns: list[str]) -> list[str]:
    """Expand globs (sorted); a pattern that matches nothing is an input error."""
    found: list[str] = []
    for pattern in patterns:
        if pattern == "-":
            found.append(pattern)
        elif glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise InputError(f"{pattern}: no file matches")
            found.extend(matches)
        else:
            found.append(pattern)
    if not found:
        raise UsageError("no input given (--input PATH)")
    if found.count("-") > 1:
        raise UsageError("standard input (-) can be read only once")
    # A file named twice (by itself and by a glob, say) is one input, read once.
    seen: set[str] = set()
    unique = []
    for p in found:
        key = p if p == "-" else os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def stem(path: str) -> str:
    """A file's name without directory and suffixes ('data/x.csv.gz' -> 'x')."""
    if path == "-":
        return "stdin"
    name = Path(path).name
    return name.split(".")[0] or name


def output_folder(settings: Settings, inputs: list[str], given: str | None) -> Path:
    return Path(given if given else settings.output.format(stem=stem(inputs[0])))


@dataclass
class Hooks:
    """What the caller (the CLI) wants to hear while the run goes."""

    on_start: Callable[[Path, int], None] = lambda out, resumed: None
    on_rows: Callable[[int], None] = lambda n: None


def run(inputs: list[str], settings: Settings, output: str | None = None,
        overwrite: bool = False, hooks: Hooks | None = None, quiet: bool = False) -> Summary:
    """Run the job end to end; raises a PipelineError subclass on a non-zero outcome."""
    from pipeline import logs

    hooks = hooks or Hooks()
    started = time.time()
    t0 = time.perf_counter()
    paths = resolve_inputs(inputs)
    puzzle_col = settings.puzzle_column or None
    solution_col = settings.solution_column or None
    sources = [Source(p, i, puzzle_col, solution_col) for i, p in enumerate(paths)]
    out = output_folder(settings, paths, output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunFailed(f"cannot create output folder {out}: {exc.strerror or exc}") from None
    if not out.is_dir():
        raise UsageError(f"--output {out}: not a folder")

    lock = sinks.OutputLock(out)
    lock.acquire(f"pid {os.getpid()} on {socket.gethostname()} since "
                 f"{time.strftime('%Y-%m-%d %H:%M:%S')}")
    run_id = logs.new_run_id()
    try:
        definition = _definition(sources, settings)
        state = _inspect(out, definition, overwrite)
        if state == "done":
            summary = _summary_from_stats(out)
            summary.already_done = True
            summary.output = str(out)
            summary.fail_on = settings.fail_on
            return summary
        logs.setup(out, run_id, settings.log_level, quiet=quiet)
        log.info("run %s: %d input(s) into %s (%s)", run_id, len(sources), out, state)
        return _execute(out, sources, settings, definition, hooks, run_id, started, t0)
    finally:
        logs.teardown()
        lock.release()


def _definition(sources: list[Source], settings: Settings) -> dict:
    return {
        "inputs": [{"path": s.given, "sha256": s.sha256(), "layout": s.layout.describe()}
                   for s in sources],
        "puzzle_column": settings.puzzle_column,
        "solution_column": settings.solution_column,
        "limit": settings.limit,
    }


def _inspect(out: Path, definition: dict, overwrite: bool) -> str:
    """'fresh', 'resume' or 'done'; clears the folder first under --overwrite."""
    manifest = out / sinks.MANIFEST
    previous = None
    if manifest.exists():
        try:
            previous = json.loads(manifest.read_text()).get("definition")
        except (OSError, ValueError):
            previous = None
    ours = {sinks.MANIFEST, sinks.SUCCESS, sinks.STATS, sinks.RESULTS, sinks.LOCK, "logs",
            "report.html"}
    foreign = [p.name for p in out.iterdir() if p.name not in ours and not p.name.endswith(".tmp")]
    stdin = any(i["path"] == "-" for i in definition["inputs"])
    same = previous == definition and not stdin
    finished = (out / sinks.SUCCESS).exists()
    # A run killed between creating results/ and writing its manifest left no part:
    # that folder holds nothing to protect.
    if previous is None and not foreign and not any(
            (out / sinks.RESULTS).glob(sinks.PART_GLOB)):
        return "fresh"
    if same and finished:
        return "done"
    if same:
        return "resume"
    if not overwrite:
        if previous is None:
            why = f"holds other files ({', '.join(sorted(foreign)[:3]) or 'results'})"
        elif stdin:
            why = "holds a run, and a run from standard input cannot be resumed"
        else:
            why = "holds a different run (other inputs, columns or limit)"
        raise DefinitionMismatch(f"output folder {out} {why}; use --overwrite to replace it")
    for name in (sinks.SUCCESS, sinks.MANIFEST, sinks.STATS, "report.html"):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / sinks.RESULTS, ignore_errors=True)
    shutil.rmtree(out / "logs", ignore_errors=True)
    return "fresh"


def _part_listing(out: Path) -> list[dict]:
    """Every part with its row count (from the Parquet footers, not the data)."""
    return [{"file": f"{sinks.RESULTS}/{p.name}", "rows": pq.read_metadata(p).num_rows}
            for p in sorted((out / sinks.RESULTS).glob(sinks.PART_GLOB))]


def _existing_parts(out: Path, sources: list[Source],
                    tallies: list[Tally]) -> tuple[list[np.ndarray], int]:
    """Rows already written (a bitmap per source) and the next part number; counts the
    rows of those parts into `tallies`, one part at a time."""
    done = [np.zeros(0, dtype=bool) for _ in sources]
    parts = sorted((out / sinks.RESULTS).glob(sinks.PART_GLOB))
    index = {s.given: s.index for s in sources}
    next_number = 0
    for p in parts:
        frame = pl.read_parquet(p, columns=["source", "row", "status", "guesses", "solve_us"])
        number = int(p.stem.split("-")[1])
        next_number = max(next_number, number + 1)
        for src, rows in frame.group_by("source"):
            i = index.get(src[0])
            if i is None:
                continue
            codes = rows["status"].replace_strict(STATUS_NAMES, list(range(len(STATUS_NAMES))),
                                                  return_dtype=pl.Int64)
            tallies[i].add(codes.to_numpy(), rows["guesses"].fill_null(NULL).to_numpy(),
                           rows["solve_us"].fill_null(float("nan")).to_numpy())
            r = rows["row"].to_numpy()
            if len(r) and r.max() >= len(done[i]):
                grown = np.zeros(int(r.max()) + 1, dtype=bool)
                grown[: len(done[i])] = done[i]
                done[i] = grown
            done[i][r] = True
    return done, next_number


class _Chunks:
    """Numbered chunks of every source, and the tasks made from them."""

    def __init__(self, sources: list[Source], settings: Settings, skip: list[np.ndarray],
                 first_number: int):
        self.sources = sources
        self.settings = settings
        self.skip = skip
        self.next_number = first_number
        self.by_number: dict[int, Chunk] = {}

    def tasks(self) -> Iterator[Task]:
        for src in self.sources:
            skip = self.skip[src.index] if len(self.skip[src.index]) else None
            for chunk in src.chunks(self.settings.chunk_size, skip):
                number = self.next_number
                self.next_number += 1
                self.by_number[number] = chunk
                offsets, data = chunk.puzzle_buffers()
                yield Task(number, 0, offsets, data, chunk.expected_buffers(), chunk.reasons,
                           self.settings.limit, self.settings.timings)


def _execute(out: Path, sources: list[Source], settings: Settings, definition: dict,
             hooks: Hooks, run_id: str, started: float, t0: float) -> Summary:
    sinks.remove_leftovers(out)
    (out / sinks.RESULTS).mkdir(exist_ok=True)
    tallies = [Tally() for _ in sources]
    skip, first_number = _existing_parts(out, sources, tallies)
    resumed = int(sum(int(s.sum()) for s in skip))
    hooks.on_start(out, resumed)
    if resumed:
        log.info("resuming: %d rows already written", resumed)
    carried: list[str] = []
    for s in sources:
        for _, name in s.layout.carried:
            if name not in carried:
                carried.append(name)
    expected = any(s.layout.solution_field is not None for s in sources)
    schema = sinks.results_schema(carried, expected, timings=True)
    sinks.write_json(out / sinks.MANIFEST, {"state": "running", "run_id": run_id,
                                            "definition": definition})
    chunks = _Chunks(sources, settings, skip, first_number)
    chunk_times: list[tuple[int, float]] = []  # (rows, solve seconds) per chunk
    span: dict[int, list[float]] = {}
    workers = settings.worker_count()
    calibration: dict[str, float] = {}

    writer = sinks.PartWriter()

    def on_done(number: int, outcome: Outcome, pieces: list[Done]) -> None:
        chunk = chunks.by_number.pop(number)
        if pieces and "cycles_per_us" not in calibration:
            calibration["cycles_per_us"] = _cycles_per_us(pieces)
        table = sinks.results_table(schema, chunk.source, chunk.frame, outcome,
                                    calibration.get("cycles_per_us"),
                                    grade.grade_codes(outcome))
        writer.submit(sinks.part_path(out, number), table)
        solve_us = table.column("solve_us").to_numpy(zero_copy_only=False)
        tallies[chunk.source_index].add(outcome.status, outcome.guesses, solve_us)
        chunk_times.append((len(chunk), sum(p.outcome.solve_seconds for p in pieces)))
        now = time.perf_counter()
        span.setdefault(chunk.source_index, [now, now])[1] = now
        hooks.on_rows(len(chunk))

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM,)}
    signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        with _make_executor(settings, workers) as executor:
            executor.ready()
            t_ready = time.perf_counter()
            try:
                # executor.workers: an external cluster's thread count, not this machine's
                schedule(executor, chunks.tasks(),
                         executor.workers * settings.in_flight_per_worker, on_done)
            except KeyboardInterrupt:
                raise Stopped(signal.SIGINT) from None
            except Interrupted as stop:
                raise Stopped(stop.signum) from None
            finally:
                writer.close()  # parts are whole or absent either way
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    if not any((out / sinks.RESULTS).glob(sinks.PART_GLOB)):
        # No rows at all: one empty part, so DIR/results still reads as a (0-row) table.
        sinks.write_table(sinks.part_path(out, 0), schema.empty_table())
    wall = time.perf_counter() - t0
    total = Tally()
    for t in tallies:
        total.merge(t)
    summary = Summary(rows=total.rows)
    summary.counts.update(total.count_of())
    summary.wall_seconds = wall
    summary.steady_seconds = time.perf_counter() - t_ready
    summary.output = str(out)
    summary.resumed_rows = resumed
    summary.fail_on = settings.fail_on
    listing = _part_listing(out)
    stats = _stats(sources, settings, summary, tallies, total, chunk_times, span, started,
                   run_id)
    sinks.write_table(out / sinks.STATS, stats.to_arrow())
    sinks.write_json(out / sinks.MANIFEST, {
        "state": "finished", "run_id": run_id, "definition": definition,
        "inputs": [s.describe() for s in sources],
        "config": settings.as_dict(),
        "uniqueness_checked": settings.limit >= 2,
        "parts": listing,
        "rows": summary.rows,
        "started_at": _iso(started), "finished_at": _iso(time.time()),
    })
    sinks.write_json(out / sinks.SUCCESS, {"run_id": run_id, "rows": summary.rows})
    log.info("finished: %d rows in %.2f s", summary.rows, wall)
    return summary


def _make_executor(settings: Settings, workers: int) -> Executor:
    if settings.executor == "dask":
        from pipeline.dask_executor import DaskExecutor

        return DaskExecutor(settings.scheduler or None, workers)
    from pipeline.executors import LocalExecutor

    return LocalExecutor(workers)


def _cycles_per_us(pieces: list[Done]) -> float | None:
    """The CPU cycle counter's rate, from a worker's own calibration."""
    rates = [getattr(p, "cycles_per_us", None) for p in pieces]
    rates = [r for r in rates if r]
    return rates[0] if rates else None


def _summary_from_stats(out: Path) -> Summary:
    """The summary of a finished run, from its stats.parquet."""
    summary = Summary()
    stats = pl.read_parquet(out / sinks.STATS).filter(pl.col("scope") == "run")
    if stats.height:
        row = stats.row(0, named=True)
        summary.counts = {name: int(row[name]) for name in STATUS_NAMES}
        summary.rows = int(row["rows"])
        summary.wall_seconds = float(row["wall_seconds"] or 0.0)
    return summary


def _stats(sources: list[Source], settings: Settings, summary: Summary, tallies: list[Tally],
           total: Tally, chunk_times: list[tuple[int, float]], span: dict[int, list[float]],
           started: float, run_id: str) -> pl.DataFrame:
    """One row per input file and one for the whole run."""
    per_chunk = np.array([s / r * 1e6 for r, s in chunk_times if r], dtype=np.float64)
    common = {
        "run_id": run_id, "workers": settings.worker_count(),
        "chunk_size": settings.chunk_size, "executor": settings.executor,
        "uniqueness_checked": settings.limit >= 2,
        "pipeline_version": VERSION, "python_version": platform.python_version(),
        "numba_version": importlib.metadata.version("numba"),
        "polars_version": pl.__version__,
        "started_at": _iso(started), "finished_at": _iso(time.time()),
    }
    rows = []
    scopes = [("run", None, total, summary.wall_seconds)]
    for s in sources:
        first_last = span.get(s.index)
        scopes.append(("file", s.given, tallies[s.index],
                       (first_last[1] - first_last[0]) if first_last else None))
    for scope, name, tally, wall in scopes:
        rows.append({
            "scope": scope, "source": name, "rows": tally.rows, **tally.count_of(),
            "wall_seconds": wall,
            "rows_per_second": (tally.rows / wall) if wall else None,
            **tally.guesses_figures(),
            **tally.solve_us_figures(),
            "chunk_solve_us_per_row_p50": (float(np.percentile(per_chunk, 50))
                                           if len(per_chunk) and name is None else None),
            "chunk_solve_us_per_row_p99": (float(np.percentile(per_chunk, 99))
                                           if len(per_chunk) and name is None else None),
            **common,
        })
    return pl.DataFrame(rows, schema_overrides={
        "source": pl.String, "wall_seconds": pl.Float64, "rows_per_second": pl.Float64,
        "guesses_mean": pl.Float64, "guesses_p99": pl.Float64, "guesses_max": pl.Int64,
        "solve_us_p50": pl.Float64, "solve_us_p90": pl.Float64, "solve_us_p99": pl.Float64,
        "solve_us_max": pl.Float64, "chunk_solve_us_per_row_p50": pl.Float64,
        "chunk_solve_us_per_row_p99": pl.Float64})


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

