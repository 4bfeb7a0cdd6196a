"""The chains a run of nested chains looks for on its own grid: serate's Dynamic Forcing
Chains (+ Forcing Chains), 9.5 and up, and (+ Multiple Forcing Chains), 10.0 and up.

A run of these chains (dynamic.py) that has nothing left to follow and finds nothing by
plus.py's rules looks at the grid as the run has left it (g), first (`look`) for every
cycle and forcing chain of chains.py's kinds (X links only, Y only, both), each a *hint*:

    cycle           from each candidate on, every loop back to it (chains.loops) that
                    removes something (chains.py's rule)
    forcing chain   from each candidate on, and off, the first way to its own negation
                    (breadth first): the candidate goes, or is placed (its cell's other
                    digits go)

in serate's order: the kinds X, Y, XY; cells in order, digits in order; a candidate's
cycles as met, then its chains from on and from off. Then, for (+ Multiple Forcing Chains)
and only when that look gave nothing (`multiple_look`), every cell and region forcing
chain on g as it is (static runs, as dynamic.py's multiple chains: cells of three digits
or more, each digit's regions where the cell is its first place, then the cell's own; a
hint's complexity the nodes of its chains, summed). A look's hints are sorted, stably, by
rating (as serate's double: the base plus 0.1 added once per length step, so that 6.6 +
0.1 goes before 6.5 + 0.2), then complexity, then kind (X, Y, XY, cell, region); of hints
removing the same candidates only the first is kept. A hint counts only when the
run's offs made it: its parents are the candidates of the step's grid (cand) gone from g
that its links need,

    an on reached from a bivalue cell     the cell's other digits gone
    an on reached from a house's other    the digit's places gone from that house (the
    place                                 first of box, row, column with two left)
    (cycles, the loop read backwards:)
    an off met from an on of its cell     the cell's other digits gone
    an off met from a peer                the digit's places gone from the first house
                                          (box, row, column) the two share
    (cell and region chains:)
    each chain's assumption               its cell's other digits gone (a cell's), the
                                          digit's places gone from the region (a region's)

Each of its removals becomes an off of the run with those parents, carrying the hint (its
complexity is added once to any conclusion that needs it: `key` tells equal chains
apart). The removals come as serate's HashMap lists them (plus.emit's order).

dynamic.py's (+ Dynamic Forcing Chains), 10.5 and up, records its own hints here (every
dynamic forcing chain on g, each with its parents worked out as it is found: kind
STORED), and they become offs the same way (offs_of).

Nodes are chains.py's: (cell * 9 + digit) * 2, + 1 when on.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import (
    CELL_HOUSES,
    HOUSE_CELLS,
    PEERS,
    PEERS_IN_ORDER,
    POP9,
    SERATE_HOUSES,
    first_place,
    java_order,
    lowbit,
)
from pipeline.sudoku.rate.chains import (
    NEGATES,
    NODES,
    ON_CYCLE,
    bfs,
    length_add,
    look_at,
    loops,
    new_reach,
    serate_added,
)

MAXH = 1 << 14  # hints of one look
POOL = 1 << 20  # their paths' nodes
TABLE = 1 << 17  # the distinct hints of a kind of chains' pass (nested ids)
WORDS = (NODES + 63) // 64
STORED = -2  # record's kind of a hint that keeps its parents, not its path

# Per look: links (chains.look_at's, of g), the searches' scratch (parent .. anc),
# hints (diff, cx, sk, key, rh: removal set's hash; hk: record's kind; po/pn their path in
# path[]; ro/rn their removals in rem[] as cell << 9 | digits), sort/keep scratch (kept,
# tmp, hseen/hmark, emark), kmark the parents met; the static runs of multiple chains (shas
# .. sqoff: per slot cell * 9 + digit the nodes reached, their order and parent, made in
# look sgen), sl a list of slots, seg a hint's chains; per pass: the distinct hints'
# complexities (tcx) and keys (tkey, index tix), tcount, tmark (dynamic.py's: tmark[id] ==
# W.cgen, counted for that conclusion); over: a pool ran out.
Nested = namedtuple("Nested", "links parent depth queue seen qn qp qd closers anc forw bck "
                              "diff cx sk key rh po pn ro rn path rem nh np nr "
                              "kept kmark tcx tkey tix tcount over pp rc rm tmp hseen hmark emark "
                              "hk seg shas sorder scount spar smade sgen sqon sqoff sl tmark "
                              "flags scc rtmp radj rbits")


@compiled.helper()
def new_nested(big):
    """The nested looks' scratch, or (big False) a stand-in of one-element arrays of the
    same types: a kernel's call starts with that, and makes the real one only when a
    puzzle needs nested chains (path.rate_all), for the scratch is megabytes. Of what is
    read before written, the generation marks are zeroed and the pass's table emptied."""
    e16, e32, e64 = np.int16, np.int32, np.int64
    nodes, maxh, pool, table, slots, closers, seg = NODES, MAXH, POOL, TABLE, 729, 4096, 1 << 13
    if not big:  # (no choice inside the call below: numba cannot compile that)
        nodes, maxh, pool, table, slots, closers, seg = 1, 1, 1, 1, 1, 1, 1
    look = new_reach(nodes)
    N = Nested(np.empty((nodes, 30), e64), np.empty(nodes, e64), np.empty(nodes, e64),
               np.empty(nodes, e64), np.zeros(nodes + 1, e64), np.empty(nodes * 16, e32),
               np.empty(nodes * 16, e32), np.empty(nodes * 16, e32),
               np.empty(closers, e64), np.zeros(nodes + 1, e64), np.empty(81, e64),
               np.empty(81, e64),
               np.empty(maxh, np.float64), np.empty(maxh, e64), np.empty(maxh, e64),
               np.empty(maxh, e64), np.empty(maxh, e64), np.empty(maxh, e64),
               np.empty(maxh, e64), np.empty(maxh, e64), np.empty(maxh, e64),
               np.empty(pool, e16), np.empty(pool, e32), np.zeros(1, e64), np.zeros(1, e64),
               np.zeros(1, e64), np.empty(maxh, e64), np.zeros(nodes + 1, e64),
               np.empty(table, e64), np.empty(table, e64), np.empty(2 * table, e64),
               np.zeros(1, e64), np.zeros(1, e64), np.empty(nodes, e64), np.empty(81, e64),
               np.empty(81, e64), np.empty(maxh, e64), np.empty(2 * maxh, e64),
               np.zeros(2 * maxh + 1, e64), np.zeros(nodes + 1, e64), np.empty(maxh, e64),
               np.empty(seg, e64), np.empty((slots, WORDS), e64),
               np.empty((slots, nodes), e16), np.zeros(slots, e64),
               np.empty((slots, nodes), e16), np.zeros(slots, e64), np.zeros(1, e64),
               np.empty(nodes, e64), np.empty(nodes, e64), np.empty(9, e64),
               np.empty(table, e64), look[0], look[1], look[2], look[3], look[4])
    reset_pass(N)
    return N


