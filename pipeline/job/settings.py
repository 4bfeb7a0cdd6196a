"""The settings of `pipeline run`, each declared once.

A setting's default lives here, in `Settings`; its flag, help, environment variable and
checks live with the command line (cli.py), which lets click layer them:

    built-in default  <  --config FILE (its [run] table)  <  PIPELINE_<NAME>  <  --flag

`configs/*.toml` are example config files; nothing reads them unless given with --config.
"""

from __future__ import annotations

import numbers
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError
from pipeline.io.inputs import stem
from pipeline.sudoku.status import parse_statuses

EXECUTORS = ("local", "dask")
COMPRESSIONS = ("auto", "zstd", "none")  # of the parts' grid columns (schema.write_options)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_CHUNK_SIZE = 10_000_000  # rows a range may hold: a range's arrays are sized by it
MAX_RATE_BUDGET = 10**15  # effort units: a day of one core's rating is far less


# what a setting's value must be, as a message says it
_KIND_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
               list: "a list or a comma-separated string"}


def _typed(name: str, value: Any, annotation: str) -> Any:
    """A setting's value as its declared kind (a numpy integer as an int, a path as a
    string); UsageError for a value of another kind (a float budget, a bool worker count)."""
    kind = {"int": int, "float": float, "bool": bool, "str": str}.get(annotation)
    boolean = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"
    if kind is None:  # (the lists: their own checks)
        return value
    if kind is bool:
        ok = boolean
    elif kind is str:
        ok = isinstance(value, str | os.PathLike)
        value = os.fspath(value) if ok else value
    else:
        ok = isinstance(value, numbers.Integral if kind is int else numbers.Real) and not boolean
    if not ok:
        raise UsageError(f"{name} must be {_KIND_WORDS[kind]}, not {value!r}")
    return kind(value)


# What a run is asked to do once, not a default a config file may set.
_ONCE = {"once": True}


