"""Chains that follow an assumption through the whole grid (7.5 and up): serate's Nishio,
multiple (cell and region) and dynamic forcing chains, dynamic forcing chains (+), and
nested ones, dynamic forcing chains (+ Forcing Chains), (+ Multiple Forcing Chains) and
(+ Dynamic Forcing Chains).

An assumption (a candidate on, or off) starts a run: breadth first, every pending on
before the next off,

    on  -> off  the digit leaves the cell's peers (box, then row, then column); but for
                Nishio, the cell's other digits go too
    off -> on   a cell left with one other digit (not for Nishio); a house (box, row,
                column) left with one other place for the digit

on the grid as it stands (multiple chains) or as the run's offs have left it (Nishio and
dynamic chains). A run stops at its first contradiction: a candidate both on and off. In
a run of chains (+), when nothing is pending, plus.py's rules (intersections, pairs,
X-Wings) on the run's grid may take more candidates off, and the run goes on; in a run of
nested chains, when those rules find nothing, what every cycle and forcing chain on the
run's grid removes, and (+ Multiple) when those find nothing either, what every cell and
region forcing chain removes (nested.py); (+ Dynamic) instead of both, what every dynamic
forcing chain on the run's grid removes (dynamic_hints: a pass of this module's own
dynamic chains, run in a second Work, that records every conclusion as nested.py's hints,
each with the candidates gone from the run's grid that its ons' causes need).

A node's parents are what implied it and, in a run that changes the grid, the offs that
left its cell or house single. A conclusion's complexity is the number of distinct nodes
behind it (itself included), summed over its chains, plus, once each, the complexity of
the nested chains behind it; it rates base + serate's increment for that (chains.length_add):

    kind      base  starts                         concludes
    Nishio    7.5   every candidate, on and off    the opposite of an assumption that
                                                   contradicts itself
    multiple  8.0   cells of 3+ candidates: each   what all of a cell's digits imply (cell),
                    digit on, and each place of    what all places of a digit in a house
                    the digit in its houses        imply (region)
    dynamic   8.5   cells of 2+ candidates         the same, contradictions, and what a
                                                   candidate on and off both imply (double)
    (+)       9.0   as dynamic                     as dynamic
    (+ FC)    9.5   as dynamic                     as dynamic
    (+ MFC)  10.0   as dynamic                     as dynamic
    (+ DFC)  10.5   as dynamic                     as dynamic

The step is the least complex conclusion of the first kind that has one; ties go to the
kind serate sorts first (double, cell, region, contradiction), then to the first met
(cells in order; a cell's digits, each with its contradictions, doubles and houses; then
the cell's own). Multiple chains change no grid: their runs reach at most what
chains.reach finds from their starts, and only the runs of a cell or region whose reaches
meet are made (`multiple`).

Nodes are numbered as in chains.py: (cell * 9 + digit) * 2, + 1 when on. A nested chain's
off has too many parents for its row of `par`: they go to the run's pool (xpar), and its
row says where, and which nested chain it came from. Past new_work nothing here allocates, so it is compiled without reference counting (`_nrt=False`), which
would count each of Work's arrays at each call.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import (
    BIT,
    CELL_HOUSES,
    HOUSE_BB,
    HOUSE_CELLS,
    POP9,
    SERATE_HOUSES,
    WORD,
    as_index,
    bitboards,
    counts,
    first_place,
    lowbit,
)
from pipeline.sudoku.rate.chains import NODES, length_add, look_at, new_reach
from pipeline.sudoku.rate.nested import (
    STORED,
    gone_of_cell,
    gone_of_house,
    java_rating,
    mix,
    nested_look,
    no_hints,
    offs_of,
    record,
    reset_pass,
)
from pipeline.sudoku.rate.plus import plus
from pipeline.sudoku.rate.techniques import (
    CHAIN_BASE,
    ELIMS,
    INFO,
    NELIM,
    PCELL,
    PDIG,
    RATING,
    T_CELL_FC,
    T_DYN_CELL_FC,
    T_DYN_CONTRADICTION_FC,
    T_DYN_DOUBLE_FC,
    T_DYN_REGION_FC,
    T_NEST2_CELL_FC,
    T_NEST2_CONTRADICTION_FC,
    T_NEST2_DOUBLE_FC,
    T_NEST2_REGION_FC,
    T_NEST3_CELL_FC,
    T_NEST3_CONTRADICTION_FC,
    T_NEST3_DOUBLE_FC,
    T_NEST3_REGION_FC,
    T_NEST4_CELL_FC,
    T_NEST4_CONTRADICTION_FC,
    T_NEST4_DOUBLE_FC,
    T_NEST4_REGION_FC,
    T_NISHIO,
    T_PLUS_CELL_FC,
    T_PLUS_CONTRADICTION_FC,
    T_PLUS_DOUBLE_FC,
    T_PLUS_REGION_FC,
    T_REGION_FC,
    TECH,
)

NISHIO, MULTIPLE, DYNAMIC, PLUS, NEST2, NEST3, NEST4 = 0, 1, 2, 3, 4, 5, 6
# each kind's techniques: contradiction, double, cell, region
KIND_TECH = np.array([[T_NISHIO, 0, 0, 0], [0, 0, T_CELL_FC, T_REGION_FC],
                      [T_DYN_CONTRADICTION_FC, T_DYN_DOUBLE_FC, T_DYN_CELL_FC, T_DYN_REGION_FC],
                      [T_PLUS_CONTRADICTION_FC, T_PLUS_DOUBLE_FC, T_PLUS_CELL_FC,
                       T_PLUS_REGION_FC],
                      [T_NEST2_CONTRADICTION_FC, T_NEST2_DOUBLE_FC, T_NEST2_CELL_FC,
                       T_NEST2_REGION_FC],
                      [T_NEST3_CONTRADICTION_FC, T_NEST3_DOUBLE_FC, T_NEST3_CELL_FC,
                       T_NEST3_REGION_FC],
                      [T_NEST4_CONTRADICTION_FC, T_NEST4_DOUBLE_FC, T_NEST4_CELL_FC,
                       T_NEST4_REGION_FC]], np.int64)
BASE = CHAIN_BASE[KIND_TECH].max(axis=1)  # each kind's base rating (tenths)
# serate's sort keys of the conclusions, its order among equally complex ones
DOUBLE, CELL, REGION, CONTRADICTION = 1, 5, 6, 7
# A run's record lives in a slot: slot cell * 9 + digit the run from that candidate on,
# made once a kind of chains and then read by every conclusion that needs it (its cell's,
# its houses'); OFF_SLOT the run from a candidate off.
OFF_SLOT = 81 * 9
SLOTS = OFF_SLOT + 1
NESTED_EFFORT = 100  # effort units of a nested look (about as long as 100 chain searches);
# a look for multiple chains counts ten times that
WORDS = (NODES + 63) // 64
MAXPAR = 16  # a node's parents: what implied it and up to 8 offs that made it single, or
# the up to 14 offs a (+) rule's pattern needs (plus.py)
XPOOL = 8192  # a run's parents of nested chains' offs (stored apart: they are many)
NEEDS_NESTED = 2  # W.over: the nested chains' scratch is wanted (1: a pool ran out)


# The runs' records and scratch: per slot, has a bit per node reached, order the nodes in
# the order reached, count how many, npar/par each node's parents (read only for nodes
# reached: left unset, so that an unused slot costs no memory), made (1: this kind of
# chains made the run), cx and hits what it returned (its contradiction's complexity, -1
# none, and the candidate it was on, cell * 10 + digit); g the grid as the run leaves it;
# qon/qoff the pending nodes; mk the nodes one node implies (with their parents); sl a
# list of slots; vis/stack/gen for counting ancestors; best the kept conclusion
# (complexity, sort key, technique, node, two words of info); hit the last run's
# contradiction's candidate; effort the units. n[d, h]: how many cells of house h hold
# candidate d in g (n0: in the grid as it stands), to find a house left with two places;
# gb (gb0) the same places as bitboards (board.setup's layout), read a house at a time.
# val: the step's placed cells; adv .. agen: plus.py's (chains (+)). Nested chains: xpar/xn
# each run's pool of parents, cgen/nsum the conclusion whose nested chains are counted
# (N.tmark[id] == cgen: counted) and their sum, nout/noutp a look's offs and their parents;
# over: a pool ran out (the rating would not be serate's), the budget did (effort[1]) or
# NEEDS_NESTED. A pass that collects (dynamic_hints): coll[0] set, coll[1] while a
# contradiction met is recorded, step the step's grid (what the hints' parents are gone
# from). links .. rbits: the chains' links of a grid and chains.reach's look at them
# (chains.look_at: the static chains' of a step, then multiple's of the same grid). made:
# 1 a run made, 2 counted as made (counted). The nested looks' scratch (nested.py's, N) is
# passed beside W, and None to the kinds below nested chains: a call passes every word of
# its arguments' arrays (N's are about half), and those kinds make thousands of calls a
# step.
Work = namedtuple("Work", "has order count npar par made cx hits g n0 n qon qoff mk mkn one sl "
                          "vis stack gen best hit effort val adv rc rm pp occ gp lost amark agen "
                          "xpar xn cgen nsum nout noutp over coll step gb gb0 links flags scc rtmp "
                          "radj rbits")


@compiled.helper()
def new_work(effort, nested, used):
    """The chains' records and scratch, for a kernel's whole call; with `nested`, the pool
    of nested chains' parents too (else a stand-in: chains_of asks for it through W.over).
    Not `used`: a stand-in of the same type, its records and scratch empty (tens of
    megabytes, and about 50 µs a call to make, which most calls of easy puzzles never
    read) but for the chains' links and reach's look (links_of), which the static chains
    use from the first step. The nested looks' scratch (nested.new_nested) goes beside it,
    as N."""
    pool, outs = (XPOOL, 1 << 16) if nested else (1, 1)  # (no choice inside the call)
    s, n = (SLOTS, NODES) if used else (0, 0)
    look = new_reach(NODES)  # (the static chains' too, from the first step: links_of)
    return Work(np.zeros((s, WORDS), np.int64), np.empty((s, n), np.int16),
                np.zeros(s, np.int64), np.empty((s, n), np.int8),
                np.empty((s, n, MAXPAR), np.int16), np.zeros(s, np.int8),
                np.zeros(s, np.int64), np.zeros(s, np.int64), np.zeros(81, np.int64),
                np.zeros((9, 27), np.int64), np.zeros((9, 27), np.int64),
                np.zeros(n, np.int64), np.zeros(n, np.int64),
                np.zeros((32, MAXPAR + 1), np.int64), np.zeros(32, np.int64),
                np.zeros(1, np.int64), np.zeros(9, np.int64), np.zeros(n, np.int64),
                np.zeros(n, np.int64), np.zeros(1, np.int64), np.zeros(6, np.int64),
                np.zeros(1, np.int64), effort, np.zeros(81, np.int64),
                np.zeros((n, 2 + MAXPAR), np.int64), np.zeros(81, np.int64),
                np.zeros(81, np.int64), np.zeros(MAXPAR, np.int64), np.zeros(9, np.int64),
                np.zeros((9, 27), np.int64), np.zeros(27, np.int64), np.zeros(n, np.int64),
                np.zeros(1, np.int64), np.empty((s, pool), np.int16),
                np.zeros(s, np.int64), np.zeros(1, np.int64),
                np.zeros(1, np.int64), np.empty((n, 4), np.int64),
                np.empty(outs, np.int64),
                np.zeros(1, np.int64), np.zeros(2, np.int64), np.zeros(81, np.int64),
                np.zeros((9, 3), np.int64), np.zeros((9, 3), np.int64),
                np.empty((NODES, 30), np.int16), look[0], look[1], look[2], look[3], look[4])


@compiled.helper(inline="always")
def links_of(W):
    """W's arrays of the chains' links and reach's look at them, for chains.look_at."""
    return W.links, W.flags, W.scc, W.rtmp, W.radj, W.rbits