@compiled.helper(inline="always")
def mix(x):
    """A 64-bit mix (splitmix64's finaliser)."""
    x = (x ^ (x >> 30)) * -4658895280553007687
    x = (x ^ (x >> 27)) * -7723592293110705685
    return x ^ (x >> 31)


@compiled.helper()
def java_rating(base, nodes):
    """Serate's rating of a chain of `nodes` nodes as its double: base, plus 0.1 added once
    per length step (chains.length_add's steps)."""
    return base + serate_added(length_add(nodes))


@compiled.helper()
def path_key(sk, nodes, nn):
    """A hint's key (record's) from its kind and path."""
    key = sk
    for k in range(nn):
        key = mix(key * 31 + nodes[k])
    return key


@compiled.helper()
def record(N, diff, cx, sk, key, nodes, nn, rc, rm, nr, kind):
    """A hint: its rating, complexity, kind, key (equal for equal chains: path_key), path
    and removals (cells rc[:nr] with digits rm[:nr], in the order serate's map got them).
    kind -1: a cycle or forcing chain, its path nodes[:nn] (target first); 1 a cell's, 2 +
    h a region's (house h) chains, nodes[:nn] their paths one after the other, each its
    length and then its nodes; STORED (a dynamic chain's, dynamic.py) its parents."""
    i = N.nh[0]
    if i >= MAXH or N.np[0] + nn > POOL or N.nr[0] + nr > POOL:
        N.over[0] = 1
        return
    N.hk[i] = kind
    N.diff[i] = diff
    N.cx[i] = cx
    N.sk[i] = sk
    N.po[i] = N.np[0]
    N.pn[i] = nn
    for k in range(nn):
        N.path[N.np[0] + k] = nodes[k]
    N.key[i] = key
    N.np[0] += nn
    N.ro[i] = N.nr[0]
    N.rn[i] = nr
    rh = 0
    for k in range(nr):
        v = (rc[k] << 9) | rm[k]
        N.rem[N.nr[0] + k] = v
        rh += mix(v + 1)  # (order-free: a set's hash)
    N.rh[i] = rh
    N.nr[0] += nr
    N.nh[0] = i + 1