@dataclass
class Settings:
    """Every knob of `pipeline run` (the library's way in, and the command line's)."""

    inputs: list[str] = field(default_factory=list, metadata=_ONCE)  # paths, globs, URLs, -
    folder: str = field(default="", metadata=_ONCE)  # the run folder (--output)
    output: str = "output/{stem}"  # the run folder without --output: {stem} the first input's
    overwrite: bool = field(default=False, metadata=_ONCE)  # replace what the folder holds
    quiet: bool = field(default=False, metadata=_ONCE)  # no warnings on stderr
    workers: int = 0  # worker processes; 0 = one per core
    chunk_size: int = 50000  # about this many rows per range (a task, a result part)
    limit: int = 0  # read only the first N rows of each input; 0 = all
    first_solution: bool = False  # stop at the first solution (uniqueness not proven)
    fail_on: list[str] = field(default_factory=list)  # statuses that make the exit code 1
    puzzle_column: str = ""  # CSV column of the puzzles; empty = found by name or content
    solution_column: str = ""  # CSV column of the expected solutions; empty = by name
    timings: bool = True  # measure each puzzle's solve time (solve_us)
    canonical: bool = False  # add the canonical form and automorphism count
    rate: bool = False  # rate solved rows on Sudoku Explainer's scale (ser, ser_pearl, ...)
    rate_budget: int = 0  # effort units per puzzle past which ser is null; 0 = the rater's
    trace: bool = False  # with rate: write each rated row's solving steps to DIR/traces/
    compression: str = "auto"  # the grid columns': zstd, none, auto = none unless a URL
    executor: str = "local"  # local (a process pool) or dask
    scheduler: str = ""  # a Dask scheduler's address; empty with dask = a local cluster
    log_level: str = "INFO"  # for DIR/logs/run.jsonl
    stall_timeout: float = 300.0  # seconds a task may go without news before it is lost

    def __post_init__(self) -> None:
        for f in fields(self):  # (numpy's numbers too: the manifest must read them back)
            setattr(self, f.name, _typed(f.name, getattr(self, f.name), f.type))
        if isinstance(self.inputs, str | os.PathLike):  # one input, not its characters
            self.inputs = [os.fspath(self.inputs)]
        self.inputs = [os.fspath(i) for i in self.inputs]
        self.log_level = self.log_level.upper()
        self.fail_on = parse_statuses(self.fail_on, "--fail-on")
        if self.workers < 0:
            raise UsageError(f"workers must be 0 (one per core) or more, not {self.workers}")
        if not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            raise UsageError(f"chunk size must be 1 to {MAX_CHUNK_SIZE:,} rows, not "
                             f"{self.chunk_size}")
        if not self.stall_timeout > 0:
            raise UsageError(f"stall timeout must be more than 0 seconds, not "
                             f"{self.stall_timeout}")
        if self.rate and self.first_solution:
            raise UsageError("--rate rates puzzles proven to have one solution; it cannot go "
                             "with --first-solution")
        if self.trace and not self.rate:
            raise UsageError("--trace writes the rating's steps: it needs --rate")
        if not 0 <= self.rate_budget <= MAX_RATE_BUDGET:
            raise UsageError(f"rate budget must be 0 (the rater's default) to "
                             f"{MAX_RATE_BUDGET:,} units, not {self.rate_budget}")
        if self.limit < 0:
            raise UsageError(f"limit must be 0 (every row) or more, not {self.limit}")
        if self.executor not in EXECUTORS:
            raise UsageError(f"--executor: {self.executor!r} is not one of "
                             f"{', '.join(EXECUTORS)}")
        if self.scheduler and self.executor != "dask":  # never silently a local run
            raise UsageError(f"--scheduler {self.scheduler}: a Dask scheduler, for --executor "
                             f"dask, not {self.executor}")
        if self.scheduler:  # (an address Dask cannot use: said before the folder is taken)
            from pipeline.execute.dask_client import address_problem

            problem = address_problem(self.scheduler)
            if problem:
                raise UsageError(f"--scheduler {self.scheduler!r}: {problem}")
        if self.compression not in COMPRESSIONS:
            raise UsageError(f"--compression: {self.compression!r} is not one of "
                             f"{', '.join(COMPRESSIONS)}")
        if self.log_level not in LOG_LEVELS:
            raise UsageError(f"--log-level: {self.log_level!r} is not one of "
                             f"{', '.join(LOG_LEVELS)}")

    @property
    def solution_limit(self) -> int:
        """Solutions to look for: 2 proves uniqueness, 1 stops at the first."""
        return 1 if self.first_solution else 2

    def grid_codec(self, local_output: bool) -> str:
        """The parts' grid columns' codec: `auto` leaves them uncompressed in a local
        folder (the CPU is what a local run waits for) and compresses them at a URL (an
        object store's bytes cost time and money)."""
        if self.compression != "auto":
            return self.compression
        return "none" if local_output else "zstd"

    def worker_count(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)

    def run_folder(self, first_input: str) -> str:
        """The run folder: `folder`, else `output` with {stem} the first input's name."""
        return self.folder or self.output.format(stem=stem(first_input))

    def as_dict(self) -> dict[str, Any]:
        """The settings a config file may hold (what the manifest records)."""
        return {name: getattr(self, name) for name in NAMES}


DEFAULTS = Settings()
NAMES = tuple(f.name for f in fields(Settings) if not f.metadata.get("once"))



def read_config_file(path: str | Path) -> dict[str, Any]:
    """The settings of a TOML file (its [run] table, or the whole file); UsageError for a
    file that cannot be read or a name that is not a setting."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UsageError(f"config file {path}: not found") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"config file {path}: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"config file {path}: not UTF-8 text (TOML is)") from None
    table = data.get("run", data)
    if not isinstance(table, dict):
        raise UsageError(f"config file {path}: run = {table!r}: [run] is a table of "
                         f"settings")
    if "run" in data and len(data) > 1:  # (read, they would be ignored without a word)
        raise UsageError(f"config file {path}: setting(s) outside its [run] table: "
                         f"{', '.join(sorted(set(data) - {'run'}))}")
    unknown = sorted(set(table) - set(NAMES))
    if unknown:
        raise UsageError(f"config file {path}: unknown setting(s): {', '.join(unknown)}")
    for name, value in table.items():
        kind = type(getattr(DEFAULTS, name))
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is list:
            ok = isinstance(value, list | str)
        if kind is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            raise UsageError(f"config file {path}: {name} = {value!r} is not "
                             f"{_KIND_WORDS[kind]}")
    for name, value in table.items():  # each value's own check, said of the file (click
        if name in _PAIRED:  # would blame the flag, or its environment variable)
            continue
        try:
            Settings(**{name: value})
        except UsageError as exc:
            raise UsageError(f"config file {path}: {exc.message}") from None
    return table


# Settings whose checks are of a pair (--trace needs --rate, ...): the other one may come
# from the command line
_PAIRED = {"inputs", "rate", "trace", "first_solution", "scheduler", "executor"}
