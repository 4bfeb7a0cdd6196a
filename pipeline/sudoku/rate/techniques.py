"""The techniques without chains (those: chains.py, dynamic.py), each a finder of its hint.

A finder looks at the state (board.py) and offers hints to the hint buffer `H`, which keeps
the easiest offered (a later one only when strictly easier, so ties go to the first found):

    H[TECH]  technique id        H[RATING] tenths        H[PCELL], H[PDIG] the placement (-1)
    H[NELIM] eliminations, each cell * 10 + digit at H[ELIMS + i]
    H[INFO + i] a few cells or digits that name the pattern (for the step's text): offer
                sets four; a cycle's or a unique pattern's cells follow from INFO + 4
                (name_cells)

Finders are called in serate's order of producers (path.py); each returns whether it
offered. `E` is a scratch list of eliminations the size of H's.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.rate.board import (
    BIT,
    BOX,
    CELL_HOUSES,
    COL,
    HOUSE_BB,
    HOUSE_CELLS,
    PEER_BB,
    PEERS,
    POP9,
    ROW,
    SEES,
    SERATE_HOUSES,
    WORD,
    alone,
    as_index,
    count_in,
    lowbit,
    popcount,
    positions,
)

TECHNIQUES = (
    "", "Hidden Single", "Direct Pointing", "Direct Claiming", "Direct Hidden Pair",
    "Naked Single", "Direct Hidden Triplet", "Pointing", "Claiming", "Naked Pair", "X-Wing",
    "Hidden Pair", "Naked Triplet", "Swordfish", "Hidden Triplet", "XY-Wing", "XYZ-Wing",
    "Unique Rectangle type 1", "Unique Rectangle type 2", "Unique Rectangle type 3",
    "Unique Rectangle type 4",
    *(f"Unique Loop {n} type {t}" for n in (6, 8, 10, 12, 14) for t in (1, 2, 3, 4)),
    "Naked Quad", "Jellyfish", "Hidden Quad",
    "BUG type 1", "BUG type 2", "BUG type 3", "BUG type 4", "Aligned Pair Exclusion",
    "Bidirectional X-Cycle", "Bidirectional Y-Cycle", "Bidirectional Cycle", "Turbot Fish",
    "Forcing X-Chain", "Forcing Chain", "Nishio Forcing Chains", "Cell Forcing Chains",
    "Region Forcing Chains", "Dynamic Contradiction Forcing Chains",
    "Dynamic Double Forcing Chains", "Dynamic Cell Forcing Chains",
    "Dynamic Region Forcing Chains", "Aligned Triplet Exclusion",
    "Dynamic Contradiction Forcing Chains (+)", "Dynamic Double Forcing Chains (+)",
    "Dynamic Cell Forcing Chains (+)", "Dynamic Region Forcing Chains (+)",
    "Dynamic Contradiction Forcing Chains (+ Forcing Chains)",
    "Dynamic Double Forcing Chains (+ Forcing Chains)",
    "Dynamic Cell Forcing Chains (+ Forcing Chains)",
    "Dynamic Region Forcing Chains (+ Forcing Chains)",
    "Dynamic Contradiction Forcing Chains (+ Multiple Forcing Chains)",
    "Dynamic Double Forcing Chains (+ Multiple Forcing Chains)",
    "Dynamic Cell Forcing Chains (+ Multiple Forcing Chains)",
    "Dynamic Region Forcing Chains (+ Multiple Forcing Chains)",
    "Dynamic Contradiction Forcing Chains (+ Dynamic Forcing Chains)",
    "Dynamic Double Forcing Chains (+ Dynamic Forcing Chains)",
    "Dynamic Cell Forcing Chains (+ Dynamic Forcing Chains)",
    "Dynamic Region Forcing Chains (+ Dynamic Forcing Chains)",
)
(T_HIDDEN_SINGLE, T_DIRECT_POINTING, T_DIRECT_CLAIMING, T_DIRECT_HIDDEN_PAIR, T_NAKED_SINGLE,
 T_DIRECT_HIDDEN_TRIPLET, T_POINTING, T_CLAIMING, T_NAKED_PAIR, T_X_WING, T_HIDDEN_PAIR,
 T_NAKED_TRIPLET, T_SWORDFISH, T_HIDDEN_TRIPLET, T_XY_WING, T_XYZ_WING, T_UR1, T_UR2, T_UR3,
 T_UR4, T_UL1, *_LOOPS, T_NAKED_QUAD, T_JELLYFISH, T_HIDDEN_QUAD, T_BUG1, T_BUG2,
 T_BUG3, T_BUG4, T_APE, T_X_CYCLE, T_Y_CYCLE, T_XY_CYCLE, T_TURBOT, T_FORCING_X_CHAIN,
 T_FORCING_CHAIN, T_NISHIO, T_CELL_FC, T_REGION_FC, T_DYN_CONTRADICTION_FC, T_DYN_DOUBLE_FC,
 T_DYN_CELL_FC, T_DYN_REGION_FC, T_ATE, T_PLUS_CONTRADICTION_FC, T_PLUS_DOUBLE_FC,
 T_PLUS_CELL_FC, T_PLUS_REGION_FC, T_NEST2_CONTRADICTION_FC, T_NEST2_DOUBLE_FC, T_NEST2_CELL_FC,
 T_NEST2_REGION_FC, T_NEST3_CONTRADICTION_FC, T_NEST3_DOUBLE_FC, T_NEST3_CELL_FC,
 T_NEST3_REGION_FC, T_NEST4_CONTRADICTION_FC, T_NEST4_DOUBLE_FC, T_NEST4_CELL_FC,
 T_NEST4_REGION_FC) = range(1, len(TECHNIQUES))

TECH, RATING, PCELL, PDIG, NELIM, INFO, ELIMS = 0, 1, 2, 3, 4, 5, 16
# the chains' base ratings (tenths), to which serate adds 0.1 for each length increment
CHAIN_BASE = np.zeros(len(TECHNIQUES), np.int64)
CHAIN_BASE[[T_X_CYCLE, T_Y_CYCLE]] = 65
CHAIN_BASE[[T_TURBOT, T_FORCING_X_CHAIN]] = 66
CHAIN_BASE[[T_XY_CYCLE, T_FORCING_CHAIN]] = 70
CHAIN_BASE[T_NISHIO] = 75
CHAIN_BASE[[T_CELL_FC, T_REGION_FC]] = 80
CHAIN_BASE[[T_DYN_CONTRADICTION_FC, T_DYN_DOUBLE_FC, T_DYN_CELL_FC, T_DYN_REGION_FC]] = 85
CHAIN_BASE[[T_PLUS_CONTRADICTION_FC, T_PLUS_DOUBLE_FC, T_PLUS_CELL_FC, T_PLUS_REGION_FC]] = 90
CHAIN_BASE[[T_NEST2_CONTRADICTION_FC, T_NEST2_DOUBLE_FC, T_NEST2_CELL_FC, T_NEST2_REGION_FC]] = 95
CHAIN_BASE[[T_NEST3_CONTRADICTION_FC, T_NEST3_DOUBLE_FC, T_NEST3_CELL_FC, T_NEST3_REGION_FC]] = 100
CHAIN_BASE[[T_NEST4_CONTRADICTION_FC, T_NEST4_DOUBLE_FC, T_NEST4_CELL_FC, T_NEST4_REGION_FC]] = 105
HINT_SIZE = ELIMS + 729
NO_HINT = 10000  # H[RATING] while nothing was offered
NAKED_TECH = np.array([0, 0, T_NAKED_PAIR, T_NAKED_TRIPLET, T_NAKED_QUAD], np.int64)
NAKED_RATING = np.array([0, 0, 30, 36, 50], np.int64)
HIDDEN_TECH = np.array([0, 0, T_HIDDEN_PAIR, T_HIDDEN_TRIPLET, T_HIDDEN_QUAD], np.int64)
HIDDEN_RATING = np.array([0, 0, 34, 40, 54], np.int64)
DIRECT_HIDDEN_TECH = np.array([0, 0, T_DIRECT_HIDDEN_PAIR, T_DIRECT_HIDDEN_TRIPLET], np.int64)
DIRECT_HIDDEN_RATING = np.array([0, 0, 20, 25], np.int64)
FISH_TECH = np.array([0, 0, T_X_WING, T_SWORDFISH, T_JELLYFISH], np.int64)
FISH_RATING = np.array([0, 0, 32, 38, 52], np.int64)


@compiled.helper(inline="always")
def clear(H):
    """No hint yet."""
    H[TECH] = 0
    H[RATING] = NO_HINT
    H[PCELL] = -1
    H[PDIG] = 0
    H[NELIM] = 0


@compiled.helper()
def name_cells(H, cells, n):
    """A pattern's cells[:n] into H[INFO + 4..], for the step's text (rate/__init__.py's
    _named): four a word, each + 1 in 7 bits (0: no more), up to 28."""
    for k in range(4, ELIMS - INFO):
        H[INFO + k] = 0
    for j in range(min(n, 4 * (ELIMS - INFO - 4))):
        H[INFO + 4 + j // 4] |= (cells[j] + 1) << (7 * (j % 4))


@compiled.helper(_nrt=False)
def offer(H, tech, rating, pcell, pdig, E, ne, i0, i1, i2, i3):
    """Keep this hint when it is easier than the one kept; True when kept."""
    if rating >= H[RATING]:
        return False
    H[TECH] = tech
    H[RATING] = rating
    H[PCELL] = pcell
    H[PDIG] = pdig
    H[NELIM] = ne
    for i in range(ne):
        H[ELIMS + i] = E[i]
    H[INFO] = i0
    H[INFO + 1] = i1
    H[INFO + 2] = i2
    H[INFO + 3] = i3
    return True


@compiled.helper(inline="always")
def serates_house(k):
    """The k-th house in serate's order of houses: the boxes, the columns, the rows."""
    return BOX + k if k < 9 else (COL + k - 9 if k < 18 else ROW + k - 18)


