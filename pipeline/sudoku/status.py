"""What became of a row: the statuses, a contract with users and later work (one home)."""

from __future__ import annotations

from enum import IntEnum

from pipeline.errors import UsageError


class Status(IntEnum):
    """A row's status; the names (lower case) are what the results say."""

    SOLVED = 0  # exactly one solution (or, in first-solution mode, a solution)
    MULTIPLE = 1  # two or more solutions; a valid one is returned
    UNSOLVABLE = 2  # consistent givens, no solution
    INVALID = 3  # the givens repeat a digit in a unit
    MALFORMED = 4  # not a puzzle: wrong length, stray character, missing field, ...
    ERROR = 5  # the engine itself failed on this row

    @property
    def label(self) -> str:
        return self.name.lower()


STATUS_NAMES = [s.label for s in Status]
NULL = -1  # the int sentinel for a null in the int8/int64 outcome arrays


def parse_statuses(value, what: str = "status") -> list[str]:
    """Status names from a comma-separated string or a list; UsageError for one that is
    not a status."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    out = [str(s).strip() for s in items if str(s).strip()]
    bad = [s for s in out if s not in STATUS_NAMES]
    if bad:
        raise UsageError(f"{what}: unknown status {bad[0]!r} (one of {', '.join(STATUS_NAMES)})")
    return out
