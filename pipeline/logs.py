"""Logging for a run: one place for the records of the parent and of every worker.

Worker records reach the parent's handlers through multiprocessing-logging, which wraps
each handler in one that a forked child can send records to through a queue. It needs the
`fork` start method, so we ask for it explicitly (Python 3.14 defaults to forkserver);
workers stay fork-safe because they never call polars or pyarrow (see executors.py).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sys
import time
from pathlib import Path

import multiprocessing_logging

LOG_FILE = Path("logs") / "run.jsonl"


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, run id, chunk, pid, message."""

    def __init__(self, run_id: str):
        super().__init__()
        self.run_id = run_id

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "run_id": self.run_id,
            "chunk": getattr(record, "chunk", None),
            "pid": record.process,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup(out: Path | None, run_id: str, level: str = "INFO", quiet: bool = False) -> None:
    """Send records to DIR/logs/run.jsonl and warnings to stderr, from every process."""
    root = logging.getLogger()
    teardown()
    root.setLevel(level)
    if out is not None:
        (out / LOG_FILE).parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(out / LOG_FILE, encoding="utf-8")
        file_handler.setFormatter(JsonLines(run_id))
        file_handler.setLevel(level)
        file_handler._pipeline = True
        root.addHandler(file_handler)
    if not quiet:
        console = logging.StreamHandler(sys.stderr)
        console.setLevel(logging.WARNING)
        console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        console._pipeline = True
        root.addHandler(console)
    if multiprocessing.get_start_method(allow_none=True) != "fork":
        multiprocessing.set_start_method("fork", force=True)
    # Wrap only our handlers (a test harness may have its own on the root logger).
    ours = [h for h in root.handlers if getattr(h, "_pipeline", False)]
    for i, handler in enumerate(ours):
        wrapped = multiprocessing_logging.MultiProcessingHandler(f"log-{i}", sub_handler=handler)
        root.removeHandler(handler)
        root.addHandler(wrapped)


def teardown() -> None:
    """Flush and remove the handlers `setup` installed."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        inner = getattr(handler, "sub_handler", handler)
        if getattr(inner, "_pipeline", False):
            root.removeHandler(handler)
            handler.close()


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}"
