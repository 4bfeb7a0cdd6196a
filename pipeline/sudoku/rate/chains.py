"""Forcing chains and cycles (serate's "Forcing Chains & Cycles", 6.5 and up).

Nodes are candidates assumed true or false: node (c * 9 + d) * 2 + 1 is "digit d+1 in cell
c" (on), + 0 its negation (off). Links, on the state as it is (nothing propagates):

    on  -> off   the digit leaves the cell's peers; with Y links, the cell's other digits go
    off -> on    with X links, the digit's other place in a house where it has two; with Y
                 links, a bivalue cell's other digit

Three kinds, in serate's order: X links only, Y only, both. From each candidate on, a
breadth-first search for loops back to it (bidirectional cycle), where as in serate an off
node may be reached again from another on node (`loops`): a digit of a cell off the loop
that sees it both on and off on the loop goes. Then from the candidate on and off, a
search for its own negation (forcing chain: a candidate that is on and leads to off goes,
one off that leads to on is placed). Links are taken Y first, then houses box, row,
column, as serate does, which decides which of equally long loops is met first. Rating:
the base of its kind plus serate's increments for the chain's length (`length_add`).

Before the searches, one pass over the graph of both kinds of links (`reach`: its strongly
connected components; each kind's links are a part of it) tells which searches can find
anything: no loop comes back to a node on no cycle, nor passes a node outside the start's
component; no forcing chain starts from a node with no way to its negation. In a step
whose chain comes from an assumption, no search finds anything.

The searches allocate nothing and are compiled without reference counting (`_nrt=False`):
counting the arrays of each of their thousands of calls a step took 3% of the rater's time.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import (
    BIT,
    CELL_HOUSES,
    HOUSE_CELLS,
    PEER_BB,
    PEERS_IN_ORDER,
    POP9,
    SERATE_HOUSES,
    WORD,
    as_index,
    counts,
    lowbit,
)
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
    name_cells,
    offer,
)

NODES = 81 * 9 * 2
ONE = np.uint32(1)  # (a node's negation, m ^ ONE, stays unsigned: board.as_index)
ON_CYCLE, NEGATES = 1, 2  # what a search from a node can find (reach)


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


@compiled.helper(inline="always")
def serate_added(k):
    """0.1 added k times, as serate's double adds its length increments (6.5 + 0.1 + 0.1
    is a hair more than 6.6 + 0.1)."""
    added = 0.0
    for _ in range(k):
        added += 0.1
    return added


@compiled.helper()
def build_links(cand, n, links):
    """The links of the state (n[d, h]: the places of digit d in house h), a row a node: links[n, 0] X links then at 2.., links[n, 1]
    Y links then at 22.. (on: the peers' and the cell's offs; off: the conjugates' and
    the bivalue partner's ons), in serate's order (houses box, row, column)."""
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
                p = PEERS_IN_ORDER[c, k]
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
            for t in SERATE_HOUSES:
                h = CELL_HOUSES[c, t]
                if n[d, h] == 2:
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


@compiled.helper(inline="always")
def links_of(links, n, part, use_x, use_y):
    """Node n's links of one part (0: Y, 1: X) that a search takes: their count and where
    they start in n's row. On -> off X links are taken always, off -> on ones only with X."""
    if part == 0:
        return (links[n, 1] if use_y else 0), 22
    return (links[n, 0] if (n & 1 or use_x) else 0), 2


@compiled.helper(_nrt=False)
def bfs(links, start, use_x, use_y, limit, target, parent, depth, queue, seen):
    """Breadth first from node `start` until node `target`: parent[] and depth[] of every
    node reached (those with seen[n] == seen[NODES]). No chain goes past `limit` nodes.
    Returns the number of nodes reached (queue[:n], in order), negative when the limit cut
    it short."""
    # seen[n] == gen marks the nodes reached by this search: no clearing between searches
    seen[NODES] += 1
    gen = seen[NODES]
    seen[start] = gen
    depth[start] = 0
    parent[start] = -1
    queue[0] = start
    head = 0
    tail = 1
    while head < tail:
        n = as_index(queue[as_index(head)])
        head += 1
        dn = depth[n] + 1
        if dn + 1 > limit:
            return -tail  # cut: breadth first, every node left is as deep
        for part in range(2):  # Y links, then X
            count, base = links_of(links, n, part, use_x, use_y)
            for k in range(count):
                m = as_index(links[n, base + k])
                if seen[m] != gen:
                    seen[m] = gen
                    depth[m] = dn
                    parent[m] = n
                    queue[as_index(tail)] = m
                    tail += 1
                    if m == target:
                        return tail
    return tail


@compiled.helper(_nrt=False)
def to_negation(links, start, use_x, use_y, limit, depth, queue, seen):
    """The nodes of the shortest chain from node `start` to its negation (a forcing chain)
    of at most `limit` nodes: 0 when there is none, -1 when none was found but the limit
    cut the search short.

    Breadth first, but only about half as deep as the chain: a link read backwards and
    negated is a link, so a way from node x to the start's negation is a way from the start
    to x's negation, as long. A chain of d links has a node x at most ceil(d/2) links from
    the start whose negation is at most that far too; so once every node up to that depth
    is reached, the least sum of the depths of a node and of its negation (both reached) is
    d. The depths of the nodes reached are the same as a search to the end would give."""
    seen[NODES] += 1
    gen = seen[NODES]
    seen[start] = gen
    depth[start] = 0
    queue[0] = start
    head = 0
    tail = 1
    best = NODES  # links of the shortest chain seen
    level = 0  # the depth of queue[head:end]: every node up to it is reached
    while True:
        want = min(best, limit) - 1  # a chain of at most this many links is still of use
        if 2 * level >= want:  # every chain of `want` links or fewer has been seen
            if best < limit:
                return best + 1
            return -1 if head < tail else 0
        if head == tail:
            return best + 1 if best < limit else 0
        end = tail
        dn = level + 1
        while head < end:
            n = as_index(queue[as_index(head)])
            head += 1
            for part in range(2):
                count, base = links_of(links, n, part, use_x, use_y)
                for k in range(count):
                    m = as_index(links[n, base + k])
                    if seen[m] != gen:
                        seen[m] = gen
                        depth[m] = dn
                        queue[as_index(tail)] = m
                        tail += 1
                        x = m ^ ONE
                        if seen[x] == gen and dn + depth[x] < best:
                            best = dn + depth[x]
        level = dn


@compiled.helper(_nrt=False)
def loops(links, start, use_x, use_y, limit, qn, qp, qd, seen, closers, anc, scc):
    """Serate's search for loops back to `start` (on), breadth first, Y links before X: an
    on node is reached once, an off node once from each on node it is not an ancestor of
    (so that a loop through it by another way is seen). The queue's entries: qn the node,
    qp the entry it came from, qd its depth. Each off entry 3 links or more away that links
    back to the start is a loop: its entry goes to closers (closers[0] their count). Returns
    the number of entries, negative when `limit` (nodes) cut the search short.

    Only nodes of the start's strongly connected component (scc[], chains.reach's) are
    queued: from any other, no way leads back to the start. As the others' descendants are
    all others too, the entries kept come in the same order, from the same parents.

    anc[] marks the ancestors of the entry at hand (anc[NODES] its stamp): one walk up its
    path, not one for each of its links."""
    seen[NODES] += 1
    gen = seen[NODES]
    seen[start] = gen
    qn[0] = start
    qp[0] = -1
    qd[0] = 0
    head = 0
    tail = 1
    closers[0] = 0
    stamp = 0
    home = scc[start]
    while head < tail:
        e = as_index(head)
        n = as_index(qn[e])
        head += 1
        dn = qd[e] + 1
        if dn + 1 > limit:
            return -tail
        if n & 1:  # its links are offs: mark its ancestors
            anc[NODES] += 1
            stamp = anc[NODES]
            up = qp[e]
            while up >= 0:
                u = as_index(up)
                anc[as_index(qn[u])] = stamp
                up = qp[u]
        for part in range(2):  # Y links, then X
            count, base = links_of(links, n, part, use_x, use_y)
            for k in range(count):
                m = as_index(links[n, base + k])
                if scc[m] != home:
                    continue  # no way back from m (reach: its component is not the start's)
                if m & 1:  # on: once
                    if seen[m] == gen:
                        continue
                    seen[m] = gen
                elif anc[m] == stamp:  # off: again from another on, unless an ancestor
                    continue
                if tail >= qn.shape[0]:
                    return -tail
                t = as_index(tail)
                qn[t] = m
                qp[t] = e
                qd[t] = dn
                if (m & 1) == 0 and dn >= 3 and closers[0] + 1 < closers.shape[0]:
                    if links_to(links, m, start, use_x, use_y):
                        closers[0] += 1
                        closers[closers[0]] = tail
                tail += 1
    return tail


@compiled.helper(inline="always")
def links_to(links, n, m, use_x, use_y):
    """Whether node n (off) links to node m (on)."""
    if use_y:
        for k in range(links[n, 1]):
            if links[n, 22 + k] == m:
                return True
    if use_x:
        for k in range(links[n, 0]):
            if links[n, 2 + k] == m:
                return True
    return False


@compiled.helper(_nrt=False)
def loop_eliminations(bb, last, qn, qp, E, seen):
    """What the loop ending at entry `last` removes, by serate's rule: a digit of a cell
    off the loop that sees the same digit both on and off on the loop; in E in cell order.
    On bitboards (bb's layout): seen[d * 3 + w] the peers of the loop's ons of digit d,
    seen[27 + d * 3 + w] of its offs, seen[54 + w] the loop's cells."""
    for k in range(57):
        seen[k] = 0
    e = last
    while e >= 0:
        n = qn[e]
        c = (n >> 1) // 9
        at = ((n >> 1) % 9) * 3 + (0 if n & 1 else 27)
        for w in range(3):
            seen[at + w] |= PEER_BB[c, w]
        seen[54 + WORD[c]] |= BIT[c]
        e = qp[e]
    ne = 0
    for d in range(9):
        for w in range(3):
            x = seen[d * 3 + w] & seen[27 + d * 3 + w] & bb[d, w] & ~seen[54 + w]
            while x:
                c = w * 27 + lowbit(x)
                x &= x - 1
                v = c * 10 + d + 1
                i = ne  # (insertion: cell order, as a scan of the cells gives)
                while i > 0 and E[i - 1] > v:
                    E[i] = E[i - 1]
                    i -= 1
                E[i] = v
                ne += 1
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
def name_loop(H, start, last, qn, qp):
    """The loop's cells named for its text (techniques.name_cells), as serate lists them:
    from the start's first link round to the start, each once."""
    path = np.empty(NODES, np.int64)
    n = 0
    e = last
    while e > 0:  # entry 0 is the start
        path[n] = (qn[e] >> 1) // 9
        n += 1
        e = qp[e]
    path[n] = (start >> 1) // 9
    cells = np.empty(81, np.int64)
    named = 0
    for i in range(n - 1, -2, -1):
        c = path[i] if i >= 0 else path[n]
        seen = False
        for j in range(named):
            if cells[j] == c:
                seen = True
        if not seen:
            cells[named] = c
            named += 1
    name_cells(H, cells, named)


@compiled.helper()
def longest(base, rating):
    """The most nodes a chain of this base can have and still rate at most `rating`."""
    if rating >= 1000:
        return NODES
    n = 2
    while n < NODES and base + length_add(n + 1) <= rating:
        n += 1
    return n


@compiled.helper()
def limits(rating):
    """longest() for the bases of cycles (6.5), X-chains (6.6) and chains with both links
    (7.0): the searches' limits while the best hint is rated `rating` (made again only
    when that changes: a few hundred operations, against a search of a few thousand)."""
    return longest(65, rating), longest(66, rating), longest(70, rating)


@compiled.helper(inline="always")
def easier(H, r, nodes):
    """A chain of rating r and `nodes` nodes goes before H's: easier, or as easy and
    shorter (serate's order of its chains)."""
    return r < H[RATING] or (r == H[RATING] and nodes < H[INFO + 2])


@compiled.helper()
def new_reach(n):
    """reach's flags, components and scratch, for n nodes (NODES, or 0 or 1 in a stand-in);
    the scratch's last row says which grid they are of (look_at)."""
    tmp = np.empty((11, n + 1), np.int32)
    tmp[10, 0] = 0
    return (np.empty(n, np.int8), np.empty(n, np.int32), tmp, np.empty(n * 28, np.int32),
            np.empty((n, (n + 63) >> 6), np.uint64))


OF_GRID = 10  # reach's scratch row: 1, the number of nodes and the 81 candidate masks of
# the grid whose links and reach the arrays hold (0 in its first word: none)


@compiled.helper(_nrt=False)
def look_at(cand, n, links, flags, scc, tmp, adj, bits):
    """The links of grid cand (build_links; n[d, h] the places of digit d in house h) and
    reach's look at them (both kinds), unless the arrays hold those of this very grid
    already (the static chains and, a step later, the multiple forcing chains look at the
    same grid; the nested looks use their own arrays); reach's number of nodes."""
    g = tmp[OF_GRID]
    if g[0] == 1:
        same = True
        for c in range(81):
            if g[2 + c] != cand[c]:
                same = False
                break
        if same:
            return g[1]
    build_links(cand, n, links)
    v = reach(cand, links, True, True, flags, scc, tmp, adj, bits)
    g[0] = 1
    g[1] = v
    for c in range(81):
        g[2 + c] = cand[c]
    return v


@compiled.helper(_nrt=False)
def reach(cand, links, use_x, use_y, flags, scc, tmp, adj, bits):
    """What a search from a node of this kind's links can find, whatever its limit:
    flags[n] has ON_CYCLE when node n lies on a cycle (a loop back to it needs one) and
    NEGATES when a way leads from n to its negation (a forcing chain); scc[n] is n's
    strongly connected component (a loop back to n passes only nodes of n's). One pass
    over the graph: the components (Tarjan's), each completed after every one it reaches,
    so each one's reach is its nodes and its successors' reach, a bitset over the nodes.
    (In a step whose chain comes from an assumption no cycle or forcing chain eliminates
    anything, and a search from each candidate went through the whole graph to learn it:
    about half of such a step's time; this pass costs about a tenth.) Scratch, the
    caller's (new_reach's, as flags and scc).
    Returns the number of nodes, v: node n is number tmp[1][n] (0..v-1, a negation next to
    it), and bits[scc[n]] the numbers of the nodes it reaches ((v + 63) // 64 words)."""
    node, num, start, order, low, comp, size, stack, at, nxt = (
        tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7], tmp[8], tmp[9])
    # node[i]: the grid's candidates' nodes, numbered 0..v-1; num[n]: node n's number
    v = 0
    for c in range(81):
        x = cand[c]
        while x:
            off = (c * 9 + lowbit(x)) << 1
            x &= x - 1
            for m in range(off, off + 2):  # (so a node's negation is number ^ 1)
                num[m] = v
                node[v] = m
                v += 1
    e = 0  # the links by number: node i's are adj[start[i]:start[i + 1]]
    for i in range(v):
        start[i] = e
        for part in range(2):
            count, base = links_of(links, node[i], part, use_x, use_y)
            for k in range(count):
                adj[e] = num[links[node[i], base + k]]
                e += 1
    start[v] = e
    words = (v + 63) >> 6
    # Tarjan's: order of discovery, the lowest order reachable from the search's subtree,
    # the component (bits[k]: what component k reaches) and its size; stack: the nodes in
    # no component yet; at, nxt: the depth-first path (a node, its next link)
    for i in range(v):
        order[i] = -1
        comp[i] = -1
    sp = 0
    seen = 0
    done = 0
    for root in range(v):
        if order[root] >= 0:
            continue
        order[root] = low[root] = seen
        seen += 1
        stack[sp] = root
        sp += 1
        top = 0
        at[0] = root
        nxt[0] = start[root]
        while top >= 0:
            u = as_index(at[as_index(top)])
            q = nxt[as_index(top)]
            if q < start[u + 1]:
                nxt[as_index(top)] = q + 1
                w = as_index(adj[as_index(q)])
                if order[w] >= 0:
                    if comp[w] < 0 and order[w] < low[u]:
                        low[u] = order[w]
                elif start[w] == start[w + 1]:  # no links: a component of its own (many offs)
                    order[w] = seen
                    seen += 1
                    comp[w] = done
                    size[done] = 1
                    for b in range(words):
                        bits[done, b] = 0
                    bits[done, w >> 6] = np.uint64(1) << np.uint64(w & 63)
                    done += 1
                else:
                    order[w] = low[w] = seen
                    seen += 1
                    stack[as_index(sp)] = w
                    sp += 1
                    top += 1
                    at[as_index(top)] = w
                    nxt[as_index(top)] = start[w]
                continue
            if low[u] == order[u]:  # u's component: the stack down to u
                k = done
                done += 1
                for b in range(words):
                    bits[k, b] = 0
                first = sp
                while True:
                    first -= 1
                    w = stack[first]
                    comp[w] = k
                    bits[k, w >> 6] |= np.uint64(1) << np.uint64(w & 63)
                    if w == u:
                        break
                size[k] = sp - first
                for j in range(first, sp):
                    w = stack[j]
                    for q in range(start[w], start[w + 1]):
                        t = comp[adj[q]]
                        if t != k:
                            for b in range(words):
                                bits[k, b] |= bits[t, b]
                sp = first
            top -= 1
            if top >= 0 and low[u] < low[at[top]]:
                low[at[top]] = low[u]
    for i in range(v):
        k = comp[i]
        f = ON_CYCLE if size[k] > 1 else 0
        if (bits[k, (i ^ 1) >> 6] >> np.uint64((i ^ 1) & 63)) & np.uint64(1):
            f |= NEGATES
        flags[node[i]] = f
        scc[node[i]] = k
    return v


