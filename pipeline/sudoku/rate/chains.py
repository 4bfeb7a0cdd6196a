"""Forcing chains and cycles (serate's "Forcing Chains & Cycles", 6.5 and up).

Nodes are candidates assumed true or false: node (c * 9 + d) * 2 + 1 is "digit d+1 in cell
c" (on), + 0 its negation (off). Links, on the state as it is (nothing propagates):

    on  -> off   the digit leaves the cell's peers; with Y links, the cell's other digits go
    off -> on    with X links, the digit's other place in a house where it has two; with Y
                 links, a bivalue cell's other digit

From each candidate, breadth first, three searches (Y links only, X only, both): a cycle
back to the start (bidirectional cycle: each weak link of the loop becomes strong, which
eliminates), or an assumption that leads to its own negation (forcing chain: a candidate
that is on and leads to off goes, one off that leads to on is placed). Rating: the base of
its kind plus serate's increments for the chain's length (`length_add`).
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import CELL_HOUSES, HOUSE_CELLS, PEERS, POP9, SEES, count_in, lowbit
from pipeline.sudoku.rate.techniques import (
    INFO,
    RATING,
    T_FORCING_CHAIN,
    T_FORCING_X_CHAIN,
    T_TURBOT,
    T_X_CYCLE,
    T_XY_CYCLE,
    T_Y_CYCLE,
    TECH,
    offer,
)

NODES = 81 * 9 * 2


@compiled.helper(inline="always")
def length_add(nodes):
    """Serate's increment (tenths) for a chain of `nodes` nodes: one more past each of
    4, 6, 8, 12, 16, 24, 32, ... links."""
    length = nodes - 2
    ceil = 4
    add = 0
    odd = False
    while length > ceil:
        add += 1
        ceil = ceil * 4 // 3 if odd else ceil * 3 // 2
        odd = not odd
    return add


@compiled.helper()
def build_links(cand, bb, links):
    """The links of the state, a row a node: links[n, 0] X links then at 2.., links[n, 1]
    Y links then at 22.. (on: the peers' and the cell's offs; off: the conjugates' and
    the bivalue partner's ons)."""
    for c in range(81):
        m = cand[c]
        x = m
        while x:
            d = lowbit(x)
            x &= x - 1
            on = ((c * 9 + d) << 1) | 1
            off = on - 1
            nx = 0
            for k in range(20):
                p = PEERS[c, k]
                if (cand[p] >> d) & 1:
                    links[on, 2 + nx] = (p * 9 + d) << 1
                    nx += 1
            links[on, 0] = nx
            ny = 0
            y = m & ~(1 << d)
            while y:
                e = lowbit(y)
                y &= y - 1
                links[on, 22 + ny] = (c * 9 + e) << 1
                ny += 1
            links[on, 1] = ny
            nx = 0
            for t in range(3):
                h = CELL_HOUSES[c, t]
                if count_in(bb, d, h) == 2:
                    for k in range(9):
                        p = HOUSE_CELLS[h, k]
                        if p != c and (cand[p] >> d) & 1:
                            links[off, 2 + nx] = ((p * 9 + d) << 1) | 1
                            nx += 1
            links[off, 0] = nx
            ny = 0
            if POP9[m] == 2:
                links[off, 22] = ((c * 9 + lowbit(m & ~(1 << d))) << 1) | 1
                ny = 1
            links[off, 1] = ny


@compiled.helper()
def bfs(links, start, use_x, use_y, loop, limit, target, parent, depth, queue, seen, mark,
        closers):
    """Breadth first from node `start`: parent[] and depth[] of every node reached (those
    with seen[n] == seen[NODES]). `loop`: looking for a way back to the start, whose own
    cell's other digits are not links (they would close the loop at once). No chain goes
    past `limit` nodes. Not looking for a loop, it stops at node `target`; looking for one,
    each arrival (3 links or more away) at an off node that links back to the start is
    kept in closers (node, parent, depth; closers[0, 0] their count), and such nodes are
    left free so that a longer way can reach them again. Returns the number of nodes
    reached (queue[:n], in order), negative when the limit cut it short."""
    # seen[n] == gen marks the nodes reached by this search: no clearing between searches
    seen[NODES] += 1
    gen = seen[NODES]
    seen[start] = gen
    depth[start] = 0
    parent[start] = -1
    queue[0] = start
    head = 0
    tail = 1
    hit = False  # a forcing search stops at its target; a loop search goes on
    closers[0, 0] = 0
    if loop:  # links are symmetric: the nodes linking back are the start's negation's
        off = start ^ 1
        if use_x:
            for k in range(links[off, 0]):
                mark[links[off, 2 + k] ^ 1] = gen
        if use_y:
            for k in range(links[off, 1]):
                mark[links[off, 22 + k] ^ 1] = gen
    while head < tail:
        if hit:
            return tail
        n = queue[head]
        head += 1
        dn = depth[n] + 1
        if dn + 1 > limit:
            return -tail  # cut: breadth first, every node left is as deep
        if n & 1 or use_x:  # on -> off through peers always, off -> on through houses
            for k in range(links[n, 0]):
                m = links[n, 2 + k]
                if loop and mark[m] == gen:
                    k = closers[0, 0] + 1
                    if dn >= 3 and k < closers.shape[0]:
                        closers[k, 0] = m
                        closers[k, 1] = n
                        closers[k, 2] = dn
                        closers[0, 0] = k
                elif seen[m] != gen:
                    seen[m] = gen
                    depth[m] = dn
                    parent[m] = n
                    queue[tail] = m
                    tail += 1
                    if m == target and not loop:
                        hit = True
        if use_y and not (loop and n == start):
            for k in range(links[n, 1]):
                m = links[n, 22 + k]
                if loop and mark[m] == gen:
                    k = closers[0, 0] + 1
                    if dn >= 3 and k < closers.shape[0]:
                        closers[k, 0] = m
                        closers[k, 1] = n
                        closers[k, 2] = dn
                        closers[0, 0] = k
                elif seen[m] != gen:
                    seen[m] = gen
                    depth[m] = dn
                    parent[m] = n
                    queue[tail] = m
                    tail += 1
                    if m == target and not loop:
                        hit = True
    return tail


@compiled.helper()
def cycle_back(cand, bb, start, use_x, use_y, depth, queue, reached, first):
    """The index in queue, from `first` on, of the next off node (of depth >= 3) that links
    back to `start` (on), or -1: breadth first, so the shortest loops come first."""
    sc = start >> 1
    c0 = sc // 9
    d0 = sc % 9
    for i in range(first, reached):
        n = queue[i]
        if n & 1 or depth[n] < 3:
            continue
        cd = n >> 1
        c = cd // 9
        d = cd % 9
        if use_y and c == c0 and d != d0 and POP9[cand[c]] == 2:
            return i
        if use_x and d == d0 and c != c0 and SEES[c, c0]:
            for t in range(3):
                h = CELL_HOUSES[c, t]
                if (CELL_HOUSES[c0, 0] == h or CELL_HOUSES[c0, 1] == h
                        or CELL_HOUSES[c0, 2] == h) and count_in(bb, d, h) == 2:
                    return i
    return -1


@compiled.helper()
def cycle_eliminations(cand, start, last, parent, E, onloop):
    """What a loop (start, ..., last, back to start) removes: each weak link a(on) -> b(off)
    becomes strong, so the digit goes from the cells seeing both (same digit), or the
    cell's other digits go (same cell)."""
    ne = 0
    for i in range(729):
        onloop[i] = 0
    n = last
    while n >= 0:
        onloop[n >> 1] = 1
        n = parent[n]
    n = last
    while n >= 0:
        a = parent[n] if (n & 1) == 0 else -1
        if a >= 0:  # a on -> n off
            ca = (a >> 1) // 9
            da = (a >> 1) % 9
            cb = (n >> 1) // 9
            db = (n >> 1) % 9
            if ca == cb:
                x = cand[ca] & ~((1 << da) | (1 << db))
                while x:
                    e = lowbit(x)
                    x &= x - 1
                    ne = add_elim(E, ne, ca, e)
            else:
                for p in range(81):
                    if p != ca and p != cb and (cand[p] >> da) & 1 and SEES[p, ca] \
                            and SEES[p, cb] and onloop[p * 9 + da] == 0:
                        ne = add_elim(E, ne, p, da)
        n = parent[n]
    return ne


@compiled.helper(inline="always")
def add_elim(E, ne, c, d):
    """Append candidate d (0-based) of cell c to E unless there."""
    v = c * 10 + d + 1
    for i in range(ne):
        if E[i] == v:
            return ne
    E[ne] = v
    return ne + 1


@compiled.helper()
def longest(base, rating):
    """The most nodes a chain of this base can have and still rate at most `rating`."""
    if rating >= 1000:
        return NODES
    n = 2
    while n < NODES and base + length_add(n + 1) <= rating:
        n += 1
    return n


@compiled.helper(inline="always")
def easier(H, r, nodes):
    """A chain of rating r and `nodes` nodes goes before H's: easier, or as easy and
    shorter (serate's order of its chains)."""
    return r < H[RATING] or (r == H[RATING] and nodes < H[INFO + 2])


@compiled.helper()
def forcing_chains(val, cand, bb, H, E, parent, depth, queue, onloop, seen, mark, links,
                   effort):
    """The easiest cycle or forcing chain (X, Y, XY), offered to H."""
    build_links(cand, bb, links)
    chains_upto(val, cand, bb, H, E, parent, depth, queue, onloop, seen, mark, links, effort,
                1000)
    return H[TECH] != 0


@compiled.helper()
def chains_upto(val, cand, bb, H, E, parent, depth, queue, onloop, seen, mark, links,
                effort, level):
    """The chains rated at most `level`, offered to H; True when no search was cut short
    (no longer chain exists)."""
    whole = True
    closers = np.zeros((64, 3), np.int64)
    for kind in range(3):  # 0: Y links only, 1: X only, 2: both
        use_x = kind >= 1
        use_y = kind != 1
        for c in range(81):
            if val[c] != 0:
                continue
            if kind == 0 and POP9[cand[c]] != 2:
                continue
            x = cand[c]
            while x:
                d = lowbit(x)
                x &= x - 1
                node = (c * 9 + d) << 1
                for on in range(2):
                    start = node | on
                    effort[0] += 1
                    if on == 1:
                        limit = longest(70 if kind == 2 else 65, min(H[RATING], level))
                        if bfs(links, start, use_x, use_y, True, limit, -1, parent, depth,
                               queue, seen, mark, closers) < 0:
                            whole = False
                        # the shortest loop that eliminates
                        for k in range(1, closers[0, 0] + 1):
                            last = closers[k, 0]
                            parent[last] = closers[k, 1]
                            nodes = closers[k, 2] + 1
                            base = 70 if kind == 2 else 65
                            r = base + length_add(nodes)
                            if not easier(H, r, nodes):
                                break
                            ne = cycle_eliminations(cand, start, last, parent, E, onloop)
                            if ne:
                                H[RATING] = r + 1  # so that offer takes it
                                tech = T_XY_CYCLE if kind == 2 else (
                                    T_X_CYCLE if kind == 1 else T_Y_CYCLE)
                                offer(H, tech, r, -1, 0, E, ne, start, last, nodes, 0)
                                break
                    if kind == 0:
                        continue
                    if True:
                        limit = longest(70 if kind == 2 else 66, min(H[RATING], level))
                        if bfs(links, start, use_x, use_y, False, limit, start ^ 1, parent,
                               depth, queue, seen, mark, closers) < 0:
                            whole = False
                    target = start ^ 1
                    if seen[target] == seen[NODES]:
                        nodes = depth[target] + 1
                        r = (70 if kind == 2 else 66) + length_add(nodes)
                        tech = T_FORCING_CHAIN if kind == 2 else (
                            T_TURBOT if r == 66 else T_FORCING_X_CHAIN)
                        if not easier(H, r, nodes):
                            continue
                        H[RATING] = r + 1
                        if on == 1:
                            E[0] = c * 10 + d + 1
                            offer(H, tech, r, -1, 0, E, 1, start, target, nodes, 0)
                        else:
                            offer(H, tech, r, c, d + 1, E, 0, start, target, nodes, 0)
    return whole
