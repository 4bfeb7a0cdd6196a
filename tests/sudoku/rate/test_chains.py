"""The forcing chains' search for a candidate's negation (chains.to_negation) against a
breadth first search to the end (chains.bfs), on states of real puzzles."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import solver
from pipeline.sudoku.rate.board import count_in
from pipeline.sudoku.rate.chains import NODES, bfs, build_links, to_negation

DATA = Path(__file__).parent / "data" / "reference.csv"


def _puzzles() -> tuple[np.ndarray, np.ndarray]:
    with open(DATA, newline="") as f:
        texts = [r["puzzle"] for r in csv.DictReader(f) if float(r["er"]) >= 6.5][:40]
    grids = np.array([[0 if ch == "." else int(ch) for ch in t] for t in texts], np.uint8)
    return grids, solver.solve_grids(grids, 1).solutions


PUZZLES, SOLUTIONS = _puzzles()


def _state(grid: np.ndarray, solution: np.ndarray, drop: float, seed: int):
    """The candidates of a puzzle's open cells, some of the wrong ones taken out."""
    rng = np.random.default_rng(seed)
    cand = np.zeros(81, np.int64)
    for c in range(81):
        if grid[c]:
            continue
        r, k = divmod(c, 9)
        used = {int(grid[p]) for p in range(81) if grid[p] and (
            p // 9 == r or p % 9 == k or (p // 27 == c // 27 and p % 9 // 3 == k // 3))}
        for d in range(1, 10):
            if d not in used and (d == solution[c] or rng.random() >= drop):
                cand[c] |= 1 << (d - 1)
    bb = np.zeros((9, 3), np.int64)
    for c in range(81):
        for d in range(9):
            if cand[c] >> d & 1:
                bb[d, c // 27] |= 1 << (c % 27)
    return cand, bb


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(PUZZLES) - 1), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1),
       st.sampled_from([(True, False), (False, True), (True, True)]),
       st.integers(0, 2**32 - 1), st.sampled_from([3, 5, 8, 12, 20, 40, NODES]))
def test_the_half_deep_search_finds_the_shortest_chain_to_the_negation(
        i, drop, seed, kind, pick, limit):
    cand, bb = _state(PUZZLES[i], SOLUTIONS[i], drop, seed)
    links = np.zeros((NODES, 30), np.int16)
    build_links(cand, np.array([[count_in(bb, d, h) for h in range(27)] for d in range(9)]),
                links)
    use_x, use_y = kind
    parent, depth, queue, seen = (np.zeros(NODES + 1, np.int32) for _ in range(4))
    starts = [((c * 9 + d) << 1) | on for c in range(81) for d in range(9)
              if cand[c] >> d & 1 for on in (0, 1)]
    rng = np.random.default_rng(pick)
    for start in rng.choice(starts, size=min(12, len(starts)), replace=False):
        start = int(start)
        bfs(links, start, use_x, use_y, limit, start ^ 1, parent, depth, queue, seen)
        whole = seen[start ^ 1] == seen[NODES]
        expected = int(depth[start ^ 1]) + 1 if whole else 0
        got = to_negation(links, start, use_x, use_y, limit, depth, queue, seen)
        assert max(got, 0) == expected, (start, limit)
