"""A worker's whole job: a task in, its part written, a few figures out.

    FindRange, ScanInput   planning: find, count and hash the records of a range (pipeline.job.plan)
    Bundle          several tasks in one (on Dask, where a round trip costs more)
    Spill          copy an input that can be read only once into the run folder
    Solve          a range (or the ranges of small inputs sharing a part) -> read ->
                   encode -> solve -> check -> grade (-> rate) -> its part (and trace)

The same `execute` runs in the local pool's processes and on Dask workers. A Solve reads
its input and writes its part itself (temporary name, fsync, rename; one PUT on an object
store) and returns a `Figures`: counts, histograms, seconds. No row goes back.

A Solve with a `window` is a probe: it solves only those rows and writes nothing; the
scheduler uses probes to find the row that kills a worker. `poisoned` rows are not given
to the engine at all: they become `error` rows with their reason.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import time

import numpy as np

from pipeline import testhooks
from pipeline.errors import InputChanged, InputError
from pipeline.execute.base import report_progress
from pipeline.io import inputs, ranges, reader, records, runfolder
from pipeline.io.storage import Location, why
from pipeline.io.strings import buffers
from pipeline.job.tally import Tally
from pipeline.job.tasks import Bundle, Classes, Figures, Piece, Solve, Spill
from pipeline.sudoku import grade, grid, solver
from pipeline.sudoku.status import NULL, Status

log = logging.getLogger("pipeline.worker")

# Test hook: "crash:<puzzle>", "raise:<puzzle>", "rate-disagrees:<puzzle>"
FAULT_ENV = "PIPELINE_FAULT_INJECT"


def execute(task):
    """Run any task of the pipeline (this is what every executor calls)."""
    if isinstance(task, Solve):
        return solve(task)
    if isinstance(task, ranges.FindRange):
        return _reading(task.location, lambda: ranges.find_range(task))
    if isinstance(task, ranges.ScanInput):
        return _reading(task.location, lambda: ranges.scan_input(task))
    if isinstance(task, ranges.HashRange):
        return _reading(task.location, lambda: ranges.hash_range(task))
    if isinstance(task, Bundle):
        return [execute(t) for t in task.tasks]
    if isinstance(task, Spill):
        return _spill(task)
    if isinstance(task, Classes):
        from pipeline.io.classes import distinct_classes

        return distinct_classes([p.url for p in task.parts])
    raise TypeError(f"not a pipeline task: {task!r}")


def _reading(loc: Location, fn):
    try:
        return fn()
    except FileNotFoundError:
        raise InputError(f"{loc.shown}: vanished during the run") from None
    except OSError as exc:
        raise InputError(f"{loc.shown}: read failed ({why(exc)})") from None


def _spill(task: Spill) -> int:
    if task.shape is not None and task.shape.kind == "parquet":
        from pipeline.io import parquet

        return parquet.copy_rows(task.source, task.dest, task.rows)
    with task.source.open_stream() as f:
        return inputs.spill(f, task.dest, task.gzipped, task.name, task.rows, task.shape)


# ---------------------------------------------------------------------------------------
# Solve


_CYCLES: list[float | None] = []


def cycle_rate() -> float | None:
    """Cycles per microsecond of the counter the kernel reads (measured once a process)."""
    if not _CYCLES:
        from pipeline.sudoku import engine

        _CYCLES.append(engine.cycles_per_us())
    return _CYCLES[0]


def hello() -> float | None:
    """What a worker reports as it starts (execute.base.Runner): its clock's rate."""
    return cycle_rate()


def warm_up() -> None:
    """Load every compiled step of a task and measure the clock, once per process (the
    canonical form's kernels are loaded by the first task that needs them)."""
    import pyarrow.compute  # noqa: F401  (a task's first cast would import it: 50 ms)
    import pyarrow.parquet  # noqa: F401

    _keep_freed_memory()
    with _hidden("cffi"):
        solver.warm_up()
        reader.warm_up()
    cycle_rate()


