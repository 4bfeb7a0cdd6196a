"""The run folder: the on-disk contract of `pipeline run`, in one place.

    DIR/
      results/part-00000.parquet ...   one per range of the plan, written by the workers
      stats.parquet                    the run in figures
      manifest.json                    definition (inputs, layouts, plan), config, parts
      logs/run.jsonl                   JSON lines from the parent and every worker
      _SUCCESS                         written last: a folder without it is not finished
      .lock                            flock'ed by the run using the folder (local folders)
      .spill/                          inputs that can be read only once, copied for ranges

A folder is fresh (nothing of ours in it), a run to resume (same definition, unfinished),
done (same definition, `_SUCCESS`), or another run (refused unless --overwrite). The parts
are the journal: a part that is whole (its footer reads, its row count and range match the
plan) is done; anything else under results/ is removed and its range done again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import DefinitionMismatch, InputError, OutputBusy, RunFailed, UsageError
from pipeline.io.ranges import Range
from pipeline.io.schema import write_options
from pipeline.io.storage import Location, as_location, why
from pipeline.sudoku.grade import SER_BAND_NAMES
from pipeline.sudoku.status import STATUS_NAMES

log = logging.getLogger("pipeline.folder")

RESULTS = "results"
TRACES = "traces"  # with --trace: a part of solving steps beside each result part
STATS = "stats.parquet"
MANIFEST = "manifest.json"
SUCCESS = "_SUCCESS"
LOCK = ".lock"
LOGS = "logs"
LOG_FILE = "run.jsonl"
SPILL = ".spill"
REPORT = "report.html"
CATALOG = "catalog.parquet"  # what makes a folder a warehouse (run --incremental), not a run
OURS = {RESULTS, TRACES, STATS, MANIFEST, SUCCESS, LOCK, LOGS, SPILL, REPORT}
PART_META = b"pipeline.range"  # a part's key in the Parquet footer: its range, as JSON

STATS_TYPES = {
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
# With --rate: SER percentiles, the rows rated, and the rows per SER band
RATED_STATS_TYPES = {"ser_rated": "int64", "ser_p50": "float64", "ser_p90": "float64",
                     "ser_p99": "float64", "ser_max": "float64",
                     **dict.fromkeys(SER_BAND_NAMES, "int64")}


def part_name(number: int) -> str:
    return f"part-{number:05d}.parquet"


def is_part(name: str) -> bool:
    return name.startswith("part-") and name.endswith(".parquet")


def existing_run(loc: Location, finished: bool = False) -> list[str]:
    """The names in a run folder that a command reads (report, show, dedup, ...); an
    InputError when it is missing, not a folder, not a run folder, or (finished=True) a run
    without its _SUCCESS."""
    if not loc.exists():
        raise InputError(f"{loc.shown}: no such folder")
    if not loc.is_dir():
        raise InputError(f"{loc.shown}: not a folder")
    names = loc.listdir()
    if MANIFEST not in names and RESULTS not in names:
        raise InputError(f"{loc.shown}: not a run folder (no {MANIFEST} or {RESULTS}/ in it)")
    if finished and SUCCESS not in names:
        raise InputError(f"{loc.shown}: not a finished run (no {SUCCESS}); finish the run "
                         "first")
    return names


@dataclass
class Previous:
    """What an earlier run left in the folder."""

    manifest: dict | None
    finished: bool
    foreign: list[str]  # names that are not ours
    parts: list[str]
    unreadable: str = ""  # why its manifest.json cannot be read, if it cannot

    @property
    def empty(self) -> bool:
        """Nothing of a run (or a run killed before its manifest): the folder is fresh."""
        return ((self.manifest or {}).get("definition") is None and not self.foreign
                and not self.parts and not self.finished)


# A definition's options (job/run.py's `options`), as the command line names them
_OPTION_NAMES = {"puzzle_column": "--puzzle-column", "solution_column": "--solution-column",
                 "limit": "--first-solution", "rows": "--limit", "canonical": "--canonical",
                 "rate": "--rate", "rate_budget": "--rate-budget", "trace": "--trace",
                 "timings": "--timings"}


def differences(before: dict, now: dict) -> str:
    """What makes two run definitions differ, in the command line's words."""
    said = []
    if [i.get("path") for i in before.get("inputs", [])] != [i.get("path") for i in
                                                             now.get("inputs", [])]:
        said.append("other inputs")
    elif before.get("inputs") != now.get("inputs") or before.get("layouts") != now.get(
            "layouts"):
        said.append("inputs of other content")
    options = sorted({*before, *now} - {"inputs", "layouts"})
    if before.get("rate") != now.get("rate"):  # (the budget goes with --rate)
        options = [k for k in options if k != "rate_budget"]
    said += [f"other {_OPTION_NAMES.get(k, k)}" for k in options if before.get(k) != now.get(k)]
    return ", ".join(said) or "another definition"


