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

import errno
import fcntl
import json
import logging
import os
from dataclasses import dataclass

from pipeline.errors import DefinitionMismatch, InputError, OutputBusy, RunFailed, UsageError
from pipeline.io.storage import Location, why

log = logging.getLogger("pipeline.folder")

RESULTS = "results"
STATS = "stats.parquet"
MANIFEST = "manifest.json"
SUCCESS = "_SUCCESS"
LOCK = ".lock"
LOGS = "logs"
LOG_FILE = "run.jsonl"
SPILL = ".spill"
REPORT = "report.html"
OURS = {RESULTS, STATS, MANIFEST, SUCCESS, LOCK, LOGS, SPILL, REPORT}
PART_META = b"pipeline.range"  # a part's key in the Parquet footer: its range, as JSON


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
    run_like = MANIFEST in names or RESULTS in names
    if finished and SUCCESS not in names:
        why = "not a finished run" if run_like else "not a run folder"
        raise InputError(f"{loc.shown}: {why} (no {SUCCESS}); finish the run first")
    if not run_like:
        raise InputError(f"{loc.shown}: not a run folder (no {MANIFEST} or {RESULTS}/ in it)")
    return names


@dataclass
class Previous:
    """What an earlier run left in the folder."""

    manifest: dict | None
    finished: bool
    foreign: list[str]  # names that are not ours
    parts: list[str]


class RunFolder:
    """An output folder on local disk or in an object store."""

    def __init__(self, location: Location):
        self.loc = location
        self.results = location.child(RESULTS)
        self._lock_fd: int | None = None
        self.read_only = False

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
                os.makedirs(self.loc.path, exist_ok=True)
            except OSError as exc:
                raise RunFailed(f"cannot create output folder {self.shown}: {why(exc)}") from None
        else:
            self.loc.makedirs()

    def lock(self, holder: str) -> None:
        """Take the folder's lock, or OutputBusy naming the holder. Object stores have no
        lock (say so in the README); a read-only folder is locked for reading."""
        if not self.loc.local:
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

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # What is there ---------------------------------------------------------------------

    def previous(self) -> Previous:
        names = self.loc.listdir()
        manifest = None
        if MANIFEST in names:
            try:
                manifest = json.loads(self.loc.child(MANIFEST).read_bytes())
            except (OSError, ValueError):
                manifest = None
        foreign = [n for n in names if n not in OURS and not n.endswith(".tmp")]
        parts = [n for n in self.results.listdir() if is_part(n)]
        return Previous(manifest, SUCCESS in names, foreign, parts)

    def state(self, definition: dict | None, overwrite: bool, resumable: bool) -> str:
        """'fresh', 'resume' or 'done'; clears the folder first under --overwrite.

        A run that cannot be resumed (from standard input) needs a fresh folder.
        """
        prev = self.previous()
        before = (prev.manifest or {}).get("definition")
        if before is None and not prev.foreign and not prev.parts and not prev.finished:
            return "fresh"  # nothing of a run here (or a run killed before its manifest)
        same = before == definition and resumable
        if same and not overwrite:
            return "done" if prev.finished else "resume"
        if not overwrite:
            if before is None:
                shown = ", ".join(sorted(prev.foreign)[:3]) or "results"
                why_not = f"holds other files ({shown})"
            elif not resumable:
                why_not = "holds a run, and a run from standard input cannot be resumed"
            else:
                why_not = "holds a different run (other inputs, columns or limit)"
            raise DefinitionMismatch(
                f"output folder {self.shown} {why_not}; use --overwrite to replace it")
        self.clear()
        return "fresh"

    def clear(self) -> None:
        """Remove everything of ours but the lock (for --overwrite)."""
        for name in (SUCCESS, MANIFEST, STATS, REPORT):
            self.loc.child(name).remove()
        for name in (RESULTS, LOGS, SPILL):
            self.loc.child(name).remove_tree()

    def remove_temporary(self) -> None:
        """Delete the temporary files a killed run left behind."""
        for folder in (self.loc, self.results):
            for name in folder.listdir():
                if name.endswith(".tmp"):
                    folder.child(name).remove()

    def done_parts(self, expected: dict[int, tuple[int, str]]) -> set[int]:
        """Parts that are whole and belong to this plan ({part: (rows, digest)}); any other
        file under results/ is removed, with a log line for a part that was not whole."""
        names = [name for name in self.results.listdir() if is_part(name)]
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
