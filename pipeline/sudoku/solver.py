"""Puzzles in, outcomes out: encode, reject bad givens, solve with the engine, check.

This is what a worker runs on the puzzles of one range: numpy and the compiled engine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pipeline.sudoku import check, engine, grid
from pipeline.sudoku.status import NULL, STATUS_NAMES, Status  # noqa: F401  (part of this API)


@dataclass
class Outcome:
    """The outcome of one batch, column by column (NULL marks a null)."""

    status: np.ndarray  # (N,) uint8, a Status
    solutions: np.ndarray  # (N, 81) uint8, zeros where there is none
    n_solutions: np.ndarray  # (N,) int8: 0, 1, 2 (= two or more) or NULL (not proven)
    guesses: np.ndarray  # (N,) int64, NULL where the engine did not run
    expected_match: np.ndarray  # (N,) int8: 1, 0 or NULL (no expected solution)
    reasons: dict[int, str] = field(default_factory=dict)
    cycles: np.ndarray | None = None  # (N,) int64 CPU cycles in the kernel, NULL if not run
    solve_seconds: float = 0.0  # wall time of the engine call for the whole batch
    solve_cpu_seconds: float = 0.0  # the CPU time it had (less: the OS gave the core away)
    expected_same: np.ndarray | None = None  # (N,) bool: the expected text is our solution's

    def __len__(self) -> int:
        return len(self.status)

    def has_solution(self) -> np.ndarray:
        return (self.status == Status.SOLVED) | (self.status == Status.MULTIPLE)

    @classmethod
    def concat(cls, parts: Sequence[Outcome]) -> Outcome:
        """One outcome from consecutive pieces of a batch."""
        reasons: dict[int, str] = {}
        start = 0
        for p in parts:
            reasons.update({start + i: why for i, why in p.reasons.items()})
            start += len(p)
        if len(parts) == 1:
            return parts[0]
        cycles = None
        if all(p.cycles is not None for p in parts):
            cycles = np.concatenate([p.cycles for p in parts])
        same = None
        if all(p.expected_same is not None for p in parts):
            same = np.concatenate([p.expected_same for p in parts])
        return cls(
            np.concatenate([p.status for p in parts]),
            np.concatenate([p.solutions for p in parts]),
            np.concatenate([p.n_solutions for p in parts]),
            np.concatenate([p.guesses for p in parts]),
            np.concatenate([p.expected_match for p in parts]),
            reasons, cycles, sum(p.solve_seconds for p in parts),
            sum(p.solve_cpu_seconds for p in parts), same,
        )


def solve_buffers(
    offsets: np.ndarray,
    data: np.ndarray,
    limit: int = 2,
    expected: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    timings: bool = False,
    malformed: dict[int, str] | None = None,
) -> Outcome:
    """Solve N puzzles given as Arrow-style UTF-8 offsets and bytes.

    `expected` is (offsets, bytes, present) for an expected-solution column, where
    `present` (N,) bool is False for rows whose expected solution is null or empty.
    `malformed` names rows already known not to be puzzles, with the reason.
    """
    grids, reasons = grid.encode_buffers(offsets, data)
    reasons.update(malformed or {})
    return solve_grids(grids, limit, reasons, expected, timings)


def solve_grids(
    grids: np.ndarray,
    limit: int = 2,
    malformed: dict[int, str] | None = None,
    expected: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    timings: bool = False,
) -> Outcome:
    """Solve a batch whose malformed rows are already known (a row with a value outside
    0..9 is one too: see grid.checked_batch). `limit`: the solutions to count, 1..127."""
    if not 1 <= limit <= 127:
        raise ValueError(f"limit: the solutions to count, 1 to 127, not {limit}")
    grids, bad = grid.checked_batch(np.asarray(grids))
    n = len(grids)
    reasons = {**bad, **(malformed or {})}
    status = np.full(n, Status.MALFORMED, dtype=np.uint8)
    n_solutions = np.full(n, NULL, dtype=np.int8)

    if reasons:
        readable = np.ones(n, dtype=bool)
        readable[list(reasons)] = False
        todo = np.flatnonzero(readable)
        batch = np.ascontiguousarray(grids[todo])
    else:  # the common case: every row a puzzle, solved in place, no copies
        todo = None
        batch = np.ascontiguousarray(grids)
    started, cpu = time.perf_counter(), time.process_time()
    sol, count, effort, ticks = engine.solve_batch(batch, limit=limit, timings=timings)
    solve_seconds = time.perf_counter() - started
    solve_cpu = time.process_time() - cpu
    where = slice(None) if todo is None else todo
    if todo is None:  # the engine's own arrays are the outcome's (4 MB a part not copied)
        solutions, guesses, cycles = sol, effort, ticks if timings else None
    else:
        solutions = np.zeros((n, grid.SQUARES), dtype=np.uint8)
        guesses = np.full(n, NULL, dtype=np.int64)
        cycles = np.full(n, NULL, dtype=np.int64) if timings else None
        solutions[todo] = sol
        guesses[todo] = effort
        if cycles is not None:
            cycles[todo] = ticks
    found = count > 0
    status[where] = np.where(found, np.where(count >= 2, Status.MULTIPLE, Status.SOLVED),
                             Status.UNSOLVABLE)
    # In first-solution mode a found solution proves nothing about uniqueness.
    n_solutions[where] = count if limit >= 2 else np.where(found, NULL, 0)
    rows = np.arange(n) if todo is None else todo

    # Givens that repeat a digit leave the engine no solution: only those rows are looked
    # at for a clash (by grid.py, which shares nothing with the engine).
    none = rows[~found]
    if len(none):
        clashes = grid.find_clashes(grids[none])
        for i, why in clashes.items():
            r = int(none[i])
            status[r] = Status.INVALID
            reasons[r] = why
            n_solutions[r] = NULL
            guesses[r] = NULL
            if cycles is not None:
                cycles[r] = NULL

    # Consistent givens with no solution: say why, as for every status but solved.
    for r in none[status[none] == Status.UNSOLVABLE].tolist():
        reasons[r] = grid.no_solution_reason(grids[r], int(guesses[r]))

    # Trust nothing the engine says without the independent checker's word.
    solved_rows = rows[found]
    verdict = check.is_solution(grids if todo is None else grids[solved_rows],
                                solutions if todo is None else solutions[solved_rows])
    if todo is None:
        verdict = verdict[found]
    wrong = solved_rows[~verdict]
    for i in wrong.tolist():
        status[i] = Status.ERROR
        reasons[i] = "the engine returned a grid that fails the independent check"
        solutions[i] = 0
        n_solutions[i] = NULL

    outcome = Outcome(status, solutions, n_solutions, guesses,
                      np.full(n, NULL, dtype=np.int8), reasons, cycles, solve_seconds,
                      solve_cpu)
    if expected is not None:
        outcome.expected_match = _expected_match(grids, outcome, *expected)
    return outcome


def _expected_match(
    puzzles: np.ndarray, outcome: Outcome, offsets: np.ndarray, data: np.ndarray,
    present: np.ndarray,
) -> np.ndarray:
    """1 where the input's expected solution agrees with ours, 0 where not, NULL where absent.

    Agreeing means equal to our solution; for a puzzle with several solutions, being one of
    them. Rows we could not read or solve (malformed, error) get NULL: no verdict.
    """
    has = outcome.has_solution()
    present = np.asarray(present, dtype=bool)
    # Most rows of a data set agree byte for byte: compared as text, not encoded.
    same = grid.same_text(offsets, data, outcome.solutions) & has & present
    match = np.where(same, 1, 0).astype(np.int8)
    rest = np.flatnonzero(~same & has & present)
    if len(rest):
        lo, hi = offsets[rest], offsets[rest + 1]
        sub = np.concatenate([[0], np.cumsum(hi - lo)])
        picked = np.concatenate([data[a:b] for a, b in zip(lo.tolist(), hi.tolist(),
                                                           strict=True)])
        wanted, bad = grid.encode_buffers(sub, picked)
        ok = (wanted == outcome.solutions[rest]).all(axis=1)
        multiple = outcome.status[rest] == Status.MULTIPLE
        if multiple.any():
            ok[multiple] = check.is_solution(puzzles[rest[multiple]], wanted[multiple])
        ok[list(bad)] = False
        match[rest] = ok
    match[~present] = NULL
    no_verdict = (outcome.status == Status.MALFORMED) | (outcome.status == Status.ERROR)
    match[no_verdict] = NULL
    outcome.expected_same = same
    return match


def solve_strings(puzzles: Sequence[str], limit: int = 2) -> Outcome:
    """Solve puzzle strings (81 characters, `.` or `0` blanks)."""
    grids, why = grid.checked_batch(puzzles if not isinstance(puzzles, np.ndarray)
                               else puzzles.tolist())
    return solve_grids(grids, limit, why)


_WARM_PUZZLE = "......95....64..7......7.1..38.15..25..87..6...72.....7...5...9.5.....2.3.94....."
_WARM_SOLUTION = "471382956985641273263597418638915742592874361147263895724158639856739124319426587"


def warm_up() -> None:
    """Compile or load every compiled step of a task: one puzzle through the whole path,
    its text read-only as a task's is (io.strings.buffers)."""
    engine.warm_up()
    offsets = np.array([0, 81], dtype=np.int64)
    puzzle = np.frombuffer(_WARM_PUZZLE.encode(), dtype=np.uint8)
    answer = np.frombuffer(_WARM_SOLUTION.encode(), dtype=np.uint8)
    solve_buffers(offsets, puzzle, 2, (offsets, answer, np.ones(1, dtype=bool)), True)
