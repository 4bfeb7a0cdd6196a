"""Output files of the commands that write one (dedup, split, augment, generate).

An output is a `.parquet`, `.csv` or `.csv.gz` file named by its extension, written whole or
absent: through a temporary sibling fsynced and renamed, or one PUT at a URL. `check_output`
refuses, before any work, what could only fail or do harm later: a folder given as a file,
a missing parent folder, a place inside a run's results/ (it would become part of the run).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import uuid
from collections.abc import Callable

from pipeline.errors import UsageError
from pipeline.io import runfolder
from pipeline.io.schema import write_options
from pipeline.io.scratch import reclaim
from pipeline.io.storage import Location, as_location, fsync_dir

OUTPUT_FORMATS = {"parquet": ".parquet", "csv": ".csv", "csv.gz": ".csv.gz"}


def format_of(output: str, option: str = "--output") -> str:
    name = output.lower()
    for fmt, ext in sorted(OUTPUT_FORMATS.items(), key=lambda kv: -len(kv[1])):
        if name.endswith(ext):
            return fmt
    raise UsageError(f"{option} {output}: unknown file type; use .parquet, .csv or .csv.gz")


def check_output(output: str, run_dir=None, is_folder: bool = False,
                 allowed: frozenset[str] = frozenset(), reads: tuple[str, ...] = (),
                 option: str = "--output") -> Location:
    """The output's location; UsageError for a folder given as a file, a missing parent
    folder, one of the files the command reads (`reads`), or one of a run folder's own
    files or folders (`allowed` aside), or a place inside them: it would become part of a
    run, or replace one (a part, its stats)."""
    loc = as_location(output)
    _not_read(output, loc, reads, option)
    if not loc.local:
        return loc
    reclaim(loc.path if is_folder else os.path.dirname(loc.path) or ".")
    _not_a_runs_own(output, os.path.realpath(loc.path), allowed, option)
    if run_dir is not None and (run := as_location(run_dir)).local and is_folder \
            and os.path.realpath(loc.path) == os.path.realpath(run.path):
        raise UsageError(f"{option} {output}: the run folder itself")
    if is_folder:
        if os.path.exists(loc.path) and not os.path.isdir(loc.path):
            raise UsageError(f"{option} {output}: is a file, not a folder")
        return loc
    if os.path.isdir(loc.path):
        raise UsageError(f"{option} {output}: is a folder, not a file")
    parent = os.path.dirname(loc.path)
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {output}: folder {parent} does not exist")
    return loc


def _not_read(output: str, loc: Location, reads: tuple[str, ...], option: str) -> None:
    """UsageError when the output is one of the inputs: writing it would destroy what is
    being read (and a leak check written over its own train file would then pass)."""
    for given in reads:
        if given == "-":
            continue
        read = as_location(given)
        same = (os.path.realpath(read.path) == os.path.realpath(loc.path)
                if read.local and loc.local else read.url == loc.url)
        if same:
            raise UsageError(f"{option} {output}: is also an input ({read.shown}); "
                             "write it elsewhere")


def _not_a_runs_own(output: str, real: str, allowed: frozenset[str], option: str) -> None:
    """UsageError when `real` is a run folder's own entry (results/, stats.parquet, ...)
    or lies inside one, or is a run folder itself; a run folder is one with a manifest."""
    path = real
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        if os.path.exists(os.path.join(parent, runfolder.MANIFEST)):
            name = os.path.basename(path)
            if name in runfolder.OURS and name not in allowed:
                raise UsageError(f"{option} {output}: {'inside ' if path != real else ''}"
                                 f"the run's {name} ({parent}): a tool never writes there")
        if path == real and os.path.exists(os.path.join(path, runfolder.MANIFEST)):
            raise UsageError(f"{option} {output}: a run folder")
        path = parent


# Spreadsheets read a cell that starts with one of these as a formula (OWASP, "CSV
# Injection"): in a CSV such a cell gets a leading apostrophe, which they show as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def write_stdout(data: bytes) -> None:
    """All of `data` to standard output, or BrokenPipeError when its reader went away (a
    buffered write to a closed pipe can return short without raising: the rest was lost,
    and the command said it had written it all)."""
    import sys

    out = sys.stdout.buffer
    view = memoryview(data)
    while view:
        n = out.write(view)
        if not n:
            raise BrokenPipeError("standard output: its reader went away")
        view = view[n:]
    out.flush()


def defuse(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula."""
    return f"'{text}" if text.startswith(FORMULA_START) else text


