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

import contextlib
import json
import logging
import os
import resource
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pipeline import testhooks
from pipeline.errors import DefinitionMismatch, InputError, Interrupted, Stopped, UsageError
from pipeline.execute import lifecycle
from pipeline.io import parquet, runfolder, schema, timestamps
from pipeline.io.inputs import (
    Input,
    Replay,
    detect_spilled,
    open_input,
    outside,
    resolve,
    spill_stream,
)
from pipeline.io.ranges import Range, by_part, footers
from pipeline.io.runfolder import RunFolder
from pipeline.io.storage import Location, redact
from pipeline.job import RUNNER, logs, plan, schedule, stats
from pipeline.job.settings import Settings
from pipeline.job.summary import Summary
from pipeline.job.tally import Tally
from pipeline.job.tasks import Classes, Figures, Piece, Solve, Spill

log = logging.getLogger("pipeline.run")


@dataclass
class Hooks:
    """What the caller (the CLI) wants to hear while the run goes."""

    # The run starts solving: its folder, the rows already done (resumed), all its rows.
    on_start: Callable[[str, int, int], None] = lambda out, resumed, total: None
    on_rows: Callable[[int], None] = lambda rows: None  # a part written, of so many rows
    on_progress: Callable[[int], None] = lambda rows: None  # rows solved within parts


def run(settings: Settings, hooks: Hooks | None = None) -> Summary:
    """Run the job end to end: `settings.inputs` into the folder `settings.output`.

    Raises the project's own exceptions (pipeline.errors) for what stops it; the Summary
    says what became of the rows, and its exit code whether a --fail-on status occurred."""
    previous = lifecycle.handle_stops()
    if settings.executor == "local":
        # Its imports overlap with ours and with opening the inputs.
        lifecycle.start_forkserver(RUNNER.preload)
    try:
        return _run(settings, hooks or Hooks())
    except KeyboardInterrupt:
        raise Stopped(signal.SIGINT) from None
    except Interrupted as stop:
        raise Stopped(stop.signum) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _run(settings: Settings, hooks: Hooks) -> Summary:
    started = time.time()
    t0 = time.perf_counter()
    overwrite, quiet = settings.overwrite, settings.quiet
    given = resolve(settings.inputs)
    run_folder = RunFolder(Location(settings.run_folder(given[0])))
    given, inside = outside(given, run_folder.loc)
    if not given:
        if run_folder.loc.local and os.path.isfile(run_folder.loc.path):  # (-o the input)
            raise UsageError(f"--output {run_folder.shown}: is a file, not a folder")
        raise InputError(f"every input is inside the output folder {run_folder.shown}")
    # Inputs first: one that cannot be used leaves no folder behind.
    inputs = [open_input(g, i, settings.puzzle_column or None,
                         settings.solution_column or None, schema.OURS,
                         stdin=sys.stdin.buffer if g == "-" else None)
              for i, g in enumerate(given)]
    run_folder.open()
    run_folder.lock(f"pid {os.getpid()} on {socket.gethostname()} since "
                    f"{timestamps.local()}")
    run_id = logs.new_run_id()
    before = None
    try:
        before = run_folder.previous()
        logs.hold(settings.log_level, quiet=quiet)
        for path in inside:
            log.warning("%s: inside the output folder, so not an input", redact(path))
        with _make_executor(settings) as executor:
            _spill(inputs, run_folder, executor, settings.limit)
            shared_rows = plan.plan_inputs(inputs, executor, settings.chunk_size,
                                           before.manifest)
            testhooks.pause("after-plan")
            definition = _definition(inputs, settings)
            # An input read once (standard input, a pipe) is known by its copy's hashes, as
            # a file is by its own: the same bytes again resume the run, or are done.
            try:
                state = run_folder.state(definition, overwrite)
            except DefinitionMismatch:
                run_folder.child(runfolder.SPILL).remove_tree()  # ours, in another's folder
                raise
            if state == "done" and (missing := _not_whole(run_folder, inputs, definition)):
                log.warning("%s is finished, but %s: those are made again", run_folder.shown,
                            missing)
                run_folder.child(runfolder.SUCCESS).remove()
                state = "resume"
            if state == "done":
                run_folder.child(runfolder.SPILL).remove_tree()
                summary = Summary.from_stats(run_folder.read_stats())
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
            summary = _execute(run_folder, inputs, settings, definition, hooks, executor,
                               run_id, started, t0, shared_rows)
            if summary.exit_code:
                logs.record_exit(summary.reason())
            return summary
    except BaseException as exc:  # a failure or a stop: on record in the run's log
        if isinstance(exc, InputError) and not logs.writing():
            # Found while spilling or planning: as unusable as one found above, no folder
            run_folder.unlock()
            run_folder.remove_if_made()
        elif (reason := logs.exit_reason(exc)) is not None:
            if (not logs.writing() and before is not None and before.empty
                    and not isinstance(exc, InputError | UsageError)):
                # Stopped or failed before the folder was judged, but it held nothing: it
                # is ours (an unusable input leaves no log: the run never started).
                with contextlib.suppress(Exception):
                    logs.setup(run_folder, run_id, settings.log_level, quiet=quiet)
            logs.record_exit(reason)
        raise
    finally:
        logs.teardown()
        run_folder.unlock()


