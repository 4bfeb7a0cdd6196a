"""The `pipeline` command line."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import click
import typer

from pipeline.errors import Interrupted, PipelineError, Stopped, UsageError

try:  # typer >= 0.22 vendors its own click; its exceptions are not click's
    from typer._click import exceptions as _tclick
except ImportError:  # pragma: no cover - an older typer on the real click
    _tclick = click.exceptions
_EXIT = (click.exceptions.Exit, typer.Exit, getattr(_tclick, "Exit", typer.Exit))
_ABORT = (click.exceptions.Abort, typer.Abort, getattr(_tclick, "Abort", typer.Abort))
_USAGE = (click.UsageError, _tclick.UsageError)
_CLICK = (click.ClickException, _tclick.ClickException)

app = typer.Typer(
    name="pipeline",
    help="Solve, check and summarise Sudoku puzzles at data-set scale.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

EXIT_HELP = """Exit codes: 0 finished; 1 finished but a --fail-on status occurred; 2 usage error or
unusable input; 3 the run failed (write error, full disk); 130/143 stopped by Ctrl-C/SIGTERM
(run the same command again to resume)."""


def _fail(exc: PipelineError) -> typer.Exit:
    from pipeline.storage import scrub

    if isinstance(exc, Stopped):
        _stopped(exc)

    typer.echo(f"pipeline: error: {scrub(str(exc))}", err=True)
    return typer.Exit(exc.exit_code)


@app.command(epilog=EXIT_HELP)
def run(
    input: Annotated[list[str], typer.Option(
        "--input", "-i", help="Input file, glob or - for stdin (repeatable). CSV with or "
        "without header, text (a puzzle a line), fixed-width records; .gz too.")],
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="Output folder [default: from config, output/<first input's "
        "stem>/].")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Worker processes; 0 = one per core [config: workers].")] = None,
    chunk_size: Annotated[int | None, typer.Option(
        help="Rows per chunk and per result part [config: chunk_size].")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", "-c", help="A TOML file with [run] settings over configs/default.toml.")
    ] = None,
    puzzle_column: Annotated[str | None, typer.Option(
        help="CSV column with the puzzles [default: found by name, else the first].")] = None,
    solution_column: Annotated[str | None, typer.Option(
        help="CSV column with expected solutions [default: solution/solutions].")] = None,
    first_solution: Annotated[bool | None, typer.Option(
        "--first-solution/--prove-unique",
        help="Stop at the first solution (n_solutions null) or prove uniqueness "
        "[default: prove].")] = None,
    fail_on: Annotated[str | None, typer.Option(
        help="Comma-separated statuses that make a finished run exit 1, e.g. "
        "invalid,unsolvable,error.")] = None,
    executor: Annotated[str | None, typer.Option(
        help="local (process pool) or dask [config: executor].")] = None,
    scheduler: Annotated[str | None, typer.Option(
        help="Dask scheduler address tcp://HOST:PORT [env: DASK_SCHEDULER_ADDRESS]; "
        "none with --executor dask starts a local cluster.")] = None,
    timings: Annotated[bool | None, typer.Option(
        "--timings/--no-timings", help="Measure each puzzle's solve time (solve_us).")] = None,
    canonical: Annotated[bool | None, typer.Option(
        "--canonical/--no-canonical", help="Add each puzzle's canonical (minlex) form and "
        "automorphism count [config: canonical].")] = None,
    overwrite: Annotated[bool, typer.Option(
        help="Replace a different run already in the output folder.")] = False,
    incremental: Annotated[bool, typer.Option(
        help="Treat --output as a warehouse: solve only input files not done before (by "
        "content hash), each into its own run folder, listed in catalog.parquet.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the final summary as one JSON object on stdout.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress, no table, no warnings on stderr.")] = False,
    log_level: Annotated[str | None, typer.Option(
        help="DEBUG, INFO, WARNING or ERROR for DIR/logs/run.jsonl.")] = None,
) -> None:
    """Solve and check every puzzle of the inputs; write Parquet results and stats.

    Settings come from configs/default.toml, then --config, then PIPELINE_<OPTION>
    environment variables (PIPELINE_WORKERS=4), then these flags.
    """
    from pipeline import config as config_mod
    from pipeline import run as run_mod

    flags = {
        "workers": workers, "chunk_size": chunk_size, "puzzle_column": puzzle_column,
        "solution_column": solution_column, "first_solution": first_solution,
        "fail_on": fail_on, "executor": executor, "scheduler": scheduler,
        "timings": timings, "log_level": log_level, "canonical": canonical,
    }
    try:
        settings = config_mod.load(config, flags)
        show = sys.stderr.isatty() and not quiet
        progress = _Progress() if show else None
        hooks = run_mod.Hooks()
        if progress is not None:
            hooks.on_start = progress.start
            hooks.on_rows = progress.advance
        try:
            if incremental:
                from pipeline.warehouse import run_incremental

                summary = run_incremental(input, settings, output, hooks, quiet=quiet)
            else:
                summary = run_mod.run(input, settings, output, overwrite, hooks, quiet=quiet)
        finally:
            if progress is not None:
                progress.stop()
    except PipelineError as exc:
        raise _fail(exc) from None
    if json_out:
        typer.echo(json.dumps(summary.as_dict()))
    elif summary.already_done and not quiet:
        typer.echo(f"already done: {summary.output} holds this run ({summary.rows} rows)",
                   err=True)
    elif show:
        _print_summary(summary)
    if summary.failing:
        if not quiet:
            typer.echo(f"pipeline: finished, but found {', '.join(summary.failing)} rows "
                       "(--fail-on)", err=True)
        raise typer.Exit(summary.exit_code)


class _Progress:
    """Rows done and rows/s on the terminal while a run goes."""

    def __init__(self):
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.started = time.perf_counter()
        self.rows = 0
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                            TextColumn("[bold]{task.fields[rows]:,}[/] rows"),
                            TextColumn("{task.fields[rate]:,.0f} rows/s"), TimeElapsedColumn(),
                            transient=True, console=_console(stderr=True))
        self.task = self.bar.add_task("solving", rows=0, rate=0.0)
        self.bar.start()

    def start(self, out: Path, resumed: int) -> None:
        desc = f"solving into {out}" + (f" (resuming after {resumed:,} rows)" if resumed else "")
        self.bar.update(self.task, description=desc)

    def advance(self, n: int) -> None:
        self.rows += n
        rate = self.rows / max(time.perf_counter() - self.started, 1e-9)
        self.bar.update(self.task, rows=self.rows, rate=rate)

    def stop(self) -> None:
        self.bar.stop()


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr)


def _print_summary(summary) -> None:
    from rich.table import Table

    table = Table(title=f"run: {summary.output}", show_footer=True)
    table.add_column("status", footer="total")
    table.add_column("rows", justify="right", footer=f"{summary.rows:,}")
    table.add_column("share", justify="right")
    for name, n in summary.counts.items():
        share = f"{100 * n / summary.rows:.1f}%" if summary.rows else "-"
        table.add_row(name, f"{n:,}", share)
    console = _console(stderr=True)
    console.print(table)
    console.print(f"{summary.rows:,} rows in {summary.wall_seconds:.2f} s "
                  f"({summary.rows_per_second:,.0f} rows/s)"
                  + (f"; {summary.resumed_rows:,} rows reused from before"
                     if summary.resumed_rows else ""))


@app.command()
def solve(
    puzzle: Annotated[str, typer.Argument(
        help="An 81-character puzzle (. or 0 for blanks), or - to read one a line from stdin.")],
    format: Annotated[str, typer.Option(
        "--format", "-f", help="board (a drawn 9x9 grid) or line (one 81-digit line each).")
    ] = "board",
    first_solution: Annotated[bool, typer.Option(
        "--first-solution", help="Do not prove uniqueness.")] = False,
) -> None:
    """Solve puzzles given on the command line or stdin; print status, grid and guesses.

    Exits 0 when every puzzle has a solution, 1 otherwise.
    """
    from pipeline import grid, solver

    if format not in ("board", "line"):
        raise _fail(UsageError(f"--format: {format!r} is not board or line"))
    if puzzle == "-":
        lines = [ln.strip() for ln in sys.stdin.read().splitlines()]
        puzzles = [ln for ln in lines if ln and not ln.startswith("#")]
    else:
        puzzles = [puzzle]
    outcome = solver.solve_strings(puzzles, limit=1 if first_solution else 2)
    texts = grid.decode(outcome.solutions, blank="0")
    ok = True
    for i, _ in enumerate(puzzles):
        status = solver.Status(int(outcome.status[i])).label
        has = bool(outcome.has_solution()[i])
        ok &= has
        if format == "line":
            typer.echo(texts[i] if has else f"{status}: {outcome.reasons.get(i, status)}")
            continue
        if i:
            typer.echo("")
        head = status
        if outcome.guesses[i] >= 0:
            head += f", {outcome.guesses[i]} guesses"
        if i in outcome.reasons:
            head += f": {outcome.reasons[i]}"
        typer.echo(head)
        if has:
            typer.echo(grid.show(outcome.solutions[i]))
    if not ok:
        raise typer.Exit(1)


@app.command()
def generate(
    count: Annotated[int, typer.Option("--count", "-n", help="How many puzzles to make.")],
    output: Annotated[str, typer.Option(
        "--output", "-o", help="CSV file to write (id,puzzle,solution,clues,difficulty); "
        "written whole or not at all.")],
    clues: Annotated[int | None, typer.Option(
        help="Exactly this many givens (17-80).")] = None,
    min_clues: Annotated[int | None, typer.Option(
        help="At least this many givens (17-80) [default: remove givens until none can go].")
    ] = None,
    seed: Annotated[int | None, typer.Option(
        help="Random seed; the same seed and options give the same file [default: a random "
        "seed, printed].")] = None,
    grade: Annotated[str | None, typer.Option(
        help="Only puzzles of this grade: easy, medium, hard, expert or extreme.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")
                     ] = False,
) -> None:
    """Make puzzles with exactly one solution (proved by the engine), in the Radcliffe CSV
    shape that `pipeline run` reads back. Exit 1 when --clues/--grade cannot be met."""
    from pipeline import generate as generate_mod

    try:
        generate_mod.main(count, output, clues, min_clues, seed, grade, quiet)
    except PipelineError as exc:
        raise _fail(exc) from None


@app.command()
def validate(
    file: Annotated[str, typer.Argument(
        help="A file of boards (a board a line, or a CSV) or of puzzle,solution pairs (a CSV "
        "with a solution column); .gz too.")],
    all_rows: Annotated[bool, typer.Option(
        "--all", help="A line for every row, valid or not.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="One JSON object on stdout: counts, causes, invalid rows (all rows "
        "with --all).")] = False,
    complete: Annotated[bool, typer.Option(
        "--complete", help="Boards must be complete grids (no blanks).")] = False,
    puzzle_column: Annotated[str | None, typer.Option(
        help="CSV column with the boards [default: found by name, else the first].")] = None,
    solution_column: Annotated[str | None, typer.Option(
        help="CSV column with solutions [default: solution/solutions].")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the exit code.")] = False,
) -> None:
    """Check every board (or puzzle and solution) of a file: a board is valid when no row,
    column or box repeats a digit; a solution must be complete, valid and keep the givens.
    Prints 'row N: reason' per invalid row (rows count from 0, as in `pipeline run`
    results) and a summary on stderr. Exit 0 all valid, 1 some not, 2 unusable file."""
    from pipeline import validate as validate_mod

    try:
        code = validate_mod.main(file, complete, all_rows, json_out, puzzle_column,
                                 solution_column, quiet)
    except PipelineError as exc:
        raise _fail(exc) from None
    if code:
        raise typer.Exit(code)


@app.command()
def report(
    folder: Annotated[str, typer.Argument(help="A run folder made by `pipeline run`.")],
    html: Annotated[str | None, typer.Option(
        "--html", help="Where to write the HTML report [default: FOLDER/report.html].")
    ] = None,
    no_html: Annotated[bool, typer.Option(
        "--no-html", help="Only the table on the terminal.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Only write the HTML, print nothing.")] = False,
) -> None:
    """Summarise a run: a table on the terminal and a self-contained HTML page with charts
    (statuses, effort, solve times, clues against guesses, grades, throughput, inputs).
    Works on unfinished runs too. Exit 2 when FOLDER is not a run folder."""
    from pipeline import report as report_mod

    try:
        report_mod.main(folder, html, no_html, quiet)
    except PipelineError as exc:
        raise _fail(exc) from None


def _stopped(exc: Stopped) -> None:
    """Say why, and leave at once: a second Ctrl-C in the interpreter's own shutdown (which
    puts the default handler back) would otherwise kill the process after the line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    typer.echo(f"pipeline: error: {exc}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)


def main() -> None:
    """Entry point: one line on stderr and an exit code for every failure, no traceback."""
    # A log line that cannot be written (a full disk) is not worth a traceback: the run
    # says what is wrong when its own writes fail.
    logging.raiseExceptions = False
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except _EXIT as exc:
        sys.exit(exc.exit_code)
    except _ABORT:
        typer.echo("pipeline: stopped", err=True)
        sys.exit(130)
    except _USAGE as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `pipeline`: help on stdout
            typer.echo(exc.format_message())
            typer.echo("pipeline: error: no command given", err=True)
            sys.exit(2)
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        typer.echo(f"pipeline: error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    except _CLICK as exc:
        typer.echo(f"pipeline: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except Stopped as exc:
        _stopped(exc)
    except PipelineError as exc:
        typer.echo(f"pipeline: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, Interrupted) as stop:
        exc = Stopped(getattr(stop, "signum", signal.SIGINT))
        _stopped(exc)
    except Exception as exc:  # the last line of defence: one line, no traceback
        # debug: never printed by logging's last-resort handler (no traceback on stderr)
        logging.getLogger("pipeline").debug("internal error", exc_info=True)
        typer.echo(f"pipeline: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(3)
    sys.exit(0)


if __name__ == "__main__":
    main()
