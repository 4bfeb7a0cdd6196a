"""pipeline.sudoku.replay, the independent replayer, on traces made here from the solution:
every one replays, and every broken copy of one is rejected."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from conftest import PUZZLE, SOLUTION
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import replay

REFERENCE = Path(__file__).parent / "rate" / "data" / "reference.csv"
BASE = np.array([[(3 * (r % 3) + r // 3 + c) % 9 + 1 for c in range(9)] for r in range(9)])


def _unit_peers(square: int) -> set[int]:
    """Squares seen from a square, by units (a model kept apart from the replayer's)."""
    r, c = divmod(square, 9)
    b = (r // 3, c // 3)
    return {
        s for s in range(81)
        if s != square and (s // 9 == r or s % 9 == c or (s // 27, s % 9 // 3) == b)
    }  # fmt: skip


@st.composite
def solutions(draw) -> list[int]:
    """A solved grid: a pattern under a drawn relabelling, band/row/stack/column order, flip."""
    relabel = [0, *draw(st.permutations(range(1, 10)))]
    rows = [
        b * 3 + r for b in draw(st.permutations(range(3))) for r in draw(st.permutations(range(3)))
    ]
    cols = [
        s * 3 + c for s in draw(st.permutations(range(3))) for c in draw(st.permutations(range(3)))
    ]
    g = BASE[rows][:, cols]
    if draw(st.booleans()):
        g = g.T
    return [relabel[v] for v in g.reshape(81)]


@st.composite
def traces(draw) -> tuple[list[int], list[int], list]:
    """(puzzle, solution, trace): some squares blanked, then a trace that removes random wrong
    candidates still there and places the open squares in a random order."""
    solution = draw(solutions())
    blank = draw(st.lists(st.booleans(), min_size=81, max_size=81))
    if not any(blank):
        blank[draw(st.integers(0, 80))] = True
    puzzle = [0 if b else d for b, d in zip(blank, solution, strict=True)]
    gone: set[tuple[int, int]] = set()  # (square, digit) no longer a candidate
    for s, d in enumerate(puzzle):
        if d:
            gone |= {(p, d) for p in _unit_peers(s)} | {(s, e) for e in range(1, 10) if e != d}
    steps = []
    for s in draw(st.permutations([s for s in range(81) if blank[s]])):
        left = sorted((t, e) for t in range(81) for e in range(1, 10)
                      if puzzle[t] == 0 and e != solution[t] and (t, e) not in gone)  # fmt: skip
        if left and draw(st.booleans()):
            removed = draw(st.lists(st.sampled_from(left), min_size=1, max_size=6, unique=True))
            steps.append(((), tuple(removed)))
            gone |= set(removed)
        steps.append((((s, solution[s]),), ()))
        gone |= {(p, solution[s]) for p in _unit_peers(s)}
        gone |= {(s, e) for e in range(1, 10) if e != solution[s]}
    return puzzle, solution, steps


@settings(max_examples=30, deadline=None)
@given(traces())
def test_traces_made_from_the_solution_replay(made) -> None:
    puzzle, solution, steps = made
    assert replay.why_not(puzzle, solution, steps) is None
    assert replay.replays("".join(map(str, puzzle)), np.array(solution, np.uint8), steps)


def _placement_steps(steps) -> list[int]:
    return [i for i, (placed, _) in enumerate(steps) if placed]


@settings(max_examples=30, deadline=None)
@given(traces(), st.data())
def test_a_wrong_placement_is_rejected(made, data) -> None:
    puzzle, solution, steps = made
    i = data.draw(st.sampled_from(_placement_steps(steps)))
    ((s, d),) = steps[i][0]
    wrong = data.draw(st.sampled_from([e for e in range(1, 10) if e != d]))
    broken = [*steps[:i], (((s, wrong),), ()), *steps[i + 1 :]]
    assert replay.why_not(puzzle, solution, broken) is not None


@settings(max_examples=30, deadline=None)
@given(traces(), st.data())
def test_removing_a_solution_digit_is_rejected(made, data) -> None:
    puzzle, solution, steps = made
    i = data.draw(st.integers(0, len(steps)))
    s = data.draw(st.integers(0, 80))
    broken = [*steps[:i], ((), ((s, solution[s]),)), *steps[i:]]
    why = replay.why_not(puzzle, solution, broken)
    assert why is not None and "solution's digit" in why


@settings(max_examples=30, deadline=None)
@given(traces(), st.data())
def test_a_missing_step_is_rejected(made, data) -> None:
    puzzle, solution, steps = made
    i = data.draw(st.sampled_from(_placement_steps(steps)))
    assert replay.why_not(puzzle, solution, steps[:i] + steps[i + 1 :]) is not None


@settings(max_examples=30, deadline=None)
@given(traces(), st.data())
def test_a_step_twice_or_too_late_is_rejected(made, data) -> None:
    puzzle, solution, steps = made
    i = data.draw(st.sampled_from(_placement_steps(steps)))
    assert replay.why_not(puzzle, solution, [*steps, steps[i]]) is not None
    removals = [e for _, removed in steps for e in removed]
    if removals:  # once every square is placed, no wrong candidate is left to remove
        late = ((), (data.draw(st.sampled_from(removals)),))
        assert "already gone" in replay.why_not(puzzle, solution, [*steps, late])


def test_the_rules_by_hand() -> None:
    puzzle = [0 if c == "." else int(c) for c in PUZZLE]
    solution = [int(c) for c in SOLUTION]
    open_squares = [s for s in range(81) if puzzle[s] == 0]
    full = [(((s, solution[s]),), ()) for s in open_squares]
    assert replay.why_not(puzzle, solution, full) is None
    s = open_squares[0]
    seen = {puzzle[p] for p in _unit_peers(s)}
    wrong = next(d for d in range(1, 10) if d != solution[s] and d not in seen)
    assert "not the solution's" in replay.why_not(puzzle, solution, [(((s, wrong),), ())])
    assert "squares open" in replay.why_not(puzzle, solution, full[:-1])
    assert "nothing" in replay.why_not(puzzle, solution, [((), ()), *full])
    given_square = next(t for t in range(81) if puzzle[t])
    assert "already placed" in replay.why_not(
        puzzle, solution, [(((given_square, solution[given_square]),), ()), *full]
    )
    peer_digit = next(puzzle[p] for p in _unit_peers(s) if puzzle[p])
    assert "already gone" in replay.why_not(puzzle, solution, [((), ((s, peer_digit),)), *full])
    changed = list(solution)
    changed[given_square] = changed[given_square] % 9 + 1
    assert "changes the given" in replay.why_not(puzzle, changed, full)
    with pytest.raises(ValueError):
        replay.why_not(puzzle[:80], solution, full)


def test_the_rater_s_paths_replay() -> None:
    """Every path the rater completes replays, on the SER reference puzzles (skipped until
    the rater exists)."""
    rate = pytest.importorskip("pipeline.sudoku.rate")
    from pipeline.sudoku import solver

    with open(REFERENCE, newline="") as f:
        puzzles = [PUZZLE] + [r["puzzle"] for r in csv.DictReader(f)][::4]
    solutions = solver.solve_strings(puzzles).solutions
    result = rate.rate(puzzles)
    done = np.flatnonzero(result.status == rate.STATUS_NAMES.index("ok"))
    assert len(done) >= 20
    for i in done.tolist():
        assert replay.why_not(puzzles[i], solutions[i], rate.path(puzzles[i])) is None, puzzles[i]
