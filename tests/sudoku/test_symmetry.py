"""pipeline.sudoku.symmetry: transform, inverse and random_transforms. Solutions map with
their puzzles (also into the canonical frame of their puzzle), identity and inverse
compose, and the random transformations are uniform and well formed. Solutions are judged
by pipeline.sudoku.check.is_solution."""

from __future__ import annotations

import numpy as np
from conftest import LEET, LEET_SOLUTION, PUZZLE, SOLUTION, load_set
from helpers import grid, random_grids

from pipeline.sudoku.canonical import canonical_transforms, minlex
from pipeline.sudoku.check import is_solution
from pipeline.sudoku.symmetry import identity_transforms, inverse, random_transforms, transform


def test_solutions_map_with_their_puzzles():
    rng = np.random.default_rng(5)
    p = np.repeat(np.concatenate([grid(PUZZLE), grid(LEET)]), 500, axis=0)
    s = np.repeat(np.concatenate([grid(SOLUTION), grid(LEET_SOLUTION)]), 500, axis=0)
    assert is_solution(p, s).all()
    t = random_transforms(rng, len(p))
    tp, ts = transform(p, t), transform(s, t)
    assert is_solution(tp, ts).all()
    assert len({bytes(x) for x in ts}) > 990  # the transformations really vary
    inv = inverse(t)
    assert (transform(tp, inv) == p).all() and (transform(ts, inv) == s).all()
    assert (inverse(inv) == t).all()


def test_solutions_map_with_their_puzzles_data(shared_data):
    p = load_set("kaggle_bryanpark_1m/sudoku_small.csv", 3000)
    s = load_set("kaggle_bryanpark_1m/sudoku_small.csv", 3000, field=1)
    t = random_transforms(np.random.default_rng(9), len(p))
    assert is_solution(transform(p, t), transform(s, t)).all()
    # a solution goes to the canonical frame of its puzzle with the puzzle's transformation
    c = canonical_transforms(p)
    assert is_solution(minlex(p)[0], transform(s, c)).all()


def test_identity_and_inverse_compose():
    rng = np.random.default_rng(1)
    g = random_grids(rng, 200, 20, 81)
    assert (transform(g, identity_transforms(200)) == g).all()
    t = random_transforms(rng, 200)
    assert (transform(transform(g, inverse(t)), t) == g).all()


def test_random_transforms_are_uniform_and_well_formed():
    rng = np.random.default_rng(0)
    t = random_transforms(rng, 60_000)
    assert t.shape == (60_000, 34) and t.dtype == np.int8
    for lo, hi in [(1, 4), (13, 16)] + [(4 + 3 * i, 7 + 3 * i) for i in range(3)] + [
        (16 + 3 * i, 19 + 3 * i) for i in range(3)
    ]:
        assert (np.sort(t[:, lo:hi], axis=1) == np.arange(3)).all()
        # each of the six orders about 1/6 of the time
        codes = t[:, lo].astype(int) * 3 + t[:, lo + 1]
        freq = np.bincount(codes, minlength=9)[[1, 2, 3, 5, 6, 7]] / len(t)
        assert np.abs(freq - 1 / 6).max() < 0.01
    assert (np.sort(t[:, 25:], axis=1) == np.arange(1, 10)).all()
    assert abs(t[:, 0].mean() - 0.5) < 0.01
    assert np.abs(np.bincount(t[:, 25], minlength=10)[1:] / len(t) - 1 / 9).max() < 0.01
