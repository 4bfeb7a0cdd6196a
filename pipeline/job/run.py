"""`pipeline run`: plan -> (workers: read -> encode -> solve -> check -> write) -> merge.

The parent moves no row: it opens the inputs (their first bytes decide the shape), has
them planned and hashed (by the workers, and by itself while they start), decides what the
folder holds, hands out the ranges, merges the figures the workers send back, and writes
stats, the manifest and `_SUCCESS` last.

* A run is defined by its inputs (path, shape, and content: the plan's hashes), the
  column options and the solution limit. Workers, chunk size, executor and log level are
  execution knobs: a rerun may change them (it keeps the recorded plan).
* A finished folder with the same definition: nothing to do, exit 0. With another
  definition: refused (exit 2) unless --overwrite, which also redoes a finished run.
* An unfinished folder with the same definition: resumed. The parts are the journal.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import platform
import resource
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pipeline import VERSION, testhooks
from pipeline.errors import Interrupted, Stopped
from pipeline.execute import lifecycle
from pipeline.io import runfolder as folder
from pipeline.io.inputs import (
    Input,
    Replay,
    detect_spilled,
    open_input,
    resolve,
    spill_stream,
    stem,
)
from pipeline.io.ranges import Range
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location
from pipeline.job import RUNNER, logs, plan, schedule
from pipeline.job.settings import Settings
from pipeline.job.tally import Tally
from pipeline.job.tasks import Classes, Figures, Solve, Spill
from pipeline.sudoku.status import STATUS_NAMES

log = logging.getLogger("pipeline.run")


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
    steady_seconds: float = 0.0  # from warm workers to the last part written
    cpu_seconds: float = 0.0  # this process's own CPU time (not its workers')
    worker_cpu_seconds: float = 0.0  # the workers' CPU time on this run's ranges
    processed_files: list[str] = field(default_factory=list)  # --incremental
    skipped_files: list[str] = field(default_factory=list)  # --incremental

    @property
    def failing(self) -> list[str]:
        return [s for s in self.fail_on if self.counts.get(s, 0) > 0]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    @property
    def new_rows(self) -> int:
        return self.rows - self.resumed_rows

    @property
    def rows_per_second(self) -> float:
        """Rows solved by this invocation per second of it (rows reused not counted)."""
        return self.new_rows / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def line(self) -> str:
        """The run in one line: rows, counts, time, where."""
        counts = ", ".join(f"{n:,} {name}" for name, n in self.counts.items() if n)
        reused = f"; {self.resumed_rows:,} rows reused from before" if self.resumed_rows else ""
        return (f"{self.rows:,} rows in {self.wall_seconds:.2f} s "
                f"({self.rows_per_second:,.0f} rows/s){reused}: {counts or 'no rows'} "
                f"-> {self.output}")

    def as_dict(self) -> dict:
        return {
            "output": self.output, "rows": self.rows, "counts": self.counts,
            "wall_seconds": round(self.wall_seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "steady_seconds": round(self.steady_seconds, 3),
            "steady_rows_per_second": round(self.new_rows / self.steady_seconds, 1)
            if self.steady_seconds > 0 else 0.0,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "worker_cpu_seconds": round(self.worker_cpu_seconds, 3),
            "already_done": self.already_done, "resumed_rows": self.resumed_rows,
            "exit_code": self.exit_code, "failing": self.failing,
            "processed_files": self.processed_files, "skipped_files": self.skipped_files,
        }


@dataclass
class Hooks:
    """What the caller (the CLI) wants to hear while the run goes."""

    on_start: Callable[[str, int, int, int], None] = lambda out, rows, total, done: None
    on_rows: Callable[[int, int], None] = lambda rows, nbytes: None  # a part written


def output_location(settings: Settings, given: list[str], output: str | None) -> Location:
    return Location(output if output else settings.output.format(stem=stem(given[0])))


def run(inputs: list[str], settings: Settings, output: str | None = None,
        overwrite: bool = False, hooks: Hooks | None = None, quiet: bool = False) -> Summary:
    """Run the job end to end; raises a PipelineError subclass on a non-zero outcome."""
    previous = lifecycle.handle_stops()
    if settings.executor == "local":
        # Its imports overlap with ours and with opening the inputs.
        lifecycle.start_forkserver(RUNNER.preload)
    try:
        return _run(inputs, settings, output, overwrite, hooks or Hooks(), quiet)
    except KeyboardInterrupt:
        raise Stopped(signal.SIGINT) from None
    except Interrupted as stop:
        raise Stopped(stop.signum) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _run(given_inputs: list[str], settings: Settings, output: str | None, overwrite: bool,
         hooks: Hooks, quiet: bool) -> Summary:
    started = time.time()
    t0 = time.perf_counter()
    given = resolve(given_inputs)
    run_folder = RunFolder(output_location(settings, given, output))
    run_folder.open()
    run_folder.lock(f"pid {os.getpid()} on {socket.gethostname()} since "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S')}")
    run_id = logs.new_run_id()
    try:
        from pipeline.io import schema

        inputs = [open_input(g, i, settings.puzzle_column or None,
                                  settings.solution_column or None, schema.OURS,
                                  stdin=sys.stdin.buffer if g == "-" else None)
                  for i, g in enumerate(given)]
        resumable = not any(i.stream in ("stdin", "pipe") for i in inputs)
        if not resumable:  # nothing to compare with: the folder must be (made) fresh
            run_folder.state(None, overwrite, resumable=False)
        before = run_folder.previous()
        logs.hold(settings.log_level, quiet=quiet)
        with _make_executor(settings) as executor:
            _spill(inputs, run_folder, executor, settings.limit)
            plan.plan_inputs(inputs, executor, settings.chunk_size, before.manifest)
            testhooks.pause("after-plan")
            definition = _definition(inputs, settings)
            state = run_folder.state(definition, overwrite, resumable) if resumable else "fresh"
            if state == "done":
                summary = _summary_from_stats(run_folder)
                summary.already_done = True
                summary.output = run_folder.shown
                summary.fail_on = settings.fail_on
                return summary
            logs.setup(run_folder, run_id, settings.log_level, quiet=quiet)
            log.info("run %s: %d input(s) into %s (%s)", run_id, len(inputs),
                     run_folder.shown, state)
            for inp in inputs:
                if inp.shape.guessed:
                    log.warning("%s: its first record (%s) is taken for the column names",
                                inp.source, ",".join(inp.shape.columns))
            return _execute(run_folder, inputs, settings, definition, hooks, executor, run_id,
                            started, t0)
    finally:
        logs.teardown()
        run_folder.unlock()


def _make_executor(settings: Settings):
    workers = settings.worker_count()
    if settings.executor == "dask":
        from pipeline.execute import dask_client

        return dask_client.executor(settings.scheduler or None, workers, RUNNER,
                                    settings.log_level)
    from pipeline.execute.local import LocalExecutor

    return LocalExecutor(workers, RUNNER, settings.log_level)


def _spill(inputs: list[Input], run_folder: RunFolder, executor, rows: int) -> None:
    """Copy every input that can be read only once into DIR/.spill/, decompressed (and
    with --limit every input, up to its rows-th row).

    Standard input and local pipes are read here (only this process can); files and URLs
    by a worker.
    """
    streams = [i for i in inputs if i.stream or rows]
    if not streams:
        return
    spill_dir = run_folder.child(folder.SPILL)
    spill_dir.remove_tree()
    spill_dir.makedirs()
    tasks = []
    for inp in streams:
        dest = spill_dir.child(f"input-{inp.index:03d}")
        if inp.stream == "stdin":
            spill_stream(Replay(inp.head, sys.stdin.buffer), dest, inp, rows)
        elif inp.stream == "pipe":
            with open(inp.location.path, "rb") as stream:
                spill_stream(stream, dest, inp, rows)
        else:
            tasks.append(Spill(inp.location, dest, inp.stream == "gzip", inp.source, rows,
                               inp.shape if inp.stream != "http" else None))
        inp.location = dest
    if tasks:
        schedule.run_all(executor, tasks)
    for inp in streams:
        if inp.stream in ("stdin", "pipe", "http"):  # decided on the copy's first bytes
            detect_spilled(inp)


def _definition(inputs: list[Input], settings: Settings) -> dict:
    return {
        "inputs": [i.describe() for i in inputs],
        "puzzle_column": settings.puzzle_column,
        "solution_column": settings.solution_column,
        "limit": settings.solution_limit,
        "rows": settings.limit,
        "canonical": settings.canonical,
    }


def _execute(run_folder: RunFolder, inputs: list[Input], settings: Settings, definition: dict,
             hooks: Hooks, executor, run_id: str, started: float, t0: float) -> Summary:
    from pipeline.io import schema

    run_folder.remove_temporary()
    run_folder.results.makedirs()
    ranges = [r for inp in inputs for r in inp.ranges]
    by_part = {r.part: r for r in ranges}
    expected = {r.part: (r.rows, r.digest) for r in ranges}
    done = run_folder.done_parts(expected)
    tallies = [Tally() for _ in inputs]
    resumed = sum(r.rows for r in ranges if r.part in done)
    if done:
        _count_done(run_folder, [r for r in ranges if r.part in done], tallies)
        log.info("resuming: %d rows already written", resumed)
    hooks.on_start(run_folder.shown, resumed, sum(r.end - r.start for r in ranges),
                   sum(r.end - r.start for r in ranges if r.part in done))
    carried: list[str] = []
    for inp in inputs:
        for _, name in inp.shape.carried:
            if name not in carried:
                carried.append(name)
    with_expected = any(i.shape.solution_field is not None for i in inputs)
    run_folder.write_json(folder.MANIFEST, {"state": "running", "run_id": run_id,
                                            "definition": definition,
                                            "plan": [r.as_list() for r in ranges]})
    worker_seconds = [0.0] * len(inputs)
    worker_cpu = [0.0]
    engine = [0.0, 0.0]  # the engine's seconds, and the CPU seconds it had
    part_seconds: list[float] = []  # engine µs per row of each part, for the stats

    codec = settings.grid_codec(run_folder.loc.local)

    def tasks() -> Iterator[Solve]:
        for inp in inputs:
            for r in inp.ranges:
                if r.part not in done:
                    yield Solve(r, inp.location, inp.shape, inp.source, run_folder.results,
                                tuple(carried), with_expected, settings.solution_limit,
                                settings.timings, settings.canonical, codec)

    def on_done(figures: Figures) -> None:
        tallies[figures.input].merge(figures.tally)
        worker_seconds[figures.input] += figures.seconds
        worker_cpu[0] += figures.cpu_seconds
        engine[0] += figures.solve_seconds
        engine[1] += figures.solve_cpu_seconds
        if figures.rows:
            part_seconds.append(figures.solve_seconds / figures.rows * 1e6)
        r = by_part[figures.part]
        hooks.on_rows(figures.rows, r.end - r.start)

    executor.ready()
    t_ready = time.perf_counter()
    # What the stats need (pyarrow, 40 ms; numpy.ma, 20 ms; numba's version, read from its
    # package metadata, 10-40 ms) is made ready while the workers solve, not at the end.
    ready = threading.Thread(target=_prepare_stats, name="pipeline-stats", daemon=True)
    ready.start()
    try:
        schedule.solve_all(executor, list(tasks()),
                           executor.workers * schedule.IN_FLIGHT_PER_WORKER,
                           on_done)
    except BaseException:
        testhooks.linger("pause-shutdown")
        raise
    t_last = time.perf_counter()  # the last part written: what follows is bookkeeping
    ready.join()
    testhooks.pause("before-stats")
    if not ranges:
        # No rows at all: one empty part, so DIR/results still reads as a (0-row) table.
        from pipeline.job.worker import write_part

        write_part(run_folder.results, Range(0, 0, 0, 0, 0, 0, ""),
                   schema.results_schema(tuple(carried), with_expected,
                                         settings.canonical).empty_table(), codec)
    wall = time.perf_counter() - t0
    total = Tally()
    for t in tallies:
        total.merge(t)
    summary = Summary(rows=total.rows, wall_seconds=wall, output=run_folder.shown,
                      resumed_rows=resumed, fail_on=settings.fail_on,
                      steady_seconds=t_last - t_ready)
    summary.counts.update(total.count_of())
    summary.worker_cpu_seconds = worker_cpu[0]
    run_folder.sync()
    classes = None
    if settings.canonical and ranges:  # counted by a worker: no row comes this way
        parts = tuple(run_folder.part(r.part) for r in ranges)
        classes = schedule.run_all(executor, [Classes(parts)])[0]
    stats = _stats(inputs, settings, summary, tallies, total, worker_seconds, part_seconds,
                   started, run_id, executor.workers, engine, classes)
    _write_table(run_folder.child(folder.STATS), stats)
    run_folder.write_json(folder.MANIFEST, {
        "state": "finished", "run_id": run_id, "definition": definition,
        "plan": [r.as_list() for r in ranges],
        "inputs": [i.describe() for i in inputs],
        "config": settings.as_dict(),
        "workers": executor.workers, "executor": executor.name,
        "uniqueness_checked": settings.solution_limit >= 2,
        "parts": [{"file": f"{folder.RESULTS}/{folder.part_name(r.part)}", "rows": r.rows}
                  for r in ranges],
        "rows": summary.rows,
        "started_at": _iso(started), "finished_at": _iso(time.time()),
    })
    run_folder.write_json(folder.SUCCESS, {"run_id": run_id, "rows": summary.rows})
    run_folder.child(folder.SPILL).remove_tree()
    log.info("finished: %d rows in %.2f s", summary.rows, wall)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary.cpu_seconds = usage.ru_utime + usage.ru_stime + executor.client_cpu_seconds()
    return summary


def _count_done(run_folder: RunFolder, ranges: list[Range], tallies: list[Tally]) -> None:
    """Count the rows of parts already written into the tallies, one part at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from pipeline.sudoku.status import NULL

    names = pa.array(STATUS_NAMES)
    for r in ranges:
        loc = run_folder.part(r.part)
        table = pq.read_table(loc.path if loc.local else loc.fs.open(loc.path, "rb"),
                              columns=["status", "guesses", "solve_us"])
        status = pc.index_in(table.column("status"), value_set=names).to_numpy()
        guesses = pc.fill_null(table.column("guesses"), NULL).to_numpy()
        us = pc.fill_null(table.column("solve_us"), float("nan")).to_numpy()
        tallies[r.input].add(status, guesses, us)


