"""The solving path: at each step the first of serate's producers that has a hint gives its
easiest one, which is applied; the ratings of the steps make ER, EP and ED.

    ER  the hardest step of the whole path
    EP  the hardest step up to the first that places a digit
    ED  the first step's rating

One effort unit is one producer's look at the grid (a technique scanning the whole state
once) or one chain search from one candidate; the budget caps the units of one puzzle.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import bitboards, place, setup
from pipeline.sudoku.rate.chains import NODES, forcing_chains, serate_added
from pipeline.sudoku.rate.dynamic import (
    NEEDS_NESTED,
    assumptions,
    inner_work,
    links_of,
    new_work,
)
from pipeline.sudoku.rate.nested import new_nested
from pipeline.sudoku.rate.techniques import (
    CHAIN_BASE,
    ELIMS,
    HINT_SIZE,
    INFO,
    NELIM,
    PCELL,
    PDIG,
    RATING,
    TECH,
    aligned_pair,
    aligned_triplet,
    bug,
    clear,
    fish,
    hidden_single,
    hidden_subset,
    intersections,
    naked_single,
    naked_subset,
    unique_loop,
    unique_rectangle,
    xy_wing,
)

OK, BUDGET, DISAGREES, INVALID, BEYOND = range(5)
STATUS_NAMES = ("ok", "budget", "disagrees", "invalid", "beyond")
AGAIN = len(STATUS_NAMES)  # (rate_all's own: rate this puzzle again, with the chains' scratch)
# Columns of the kernel's result matrix
ER, EP, ED, TECHNIQUE, STEPS, STATUS, REACHED = range(7)
FIRST_MISSING = 105  # the easiest rating of the techniques we lack: serate's (+ Dynamic
# Forcing Chains) whose inner chains are chains (+) or nested themselves, tried after ours
MAX_STEPS = 810  # a step places a digit or removes a candidate: at most 81 + 729
MAX_EVENTS = 810
STEP_WORDS = 3 + ELIMS - INFO  # a recorded step: technique, rating, end of events, info
LAST_ATE = 3  # the chains' scratch's row after their depth, queue and seen


@compiled.helper()
def as_serate(tech, rating):
    """A step's rating as serate's double: a chain's is its base plus 0.1 added once for
    each increment of its length, which can fall a hair above or below the tenth (6.5 + 0.1
    + 0.1 > 6.6 + 0.1); the others' are the tenth itself."""
    base = CHAIN_BASE[tech]
    if base == 0:
        return rating / 10.0
    return base / 10.0 + serate_added(rating - base)


@compiled.helper(_nrt=False)
def first_step(val, cand, bb, H, E, effort):
    """The step serate takes next when it is one of the easiest, up to direct hidden triples
    (2.5: most steps of most puzzles), in H; False when there is none. effort[0] counts
    the producers asked. Apart from next_step and, like the finders it asks, compiled
    without reference counting: a function that allocates counts its arrays' references
    at each call (next_step's eight, then each finder's)."""
    clear(H)
    effort[0] += 1
    if hidden_single(val, cand, bb, H, E):
        return True
    effort[0] += 1
    if intersections(cand, bb, H, E, True):
        return True
    effort[0] += 1
    if hidden_subset(val, cand, bb, H, E, 2, True):
        return True
    effort[0] += 1
    if naked_single(val, cand, H, E):
        return True
    effort[0] += 1
    return hidden_subset(val, cand, bb, H, E, 3, True)


@compiled.helper()
def next_step(val, cand, bb, H, E, effort, scratch, look):
    """The step serate takes next after first_step's, in H, of those up to aligned triplets
    (no assumption); False when none has one. The chains from an assumption
    (dynamic.assumptions) are the caller's next: most steps are found before, and each
    call of a function that takes their W counts its hundred arrays' references."""
    effort[0] += 1
    if intersections(cand, bb, H, E, False):
        return True
    for size in range(2, 5):
        effort[0] += 1
        if naked_subset(val, cand, H, E, size):
            return True
        effort[0] += 1
        if fish(val, cand, H, E, size):
            return True
        effort[0] += 1
        if hidden_subset(val, cand, bb, H, E, size, False):
            return True
        if size == 3:
            effort[0] += 1
            if xy_wing(val, cand, bb, H, E, False):
                return True
            effort[0] += 1
            if xy_wing(val, cand, bb, H, E, True):
                return True
            effort[0] += 1
            if unique_rectangle(val, cand, bb, H, E) | unique_loop(val, cand, bb, H, E):
                return True
    effort[0] += 1
    if bug(val, cand, bb, H, E):
        return True
    effort[0] += 1
    if aligned_pair(val, cand, H, E):
        return True
    effort[0] += 1
    if forcing_chains(val, cand, bb, H, E, scratch[0], scratch[1], scratch[2], look, effort):
        return True
    effort[0] += 1
    return aligned_triplet(val, cand, H, E, scratch[LAST_ATE])


