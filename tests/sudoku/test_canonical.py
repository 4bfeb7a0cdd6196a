"""Tests of the canonical form (pipeline.sudoku.canonical).

Minimality is judged by an exhaustive reference written here: it tries every one of the
3,359,232 cell permutations with the relabelling by first appearance, and shares no code
with the module. (transform, inverse and random_transforms: test_symmetry.py.)
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import LEET, PUZZLE, SOLUTION, load_set
from helpers import grid, random_grids
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from pipeline.sudoku import canonical
from pipeline.sudoku.canonical import GROUP_SIZE, canonical_transforms, minlex
from pipeline.sudoku.check import is_complete_grid
from pipeline.sudoku.symmetry import identity_transforms, inverse, random_transforms, transform

EMPTY = "0" * 81
# The smallest minlex solution grid, and the most symmetric grid (648 automorphisms);
# both checked below by the exhaustive reference, not taken on trust.
MIN_GRID = "123456789456789123789123456214365897365897214897214365531642978642978531978531642"
SYM_GRID = "123456789456789123789123456231564897564897231897231564312645978645978312978312645"


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def text(g: np.ndarray) -> str:
    return "".join(map(str, np.asarray(g).ravel().tolist()))


def relabelled(g: np.ndarray) -> np.ndarray:
    """The grid with its digits renumbered in order of first appearance."""
    out = np.zeros(81, np.uint8)
    labels: dict[int, int] = {}
    for i, d in enumerate(np.asarray(g).ravel().tolist()):
        if 1 <= d <= 9:
            out[i] = labels.setdefault(d, len(labels) + 1)
    return out


def _row_maps() -> np.ndarray:
    """The 1296 row orders that keep bands: result row -> source row."""
    out = []
    p3 = list(itertools.permutations(range(3)))
    for bands in p3:
        for inner in itertools.product(p3, repeat=3):
            out.append([3 * bands[i] + inner[i][j] for i in range(3) for j in range(3)])
    return np.array(out, np.int64)


ROW_MAPS = _row_maps()


@njit(cache=True)
def _reference(g, maps):
    """Minlex form and automorphism count by trying every cell permutation."""
    best = np.full(81, 99, np.int64)
    labels = np.zeros(10, np.int64)
    count = 0
    for t in range(2):
        for a in range(maps.shape[0]):
            for b in range(maps.shape[0]):
                labels[:] = 0
                nxt = 1
                state = 0  # 0 tied so far, -1 smaller (copying), 1 larger (given up)
                for i in range(81):
                    r = maps[a, i // 9]
                    c = maps[b, i % 9]
                    d = g[c * 9 + r] if t else g[r * 9 + c]
                    v = 0
                    if 1 <= d <= 9:
                        if labels[d] == 0:
                            labels[d] = nxt
                            nxt += 1
                        v = labels[d]
                    if state == 0:
                        if v > best[i]:
                            state = 1
                            break
                        if v < best[i]:
                            state = -1
                    if state == -1:
                        best[i] = v
                if state == -1:
                    count = 1
                elif state == 0:
                    count += 1
    return best.astype(np.uint8), count


def reference(g: np.ndarray) -> tuple[np.ndarray, int]:
    return _reference(np.ascontiguousarray(g, np.uint8).ravel(), ROW_MAPS)


def latin_squares(rng: np.random.Generator, n: int) -> np.ndarray:
    """n Latin squares that are mostly not Sudoku grids (any row, column, digit order)."""
    base = (np.add.outer(np.arange(9), np.arange(9)) % 9 + 1).astype(np.uint8)
    out = []
    for _ in range(n):
        sq = base[rng.permutation(9)][:, rng.permutation(9)]
        out.append(np.concatenate([[0], rng.permutation(9) + 1])[sq].ravel())
    return np.array(out, np.uint8)


def sample(g: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return g[np.sort(rng.choice(len(g), min(n, len(g)), replace=False))]


def lex_less_equal(a: np.ndarray, b: np.ndarray) -> bool:
    diff = np.flatnonzero(a != b)
    return len(diff) == 0 or a[diff[0]] < b[diff[0]]


# --------------------------------------------------------------------------------------
# known forms
# --------------------------------------------------------------------------------------


def test_empty_grid():
    forms, autos = minlex(grid(EMPTY))
    assert text(forms[0]) == EMPTY
    assert autos[0] == GROUP_SIZE == 3_359_232


def test_empty_grid_reference():
    form, count = reference(grid(EMPTY))
    assert text(form) == EMPTY and count == GROUP_SIZE


@pytest.mark.parametrize("g, autos", [(MIN_GRID, 3), (SYM_GRID, 648)])
def test_known_full_grids_are_their_own_form(g, autos):
    assert is_complete_grid(grid(g))[0]
    ref_form, ref_count = reference(grid(g))
    assert text(ref_form) == g and ref_count == autos
    rng = np.random.default_rng(7)
    many = np.repeat(grid(g), 20, axis=0)
    forms, counts = minlex(transform(many, random_transforms(rng, 20)))
    assert all(text(f) == g for f in forms)
    assert (counts == autos).all()


def test_typical_puzzles_have_no_symmetry():
    forms, autos = minlex(np.concatenate([grid(PUZZLE), grid(LEET)]))
    assert autos.tolist() == [1, 1]
    for g, f in zip([PUZZLE, LEET], forms, strict=True):
        ref_form, ref_count = reference(grid(g))
        assert (ref_form == f).all() and ref_count == 1


def test_puzzle_symmetric_under_transposition():
    # A puzzle equal to its own transpose (digits kept): transposition is an automorphism.
    rng = np.random.default_rng(3)
    for _ in range(5):
        g = np.zeros((9, 9), np.uint8)
        for _ in range(12):
            r, c = rng.integers(0, 9, 2)
            g[r, c] = g[c, r] = rng.integers(1, 10)
        g = g.reshape(1, 81)
        assert (transform(g, np.array([[1] + identity_transforms(1)[0, 1:].tolist()])) == g).all()
        form, autos = minlex(g)
        assert autos[0] >= 2 and autos[0] % 2 == 0  # the automorphisms form a group
        ref_form, ref_count = reference(g)
        assert (form[0] == ref_form).all() and autos[0] == ref_count


def test_symmetric_under_relabelling_too():
    # Swapping bands 1 and 2 with the digit swap 1<->2 maps this puzzle onto itself.
    g = np.zeros((9, 9), np.uint8)
    g[0, 0], g[3, 4], g[6, 4] = 5, 1, 2
    g[4, 7], g[7, 7] = 2, 1
    g = g.reshape(1, 81)
    t = identity_transforms(1)
    t[0, 1:4] = [0, 2, 1]
    t[0, 25:27] = [2, 1]
    assert (transform(g, t) == g).all()
    form, autos = minlex(g)
    ref_form, ref_count = reference(g)
    assert (form[0] == ref_form).all() and autos[0] == ref_count
    assert autos[0] > 1


def test_one_digit_everywhere():
    # Invalid on purpose: every cell permutation maps it onto itself.
    forms, autos = minlex(np.full((1, 81), 7, np.uint8))
    assert text(forms[0]) == "1" * 81 and autos[0] == GROUP_SIZE


def test_warm_up_and_transform_shapes():
    canonical.warm_up()
    with pytest.raises(ValueError):
        transform(grid(PUZZLE), identity_transforms(2))
    with pytest.raises(ValueError):
        inverse(np.zeros((1, 33), np.int8))


def test_values_above_nine_are_blanks():
    g = grid(PUZZLE)
    h = g.copy()
    h[g == 0] = 10 + (np.arange(81)[g[0] == 0] % 200)
    assert (minlex(h)[0] == minlex(g)[0]).all()
    wide = g.astype(np.int64)
    wide[g == 0] = 257  # not a digit, even though it is 1 modulo 256
    wide[0, 0] = -3 if g[0, 0] == 0 else wide[0, 0]
    assert (minlex(wide)[0] == minlex(g)[0]).all()


def test_shapes_and_dtypes():
    forms, autos = minlex(np.zeros((0, 81), np.uint8))
    assert forms.shape == (0, 81) and autos.shape == (0,)
    forms, autos = minlex(grid(PUZZLE))
    assert forms.dtype == np.uint8 and autos.dtype == np.int64
    assert canonical_transforms(grid(PUZZLE)).dtype == np.int8
    with pytest.raises(ValueError):
        minlex(np.zeros((2, 80), np.uint8))


# --------------------------------------------------------------------------------------
# invariance and the minimizing transformation
# --------------------------------------------------------------------------------------


def _grid_from(cells: list[tuple[int, int]]) -> np.ndarray:
    g = np.zeros((1, 81), np.uint8)
    for s, d in cells:
        g[0, s] = d
    return g


sparse_grids = st.lists(st.tuples(st.integers(0, 80), st.integers(1, 9)), max_size=40).map(
    _grid_from
)


@st.composite
def valid_puzzles(draw):
    """A random solution grid (a random equivalent of a known one) with random blanks."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sol = transform(grid(SOLUTION), random_transforms(rng, 1))
    keep = rng.random(81) < draw(st.floats(0.15, 1.0))
    return np.where(keep, sol, 0).astype(np.uint8)


