"""Tests of the compiled solver kernel (pipeline.sudoku.engine).

Solutions are judged by a small checker written here (and by pipeline.sudoku.check when it is
available), never by the engine itself.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import RAW, REPO, SOLUTION, load_set
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import compiled
from pipeline.sudoku.engine import solve_batch, warm_up

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------



def grid_of(text: str) -> np.ndarray:
    return (np.frombuffer(text.replace(".", "0").encode(), np.uint8) - 48).reshape(1, 81)


def valid_solution(puzzle: np.ndarray, sol: np.ndarray) -> bool:
    """Independent checker: every unit a permutation of 1..9 and the givens kept."""
    g = np.asarray(sol, dtype=np.int64).reshape(9, 9)
    want = list(range(1, 10))
    for i in range(9):
        if sorted(g[i]) != want or sorted(g[:, i]) != want:
            return False
        r, c = 3 * (i // 3), 3 * (i % 3)
        if sorted(g[r : r + 3, c : c + 3].ravel()) != want:
            return False
    p = np.asarray(puzzle).ravel()
    return bool(np.all((p == 0) | (p == np.asarray(sol).ravel())))


def all_valid(puzzles: np.ndarray, sols: np.ndarray) -> bool:
    ok = all(valid_solution(p, s) for p, s in zip(puzzles, sols, strict=True))
    try:
        from pipeline.sudoku.check import is_solution
    except ImportError:
        return ok
    return ok and bool(np.all(is_solution(puzzles, sols)))


# A well-known hard unique puzzle (Norvig's "hardest") and a few easy grids
HARD = "4.....8.5.3..........7......2.....6.....8.4......1.......6.3.7.5..2.....1.4......"
SOLVED = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    warm_up()


# --------------------------------------------------------------------------------------
# outcomes
# --------------------------------------------------------------------------------------


def test_empty_batch():
    sols, n, g, cyc = solve_batch(np.zeros((0, 81), np.uint8))
    assert sols.shape == (0, 81) and sols.dtype == np.uint8
    assert n.shape == (0,) and n.dtype == np.int8
    assert g.shape == (0,) and g.dtype == np.int64
    assert cyc is None
    sols, n, g, cyc = solve_batch(np.zeros((0, 81), np.uint8), timings=True)
    assert cyc is not None and cyc.shape == (0,) and cyc.dtype == np.int64


def test_unique_hard_puzzle():
    p = grid_of(HARD)
    sols, n, g, _ = solve_batch(p, 2)
    assert n[0] == 1
    assert valid_solution(p[0], sols[0])


def test_full_grid_is_unique_without_guessing():
    p = grid_of(SOLVED)
    sols, n, g, _ = solve_batch(p, 2)
    assert n[0] == 1 and g[0] == 0
    assert np.array_equal(sols[0], p[0])


def test_empty_grid():
    p = np.zeros((1, 81), np.uint8)
    sols, n, g, _ = solve_batch(p, 2)
    assert n[0] == 2
    assert valid_solution(p[0], sols[0])
    sols, n, g, _ = solve_batch(p, 1)
    assert n[0] == 1
    assert valid_solution(p[0], sols[0])


def test_larger_limits_count_distinct_solutions():
    p = np.zeros((1, 81), np.uint8)
    sols, n, g, _ = solve_batch(p, 50)
    assert n[0] == 50
    # a puzzle with exactly 2 solutions (a deadly pattern left open) counts 2 even with limit 10
    q = grid_of(SOLVED)[0].copy()
    # cells (0,0),(0,1),(1,0),(1,1) hold a/b/b/a? find a rectangle of swappable pairs
    found = False
    g9 = q.reshape(9, 9)
    for r1 in range(9):
        for r2 in range(r1 + 1, 9):
            if r1 // 3 != r2 // 3:
                continue
            for c1 in range(9):
                for c2 in range(c1 + 1, 9):
                    if c1 // 3 == c2 // 3:
                        continue
                    a, b = g9[r1, c1], g9[r1, c2]
                    if g9[r2, c1] == b and g9[r2, c2] == a:
                        h = g9.copy()
                        h[r1, c1] = h[r1, c2] = h[r2, c1] = h[r2, c2] = 0
                        found = True
                        break
                if found:
                    break
            if found:
                break
        if found:
            break
    assert found
    sols, n, g, _ = solve_batch(h.reshape(1, 81), 10)
    assert n[0] == 2
    assert valid_solution(h.reshape(81), sols[0])


def test_limit_one_stops_at_first_solution():
    serg = load_set("tdoku_benchmark_sets/puzzles7_serg_benchmark", 200)
    sols, n, g, _ = solve_batch(serg, 1)
    assert np.all(n == 1)
    assert all_valid(serg, sols)


def test_serg_set_has_multiple_solutions():
    serg = load_set("tdoku_benchmark_sets/puzzles7_serg_benchmark", 300)
    sols, n, g, _ = solve_batch(serg, 2)
    assert np.all(n == 2)
    assert all_valid(serg, sols)


def test_sixteen_clue_grids_have_multiple_solutions():
    # no 16-clue puzzle is unique, so dropping any given of a 17-clue puzzle
    # leaves at least two solutions
    p17 = load_set("royle_17clue/sudoku17.txt", 100)
    rng = np.random.default_rng(16)
    p16 = p17.copy()
    for row in p16:
        nz = np.flatnonzero(row)
        assert len(nz) == 17
        row[rng.choice(nz)] = 0
    sols, n, g, _ = solve_batch(p16, 2)
    assert np.all(n == 2)
    assert all_valid(p16, sols)
    assert np.all(g > 0)


def test_repeated_digit_gives_zero_solutions():
    bad = np.zeros((4, 81), np.uint8)
    bad[0, 0] = bad[0, 5] = 3  # same row
    bad[1, 0] = bad[1, 72] = 7  # same column, different bands
    bad[2, 0] = bad[2, 20] = 9  # same box
    bad[3] = grid_of(SOLVED)[0]
    bad[3, 40], bad[3, 41] = bad[3, 41], bad[3, 40]  # a full grid with a clash
    sols, n, g, _ = solve_batch(bad, 2)
    assert np.all(n == 0)
    assert not sols.any()


def test_consistent_but_unsolvable_givens():
    # 1..8 in row 0, and a 9 in column 8 below: cell (0, 8) has no digit left
    p = np.zeros((2, 81), np.uint8)
    p[0, :8] = np.arange(1, 9)
    p[0, 9 + 8] = 9
    # a unique puzzle with one blank filled by a wrong digit that clashes with no given:
    # any solution would also solve the original, whose only solution differs there
    puzzle = grid_of(HARD)[0]
    sol, n, _, _ = solve_batch(puzzle[None, :], 2)
    assert n[0] == 1
    q = puzzle.copy()
    r = None
    for cell in np.flatnonzero(puzzle == 0):
        rr, cc = divmod(int(cell), 9)
        box = [9 * (3 * (rr // 3) + i) + 3 * (cc // 3) + j for i in range(3) for j in range(3)]
        peers = set(range(9 * rr, 9 * rr + 9)) | set(range(cc, 81, 9)) | set(box)
        used = {int(puzzle[x]) for x in peers}
        cands = [d for d in range(1, 10) if d not in used and d != sol[0, cell]]
        if cands:
            q[cell] = cands[0]
            r = cell
            break
    assert r is not None
    p[1] = q
    sols, n, g, _ = solve_batch(p, 2)
    assert list(n) == [0, 0]
    assert not sols.any()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=81, max_size=81))
def test_any_byte_values_never_crash(values):
    p = np.array([values], np.uint8)
    sols, n, g, _ = solve_batch(p, 2)
    assert 0 <= n[0] <= 2
    if n[0] > 0:
        # values > 9 are treated as blanks
        q = np.where(p > 9, 0, p)
        assert valid_solution(q[0], sols[0])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(28, 60),
    st.booleans(),
)
def test_random_givens_agree_with_reference(seed, k, perturb):
    ref = pytest.importorskip("pipeline.sudoku.reference")
    rng = np.random.default_rng(seed)
    full = grid_of(SOLVED)[0].copy()
    # relabel digits so the grids vary
    full = (rng.permutation(9) + 1)[full - 1].astype(np.uint8)
    p = np.zeros(81, np.uint8)
    keep = rng.choice(81, size=k, replace=False)
    p[keep] = full[keep]
    if perturb:
        p[rng.integers(81)] = rng.integers(1, 10)  # may clash, may be unsolvable
    expect = ref.count_solutions([int(v) for v in p], 2)
    sols, n, g, _ = solve_batch(p[None, :], 2)
    assert n[0] == expect
    if expect:
        assert valid_solution(p, sols[0])
    else:
        assert not sols.any()


def test_values_above_nine_do_not_crash():
    p = np.full((3, 81), 200, np.uint8)
    p[1] = grid_of(HARD)[0]
    p[1, p[1] == 0] = 10
    p[2] = 255
    sols, n, g, _ = solve_batch(p, 2)
    assert n[0] == 2 and n[2] == 2
    assert n[1] == 1


# --------------------------------------------------------------------------------------
# data sets
# --------------------------------------------------------------------------------------

UNIQUE_SETS = [
    ("kaggle_bryanpark_1m/sudoku_small.csv", 1, 400),
    ("royle_17clue/sudoku17.txt", 100, 300),
    ("tdoku_benchmark_sets/puzzles2_17_clue", 150, 300),
    ("tdoku_benchmark_sets/puzzles3_magictour_top1465", 4, 300),
    ("tdoku_benchmark_sets/puzzles6_forum_hardest_1106", 1, 200),
    ("tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+", 150, 200),
    ("norvig/top95.txt", 1, 95),
    ("norvig/hardest.txt", 1, 11),
    ("sudoku_exchange_bank/diabolical.txt", 100, 300),
    ("kaggle_radcliffe_3m/sudoku_curated_5000.csv", 10, 300),
]


@pytest.mark.parametrize("rel,every,n", UNIQUE_SETS, ids=[s[0].split("/")[-1] for s in UNIQUE_SETS])
def test_unique_sets(rel, every, n):
    puzzles = load_set(rel, n, every=every)
    assert len(puzzles) > 0
    for lim in (2, 1):
        sols, ns, g, _ = solve_batch(puzzles, lim)
        assert np.all(ns == 1), f"{rel}: expected 1 solution, got {np.bincount(ns)}"
        assert all_valid(puzzles, sols)


def test_kaggle_solutions_match_file():
    path = RAW / "kaggle_bryanpark_1m/sudoku_small.csv"
    if not path.exists():
        pytest.skip(f"{path} absent")
    quiz, want = [], []
    with open(path) as f:
        for i, line in enumerate(f):
            if i >= 500:
                break
            a, b = line.strip().split(",")
            quiz.append(a)
            want.append(b)
    q = np.frombuffer("".join(quiz).encode(), np.uint8).reshape(-1, 81) - 48
    w = np.frombuffer("".join(want).encode(), np.uint8).reshape(-1, 81) - 48
    sols, n, g, _ = solve_batch(q, 2)
    assert np.all(n == 1)
    assert np.array_equal(sols, w)


def test_agrees_with_reference_on_easy_kaggle():
    ref = pytest.importorskip("pipeline.sudoku.reference")
    puzzles = load_set("kaggle_bryanpark_1m/sudoku_small.csv", 300)
    sols, n, g, _ = solve_batch(puzzles, 2)
    for p, s, k in zip(puzzles, sols, n, strict=True):
        r = ref.solve_grid([int(v) for v in p])
        assert r is not None
        assert k == 1
        assert list(s) == r


# --------------------------------------------------------------------------------------
# determinism, timings, API details
# --------------------------------------------------------------------------------------


def test_guesses_deterministic_and_batch_independent():
    puzzles = load_set("tdoku_benchmark_sets/puzzles6_forum_hardest_1106", 60)
    a = solve_batch(puzzles, 2)
    b = solve_batch(puzzles.copy(), 2)
    assert np.array_equal(a[2], b[2]) and np.array_equal(a[0], b[0])
    assert np.all(a[2] > 0)
    # the same puzzle alone gives the same result as inside the batch
    for i in (0, 17, 59):
        c = solve_batch(puzzles[i : i + 1], 2)
        assert c[2][0] == a[2][i] and np.array_equal(c[0][0], a[0][i])
    # first-solution mode never needs more guesses than proving uniqueness
    one = solve_batch(puzzles, 1)
    assert np.all(one[2] <= a[2])
    assert np.array_equal(one[0], a[0])


def test_timings():
    puzzles = load_set("tdoku_benchmark_sets/puzzles3_magictour_top1465", 200)
    s1, n1, g1, c1 = solve_batch(puzzles, 2, timings=True)
    s0, n0, g0, c0 = solve_batch(puzzles, 2)
    assert c0 is None
    assert c1.shape == (200,) and c1.dtype == np.int64
    assert np.array_equal(s0, s1) and np.array_equal(n0, n1) and np.array_equal(g0, g1)
    assert np.all(c1 >= 0)
    if c1.any():  # the platform has a cycle counter: much harder puzzles take longer
        easy, hard = c1[g1 <= 2], c1[g1 >= 30]
        if len(easy) >= 5 and len(hard) >= 5:
            assert np.median(hard) > np.median(easy)


def test_input_not_modified_and_noncontiguous_accepted():
    puzzles = load_set("tdoku_benchmark_sets/puzzles3_magictour_top1465", 20)
    before = puzzles.copy()
    b = solve_batch(puzzles, 2)
    assert np.array_equal(puzzles, before)
    a = solve_batch(np.asfortranarray(puzzles), 2)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[2], b[2])
    c = solve_batch(puzzles.astype(np.int64), 2)
    assert np.array_equal(c[0], b[0])


def test_cache_is_used_in_a_new_process():
    """Where numba compiles the kernels (no ahead-of-time module), a new process loads
    them from numba's cache."""
    code = (
        "from pipeline.sudoku import engine\n"
        "engine.warm_up()\n"
        "s = engine._solve_all.stats\n"
        "print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))\n"
    )
    env = {**os.environ, compiled.MODE_ENV: "jit"}
    run = dict(cwd=REPO, capture_output=True, text=True, check=True, env=env)
    subprocess.run([sys.executable, "-c", code], **run)  # makes sure the cache is written
    out = subprocess.run([sys.executable, "-c", code], **run)
    hits, misses = (int(v) for v in out.stdout.split())
    assert hits >= 1 and misses == 0, out.stdout


