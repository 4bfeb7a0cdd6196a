"""What a run came to, for the command line and for callers from Python: it owns the
exit code (1 when a --fail-on status occurred), as black's Report does."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.sudoku.status import STATUS_NAMES


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
    refused_files: dict[str, str] = field(default_factory=dict)  # --incremental: why

    @property
    def failing(self) -> list[str]:
        return [s for s in self.fail_on if self.counts.get(s, 0) > 0]

    @property
    def exit_code(self) -> int:
        """2 when an input was refused (--incremental: the others were done), 1 when a
        --fail-on status occurred, else 0 (cli/exits.py's scheme)."""
        return 2 if self.refused_files else 1 if self.failing else 0

    def reason(self) -> str:
        """Why the exit code is not 0, in one line ('' when it is)."""
        if self.refused_files:
            n = len(self.refused_files)
            why = "; ".join(f"{reason}" for reason in self.refused_files.values())
            return (f"{n} input{'s' if n > 1 else ''} refused (the others done; one refused "
                    f"for its content is recorded in the catalog and skipped until it "
                    f"changes): {why}")
        if self.failing:
            done = "already done" if self.already_done else "finished"
            return f"{done}, but found {', '.join(self.failing)} rows (--fail-on): " \
                   f"{self.line()}"
        return ""

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
        rate = f"in {self.wall_seconds:.2f} s ({self.rows_per_second:,.0f} rows/s)"
        if self.already_done:  # (nothing was solved: no rate to give)
            rows = f"{self.rows:,} rows"
        elif self.resumed_rows:
            rows = (f"{self.rows:,} rows: {self.resumed_rows:,} reused from before, "
                    f"{self.new_rows:,} solved {rate}")
        else:
            rows = f"{self.rows:,} rows {rate}"
        return f"{rows}: {counts or 'no rows'} -> {self.output}"

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
            "refused_files": self.refused_files,
        }

    @classmethod
    def from_stats(cls, table) -> Summary:
        """The summary of a finished run, from its stats table (None: nothing known)."""
        summary = cls()
        for row in (table.to_pylist() if table is not None else []):
            if row["scope"] == "run":
                summary.counts = {name: int(row[name]) for name in STATUS_NAMES}
                summary.rows = int(row["rows"])
                summary.wall_seconds = float(row["wall_seconds"] or 0.0)
                summary.resumed_rows = int(row.get("resumed_rows") or 0)
        return summary