@compiled.helper(inline="always")
def empties(val, h):
    """How many cells of house h are empty."""
    n = 0
    for k in range(9):
        if val[HOUSE_CELLS[h, k]] == 0:
            n += 1
    return n


# -------------------------------------------------------------------------- singles


@compiled.helper(_nrt=False)
def hidden_single(val, cand, bb, H, E):
    """A digit with one place left in a house: 1.0 when it is the house's last empty cell,
    1.2 in a box, 1.5 in a row or column; the first of the easiest in serate's order of
    houses, then digits. So the houses with one empty cell are looked at first, then the
    boxes: most steps of most puzzles end at a box."""
    e0 = e1 = e2 = 0  # the empty cells, a word each: those with a candidate
    for d in range(9):
        e0 |= bb[d, 0]
        e1 |= bb[d, 1]
        e2 |= bb[d, 2]
    for k in range(27):
        h = serates_house(k)
        c = alone(e0, e1, e2, h)
        if c >= 0:  # (its candidates' each one place in h: the first goes)
            return offer(H, T_HIDDEN_SINGLE, 10, c, lowbit(cand[c]) + 1, E, 0, h, 0, 0, 0)
    for k in range(27):  # (the boxes first: 1.2 before 1.5)
        h = serates_house(k)
        for d in range(9):
            c = alone(bb[d, 0], bb[d, 1], bb[d, 2], h)
            if c >= 0:
                return offer(H, T_HIDDEN_SINGLE, 12 if h >= BOX else 15, c, d + 1, E, 0, h,
                             0, 0, 0)
    return False


@compiled.helper(_nrt=False)
def naked_single(val, cand, H, E):
    """A cell with one candidate left: 2.3."""
    for c in range(81):
        if val[c] == 0 and POP9[cand[c]] == 1:
            return offer(H, T_NAKED_SINGLE, 23, c, lowbit(cand[c]) + 1, E, 0, 0, 0, 0, 0)
    return False


@compiled.helper(_nrt=False)
def single_after(bb, d, gone):
    """The cell that becomes d's (0-based) only place in a box once the cells of the
    bitboard `gone` lose d, or -1 (serate's direct pointing looks at boxes only)."""
    for h in range(BOX, 27):
        before = 0
        after = 0
        for w in range(3):
            before += popcount(bb[d, w] & HOUSE_BB[h, w])
            after += popcount(bb[d, w] & ~gone[w] & HOUSE_BB[h, w])
        if after == 1 and before > 1:
            for w in range(3):
                m = bb[d, w] & ~gone[w] & HOUSE_BB[h, w]
                if m:
                    return 27 * w + lowbit(m)
    return -1


# -------------------------------------------------------------------------- intersections