def _not_whole(run_folder: RunFolder, inputs: list[Input], definition: dict) -> str:
    """What a finished folder misses of its run (its parts, checked by their footers, and
    its stats), in words; empty when nothing."""
    expected = footers([r for inp in inputs for r in inp.ranges])
    missing = []
    if expected:  # (a run without rows has one empty part of no range)
        done = run_folder.done_parts(expected, runfolder.definition_digest(definition),
                                     bool(definition.get("trace")))
        missing = [part for part in expected if part not in done]
    words = []
    if missing:
        words.append(f"{len(missing)} of its {len(expected)} parts are missing or not whole")
    if run_folder.read_stats() is None:
        words.append(f"its {runfolder.STATS} is missing")
    return " and ".join(words)


def _make_executor(settings: Settings):
    workers = settings.worker_count()
    if settings.executor == "dask":
        from pipeline.execute import dask_client

        return dask_client.executor(settings.scheduler or None, workers, RUNNER,
                                    settings.log_level, settings.stall_timeout)
    from pipeline.execute.local import LocalExecutor

    return LocalExecutor(workers, RUNNER, settings.log_level, settings.stall_timeout)


def _spill(inputs: list[Input], run_folder: RunFolder, executor, rows: int) -> None:
    """Copy every input that can be read only once into DIR/.spill/, decompressed (and
    with --limit every input, up to its rows-th row).

    Standard input and local pipes are read here (only this process can); files and URLs
    by a worker.
    """
    streams = [i for i in inputs if i.stream or rows]
    if not streams:
        return
    spill_dir = run_folder.child(runfolder.SPILL)
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
        else:  # (over http, gzip is known by the first bytes, as for stdin)
            tasks.append(Spill(inp.location, dest,
                               None if inp.stream == "http" else inp.stream == "gzip",
                               inp.source, rows,
                               None if inp.decided_after_spill else inp.shape))
        inp.location = dest
    if tasks:
        schedule.run_all(executor, tasks)
    for inp in streams:
        if inp.decided_after_spill:  # on the copy's first bytes
            detect_spilled(inp)
            if inp.parquet and rows:  # its first rows, now that it is a file
                whole, inp.location = inp.location, spill_dir.child(f"rows-{inp.index:03d}")
                parquet.copy_rows(whole, inp.location, rows)
                whole.remove()


def _definition(inputs: list[Input], settings: Settings) -> dict:
    """What defines the run. Each input names its layout by its index in `layouts`: a
    hundred thousand files of one shape write it once."""
    layouts: dict[str, int] = {}
    described = []
    for inp in inputs:
        entry = inp.describe()
        key = json.dumps(entry["layout"], sort_keys=True)
        entry["layout"] = layouts.setdefault(key, len(layouts))
        described.append(entry)
    return {"inputs": described, "layouts": [json.loads(k) for k in layouts],
            **options(settings)}


def options(settings: Settings) -> dict:
    """The settings that change what a run writes (a run's definition, with its inputs;
    runfolder.differences names each as its flag)."""
    return {
        "puzzle_column": settings.puzzle_column,
        "solution_column": settings.solution_column,
        "limit": settings.solution_limit,
        "rows": settings.limit,
        "canonical": settings.canonical,
        # (keys only where the option is not its default: the definition of a run made
        # before the key was added still matches; --rate-budget at its default is 0)
        **({"rate": True, "rate_budget": _budget(settings.rate_budget)} if settings.rate
           else {}),
        **({"trace": True} if settings.trace else {}),
        **({"timings": False} if not settings.timings else {}),  # solve_us null or not
    }


def _budget(budget: int) -> int:
    from pipeline.sudoku.rate import DEFAULT_BUDGET

    return 0 if budget == DEFAULT_BUDGET else budget