@compiled.helper()
def forcing_chains(val, cand, bb, H, E, depth, queue, seen, look, effort):
    """The easiest cycle or forcing chain (X, Y, XY), offered to H. The effort counts one
    search (each counts the same), searches that `reach` shows to find nothing included.
    look: the arrays of the grid's links and reach's look at them (look_at's)."""
    links, flags, scc, tmp, adj, bits = look
    n = np.empty((9, 27), np.int64)
    counts(bb, n)
    # which searches can find anything (reach) with both kinds of links: each kind's links
    # are a part of them (on -> off X links are in all), so what it shows holds of each (a
    # search from a node finds nothing; a loop keeps to a component of both)
    look_at(cand, n, links, flags, scc, tmp, adj, bits)
    easiest_chain(val, cand, bb, H, E, depth, queue, seen, links, flags, scc, effort)
    return H[TECH] != 0


@compiled.helper()
def easiest_chain(val, cand, bb, H, E, depth, queue, seen, links, flags, scc, effort):
    """The chains easier than H's hint, offered to H; each search is limited to the
    chains that would be (limits). The searches that flags (reach's, of both kinds of
    links) shows to find nothing are not made, and loops keep to their start's component
    (scc). Serate's order:
    X links only, then Y only (loops only, from bivalue cells), then both; each
    candidate's loops, then its forcing chains on, off."""
    closers = np.zeros(256, np.int64)
    # the loop search's entries: at most 729 ons, each giving at most 28 offs (loops)
    qn = np.empty(NODES * 16, np.int32)
    qp = np.empty(NODES * 16, np.int32)
    qd = np.empty(NODES * 16, np.int32)
    forw = np.empty(81, np.int64)  # (loop_eliminations' bitboards)
    anc = np.zeros(NODES + 1, np.int64)  # loops' marks of an entry's ancestors
    rated = -1  # the rating the limits are for (limits: they change with H's)
    lim65 = lim66 = lim70 = NODES
    for kind in (1, 0, 2):  # 0: Y links only, 1: X only, 2: both
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
                start = node | 1
                effort[0] += 1
                base = 70 if kind == 2 else 65
                if H[RATING] != rated:
                    rated = H[RATING]
                    lim65, lim66, lim70 = limits(rated)
                limit = lim70 if kind == 2 else lim65
                closers[0] = 0
                if flags[start] & ON_CYCLE:
                    loops(links, start, use_x, use_y, limit, qn, qp, qd, seen, closers, anc,
                          scc)
                for k in range(1, closers[0] + 1):  # the shortest loop that eliminates
                    last = closers[k]
                    nodes = qd[last] + 1
                    r = base + length_add(nodes)
                    if not easier(H, r, nodes):
                        break
                    ne = loop_eliminations(bb, last, qn, qp, E, forw)
                    if ne:
                        H[RATING] = r + 1  # so that offer takes it
                        tech = T_XY_CYCLE if kind == 2 else (
                            T_X_CYCLE if kind == 1 else T_Y_CYCLE)
                        offer(H, tech, r, -1, 0, E, ne, start, last, nodes, 0)
                        name_loop(H, start, last, qn, qp)
                        break
                if kind == 0:
                    continue
                for on in (1, 0):
                    start = node | on
                    effort[0] += 1
                    if H[RATING] != rated:
                        rated = H[RATING]
                        lim65, lim66, lim70 = limits(rated)
                    limit = lim70 if kind == 2 else lim66
                    nodes = 0
                    if flags[start] & NEGATES:
                        nodes = to_negation(links, start, use_x, use_y, limit, depth, queue,
                                            seen)
                    target = start ^ 1
                    if nodes > 0:
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
