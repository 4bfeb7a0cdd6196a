"""Timestamps as the run folder, its log and the warehouse's catalog write them (one home).

    utc_ms(t)    2026-12-02T05:56:42.123Z   stats (started_at, finished_at), log records
    utc(t)       2026-12-02T05:56:42Z       the catalog's finished_at
    compact(t)   20261202T055642Z           a run id's start
    local(t)     2026-12-02 05:56:42        for people: a lock's holder, a report's date

Milliseconds where charts and logs need them: whole seconds skewed the report's charts.
"""

from __future__ import annotations

import time


def utc_ms(t: float | None = None) -> str:
    """A UTC timestamp to the millisecond."""
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def utc(t: float | None = None) -> str:
    """A UTC timestamp to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def compact(t: float | None = None) -> str:
    """A UTC timestamp to the second, without separators."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))


def local(t: float | None = None) -> str:
    """Local time to the second, for people."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