def _summary_from_stats(run_folder: RunFolder) -> Summary:
    """The summary of a finished run, from its stats.parquet."""
    import pyarrow.parquet as pq

    summary = Summary()
    loc = run_folder.child(folder.STATS)
    try:
        table = pq.read_table(loc.path if loc.local else loc.fs.open(loc.path, "rb"))
    except Exception:
        return summary
    for row in table.to_pylist():
        if row["scope"] == "run":
            summary.counts = {name: int(row[name]) for name in STATUS_NAMES}
            summary.rows = int(row["rows"])
            summary.wall_seconds = float(row["wall_seconds"] or 0.0)
    return summary


def _stats(inputs: list[Input], settings: Settings, summary: Summary, tallies: list[Tally],
           total: Tally, worker_seconds: list[float], part_us: list[float], started: float,
           run_id: str, workers: int, engine: list[float],
           classes: tuple[dict[str, int], int] | None) -> list[dict]:
    """One row per input file and one for the whole run."""
    per_part = np.array(part_us, dtype=np.float64)
    common = {
        "run_id": run_id, "workers": workers,
        "chunk_size": settings.chunk_size, "executor": settings.executor,
        "uniqueness_checked": settings.solution_limit >= 2,
        "pipeline_version": VERSION, "python_version": platform.python_version(),
        "numba_version": _numba_version(),
        "started_at": _iso(started), "finished_at": _iso(time.time()),
    }
    single = len(inputs) == 1
    rows = [{
        "scope": "run", "source": None, "rows": total.rows, **total.count_of(),
        "resumed_rows": summary.resumed_rows,
        "wall_seconds": summary.wall_seconds, "rows_per_second": summary.rows_per_second,
        "worker_seconds": float(sum(worker_seconds)),
        # solve_us is elapsed time: when the engine had less CPU than time, some puzzles'
        # times include a stretch when the OS ran something else on their core.
        "engine_seconds": engine[0], "engine_cpu_seconds": engine[1],
        "distinct_classes": classes[1] if classes else None,
        **total.guesses_figures(), **total.solve_us_figures(),
        "chunk_solve_us_per_row_p50": float(np.percentile(per_part, 50)) if len(per_part)
        else None,
        "chunk_solve_us_per_row_p99": float(np.percentile(per_part, 99)) if len(per_part)
        else None,
        **common,
    }]
    for inp, tally, seconds in zip(inputs, tallies, worker_seconds, strict=True):
        rows.append({
            "scope": "file", "source": inp.source, "rows": tally.rows, **tally.count_of(),
            "resumed_rows": None,
            # A file's own wall time is known only when it is the run's only file.
            "wall_seconds": summary.wall_seconds if single else None,
            "rows_per_second": summary.rows_per_second if single else None,
            "worker_seconds": seconds, "engine_seconds": None, "engine_cpu_seconds": None,
            "distinct_classes": classes[0].get(inp.source, 0) if classes else None,
            **tally.guesses_figures(), **tally.solve_us_figures(),
            "chunk_solve_us_per_row_p50": None, "chunk_solve_us_per_row_p99": None,
            **common,
        })
    return rows


