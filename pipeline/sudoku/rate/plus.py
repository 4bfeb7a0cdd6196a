"""The "(+)" of serate's Dynamic Forcing Chains (+) (9.0 and up): a run from an assumption
(dynamic.py) that has nothing left to follow looks at the grid as it has left it for the
first of four rules that takes something out,

    intersections (pointing, then claiming), hidden pairs, naked pairs, X-Wings

and takes all that rule's eliminations out as offs of the run, then goes on. An elimination
counts only when its pattern needs some of the run's offs: its parents are the candidates
of the step's grid (`cand`) that the pattern needs gone and the run took out (a pattern
already in the step's grid is an ordinary step, not the chain's). Which candidates those
are, per rule:

    intersection  the digit's places in the first house outside the second
    hidden pair   the pair's digits in the house's other cells
    naked pair    the two cells' other digits
    X-Wing        the digit's places in the base lines outside the cover lines

Serate's order: the rules as above, the first that has any; a rule's patterns as its own
step finder meets them (houses by kind: box, column, row; digits, then houses; pairs in
increasing order); a pattern's cells as Java's HashMap of 16 (or more) buckets lists them
(by cell number modulo the buckets, then as added), each cell's digits in increasing order.
The order decides which of two ways first reaches a node, and so its parents.

Nothing here allocates (`_nrt=False`): the eliminations go to W.adv (dynamic.Work), a row
each: the off node, its parents' count, its parents; W.rc, rm, pp, occ, gp, lost, amark and
agen are this module's scratch.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import (
    BOX,
    CELL_HOUSES,
    COL,
    HOUSE_CELLS,
    POP9,
    ROW,
    java_order,
    lowbit,
)
from pipeline.sudoku.rate.techniques import empties, serates_house

# the intersections' (first house, second house) kinds, in serate's order
LOCKING = np.array([[BOX, COL], [BOX, ROW], [COL, BOX], [ROW, BOX]], np.int64)


@compiled.helper(_nrt=False)
def tables(W, cand, g):
    """W.gp[d, h]: house h's places (9 bits) that hold d in g; W.lost[h]: the digits some
    cell of house h lost in the run (a pattern without such a loss has no parents)."""
    for d in range(9):
        for h in range(27):
            W.gp[d, h] = 0
    for h in range(27):
        W.lost[h] = 0
        for k in range(9):
            c = HOUSE_CELLS[h, k]
            x = g[c]
            W.lost[h] |= cand[c] & ~x
            while x:
                d = lowbit(x)
                x &= x - 1
                W.gp[d, h] |= 1 << k


@compiled.helper(_nrt=False)
def emit(W, n, rc, rm, nr, pp, npp):
    """Append a pattern's eliminations (cells rc[:nr], digit masks rm[:nr], in the order
    added; reordered as serate lists them) to W.adv from row n, each with the parents
    pp[:npp]; the rows now used. An elimination met before in this look is not repeated:
    the run keeps the first (and so a look has at most 729 rows, where its patterns may
    repeat one many times)."""
    java_order(rc, rm, nr)
    for i in range(nr):
        x = rm[i]
        while x:
            d = lowbit(x)
            x &= x - 1
            node = (rc[i] * 9 + d) << 1
            if W.amark[node] == W.agen[0]:
                continue
            W.amark[node] = W.agen[0]
            W.adv[n, 0] = node
            W.adv[n, 1] = npp
            for k in range(npp):
                W.adv[n, 2 + k] = pp[k]
            n += 1
    return n


@compiled.helper(_nrt=False)
def locking(W, cand, g, rc, rm, pp):
    """Intersections: the digit's places in the first house all in the second."""
    n = 0
    for pair in range(4):
        t1 = LOCKING[pair, 0]
        t2 = LOCKING[pair, 1]
        w1 = t1 // 9
        w2 = t2 // 9
        for d in range(9):
            for i1 in range(9):
                h1 = t1 + i1
                pos = W.gp[d, h1]
                if POP9[pos] < 2 or not (W.lost[h1] >> d) & 1:
                    continue
                h2 = CELL_HOUSES[HOUSE_CELLS[h1, lowbit(pos)], w2]
                inside = True
                for k in range(9):
                    if (pos >> k) & 1 and CELL_HOUSES[HOUSE_CELLS[h1, k], w2] != h2:
                        inside = False
                if not inside:
                    continue
                nr = 0
                for k in range(9):
                    c = HOUSE_CELLS[h2, k]
                    if CELL_HOUSES[c, w1] != h1 and (g[c] >> d) & 1:
                        rc[nr] = c
                        rm[nr] = 1 << d
                        nr += 1
                if nr == 0:
                    continue
                npp = 0
                for k in range(9):
                    c = HOUSE_CELLS[h1, k]
                    if (cand[c] >> d) & 1 and not (g[c] >> d) & 1 and CELL_HOUSES[c, w2] != h2:
                        pp[npp] = (c * 9 + d) << 1
                        npp += 1
                if npp:
                    n = emit(W, n, rc, rm, nr, pp, npp)
    return n