@st.composite
def latin(draw):
    return latin_squares(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), 1)


any_grids = st.one_of(sparse_grids, valid_puzzles(), latin())


@given(any_grids, st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_random_equivalents_share_form_and_automorphisms(g, seed):
    t = random_transforms(np.random.default_rng(seed), 1)
    f1, a1 = minlex(g)
    f2, a2 = minlex(transform(g, t))
    assert (f1 == f2).all() and a1[0] == a2[0]


@given(any_grids)
@settings(max_examples=300, deadline=None)
def test_form_is_an_equivalent_and_not_larger(g):
    form, autos = minlex(g)
    t = canonical_transforms(g)
    assert (transform(g, t) == form).all()
    assert lex_less_equal(form[0], relabelled(g[0]))
    assert 1 <= autos[0] <= GROUP_SIZE and GROUP_SIZE % autos[0] == 0


@given(any_grids)
@settings(max_examples=150, deadline=None)
def test_general_path_agrees_with_fast_path(g):
    fast = canonical._run(g)
    slow = canonical._run(g, force_slow=True)
    assert (fast[0] == slow[0]).all() and (fast[1] == slow[1]).all()


@given(any_grids)
@settings(max_examples=100, deadline=None)
def test_buffer_too_small_grows(g):
    # two candidates at first: every grid with more ties is done again in a bigger buffer
    assert all((a == b).all() for a, b in zip(canonical._run(g, capacity=2), canonical._run(g),
                                               strict=True))


def test_data_sets_transform_to_their_form(shared_data):
    g = np.concatenate([
        load_set("tdoku_benchmark_sets/puzzles2_17_clue", 3000),
        load_set("tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+", 3000),
        load_set("kaggle_bryanpark_1m/sudoku_small.csv", 1000),
        load_set("kaggle_bryanpark_1m/sudoku_small.csv", 300, field=1),
        load_set("tdoku_benchmark_sets/puzzles7_serg_benchmark", 1000),
    ])
    rng = np.random.default_rng(11)
    forms, autos = minlex(g)
    assert (transform(g, canonical_transforms(g)) == forms).all()
    h = transform(g, random_transforms(rng, len(g)))
    forms2, autos2 = minlex(h)
    assert (forms2 == forms).all() and (autos2 == autos).all()
    fast = canonical._run(g[::10])
    slow = canonical._run(g[::10], force_slow=True)
    assert (fast[0] == slow[0]).all() and (fast[1] == slow[1]).all()
    small = canonical._run(g, capacity=2)
    assert (small[0] == forms).all() and (small[1] == autos).all()


# --------------------------------------------------------------------------------------
# minimality against the exhaustive reference
# --------------------------------------------------------------------------------------


def test_minimal_by_exhaustive_reference(shared_data):
    rng = np.random.default_rng(2024)
    seventeen = load_set("tdoku_benchmark_sets/puzzles2_17_clue")
    f17, _ = minlex(seventeen)
    not_fixed = np.flatnonzero((f17 != seventeen).any(axis=1))
    kaggle = load_set("kaggle_bryanpark_1m/sudoku_small.csv", 2000)
    groups = {
        "17-clue": sample(seventeen, 40, 1),
        "17-clue lines not in minlex form": seventeen[rng.choice(not_fixed, 10, replace=False)],
        "forum hardest": sample(load_set("tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+"), 30, 2),
        "top1465": sample(load_set("tdoku_benchmark_sets/puzzles3_magictour_top1465"), 20, 3),
        "Kaggle": sample(kaggle, 30, 4),
        "Kaggle solutions": sample(load_set("kaggle_bryanpark_1m/sudoku_small.csv", 2000, field=1), 15, 5),
        "serg (non-unique)": sample(load_set("tdoku_benchmark_sets/puzzles7_serg_benchmark"), 15, 6),
        "invalid": random_grids(rng, 30, 15, 40),
        "near-empty": random_grids(rng, 30, 0, 6),
        "Latin squares": latin_squares(rng, 8),
        "near-full": np.where(rng.random((8, 81)) < 0.9, latin_squares(rng, 8), 0),
    }
    for name, g in groups.items():
        forms, autos = minlex(g)
        for i in range(len(g)):
            ref_form, ref_count = reference(g[i])
            assert text(forms[i]) == text(ref_form), (name, text(g[i]))
            assert autos[i] == ref_count, (name, text(g[i]))


# --------------------------------------------------------------------------------------
# the 17-clue files
# --------------------------------------------------------------------------------------


def test_17_clue_files(shared_data):
    tdoku = load_set("tdoku_benchmark_sets/puzzles2_17_clue")
    royle = load_set("royle_17clue/sudoku17.txt")
    assert len(tdoku) == 49_158 and len(royle) == 49_151
    f_tdoku, a_tdoku = minlex(tdoku)
    f_royle, _ = minlex(royle)
    fixed = (f_tdoku == tdoku).all(axis=1)
    # Most lines are their own minlex; every other line's form is smaller than the line.
    assert fixed.sum() == 47_653
    assert all(lex_less_equal(f, g) for f, g in zip(f_tdoku, tdoku, strict=True))
    # 49,158 different puzzles up to equivalence, none with a symmetry.
    tdoku_forms = {bytes(f) for f in f_tdoku}
    assert len(tdoku_forms) == 49_158 and (a_tdoku == 1).all()
    # Royle's 49,151 are among them: 49,151 forms, all in the set of the file's forms.
    royle_forms = {bytes(f) for f in f_royle}
    assert len(royle_forms) == 49_151 and royle_forms <= tdoku_forms
    # Royle's file holds them in another form (none of its lines is a line of tdoku's).
    assert not {bytes(g) for g in royle} & {bytes(g) for g in tdoku}
