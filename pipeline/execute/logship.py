"""Log records across processes: shipped as plain data, filed by the receiving process.

A worker of the local pool sends its records through its pipe, the Dask client process
through its socket (`LogSender`), and Dask workers through a per-run event topic
(dask_cluster.py); whichever way, the run's process hands each to its logger of the same
name (`handle_record`), so every record lands in DIR/logs/run.jsonl with the pid of the
process that made it.
"""

from __future__ import annotations

import logging


class LogSender(logging.Handler):
    """Send a process's log records to the run as ("log", attributes) messages: a worker's
    through its pipe, the Dask client process's through its socket."""

    def __init__(self, send):
        super().__init__(logging.NOTSET)
        self.send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.send(("log", record_attributes(record)))
        except Exception:
            self.handleError(record)


def record_attributes(record: logging.LogRecord) -> dict:
    """A LogRecord as plain data (message formatted, traceback as text)."""
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    attrs = dict(record.__dict__)
    attrs["msg"] = record.getMessage()
    attrs["args"] = None
    attrs["exc_info"] = None
    attrs.pop("message", None)
    return attrs


def handle_record(attrs: dict) -> None:
    """Hand a record from another process to this process's logger of its name."""
    record = logging.makeLogRecord(attrs)
    logger = logging.getLogger(record.name)
    if logger.isEnabledFor(record.levelno):
        logger.handle(record)