# --------------------------------------------------------------------------------------
# symmetry properties
# --------------------------------------------------------------------------------------

_POOL_TEXT = [
    HARD,
    "..53.....8......2..7..1.5..4....53...1..7...6..32...8..6.5....9..4....3......97..",
    "12.3....435....1....4........54..2..6...7.........8.9...31..5.......9.7.....6...8",
    "1....7.9..3..2...8..96..5....53..9...1..8...26....4...3......1..4......7..7...3..",
]


def _transform(grid: np.ndarray, digits, bands, rows, stacks, cols, transpose) -> np.ndarray:
    g = grid.reshape(9, 9)
    out = np.where(g > 0, np.asarray(digits, np.uint8)[np.maximum(g, 1) - 1], 0).astype(np.uint8)
    row_order = [3 * bands[b] + rows[b][r] for b in range(3) for r in range(3)]
    col_order = [3 * stacks[s] + cols[s][c] for s in range(3) for c in range(3)]
    out = out[row_order][:, col_order]
    if transpose:
        out = out.T
    return np.ascontiguousarray(out).reshape(81)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, len(_POOL_TEXT) - 1),
    st.permutations(range(1, 10)),
    st.permutations(range(3)),
    st.lists(st.permutations(range(3)), min_size=3, max_size=3),
    st.permutations(range(3)),
    st.lists(st.permutations(range(3)), min_size=3, max_size=3),
    st.booleans(),
)
def test_symmetry(idx, digits, bands, rows, stacks, cols, transpose):
    p = grid_of(_POOL_TEXT[idx])[0]
    sol, n, _, _ = solve_batch(p[None, :], 2)
    assert n[0] == 1
    tp = _transform(p, digits, bands, rows, stacks, cols, transpose)
    ts = _transform(sol[0], digits, bands, rows, stacks, cols, transpose)
    sol2, n2, _, _ = solve_batch(tp[None, :], 2)
    assert n2[0] == 1
    assert np.array_equal(sol2[0], ts)
    assert valid_solution(tp, sol2[0])