@compiled.helper(_nrt=False)
def intersections(cand, bb, H, E, direct):
    """Pointing (a box's candidates of a digit on one line: out of the rest of the line,
    2.6) and claiming (a line's in one box: out of the rest of the box, 2.8). `direct`: only
    those that leave a hidden single, which is placed instead (direct pointing 1.7)."""
    # serate's order: box -> column, box -> row, column -> box, row -> box; digits, houses
    for way in range(4):
        kind = 0 if way < 2 else 1  # 0: pointing (box -> line), 1: claiming (line -> box)
        if direct and kind == 1:
            break  # serate 1.2.1 has no direct claiming
        for d in range(9):
            for i in range(9):
                h0 = BOX + i if kind == 0 else (COL + i if way == 2 else ROW + i)
                if count_in(bb, d, h0) < 2:
                    continue
                # the other house holding all of h0's candidates of d
                first = -1
                for k in range(9):
                    c = HOUSE_CELLS[h0, k]
                    if (cand[c] >> d) & 1:
                        first = c
                        break
                for t in range(3):
                    h1 = CELL_HOUSES[first, t]
                    if h1 == h0 or (way == 0 and not COL <= h1 < BOX) or (
                            way == 1 and h1 >= COL) or (kind == 1 and h1 < BOX):
                        continue
                    inside = True
                    ne = 0
                    for w in range(3):
                        if bb[d, w] & HOUSE_BB[h0, w] & ~HOUSE_BB[h1, w]:
                            inside = False
                    if not inside:
                        continue
                    gone = (bb[d, 0] & HOUSE_BB[h1, 0] & ~HOUSE_BB[h0, 0],
                            bb[d, 1] & HOUSE_BB[h1, 1] & ~HOUSE_BB[h0, 1],
                            bb[d, 2] & HOUSE_BB[h1, 2] & ~HOUSE_BB[h0, 2])
                    for w in range(3):
                        ne = append_word(E, ne, w, gone[w], d)
                    if ne == 0:
                        continue
                    shared = 0  # h1's places (0..8) in h0 that hold d: the pattern's cells
                    for k in range(9):
                        c = HOUSE_CELLS[h1, k]
                        if (cand[c] >> d) & 1 and CELL_HOUSES[c, h0 // 9] == h0:
                            shared |= 1 << k
                    if direct:
                        c = single_after(bb, d, gone)
                        if c >= 0:
                            return offer(H, T_DIRECT_POINTING, 17, c, d + 1, E, 0,
                                         h0, h1, d + 1, shared)
                    else:
                        tech = T_POINTING if kind == 0 else T_CLAIMING
                        offer(H, tech, 26 if kind == 0 else 28, -1, 0, E, ne, h0, h1, d + 1,
                              shared)
                        if kind == 0:
                            return True
    return H[TECH] != 0


# -------------------------------------------------------------------------- subsets


@compiled.helper(inline="always")
def join(m, masks):
    """The union of masks[k] for the bits k of m."""
    u = 0
    while m:
        u |= masks[lowbit(m)]
        m &= m - 1
    return u


@compiled.helper(_nrt=False)
def next_tight(m, eligible, size, masks):
    """The subset of `eligible` (bits 0-8) with `size` bits whose masks[] join into exactly
    `size` bits that follows m in increasing order; 0 after the last (m = 0: the first).

    Depth first from the highest element down, each level's element ascending (so the
    subsets come in increasing order), a branch left as soon as its join has more than
    `size` bits, not every subset of `eligible` tried."""
    chosen = 0  # the elements chosen so far, from the highest down
    after = 0  # at the next level, the element tried last (0: none yet)
    if m:
        chosen = m & (m - 1)
        after = m & -m
    while True:
        below = eligible if chosen == 0 else eligible & ((chosen & -chosen) - 1)
        rest = below & ~((after << 1) - 1) if after else below
        need = size - 1 - POP9[chosen]  # elements still to choose below this level's
        joined = join(chosen, masks)
        after = 0
        while rest:
            b = rest & -rest
            rest &= rest - 1
            if POP9[eligible & (b - 1)] < need:
                continue
            u = joined | masks[lowbit(b)]
            if POP9[u] > size:
                continue
            if need == 0:
                if POP9[u] == size:
                    return chosen | b
                continue
            chosen |= b
            after = -1  # (down a level)
            break
        if after == -1:
            after = 0
            continue
        if chosen == 0:
            return 0
        after = chosen & -chosen  # (up a level: on after the element left)
        chosen &= chosen - 1


@compiled.helper()
def naked_subset(val, cand, H, E, size):
    """`size` cells of a house holding `size` digits between them: those digits out of the
    house's other cells. Serate looks only in houses with twice `size` empty cells."""
    held = np.zeros(9, np.int64)  # a house's cells' candidates
    for t in range(27):
        h = serates_house(t)
        if empties(val, h) < 2 * size:
            continue
        eligible = 0
        for k in range(9):
            c = HOUSE_CELLS[h, k]
            if val[c] == 0 and 2 <= POP9[cand[c]] <= size:
                eligible |= 1 << k
        if POP9[eligible] < size:
            continue
        for k in range(9):
            held[k] = cand[HOUSE_CELLS[h, k]]
        m = 0
        while True:
            m = next_tight(m, eligible, size, held)
            if m == 0:
                break
            digits = join(m, held)
            ne = 0
            for k in range(9):
                if (m >> k) & 1:
                    continue
                c = HOUSE_CELLS[h, k]
                x = cand[c] & digits
                while x:
                    d = lowbit(x)
                    x &= x - 1
                    E[ne] = c * 10 + d + 1
                    ne += 1
            if ne:
                return offer(H, NAKED_TECH[size], NAKED_RATING[size], -1, 0, E, ne, h, m,
                             digits, 0)
    return False


@compiled.helper(_nrt=False)
def hidden_subset(val, cand, bb, H, E, size, direct):
    """`size` digits with only `size` places in a house: the places' other candidates go.
    `direct`: only those that leave a hidden single in the house, which is placed instead.
    Serate looks only in houses with more than twice `size` empty cells (direct: `size`)."""
    for t in range(27):
        h = serates_house(t)
        if empties(val, h) <= (size if direct else 2 * size):
            continue
        # each digit's places (a tuple: nothing allocated, so no reference counting)
        pos = (positions(cand, h, 0), positions(cand, h, 1), positions(cand, h, 2),
               positions(cand, h, 3), positions(cand, h, 4), positions(cand, h, 5),
               positions(cand, h, 6), positions(cand, h, 7), positions(cand, h, 8))
        eligible = 0
        for d in range(9):
            n = POP9[pos[d]]
            if n >= 2 and n <= size:
                eligible |= 1 << d
        if POP9[eligible] < size:
            continue
        m = 0
        while True:
            m = next_tight(m, eligible, size, pos)
            if m == 0:
                break
            cells = join(m, pos)
            ne = 0
            for k in range(9):
                if (cells >> k) & 1:
                    c = HOUSE_CELLS[h, k]
                    x = cand[c] & ~m
                    while x:
                        d = lowbit(x)
                        x &= x - 1
                        E[ne] = c * 10 + d + 1
                        ne += 1
            if ne == 0:
                continue
            if not direct:
                return offer(H, HIDDEN_TECH[size], HIDDEN_RATING[size], -1, 0, E, ne, h,
                             cells, m, 0)
            for d in range(9):
                if (m >> d) & 1 or pos[d] == 0:
                    continue
                if POP9[pos[d]] >= 2 and POP9[pos[d] & ~cells] == 1:
                    c = HOUSE_CELLS[h, lowbit(pos[d] & ~cells)]
                    return offer(H, DIRECT_HIDDEN_TECH[size], DIRECT_HIDDEN_RATING[size], c,
                                 d + 1, E, 0, h, cells, m, 0)
    return False


@compiled.helper()
def fish(val, cand, H, E, size):
    """A digit's places in `size` base lines lie in `size` cross lines: the digit out of
    the rest of the cross lines. X-Wing, Swordfish, Jellyfish. Serate's order: columns as
    the base first, then rows; the sets of base lines; the digits, each only while it is
    placed at most 9 - 2 * `size` times."""
    placed = np.zeros(9, np.int64)
    for c in range(81):
        if val[c] != 0:
            placed[val[c] - 1] += 1
    lines = np.zeros((9, 9), np.int64)  # [digit, base line]: the line's places of the digit
    elig = np.zeros(9, np.int64)  # per digit, its lines with 2 to `size` places
    for kind in (1, 0):  # base: 1 columns, 0 rows
        base0 = ROW if kind == 0 else COL
        for d in range(9):
            elig[d] = 0
            if placed[d] + 2 * size > 9:
                continue
            for i in range(9):
                lines[d, i] = positions(cand, base0 + i, d)
                if 2 <= POP9[lines[d, i]] <= size:
                    elig[d] |= 1 << i
        # serate's fish is the first (base lines, digit) in that order: each digit's first
        # with eliminations, the least of them
        best = 1 << 9
        bd = -1
        for d in range(9):
            m = 0
            while True:
                m = next_tight(m, elig[d], size, lines[d])
                if m == 0 or m >= best:
                    break
                cover = join(m, lines[d])
                gone = False
                for i in range(9):
                    if not (m >> i) & 1 and lines[d, i] & cover:
                        gone = True
                if gone:
                    best = m
                    bd = d
                    break
        if bd < 0:
            continue
        m = best
        d = bd
        cover = join(m, lines[d])
        ne = 0
        for i in range(9):
            if (m >> i) & 1:
                continue
            x = lines[d, i] & cover
            while x:
                j = lowbit(x)
                x &= x - 1
                c = 9 * i + j if kind == 0 else 9 * j + i
                E[ne] = c * 10 + d + 1
                ne += 1
        # the pattern's cells, by cross line then base line: bit 4a + b for the a-th cross
        # line and b-th base line of the fish that hold the digit
        shape = 0
        a = 0
        for j in range(9):
            if (cover >> j) & 1:
                b = 0
                for i in range(9):
                    if (m >> i) & 1:
                        if (lines[d, i] >> j) & 1:
                            shape |= 1 << (4 * a + b)
                        b += 1
                a += 1
        return offer(H, FISH_TECH[size], FISH_RATING[size], -1, 0, E, ne, kind, m, cover,
                     (d + 1) | (shape << 4))
    return False


# -------------------------------------------------------------------------- wings


@compiled.helper(inline="always")
def append_word(E, ne, w, m, d):
    """Append to E (ne so far) candidate d (0-based) of the cells of bitboard word w's bits m."""
    while m:
        E[ne] = (27 * w + lowbit(m)) * 10 + d + 1
        m &= m - 1
        ne += 1
    return ne


@compiled.helper()
def common_peers(bb, d, a, b, c, E, ne):
    """Append to E the cells seeing a, b and c (c = -1: a and b) with candidate d (0-based)."""
    for w in range(3):
        m = bb[d, w] & PEER_BB[a, w] & PEER_BB[b, w]
        if c >= 0:
            m &= PEER_BB[c, w]
        ne = append_word(E, ne, w, m, d)
    return ne


@compiled.helper()
def seen_by_all(bb, d, cells, which, E, ne):
    """Append to E the cells with candidate d (0-based) that see every cells[k] for the
    bits k of `which`."""
    for w in range(3):
        m = bb[d, w]
        x = which
        while x:
            k = lowbit(x)
            x &= x - 1
            m &= PEER_BB[cells[k], w]
        ne = append_word(E, ne, w, m, d)
    return ne


@compiled.helper()
def xy_wing(val, cand, bb, H, E, xyz):
    """XY-Wing (4.2): a bivalue pivot xy seeing xz and yz: z out of the cells seeing both
    pincers. XYZ-Wing (4.4): a pivot xyz, z also out of the pivot's peers."""
    want = 3 if xyz else 2
    for p in range(81):
        mp = cand[p]
        if val[p] != 0 or POP9[mp] != want:
            continue
        for a in range(20):  # (the peers in cell order: pincers met as a scan meets them)
            i = PEERS[p, a]
            mi = cand[i]
            if POP9[mi] != 2:
                continue
            if xyz:
                if (mi & mp) != mi:
                    continue
            elif POP9[mi & mp] != 1:
                continue
            for b in range(a + 1, 20):
                j = PEERS[p, b]
                mj = cand[j]
                if POP9[mj] != 2 or mj == mi:
                    continue
                if xyz:
                    if (mj & mp) != mj or (mi | mj) != mp:
                        continue
                    z = mi & mj
                else:
                    z = mi & mj & ~mp
                    if POP9[z] != 1 or POP9[mj & mp] != 1 or (mi | mj | mp) != (mp | z):
                        continue
                zd = lowbit(z)
                ne = common_peers(bb, zd, i, j, p if xyz else -1, E, 0)
                # the pincers and pivot themselves are not peers of all three
                k = 0
                while k < ne:
                    c = E[k] // 10
                    if c == p or c == i or c == j:
                        ne -= 1
                        E[k] = E[ne]
                    else:
                        k += 1
                if ne:
                    return offer(H, T_XYZ_WING if xyz else T_XY_WING, 44 if xyz else 42, -1, 0,
                                 E, ne, p, i, j, zd + 1)
    return False


# -------------------------------------------------------------------------- uniqueness


@compiled.helper()
def unique_rectangle(val, cand, bb, H, E):
    """Unique rectangles (types 1-4, 4.5): four cells on two rows, two columns and two
    boxes that could all hold the same two digits; a puzzle with one solution cannot end
    with them so, which eliminates."""
    found = False
    for r1 in range(9):
        for r2 in range(r1 + 1, 9):
            for c1 in range(9):
                for c2 in range(c1 + 1, 9):
                    if (r1 // 3 == r2 // 3) == (c1 // 3 == c2 // 3):
                        continue  # four boxes, or one
                    a = 9 * r1 + c1
                    b = 9 * r1 + c2
                    c = 9 * r2 + c1
                    d = 9 * r2 + c2
                    if val[a] or val[b] or val[c] or val[d]:
                        continue
                    common = cand[a] & cand[b] & cand[c] & cand[d]
                    if POP9[common] < 2:
                        continue
                    x = common
                    while x:
                        u = lowbit(x)
                        x &= x - 1
                        y = x
                        while y:
                            v = lowbit(y)
                            y &= y - 1
                            pair = (1 << u) | (1 << v)
                            if rectangle(val, cand, bb, H, E, a, b, c, d, pair, u, v):
                                found = True
    return found


@compiled.helper()
def viable(cand, cells, n, pair):
    """Whether a loop through cells[:n] could still give a hint: at most two cells with
    more than the two digits (types 1, 3, 4), or any number with one same extra (type 2)."""
    n_extra = 0
    x = 0
    same = True
    for k in range(n):
        m = cand[cells[k]]
        if m != pair:
            n_extra += 1
            xk = m & ~pair
            if POP9[xk] != 1 or (x != 0 and xk != x):
                same = False
            x = xk
    return n_extra <= 2 or same


@compiled.helper()
def unique_loop(val, cand, bb, H, E):
    """Unique loops: 6 or more cells holding the same two digits, each linked to the next
    through a house, every house holding none or two of them, an odd number of steps apart
    along the loop (deadly as a rectangle). Searched as serate does, so that of two loops
    (or two ways round one) the one it meets first is taken: from each cell holding only
    two digits in turn, depth first, the next cell through the current one's box, row, then
    column (not the kind of house it was reached through), in the house's order."""
    found = False
    cells = np.zeros(16, np.int64)
    inhouse = np.zeros(27, np.int64)
    even = np.zeros(27, np.int64)  # a closed loop's cells per house at even places
    kind = np.zeros(16, np.int64)  # per depth: the kind of house tried (0 box, 1 row, 2 col)
    left = np.zeros(16, np.int64)  # and its places not tried yet (9 bits, as in places)
    came = np.zeros(16, np.int64)  # the kind of house the cell was reached through
    # per house, its places that hold both digits of the pair (the search steps through
    # these alone, in the house's order: it could only pass over the others), for `last`
    places = np.zeros(27, np.int64)
    extra = np.zeros(9, np.int64)
    last = 0
    held = 0  # the cells that hold it
    for s0 in range(81):
        pair = cand[s0]
        if val[s0] != 0 or POP9[pair] != 2:
            continue
        u = lowbit(pair)
        v = lowbit(pair & (pair - 1))
        if pair != last:
            last = pair
            held = 0
            # a loop (6 cells or more) holds at most two cells with more than the pair, or
            # else all its others hold the pair and one same digit (viable): most pairs
            # are in too few such cells for either, and need no search (placed cells hold
            # no candidates)
            bare = 0  # the cells holding the pair alone
            for z in range(9):
                extra[z] = 0
            for c in range(81):
                m = cand[c]
                if m == pair:
                    bare += 1
                elif m & pair == pair and POP9[m] == 3:
                    extra[lowbit(m & ~pair)] += 1
            if bare < 4 and bare + extra.max() < 6:
                continue
            for h in range(27):
                places[h] = positions(cand, h, u) & positions(cand, h, v)
                if h < 9:  # (the rows: each cell once)
                    held += POP9[places[h]]
        if held < 6:
            continue
        for h in range(27):
            inhouse[h] = 0
        for t in range(3):
            inhouse[CELL_HOUSES[s0, t]] += 1
        cells[0] = s0
        came[0] = -1
        kind[0] = 0
        left[0] = places[CELL_HOUSES[s0, SERATE_HOUSES[0]]]
        depth = 0
        while depth >= 0:
            cur = cells[depth]
            if kind[depth] >= 3:
                if depth > 0:
                    for t in range(3):
                        inhouse[CELL_HOUSES[cur, t]] -= 1
                depth -= 1
                continue
            if kind[depth] == came[depth] or left[depth] == 0:
                kind[depth] += 1
                if kind[depth] < 3:
                    left[depth] = places[CELL_HOUSES[cur, SERATE_HOUSES[kind[depth]]]]
                continue
            h = CELL_HOUSES[cur, SERATE_HOUSES[kind[depth]]]
            nxt = HOUSE_CELLS[h, lowbit(left[depth])]
            left[depth] &= left[depth] - 1
            n = depth + 1
            if nxt == s0:
                if n >= 6 and n % 2 == 0 and closed_loop(cells, n, inhouse, even):
                    if deadly(val, cand, bb, H, E, cells, n, pair, u, v, True):
                        found = True
                continue
            if n >= 14:
                continue
            if cand[nxt] == pair and nxt < s0:
                continue  # a loop through it was met from it, first (and kept on ties)
            ok = True
            for k in range(n):
                if cells[k] == nxt:
                    ok = False
            for t in range(3):
                if inhouse[CELL_HOUSES[nxt, t]] >= 2:
                    ok = False  # a third cell in a house: no loop through it is deadly
            if not ok:
                continue
            cells[n] = nxt
            if not viable(cand, cells, n + 1, pair):
                continue
            for t in range(3):
                inhouse[CELL_HOUSES[nxt, t]] += 1
            came[n] = kind[depth]
            kind[n] = 0
            left[n] = places[CELL_HOUSES[nxt, SERATE_HOUSES[0]]]
            depth = n
    return found


@compiled.helper()
def closed_loop(cells, n, inhouse, even):
    """Whether the loop cells[:n] holds none or two cells in every house, an odd number of
    steps apart (serate's test: else u and v cannot swap, and it is not deadly)."""
    for h in range(27):
        if inhouse[h] != 0 and inhouse[h] != 2:
            return False
        even[h] = 0
    for k in range(0, n, 2):
        for t in range(3):
            even[CELL_HOUSES[cells[k], t]] += 1
    for h in range(27):
        if even[h] * 2 != inhouse[h]:
            return False
    return True


@compiled.helper()
def ur_offer(H, tech, rating, E, ne, order, n, digits):
    """offer, and among rectangles and loops of one rating serate's order: the lower type
    first, then the one found first (serate starts from each cell holding only the pair in
    turn: the lower order[0]); the pattern's cells (order[:n], as serate lists them) named
    for the text."""
    if rating == H[RATING] and (tech < H[TECH] or (
            tech == H[TECH] and order[0] < (H[INFO + 4] & 127) - 1)):
        H[RATING] = rating + 1
    if not offer(H, tech, rating, -1, 0, E, ne, 0, digits, 0, 0):
        return False
    name_cells(H, order, n)
    return True


@compiled.helper()
def rectangle(val, cand, bb, H, E, a, b, c, d, pair, u, v):
    """The hints of one rectangle (corners a b / c d, a-d diagonal) on the digits u, v."""
    cells = np.array([a, b, d, c])  # in loop order
    return deadly(val, cand, bb, H, E, cells, 4, pair, u, v, False)


@compiled.helper(inline="always")
def first_house(a, b):
    """Which house of a's that b shares serate looks in first: 0 box, 1 row, 2 column."""
    if CELL_HOUSES[a, 2] == CELL_HOUSES[b, 2]:
        return 0
    return 1 if CELL_HOUSES[a, 0] == CELL_HOUSES[b, 0] else 2


@compiled.helper()
def deadly(val, cand, bb, H, E, cells, n, pair, u, v, ordered):
    """The hints of a deadly pattern: the n cells of a unique rectangle (n = 4) or loop, all
    holding the digits u, v (`pair`), each house holding none or two of them. Types 1-4;
    a rectangle rates 4.5, a loop of 6 cells 4.6, of 8 4.7, of 10 or more 5.0."""
    t1 = T_UR1 if n == 4 else T_UL1 + (n - 6) // 2 * 4  # "Unique Loop <n> type 1"
    r0 = 45 if n == 4 else (46 if n == 6 else (47 if n == 8 else 50))
    extra = 0
    n_extra = 0
    for k in range(n):
        if cand[cells[k]] != pair:
            extra |= 1 << k
            n_extra += 1
    if n_extra == 0 or n_extra == n:
        return False  # serate starts its loops from a cell holding only u and v
    # the text's cells in serate's order, from the first cell holding only u and v towards
    # its neighbour in a house it looks in first (box, row, column); and the digits
    named = np.zeros(n, np.int64)
    s = -1
    for k in range(n):
        if cand[cells[k]] == pair and (s < 0 or cells[k] < cells[s]):
            s = k
    step = 1
    if first_house(cells[s], cells[(s + n - 1) % n]) < first_house(cells[s], cells[(s + 1) % n]):
        step = n - 1
    if ordered:  # already as serate met it (unique_loop)
        s = 0
        step = 1
    for j in range(n):
        named[j] = cells[(s + j * step) % n]
    digits = (u + 1) * 10 + v + 1
    if n_extra == 1:  # type 1: the odd cell is not u nor v
        e = cells[lowbit(extra)]
        E[0] = e * 10 + u + 1
        E[1] = e * 10 + v + 1
        return ur_offer(H, t1, r0, E, 2, named, n, digits)
    # type 2: one extra digit, the same in every odd cell: out of the cells seeing them all
    x = 0
    one = True
    for k in range(n):
        if (extra >> k) & 1:
            xk = cand[cells[k]] & ~pair
            if POP9[xk] != 1 or (x != 0 and xk != x):
                one = False
            x = xk
    kept = False
    if one:
        ne = seen_by_all(bb, lowbit(x), cells, extra, E, 0)
        if ne and ur_offer(H, t1 + 1, r0, E, ne, named, n, digits):
            kept = True
    if n_extra != 2:
        return kept
    e1 = cells[lowbit(extra)]
    e2 = cells[lowbit(extra & (extra - 1))]
    if not SEES[e1, e2]:
        return kept
    for t in range(3):
        h = CELL_HOUSES[e1, t]
        if CELL_HOUSES[e2, t] != h:
            continue
        # type 4: u (or v) only at e1 and e2 in their house: the other one goes
        for s in range(2):
            keep = u if s == 0 else v
            drop = v if s == 0 else u
            if count_in(bb, keep, h) == 2:
                E[0] = e1 * 10 + drop + 1
                E[1] = e2 * 10 + drop + 1
                if ur_offer(H, t1 + 3, r0, E, 2, named, n, (keep + 1) * 10 + drop + 1):
                    kept = True
    if POP9[(cand[e1] | cand[e2]) & ~pair] >= 2 and ur_type3(
            val, cand, bb, H, E, e1, e2, pair, t1 + 2, r0, named, n, digits):
        kept = True
    return kept


@compiled.helper()
def ur_type3(val, cand, bb, H, E, e1, e2, pair, tech, r0, named, n, digits):
    """Type 3, by serate's rules: the two odd corners e1, e2 share a house. Naked: e1 as a
    cell holding their extras, with `size` - 1 other cells of the house (not e2), holds
    `size` digits, which go from the house's other cells only (rating + 0.1 a digit past
    one). Hidden: the pair and `size` - 2 digits other than the extras have, e2 aside,
    `size` places in the house (e1 one of them): the other places keep only those digits
    (rating + 0.1 a digit past two). Sizes 2..7, the houses box, row, column."""
    extra = (cand[e1] | cand[e2]) & ~pair
    rest = 0x1FF & ~pair & ~extra  # the digits a hidden set may add to the pair
    kept = False
    for size in range(2, 8):
        for t in SERATE_HOUSES:
            h = CELL_HOUSES[e1, t]
            if CELL_HOUSES[e2, t] != h:
                continue
            k1 = 0
            k2 = 0
            for k in range(9):
                if HOUSE_CELLS[h, k] == e1:
                    k1 = k
                elif HOUSE_CELLS[h, k] == e2:
                    k2 = k
            empty = empties(val, h)
            if 2 * size <= empty and size >= POP9[extra]:
                for m in range(512):
                    if POP9[m] != size or not (m >> k1) & 1 or (m >> k2) & 1:
                        continue
                    union = extra
                    naked = extra & cand[e1] & cand[e2]
                    ok = True
                    for k in range(9):
                        if (m >> k) & 1 and k != k1:
                            x = cand[HOUSE_CELLS[h, k]]
                            if POP9[x] < 2:
                                ok = False
                                break
                            union |= x
                            naked |= x
                    if not ok or POP9[union] != size or POP9[naked] != size:
                        continue
                    ne = 0  # the set's digits go from the house's other cells (only)
                    y = union
                    while y:
                        dg = lowbit(y)
                        y &= y - 1
                        for k in range(9):
                            o = HOUSE_CELLS[h, k]
                            if not (m >> k) & 1 and k != k2 and (cand[o] >> dg) & 1:
                                E[ne] = o * 10 + dg + 1
                                ne += 1
                    if ne and ur_offer(H, tech, r0 + size - 1, E, ne, named, n, digits):
                        kept = True
            if 2 * size < empty and size - 2 <= POP9[rest]:
                for s in range(512):
                    if s & ~rest or POP9[s] != size - 2:
                        continue
                    values = s | pair
                    places = 0
                    ok = True
                    y = values
                    while y:
                        dg = lowbit(y)
                        y &= y - 1
                        p = positions(cand, h, dg) & ~(1 << k2)
                        if p == 0:
                            ok = False
                            break
                        places |= p
                    if not ok or POP9[places] != size:
                        continue
                    ne = 0
                    for k in range(9):
                        if (places >> k) & 1 and k != k1 and k != k2:
                            x = HOUSE_CELLS[h, k]
                            z = cand[x] & ~values
                            while z:
                                E[ne] = x * 10 + lowbit(z) + 1
                                z &= z - 1
                                ne += 1
                    if ne and ur_offer(H, tech, r0 + size - 2, E, ne, named, n, digits):
                        kept = True
    return kept


@compiled.helper()
def bug(val, cand, bb, H, E):
    """Bivalue universal grave: were the extra candidates of a few cells gone, every cell
    would hold two and every house each digit twice, a puzzle of two solutions, so one
    extra is true. Type 1 (5.6): one such cell, which keeps only its extras; type 2 (5.7):
    one extra digit in all, which goes from the cells seeing every such cell; type 4 (5.7):
    two such cells in a house sharing one grave digit, which each keep with their extras;
    type 3 (5.7 + 0.1 a digit past two): the extras and cells of a house seeing them all
    make a naked set, whose digits leave the house's other cells.

    A cell's extras are found as serate finds them: in houses in its order (boxes, rows,
    columns), a digit in neither none nor two places whose places hold one cell of three
    digits or more; one of no such cell means no grave. When a single digit is the only
    one so found, every cell of three digits or more among its places has it as an extra."""
    bugc = np.zeros(28, np.int64)
    bx = np.zeros(81, np.int64)  # each cell's extra digits
    allx = np.zeros(81, np.bool_)  # lkSudoku's rule: every such cell of the one digit
    nb = 0
    extras = 0
    only = -1  # the one digit found so far; -2 once two were
    common = np.zeros(3, np.int64)  # the cells seeing every such cell (bitboard)
    for k in range(27):
        h = BOX + k if k < 9 else (ROW + k - 9 if k < 18 else COL + k - 18)
        for d in range(9):
            n = count_in(bb, d, h)
            if n == 0 or n == 2:
                continue
            found = 0
            cell = -1
            for j in range(9):
                c = HOUSE_CELLS[h, j]
                if (cand[c] >> d) & 1 and POP9[cand[c]] >= 3:
                    found += 1
                    cell = c
                    if only == -1 or only == d:
                        allx[c] = True
            if only == -1:
                only = d
            elif only != d:
                only = -2
            if found == 0:
                return False
            if found > 1:
                continue  # which of them: another house says
            if bx[cell] == 0:
                nb = add_bug_cell(cell, bugc, nb, common)
                if nb < 0:
                    return False
            bx[cell] |= 1 << d
            extras |= 1 << d
            if nb > 1 and POP9[extras] > 1 and (common[0] | common[1] | common[2]) == 0:
                return False
    if only >= 0:
        for c in range(81):
            if allx[c] and bx[c] == 0:
                nb = add_bug_cell(c, bugc, nb, common)
                if nb < 0:
                    return False
                bx[c] = 1 << only
                if nb > 1 and POP9[extras] > 1 and (common[0] | common[1] | common[2]) == 0:
                    return False
    if nb == 0:
        return False
    # (common holds none of the cells: no cell sees itself)
    # the grave without the extras: two digits a cell, each digit twice (or not at all) in
    # every house
    for c in range(81):
        if val[c] == 0 and POP9[cand[c] & ~bx[c]] != 2:
            return False
    for h in range(27):
        for d in range(9):
            n = count_in(bb, d, h)
            for i in range(nb):
                c = bugc[i]
                if (bx[c] >> d) & 1 and (CELL_HOUSES[c, 0] == h or CELL_HOUSES[c, 1] == h
                                         or CELL_HOUSES[c, 2] == h):
                    n -= 1
            if n != 0 and n != 2:
                return False
    if nb == 1:
        c = bugc[0]
        ne = 0  # the cell keeps only its extras (serate removes the rest, places none)
        x = cand[c] & ~extras
        while x:
            E[ne] = c * 10 + lowbit(x) + 1
            x &= x - 1
            ne += 1
        return offer(H, T_BUG1, 56, -1, 0, E, ne, c, lowbit(extras) + 1, 0, 0)
    kept = False
    if POP9[extras] == 1:
        d = lowbit(extras)
        ne = append_word(E, 0, 0, common[0] & bb[d, 0], d)
        ne = append_word(E, ne, 1, common[1] & bb[d, 1], d)
        ne = append_word(E, ne, 2, common[2] & bb[d, 2], d)
        if ne and offer(H, T_BUG2, 57, -1, 0, E, ne, d + 1, 0, 0, 0):
            name_cells(H, bugc, nb)
            kept = True
        if nb == 2:
            kept |= bug4(cand, H, E, bugc, bx, extras)
        return kept
    if (common[0] | common[1] | common[2]) == 0:
        return False
    if nb == 2:
        kept |= bug4(cand, H, E, bugc, bx, extras)
    if POP9[extras] > 1 and bug3(cand, H, E, bugc, nb, extras, common):
        kept = True
    return kept


@compiled.helper(inline="always")
def add_bug_cell(c, bugc, nb, common):
    """Append c to bugc[:nb] and keep in common only the cells that see it; the new count,
    or -1 when bugc is full."""
    if nb == bugc.shape[0]:
        return -1
    for w in range(3):
        common[w] = PEER_BB[c, w] if nb == 0 else common[w] & PEER_BB[c, w]
    bugc[nb] = c
    return nb + 1


@compiled.helper()
def bug_house(bugc, nb, t):
    """The house of kind t (0 box, 1 row, 2 column) holding every cell of bugc[:nb], or -1."""
    kind = 2 if t == 0 else (0 if t == 1 else 1)  # CELL_HOUSES' columns: row, column, box
    h = CELL_HOUSES[bugc[0], kind]
    for i in range(1, nb):
        if CELL_HOUSES[bugc[i], kind] != h:
            return -1
    return h


@compiled.helper()
def bug4(cand, H, E, bugc, bx, extras):
    """BUG type 4: the two cells, in a house, share one grave digit v; the grave digit
    other than v goes from each (once for each kind of house they share, as serate)."""
    a, b = bugc[0], bugc[1]
    v = cand[a] & cand[b] & ~extras
    if POP9[v] != 1:
        return False
    kept = False
    for t in range(3):
        if bug_house(bugc, 2, t) < 0:
            continue
        ne = 0
        for c in (a, b):
            x = cand[c] & ~bx[c] & ~v
            while x:
                E[ne] = c * 10 + lowbit(x) + 1
                x &= x - 1
                ne += 1
        if offer(H, T_BUG4, 57, -1, 0, E, ne, lowbit(v) + 1, 0, 0, 0):
            name_cells(H, bugc, 2)
            kept = True
    return kept


@compiled.helper()
def bug3(cand, H, E, bugc, nb, extras, common):
    """BUG type 3: in a house holding every such cell, degree - 1 of the cells seeing them
    all (tried in serate's order: degree, then box, row, column, then combinations as
    bit masks count up) whose digits, with the extras, are degree digits in all: those
    digits go from the house's other cells seeing them all."""
    cells = np.zeros(9, np.int64)
    for degree in range(2, 7):
        for t in range(3):
            h = bug_house(bugc, nb, t)
            if h < 0:
                continue
            m = 0
            for j in range(9):
                c = HOUSE_CELLS[h, j]
                if common[WORD[c]] & BIT[c]:
                    cells[m] = c
                    m += 1
            if m < degree:
                continue
            pick = (1 << (degree - 1)) - 1
            while pick < (1 << m):
                digits = 0
                ok = True
                for i in range(m):
                    if (pick >> i) & 1:
                        if POP9[cand[cells[i]]] <= 1:
                            ok = False
                        digits |= cand[cells[i]]
                if ok and POP9[digits] == degree and POP9[digits | extras] == degree:
                    ne = 0
                    for i in range(m):
                        if not (pick >> i) & 1:
                            c = cells[i]
                            x = cand[c] & digits
                            while x:
                                E[ne] = c * 10 + lowbit(x) + 1
                                x &= x - 1
                                ne += 1
                    if ne:  # the first is the easiest: serate's hint
                        if not offer(H, T_BUG3, 56 + degree, -1, 0, E, ne, digits, 0, 0, 0):
                            return False
                        name_cells(H, bugc, nb)
                        return True
                low = pick & -pick  # the next mask of as many bits (Gosper's)
                ripple = pick + low
                pick = ripple | (((pick ^ ripple) >> 2) // low)
    return False


# -------------------------------------------------------------------------- exclusion


@compiled.helper()
def aligned_pair(val, cand, H, E):
    """Aligned pair exclusion (6.2), as serate finds it. Base cells: two or more candidates,
    no peer with one, and a bivalue peer (an excluder). Two base cells (in serate's order:
    by the second cell, then the first; they need not see each other) with two or more
    excluders in common: a pair of their digits is out when a common excluder holds just
    those two, or when the cells see each other and the digits are the same; a digit of
    one cell in no pair left goes. The first such pair."""
    two = np.zeros(3, np.int64)  # the bivalue cells (excluders)
    one = np.zeros(3, np.int64)  # the cells of one candidate
    for c in range(81):
        if val[c] == 0:
            if POP9[cand[c]] == 2:
                two[c // 27] |= np.int64(1) << (c % 27)
            elif POP9[cand[c]] == 1:
                one[c // 27] |= np.int64(1) << (c % 27)
    base = np.zeros(81, np.int64)
    nb = 0
    for c in range(81):
        if val[c] != 0 or POP9[cand[c]] < 2:
            continue
        if (PEER_BB[c, 0] & one[0]) | (PEER_BB[c, 1] & one[1]) | (PEER_BB[c, 2] & one[2]):
            continue
        if (PEER_BB[c, 0] & two[0]) | (PEER_BB[c, 1] & two[1]) | (PEER_BB[c, 2] & two[2]):
            base[nb] = c
            nb += 1
    partners = np.zeros(9, np.int64)  # per digit, the digits a common excluder pairs it with
    for j in range(1, nb):
        b = base[j]
        for i in range(j):
            a = base[i]
            common = 0
            for w in range(3):
                common += popcount(PEER_BB[a, w] & PEER_BB[b, w] & two[w])
            if common < 2:
                continue
            for d in range(9):
                partners[d] = 0
            for w in range(3):
                x = PEER_BB[a, w] & PEER_BB[b, w] & two[w]
                while x:
                    m = cand[w * 27 + lowbit(x)]
                    x &= x - 1
                    u = lowbit(m)
                    v = lowbit(m & (m - 1))
                    partners[u] |= 1 << v
                    partners[v] |= 1 << u
            seeing = SEES[a, b]
            ma = cand[a]
            mb = cand[b]
            allowed_a = 0
            allowed_b = 0
            x = ma
            while x:
                u = lowbit(x)
                x &= x - 1
                vs = mb & ~partners[u]
                if seeing:
                    vs &= ~(1 << u)
                if vs:
                    allowed_a |= 1 << u
                    allowed_b |= vs
            ne = 0
            x = ma & ~allowed_a
            while x:
                u = lowbit(x)
                x &= x - 1
                E[ne] = a * 10 + u + 1
                ne += 1
            x = mb & ~allowed_b
            while x:
                u = lowbit(x)
                x &= x - 1
                E[ne] = b * 10 + u + 1
                ne += 1
            if ne:
                return offer(H, T_APE, 62, -1, 0, E, ne, a, b, 0, 0)
    return False


@compiled.helper()
def aligned_triplet(val, cand, H, E, last):
    """Aligned triplet exclusion (7.5), as serate finds it. Base cells: two or more
    candidates, no peer with one, and a peer with two or three (an excluder). For two base
    cells (pairs in serate's order) and a third among the base cells that exclude either
    of them, with two or more excluders in common: a choice of a digit for each of the
    three is out when two that see each other share a digit or it leaves a common excluder
    no digit; a digit of the three in no choice left goes. The first such triplet.

    last: the candidates of a grid on which no triplet had a hint (last[81] = 1 when it
    holds one; the caller clears it for each puzzle), kept from call to call. Without a
    cell with one candidate, a triplet's hint is a function of the candidates of its three
    cells and of the cells that see all three (its common excluders: with two or more,
    each of the three is a base cell, the third one an excluder of the others), so a
    triplet none of whose cells changed since that grid has none now either."""
    small = np.zeros(3, np.int64)  # the cells with two or three candidates: excluders
    ones = np.zeros(3, np.int64)  # those with one
    basebb = np.zeros(3, np.int64)
    changed = np.zeros(3, np.int64)  # the cells whose candidates differ from last's
    for c in range(81):
        if val[c] == 0:
            k = POP9[cand[c]]
            if 2 <= k <= 3:
                small[c // 27] |= np.int64(1) << (c % 27)
            elif k == 1:
                ones[c // 27] |= np.int64(1) << (c % 27)
        if cand[c] != last[c]:
            changed[c // 27] |= np.int64(1) << (c % 27)
    kept = last[81] == 1 and (ones[0] | ones[1] | ones[2]) == 0
    base = np.zeros(81, np.int64)
    excl = np.zeros((81, 3), np.int64)  # a base cell's excluders
    nb = 0
    for c in range(81):
        if val[c] != 0 or POP9[cand[c]] < 2:
            continue
        single = False
        n = 0
        for w in range(3):
            excl[c, w] = small[w] & PEER_BB[c, w]
            n += popcount(excl[c, w])
            single |= (ones[w] & PEER_BB[c, w]) != 0
        if n and not single:
            base[nb] = c
            basebb[c // 27] |= np.int64(1) << (c % 27)
            nb += 1
    twin = np.zeros(40, np.int64)
    common = np.zeros(20, np.int64)
    cells = np.zeros(3, np.int64)
    partner = np.zeros(9, np.int64)
    three = np.zeros(20, np.int64)
    pair_same = False
    p0 = p1 = p2 = np.int64(0)
    for n2 in range(1, nb):
        c1 = as_index(base[n2])
        for n1 in range(n2):
            c0 = as_index(base[n1])
            e0 = excl[c0, 0] & excl[c1, 0]  # the pair's common excluders
            e1 = excl[c0, 1] & excl[c1, 1]
            e2 = excl[c0, 2] & excl[c1, 2]
            if popcount(e0) + popcount(e1) + popcount(e2) < 2:
                continue  # the three could not share two excluders
            if kept:
                # a third is one's excluder, so all the cells that matter are the pair, its
                # peers and, for each third, the pair's common peers that see it too
                if ((changed[WORD[c0]] & BIT[c0]) | (changed[WORD[c1]] & BIT[c1])) == 0:
                    if ((changed[0] & (PEER_BB[c0, 0] | PEER_BB[c1, 0]))
                            | (changed[1] & (PEER_BB[c0, 1] | PEER_BB[c1, 1]))
                            | (changed[2] & (PEER_BB[c0, 2] | PEER_BB[c1, 2]))) == 0:
                        continue
                    p0 = changed[0] & PEER_BB[c0, 0] & PEER_BB[c1, 0]
                    p1 = changed[1] & PEER_BB[c0, 1] & PEER_BB[c1, 1]
                    p2 = changed[2] & PEER_BB[c0, 2] & PEER_BB[c1, 2]
                    pair_same = True
                else:
                    pair_same = False
            nt = 0  # the twin area: c0's excluders that are base cells, then c1's others
            for s in range(2):
                for w in range(3):
                    m = excl[c0, w] if s == 0 else excl[c1, w] & ~excl[c0, w]
                    m &= basebb[w]
                    while m:
                        t = 27 * w + lowbit(m)
                        m &= m - 1
                        if t != c0 and t != c1:
                            twin[nt] = t
                            nt += 1
            for it in range(nt):
                c2 = as_index(twin[it])
                if (popcount(e0 & excl[c2, 0]) + popcount(e1 & excl[c2, 1])
                        + popcount(e2 & excl[c2, 2])) < 2:
                    continue  # (most: counted before their excluders are listed)
                if (kept and pair_same and (changed[WORD[c2]] & BIT[c2]) == 0
                        and ((p0 & PEER_BB[c2, 0]) | (p1 & PEER_BB[c2, 1])
                             | (p2 & PEER_BB[c2, 2])) == 0):
                    continue  # unchanged since last's grid, which had no hint
                # an excluder with a digit none of the three has denies no choice; without
                # one, only three cells that see each other could lose a digit (each has two
                # or more: with two lines of sight or fewer, a choice is left for each)
                u = cand[c0] | cand[c1] | cand[c2]
                nc = 0
                for w in range(3):
                    m = e0 if w == 0 else (e1 if w == 1 else e2)
                    m &= excl[c2, w]
                    while m:
                        e = cand[27 * w + lowbit(m)]
                        m &= m - 1
                        if e & ~u == 0:
                            common[nc] = e
                            nc += 1
                if nc == 0 and not (SEES[c0, c1] and SEES[c0, c2] and SEES[c1, c2]):
                    continue
                cells[0] = c0
                cells[1] = c1
                cells[2] = c2
                # what the common excluders deny a cell once the two others' digits a and b
                # are chosen: one of two digits {x, y} takes y when x is chosen (partner[x]),
                # and every digit when both are; one of three takes the third when the two
                # others are
                for k in range(9):
                    partner[k] = 0
                n3 = 0
                for i in range(nc):
                    e = common[i]
                    if POP9[e] == 2:
                        x = lowbit(e)
                        y = lowbit(e & (e - 1))
                        partner[x] |= 1 << y
                        partner[y] |= 1 << x
                    else:
                        three[n3] = e
                        n3 += 1
                # the choices: a digit of each of two cells in turn, the third's digits left
                # as a mask; the third the cell with the most digits (most often c0 or c1:
                # c2 is an excluder, of two or three)
                k0 = POP9[cand[c0]]
                k1 = POP9[cand[c1]]
                if POP9[cand[c2]] >= max(k0, k1):
                    x, y, z = c0, c1, c2
                elif k1 >= k0:
                    x, y, z = c0, c2, c1
                else:
                    x, y, z = c1, c2, c0
                okx = 0
                oky = 0
                okz = 0
                mx = cand[x]
                while mx:
                    a = lowbit(mx)
                    mx &= mx - 1
                    my = cand[y]
                    while my:
                        b = lowbit(my)
                        my &= my - 1
                        deny = partner[a] | partner[b]
                        if a == b:
                            if SEES[x, y]:
                                continue
                        elif (partner[a] >> b) & 1:
                            continue  # an excluder holds just a and b: no digit for the third
                        else:
                            ab = (1 << a) | (1 << b)
                            for i in range(n3):
                                if three[i] & ab == ab:
                                    deny |= three[i] & ~ab
                        # the third's digits that, with a and b, leave every common excluder one
                        free = cand[z] & ~deny
                        if SEES[x, z]:
                            free &= ~(1 << a)
                        if SEES[y, z]:
                            free &= ~(1 << b)
                        if free:
                            okx |= 1 << a
                            oky |= 1 << b
                            okz |= free
                    if okx == cand[x] and oky == cand[y] and okz == cand[z]:
                        break  # every digit of the three is in a choice left: no hint
                ok0 = okx if x == c0 else okz
                ok1 = okx if x == c1 else (oky if y == c1 else okz)
                ok2 = oky if y == c2 else okz
                ne = 0
                for i in range(3):
                    x = cells[i]
                    gone = cand[x] & ~(ok0 if i == 0 else (ok1 if i == 1 else ok2))
                    while gone:
                        E[ne] = x * 10 + lowbit(gone) + 1
                        gone &= gone - 1
                        ne += 1
                if ne:
                    return offer(H, T_ATE, 75, -1, 0, E, ne, c0, c1, c2, 0)
    if (ones[0] | ones[1] | ones[2]) == 0:
        for c in range(81):
            last[c] = cand[c]
        last[81] = 1
    return False