@compiled.helper(inline="always")
def reached(W, slot, node):
    """Whether slot's run reached node."""
    u = as_index(node)  # (no test for a negative index: board.as_index)
    return (W.has[as_index(slot), u >> 6] >> (u & 63)) & 1


@compiled.helper()
def inner_work(W):
    """A second Work for the dynamic chains that W's runs nest (NEST4): its own records,
    W's effort, no nested chains of its own (its hints go to W's nested scratch, N)."""
    return new_work(W.effort, False, True)


@compiled.helper(_nrt=False)
def ancestors(W, N, slot, root, rpar, nr, gen, cap):
    """The distinct nodes behind `root` (itself included) whose parents are rpar[:nr] (nr < 0:
    those slot's run gave it); the rest of the graph is slot's. Counting stops past `cap` (a conclusion that complex is
    not wanted). The nested chains met on the way add their complexity to W.nsum, once
    each for the conclusion of W.cgen."""
    par, npar, vis, stack = W.par, W.npar, W.vis, W.stack
    vis[root] = gen
    count = 1
    top = 0
    if nr < 0:  # (root counts as it is taken from the stack)
        stack[0] = root
        top = 1
        count = 0
    for k in range(nr):
        q = rpar[k]
        if vis[q] != gen:
            vis[q] = gen
            stack[top] = q
            top += 1
    sl = as_index(slot)  # (unsigned: board.as_index)
    while top > 0:
        top -= 1
        n = as_index(stack[top])
        count += 1
        if count > cap:
            return count
        m = npar[sl, n]
        if N is not None and m < 0:  # a nested chain's off: its parents in the run's pool
            tid = par[sl, n, 3] | (np.int64(par[sl, n, 4]) << 15)
            if N.tmark[tid] != W.cgen[0]:
                N.tmark[tid] = W.cgen[0]
                W.nsum[0] += N.tcx[tid]
            at = par[sl, n, 0] | (np.int64(par[sl, n, 1]) << 15)
            for k in range(par[sl, n, 2]):
                q = W.xpar[sl, at + k]
                if vis[q] != gen:
                    vis[q] = gen
                    stack[top] = q
                    top += 1
            continue
        for k in range(m):
            u = as_index(par[sl, n, k])
            if vis[u] != gen:
                vis[u] = gen
                stack[top] = u
                top += 1
    return count


