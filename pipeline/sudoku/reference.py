"""The seed algorithm: textbook depth-first backtracking, kept as a correctness reference.

Row, column and box tables of used digits; fill the first blank with each digit that fits,
recurse, undo. Plain Python, deliberately simple, and never on the hot path: the tests use
it to cross-check the engine on easy puzzles, the benchmark to show how far the engine is.
"""

from __future__ import annotations

from collections.abc import Sequence


def count_solutions(grid: Sequence[int], limit: int = 2) -> int:
    """Count the solutions of an 81-digit grid (0 = blank), stopping at `limit`."""
    return _search(list(grid), limit)[0]


def solve_grid(grid: Sequence[int]) -> list[int] | None:
    """The first solution of an 81-digit grid, or None when there is none."""
    found, solution = _search(list(grid), 1)
    return solution if found else None


def _search(g: list[int], limit: int) -> tuple[int, list[int] | None]:
    rows = [set() for _ in range(9)]
    cols = [set() for _ in range(9)]
    boxes = [set() for _ in range(9)]
    for s, d in enumerate(g):
        if d:
            r, c, b = s // 9, s % 9, (s // 27) * 3 + (s % 9) // 3
            if d in rows[r] or d in cols[c] or d in boxes[b]:
                return 0, None  # the givens already clash
            rows[r].add(d)
            cols[c].add(d)
            boxes[b].add(d)
    blanks = [s for s in range(81) if not g[s]]
    found = 0
    first: list[int] | None = None

    def fill(k: int) -> bool:
        """Fill blanks[k:]; True when the search may stop."""
        nonlocal found, first
        if k == len(blanks):
            found += 1
            if first is None:
                first = list(g)
            return found >= limit
        s = blanks[k]
        r, c, b = s // 9, s % 9, (s // 27) * 3 + (s % 9) // 3
        for d in range(1, 10):
            if d in rows[r] or d in cols[c] or d in boxes[b]:
                continue
            g[s] = d
            rows[r].add(d)
            cols[c].add(d)
            boxes[b].add(d)
            if fill(k + 1):
                return True
            rows[r].discard(d)
            cols[c].discard(d)
            boxes[b].discard(d)
            g[s] = 0
        return False

    fill(0)
    return found, first
