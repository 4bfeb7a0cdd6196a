"""The messages between the parent and its workers: the tasks, and what a Solve returns.

Small and picklable on purpose: a task describes work (an input's URL, byte bounds, first
row, expected hash), it never carries rows. The planning tasks live with the plan
(pipeline.job.plan: FindRange, ScanInput); what a worker does with any task is pipeline.job.worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.io.ranges import Range
from pipeline.io.runfolder import Fence
from pipeline.io.shape import Shape
from pipeline.io.storage import Location
from pipeline.job.tally import Tally


@dataclass(frozen=True)
class Spill:
    """Copy an input that can be read only once (gzip, http) to `dest`, decompressed; with
    `rows`, only its first rows (`run --limit`), by `shape`'s rules."""

    source: Location
    dest: Location
    gzipped: bool | None  # None: if it starts as gzip does (over http)
    name: str
    rows: int = 0
    shape: Shape | None = None


@dataclass(frozen=True)
class Piece:
    """Another input's range in the same part (small inputs share a part)."""

    range: Range
    location: Location
    shape: Shape
    source: str


@dataclass(frozen=True)
class Solve:
    """Solve one range of an input (and the `more` ranges of its part) and write its part;
    rows are counted across them, in order (the window, the poisoned rows)."""

    range: Range
    location: Location
    shape: Shape
    source: str  # the `source` column's value
    results: Location  # the run's results/ folder
    carried: tuple[str, ...]  # the run's carried columns (every part has the same schema)
    expected: bool  # whether the run's parts have an expected_solution column
    limit: int
    timings: bool
    canonical: bool = False  # add the canonical form and automorphism count
    compression: str = "zstd"  # the grid columns' codec (schema.write_options)
    window: tuple[int, int] | None = None  # a probe: solve these rows only, write nothing
    poisoned: tuple[tuple[int, str], ...] = ()  # (row in range, reason): error, not solved
    definition: str = ""  # the run's definition_digest, carried by the part
    fence: Fence | None = None  # checked just before the part appears
    more: tuple[Piece, ...] = ()
    rate: int = -1  # rate solved rows (ser, ...) with this effort budget (0: the rater's); -1 no
    traces: Location | None = None  # with rate: the run's traces/ folder, for the steps

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return (Piece(self.range, self.location, self.shape, self.source), *self.more)

    @property
    def part(self) -> int:
        return self.range.part

    @property
    def rows(self) -> int:
        return self.range.rows + sum(p.range.rows for p in self.more)

    def locate(self, i: int) -> tuple[str, int]:
        """The source and row of the task's i-th row."""
        for p in self.pieces:
            if i < p.range.rows:
                return p.source, p.range.first_row + i
            i -= p.range.rows
        raise IndexError(i)

    def __str__(self) -> str:
        r = self.range
        if self.more:
            return f"part {r.part} ({len(self.more) + 1} inputs from {self.source}, " \
                   f"{self.rows} rows)"
        what = f"rows {r.first_row}..{r.first_row + r.rows - 1}" if r.rows else "no rows"
        if self.window:
            what = f"rows {r.first_row + self.window[0]}..{r.first_row + self.window[1] - 1}"
        return f"part {r.part} ({self.source}, {what})"


@dataclass(frozen=True)
class Bundle:
    """Several tasks in one, whose results come back as a list, in order: where a task's
    round trip costs milliseconds of CPU (through a Dask scheduler), not microseconds."""

    tasks: tuple


@dataclass(frozen=True)
class Classes:
    """Count the distinct canonical forms of a run's parts, per source and in all."""

    parts: tuple[Location, ...]


@dataclass
class Figures:
    """What a Solve returns: enough to merge the run's stats, nothing per row."""

    part: int
    input: int
    rows: int
    tally: Tally
    seconds: float  # the task's wall time in the worker
    solve_seconds: float  # of which in the engine
    solve_cpu_seconds: float = 0.0  # the CPU time the engine had in those seconds
    cpu_seconds: float = 0.0  # the worker's CPU time for the task
    pid: int = 0
    host: str = ""
    cycles_per_us: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # a shared part's (input, rows, tally) of each of its inputs; empty: all of `input`
    shares: tuple[tuple[int, int, Tally], ...] = ()
