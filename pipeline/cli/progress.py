"""What a person sees on the terminal during and after a run: the progress bar, the table."""

from __future__ import annotations

import time

from pipeline.io.terminal import visible


class Progress:
    """A bar on the terminal: rows done of the plan's rows, rows/s, time left.

    The plan counts every row before the first is solved, so the bar is of rows, whatever
    the input (standard input too: it is spilled and planned first). Workers say how many
    rows they have solved within a part (about twice a second), so the bar moves while
    parts are under way; a part written settles its rows exactly."""

    def __init__(self):
        from rich.progress import (
            BarColumn,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self.started = time.perf_counter()
        self.rows = 0  # of parts written by this invocation
        self.live = 0  # solved within parts not yet written
        self.resumed = 0
        self.total = 0
        self.bar = Bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                            TaskProgressColumn(),
                            TextColumn("[bold]{task.fields[rows]:,}[/] rows"),
                            TextColumn("{task.fields[rate]:,.0f} rows/s"),
                            TimeElapsedColumn(), TimeRemainingColumn(),
                            transient=True, console=console())
        self.task = self.bar.add_task("starting", total=None, rows=0, rate=0.0)
        self.bar.start()

    def start(self, out: str, resumed: int, total: int) -> None:
        from rich.markup import escape

        desc = f"solving into {escape(visible(out))}" + (
            f" (resuming after {resumed:,} rows)" if resumed else "")
        self.resumed, self.total = resumed, total
        self.started = time.perf_counter()
        self.bar.reset(self.task, description=desc, total=max(total, 1), completed=resumed,
                       rows=resumed, rate=0.0)

    def advance(self, rows: int) -> None:
        """A part of `rows` rows was written."""
        self.rows += rows
        self.live = max(0, self.live - rows)
        self._show()

    def progress(self, rows: int) -> None:
        """Workers solved `rows` more rows within parts under way."""
        self.live += rows
        self._show()

    def _show(self) -> None:
        done = min(self.total, self.resumed + self.rows + self.live)
        rate = (done - self.resumed) / max(time.perf_counter() - self.started, 1e-9)
        self.bar.update(self.task, completed=done, rows=done, rate=rate)

    def stop(self) -> None:
        self.bar.stop()


def console():
    """Rich's console on stderr (the summary and the bar never mix with stdout's data)."""
    from rich.console import Console

    return Console(stderr=True)


def print_table(summary) -> None:
    """A finished run's counts per status, and its one line."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(f"run: {visible(summary.output)}"), show_footer=True)
    table.add_column("status", footer="total")
    table.add_column("rows", justify="right", footer=f"{summary.rows:,}")
    table.add_column("share", justify="right")
    for name, n in summary.counts.items():
        share = f"{100 * n / summary.rows:.1f}%" if summary.rows else "-"
        table.add_row(name, f"{n:,}", share)
    out = console()
    out.print(table)
    out.print(Text(visible(summary.line())))