def _keep_freed_memory() -> None:
    """Ask glibc's malloc to keep freed blocks for reuse instead of giving them back.

    A task allocates and frees blocks of megabytes (a range's bytes, its columns). By
    default glibc maps large blocks afresh and trims freed memory at once, so each new
    block costs a page fault every 4 KiB; in a Dask worker's task thread (an arena of its
    own) that was a fifth of the task's time. Kept, they stay mapped (the process's
    memory stays at its peak, a few hundred MB). Elsewhere than glibc: nothing to do.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, 256 << 20)  # blocks up to 256 MiB from the heap
        libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)  # trim the heap only past 1 GiB free
    except (OSError, AttributeError):
        pass


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


@contextlib.contextmanager
def _hidden(module: str):
    """A module that cannot be imported for a while (unless it already is).

    numba's first compile or cache load builds its typing context, which imports cffi
    where it is installed (to type cffi functions: no kernel of ours calls one), and
    cffi's C parser compiles about a hundred regular expressions as it loads: a tenth of
    a second of every worker's start. Any later import of it works as usual.
    """
    if module in sys.modules:
        yield
        return
    sys.modules[module] = None  # what makes `import module` raise ImportError
    try:
        yield
    finally:
        if sys.modules.get(module, 0) is None:
            del sys.modules[module]


def solve(task: Solve) -> Figures:
    started = time.perf_counter()
    cpu = time.process_time()
    r = task.range
    pieces = task.pieces
    testhooks.hold("read-silence")
    rows = reader.Rows.concat([_read_piece(p) for p in pieces],
                              reader.column_names(task.shape))
    t_read = time.perf_counter()
    offsets, data = buffers(rows.columns["puzzle"])
    expected = None
    if "expected_solution" in rows.columns:
        e_offsets, e_data = buffers(rows.columns["expected_solution"])
        present = np.diff(e_offsets) > 0
        expected = (e_offsets, e_data, present)
    skipped = dict(rows.reasons)
    poisoned = dict(task.poisoned)
    skipped.update(poisoned)
    if task.window is not None:
        lo, hi = task.window
        for i in [*range(0, lo), *range(hi, rows.n)]:
            skipped.setdefault(i, "outside the probe")
    _maybe_fail(offsets, data, skipped)
    grids, bad = grid.encode_buffers(offsets, data)
    bad.update(skipped)
    report_progress(0)  # read: alive
    outcome = _solve_in_steps(grids, task.limit, bad, expected, task.timings,
                              count=task.window is None)
    for i, reason in poisoned.items():
        outcome.status[i] = Status.ERROR
        outcome.reasons[i] = reason
    t_solve = time.perf_counter()
    rate = cycle_rate() if task.timings else None
    solve_us = None
    if task.timings and outcome.cycles is not None and rate:
        solve_us = np.where(outcome.cycles == NULL, np.nan, outcome.cycles / rate)
    rated = (_rate(grids, outcome, task.rate, offsets, data, task.traces is not None)
             if task.rate >= 0 else None)
    grades = grade.grade_codes(outcome)
    forms = None
    if task.canonical and task.window is None:
        forms = _canonical(grids, outcome)
    tally = Tally()
    tally.add(outcome.status, outcome.guesses, solve_us,
              None if rated is None else rated[0])
    paths = rated[-1] if rated is not None else {}
    figures = Figures(part=r.part, input=r.input, rows=rows.n, tally=tally, seconds=0.0,
                      solve_seconds=outcome.solve_seconds,
                      solve_cpu_seconds=outcome.solve_cpu_seconds, pid=os.getpid(),
                      host=socket.gethostname(), cycles_per_us=rate)
    if len(pieces) > 1:
        figures.shares = tuple(_shares(pieces, outcome, solve_us,
                                       None if rated is None else rated[0]))
    if task.window is not None:
        figures.seconds = time.perf_counter() - started
        return figures
    report_progress(0, solving=False)  # writes from here: a silence is the storage's
    from pipeline.io import schema

    spans = [(p.source, p.range.first_row, p.range.rows) for p in pieces]
    table = schema.results_table(
        schema.results_schema(task.carried, task.expected, task.canonical, rated is not None),
        spans, rows.columns, outcome,
        grades, solve_us, forms, None if rated is None else schema.rated_columns(*rated[:-1]))
    whole = ranges.whole([p.range for p in pieces])
    held = testhooks.once("stale-write")  # a test holds the task here, as if stopped
    if held:
        testhooks.pause("stale-write", 600)
    try:
        if task.traces is not None:  # first: a result part is done only with its trace
            trace = schema.trace_table(spans, paths)
            runfolder.write_part(task.traces, whole, trace, task.compression,
                                 task.definition, task.fence)
        runfolder.write_part(task.results, whole, table, task.compression, task.definition,
                             task.fence)
    finally:
        if held:
            testhooks.mark("stale-write.done")
    done = time.perf_counter()
    figures.seconds = done - started
    figures.cpu_seconds = time.process_time() - cpu
    figures.timings = {"read": t_read - started, "solve": t_solve - t_read,
                       "write": done - t_solve}
    log.debug("%s: %.3f s (read %.3f, solve %.3f, write %.3f)", task, figures.seconds,
              t_read - started, t_solve - t_read, done - t_solve, extra={"part": r.part})
    return figures


STEP_SECONDS = 0.5  # about how long a piece of a range is solved before progress is said
FIRST_STEP = 2048  # rows solved first, to learn the range's pace


def _solve_in_steps(grids, limit, bad, expected, timings, count: bool = True
                    ) -> solver.Outcome:
    """solver.solve_grids over the range in pieces of about STEP_SECONDS each, saying after
    each how many rows are done (report_progress): the run's progress moves within a part,
    and a worker that goes silent is known to be stuck. Easy rows go in one more call."""
    n = len(grids)
    if n == 0:
        return solver.solve_grids(grids, limit, bad, expected, timings)
    pieces, start, step = [], 0, FIRST_STEP
    while start < n:
        stop = min(n, start + step)
        began = time.perf_counter()
        pieces.append(solver.solve_grids(
            grids[start:stop], limit,
            {i - start: why for i, why in bad.items() if start <= i < stop},
            None if expected is None else (expected[0][start:stop + 1], expected[1],
                                           expected[2][start:stop]), timings))
        report_progress(stop - start if count else 0)  # a probe's rows are not progress
        pace = (time.perf_counter() - began) / (stop - start)
        step = max(FIRST_STEP, int(STEP_SECONDS / pace) if pace > 0 else n)
        start = stop
    return solver.Outcome.concat(pieces)


def _canonical(grids: np.ndarray, outcome) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Canonical forms and automorphism counts of every row that is a grid (not malformed,
    not an error: invalid and unsolvable rows have them too)."""
    from pipeline.sudoku import canonical

    has = (outcome.status != Status.MALFORMED) & (outcome.status != Status.ERROR)
    if has.all():  # the usual part: no copies in and out
        forms, autos = canonical.minlex(grids)
        return forms, autos, has
    forms = np.zeros_like(grids)
    autos = np.zeros(len(grids), np.int64)
    rows = np.flatnonzero(has)
    if len(rows):
        forms[rows], autos[rows] = canonical.minlex(grids[rows])
    return forms, autos, has