# --------------------------------------------------------------------------------------
# search details: the no-guess shortcut, clashes among givens, determinism
# --------------------------------------------------------------------------------------


def _deadly_rectangle(full: np.ndarray):
    """Cells (r1,c1),(r1,c2),(r2,c1),(r2,c2) in two boxes of one band holding a/b/b/a."""
    g9 = full.reshape(9, 9)
    for r1 in range(9):
        for r2 in range(r1 + 1, 3 * (r1 // 3) + 3):
            for c1 in range(9):
                for c2 in range(c1 + 1, 9):
                    if c1 // 3 != c2 // 3 and g9[r1, c1] == g9[r2, c2] and g9[r1, c2] == g9[r2, c1]:
                        return [9 * r1 + c1, 9 * r1 + c2, 9 * r2 + c1, 9 * r2 + c2]
    return None


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 30))
def test_two_solutions_never_reported_unique(seed, extra):
    # a full grid less an open deadly rectangle (and maybe more cells) has two or more
    # solutions however little search it takes; the engine must never say 1
    rng = np.random.default_rng(seed)
    full = (rng.permutation(9) + 1)[grid_of(SOLVED)[0] - 1].astype(np.uint8)
    rect = _deadly_rectangle(full)
    assert rect is not None
    p = full.copy()
    p[rect] = 0
    p[rng.choice(81, size=extra, replace=False)] = 0
    for lim in (2, 3):
        sols, n, g, _ = solve_batch(p[None, :], lim)
        assert n[0] >= 2
        assert valid_solution(p, sols[0])
    if extra == 0:
        # the rectangle alone: exactly two solutions, found by one branch
        sols, n, g, _ = solve_batch(p[None, :], 10)
        assert n[0] == 2 and g[0] >= 1


