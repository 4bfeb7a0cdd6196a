"""rate/dynamic.py's multiple forcing chains (cell and region, 8.0), whose runs are made only
where chains.reach shows that they can meet: each run reaches what reach says its start
reaches, and the step found is the one of every run made and looked at, in serate's order.
(The whole paths are serate's: test_rate.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import grid_before

from pipeline.sudoku import rate
from pipeline.sudoku.rate import dynamic
from pipeline.sudoku.rate.board import HOUSE_CELLS, lowbit

DATA = Path(__file__).parent / "data"
MULTIPLE = ("Cell Forcing Chains", "Region Forcing Chains")
SMALL = 140  # candidates at most in a grid looked at (the helpers run as Python here)


def _states():
    """Grids before the steps of the recorded paths that serate takes by multiple forcing
    chains, and the step after each (what the kinds before find nothing on), of at most
    SMALL candidates."""
    out = []
    for line in (DATA / "paths.jsonl").read_text().splitlines():
        puzzle = json.loads(line)["puzzle"]
        steps = rate.path(puzzle)
        for k, s in enumerate(steps):
            if s.technique in MULTIPLE:
                for j in (k, k + 1):
                    val, cand = grid_before(puzzle, j, steps)
                    if 0 < sum(bin(int(c)).count("1") for c in cand) <= SMALL:
                        out.append((f"{puzzle[:12]}-{j}", val, cand))
    return out


STATES = _states()


def _work(val, cand):
    W = dynamic.new_work(np.zeros(2, np.int64), False, True)
    for c in range(81):  # (what chains_of sets up before its kinds' runs)
        W.val[c] = val[c]
        x = int(cand[c])
        while x:
            d = lowbit(x)
            x &= x - 1
            W.gb0[d, c // 27] |= 1 << (c % 27)
    for d in range(9):
        for h in range(27):
            W.n0[d, h] = sum(int(cand[c]) >> d & 1 for c in HOUSE_CELLS[h])
    W.best[0] = 1 << 40
    W.best[1] = 0
    return W


def test_the_states_are_there():
    assert len(STATES) >= 4


@pytest.mark.parametrize("state", STATES, ids=lambda s: s[0])
def test_multiple_chains_made_where_they_meet_find_the_step_of_every_run(state):
    _, val, cand = state
    lazy = _work(val, cand)
    dynamic.multiple(lazy, None, val, cand)
    eager = _work(val, cand)  # chains_of's way for every other kind: every run, every look
    for c in range(81):
        if val[c] or bin(int(cand[c])).count("1") < 3:
            continue
        x, first = int(cand[c]), lowbit(int(cand[c]))
        while x:
            d = lowbit(x)
            x &= x - 1
            dynamic.made(eager, None, cand, c, d, False, True, 0, None)
            dynamic.houses(eager, None, val, cand, c, d, dynamic.MULTIPLE, None)
        others = [c * 9 + e for e in range(9) if int(cand[c]) >> e & 1 and e != first]
        for k, slot in enumerate(others):
            eager.sl[k] = slot
        dynamic.common(eager, None, cand, c * 9 + first, len(others), dynamic.CELL,
                       dynamic.KIND_TECH[dynamic.MULTIPLE, 2], c * 10, 0)
    assert list(lazy.best) == list(eager.best)
    assert lazy.effort[0] == eager.effort[0]  # (the runs not made count as made)
    # each run made reached what reach says its start reaches (less, past a contradiction)
    num = lazy.rtmp[1]
    for slot in np.flatnonzero(lazy.made == 1):
        start = (int(slot) << 1) | 1
        row = lazy.rbits[lazy.scc[start]]
        reaches = {n for n in range(dynamic.NODES)
                   if int(cand[(n >> 1) // 9]) >> ((n >> 1) % 9) & 1
                   and int(row[num[n] >> 6]) >> int(num[n] & 63) & 1}
        got = {int(q) for q in lazy.order[slot, :lazy.count[slot]]}
        assert got <= reaches
        if lazy.cx[slot] < 0:
            assert got == reaches