def defused(table):
    """A table's strings (values and column names) defused for a CSV."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pattern = "^[" + re.escape("".join(FORMULA_START)) + "]"
    columns = []
    for col in table.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            risky = pc.match_substring_regex(col, pattern)
            quote, empty = pa.scalar("'", col.type), pa.scalar("", col.type)  # large too
            col = pc.if_else(risky, pc.binary_join_element_wise(quote, col, empty), col)
        columns.append(col)
    return pa.table(columns, names=[defuse(n) for n in table.column_names])


def scratch_near(out: Location, is_folder: bool = False) -> str | None:
    """Where a tool's spill files go: beside its (local) output, so that they are on the
    disk the output is, and reclaimed there if the tool is killed; None at a URL."""
    if not out.local:
        return None
    if is_folder and os.path.isdir(out.path):
        return out.path
    return os.path.dirname(out.path) or "."


class TableWriter:
    """Record batches into one binary file as Parquet (zstd) or CSV (header, gzip too).

    In a CSV, cells (and column names) that a spreadsheet would run as a formula are
    defused with a leading apostrophe (`defuse`): dedup's and split's outputs come from
    carried values and file names anybody may have written."""

    def __init__(self, f, fmt: str, schema):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        self._gz = None
        self._csv = fmt != "parquet"
        if self._csv:
            schema = pa.schema([f.with_name(defuse(f.name)) for f in schema])
        if fmt == "parquet":  # the parts' own options: zstd 1, dictionaries where they pay
            self._w = pq.ParquetWriter(f, schema, **write_options(schema.names))
        else:
            if fmt == "csv.gz":
                self._gz = gzip.GzipFile(fileobj=f, mode="wb", compresslevel=6, mtime=0)
                f = self._gz
            plain = all(re.fullmatch(r"[^\",\r\n]+", n) for n in schema.names)
            options = {"quoting_style": "needed"}
            if plain:
                options["quoting_header"] = "none"  # "needed" quotes every name
            try:
                opts = pacsv.WriteOptions(**options)
            except TypeError:  # pyarrow before quoting_header
                opts = pacsv.WriteOptions(quoting_style="needed")
            self._w = pacsv.CSVWriter(f, schema, write_options=opts)
        self.rows = 0

    def write(self, table) -> None:
        if table.num_rows:
            self._w.write(defused(table) if self._csv else table)
            self.rows += table.num_rows

    def close(self) -> None:
        self._w.close()
        if self._gz is not None:
            self._gz.close()

    def abandon(self) -> None:
        """Close after a failure (the file is thrown away), saying nothing more."""
        with contextlib.suppress(Exception):
            self.close()


def write_one(loc: Location, fmt: str, schema, fill: Callable[[TableWriter], None]) -> int:
    """Write one output whole or absent through Location.write_atomic; its rows."""
    count = [0]

    def body(f) -> None:
        w = TableWriter(f, fmt, schema)
        try:
            fill(w)
        except BaseException:
            w.abandon()
            raise
        w.close()
        count[0] = w.rows

    loc.write_atomic(body)
    return count[0]


class Outputs:
    """Several outputs written at once and published together at the end: local ones as
    temporary siblings fsynced and renamed, URLs as a local temporary file put in one go."""

    def __init__(self, folder: Location, names: list[str], fmt: str, schema, tmp: str):
        self.folder, self.fmt = folder, fmt
        self.locs = [folder.child(n + OUTPUT_FORMATS[fmt]) for n in names]
        self.tmp: list[str] = []
        for loc in self.locs:
            base = os.path.dirname(loc.path) if loc.local else tmp
            self.tmp.append(os.path.join(base, f".{loc.name}.{os.getpid()}-"
                                               f"{uuid.uuid4().hex[:8]}.tmp"))
        self.files = [open(p, "wb") for p in self.tmp]  # noqa: SIM115
        self.writers = [TableWriter(f, fmt, schema) for f in self.files]
        self.closed = False

    def close(self) -> None:
        """The files whole on disk, still under their temporary names."""
        if self.closed:
            return
        self.closed = True
        for w, f in zip(self.writers, self.files, strict=True):
            w.close()
            f.flush()
            os.fsync(f.fileno())
            f.close()

    def publish(self) -> None:
        """Each file to its name, one after the other (closed first)."""
        self.close()
        for loc, path in zip(self.locs, self.tmp, strict=True):
            if loc.local:
                os.replace(path, loc.path)
            else:
                with open(path, "rb") as src:
                    loc.write_atomic(lambda f, src=src: shutil.copyfileobj(src, f, 8 << 20))
                os.unlink(path)
        if self.folder.local:
            fsync_dir(self.folder.path)

    def discard(self) -> None:
        for w in self.writers:
            w.abandon()
        for f, path in zip(self.files, self.tmp, strict=True):
            with contextlib.suppress(Exception):
                f.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