def _read_piece(piece: Piece) -> reader.Rows:
    """A range's rows, as planned: InputChanged when its bytes are not what were hashed."""
    r, loc = piece.range, piece.location
    if piece.shape.kind == "parquet":
        from pipeline.io import parquet

        return _reading(loc, lambda: parquet.read_rows(
            loc, r.start, r.end, piece.shape, r.digest, piece.source, r.skip, r.rows))
    hasher = records.hasher()

    def read_text() -> reader.Rows:
        with loc.reader(r.start, r.end) as read:
            return reader.read_rows(read, r.start, r.end, piece.shape, hasher)

    rows = _reading(loc, read_text)
    if hasher.hexdigest() != r.digest or rows.n != r.rows:
        raise InputChanged.at(piece.source, r.start, r.end)
    return rows


def _shares(pieces, outcome, solve_us, ser) -> list[tuple[int, int, Tally]]:
    """Each input's rows and tally in a shared part."""
    out = []
    at = 0
    for p in pieces:
        n = p.range.rows
        t = Tally()
        t.add(outcome.status[at:at + n], outcome.guesses[at:at + n],
              None if solve_us is None else solve_us[at:at + n],
              None if ser is None else ser[at:at + n])
        out.append((p.range.input, n, t))
        at += n
    return out


RATE_STEP = 8  # puzzles in the rater's first call (a hard one takes seconds)
RATE_QUICK = 0.05  # seconds: a call that took less is followed by one twice as large, up
RATE_STEPS = 64  # to this (a call costs about 20 µs of its own, four easy puzzles' rating;
# more in a call would risk more puzzles of nested chains in one where a file turns hard)
RATE_SLOW = 5.0  # seconds: a call that took longer is followed by calls of one puzzle
# (nested chains take up to the budget's tens of seconds a puzzle: eight of them would
# keep the task silent past the stall timeout)


