"""The rater's board: candidates as bitboards, the houses as tables, placing and eliminating.

A puzzle's state is three arrays, kept in step by `place` and `eliminate`:

    val[81]     i1   the digit placed in each cell, 0 = empty
    cand[81]    i4   each empty cell's candidates, bit d-1 for digit d (0 once placed)
    bb[9, 3]    i8   one bitboard per digit: where that digit is still a candidate

A bitboard is three words, one per band of three rows, 27 bits each: cell (r, c) is bit
9 * (r % 3) + c of word r // 3. A row is nine bits of one word, a box three runs of three
bits of one word, a column one bit in each row of all three words.

          c1 ........ c9
    word 0  r1  bits  0..8
            r2  bits  9..17
            r3  bits 18..26
    word 1  r4..r6 (the same)
    word 2  r7..r9 (the same)

Houses are numbered rows 0-8, columns 9-17, boxes 18-26.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.intrinsics import cttz, popcnt

ROW, COL, BOX = 0, 9, 18


def _tables():
    house_cells = np.zeros((27, 9), np.int64)
    for i in range(9):
        for k in range(9):
            house_cells[ROW + i, k] = 9 * i + k
            house_cells[COL + i, k] = 9 * k + i
            house_cells[BOX + i, k] = 9 * (3 * (i // 3) + k // 3) + 3 * (i % 3) + k % 3
    cell_houses = np.zeros((81, 3), np.int64)
    for h in range(27):
        for k in range(9):
            cell_houses[house_cells[h, k], h // 9] = h
    word = np.arange(81, dtype=np.int64) // 27
    bit = np.left_shift(np.int64(1), np.arange(81, dtype=np.int64) % 27)
    house_bb = np.zeros((27, 3), np.int64)
    for h in range(27):
        for k in range(9):
            c = house_cells[h, k]
            house_bb[h, word[c]] |= bit[c]
    peers = np.zeros((81, 20), np.int64)
    peer_bb = np.zeros((81, 3), np.int64)
    sees = np.zeros((81, 81), np.bool_)
    for c in range(81):
        others = sorted({int(x) for h in cell_houses[c] for x in house_cells[h]} - {c})
        peers[c] = others
        for x in others:
            peer_bb[c, word[x]] |= bit[x]
            sees[c, x] = True
    return house_cells, cell_houses, word, bit, house_bb, peers, peer_bb, sees


HOUSE_CELLS, CELL_HOUSES, WORD, BIT, HOUSE_BB, PEERS, PEER_BB, SEES = _tables()

# Where a house lies on a bitboard: the bits HOUSE_MASK of word HOUSE_WORD for a row or
# a box (its band's word), of every word for a column (HOUSE_WORD -1)
HOUSE_WORD = np.array([(h % 9) // 3 if not COL <= h < BOX else -1 for h in range(27)],
                      np.int64)
HOUSE_MASK = np.array([HOUSE_BB[h].max() for h in range(27)], np.int64)


def _serates_peers():
    """Each cell's 20 peers in the order serate takes them off: its box, then the rest of
    its row, then the rest of its column (each in the house's order)."""
    out = np.zeros((81, 20), np.int64)
    for c in range(81):
        seen = [o for o in HOUSE_CELLS[CELL_HOUSES[c, 2]] if o != c]
        for which in (0, 1):
            seen += [o for o in HOUSE_CELLS[CELL_HOUSES[c, which]]
                     if o != c and CELL_HOUSES[o, 2] != CELL_HOUSES[c, 2]]
        out[c] = seen
    return out


PEERS_IN_ORDER = _serates_peers()

# The order serate visits a cell's houses in (CELL_HOUSES' columns): box, row, column
SERATE_HOUSES = (2, 0, 1)

# POP9[m]: the number of bits set in a 9-bit mask
POP9 = np.array([bin(m).count("1") for m in range(512)], np.int64)


@compiled.helper(inline="always")
def popcount(x):
    """Bits set in a non-negative int64 (one instruction)."""
    return popcnt(x)


@compiled.helper(inline="always")
def as_index(x):
    """An index known not negative (a cell, node, slot), as unsigned: numba indexes an
    array by a signed integer with a test for a negative one (counted from the end): four
    of the dozen instructions the chains' searches took for each link they follow."""
    return np.uint32(x)


@compiled.helper(inline="always")
def lowbit(x):
    """The index of the lowest bit set of a non-zero int64 (one instruction: LLVM does not
    see a loop over the bits as one)."""
    return cttz(x)


@compiled.helper(inline="always")
def cell_of(word, k):
    """The cell at bit k of word `word` of a bitboard."""
    return 27 * word + k


@compiled.helper(_nrt=False)
def setup(puzzle, val, cand, bb):
    """The givens placed and their digits taken out of their peers; False on a clash.
    On the bitboards first (a digit's places: the cells neither given nor seen by one of
    its givens), then each cell's candidates read off them: a few hundred operations
    where placing the givens one by one took about a thousand."""
    for d in range(9):
        for w in range(3):
            bb[d, w] = 0  # (first: the cells d's givens see)
    g0 = g1 = g2 = 0  # the givens
    for c in range(81):
        d = np.int64(puzzle[c])
        cand[c] = 0
        val[c] = d
        if d != 0:
            if d > 9 or bb[d - 1, WORD[c]] & BIT[c]:
                return False  # (a peer holds d: seeing is mutual, so either order finds it)
            for w in range(3):
                bb[d - 1, w] |= PEER_BB[c, w]
            if c < 27:
                g0 |= BIT[c]
            elif c < 54:
                g1 |= BIT[c]
            else:
                g2 |= BIT[c]
    band = (1 << 27) - 1
    for d in range(9):
        bb[d, 0] = ~(bb[d, 0] | g0) & band
        bb[d, 1] = ~(bb[d, 1] | g1) & band
        bb[d, 2] = ~(bb[d, 2] | g2) & band
        for w in range(3):
            x = bb[d, w]
            while x:
                cand[27 * w + lowbit(x)] |= 1 << d
                x &= x - 1
    return True


@compiled.helper(_nrt=False)
def bitboards(cand, bb):
    """bb (setup's layout) from the candidates: the other way round from setup's reading."""
    for d in range(9):
        for w in range(3):
            bb[d, w] = 0
    for c in range(81):
        x = cand[c]
        while x:
            bb[lowbit(x), WORD[c]] |= BIT[c]
            x &= x - 1


@compiled.helper(_nrt=False)
def place(val, cand, bb, c, d):
    """Digit d (1..9) in cell c: its other candidates go, and d leaves its peers (those
    that hold it found on d's bitboard: a test of each of the 20 mispredicts)."""
    m = cand[c]
    while m:
        bb[lowbit(m), WORD[c]] &= ~BIT[c]
        m &= m - 1
    cand[c] = 0
    val[c] = d
    bit = 1 << (d - 1)
    for w in range(3):
        x = bb[d - 1, w] & PEER_BB[c, w]
        bb[d - 1, w] &= ~PEER_BB[c, w]
        while x:
            cand[27 * w + lowbit(x)] &= ~bit
            x &= x - 1


@compiled.helper(inline="always")
def eliminate(cand, bb, c, d):
    """Candidate d (1..9) out of cell c."""
    cand[c] &= ~(1 << (d - 1))
    bb[d - 1, WORD[c]] &= ~BIT[c]


@compiled.helper(inline="always")
def count_in(bb, d, h):
    """How many cells of house h hold candidate d (0-based)."""
    return (popcount(bb[d, 0] & HOUSE_BB[h, 0]) + popcount(bb[d, 1] & HOUSE_BB[h, 1])
            + popcount(bb[d, 2] & HOUSE_BB[h, 2]))


@compiled.helper(_nrt=False)
def counts(bb, n):
    """n[d, h]: how many cells of house h hold candidate d (count_in of every pair)."""
    for d in range(9):
        for h in range(27):
            n[d, h] = count_in(bb, d, h)


@compiled.helper(inline="always")
def alone(x0, x1, x2, h):
    """The one cell of house h on the bitboard x0, x1, x2; -1 when it has none or more."""
    m = HOUSE_MASK[h]
    w = HOUSE_WORD[h]
    if w < 0:
        a = x0 & m
        b = x1 & m
        c = x2 & m
        if popcount(a) + popcount(b) + popcount(c) != 1:
            return -1
        return lowbit(a) if a else (27 + lowbit(b) if b else 54 + lowbit(c))
    x = (x0 if w == 0 else (x1 if w == 1 else x2)) & m
    if x == 0 or x & (x - 1):
        return -1
    return 27 * w + lowbit(x)


@compiled.helper(inline="always")
def positions(cand, h, d):
    """The 9-bit mask of house h's places (0..8) that hold candidate d (0-based)."""
    m = 0
    for k in range(9):
        if (cand[HOUSE_CELLS[h, k]] >> d) & 1:
            m |= 1 << k
    return m


@compiled.helper(inline="always")
def first_place(cand, h, c, d):
    """Whether cell c is the first of two or more places of candidate d (0-based) in house
    h: where serate starts that house's region chains."""
    places = positions(cand, h, d)
    return POP9[places] >= 2 and HOUSE_CELLS[h, lowbit(places)] == c


@compiled.helper(inline="always")
def java_order(rc, rm, nr):
    """Reorder cells rc[:nr] (their masks rm with them) as serate's Java HashMap of them
    lists them: by cell modulo its buckets (16, doubled past three quarters full), then in
    the order added."""
    cap = 16
    while nr * 4 > cap * 3:
        cap *= 2
    for i in range(1, nr):  # (stable insertion: a pattern has a few cells)
        c = rc[i]
        m = rm[i]
        j = i
        while j > 0 and rc[j - 1] & (cap - 1) > c & (cap - 1):
            rc[j] = rc[j - 1]
            rm[j] = rm[j - 1]
            j -= 1
        rc[j] = c
        rm[j] = m
