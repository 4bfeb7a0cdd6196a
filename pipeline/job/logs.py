"""Logging for a run: one place for the records of the parent and of every worker.

Records go to DIR/logs/run.jsonl (one JSON object a line) and warnings to stderr. Workers
send theirs to the parent: the local pool's through each worker's own pipe (forkserver
workers cannot use multiprocessing-logging, which needs fork), Dask workers' through a
per-run event topic. On an object store the file is written when the run ends.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import tempfile

from pipeline.io import timestamps
from pipeline.io.storage import scrub
from pipeline.io.terminal import visible


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, run id, chunk, pid, message."""

    def __init__(self, run_id: str):
        super().__init__()
        self.run_id = run_id

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": timestamps.utc_ms(record.created),
            "level": record.levelname,
            "run_id": self.run_id,
            "part": getattr(record, "part", None),
            "pid": record.process,
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        if record.exc_info:
            entry["exc"] = scrub(self.formatException(record.exc_info))
        return json.dumps(entry)


class _Console(logging.Formatter):
    """A warning on stderr in one line: no traceback (the log file has it), the secrets of
    URLs removed, control characters shown."""

    def format(self, record: logging.LogRecord) -> str:
        first = record.getMessage().strip().splitlines()[:1] or [""]
        return visible(scrub(f"{record.levelname} {first[0]}"))


def _ours(record: logging.LogRecord) -> bool:
    """Only the pipeline's own records reach the terminal (Dask's go to the log file), and
    of those not the ones the command line says itself (`record_exit`)."""
    return ((record.name == "pipeline" or record.name.startswith("pipeline."))
            and getattr(record, "console", True))


def record_exit(reason: str) -> None:
    """Why the command ends with an exit code other than 0, as one ERROR record of the
    run's log (the command line says the same line on stderr, --quiet or not); nothing
    before the run has its log (the folder may be another run's)."""
    if writing():
        logging.getLogger("pipeline.exit").error("%s", reason, extra={"console": False})


def writing() -> bool:
    """Whether records go to a run's log file (`setup` was called, not yet torn down)."""
    return any(isinstance(h, logging.FileHandler) and getattr(h, "_pipeline", False)
               for h in logging.getLogger().handlers)


def exit_reason(exc: BaseException) -> str | None:
    """The one line the command line will say for an exception that ends a run (None for
    one that is not a failure)."""
    from pipeline.errors import Interrupted, PipelineError, Stopped

    if isinstance(exc, KeyboardInterrupt):
        return Stopped(signal.SIGINT).message
    if isinstance(exc, Interrupted):
        return Stopped(exc.signum).message
    if isinstance(exc, PipelineError):
        return exc.message
    if isinstance(exc, Exception):
        return f"internal error: {type(exc).__name__}: {exc}"
    return None


_REMOTE: list = []  # (local temporary file, its location in the store) while a run logs


class _Held(logging.Handler):
    """Records kept while the run cannot write its log yet (it does not know yet whether
    the folder is its own), handed to the log file once it can."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self._pipeline = True
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def hold(level: str = "INFO", quiet: bool = False) -> None:
    """Before the run folder is known to be ours: warnings to stderr, records kept."""
    teardown()
    root = logging.getLogger()
    root.setLevel(level)
    root.addHandler(_Held())
    if not quiet:
        root.addHandler(_console())


def _console() -> logging.Handler:
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    console.setFormatter(_Console())
    console.addFilter(_ours)
    console._pipeline = True
    return console


def setup(run_folder, run_id: str, level: str = "INFO", quiet: bool = False) -> None:
    """Send records to DIR/logs/run.jsonl and warnings to stderr, from every process."""
    from pipeline.io import runfolder

    root = logging.getLogger()
    held = [r for h in root.handlers if isinstance(h, _Held) for r in h.records]
    teardown()
    root.setLevel(level)
    if run_folder is not None:
        logs_dir = run_folder.child(runfolder.LOGS)
        target = logs_dir.child(runfolder.LOG_FILE)
        if target.local:
            logs_dir.makedirs()
            path = target.path
        else:
            fd, path = tempfile.mkstemp(prefix="pipeline-log-", suffix=".jsonl")
            os.close(fd)
            _REMOTE.append((path, target))
        try:
            file_handler = logging.FileHandler(path, encoding="utf-8")
        except OSError as exc:
            from pipeline.errors import RunFailed
            from pipeline.io.storage import why

            raise RunFailed(f"cannot write {target.shown}: {why(exc)}") from None
        file_handler.setFormatter(JsonLines(run_id))
        file_handler.setLevel(level)
        file_handler._pipeline = True
        for record in held:
            if record.levelno >= file_handler.level:
                file_handler.handle(record)
        root.addHandler(file_handler)
    if not quiet:
        root.addHandler(_console())


def teardown() -> None:
    """Flush and remove the handlers `setup` installed (and upload a store's log file)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_pipeline", False):
            root.removeHandler(handler)
            try:
                handler.close()
            except OSError:
                pass  # a log that cannot be flushed (a full disk) must not hide why we stop
    while _REMOTE:
        path, target = _REMOTE.pop()
        try:
            with open(path, "rb") as f:
                lines = f.read()
            earlier = target.read_bytes() if target.exists() else b""
            target.write_atomic(earlier + lines)
        except Exception as exc:  # the run's outcome matters more than its log
            print(f"pipeline: warning: could not write {target.shown}: {exc}", file=sys.stderr)
        finally:
            os.unlink(path)


def new_run_id() -> str:
    return f"{timestamps.compact()}-{os.getpid()}"