@compiled.helper(_nrt=False)
def behind(W, N, slot, node, cap):
    """The distinct nodes behind a node of slot's run, itself included (counted up to
    past cap)."""
    gen = W.gen
    gen[0] += 1
    return ancestors(W, N, slot, node, W.one, -1, gen[0], cap)


@compiled.helper(inline="always")
def add(W, slot, node, parents, n):
    """Record node in slot's run with its parents."""
    s = as_index(slot)
    u = as_index(node)
    W.order[s, as_index(W.count[s])] = u
    W.count[s] += 1
    W.has[s, u >> 6] |= np.int64(1) << (u & 63)
    W.npar[s, u] = n
    for k in range(n):
        W.par[s, u, k] = parents[k]


@compiled.helper(_nrt=False)
def add_nested(W, slot, node, at, n, tid):
    """Record a nested chain's off in slot's run: its n parents (W.noutp[at:]) go to the
    run's pool, and the node keeps where they are and the chain's pass id (tid)."""
    W.order[slot, W.count[slot]] = node
    W.count[slot] += 1
    W.has[slot, node >> 6] |= np.int64(1) << (node & 63)
    x = W.xn[slot]
    if x + n > XPOOL:
        W.over[0] = 1
        n = XPOOL - x
    W.npar[slot, node] = -1
    W.par[slot, node, 0] = x & 0x7FFF
    W.par[slot, node, 1] = x >> 15
    W.par[slot, node, 2] = n
    W.par[slot, node, 3] = tid & 0x7FFF
    W.par[slot, node, 4] = tid >> 15
    for k in range(n):
        W.xpar[slot, x + k] = W.noutp[at + k]
    W.xn[slot] = x + n


