"""Aligned triplets (7.5) keep, from call to call, the last grid on which no triplet had a
hint and look again only at triplets with a cell changed since: on the grids of the
recorded paths in the rater's order, and on those grids with more candidates taken out,
the step found is the one found looking afresh. (The whole paths are serate's:
test_rate.py.)"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from helpers import grid_before
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import rate
from pipeline.sudoku.rate.techniques import (
    ELIMS,
    HINT_SIZE,
    INFO,
    NELIM,
    aligned_triplet,
    clear,
)

DATA = Path(__file__).parent / "data"
ATE = "Aligned Triplet Exclusion"


def _paths():
    """(puzzle, grids before its steps from the first rated 6.2 or more to two past its
    last aligned triplet) of the recorded puzzles whose paths take aligned triplets."""
    out = []
    for name in ("own.csv", "reference.csv"):
        with open(DATA / name, newline="") as f:
            for r in csv.DictReader(f):
                steps = rate.path(r["puzzle"])
                ks = [k for k, s in enumerate(steps) if s.technique == ATE]
                if not ks:
                    continue
                first = next(k for k, s in enumerate(steps) if s.rating >= 6.2)
                grids = [grid_before(r["puzzle"], k, steps)
                         for k in range(first, min(ks[-1] + 3, len(steps)))]
                out.append((r["puzzle"], grids))
    return out


PATHS = _paths()


def _look(val, cand, last):
    """aligned_triplet's answer and step: (found, eliminations, the triplet)."""
    H = np.zeros(HINT_SIZE, np.int64)
    E = np.zeros(HINT_SIZE, np.int64)
    clear(H)
    found = aligned_triplet(val, cand, H, E, last)
    return bool(found), tuple(H[ELIMS:ELIMS + H[NELIM]]), tuple(H[INFO:INFO + 3])


def test_the_paths_take_aligned_triplets():
    assert len(PATHS) >= 10
    assert sum(len(g) for _, g in PATHS) >= 200


def test_kept_from_step_to_step_finds_what_a_fresh_look_finds():
    """Along each path (the rater's order), one `last` kept over the calls."""
    found = skipped_grids = 0
    for puzzle, grids in PATHS:
        last = np.zeros(82, np.int32)
        for val, cand in grids:
            kept_before = last[81] == 1
            kept = _look(val, cand, last)
            fresh = _look(val, cand, np.zeros(82, np.int32))
            assert kept == fresh, puzzle
            found += fresh[0]
            skipped_grids += kept_before
    assert found >= len(PATHS) and skipped_grids >= 100


def _wrong(puzzle: str, val: np.ndarray, cand: np.ndarray) -> list[tuple[int, int]]:
    """A grid's candidates (cell, digit bit) that are not the solution's."""
    steps = rate.path(puzzle)
    solution, _ = grid_before(puzzle, len(steps), steps)
    return [(c, 1 << d) for c in range(81) if val[c] == 0 for d in range(9)
            if cand[c] >> d & 1 and d + 1 != solution[c]]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_kept_then_more_taken_out_finds_what_a_fresh_look_finds(data):
    """A grid of a path with no hint looked at, then some of its wrong candidates taken
    out (no cell left with one): the same step as looking afresh."""
    puzzle, grids = data.draw(st.sampled_from(PATHS))
    k = data.draw(st.integers(0, len(grids) - 1))
    val, cand = grids[k]
    last = np.zeros(82, np.int32)
    if _look(val, cand, last)[0]:
        return
    wrong = _wrong(puzzle, val, cand)
    out = data.draw(st.lists(st.sampled_from(wrong), max_size=12, unique=True)) if wrong else []
    after = cand.copy()
    for c, bit in out:
        if bin(int(after[c] & ~bit)).count("1") >= 2:
            after[c] &= ~bit
    assert _look(val, after, last) == _look(val, after, np.zeros(82, np.int32))