def _execute(run_folder: RunFolder, inputs: list[Input], settings: Settings, definition: dict,
             hooks: Hooks, executor, run_id: str, started: float, t0: float,
             shared_rows: int) -> Summary:
    run_folder.remove_temporary()
    run_folder.results.makedirs()
    if settings.trace:
        run_folder.traces.makedirs()
    ranges = [r for inp in inputs for r in inp.ranges]
    parts = by_part(ranges)
    expected = footers(ranges)
    digest = runfolder.definition_digest(definition)
    done = run_folder.done_parts(expected, digest, settings.trace)
    tallies = [Tally() for _ in inputs]
    resumed = sum(r.rows for r in ranges if r.part in done)
    if done:
        stats.count_done(run_folder, {p: m for p, m in parts.items() if p in done}, tallies,
                         settings.rate)
        log.info("resuming: %d rows already written", resumed)
    hooks.on_start(run_folder.shown, resumed, sum(r.rows for r in ranges))
    executor.on_progress = hooks.on_progress
    carried: list[str] = []
    for inp in inputs:
        for _, name in inp.shape.carried:
            if name not in carried:
                carried.append(name)
    with_expected = any(i.shape.solution_field is not None for i in inputs)
    run_folder.write_json(runfolder.MANIFEST, {"state": "running", "run_id": run_id,
                                            "definition": definition,
                                            "plan": [r.as_list() for r in ranges],
                                            "shared_rows": shared_rows})
    worker_seconds = [0.0] * len(inputs)
    worker_cpu = [0.0]
    engine = [0.0, 0.0]  # the engine's seconds, and the CPU seconds it had
    part_seconds: list[float] = []  # engine µs per row of each part, for the stats

    fence = runfolder.Fence(run_folder.loc, run_id)
    codec = settings.grid_codec(run_folder.loc.local)

    def tasks() -> Iterator[Solve]:
        for part, members in parts.items():
            if part in done:
                continue
            first, *more = [Piece(r, inputs[r.input].location, inputs[r.input].shape,
                                  inputs[r.input].source) for r in members]
            yield Solve(first.range, first.location, first.shape, first.source,
                        run_folder.results, tuple(carried), with_expected,
                        settings.solution_limit, settings.timings, settings.canonical, codec,
                        definition=digest, fence=fence, more=tuple(more),
                        rate=settings.rate_budget if settings.rate else -1,
                        traces=run_folder.traces if settings.trace else None)

    def on_done(figures: Figures) -> None:
        for i, rows, tally in figures.shares or [(figures.input, figures.rows,
                                                  figures.tally)]:
            tallies[i].merge(tally)
            worker_seconds[i] += figures.seconds * rows / max(figures.rows, 1)
        worker_cpu[0] += figures.cpu_seconds
        engine[0] += figures.solve_seconds
        engine[1] += figures.solve_cpu_seconds
        if figures.rows:
            part_seconds.append(figures.solve_seconds / figures.rows * 1e6)
        hooks.on_rows(figures.rows)

    executor.limit(sum(1 for part in parts if part not in done))
    executor.ready()
    t_ready = time.perf_counter()
    # What the stats need (pyarrow, 40 ms; numpy.ma, 20 ms; numba's version, read from its
    # package metadata, 10-40 ms) is made ready while the workers solve, not at the end.
    ready = threading.Thread(target=stats.prepare, name="pipeline-stats", daemon=True)
    ready.start()
    try:
        schedule.solve_all(executor, list(tasks()),
                           executor.workers * schedule.IN_FLIGHT_PER_WORKER,
                           on_done)
    except BaseException:
        testhooks.linger("pause-shutdown")
        raise
    classes = None
    if settings.canonical and ranges:  # counted by a worker: no row comes this way
        classes = schedule.run_all(executor, [Classes(tuple(run_folder.part(p)
                                                            for p in parts))])[0]
    # the rows' work done (parts written, with --canonical its classes counted): what
    # follows is bookkeeping
    t_last = time.perf_counter()
    ready.join()
    testhooks.pause("before-stats")
    if not ranges:
        # No rows at all: one empty part, so DIR/results still reads as a (0-row) table.
        if settings.trace:
            runfolder.write_part(run_folder.traces, Range(0, 0, 0, 0, 0, 0, ""),
                                 schema.trace_schema().empty_table(), codec, digest)
        runfolder.write_part(run_folder.results, Range(0, 0, 0, 0, 0, 0, ""),
                             schema.results_schema(tuple(carried), with_expected,
                                                   settings.canonical, settings.rate).empty_table(),
                                                   codec,
                             digest)
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
    figures = stats.rows(inputs, settings, summary, tallies, total, worker_seconds, part_seconds,
                   started, run_id, executor.workers, engine, classes)
    run_folder.write_stats(figures)
    run_folder.write_json(runfolder.MANIFEST, {
        "state": "finished", "run_id": run_id, "definition": definition,
        "plan": [r.as_list() for r in ranges], "shared_rows": shared_rows,
        "config": settings.as_dict(),
        "workers": executor.workers, "executor": executor.name,
        "uniqueness_checked": settings.solution_limit >= 2,
        "parts": [{"file": f"{runfolder.RESULTS}/{runfolder.part_name(p)}", "rows": rows}
                  for p, (rows, _) in expected.items()],
        "rows": summary.rows,
        "started_at": timestamps.utc_ms(started), "finished_at": timestamps.utc_ms(time.time()),
    })
    # The commit: from here a stop is too late to matter (what is left cleans up), so it is
    # ignored and the run finishes, exit 0; raised after `_SUCCESS` it said "stopped".
    lifecycle.ignore_stops()
    testhooks.pause("commit", 5.0)
    run_folder.write_json(runfolder.SUCCESS, {"run_id": run_id, "rows": summary.rows})
    run_folder.child(runfolder.SPILL).remove_tree()
    log.info("finished: %d rows in %.2f s", summary.rows, wall)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary.cpu_seconds = usage.ru_utime + usage.ru_stime + executor.client_cpu_seconds()
    return summary