_STATS_TYPES = {
    "scope": "string", "source": "string", "rows": "int64", **dict.fromkeys(STATUS_NAMES, "int64"),
    "resumed_rows": "int64", "wall_seconds": "float64", "rows_per_second": "float64",
    "worker_seconds": "float64", "engine_seconds": "float64",
    "engine_cpu_seconds": "float64", "distinct_classes": "int64",
    "guesses_mean": "float64", "guesses_p99": "float64",
    "guesses_max": "int64", "solve_us_p50": "float64", "solve_us_p90": "float64",
    "solve_us_p99": "float64", "solve_us_max": "float64",
    "chunk_solve_us_per_row_p50": "float64", "chunk_solve_us_per_row_p99": "float64",
    "run_id": "string", "workers": "int64", "chunk_size": "int64", "executor": "string",
    "uniqueness_checked": "bool", "pipeline_version": "string", "python_version": "string",
    "numba_version": "string", "started_at": "string", "finished_at": "string",
}


_NUMBA_VERSION: list[str] = []


def _numba_version() -> str:
    """The installed numba's version (recorded even where the compiled module is used)."""
    if not _NUMBA_VERSION:
        _NUMBA_VERSION.append(importlib.metadata.version("numba"))
    return _NUMBA_VERSION[0]


def _prepare_stats() -> None:
    import numpy.ma  # noqa: F401  (np.percentile's first call imports it)
    import pyarrow.parquet  # noqa: F401

    _numba_version()


def _write_table(loc: Location, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, pa.type_for_alias(t)) for name, t in _STATS_TYPES.items()])
    table = pa.Table.from_pylist(rows, schema=schema)
    loc.write_atomic(lambda f: pq.write_table(table, f, compression="zstd"))


def _iso(t: float) -> str:
    """A UTC timestamp to the millisecond (whole seconds skewed the report's charts)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