@compiled.helper(_nrt=False)
def cause_of(base, q, par, m):
    """Why on-node q (its parents par[:m], the first the off that implied it) came on in a
    run on the grid `base`: -1 its cell was left with one digit, else the house (the first
    of box, row, column) left with one place: every other place it had in base is among
    q's parents (gone by then)."""
    c = (q >> 1) // 9
    d = (q >> 1) % 9
    pc = (par[0] >> 1) // 9
    if pc == c:
        return -1
    h = -1
    for which in SERATE_HOUSES:
        h = CELL_HOUSES[pc, which]
        if CELL_HOUSES[c, which] != h:
            continue
        alone = True
        for k in range(9):
            o = HOUSE_CELLS[h, k]
            if o == c or o == pc or not (base[o] >> d) & 1:
                continue
            there = False
            for j in range(1, m):
                if par[j] == (o * 9 + d) << 1:
                    there = True
            if not there:
                alone = False
                break
        if alone:
            return h
    return h


@compiled.helper(inline="always")
def gone_by(N, step, g, q, cause, npp):
    """Add to N.pp[:npp] what on-node q's cause needs gone from g since the step's grid:
    its cell's digits (cause -1) or its digit's places in house `cause` (none: -2)."""
    if cause == -1:
        return gone_of_cell(N, step, g, (q >> 1) // 9, npp)
    if cause >= 0:
        return gone_of_house(N, step, g, cause, (q >> 1) % 9, npp)
    return npp


@compiled.helper(_nrt=False)
def walk(W, N, cand, slot, root, rpar, nr, cause, npp, key):
    """One chain of a collected hint: the nodes behind `root` in slot's run (root's parents
    rpar[:nr]; nr < 0: the run's), breadth first, as serate lists a chain. Its ons' causes
    add to N.pp[:npp] the candidates gone from the run's grid (cand) since the step's
    (W.step) that they need: serate's parents of a nested hint; the assumption's cause is
    `cause` (gone_by's). The nodes are mixed into key. Returns (nodes, npp, key)."""
    W.gen[0] += 1
    gen = W.gen[0]
    vis, queue = W.vis, W.stack
    vis[root] = gen
    head = tail = count = 0
    if nr < 0:
        queue[0] = root
        tail = 1
    else:  # a contradiction's node, not in the run
        count = 1
        key = mix(key * 31 + root)
        if root & 1:
            npp = gone_by(N, W.step, cand, root, cause_of(cand, root, rpar, nr), npp)
        for k in range(nr):
            q = rpar[k]
            if vis[q] != gen:
                vis[q] = gen
                queue[tail] = q
                tail += 1
    while head < tail:
        n = queue[head]
        head += 1
        count += 1
        key = mix(key * 31 + n)
        m = W.npar[slot, n]
        if n & 1:
            why = cause if m == 0 else cause_of(cand, n, W.par[slot, n], m)
            npp = gone_by(N, W.step, cand, n, why, npp)
        for k in range(m):
            q = W.par[slot, n, k]
            if vis[q] != gen:
                vis[q] = gen
                queue[tail] = q
                tail += 1
    return count, npp, key


@compiled.helper(_nrt=False)
def collect(W, N, cand, slot, q, qpar, nq, other, sk, cause, n):
    """Record a hint of W's pass in the nested looks' scratch N (the run's that looks, W
    its inner_work): a contradiction (sk CONTRADICTION: q, whose parents are qpar[:nq], meets
    node `other` of slot's run; the run's assumption goes) or a conclusion q that the runs
    of slot and of W.sl[:n] all reach (its complexity their chains' nodes summed; `cause`
    their assumptions' cause, gone_by's)."""
    N.kmark[NODES] += 1  # (a parent once)
    if sk == CONTRADICTION:
        cx, npp, key = walk(W, N, cand, slot, q, qpar, nq, -2, 0, sk)
        m, npp, key = walk(W, N, cand, slot, other, qpar, -1, -2, npp, key)
        cx += m
        t = W.order[slot, 0]
    else:
        cx, npp, key = walk(W, N, cand, slot, q, qpar, -1, cause, 0, sk)
        for k in range(n):
            m, npp, key = walk(W, N, cand, W.sl[k], q, qpar, -1, cause, npp, key)
            cx += m
        t = q ^ 1  # (as the assumption that would go: q's opposite)
    c = (t >> 1) // 9
    bit = 1 << ((t >> 1) % 9)
    N.rc[0] = c
    N.rm[0] = bit if t & 1 else cand[c] & ~bit  # an on goes, or an off's cell is placed
    if N.rm[0] == 0:
        return  # nothing to remove: no hint
    record(N, java_rating(BASE[DYNAMIC] / 10, cx), cx, sk, key, N.pp, npp, N.rc, N.rm, 1,
           STORED)


@compiled.helper(_nrt=False)
def dynamic_hints(W, N, val, cand, g):
    """Every hint of dynamic forcing chains (serate's, no (+)) on g, the grid a run left
    (cand: the step's), recorded in N, that run's nested looks' scratch (W: its Work's
    inner_work), in serate's order before its sort (nested.offs_of sorts them)."""
    no_hints(N)
    for c in range(81):
        W.step[c] = cand[c]
    W.coll[0] = 1
    inner_chains_of(W, N, val, g, DYNAMIC, None)  # (None: no nested chains in its runs)
    W.coll[0] = 0
    W.coll[1] = 0


@compiled.helper(_nrt=False)
def contradiction(W, N, cand, slot, q, qpar, nq, other):
    """The complexity of a run's contradiction: node q (whose parents are qpar[:nq]) meets
    node `other` of the run; the nested chains behind either counted once. In a pass that
    collects (W.coll[1]), it is recorded as a hint too (collect)."""
    if N is not None and W.coll[1]:
        collect(W, N, cand, slot, q, qpar, nq, other, CONTRADICTION, -2, 0)
    W.cgen[0] += 1
    W.nsum[0] = 0
    gen = W.gen
    gen[0] += 1
    a = ancestors(W, N, slot, q, qpar, nq, gen[0], NODES)
    return a + behind(W, N, slot, other, NODES) + W.nsum[0]


@compiled.helper(_nrt=False)
def run(W, N, cand, slot, start, dynamic, y, lvl, X):
    """One run from `start`, recorded in slot; the complexity of the contradiction it
    stopped at, or -1 when it ran out without one. With `lvl` (chains (+)), a run that has
    nothing left to follow takes out what plus.py's rules find, and goes on; past them,
    nested chains' (2: forcing chains, 3: then multiple ones, 4: dynamic ones only, which
    run in X, W's inner_work)."""
    count, g, qon, qoff, mk, mkn = W.count, W.g, W.qon, W.qoff, W.mk, W.mkn
    for w in range(WORDS):
        W.has[slot, w] = 0
    count[slot] = 0
    W.xn[slot] = 0
    for i in range(81):
        g[i] = cand[i]
    gb, gb0 = W.gb, W.gb0
    for d in range(9):  # (a whole-array copy would allocate, to guard against overlap)
        for h in range(27):
            W.n[d, h] = W.n0[d, h]
        for w in range(3):
            gb[d, w] = gb0[d, w]
    one = W.one
    add(W, slot, start, one, 0)
    hon = ton = hoff = toff = 0
    if start & 1:
        qon[ton] = start
        ton += 1
    else:
        qoff[toff] = start
        toff += 1
    while True:
        if hon == ton and hoff == toff:
            if not lvl:
                break
            W.effort[0] += 1
            found = plus(W, W.val, cand, g)
            for i in range(found):
                q = W.adv[i, 0]
                if not reached(W, slot, q):  # (its opposite on is no contradiction here)
                    add(W, slot, q, W.adv[i, 2:], W.adv[i, 1])
                    qoff[toff] = q
                    toff += 1
            if N is not None:  # (None below nested chains: numba drops this)
                first = 2 if lvl >= 4 else 0
                last = 3 if lvl >= 4 else lvl - 1
                for rule in range(first, last if found == 0 else first):  # (next: on none)
                    W.effort[0] += NESTED_EFFORT * (1 + 9 * min(rule, 1))
                    if rule == 2:
                        found = 0
                        if 0 < W.effort[1] < W.effort[0]:  # (a step of these can take minutes)
                            W.over[0] = 1
                            return -1
                        if X is not None:  # (None in dynamic_hints' runs: numba drops this)
                            dynamic_hints(X, N, W.val, cand, g)
                            found = offs_of(N, cand, g, W.n, W.nout, W.noutp)
                    else:
                        found = nested_look(N, W.val, cand, g, W.n, W.nout, W.noutp, rule)
                    for i in range(found):
                        q = W.nout[i, 0]
                        if not reached(W, slot, q):
                            add_nested(W, slot, q, W.nout[i, 2], W.nout[i, 1], W.nout[i, 3])
                            qoff[toff] = q
                            toff += 1
                    if found:
                        break
            if hoff == toff:
                break
        if hon < ton:
            p = qon[hon]
            hon += 1
            c = as_index((p >> 1) // 9)
            d = (p >> 1) % 9
            one[0] = p
            nq = 0
            if y:
                x = g[c] & ~(1 << d)
                while x:
                    e = lowbit(x)
                    x &= x - 1
                    mk[nq, 0] = (c * 9 + e) << 1
                    nq += 1
            w = WORD[c]
            box = CELL_HOUSES[c, 2]
            for part in range(5):  # the peers holding d, in serate's order: the box, the
                v = w if part < 2 else part - 2  # rest of the row, of the column (3 words)
                h = box if part == 0 else CELL_HOUSES[c, 0 if part == 1 else 1]
                x = gb[d, v] & HOUSE_BB[h, v] & ~(BIT[c] if part == 0 else HOUSE_BB[box, v])
                while x:
                    mk[nq, 0] = ((v * 27 + lowbit(x)) * 9 + d) << 1
                    nq += 1
                    x &= x - 1
            for i in range(nq):
                q = mk[i, 0]
                if reached(W, slot, q | 1):
                    W.hit[0] = (q >> 1) // 9 * 10 + (q >> 1) % 9 + 1
                    return contradiction(W, N, cand, slot, q, one, 1, q | 1)
                if not reached(W, slot, q):
                    add(W, slot, q, one, 1)
                    qoff[toff] = q
                    toff += 1
            continue
        p = qoff[hoff]
        hoff += 1
        c = as_index((p >> 1) // 9)
        d = (p >> 1) % 9
        nq = 0
        if y and POP9[g[c]] == 2:
            e = lowbit(g[c] & ~(1 << d))
            mk[nq, 0] = ((c * 9 + e) << 1) | 1
            mk[nq, 1] = p
            n = 1
            x = cand[c] & ~g[c]
            while x:
                v = lowbit(x)
                x &= x - 1
                mk[nq, 1 + n] = (c * 9 + v) << 1
                n += 1
            mkn[nq] = n
            nq += 1
        for which in SERATE_HOUSES:
            h = CELL_HOUSES[c, which]
            if W.n[d, h] != 2:  # (this cell and one other)
                continue
            other = -1
            mk[nq, 1] = p
            n = 1
            for v in range(3):  # the other, and the parents: the places this run took
                x = gb[d, v] & HOUSE_BB[h, v] & ~(BIT[c] if v == WORD[c] else 0)
                if x:
                    other = v * 27 + lowbit(x)
                x = gb0[d, v] & ~gb[d, v] & HOUSE_BB[h, v]  # (in the house's order)
                while x:
                    mk[nq, 1 + n] = ((v * 27 + lowbit(x)) * 9 + d) << 1
                    n += 1
                    x &= x - 1
            mk[nq, 0] = ((other * 9 + d) << 1) | 1
            mkn[nq] = n
            nq += 1
        if dynamic:
            g[c] &= ~(1 << d)
            gb[d, WORD[c]] &= ~BIT[c]
            for which in range(3):
                W.n[d, CELL_HOUSES[c, which]] -= 1
        for i in range(nq):
            q = mk[i, 0]
            if reached(W, slot, q ^ 1):
                W.hit[0] = (q >> 1) // 9 * 10 + (q >> 1) % 9 + 1
                return contradiction(W, N, cand, slot, q, mk[i, 1:], mkn[i], q ^ 1)
            if not reached(W, slot, q):
                add(W, slot, q, mk[i, 1:], mkn[i])
                qon[ton] = q
                ton += 1
    return -1


@compiled.helper(inline="always")
def made(W, N, cand, c, d, dynamic, y, lvl, X):
    """The run from candidate d of cell c on, in its slot (made the first time this kind of
    chains asks; its effort counted then, unless counted before: `counted`); what it
    returned, as run(), with W.hit. Inlined: most calls find the run made, and a call
    passes the hundreds of words of W's arrays (and X's)."""
    slot = c * 9 + d
    if W.made[slot] != 1:
        counted(W, slot)
        W.cx[slot] = run(W, N, cand, slot, ((slot) << 1) | 1, dynamic, y, lvl, X)
        W.hits[slot] = W.hit[0]
        W.made[slot] = 1
    W.hit[0] = W.hits[slot]
    return W.cx[slot]


@compiled.helper(_nrt=False)
def counted(W, slot):
    """Count the run of slot as made (its effort), made or not (multiple counts runs it
    does not make: the same effort as making them)."""
    if W.made[slot] == 0:
        W.made[slot] = 2
        W.effort[0] += 1


@compiled.helper(_nrt=False)
def consider(W, cx, key, tech, node, cand, info0, info3):
    """Keep this conclusion (node on: place it; off: remove it) when it goes before the one
    kept: less complex, or as complex and of a kind sorted first."""
    if cx > W.best[0] or (cx == W.best[0] and key >= W.best[1]):
        return
    c = (node >> 1) // 9
    d = (node >> 1) % 9
    if (node & 1) and cand[c] == (1 << d):
        return  # nothing to remove: serate does not count it
    W.best[0] = cx
    W.best[1] = key
    W.best[2] = tech
    W.best[3] = node
    W.best[4] = info0
    W.best[5] = info3


@compiled.helper(_nrt=False)
def common(W, N, cand, first, n, key, tech, info0, info3):
    """What the run in slot `first` and the runs in the slots W.sl[:n] all imply, in
    first's order (ons, then offs), each considered with the nodes behind it summed over
    the runs (in a pass that collects, each recorded: collect)."""
    for on in (1, 0):
        for i in range(W.count[first]):
            q = W.order[first, i]
            if (q & 1) != on:
                continue
            everywhere = True
            for k in range(n):
                if not reached(W, W.sl[k], q):
                    everywhere = False
                    break
            if not everywhere:
                continue
            if N is not None and W.coll[0]:
                cause = -1 if key == CELL else (info3 if key == REGION else -2)
                collect(W, N, cand, first, q, W.one, -1, q, key, cause, n)
                continue
            W.cgen[0] += 1
            W.nsum[0] = 0
            cx = behind(W, N, first, q, W.best[0])
            for k in range(n):
                if cx > W.best[0]:
                    break
                cx += behind(W, N, W.sl[k], q, W.best[0] - cx)
            consider(W, cx + W.nsum[0], key, tech, q, cand, info0, info3)


@compiled.helper(inline="always")
def other_places(W, cand, h, c, d):
    """The slots of digit d's places in house h but cell c, into W.sl; how many."""
    n = 0
    for k in range(9):
        o = HOUSE_CELLS[h, k]
        if o != c and (cand[o] >> d) & 1:
            W.sl[n] = o * 9 + d
            n += 1
    return n


@compiled.helper(inline="always")
def other_digits(W, cand, c, first):
    """The slots of cell c's digits but `first`, into W.sl; how many."""
    n = 0
    x = cand[c] & ~(1 << first)
    while x:
        W.sl[n] = c * 9 + lowbit(x)
        x &= x - 1
        n += 1
    return n


@compiled.helper(_nrt=False)
def houses(W, N, val, cand, c, d, mode, X):
    """The region chains of digit d in the houses where cell c is its first place."""
    dynamic = mode != MULTIPLE
    lvl = mode - DYNAMIC if mode > DYNAMIC else 0
    tech = KIND_TECH[mode, 3]
    for which in SERATE_HOUSES:
        h = CELL_HOUSES[c, which]
        if not first_place(cand, h, c, d):
            continue
        n = other_places(W, cand, h, c, d)
        for k in range(n):
            made(W, N, cand, W.sl[k] // 9, d, dynamic, True, lvl, X)
        common(W, N, cand, c * 9 + d, n, REGION, tech, c * 10 + d + 1, h)


@compiled.helper(_nrt=False)
def meet(W, first, n, words):
    """Whether what the runs from the ons of slot first and of W.sl[:n] can reach has a node
    in common (chains.reach's bits, in W)."""
    bits = W.rbits
    meets = False
    for w in range(words):
        common_w = bits[W.scc[(first << 1) | 1], w]
        for k in range(n):
            common_w &= bits[W.scc[(W.sl[k] << 1) | 1], w]
        if common_w:
            meets = True
            break
    return meets


@compiled.helper(_nrt=False)
def multiple(W, N, val, cand):
    """Cell and region forcing chains on the grid as it stands, as chains_of would find them,
    into W.best. Their runs change no grid, so they are breadth first searches of the
    chains' links (chains.build_links's, both kinds) and reach at most what chains.reach
    finds from their starts: a cell's or region's runs can imply something in common only
    where those meet, and only those runs are made (the others count as made: the same
    effort as chains_of's)."""
    v = look_at(cand, W.n0, W.links, W.flags, W.scc, W.rtmp, W.radj, W.rbits)
    words = (v + 63) >> 6
    for c in range(81):
        if val[c] != 0 or POP9[cand[c]] < 3:
            continue
        x = cand[c]
        while x:
            d = lowbit(x)
            x &= x - 1
            counted(W, c * 9 + d)
            for which in SERATE_HOUSES:  # (houses, for this kind)
                h = CELL_HOUSES[c, which]
                if not first_place(cand, h, c, d):
                    continue
                n = other_places(W, cand, h, c, d)
                for k in range(n):
                    counted(W, W.sl[k])
                if meet(W, c * 9 + d, n, words):
                    made(W, N, cand, c, d, False, True, 0, None)
                    for k in range(n):
                        made(W, N, cand, W.sl[k] // 9, d, False, True, 0, None)
                    common(W, N, cand, c * 9 + d, n, REGION, KIND_TECH[MULTIPLE, 3],
                           c * 10 + d + 1, h)
        first = lowbit(cand[c])
        n = other_digits(W, cand, c, first)
        if meet(W, c * 9 + first, n, words):
            made(W, N, cand, c, first, False, True, 0, None)
            for k in range(n):
                made(W, N, cand, c, W.sl[k] % 9, False, True, 0, None)
            common(W, N, cand, c * 9 + first, n, CELL, KIND_TECH[MULTIPLE, 2], c * 10, 0)


@compiled.helper(_nrt=False)
def chains_of(W, N, val, cand, mode, X):
    """The least complex conclusion of this kind of chains, into W.best (in a pass that
    collects, W.coll[0], every conclusion recorded in N: dynamic_hints)."""
    dynamic = mode != MULTIPLE
    y = mode != NISHIO
    lvl = mode - DYNAMIC if mode > DYNAMIC else 0
    W.best[0] = 1 << 40
    W.best[1] = 0
    W.made[:] = 0  # the runs of another kind (or grid) are not this one's
    if lvl >= 2:
        if W.xpar.shape[1] < XPOOL:  # (stand-ins: the caller makes the real ones, rates again)
            W.over[0] = NEEDS_NESTED
            return False
        if N is not None:  # (always, at these kinds: numba drops this test)
            reset_pass(N)
    for c in range(81):
        W.val[c] = val[c]
    bitboards(cand, W.gb0)
    counts(W.gb0, W.n0)
    if mode == MULTIPLE and not W.coll[0]:
        multiple(W, N, val, cand)
        return W.best[0] < (1 << 40)
    for c in range(81):
        if val[c] != 0:
            continue
        card = POP9[cand[c]]
        if card < 2 or (mode == MULTIPLE and card < 3):
            continue
        first = -1
        x = cand[c]
        while x:
            d = lowbit(x)
            x &= x - 1
            if first < 0:
                first = d
            on = ((c * 9 + d) << 1) | 1
            W.coll[1] = W.coll[0]  # (collecting: record the contradictions met from here)
            if W.coll[0] and W.made[c * 9 + d] and W.cx[c * 9 + d] >= 0:
                run(W, N, cand, OFF_SLOT, on, dynamic, y, lvl, X)  # (made before: met again)
            cx = made(W, N, cand, c, d, dynamic, y, lvl, X)
            if mode == MULTIPLE:
                houses(W, N, val, cand, c, d, mode, X)
                continue
            tech = KIND_TECH[mode, 0]
            if cx >= 0:
                consider(W, cx, CONTRADICTION, tech, on ^ 1, cand, c * 10 + d + 1, W.hit[0])
            W.effort[0] += 1
            cx = run(W, N, cand, OFF_SLOT, on ^ 1, dynamic, y, lvl, X)
            W.coll[1] = 0
            if cx >= 0:
                consider(W, cx, CONTRADICTION, tech, on, cand, c * 10 + d + 1, W.hit[0])
            if mode == NISHIO:
                continue
            if card >= 3:  # (a bivalue cell's doubles are its cell chains)
                W.sl[0] = OFF_SLOT
                common(W, N, cand, c * 9 + d, 1, DOUBLE, KIND_TECH[mode, 1], c * 10 + d + 1, 0)
            houses(W, N, val, cand, c, d, mode, X)
        if mode == NISHIO:
            continue
        n = other_digits(W, cand, c, first)
        common(W, N, cand, c * 9 + first, n, CELL, KIND_TECH[mode, 2], c * 10, 0)
    return W.best[0] < (1 << 40)


def _again(names):
    """The functions `names` of this module compiled a second time (with their own
    options), as other numba functions calling each other: numba takes any call of a
    function it is compiling for recursion, whatever the arguments, and a run of NEST4
    (run) reaches dynamic_hints, whose pass runs chains_of, made, houses and run again. The
    copies are called with X None, as the kinds below NEST4 call them too (assumptions)."""
    import types

    env = dict(globals())
    made_again = {}
    for name in names:
        options = getattr(env[name], "helper_options", {})  # (none beside the compiled module)
        fn = getattr(env[name], "py_func", env[name])
        copy = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        copy.__qualname__ = f"inner_{fn.__qualname__}"
        made_again[name] = compiled.helper(**options)(copy)
    env.update(made_again)
    return made_again["chains_of"]


@compiled.helper(_nrt=False)
def offer_best(W, cand, H, mode):
    """Write the kept conclusion into H as the step."""
    cx = W.best[0]
    node = W.best[3]
    c = (node >> 1) // 9
    d = (node >> 1) % 9
    H[TECH] = W.best[2]
    H[RATING] = BASE[mode] + length_add(cx)
    H[PCELL] = -1
    H[PDIG] = 0
    ne = 0
    if node & 1:
        H[PCELL] = c
        H[PDIG] = d + 1
    else:
        H[ELIMS] = c * 10 + d + 1
        ne = 1
    H[NELIM] = ne
    # the step's text (rate/__init__.py): where it starts (cell * 10 + digit, or cell * 10
    # for a cell's), its kind (sort key), its complexity, and the house of a region's or the
    # candidate a contradiction is on
    H[INFO] = W.best[4]
    H[INFO + 1] = W.best[1]
    H[INFO + 2] = cx
    H[INFO + 3] = W.best[5]


@compiled.helper(_nrt=False)
def assumptions(val, cand, H, W, N, X):
    """The step of the first of Nishio, multiple and dynamic chains that has one, in H;
    False when none does. W: new_work's, reused from step to step; N the nested looks'
    scratch; X W's inner_work, for the dynamic chains nested in NEST4's runs (W itself
    while W's and N's nested scratch are stand-ins: chains_of asks for the real ones
    before any nested run)."""
    # Each kind is given only what its runs read: N from nested chains on, X at NEST4 (the
    # others' calls go to the copies compiled without X; a call passes every word of its
    # arguments' arrays, and a step makes thousands).
    for mode in (NISHIO, MULTIPLE, DYNAMIC, PLUS):
        if inner_chains_of(W, None, val, cand, mode, None):
            offer_best(W, cand, H, mode)
            return True
    for mode in (NEST2, NEST3):
        if inner_chains_of(W, N, val, cand, mode, None):
            offer_best(W, cand, H, mode)
            return True
    if chains_of(W, N, val, cand, NEST4, X):
        offer_best(W, cand, H, NEST4)
        return True
    return False


inner_chains_of = _again(("run", "made", "houses", "multiple", "chains_of"))