# A puzzle's rating so far (rate_one's state between its calls): ER, EP, ED and ER's
# technique, steps taken, events recorded, whether one placed a digit, empty cells left
S_ER, S_EP, S_ED, S_TECH, S_STEPS, S_NEV, S_PLACED, S_LEFT = range(8)


@compiled.helper()
def rate_one(puzzle, solution, budget, out, val, cand, bb, H, E, effort, scratch, look, S,
             SX, t_step, t_event, record, resume):
    """Rate one puzzle into out[ER..REACHED]; with `record`, the path into t_step (a row a
    step: technique, rating, end of its events in t_event, the words of INFO) and t_event
    (1000 + cell * 10 + digit a placement, cell * 10 + digit an elimination). False when
    the next step is none of next_step's: its rating so far is in S (SX[0]: ER as serate
    compares it), the caller asks for a chain from an assumption and, with `resume`, calls
    again to take the step in H. look: the arrays of the chains' links and reach's look at
    them (W's: the multiple chains look at the grid a step of chains looked at before).
    (The chains' Work, a hundred arrays, stays the caller's:
    passed to each call, their references were counted a puzzle, about a fifth of an easy
    puzzle's time.)"""
    if resume:
        er, ep, ed, tech = S[S_ER], S[S_EP], S[S_ED], S[S_TECH]
        steps, nev, placed, left = S[S_STEPS], S[S_NEV], S[S_PLACED] != 0, S[S_LEFT]
        erx = SX[0]
    else:
        for k in range(7):
            out[k] = 0
        if not setup(puzzle, val, cand, bb):
            out[STATUS] = INVALID
            return True
        er = ep = ed = tech = steps = nev = left = 0
        erx = 0.0
        placed = False
        effort[0] = 0
        effort[1] = budget  # (a run of nested dynamic chains stops past it: dynamic.run)
        if scratch[2, NODES] != 0:  # the chains' generations (seen), once any search ran
            for k in range(NODES + 1):
                scratch[2, k] = 0
        scratch[LAST_ATE, 81] = 0  # (no grid of this puzzle looked at by aligned triplets)
        for c in range(81):
            if val[c] == 0:
                left += 1
                if cand[c] == 0:
                    out[STATUS] = INVALID
                    return True
    pending = resume  # (H holds the step from an assumption)
    while left > 0:
        if pending:
            pending = False
        else:
            if effort[0] >= budget:
                out[STATUS] = BUDGET
                out[REACHED] = er
                out[STEPS] = steps
                return True
            if not (first_step(val, cand, bb, H, E, effort) or next_step(
                    val, cand, bb, H, E, effort, scratch, look)):
                S[S_ER], S[S_EP], S[S_ED], S[S_TECH] = er, ep, ed, tech
                S[S_STEPS], S[S_NEV], S[S_PLACED], S[S_LEFT] = steps, nev, int(placed), left
                SX[0] = erx
                return False
        r = H[RATING]
        x = as_serate(H[TECH], r)
        if x > erx:  # as serate compares: a chain's 6.5 + 0.2 is more than 6.6 + 0.1
            erx = x
            er = r
            tech = H[TECH]
        if steps == 0:
            ed = r
        if not placed:
            ep = max(ep, r)
        pc = H[PCELL]
        for i in range(H[NELIM]):
            e = H[ELIMS + i]
            c = e // 10
            d = e % 10
            if solution[c] == d:
                out[STATUS] = DISAGREES
                out[STEPS] = steps
                return True
            cand[c] &= ~(1 << (d - 1))
            bb[d - 1, c // 27] &= ~(np.int64(1) << (c % 27))
            if record and nev < t_event.shape[0]:
                t_event[nev] = e
                nev += 1
        if pc >= 0:
            d = H[PDIG]
            if solution[pc] != d:
                out[STATUS] = DISAGREES
                out[STEPS] = steps
                return True
            place(val, cand, bb, pc, d)
            left -= 1
            placed = True
            if record and nev < t_event.shape[0]:
                t_event[nev] = 1000 + pc * 10 + d
                nev += 1
        if record and steps < t_step.shape[0]:
            t_step[steps, 0] = H[TECH]
            t_step[steps, 1] = r
            t_step[steps, 2] = nev
            for k in range(ELIMS - INFO):
                t_step[steps, 3 + k] = H[INFO + k]
        steps += 1
    out[ER] = er
    out[EP] = ep
    out[ED] = ed
    out[TECHNIQUE] = tech
    out[STEPS] = steps
    out[STATUS] = OK
    return True


@compiled.helper()
def assume(val, cand, H, W, N, X, out, S):
    """The next step from an assumption into H (True), or the puzzle's end into out: AGAIN
    when W (a stand-in) or its nested chains' scratch is to be made first (rate_all makes
    it), BUDGET when a nested chain's pools ran out (past our bounds), BEYOND when there is
    none."""
    if W.has.shape[0] == 0:
        out[STATUS] = AGAIN
        return False
    found = assumptions(val, cand, H, W, N, X)
    if W.over[0] == NEEDS_NESTED:
        out[STATUS] = AGAIN
        return False
    if W.over[0] or N.over[0]:
        W.over[0] = 0
        N.over[0] = 0
        out[STATUS] = BUDGET
        out[REACHED] = S[S_ER]
        out[STEPS] = S[S_STEPS]
        return False
    if not found:
        out[STATUS] = BEYOND
        out[REACHED] = max(S[S_ER], FIRST_MISSING)
        out[STEPS] = S[S_STEPS]
        return False
    return True


@compiled.kernel("(readonly u1[:, ::1], readonly u1[:, ::1], i8, i4[:, ::1], i4[:, :, ::1], "
                 "i4[:, ::1]) -> void")
def rate_all(puzzles, solutions, budget, out, t_step, t_event):
    """Rate each puzzle into its row of out (ER, EP, ED, technique, steps, status,
    reached); when t_step has a row per puzzle (t_event too), its path into it."""
    val = np.zeros(81, np.int8)
    cand = np.zeros(81, np.int64)
    bb = np.zeros((9, 3), np.int64)
    H = np.zeros(HINT_SIZE, np.int64)
    E = np.zeros(HINT_SIZE, np.int64)
    effort = np.zeros(2, np.int64)  # the units spent, the budget
    # the chain searches' depth, queue and seen (chains.py); the searches'
    # generations restart with each puzzle, so int32 holds them (one a search: the budget);
    # then aligned triplets' last grid without a hint (techniques.aligned_triplet)
    scratch = np.zeros((LAST_ATE + 1, NODES + 1), np.int32)
    # the chains from an assumption's records (dynamic.py) and the nested looks' (nested.py),
    # made at the first puzzle that needs them (then nested chains' at the first that needs
    # those: megabytes, most calls never do), which is then rated again
    W = new_work(effort, False, False)
    N = new_nested(False)
    X = W  # (the nested dynamic chains' own Work: none needed before W's real scratch)
    S = np.zeros(8, np.int64)  # (rate_one's state while a step from an assumption is found)
    SX = np.zeros(1, np.float64)
    record = t_step.shape[0] == puzzles.shape[0] and t_step.shape[1] > 0
    no_steps = np.zeros((0, STEP_WORDS), np.int32)
    no_events = np.zeros(0, np.int32)
    for i in range(puzzles.shape[0]):
        steps = t_step[i] if record else no_steps
        events = t_event[i] if record else no_events
        for _ in range(3):
            resume = False
            while not rate_one(puzzles[i], solutions[i], budget, out[i], val, cand, bb, H,
                               E, effort, scratch, links_of(W), S, SX, steps, events,
                               record, resume):
                resume = assume(val, cand, H, W, N, X, out[i], S)
                if not resume:
                    break
            if out[i, STATUS] != AGAIN:
                break
            if W.has.shape[0] == 0:
                W = new_work(effort, False, True)
                X = W
            else:
                W = new_work(effort, True, True)
                N = new_nested(True)
                X = inner_work(W)


@compiled.kernel("(readonly i8[::1], i8[::1]) -> b1")
def first_hint(cand, H):
    """The step serate would take on a position given as its candidates (81 9-bit masks, 0
    = a placed cell), in H; False when none. For tests on textbook positions."""
    val = np.zeros(81, np.int8)
    c2 = np.zeros(81, np.int64)
    bb = np.zeros((9, 3), np.int64)
    for c in range(81):
        c2[c] = cand[c]
        if cand[c] == 0:
            val[c] = 1  # placed: its digit matters to no finder
    bitboards(c2, bb)
    E = np.zeros(HINT_SIZE, np.int64)
    effort = np.zeros(2, np.int64)  # (no budget)
    scratch = np.zeros((LAST_ATE + 1, NODES + 1), np.int32)
    W = new_work(effort, True, True)
    if first_step(val, c2, bb, H, E, effort) or next_step(val, c2, bb, H, E, effort, scratch,
                                                          links_of(W)):
        return True
    return assumptions(val, c2, H, W, new_nested(True), inner_work(W))
