"""The `pipeline` command line (typer on click).

Settings are layered by click: a setting's default (pipeline.job.settings.Settings) < the
--config file (read by an eager option into click's default_map) < its PIPELINE_<NAME>
environment variable < its flag. Our errors are click exceptions: each shows one line and
carries its exit code, so the commands need no ladder of except branches.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import click
import typer

from pipeline import VERSION
from pipeline.cli import progress as progress_mod
from pipeline.errors import UsageError
from pipeline.io.terminal import visible
from pipeline.job.settings import (
    COMPRESSIONS,
    DEFAULTS,
    EXECUTORS,
    LOG_LEVELS,
    MAX_CHUNK_SIZE,
    MAX_RATE_BUDGET,
)
from pipeline.sudoku.status import STATUS_NAMES, parse_statuses

app = typer.Typer(
    name="pipeline",
    help="Solve, check and summarise Sudoku puzzles at data-set scale.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    suggest_commands=False,  # click's own error already says "Did you mean ...?"
)

EXIT_HELP = """Exit codes: 0 finished; 1 finished but a --fail-on status occurred; 2 usage error or
unusable input (--incremental: an input refused, the others done); 3 the run failed (write
error, full disk); 130/143 stopped by Ctrl-C/SIGTERM (run the same command again to
resume)."""


class StatusList(click.ParamType):
    """A comma-separated list of statuses (a list from a config file too)."""

    name = "STATUS,..."

    def convert(self, value, param, ctx):
        try:
            return parse_statuses(value)
        except UsageError as exc:
            self.fail(exc.message.removeprefix("status: "), param, ctx)


def _config_file(ctx: click.Context, param, value: str | None) -> str | None:
    """--config FILE: its settings become the defaults of the other options."""
    if value:
        from pipeline.job.settings import read_config_file

        ctx.default_map = {**(ctx.default_map or {}), **read_config_file(value)}
    return value


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pipeline {VERSION}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")
        ] = False) -> None:
    """Solve, check and summarise Sudoku puzzles at data-set scale."""


def _env(name: str) -> str:
    return f"PIPELINE_{name.upper()}"


def _layer(param: str) -> int:
    """Which layer set an option of the current command: 0 its default, 1 a config file,
    2 the environment, 3 the command line."""
    from click.core import ParameterSource as Source

    source = click.get_current_context().get_parameter_source(param)
    return {Source.DEFAULT_MAP: 1, Source.ENVIRONMENT: 2, Source.COMMANDLINE: 3}.get(source, 0)


@app.command(epilog=EXIT_HELP)
def run(
    input: Annotated[list[str], typer.Option(
        "--input", "-i", metavar="PATH", help="An input: a file, a glob (quoted), - for "
        "stdin, a FIFO, or a URL (s3://, gs://, file://, http(s)://). Repeatable. CSV with "
        "or without a header, text (a puzzle a line), fixed-width records, Parquet; .gz "
        "too.")],
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="DIR", help="The run folder (a path or a URL) [default: "
        "output/<first input's name>].")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", "-c", metavar="FILE", is_eager=True, callback=_config_file,
        help="A TOML file whose [run] table sets defaults for the options below.")] = None,
    workers: Annotated[int, typer.Option(
        metavar="N", min=0, envvar=_env("workers"), show_envvar=True,
        help="Worker processes (or Dask threads to keep busy); 0 = one per core.")
    ] = DEFAULTS.workers,
    chunk_size: Annotated[int, typer.Option(
        metavar="N", min=1, max=MAX_CHUNK_SIZE, envvar=_env("chunk_size"), show_envvar=True,
        help="About this many rows per range: a task, and one result part.")
    ] = DEFAULTS.chunk_size,
    limit: Annotated[int, typer.Option(
        metavar="N", min=0, envvar=_env("limit"), show_envvar=True,
        help="Read only the first N rows of each input (a quick try of a big file); 0 = "
        "every row.")] = DEFAULTS.limit,
    puzzle_column: Annotated[str, typer.Option(
        metavar="NAME", envvar=_env("puzzle_column"),
        help="The CSV or Parquet column of the puzzles [default: found by name, else the "
        "first column holding puzzles].")] = DEFAULTS.puzzle_column,
    solution_column: Annotated[str, typer.Option(
        metavar="NAME", envvar=_env("solution_column"),
        help="The column of expected solutions [default: solution/solutions].")
    ] = DEFAULTS.solution_column,
    first_solution: Annotated[bool, typer.Option(
        "--first-solution/--prove-unique", envvar=_env("first_solution"),
        help="Stop at the first solution (n_solutions null), or prove uniqueness.")
    ] = DEFAULTS.first_solution,
    fail_on: Annotated[str | None, typer.Option(
        click_type=StatusList(), envvar=_env("fail_on"), show_envvar=True,
        help="Statuses that make a finished run exit 1, e.g. invalid,unsolvable,error.")
    ] = None,
    timings: Annotated[bool, typer.Option(
        "--timings/--no-timings", envvar=_env("timings"),
        help="Measure each puzzle's solve time (solve_us).")] = DEFAULTS.timings,
    canonical: Annotated[bool, typer.Option(
        "--canonical/--no-canonical", envvar=_env("canonical"),
        help="Add each puzzle's canonical (minlex) form and automorphism count (for "
        "`pipeline dedup`, `split`, `augment`).")] = DEFAULTS.canonical,
    rate: Annotated[bool, typer.Option(
        "--rate/--no-rate", envvar=_env("rate"),
        help="Rate each solved puzzle as a person would find it, on Sudoku Explainer's scale "
        "(columns ser, ser_pearl, ser_diamond, ser_technique, ser_steps, rate_note).")
    ] = DEFAULTS.rate,
    rate_budget: Annotated[int, typer.Option(
        metavar="UNITS", min=0, max=MAX_RATE_BUDGET, envvar=_env("rate_budget"),
        help="The rater's effort per puzzle, past which ser is null and rate_note says how "
        "far it came; 0 = the rater's default (every public puzzle fits it).")
    ] = DEFAULTS.rate_budget,
    trace: Annotated[bool, typer.Option(
        "--trace/--no-trace", envvar=_env("trace"),
        help="With --rate: also write each rated row's solving steps, one row a step, to "
        "DIR/traces/ (a part beside each result part).")] = DEFAULTS.trace,
    compression: Annotated[str, typer.Option(
        click_type=click.Choice(COMPRESSIONS), envvar=_env("compression"),
        help="The parts' grid columns (puzzle, solution, ...): zstd (2.4x smaller, a third "
        "of a worker's time), none, or auto: none in a local folder, zstd at a URL.")
    ] = DEFAULTS.compression,
    executor: Annotated[str, typer.Option(
        click_type=click.Choice(EXECUTORS), envvar=_env("executor"), show_envvar=True,
        help="Where tasks run: a local process pool, or a Dask cluster.")] = DEFAULTS.executor,
    scheduler: Annotated[str, typer.Option(
        metavar="ADDRESS", envvar=[_env("scheduler"), "DASK_SCHEDULER_ADDRESS"],
        show_envvar=True, help="A Dask scheduler (tcp://HOST:PORT, tls://...): implies "
        "--executor dask; refused with local set in the same or a lower layer (a local "
        "set higher, e.g. the flag over a config file, runs locally); none with --executor "
        "dask starts a local cluster.")] = DEFAULTS.scheduler,
    log_level: Annotated[str, typer.Option(
        click_type=click.Choice(LOG_LEVELS, case_sensitive=False), envvar=_env("log_level"),
        help="How much goes to DIR/logs/run.jsonl.")] = DEFAULTS.log_level,
    stall_timeout: Annotated[float, typer.Option(
        metavar="SECONDS", min=0.1, envvar=_env("stall_timeout"),
        help="A worker whose task says nothing for this long (stopped, a read that never "
        "ends) is treated as lost: killed where it is ours, its range done again.")
    ] = DEFAULTS.stall_timeout,
    overwrite: Annotated[bool, typer.Option(
        help="Replace what the output folder holds (also a finished run of the same "
        "inputs: it is done again).")] = False,
    incremental: Annotated[bool, typer.Option(
        help="Treat --output as a warehouse: solve only input files not done before (by "
        "content hash), each into its own run folder, listed in catalog.parquet.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the final summary as one JSON object on stdout.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress, no summary, no warnings on stderr (a failure "
        "still says why, in one line).")] = False,
) -> None:
    """Solve and check every puzzle of the inputs; write Parquet results and stats.

    On a terminal a progress bar shows rows, percent, rows/s and the time left, then a table
    of statuses; elsewhere one summary line goes to stderr at the end.
    """
    from pipeline.job import run as run_mod
    from pipeline.job.settings import Settings

    if scheduler:  # an address says where tasks run: Dask, unless a later layer says local
        layer = _layer("executor")
        if layer == 0:
            executor = "dask"
        elif executor == "local" and layer > _layer("scheduler"):
            scheduler = ""  # e.g. --executor local over a config file's Dask cluster
    settings = Settings(
        inputs=input, folder=output or "", overwrite=overwrite, quiet=quiet,
        workers=workers, chunk_size=chunk_size, limit=limit, puzzle_column=puzzle_column,
        solution_column=solution_column, first_solution=first_solution,
        fail_on=fail_on or [], timings=timings, canonical=canonical, rate=rate,
        rate_budget=rate_budget, trace=trace, compression=compression,
        executor=executor, scheduler=scheduler, log_level=log_level,
        stall_timeout=stall_timeout)
    show = sys.stderr.isatty() and not quiet and not json_out
    progress = progress_mod.Progress() if show else None
    hooks = run_mod.Hooks()
    if progress is not None:
        hooks.on_start = progress.start
        hooks.on_rows = progress.advance
        hooks.on_progress = progress.progress
    try:
        if incremental:
            from pipeline.job.warehouse import run_incremental

            summary = run_incremental(settings, output, hooks)
        else:
            summary = run_mod.run(settings, hooks)
    finally:
        if progress is not None:
            progress.stop()
    if json_out:
        typer.echo(json.dumps(summary.as_dict()))
    elif summary.already_done and not quiet and not summary.failing:  # (the line below says it)
        typer.echo(f"pipeline: already done: {visible(summary.output)} holds this run "
                   f"({summary.rows:,} rows)", err=True)
    elif show:
        progress_mod.print_table(summary)
    # Every exit but 0 says why in one line, --quiet and --json included (cron mails it).
    if summary.refused_files:
        typer.echo(f"pipeline: error: {visible(summary.reason())}", err=True)
    elif summary.failing:
        typer.echo(f"pipeline: {visible(summary.reason())}", err=True)
    elif not quiet and not json_out and not summary.already_done and not show:
        typer.echo(f"pipeline: {visible(summary.line())}", err=True)  # one line
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)


@app.command()
def solve(
    puzzle: Annotated[str, typer.Argument(
        metavar="PUZZLE", help="An 81-character puzzle (. or 0 for blanks), or - to read "
        "what `pipeline run` reads (a puzzle a line, CSV, fixed-width) or boards drawn as "
        "`solve` draws them from stdin.")],
    format: Annotated[str, typer.Option(
        "--format", "-f", click_type=click.Choice(["board", "line"]),
        help="board: status, guesses and the grid drawn; line: one line per puzzle on "
        "stdout (81 digits, 'multiple <81 digits>' or the status; reasons on stderr).")
    ] = "board",
    first_solution: Annotated[bool, typer.Option(
        "--first-solution", help="Do not prove uniqueness.")] = False,
    rate: Annotated[bool, typer.Option(
        "--rate", help="Rate each solved puzzle on Sudoku Explainer's scale: ER/EP/ED and "
        "the technique that set ER.")] = False,
) -> None:
    """Solve puzzles given on the command line or stdin.

    Exits 0 when every puzzle has a solution, 1 otherwise.
    """
    from pipeline.tools import solve as solve_mod

    if rate and first_solution:
        raise UsageError("--rate rates puzzles proven to have one solution; it cannot go "
                         "with --first-solution")
    raise typer.Exit(solve_mod.main(puzzle, format, first_solution, rate))


@app.command()
def explain(
    puzzle: Annotated[str, typer.Argument(
        metavar="PUZZLE", help="An 81-character puzzle, or - to read what `pipeline run` "
        "reads (or boards drawn as `solve` draws them) from stdin.")],
    board: Annotated[int | None, typer.Option(
        metavar="N", min=1, help="Draw the grid with its candidates before step N (text "
        "only; a puzzle of fewer steps read from - says so, one given here exits 2).")] = None,
    format: Annotated[str, typer.Option(
        "--format", "-f", click_type=click.Choice(["text", "json"]),
        help="text: a step a line, as players write them; json: the steps as objects "
        "(technique, rating, cells, digits, placements, eliminations).")] = "text",
    rate_budget: Annotated[int, typer.Option(
        metavar="UNITS", min=0, max=MAX_RATE_BUDGET,
        help="The rater's effort; 0 = its default.")] = 0,
) -> None:
    """A puzzle's solving path as a person takes it: each step's technique and Sudoku
    Explainer rating, then ER/EP/ED.

    Exits 1 when a puzzle is not `solved` (its status and reason said instead)."""
    from pipeline.tools import explain as explain_mod

    raise typer.Exit(explain_mod.main(puzzle, board, format, rate_budget))


@app.command()
def generate(
    count: Annotated[int, typer.Option("--count", "-n", metavar="N", min=0,
                                       help="How many puzzles to make.")],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE", help="CSV file to write "
        "(id,puzzle,solution,clues,difficulty), whole or not at all; - for stdout.")],
    clues: Annotated[int | None, typer.Option(
        metavar="N", help="Exactly this many givens, 22 to 80 (fewer are too rare to "
        "make).")] = None,
    min_clues: Annotated[int | None, typer.Option(
        metavar="N", min=17, max=80,
        help="At least this many givens [default: remove givens until none can go].")
    ] = None,
    seed: Annotated[int | None, typer.Option(
        metavar="N", help="Random seed; the same seed and options give the same file "
        "[default: a random seed, printed].")] = None,
    grade: Annotated[str | None, typer.Option(
        click_type=click.Choice(["easy", "medium", "hard", "expert", "extreme"]),
        help="Only puzzles of this grade. Reachable: easy with --clues 22-80; medium with "
        "--clues 22-39 or --min-clues 39 at most; hard with --clues 22-32 or --min-clues 32 "
        "at most; expert without --clues, --min-clues 24 at most; never extreme.")] = None,
    ser: Annotated[str | None, typer.Option(
        metavar="BAND", help="Only puzzles whose Sudoku Explainer rating (ER) is in this "
        "band: 7.0-8.0, 6.5+ or 7.2; adds columns ser, ser_pearl, ser_diamond. Bands must "
        "reach below 9.0.")] = None,
    ser_pearl: Annotated[str | None, typer.Option(
        metavar="BAND", help="The same for the pearl (EP).")] = None,
    ser_diamond: Annotated[str | None, typer.Option(
        metavar="BAND", help="The same for the diamond (ED).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")
                     ] = False,
) -> None:
    """Make puzzles with exactly one solution (proved by the engine), in the Radcliffe CSV
    shape that `pipeline run` reads back. A --clues/--grade combination it does not reach
    is refused before trying (exit 2, naming the nearest that it does); exit 1 when a
    reachable one still falls short."""
    from pipeline.tools import generate as generate_mod
    from pipeline.tools.show import parse_band

    bands = None
    if ser or ser_pearl or ser_diamond:  # in tenths, as the rater gives them
        bands = tuple(None if text is None else parse_band(text, option)
                      for text, option in ((ser, "--ser"), (ser_pearl, "--ser-pearl"),
                                           (ser_diamond, "--ser-diamond")))
    generate_mod.main(count, output, clues, min_clues, seed, grade, quiet, bands)


@app.command()
def validate(
    file: Annotated[str | None, typer.Argument(
        metavar="FILE", help="A file of boards (a board a line, a CSV, Parquet) or of "
        "puzzle,solution pairs (with a solution column); .gz too; - for stdin.")] = None,
    traces: Annotated[str | None, typer.Option(
        metavar="DIR", help="Instead of a FILE: replay every trace of a run made with "
        "--rate --trace (each must reach its row's solution, never removing a digit of "
        "it); prints 'SOURCE row N: why' per fault.")] = None,
    all_rows: Annotated[bool, typer.Option(
        "--all", help="A line for every row, valid or not.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="One JSON object on stdout: counts, causes, invalid rows (all rows "
        "with --all); with --traces: rows, steps and faults.")] = False,
    complete: Annotated[bool, typer.Option(
        "--complete", help="Boards must be complete grids (no blanks).")] = False,
    puzzle_column: Annotated[str | None, typer.Option(
        metavar="NAME", help="The column of the boards [default: found by name, else the "
        "first].")] = None,
    solution_column: Annotated[str | None, typer.Option(
        metavar="NAME", help="The column of solutions [default: solution/solutions].")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the exit code.")] = False,
) -> None:
    """Check every board (or puzzle and solution) of a file: a board is valid when no grid
    row, column or box repeats a digit; a solution must be complete, valid and keep the
    givens. Prints 'row N: reason' per invalid row (rows count from 0, as in `pipeline run`
    results) and a summary on stderr. Exit 0 all valid, 1 some not, 2 unusable file."""
    if file is None and traces is None:
        raise UsageError("give a FILE to check, or --traces DIR")
    if file is not None and traces is not None:
        raise UsageError("give a FILE to check, or --traces DIR, not both")
    if traces is not None:
        from pipeline.tools import traces as traces_mod

        if all_rows or complete or puzzle_column or solution_column:
            raise UsageError("--traces DIR replays a run's traces: --all, --complete and "
                             "the column options are for a FILE")
        raise typer.Exit(traces_mod.main(traces, quiet, json_out))
    from pipeline.tools import validate as validate_mod

    raise typer.Exit(validate_mod.main(file, complete, all_rows, json_out, puzzle_column,
                                       solution_column, quiet))


@app.command()
def report(
    folder: Annotated[str, typer.Argument(metavar="DIR",
                                          help="A run folder made by `pipeline run`.")],
    html: Annotated[str | None, typer.Option(
        "--html", metavar="FILE", help="Where to write the HTML report [default: "
        "DIR/report.html]; - writes it (alone) to standard output.")] = None,
    no_html: Annotated[bool, typer.Option(
        "--no-html", help="Only the table on the terminal.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Only write the HTML, print nothing.")] = False,
) -> None:
    """Summarise a run: a table on the terminal and a self-contained HTML page with charts
    (statuses, effort, solve times, clues against guesses, grades, throughput, inputs).
    Works on unfinished runs too. Exit 2 when DIR is not a run folder."""
    from pipeline.tools import report as report_mod

    report_mod.main(folder, html, no_html, quiet)


@app.command()
def show(
    folder: Annotated[str, typer.Argument(metavar="DIR",
                                          help="A run folder made by `pipeline run`.")],
    status: Annotated[str | None, typer.Option(
        click_type=StatusList(),
        help="Rows of these statuses [default: every status but solved; every status with "
        "--ser or --sort].")] = None,
    ser: Annotated[str | None, typer.Option(
        metavar="BAND", help="Only rows rated in this SER band: 7.0-8.0, 9+ or 8.3 (a run "
        "made with --rate).")] = None,
    sort: Annotated[str, typer.Option(
        click_type=click.Choice(["input", "ser", "guesses", "solve_us"]),
        help="Input order, or the highest ser (guesses, solve_us) first.")] = "input",
    limit: Annotated[int, typer.Option(
        metavar="N", min=0, help="At most N rows; 0 = all.")] = 20,
    format: Annotated[str, typer.Option(
        "--format", "-f", click_type=click.Choice(["table", "csv", "json"]),
        help="table (for a person), csv or json (one object a line).")] = "table",
) -> None:
    """The rows of a run with given statuses: source, row, status, reason, puzzle (and ser,
    ser_technique, rate_note in a run made with --rate).

    The question after a run: which rows were not solved, and why; which are the hardest."""
    from pipeline.tools import show as show_mod

    band = show_mod.parse_band(ser) if ser is not None else None
    every = band is not None or sort != "input"
    show_mod.main(folder, status or [s for s in STATUS_NAMES if every or s != "solved"], limit,
                  format, band, sort)


@app.command()
def dedup(
    folder: Annotated[str, typer.Argument(metavar="DIR", help="A finished run made with "
                                          "--canonical.")],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE", help="Where to write: .csv, .csv.gz or .parquet; a "
        "CSV feeds straight back into `pipeline run`.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
) -> None:
    """One row per equivalence class of the run's puzzles: its first occurrence in input
    order, with source, row, puzzle, canonical, solution, status and copies."""
    from pipeline.tools import dedup as tool

    raise typer.Exit(tool.main(folder, output, quiet))


@app.command()
def split(
    folder: Annotated[str, typer.Argument(metavar="DIR", help="A finished run made with "
                                          "--canonical.")],
    fractions: Annotated[str, typer.Option(
        metavar="F,F,...", help="The splits' shares of the classes, adding up to 1.")],
    output: Annotated[str, typer.Option("--output", "-o", metavar="OUTDIR",
                                        help="The folder for the split files.")],
    names: Annotated[str | None, typer.Option(
        metavar="NAME,...", help="The splits' names [default: all for one, train,test for two, "
        "train,val,test for three, else split0,split1,...].")] = None,
    seed: Annotated[int, typer.Option(metavar="N", min=0, max=2**64 - 1,
                                      help="The same seed gives the same split.")] = 0,
    format: Annotated[str, typer.Option(
        "--format", "-f", click_type=click.Choice(["parquet", "csv"]),
        help="The split files' format.")] = "parquet",
    stratify: Annotated[str, typer.Option(
        metavar="COLUMN", help="Keep this column's mix the same in every split: a column "
        "(grade, ...), ser_band (the SER bands of a run made with --rate: ser_1_2 .. "
        "ser_10_up), or 'none' for no stratifying.")] = "grade",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
) -> None:
    """Split the run's rows into files (train/val/test), whole equivalence classes to a
    split, so that no puzzle of one split is a disguised puzzle of another."""
    from pipeline.tools import split as tool

    raise typer.Exit(tool.main(folder, fractions, output, names, seed, format,
                                         None if stratify == "none" else stratify, quiet))


@app.command()
def overlap(
    first: Annotated[str, typer.Argument(
        metavar="A", help="A finished run made with --canonical, a Parquet table with a "
        "canonical column (a split or dedup output), or puzzles in any shape `run` reads; "
        "alone, a `split` folder: every pair of its splits.")],
    second: Annotated[str | None, typer.Argument(
        metavar="[B]", help="The same kinds as A: its rows equivalent to a puzzle of A are "
        "reported.", show_default=False)] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE", help="Where to write the rows found (source, row, "
        "puzzle, match_source, match_row): .csv, .csv.gz or .parquet.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
) -> None:
    """The rows of B whose equivalence class occurs in A (a disguised copy: relabelled,
    rotated, rows or columns swapped): a count on stderr, exit 1 when there is any, so
    that CI can refuse a leaky split.

    A and B are each a finished run made with --canonical, a Parquet table with a canonical
    column (a split or dedup output), or puzzles in any shape `run` reads (a file, a URL, or
    - for standard input), canonicalised on the way. Given alone, A is a `split` folder:
    every later split against every earlier one. Exit 0: none; 1: some; 2: a usage error
    or an unusable input."""
    from pipeline.tools import overlap as tool

    raise typer.Exit(tool.main(first, second, output, quiet))


@app.command()
def augment(
    folder: Annotated[str, typer.Argument(metavar="DIR", help="A finished run.")],
    copies: Annotated[int, typer.Option("--copies", "-k", metavar="K", min=1, max=1000,
                                        help="Random equivalents per solved row.")],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE", help="Where to write: .csv, .csv.gz or .parquet.")],
    seed: Annotated[int, typer.Option(metavar="N", min=0, max=2**64 - 1,
                                      help="The same seed gives the same file.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
) -> None:
    """For each solved row, K random equivalent puzzles with their solutions transformed
    the same way, each pair checked by the independent checker."""
    from pipeline.tools import augment as tool

    raise typer.Exit(tool.main(folder, copies, seed, output, quiet))
