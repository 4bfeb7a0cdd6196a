"""pipeline.sudoku.solver: every status on hand-made cases, first-solution mode, expected solutions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import LEET, LEET_SOLUTION, PUZZLE, SOLUTION

from pipeline.sudoku import check, grid, reference, solver
from pipeline.sudoku.solver import NULL, Status

# A 17-clue puzzle (Royle's list); without its last clue it has 16 and so several solutions.
SEVENTEEN = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
SIXTEEN = SEVENTEEN[:-6] + "0" + SEVENTEEN[-5:]
# Givens that do not repeat a digit anywhere, yet square 9 of row 1 has no candidate left.
UNSOLVABLE = "12345678." + "........9" + "." * 63


def _solve(puzzles, limit=2, **kw):
    return solver.solve_strings(puzzles, limit=limit, **kw)


def _status(outcome, i=0) -> str:
    return Status(int(outcome.status[i])).label


def test_fixtures_are_what_they_claim():
    assert grid.clues(grid.encode([SIXTEEN])[0]).tolist() == [16]
    assert grid.clues(grid.encode([SEVENTEEN])[0]).tolist() == [17]
    assert grid.find_clashes(grid.encode([UNSOLVABLE])[0]) == {}
    assert reference.count_solutions(grid.encode([UNSOLVABLE])[0][0]) == 0


def test_statuses_are_the_contract():
    assert solver.STATUS_NAMES == ["solved", "multiple", "unsolvable", "invalid", "malformed",
                                   "error"]


def test_solved_unique():
    out = _solve([PUZZLE, LEET])
    assert [_status(out, i) for i in range(2)] == ["solved", "solved"]
    assert grid.decode(out.solutions, blank="0") == [SOLUTION, LEET_SOLUTION]
    assert out.n_solutions.tolist() == [1, 1]
    assert (out.guesses >= 0).all()
    assert out.reasons == {}


def test_empty_grid_is_multiple_with_a_valid_solution():
    out = _solve(["." * 81, "0" * 81])
    assert [_status(out, i) for i in range(2)] == ["multiple", "multiple"]
    assert out.n_solutions.tolist() == [2, 2]
    assert check.is_complete_grid(out.solutions).all()
    assert out.has_solution().all()


def test_full_valid_grid_is_solved_without_guessing():
    out = _solve([SOLUTION])
    assert _status(out) == "solved"
    assert out.n_solutions.tolist() == [1]
    assert out.guesses.tolist() == [0]
    assert grid.decode(out.solutions, blank="0") == [SOLUTION]


@pytest.mark.parametrize("square, unit", [(1, "grid row 1"), (9, "grid column 1"), (10, "box 1")])
def test_full_grid_with_a_clash_is_invalid(square, unit):
    bad = list(SOLUTION)
    bad[square] = SOLUTION[0]  # the digit of square 0 again, in the unit it shares with it
    out = _solve(["".join(bad)])
    assert _status(out) == "invalid"
    assert out.reasons[0].startswith(f"digit {SOLUTION[0]} twice in ")
    # The first clash by unit order (rows, columns, boxes) is the one named.
    assert out.reasons[0] == grid.clash_reason(grid.encode(["".join(bad)])[0][0])
    if unit == "grid row 1":
        assert out.reasons[0] == f"digit {SOLUTION[0]} twice in grid row 1"
    assert out.n_solutions.tolist() == [NULL]
    assert not out.has_solution()[0]


def test_sparse_clash_reasons():
    col = "." * 81
    col = col[:4] + "3" + col[5:]
    col = col[:4 + 9 * 6] + "3" + col[4 + 9 * 6 + 1:]
    box = "." * 81
    box = box[:60] + "8" + box[61:]  # row 7, column 7 (box 9)
    box = box[:80] + "8" + box[81:]  # row 9, column 9 (box 9)
    out = _solve([col, box])
    assert out.reasons == {0: "digit 3 twice in grid column 5", 1: "digit 8 twice in box 9"}


def test_sixteen_clues_is_multiple():
    out = _solve([SIXTEEN, SEVENTEEN])
    assert [_status(out, i) for i in range(2)] == ["multiple", "solved"]
    assert out.n_solutions.tolist() == [2, 1]
    puzzles = grid.encode([SIXTEEN, SEVENTEEN])[0]
    assert check.is_solution(puzzles, out.solutions).all()


def test_unsolvable():
    out = _solve([UNSOLVABLE])
    assert _status(out) == "unsolvable"
    assert out.n_solutions.tolist() == [0]
    assert (out.solutions == 0).all()
    assert out.guesses[0] >= 0


def test_unsolvable_rows_say_why():
    nowhere = "..3456789" + "." * 27 + "1" + "." * 17 + ".1" + "." * 25  # 1 fits no square
    out = _solve([UNSOLVABLE, nowhere])
    assert [_status(out, i) for i in range(2)] == ["unsolvable"] * 2
    assert out.reasons == {0: "no digit fits the square at grid row 1, column 9",
                           1: "digit 1 has no place left in grid row 1"}


def _sees(g: np.ndarray, square: int, digit: int) -> bool:
    """Square `square` shares a grid row, column or box with a given `digit` (by hand)."""
    r, c = divmod(square, 9)
    peers = [r * 9 + k for k in range(9)] + [k * 9 + c for k in range(9)] + [
        (r // 3 * 3 + i) * 9 + c // 3 * 3 + j for i in range(3) for j in range(3)]
    return any(g[p] == digit for p in peers)


def test_every_unsolvable_row_has_a_reason_that_holds():
    """Puzzles with one given changed (no clash): every unsolvable one has a reason, and what
    it claims is checked here by hand."""
    rng = np.random.default_rng(23)
    full, _ = grid.encode([SOLUTION])
    texts = []
    for _ in range(400):
        g = np.where(rng.random(81) < 0.3, full[0], 0).astype(np.uint8)
        s = int(rng.choice(np.flatnonzero(g)))
        g[s] = rng.integers(1, 10)
        texts.append("".join(map(str, g)))
    out = _solve(texts)
    unsolvable = np.flatnonzero(out.status == Status.UNSOLVABLE)
    kinds = set()
    for i in unsolvable.tolist():
        g = grid.encode([texts[i]])[0][0]
        why = out.reasons[i]
        if m := re.fullmatch(r"no digit fits the square at grid row (\d), column (\d)", why):
            sq = (int(m[1]) - 1) * 9 + int(m[2]) - 1
            assert g[sq] == 0 and all(_sees(g, sq, d) for d in range(1, 10))
            kinds.add("square")
        elif m := re.fullmatch(r"digit (\d) has no place left in (grid row|grid column|box) "
                               r"(\d)", why):
            d, unit = int(m[1]), grid.UNITS[grid.UNIT_NAMES.index(f"{m[2]} {m[3]}")]
            assert d not in g[unit] and all(g[q] or _sees(g, q, d) for q in unit)
            kinds.add("unit")
        else:
            assert why.startswith("no solution: ") and "contradiction" in why
            kinds.add("search")
    assert len(unsolvable) > 20 and kinds == {"square", "unit", "search"}, kinds


@pytest.mark.parametrize("text, reason", [
    (PUZZLE[:80], "length 80, expected 81"),
    (PUZZLE[:40] + "x" + PUZZLE[41:], "character 'x' at position 41"),
    ("", "empty puzzle field"),
    (PUZZLE * 2, "length 162, expected 81"),
])
def test_malformed(text, reason):
    out = _solve([PUZZLE, text, PUZZLE])
    assert [_status(out, i) for i in range(3)] == ["solved", "malformed", "solved"]
    assert out.reasons == {1: reason}
    assert out.n_solutions[1] == NULL and out.guesses[1] == NULL


def test_first_solution_mode_leaves_n_solutions_null():
    out = _solve([PUZZLE, "." * 81, UNSOLVABLE, SIXTEEN], limit=1)
    assert [_status(out, i) for i in range(4)] == ["solved", "solved", "unsolvable", "solved"]
    assert out.n_solutions.tolist() == [NULL, NULL, 0, NULL]
    assert grid.decode(out.solutions[:1], blank="0") == [SOLUTION]


def test_every_status_in_one_batch():
    bad_full = SOLUTION[0] * 2 + SOLUTION[2:]
    texts = [PUZZLE, "." * 81, UNSOLVABLE, bad_full, "12"]
    out = _solve(texts)
    assert [_status(out, i) for i in range(5)] == ["solved", "multiple", "unsolvable",
                                                   "invalid", "malformed"]
    assert set(out.reasons) == {2, 3, 4}  # every status but solved and multiple says why
    assert all("\n" not in r for r in out.reasons.values())


def test_solve_buffers_with_expected_and_reader_malformed():
    puzzles = [PUZZLE, PUZZLE, "." * 81, PUZZLE, "junk"]
    expected = [SOLUTION, LEET_SOLUTION, LEET_SOLUTION, "", SOLUTION]
    present = np.array([True, True, True, False, True])

    def buffers(texts):
        raw = [t.encode() for t in texts]
        offs = np.cumsum([0] + [len(r) for r in raw]).astype(np.int64)
        return offs, np.frombuffer(b"".join(raw), np.uint8)

    out = solver.solve_buffers(*buffers(puzzles), 2, (*buffers(expected), present),
                               timings=True, malformed={0: "ragged line: 2 fields, expected 3"})
    assert [_status(out, i) for i in range(5)] == ["malformed", "solved", "multiple", "solved",
                                                   "malformed"]
    assert out.reasons[0] == "ragged line: 2 fields, expected 3"
    # malformed: no verdict; wrong solution: 0; one of several solutions: 1; absent: null.
    assert out.expected_match.tolist() == [NULL, 0, 1, NULL, NULL]
    assert out.cycles is not None and out.cycles[0] == NULL and out.cycles[1] >= 0


def test_concat_keeps_reasons_in_place():
    a = _solve([PUZZLE, "bad"])
    b = _solve(["bad2", PUZZLE])
    whole = solver.Outcome.concat([a, b])
    assert len(whole) == 4
    assert whole.reasons == {1: "length 3, expected 81", 2: "length 4, expected 81"}


@pytest.mark.parametrize("k", range(6))
def test_agrees_with_reference_backtracking(k, sample_rows):
    # A few sample puzzles with clues removed: cross-check status and uniqueness.
    rng = np.random.default_rng(k)
    puzzle, _ = sample_rows[k * 37]
    g = grid.encode([puzzle])[0][0].copy()
    given = np.flatnonzero(g)
    g[rng.choice(given, size=min(4, len(given)), replace=False)] = 0
    text = grid.decode(g[None])[0]
    out = _solve([text])
    count = reference.count_solutions(g.tolist(), limit=2)
    assert out.n_solutions.tolist() == [count]
    assert _status(out) == {1: "solved", 2: "multiple"}[count]


def test_what_the_api_is_given_that_is_no_puzzle_is_malformed_or_refused():
    """Array values outside 0..9 are malformed rows saying where (a 10 was blamed on the
    engine, a 260 wrapped to 4 and solved); one string, a float array and a limit the
    count cannot hold (127) are refused."""
    g = grid.encode([PUZZLE, PUZZLE, PUZZLE])[0].astype(np.int64)
    g[1, 0], g[2, 2] = 10, 260
    out = solver.solve_grids(g)
    assert [_status(out, i) for i in range(3)] == ["solved", "malformed", "malformed"]
    assert out.reasons == {1: "square 0 holds 10, not a digit 0..9",
                           2: "square 2 holds 260, not a digit 0..9"}
    assert _status(_solve([PUZZLE[:-1] + "٣"])) == "malformed"
    for misuse in (lambda: _solve(PUZZLE), lambda: solver.solve_grids(g.astype(float)),
                   lambda: _solve([PUZZLE], limit=128), lambda: _solve([PUZZLE], limit=0)):
        with pytest.raises((TypeError, ValueError)):
            misuse()