@compiled.helper(_nrt=False)
def hidden_pairs(W, val, cand, g, rc, rm, pp):
    """Two digits with the same two places in a house (of more than four empty cells)."""
    n = 0
    for t in range(27):
        h = serates_house(t)
        if empties(val, h) <= 4 or W.lost[h] == 0:
            continue
        for d2 in range(1, 9):  # (the pairs in increasing order of their 9-bit masks)
            for d1 in range(d2):
                m = (1 << d1) | (1 << d2)
                if not W.lost[h] & m:
                    continue
                p1 = W.gp[d1, h]
                p2 = W.gp[d2, h]
                if POP9[p1] < 2 or POP9[p2] < 2 or POP9[p1 | p2] != 2:
                    continue
                u = p1 | p2
                nr = 0
                for k in range(9):
                    if (u >> k) & 1:
                        c = HOUSE_CELLS[h, k]
                        if g[c] & ~m:
                            rc[nr] = c
                            rm[nr] = g[c] & ~m
                            nr += 1
                if nr == 0:
                    continue
                npp = 0
                for k in range(9):
                    if (u >> k) & 1:
                        continue
                    c = HOUSE_CELLS[h, k]
                    for d in (d1, d2):
                        if (cand[c] >> d) & 1:
                            pp[npp] = (c * 9 + d) << 1
                            npp += 1
                if npp:
                    n = emit(W, n, rc, rm, nr, pp, npp)
    return n


@compiled.helper(_nrt=False)
def naked_pairs(W, val, cand, g, rc, rm, pp):
    """Two cells of a house (of four empty cells or more) with the same two digits."""
    n = 0
    for t in range(27):
        h = serates_house(t)
        if empties(val, h) < 4 or W.lost[h] == 0:
            continue
        for k2 in range(1, 9):  # (the pairs in increasing order of their 9-bit masks)
            for k1 in range(k2):
                m = (1 << k1) | (1 << k2)
                c1 = HOUSE_CELLS[h, k1]
                c2 = HOUSE_CELLS[h, k2]
                if not (cand[c1] & ~g[c1]) | (cand[c2] & ~g[c2]):
                    continue
                u = g[c1] | g[c2]
                if POP9[g[c1]] < 2 or POP9[g[c2]] < 2 or POP9[u] != 2:
                    continue
                nr = 0
                for k in range(9):
                    if (m >> k) & 1:
                        continue
                    c = HOUSE_CELLS[h, k]
                    if g[c] & u:
                        rc[nr] = c
                        rm[nr] = g[c] & u
                        nr += 1
                if nr == 0:
                    continue
                npp = 0
                for c in (c1, c2):
                    x = cand[c] & ~u
                    while x:
                        d = lowbit(x)
                        x &= x - 1
                        pp[npp] = (c * 9 + d) << 1
                        npp += 1
                if npp:
                    n = emit(W, n, rc, rm, nr, pp, npp)
    return n


@compiled.helper(_nrt=False)
def x_wings(W, val, cand, g, rc, rm, pp):
    """A digit's places in two base lines in the same two cover lines: columns as the base
    first, then rows; a digit only while it is placed at most 5 times."""
    n = 0
    placed = W.occ
    for d in range(9):
        placed[d] = 0
    for c in range(81):
        if val[c] != 0:
            placed[val[c] - 1] += 1
    for kind in range(2):
        base = COL if kind == 0 else ROW
        cover = ROW if kind == 0 else COL
        for b2 in range(1, 9):  # (the pairs in increasing order of their 9-bit masks)
            for b1 in range(b2):
                m = (1 << b1) | (1 << b2)
                for d in range(9):
                    if placed[d] + 4 > 9 or not ((W.lost[base + b1] | W.lost[base + b2]) >> d) & 1:
                        continue
                    p1 = W.gp[d, base + b1]
                    p2 = W.gp[d, base + b2]
                    u = p1 | p2
                    if POP9[p1] < 2 or POP9[p2] < 2 or POP9[u] != 2:
                        continue
                    nr = 0
                    for i in range(9):
                        if (u >> i) & 1:
                            x = W.gp[d, cover + i] & ~m
                            for j in range(9):
                                if (x >> j) & 1:
                                    rc[nr] = HOUSE_CELLS[cover + i, j]
                                    rm[nr] = 1 << d
                                    nr += 1
                    if nr == 0:
                        continue
                    npp = 0
                    for b in (b1, b2):
                        for k in range(9):
                            c = HOUSE_CELLS[base + b, k]
                            if (u >> k) & 1 == 0 and (cand[c] >> d) & 1 and not (g[c] >> d) & 1:
                                pp[npp] = (c * 9 + d) << 1
                                npp += 1
                    if npp:
                        n = emit(W, n, rc, rm, nr, pp, npp)
    return n


@compiled.helper(_nrt=False)
def plus(W, val, cand, g):
    """The eliminations of the first rule that has any on the run's grid g, into W.adv;
    how many (0: none)."""
    rc = W.rc
    rm = W.rm
    pp = W.pp
    W.agen[0] += 1
    tables(W, cand, g)
    n = locking(W, cand, g, rc, rm, pp)
    if n == 0:
        n = hidden_pairs(W, val, cand, g, rc, rm, pp)
    if n == 0:
        n = naked_pairs(W, val, cand, g, rc, rm, pp)
    if n == 0:
        n = x_wings(W, val, cand, g, rc, rm, pp)
    return n