def test_solved_without_guessing_means_unique():
    # easy puzzles less a few givens: some stay unique, some do not; the engine's count
    # agrees with the reference, in particular whenever it needed no branch
    ref = pytest.importorskip("pipeline.sudoku.reference")
    puzzles = load_set("kaggle_bryanpark_1m/sudoku_small.csv", 150)
    rng = np.random.default_rng(7)
    for row in puzzles:
        row[rng.choice(np.flatnonzero(row), size=rng.integers(0, 7), replace=False)] = 0
    sols, n, g, _ = solve_batch(puzzles, 2)
    assert (g == 0).sum() >= 20 and (n == 2).sum() >= 20
    for p, k in zip(puzzles, n, strict=True):
        assert k == ref.count_solutions([int(v) for v in p], 2)
    assert all_valid(puzzles, sols)


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(st.integers(0, 80), min_size=2, max_size=12, unique=True),
    relabel=st.permutations(range(1, 10)),
    clash=st.booleans(),
)
def test_sparse_givens_clash_or_not(cells, relabel, clash):
    # A few givens taken from a solution grid (relabelled): solvable, and never uniquely
    # (at most 12 givens). With one more cell of a given's row set to the same digit: no
    # solution. (A few givens at random may clash without sharing a unit: seven givens
    # can leave three cells of a box two digits, and the engine rightly finds none.)
    grid = np.array([relabel[int(c) - 1] for c in SOLUTION], np.uint8)
    p = np.zeros(81, np.uint8)
    p[cells] = grid[cells]
    if clash:
        a = cells[0]
        b = a // 9 * 9 + (a % 9 + 1) % 9  # the next cell of its row, wrapping around
        p[b] = p[a]
    sols, n, g, _ = solve_batch(p[None, :], 2)
    if clash:
        assert n[0] == 0 and not sols.any()
    else:
        assert n[0] == 2
        assert valid_solution(p, sols[0])