@compiled.helper()
def cycle_removals(N, g, nodes, nn, rc, rm):
    """What the cycle nodes[:nn] (dstOn first, the start again last) removes, by serate's
    rule, into rc/rm in the order its map gets them; their number."""
    forw, bck = N.forw, N.bck
    for c in range(81):
        forw[c] = 0
        bck[c] = 0  # bits 0-8 the digits seen off, bit 9: the cell is on the loop
    for k in range(nn):
        bck[(nodes[k] >> 1) // 9] |= 1 << 9
    # first the offs (an on's cancellations count only where an off's also are)
    for k in range(nn - 1):
        n = nodes[k]
        if n & 1:
            continue
        c = (n >> 1) // 9
        bit = 1 << ((n >> 1) % 9)
        for j in range(20):
            p = PEERS[c, j]
            if (bck[p] >> 9) & 1 == 0 and g[p] & bit:
                bck[p] |= bit
    nr = 0
    for k in range(nn - 1):  # the ons in chain order, peers in order: the first met leads
        n = nodes[k]
        if not n & 1:
            continue
        c = (n >> 1) // 9
        bit = 1 << ((n >> 1) % 9)
        for j in range(20):
            p = PEERS[c, j]
            if (bck[p] >> 9) & 1 == 0 and g[p] & bit & bck[p] and not forw[p] & bit:
                forw[p] |= bit
                placed = False
                for i in range(nr):
                    if rc[i] == p:
                        rm[i] |= bit
                        placed = True
                if not placed:
                    rc[nr] = p
                    rm[nr] = bit
                    nr += 1
    return nr


@compiled.helper(inline="always")
def no_hints(N):
    """Forget the hints of the last look (record's pools start again)."""
    N.nh[0] = 0
    N.np[0] = 0
    N.nr[0] = 0


@compiled.helper()
def look(N, val, cand, g, n):
    """Every hint on the run's grid g, recorded in N (serate's order, before sorting); the
    searches that chains.reach shows to find nothing are not made."""
    no_hints(N)
    links = N.links
    nodes = N.pp
    rc = N.rc
    rm = N.rm
    # which searches can find anything, for each kind (as chains.forcing_chains's)
    flags = N.flags
    scc = N.scc
    look_at(g, n, links, flags, scc, N.rtmp, N.radj, N.rbits)
    for kind in (1, 0, 2):  # X links only, Y only, both
        use_x = kind >= 1
        use_y = kind != 1
        sk = 4 if kind == 2 else (3 if kind == 0 else 2)
        for c in range(81):
            if val[c] != 0 or POP9[g[c]] < 2:
                continue
            if not use_x and POP9[g[c]] > 2:
                continue
            x = g[c]
            while x:
                d = lowbit(x)
                x &= x - 1
                start = ((c * 9 + d) << 1) | 1
                N.closers[0] = 0
                if flags[start] & ON_CYCLE and (loops(
                        links, start, use_x, use_y, NODES, N.qn, N.qp, N.qd, N.seen, N.closers,
                        N.anc, scc) < 0 or N.closers[0] + 2 >= N.closers.shape[0]):
                    N.over[0] = 1  # (a loop not seen: the hints would not be serate's)
                for k in range(1, N.closers[0] + 1):
                    e = N.closers[k]
                    nodes[0] = start
                    nn = 1
                    while e >= 0:
                        nodes[nn] = N.qn[e]
                        nn += 1
                        e = N.qp[e]
                    nr = cycle_removals(N, g, nodes, nn, rc, rm)
                    if nr:
                        cx = nn - 1
                        record(N, java_rating(7.0 if kind == 2 else 6.5, cx), cx, sk,
                               path_key(sk, nodes, nn), nodes, nn, rc, rm, nr, -1)
                if not use_x:
                    continue
                for on in (1, 0):
                    s = (start - 1) | on
                    target = s ^ 1
                    if not flags[s] & NEGATES:
                        continue
                    bfs(links, s, use_x, use_y, NODES, target, N.parent, N.depth, N.queue,
                        N.seen)
                    if N.seen[target] != N.seen[NODES]:
                        continue
                    nn = 0
                    e = target
                    while e >= 0:
                        nodes[nn] = e
                        nn += 1
                        e = N.parent[e]
                    rc[0] = c
                    rm[0] = (1 << d) if on else (g[c] & ~(1 << d))
                    record(N, java_rating(7.0 if kind == 2 else 6.6, nn), nn, sk,
                           path_key(sk, nodes, nn), nodes, nn, rc, rm, 1, -1)


@compiled.helper(inline="always")
def s_reached(N, slot, node):
    return (N.shas[slot, node >> 6] >> (node & 63)) & 1


@compiled.helper(inline="always")
def s_add(N, slot, node, parent):
    N.sorder[slot, N.scount[slot]] = node
    N.scount[slot] += 1
    N.shas[slot, node >> 6] |= np.int64(1) << (node & 63)
    N.spar[slot, node] = parent


@compiled.helper()
def static_run(N, g, n, c0, d0):
    """The run from candidate d0 of cell c0 on, on the grid g as it is (serate's multiple
    forcing chains: every pending on before the next off, Y and X links, stopped at its
    first contradiction), in slot c0 * 9 + d0 unless made in this look; the slot."""
    slot = c0 * 9 + d0
    if N.smade[slot] == N.sgen[0]:
        return slot
    N.smade[slot] = N.sgen[0]
    for w in range(WORDS):
        N.shas[slot, w] = 0
    N.scount[slot] = 0
    start = (slot << 1) | 1
    s_add(N, slot, start, -1)
    qon, qoff = N.sqon, N.sqoff
    qon[0] = start
    hon = hoff = toff = 0
    ton = 1
    while hon < ton or hoff < toff:
        if hon < ton:
            p = qon[hon]
            hon += 1
            c = (p >> 1) // 9
            d = (p >> 1) % 9
            x = g[c] & ~(1 << d)
            while x:  # the cell's other digits, then the digit's peers (box, row, column)
                q = (c * 9 + lowbit(x)) << 1
                x &= x - 1
                if s_reached(N, slot, q | 1):
                    return slot
                if not s_reached(N, slot, q):
                    s_add(N, slot, q, p)
                    qoff[toff] = q
                    toff += 1
            for k in range(20):
                o = PEERS_IN_ORDER[c, k]
                if (g[o] >> d) & 1:
                    q = (o * 9 + d) << 1
                    if s_reached(N, slot, q | 1):
                        return slot
                    if not s_reached(N, slot, q):
                        s_add(N, slot, q, p)
                        qoff[toff] = q
                        toff += 1
            continue
        p = qoff[hoff]
        hoff += 1
        c = (p >> 1) // 9
        d = (p >> 1) % 9
        if POP9[g[c]] == 2:  # a bivalue cell's other digit
            q = (((c * 9 + lowbit(g[c] & ~(1 << d))) << 1) | 1)
            if s_reached(N, slot, q ^ 1):
                return slot
            if not s_reached(N, slot, q):
                s_add(N, slot, q, p)
                qon[ton] = q
                ton += 1
        for which in SERATE_HOUSES:  # a house's other place (box, row, column)
            h = CELL_HOUSES[c, which]
            if n[d, h] != 2:
                continue
            for k in range(9):
                o = HOUSE_CELLS[h, k]
                if o != c and (g[o] >> d) & 1:
                    q = ((o * 9 + d) << 1) | 1
                    if s_reached(N, slot, q ^ 1):
                        return slot
                    if not s_reached(N, slot, q):
                        s_add(N, slot, q, p)
                        qon[ton] = q
                        ton += 1
    return slot


@compiled.helper()
def s_behind(N, slot, node, seg, at):
    """The chain to node in slot's run (node first, the assumption last) written to
    seg[at + 1:] after its length at seg[at]; the length."""
    nn = 0
    e = node
    while e >= 0:
        seg[at + 1 + nn] = e
        nn += 1
        e = N.spar[slot, e]
    seg[at] = nn
    return nn


@compiled.helper()
def common_hints(N, g, first, n, kind, rc, rm):
    """A hint for each node the run in slot `first` and the runs in slots N.sl[:n] all
    reach, in first's order (ons, then offs): a cell's (kind 1) or a region's (2 + h)
    forcing chains, their complexity the chains' nodes summed."""
    seg = N.seg
    for on in (1, 0):
        for i in range(N.scount[first]):
            q = N.sorder[first, i]
            if (q & 1) != on:
                continue
            everywhere = True
            for k in range(n):
                if not s_reached(N, N.sl[k], q):
                    everywhere = False
                    break
            if not everywhere:
                continue
            c = (q >> 1) // 9
            bit = 1 << ((q >> 1) % 9)
            rc[0] = c
            rm[0] = (g[c] & ~bit) if on else bit
            if rm[0] == 0:
                continue  # nothing to remove: not worth a hint
            at = 0
            cx = 0
            for k in range(-1, n):
                slot = first if k < 0 else N.sl[k]
                if at + NODES + 1 > seg.shape[0]:
                    N.over[0] = 1
                    return
                nn = s_behind(N, slot, q, seg, at)
                cx += nn
                at += nn + 1
            sk = 5 if kind == 1 else 6
            record(N, java_rating(8.0, cx), cx, sk, path_key(sk, seg, at), seg, at, rc, rm, 1,
                   kind)


@compiled.helper()
def multiple_look(N, val, cand, g, n):
    """Every cell and region forcing chain (serate's multiple forcing chains, the grid as
    it is) on the run's grid g, recorded in N (serate's order, before sorting): cells of
    three digits or more; each digit's regions where the cell is its first place, then the
    cell's own."""
    no_hints(N)
    N.sgen[0] += 1
    rc = N.rc
    rm = N.rm
    for c in range(81):
        if val[c] != 0 or POP9[g[c]] < 3:
            continue
        first = -1
        x = g[c]
        while x:
            d = lowbit(x)
            x &= x - 1
            if first < 0:
                first = d
            static_run(N, g, n, c, d)
            for which in SERATE_HOUSES:
                h = CELL_HOUSES[c, which]
                if not first_place(g, h, c, d):
                    continue
                m = 0
                for k in range(9):
                    o = HOUSE_CELLS[h, k]
                    if o != c and (g[o] >> d) & 1:
                        N.sl[m] = static_run(N, g, n, o, d)
                        m += 1
                common_hints(N, g, c * 9 + d, m, 2 + h, rc, rm)
        m = 0
        x = g[c] & ~(1 << first)
        while x:
            N.sl[m] = static_run(N, g, n, c, lowbit(x))
            x &= x - 1
            m += 1
        common_hints(N, g, c * 9 + first, m, 1, rc, rm)


@compiled.helper(inline="always")
def gone_of_cell(N, cand, g, c, npp):
    """Add cell c's digits gone from g to the parents N.pp[:npp] (unless there)."""
    x = cand[c] & ~g[c]
    while x:
        d = lowbit(x)
        x &= x - 1
        npp = add_parent(N, npp, (c * 9 + d) << 1)
    return npp


@compiled.helper(inline="always")
def gone_of_house(N, cand, g, h, d, npp):
    """Add digit d's places gone from g in house h to the parents."""
    for k in range(9):
        o = HOUSE_CELLS[h, k]
        if (cand[o] >> d) & 1 and not (g[o] >> d) & 1:
            npp = add_parent(N, npp, (o * 9 + d) << 1)
    return npp


@compiled.helper(inline="always")
def add_parent(N, npp, node):
    if N.kmark[node] == N.kmark[NODES]:
        return npp
    N.kmark[node] = N.kmark[NODES]
    N.pp[npp] = node
    return npp + 1


@compiled.helper()
def parents_of(N, cand, g, n, i):
    """Hint i's parents (the offs of the run its links need) into N.pp; their number."""
    N.kmark[NODES] += 1  # (a parent once)
    if N.hk[i] == STORED:  # (distinct already)
        for k in range(N.pn[i]):
            N.pp[k] = N.path[N.po[i] + k]
        return N.pn[i]
    if N.hk[i] < 0:
        return path_parents(N, cand, g, n, N.po[i], N.pn[i], 0)
    npp = 0
    at = N.po[i]
    end = at + N.pn[i]
    while at < end:  # each chain of a cell's or region's: its assumption's cause too
        nn = N.path[at]
        npp = path_parents(N, cand, g, n, at + 1, nn, npp)
        root = N.path[at + nn]
        if N.hk[i] == 1:
            npp = gone_of_cell(N, cand, g, (root >> 1) // 9, npp)
        else:
            npp = gone_of_house(N, cand, g, N.hk[i] - 2, (root >> 1) % 9, npp)
        at += nn + 1
    return npp


@compiled.helper()
def path_parents(N, cand, g, n, po, nn, npp):
    """Add the parents of the chain N.path[po:po + nn] (target first, its assumption
    last) to N.pp[:npp]; their number now."""
    cycle = N.path[po] == N.path[po + nn - 1]
    for k in range(nn - 1):  # the root (an assumption) has no cause
        q = N.path[po + k]
        p = N.path[po + k + 1]  # what implied q
        qc = (q >> 1) // 9
        pc = (p >> 1) // 9
        d = (q >> 1) % 9
        # an on, from an off: of a bivalue cell, or of a house's other place (the house
        # left with two); read backwards, an off of a loop is an on with such a cause too
        if not (q & 1 or cycle):
            continue
        if qc == pc:
            npp = gone_of_cell(N, cand, g, qc, npp)
            continue
        for t in SERATE_HOUSES:
            h = CELL_HOUSES[pc, t]
            if CELL_HOUSES[qc, t] == h and (n[d, h] == 2 or not q & 1):
                npp = gone_of_house(N, cand, g, h, d, npp)
                break
    return npp


@compiled.helper()
def table_id(N, key, cx):
    """The pass's id of the hint of this key (made the first time it is met)."""
    mask = N.tix.shape[0] - 1
    j = key & mask
    while N.tix[j] >= 0:
        t = N.tix[j]
        if N.tkey[t] == key:
            return t
        j = (j + 1) & mask
    t = N.tcount[0]
    if t >= N.tcx.shape[0]:
        N.over[0] = 1
        return 0
    N.tcount[0] = t + 1
    N.tkey[t] = key
    N.tcx[t] = cx
    N.tmark[t] = 0  # (counted for no conclusion yet: conclusions' marks start at 1)
    N.tix[j] = t
    return t


@compiled.helper()
def reset_pass(N):
    """Forget the distinct hints of the last pass."""
    N.tix[:] = -1
    N.tcount[0] = 0


@compiled.helper(inline="always")
def before(N, i, j):
    """Hint i goes before hint j in serate's sort (rating, complexity, kind)."""
    if N.diff[i] != N.diff[j]:
        return N.diff[i] < N.diff[j]
    if N.cx[i] != N.cx[j]:
        return N.cx[i] < N.cx[j]
    return N.sk[i] < N.sk[j]


@compiled.helper()
def sort_hints(N, nh):
    """N.kept[:nh]: the hints in serate's order (a stable merge sort)."""
    a = N.kept
    b = N.tmp
    for i in range(nh):
        a[i] = i
    width = 1
    while width < nh:
        lo = 0
        while lo < nh:
            mid = min(lo + width, nh)
            hi = min(lo + 2 * width, nh)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if before(N, a[j], a[i]):  # (equal ones keep their order)
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
            lo = hi
        for i in range(nh):
            a[i] = b[i]
        width *= 2


@compiled.helper()
def nested_look(N, val, cand, g, n, out, outp, rule):
    """The offs the forcing chains (rule 0) or the multiple forcing chains (rule 1) on g
    give the run (offs_of)."""
    if rule == 0:
        look(N, val, cand, g, n)
    else:
        multiple_look(N, val, cand, g, n)
    return offs_of(N, cand, g, n, out, outp)


@compiled.helper()
def offs_of(N, cand, g, n, out, outp):
    """The offs the hints recorded in N give the run: rows of out (node, parents' count,
    offset of the parents in outp, pass id of the hint), as serate adds them (a node of an
    earlier row is not repeated); their number."""
    nh = N.nh[0]
    if nh == 0:
        return 0
    sort_hints(N, nh)
    # of hints removing the same candidates, the first (serate's set of hints)
    size = N.hseen.shape[0]
    N.hmark[size] += 1
    gen = N.hmark[size]
    N.emark[NODES] += 1
    egen = N.emark[NODES]
    rows = 0
    used_p = 0
    rc = N.rc
    rm = N.rm
    for j in range(nh):
        i = N.kept[j]
        h = N.rh[i]
        s = h & (size - 1)
        dup = False
        while N.hmark[s] == gen:
            if N.hseen[s] == h:
                dup = True
                break
            s = (s + 1) & (size - 1)
        if dup:
            continue
        N.hmark[s] = gen
        N.hseen[s] = h
        npp = parents_of(N, cand, g, n, i)
        if npp == 0:
            continue  # the hint holds without the run: not the chain's
        tid = table_id(N, N.key[i], N.cx[i])
        nr = N.rn[i]
        for k in range(nr):
            v = N.rem[N.ro[i] + k]
            rc[k] = v >> 9
            rm[k] = v & 511
        java_order(rc, rm, nr)
        for k in range(nr):
            x = rm[k]
            while x:
                d = lowbit(x)
                x &= x - 1
                node = (rc[k] * 9 + d) << 1
                if N.emark[node] == egen:
                    continue
                if rows >= out.shape[0] or used_p + npp > outp.shape[0]:
                    N.over[0] = 1
                    continue
                N.emark[node] = egen
                out[rows, 0] = node
                out[rows, 1] = npp
                out[rows, 2] = used_p
                out[rows, 3] = tid
                for m in range(npp):
                    outp[used_p + m] = N.pp[m]
                used_p += npp
                rows += 1
    return rows
