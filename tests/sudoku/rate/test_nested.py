"""rate/nested.py: the cycles, forcing chains and multiple forcing chains a run of nested
chains looks for on its grid, against the rater's own Forcing Chains step and the rule of
their parents. (The
whole paths that take nested chains are serate's: test_rate.py, nested.jsonl.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import grid_before
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import rate
from pipeline.sudoku.rate import nested
from pipeline.sudoku.rate.board import HOUSE_CELLS

DATA = Path(__file__).parent / "data"
CHAINS = ("Bidirectional X-Cycle", "Bidirectional Y-Cycle", "Bidirectional Cycle",
          "Turbot Fish", "Forcing X-Chain", "Forcing Chain")
SMALL = 70  # candidates at most in a grid looked at (the helpers run as Python here)


def _counts(g: np.ndarray) -> np.ndarray:
    return np.array([[sum(int(g[c]) >> d & 1 for c in HOUSE_CELLS[h]) for h in range(27)]
                     for d in range(9)], np.int64)


def _chain_steps():
    """Steps of the recorded paths taken by serate's Forcing Chains & Cycles, on grids of
    at most SMALL candidates."""
    out = []
    for line in (DATA / "paths.jsonl").read_text().splitlines():
        puzzle = json.loads(line)["puzzle"]
        steps = rate.path(puzzle)
        for k, s in enumerate(steps):
            if s.technique in CHAINS:
                val, cand = grid_before(puzzle, k, steps)
                if sum(bin(int(c)).count("1") for c in cand) <= SMALL:
                    out.append((puzzle, k, s, val, cand))
    return out


CASES = _chain_steps()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0][:12]}-{c[1]}")
def test_the_first_hint_of_a_look_is_the_forcing_chains_step(case):
    """Sorted as serate sorts them, the first of every cycle and forcing chain on a grid is
    the step the rater's Forcing Chains takes there (chains.py, serate's on every recorded
    path): the same rating and the same removals."""
    _, _, step, val, cand = case
    N = nested.new_nested(True)
    nested.look(N, val, cand, cand, _counts(cand))
    nested.sort_hints(N, N.nh[0])
    first = N.kept[0]
    removed = set()
    for k in range(N.rn[first]):
        v = int(N.rem[N.ro[first] + k])
        removed |= {(v >> 9, d + 1) for d in range(9) if v >> d & 1}
    if step.placements:
        (c, d), = step.placements
        want = {(c, e + 1) for e in range(9) if cand[c] >> e & 1 and e + 1 != d}
    else:
        want = set(step.eliminations)
    assert removed == want
    assert round(N.diff[first] * 10) == round(step.rating * 10)


def test_there_are_enough_cases():
    assert len(CASES) >= 5


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@settings(max_examples=15, deadline=None)
@given(st.integers(0, max(len(CASES) - 1, 0)), st.integers(0, 2**32 - 1),
       st.floats(0.0, 0.3))
@pytest.mark.parametrize("rule", [0, 1])  # forcing chains, multiple forcing chains
def test_a_look_gives_only_what_the_run_made(rule, i, seed, drop):
    """On the step's own grid every hint holds without a run: nothing. With some
    candidates gone (a run's offs), each off given is a candidate left, once, and its
    parents are candidates the run took, at least one."""
    _, _, _, val, cand = CASES[i]
    N = nested.new_nested(True)
    out = np.zeros((1458, 4), np.int64)
    outp = np.zeros(1 << 16, np.int64)
    assert nested.nested_look(N, val, cand, cand, _counts(cand), out, outp, rule) == 0
    rng = np.random.default_rng(seed)
    g = cand.copy()
    for c in range(81):
        for d in range(9):
            if g[c] >> d & 1 and g[c] & ~(1 << d) and rng.random() < drop:
                g[c] &= ~(1 << d)
    rows = nested.nested_look(N, val, cand, g, _counts(g), out, outp, rule)
    nodes = [int(out[r, 0]) for r in range(rows)]
    assert len(set(nodes)) == rows and not N.over[0]
    for r in range(rows):
        q = nodes[r]
        assert q & 1 == 0 and g[(q >> 1) // 9] >> ((q >> 1) % 9) & 1
        parents = [int(x) for x in outp[out[r, 2]:out[r, 2] + out[r, 1]]]
        assert parents and len(set(parents)) == len(parents)
        for p in parents:
            c, d = (p >> 1) // 9, (p >> 1) % 9
            assert p & 1 == 0 and cand[c] >> d & 1 and not g[c] >> d & 1
