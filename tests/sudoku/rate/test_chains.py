"""The forcing chains' searches on states of real puzzles: for a candidate's negation
(chains.to_negation) against a breadth first search to the end (chains.bfs); what a search
from each node can find (chains.reach) against each node's reach; loops kept to their
start's component (chains.loops) against loops that go everywhere."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import solver
from pipeline.sudoku.rate.board import count_in
from pipeline.sudoku.rate.chains import (
    NEGATES,
    NODES,
    ON_CYCLE,
    bfs,
    build_links,
    look_at,
    loops,
    new_reach,
    reach,
    to_negation,
)

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


def _links(cand: np.ndarray, bb: np.ndarray) -> np.ndarray:
    links = np.zeros((NODES, 30), np.int16)
    build_links(cand, np.array([[count_in(bb, d, h) for h in range(27)] for d in range(9)]),
                links)
    return links


def _successors(links: np.ndarray, n: int, use_x: bool, use_y: bool) -> list[int]:
    """Node n's links as chains.links_of reads them, written again here."""
    out = [int(m) for m in links[n, 22: 22 + links[n, 1]]] if use_y else []
    if n & 1 or use_x:
        out += [int(m) for m in links[n, 2: 2 + links[n, 0]]]
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, len(PUZZLES) - 1), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1),
       st.sampled_from([(True, False), (False, True), (True, True)]))
def test_reach_says_which_searches_can_find_a_loop_or_a_chain(i, drop, seed, kind):
    """reach's flags and components against every node's reach, found one node at a time."""
    cand, bb = _state(PUZZLES[i], SOLUTIONS[i], drop, seed)
    links = _links(cand, bb)
    use_x, use_y = kind
    flags, scc, *scratch = new_reach(NODES)
    reach(cand, links, use_x, use_y, flags, scc, *scratch)
    nodes = [((c * 9 + d) << 1) | on for c in range(81) for d in range(9)
             if cand[c] >> d & 1 for on in (0, 1)]
    after = {}  # the nodes a way of one link or more leads to
    for n in nodes:
        todo = _successors(links, n, use_x, use_y)
        got = set(todo)
        while todo:
            for m in _successors(links, todo.pop(), use_x, use_y):
                if m not in got:
                    got.add(m)
                    todo.append(m)
        after[n] = got
    for n in nodes:
        assert bool(flags[n] & ON_CYCLE) == (n in after[n]), n
        assert bool(flags[n] & NEGATES) == (n ^ 1 in after[n]), n
        for m in nodes:  # same component: each reaches the other
            assert (scc[n] == scc[m]) == (n == m or (m in after[n] and n in after[m])), (n, m)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, len(PUZZLES) - 1), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1),
       st.sampled_from([(True, False), (False, True), (True, True)]),
       st.sampled_from([8, 12, NODES]))
def test_loops_kept_to_the_start_s_component_find_the_same_loops(i, drop, seed, kind, limit):
    """The loops from each start, in the order met, with and without the component (under
    a limit too): each kind's, with the components of both kinds of links, as the rater
    keeps them."""
    cand, bb = _state(PUZZLES[i], SOLUTIONS[i], drop, seed)
    links = _links(cand, bb)
    use_x, use_y = kind
    flags, scc, *scratch = new_reach(NODES)
    reach(cand, links, True, True, flags, scc, *scratch)
    q = [np.empty(NODES * 16, np.int32) for _ in range(3)]
    seen = np.zeros(NODES + 1, np.int32)
    anc = np.zeros(NODES + 1, np.int64)
    closers = np.zeros(256, np.int64)
    for start in [((c * 9 + d) << 1) | 1 for c in range(81) for d in range(9)
                  if cand[c] >> d & 1][:40]:
        found = []
        for comps in (np.zeros(NODES, np.int32), scc):
            whole = loops(links, start, use_x, use_y, limit, *q, seen, closers, anc,
                          comps) >= 0
            paths = []
            for k in range(1, closers[0] + 1):
                e, path = int(closers[k]), []
                while e >= 0:
                    path.append(int(q[0][e]))
                    e = int(q[1][e])
                paths.append(path)
            found.append((paths, whole))
        assert found[1][0] == found[0][0], start
        assert found[1][1] or not found[0][1]  # (cut short only if the whole search was)
        if not flags[start] & ON_CYCLE:
            assert found[0][0] == []


def _counts(bb: np.ndarray) -> np.ndarray:
    return np.array([[count_in(bb, d, h) for h in range(27)] for d in range(9)], np.int64)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, len(PUZZLES) - 1), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1))
def test_look_at_keeps_a_grid_s_links_and_reach_only_for_that_grid(i, drop, seed, pick):
    """One grid looked at twice, then another (some of its candidates gone): each time the
    links, flags, components and node count of a look made afresh."""
    cand, bb = _state(PUZZLES[i], SOLUTIONS[i], drop, seed)
    rng = np.random.default_rng(pick)
    later = cand.copy()
    for c in rng.choice(81, size=8, replace=False):
        if bin(int(later[c])).count("1") > 1:
            later[c] &= later[c] - 1  # (its lowest candidate gone)
    later_bb = np.zeros((9, 3), np.int64)
    for c in range(81):
        for d in range(9):
            if later[c] >> d & 1:
                later_bb[d, c // 27] |= 1 << (c % 27)
    links = np.zeros((NODES, 30), np.int16)
    kept = new_reach(NODES)
    for grid, grid_bb in ((cand, bb), (cand, bb), (later, later_bb), (cand, bb)):
        v = look_at(grid, _counts(grid_bb), links, *kept)
        fresh_links = _links(grid, grid_bb)
        fresh = new_reach(NODES)
        assert v == reach(grid, fresh_links, True, True, *fresh)
        nodes = [((c * 9 + d) << 1) | on for c in range(81) for d in range(9)
                 if grid[c] >> d & 1 for on in (0, 1)]
        for n in nodes:
            for at, k in ((2, 0), (22, 1)):  # (its X links, then its Y links)
                assert list(links[n, at:at + links[n, k]]) == list(
                    fresh_links[n, at:at + fresh_links[n, k]]), n
            assert kept[0][n] == fresh[0][n] and kept[1][n] == fresh[1][n], n