def _rate(grids: np.ndarray, outcome, budget: int, offsets, data, trace: bool = False
          ) -> tuple:
    """Rate the rows solved (one solution, proven) on Sudoku Explainer's scale: the
    arguments of schema.rated_columns, then (with `trace`) each rated row's steps
    ({row: [Step]}). A rating whose path does not reach the engine's solution (checked by
    the rater against it) makes its row `error`: a wrong rating is never written."""
    from pipeline.sudoku import rate

    n = len(outcome.status)
    er, ep, ed = (np.zeros(n, np.int16) for _ in range(3))
    steps = np.zeros(n, np.int32)
    tech = np.zeros(n, np.int16)  # 0: no technique (TECHNIQUES[0] is "")
    notes: dict[int, str] = {}
    paths: dict[int, list] = {}
    todo = np.flatnonzero(outcome.status == Status.SOLVED)
    solutions = outcome.solutions
    if (spec := os.environ.get(FAULT_ENV, "")).startswith("rate-disagrees:"):
        solutions = _wrong_solution(solutions, todo, spec.partition(":")[2], offsets, data)
    budget = budget or rate.DEFAULT_BUDGET
    ok_code = rate.STATUS_NAMES.index("ok")
    at = 0
    step = RATE_STEP
    while at < len(todo):
        rows = todo[at:at + step]
        at += len(rows)
        began = time.monotonic()
        got = rate.rate_grids(grids[rows], solutions[rows], budget, paths=trace)
        took = time.monotonic() - began
        if took > RATE_SLOW:
            step = 1
        elif took < RATE_QUICK:
            step = min(2 * step, RATE_STEPS)
        ok = got.status == ok_code
        done = rows[ok]
        er[done], ep[done], ed[done] = got.er[ok], got.ep[ok], got.ed[ok]
        tech[done], steps[done] = got.technique[ok], got.steps[ok]
        for i in done[got.steps[ok] == 0].tolist():  # (its 0.0 would read as no rating)
            notes[i] = "a complete grid: no step to rate (serate gives it 0.0)"
        if trace:  # the steps of the same rating
            paths.update((i, got.paths[k]) for k, i in zip(np.flatnonzero(ok).tolist(),
                                                             done.tolist(), strict=True))
        for k in np.flatnonzero(~ok).tolist():  # the few not rated: why, in words
            i, status, reached = int(rows[k]), rate.STATUS_NAMES[got.status[k]], got.reached[k]
            if status == "budget":
                notes[i] = f"past the rating budget at {reached / 10:.1f}+"
            elif status == "beyond":
                notes[i] = f"needs a technique beyond the rater's (rated {reached / 10:.1f} so far)"
            else:  # the rater's path and the engine's solution disagree: one of them is wrong
                outcome.status[i] = Status.ERROR
                outcome.reasons[i] = (f"rating failed: the rater found this puzzle {status} "
                                      f"(its path does not reach the solution)")
        report_progress(0)
    names = np.array([None, *rate.TECHNIQUES[1:]], dtype=object)
    technique = names[tech].tolist()
    return er, ep, ed, technique, steps, notes, paths


def _wrong_solution(solutions, todo, puzzle: str, offsets, data):
    """Test hook: the named puzzle's solution with the digits of two of its blank squares
    swapped."""
    wrong = solutions.copy()
    needle = puzzle.encode()
    starts = offsets[:-1]
    for i in todo.tolist():
        if data[starts[i]: offsets[i + 1]].tobytes() == needle:
            blank = [k for k, ch in enumerate(puzzle) if ch in ".0"]
            a = blank[0]
            b = next(k for k in blank if wrong[i, k] != wrong[i, a])
            wrong[i, a], wrong[i, b] = wrong[i, b], wrong[i, a]
    return wrong


def _maybe_fail(offsets: np.ndarray, data: np.ndarray, skipped: dict[int, str]) -> None:
    """Fail on purpose on a named puzzle, so tests can do the bad thing for real."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    how, _, puzzle = spec.partition(":")
    if how not in ("crash", "raise"):
        return
    needle = puzzle.encode()
    starts = offsets[:-1]
    for i in np.flatnonzero(np.diff(offsets) == len(needle)).tolist():
        if i in skipped:
            continue
        if data[starts[i]: starts[i] + len(needle)].tobytes() == needle:
            if how == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"injected fault on puzzle {puzzle[:12]}...")