def test_no_two_givens_clash_and_still_no_solution():
    # Found by hypothesis: column 5 holds 2, 7 and 5 above the bottom-middle box, whose
    # givens 3, 4, 6 and 1 leave its column-5 cells only 8 and 9: three cells, two digits.
    p = np.zeros(81, np.uint8)
    for cell, digit in [(5, 2), (23, 7), (32, 5), (57, 3), (58, 4), (75, 6), (76, 1)]:
        p[cell] = digit
    sols, n, _, _ = solve_batch(p[None, :], 2)
    assert n[0] == 0 and not sols.any()


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_results_do_not_depend_on_the_batch(seed):
    # per-puzzle results (solution, count, guesses) are the same alone, in any order and
    # next to any other puzzles, valid or not
    pool = np.concatenate(
        [
            load_set("tdoku_benchmark_sets/puzzles6_forum_hardest_1106", 20),
            load_set("tdoku_benchmark_sets/puzzles3_magictour_top1465", 20),
            load_set("kaggle_bryanpark_1m/sudoku_small.csv", 10),
            load_set("tdoku_benchmark_sets/puzzles7_serg_benchmark", 10),
        ]
    )
    bad = grid_of(SOLVED).copy()
    bad[0, :2] = bad[0, 1::-1]  # two swapped givens: clash
    pool = np.concatenate([pool, bad, np.zeros((1, 81), np.uint8)])
    ref = solve_batch(pool, 2)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pool))[: rng.integers(1, len(pool) + 1)]
    got = solve_batch(pool[order], 2)
    assert np.array_equal(got[0], ref[0][order])
    assert np.array_equal(got[1], ref[1][order])
    assert np.array_equal(got[2], ref[2][order])
    i = int(order[0])
    alone = solve_batch(pool[i : i + 1], 2)
    assert alone[2][0] == ref[2][i] and alone[1][0] == ref[1][i]