class RunFolder:
    """An output folder on local disk or in an object store."""

    def __init__(self, location: Location):
        self.loc = location
        self.results = location.child(RESULTS)
        self.traces = location.child(TRACES)
        self._lock_fd: int | None = None
        self._lock_object_loc: Location | None = None
        self.read_only = False
        self.made = False  # open() made the folder (a local one)

    @property
    def shown(self) -> str:
        return self.loc.shown

    def child(self, name: str) -> Location:
        return self.loc.child(name)

    def part(self, number: int) -> Location:
        return self.results.child(part_name(number))

    # Opening ---------------------------------------------------------------------------

    def open(self) -> None:
        """Make the folder (and check that it is one); RunFailed when it cannot be made."""
        if self.loc.local:
            if os.path.exists(self.loc.path) and not os.path.isdir(self.loc.path):
                raise UsageError(f"--output {self.shown}: is a file, not a folder")
            try:
                self.made = not os.path.exists(self.loc.path)
                os.makedirs(self.loc.path, exist_ok=True)
            except OSError as exc:
                raise RunFailed(f"cannot create output folder {self.shown}: {why(exc)}") from None
        else:
            if self.loc.http:
                raise UsageError(f"--output {self.shown}: an http(s) URL is read-only; a run "
                                 "goes to a folder or an object store (s3://, gs://, ...)")
            try:
                exists = self.loc.store_exists()
            except PermissionError as exc:
                raise UsageError(f"--output {self.shown}: access refused ({why(exc)})"
                                 ) from None
            if not exists:
                raise UsageError(f"--output {self.shown}: its bucket does not exist (a run "
                                 "makes its folder, not a bucket)")
            self.loc.makedirs()

    def lock(self, holder: str, store: bool = False) -> None:
        """Take the folder's lock, or OutputBusy naming the holder; a read-only folder is
        locked for reading. A folder in an object store has no flock: with `store` its
        lock is an object (_lock_object), else it has none (the README says so)."""
        if not self.loc.local:
            if store:
                self._lock_object(holder)
            return
        path = os.path.join(self.loc.path, LOCK)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise RunFailed(f"cannot lock {self.shown}: {why(exc)}") from None
            self.read_only = exc.errno == errno.EROFS
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return  # nothing to lock with; only a finished folder can be answered
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            who = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another run"
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputBusy(f"{self.shown}: in use by {who}") from None
            raise RunFailed(f"cannot lock {self.shown}: {why(exc)}") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
        except OSError:
            pass  # a read-only or immutable lock file still locks
        self._lock_fd = fd

    def _lock_object(self, holder: str) -> None:
        """An object store's lock: DIR/.lock, created only if absent (one conditional PUT),
        naming its holder, deleted when the holder lets go. A holder killed outright leaves
        it behind: one of this host whose process is gone is taken over (a PUT on the
        condition that the lock is still the one read, so that of two takers one wins);
        any other is refused, naming the object to delete if its run is gone."""
        loc = self.child(LOCK)
        mine = json.dumps({"holder": holder, "host": socket.gethostname(),
                           "pid": os.getpid()}).encode()
        theirs: dict = {}
        for _ in range(3):  # (a holder may let go while we look)
            try:
                loc.create(mine)
                self._lock_object_loc = loc
                return
            except FileExistsError:
                pass
            try:
                etag = loc.etag()
                theirs = json.loads(loc.read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                theirs = {}
            if not _gone(theirs):
                break
            try:
                loc.create(mine, replacing=etag)
                self._lock_object_loc = loc
                return
            except FileExistsError:
                continue  # another run took it over first
        who = theirs.get("holder") if isinstance(theirs, dict) else None
        raise OutputBusy(f"{self.shown}: in use by {who or 'another run'} (if that run is "
                         f"gone, delete {loc.shown})")

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._lock_object_loc is not None:
            loc, self._lock_object_loc = self._lock_object_loc, None
            loc.remove()

    def remove_if_made(self) -> None:
        """Remove the folder open() made, when it holds nothing but the lock and the spill:
        a run that could not start (an unusable input) leaves nothing behind."""
        if not self.made or not set(os.listdir(self.loc.path)) <= {LOCK, SPILL}:
            return
        self.child(SPILL).remove_tree()
        with contextlib.suppress(OSError):
            os.remove(os.path.join(self.loc.path, LOCK))
            os.rmdir(self.loc.path)

    # What is there ---------------------------------------------------------------------

    def previous(self) -> Previous:
        names = self.loc.listdir()
        manifest, unreadable = None, ""
        if MANIFEST in names:
            try:
                manifest = json.loads(self.loc.child(MANIFEST).read_bytes())
                if not isinstance(manifest, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as exc:
                manifest, unreadable = None, str(exc).splitlines()[0] if str(exc) else "?"
        foreign = [n for n in names if n not in OURS and not n.endswith(".tmp")]
        parts = [n for n in self.results.listdir() if is_part(n)]
        return Previous(manifest, SUCCESS in names, foreign, parts, unreadable)

    def state(self, definition: dict, overwrite: bool) -> str:
        """'fresh', 'resume' or 'done'; clears the folder first under --overwrite."""
        prev = self.previous()
        before = (prev.manifest or {}).get("definition")
        if CATALOG in prev.foreign:
            raise UsageError(f"output folder {self.shown} is a warehouse (its {CATALOG}): run "
                             "into it with --incremental, or give another folder")
        if prev.empty:
            return "fresh"
        if before == definition and not overwrite:
            return "done" if prev.finished else "resume"
        if not overwrite:
            if prev.unreadable:
                why_not = f"holds a {MANIFEST} that cannot be read ({prev.unreadable})"
            elif before is None:
                shown = ", ".join(sorted(prev.foreign)[:3]) or "results"
                why_not = f"holds other files ({shown})"
            else:
                why_not = f"holds a different run ({differences(before, definition)})"
            raise DefinitionMismatch(
                f"output folder {self.shown} {why_not}; use --overwrite to replace it")
        self.clear()
        return "fresh"

    def clear(self) -> None:
        """Remove everything of ours but the lock and the spill (for --overwrite: the
        spill holds this run's copies of its inputs, made before the folder was judged)."""
        for name in (SUCCESS, MANIFEST, STATS, REPORT):
            self.loc.child(name).remove()
        for name in (RESULTS, TRACES, LOGS):
            self.loc.child(name).remove_tree()

    def remove_temporary(self) -> None:
        """Delete the temporary files a killed run left behind."""
        for folder in (self.loc, self.results, self.traces):
            for name in folder.listdir():
                if name.endswith(".tmp"):
                    folder.child(name).remove()

    def done_parts(self, expected: dict[int, tuple[int, str]], definition: str,
                   traced: bool = False) -> set[int]:
        """Parts that are whole and belong to this plan ({part: (rows, digest)}) and to a
        run of this definition (definition_digest), with their trace part when `traced`
        (written first, so a result part without its trace lost it later); any other file
        under results/ is removed, with a log line for a part that was not whole."""
        names = [name for name in self.results.listdir() if is_part(name)]
        traces = set(self.traces.listdir()) if traced else set()
        if not names:  # a fresh run: no pyarrow needed yet
            return set()
        import pyarrow.parquet as pq

        done: set[int] = set()
        for name in names:
            loc = self.results.child(name)
            try:
                number = int(name[len("part-"):-len(".parquet")])
            except ValueError:
                number = -1
            want = expected.get(number)
            reason = None
            try:
                if self.loc.local:
                    meta = pq.read_metadata(loc.path)
                else:
                    with loc.fs.open(loc.path, "rb") as f:
                        meta = pq.read_metadata(f)
                info = json.loads((meta.metadata or {}).get(PART_META, b"{}"))
                if want is None:
                    reason = "not a range of this run's plan"
                elif meta.num_rows != want[0] or info.get("digest") != want[1]:
                    reason = f"holds {meta.num_rows} rows of another range"
                elif info.get("definition") != definition:
                    reason = "was made by another run (other options or inputs)"
                elif traced and name not in traces:
                    reason = f"has no trace in {TRACES}/"
            except Exception as exc:  # a torn or foreign file: pyarrow says it any way it can
                reason = f"cannot be read whole ({type(exc).__name__})"
            if reason is None:
                done.add(number)
            else:
                log.warning("%s/%s %s: removed, its range is done again", RESULTS, name, reason)
                loc.remove()
        return done

    # Writing ---------------------------------------------------------------------------

    def write_json(self, name: str, obj: dict) -> None:
        text = json.dumps(obj, indent=2, default=str) + "\n"
        self.loc.child(name).write_atomic(text.encode())

    def sync(self) -> None:
        """Make every part's name durable before the files that say the run is complete."""
        self.results.sync()
        self.loc.sync()

    def write_stats(self, rows: list[dict]) -> None:
        """stats.parquet, whole or absent, from its rows (STATS_TYPES, and RATED_STATS_TYPES
        in a run with --rate)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = STATS_TYPES | (RATED_STATS_TYPES if rows and "ser_rated" in rows[0] else {})
        schema = pa.schema([(name, pa.type_for_alias(t)) for name, t in types.items()])
        table = pa.Table.from_pylist(rows, schema=schema)
        self.child(STATS).write_atomic(lambda f: pq.write_table(table, f, compression="zstd"))

    def read_stats(self):
        """stats.parquet as a pyarrow Table; None when it is absent or cannot be read."""
        import pyarrow.parquet as pq

        loc = self.child(STATS)
        try:
            return pq.read_table(loc.path if loc.local else loc.fs.open(loc.path, "rb"))
        except Exception:  # absent, torn: pyarrow says it any way it can
            return None

    def read_part(self, number: int, columns: list[str]):
        """Some columns of a part, as a pyarrow Table."""
        import pyarrow.parquet as pq

        loc = self.part(number)
        return pq.read_table(loc.path if loc.local else loc.fs.open(loc.path, "rb"),
                             columns=columns)


def _gone(holder: dict) -> bool:
    """Whether a lock object's holder is a process of this host that no longer runs."""
    if not isinstance(holder, dict):
        return False
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


def definition_digest(definition: dict) -> str:
    """A short hash of a run's definition, which every part of the run carries."""
    text = json.dumps(definition, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Fence:
    """What a part's writer checks just before the part appears: that the folder is still
    this run's (its manifest names the run) and not finished. A task of an earlier run
    that comes back late (a worker that was stopped, a task Dask ran twice) then writes
    nothing into a folder another run has taken over or finished."""

    folder: Location
    run_id: str

    def check(self) -> None:
        try:
            manifest = json.loads(self.folder.child(MANIFEST).read_bytes())
        except (OSError, ValueError):
            manifest = {}
        if manifest.get("run_id") != self.run_id:
            raise RunFailed(f"{self.folder.shown} is no longer run {self.run_id}'s: its part "
                            "is not written")
        if self.folder.child(SUCCESS).exists():
            raise RunFailed(f"{self.folder.shown} is finished: a late part is not written")


def write_part(results: Location, r: Range, table, compression: str = "zstd",
               definition: str = "", fence: Fence | None = None) -> None:
    """A part, whole or absent, its range and its run's definition in its footer: RunFailed
    (exit 3) when the store refuses it, or when `fence` says the folder is no longer its
    run's; `compression` is its grid columns' codec (schema.write_options)."""
    import pyarrow.parquet as pq

    meta = json.dumps({"input": r.input, "start": r.start, "end": r.end,
                       "first_row": r.first_row, "rows": r.rows, "digest": r.digest,
                       "definition": definition})
    table = table.replace_schema_metadata({PART_META: meta.encode()})
    options = write_options(table.column_names, compression)
    loc = results.child(part_name(r.part))
    try:
        loc.write_atomic(lambda f: pq.write_table(table, f, **options), sync_folder=False,
                         before_publish=fence.check if fence is not None else None)
    except RunFailed:
        raise
    except OSError as exc:
        raise RunFailed(f"cannot write {loc.shown}: {why(exc)}") from None


# ---------------------------------------------------------------------------------------
# Reading a run: its parts in input order, their columns, batch by batch


BATCH_ROWS = 65_536  # rows per record batch read from a part
ROW_BITS = 40  # a row's key: source index << ROW_BITS | row


@dataclass
class Part:
    """A result part as its footer describes it."""

    loc: Location
    rows: int
    order: tuple[int, int]  # (input, first row): input order of the parts
    first_key: int = -1  # smallest key seen in pass 1 (io/classes.py)


@dataclass
class Run:
    """A run folder as the commands over finished runs read it (report, show, dedup, ...):
    its parts in input order, its sources, columns and manifest."""

    shown: str
    parts: list[Part]
    sources: list[str]
    columns: list[str]
    manifest: dict = field(default_factory=dict)
    loc: Location | None = None
    finished: bool = False
    _index: dict[str, int] = field(default_factory=dict)

    def stats(self):
        """stats.parquet as a pyarrow Table, or None (an unfinished run has none)."""
        return RunFolder(self.loc).read_stats() if self.loc is not None else None

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    def source_index(self, arr) -> np.ndarray:
        """(N,) int64 index of each row's source in the run's input order (new ones last)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        if not self._index:
            self._index = {s: i for i, s in enumerate(self.sources)}
        lut = []
        for name in arr.dictionary.to_pylist():  # a few distinct sources, not rows
            if name not in self._index:
                self._index[name] = len(self.sources)
                self.sources.append(name)
            lut.append(self._index[name])
        if len(self.sources) >= 1 << (63 - ROW_BITS):
            raise InputError(f"{self.shown}: too many sources")
        idx = arr.indices.to_numpy(zero_copy_only=False)
        return np.asarray(lut, np.int64)[idx] if len(lut) else np.zeros(len(arr), np.int64)


@contextlib.contextmanager
def open_parquet(loc: Location):
    import pyarrow.parquet as pq

    if loc.local:
        pf = pq.ParquetFile(loc.path)
        try:
            yield pf
        finally:
            pf.close()
    else:
        with loc.fs.open(loc.path, "rb") as f:
            yield pq.ParquetFile(f)


def part_batches(part: Part, columns: list[str]) -> Iterator:
    """A part's record batches of the given columns."""
    with open_parquet(part.loc) as pf:
        # one thread: pyarrow's pool costs more than it gives on a part's few columns
        # (2-5x the time on two cores, most of it at first use)
        yield from pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False)


def load_parts(shown: str, locs: list[Location]) -> tuple[list[Part], list[str]]:
    """Footers of the parts: rows, range (for input order), columns."""
    parts, columns = [], None
    for loc in locs:
        try:
            with open_parquet(loc) as pf:
                meta = pf.metadata
                names = pf.schema_arrow.names
                info = json.loads((meta.metadata or {}).get(PART_META, b"{}"))
                first = None
                if "input" not in info and meta.num_rows:
                    t = pf.read_row_group(0, columns=["row"])
                    first = int(t.column("row")[0].as_py())
        except (OSError, ValueError) as exc:
            raise InputError(f"{shown}: cannot read {loc.shown} ({exc})") from None
        if columns is None:
            columns = names
        order = ((int(info["input"]), int(info["first_row"])) if "input" in info
                 else (1 << 30, first or 0))
        parts.append(Part(loc, meta.num_rows, order))
    parts.sort(key=lambda p: p.order)
    return parts, columns or []


def open_run(run_dir, need_canonical: bool = True, finished: bool = True,
             empty: bool = False) -> Run:
    """A run folder (a path or a URL): its parts, sources and columns; InputError when it
    is not a usable run (unfinished, with `finished`; without parts, unless `empty`) or
    cannot be read (a store refused us)."""
    loc = as_location(run_dir)
    try:
        return _open_run(loc, need_canonical, finished, empty)
    except PermissionError as exc:
        raise InputError(f"{loc.shown}: cannot be read ({why(exc)})") from None


def _open_run(loc: Location, need_canonical: bool, finished: bool, empty: bool) -> Run:
    shown = loc.shown
    names = existing_run(loc, finished)
    manifest: dict = {}
    with contextlib.suppress(OSError, ValueError):
        manifest = json.loads(loc.child(MANIFEST).read_bytes())
    results = loc.child(RESULTS)
    locs = [results.child(n) for n in results.listdir() if is_part(n)]
    if not locs and not empty:
        raise InputError(f"{shown}: no result parts in {RESULTS}/")
    parts, columns = load_parts(shown, locs)
    inputs = (manifest.get("definition") or {}).get("inputs") or []
    sources = [str(i.get("path")) for i in inputs if isinstance(i, dict)]
    run = Run(shown, parts, sources, columns, manifest, loc, SUCCESS in names)
    if need_canonical and "canonical" not in columns:
        raise InputError(f"{shown}: the run has no canonical column (it was made without "
                         "--canonical)")
    return run


def run_of(run) -> Run:
    """A run folder (not necessarily finished) or a list of part paths/URLs."""
    if isinstance(run, (str, os.PathLike, Location)):
        return open_run(run, need_canonical=True, finished=False)
    locs = [as_location(p) for p in run]
    shown = locs[0].shown if locs else "(no parts)"
    parts, columns = load_parts(shown, locs)
    out = Run(shown, parts, [], columns)
    if parts and "canonical" not in columns:
        raise InputError(f"{shown}: no canonical column (a run without --canonical)")
    return out
