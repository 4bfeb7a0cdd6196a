"""Canonical form (minlex) of Sudoku grids and random equivalence transformations.

Definition
----------
Two grids are equivalent when one becomes the other by a *cell permutation* -- transpose
or not, permute the three bands, the three rows inside each band, the three stacks, the
three columns inside each stack (2 x 6^8 = 3,359,232 in all) -- followed by a relabelling
of the digits 1..9 (a blank stays blank).  The minlex form is the lexicographically
smallest 81-character string among all equivalents, a blank counting as ``0``.  For a fixed
cell permutation the best relabelling numbers the digits 1, 2, 3, ... in order of first
appearance, so minlex = min over the cell permutations of that relabelled string.  The
*automorphism count* is the number of cell permutations that reach the minimum (the ones
that, with some relabelling, map the grid onto itself).  Values above 9 count as blanks.

Transform encoding
------------------
One int8 row of 34 per transformation; Q is the result, S the source (after the
optional transposition), D the digit map::

    col  0      1..3     4..12          13..15    16..24          25..33
         [ t | bands(3) | rows(3x3)   | stacks(3) | cols(3x3)   | digits(9) ]

    source' = transpose(S) if t else S
    R(3i+j) = 3*bands[i]  + rows[3i+j]        result row 3i+j    <- row R of source'
    C(3i+j) = 3*stacks[i] + cols[3i+j]        result column 3i+j <- column C of source'
    Q[r, c] = D(source'[R(r), C(c)])          D(d) = digits[d-1], D(0) = 0

Grids in and out are (N, 81) uint8 batches as in pipeline.sudoku.grid (``grid.decode(forms)``
gives the 81-character strings with ``.`` blanks); other integer dtypes are accepted, with
anything outside 1..9 read as a blank.

Search
------
The result is built one row at a time.  A *candidate* is a set of cell permutations that
give identical result rows so far, three int64 words::

    digits  bits 0-3: next free label      bits 4d..4d+3: label of source digit d (0: none)
    rows    bits 4k..4k+3: source row of result row k   bit 36: transposed   40-48: used
    cols    bits 0-5: open stack orders    bits 8+8s..13+8s: open orders inside stack s

The open column permutations are a product, a 6-bit mask of stack orders times a 6-bit
mask of in-stack orders per source stack (the representation of Dobrichev's patminlex;
patminlex ranks clue patterns before digits, which is not the lexicographic order used
here).  Each step tries every candidate with every source row allowed next (any of the 18
rows or columns first, then the rest of its band, then any row of an unused band) and
keeps what ties the smallest row so far.  Of the 18 first rows only the best are tried:
without repeated digits, their order is that of the sorted clue counts of their stacks
(fewer clues first is more leading blanks), so a mask of the lines of least count is made
at the start.  Before its keys, a row must pass lower bounds: with every digit counted as 1
it is its clue pattern, whose best order under any column order is known per line from the
start (LINE_BEST), and under the candidate's open masks comes from small tables (PAT_BEST
per stack, as nibbles in PAT_BEST_NIB when one stack order is left, else BEST on the ranks
of the stacks' bounds); a row whose bound already exceeds the best row so far is dropped,
as most are.  A line without clues is a row of blanks that keeps the candidate's masks as
they are, and a candidate with one column order left reads its rows off that order
(labelling new digits in place order), both without keys.  Otherwise a row is ranked by
keys, all nine in one word in source order: a blank is 0, a digit already labelled is its
label, a new digit is 15 (new digits take the next labels in order of position, so keys
order rows as their labels do; their 15s are found by bit tricks).  The three cells of a
source stack reduce to their rank pattern; a table (BEST) gives the best in-stack order
under the open mask and the orders that tie it; the same table on the ranks of the three
stacks' best triples gives the best stack order under the open stack orders; the ties stay
a product.  A candidate splits only where tied permutations put two or more new digits in
different places (different digit maps).  A row that repeats a digit (an invalid grid)
goes through a plain enumeration of its open orders.  A full grid (nine distinct digits in
every row and column) would split 1296 ways on its first row, so its first two rows come
from a depth-first search over column places (_latin_rows).  All tied candidates are kept
to the end, so the automorphism count is the sum of their sizes.  They live in one
(2, capacity, 3) buffer, the current row's and the next's, indexed rather than swapped or
sliced (numba counts references of every array view it makes, and of every array passed
to a call: costly calls, so the whole batch is one call and the search makes no views); a
grid with more ties than it holds is done again with a buffer twice as large.
"""

from __future__ import annotations

import itertools

import numpy as np

from pipeline import compiled
from pipeline.sudoku import grid
from pipeline.sudoku.intrinsics import cttz as _cttz
from pipeline.sudoku.intrinsics import popcnt as _popcnt
from pipeline.sudoku.symmetry import TRANSFORM_WIDTH, identity_transforms, transform

__all__ = ["GROUP_SIZE", "canonical_transforms", "minlex", "warm_up"]

GROUP_SIZE = 2 * 6**8  # cell permutations

# PERM[p][k]: position k of an ordering takes element PERM[p][k]; PINV is its inverse.
PERM = np.array(list(itertools.permutations(range(3))), dtype=np.int64)
PINV = np.argsort(PERM, axis=1).astype(np.int64)


def _best_orders():
    """(rank pattern, open mask) -> best in-stack order | (orders tying it) << 4."""
    table = np.zeros(27 * 64, np.int64)
    for code in range(27):
        rank = (code // 9, code // 3 % 3, code % 3)
        for mask in range(1, 64):
            best, tied, first = 99, 0, -1
            for q in range(6):
                if mask >> q & 1:
                    v = rank[PERM[q, 0]] * 9 + rank[PERM[q, 1]] * 3 + rank[PERM[q, 2]]
                    if v < best:
                        best, tied, first = v, 1 << q, q
                    elif v == best:
                        tied |= 1 << q
            table[code * 64 + mask] = (
                first | tied << 4 | PERM[first, 0] << 12 | PERM[first, 1] << 14
                | PERM[first, 2] << 16
            )
    return table


BEST = _best_orders()


def _best_patterns():
    """(clue bits of a stack, open mask) -> the smallest clue bits any open order gives."""
    table = np.zeros(8 * 64, np.int64)
    for bits in range(8):
        z = (bits >> 2 & 1, bits >> 1 & 1, bits & 1)
        for mask in range(1, 64):
            table[bits * 64 + mask] = min(
                z[PERM[q, 0]] << 2 | z[PERM[q, 1]] << 1 | z[PERM[q, 2]]
                for q in range(6) if mask >> q & 1
            )
    return table


PAT_BEST = _best_patterns()


def _line_best():
    """Nine clue bits -> the smallest clue bits of the line under any column order."""
    table = np.zeros(512, np.int64)
    for v in range(512):
        b = sorted(PAT_BEST[(v >> (6 - 3 * s) & 7) * 64 + 63] for s in range(3))
        table[v] = b[0] << 6 | b[1] << 3 | b[2]
    return table


LINE_BEST = _line_best()
# nine clue bits (first cell highest) -> the nibbles of a row with 1 at each clue
PAT_NIBBLES = np.array(
    [sum((v >> (8 - i) & 1) << (4 * (8 - i)) for i in range(9)) for v in range(512)], np.int64
)
# PAT_BEST as the nibbles of the first three places of a row
PAT_BEST_NIB = PAT_NIBBLES[PAT_BEST << 6]
def _first_ranks():
    """Nine clue bits -> the clue counts of its stacks sorted, as lo*16 + mid*4 + hi."""
    table = np.zeros(512, np.int64)
    for v in range(512):
        lo, mid, hi = sorted(bin(v >> (6 - 3 * s) & 7).count("1") for s in range(3))
        table[v] = lo * 16 + mid * 4 + hi
    return table


FIRST_RANK = _first_ranks()
# shift of the 12-bit key triple of source stack PERM[sg, j] in a word of three
STACK_SHIFT = (24 - 12 * PERM).astype(np.int64)
# (a, b, c) of a permutation of 0..2 as a*9 + b*3 + c -> its index in PERM
PERM_INDEX = np.zeros(27, np.int64)
for _i, (_a, _b, _c) in enumerate(PERM.tolist()):
    PERM_INDEX[_a * 9 + _b * 3 + _c] = _i

# candidate words: see the module docstring
ALL_COLS = 63 | 63 << 8 | 63 << 16 | 63 << 24
_BIG = np.int64(1) << 40
_NIBBLE_LOW = np.int64(0x1111111110)  # bit 0 of the nibbles of digits 1..9
_NIBBLE_ALL = np.int64(0x111111111)  # bit 0 of the nine nibbles of a row


@compiled.helper(inline="always")
def _rank_code(a, b, c):
    """The ranks of three values (how many of the others each exceeds) as a*9 + b*3 + c."""
    return ((a > b) + (a > c)) * 9 + ((b > a) + (b > c)) * 3 + ((c > a) + (c > b))


@compiled.helper()
def _classes(src, t, r, s, w, cls_q, cls_m, sc):
    """Split the open orders w of stack s by the digits they place; returns the count."""
    n = 0
    while w:
        q = _cttz(w)
        w &= w - 1
        a = (
            src[t, r, 3 * s + PERM[q, 0]] << 8 | src[t, r, 3 * s + PERM[q, 1]] << 4
            | src[t, r, 3 * s + PERM[q, 2]]
        )
        for i in range(n):
            if sc[SC_KEYS + i] == a:
                cls_m[s, i] |= 1 << q
                break
        else:
            sc[SC_KEYS + n] = a
            cls_q[s, n] = q
            cls_m[s, n] = 1 << q
            n += 1
    return n


@compiled.helper()
def _slow_row(src, t, r, m, rw, cl, k, best, buf, nx, nn, cls_q, cls_m, sc):
    """Every open order of one candidate and source row, labelled as it goes (any row).

    Returns (best, count), the count -1 when buf is too small."""
    for s in range(3):
        sc[SC_NCLS + s] = _classes(src, t, r, s, (cl >> (8 + 8 * s)) & 63, cls_q, cls_m,
                                   sc)
    sm = cl & 63
    rows = rw | np.int64(r) << (4 * k) | np.int64(1) << (40 + r)
    while sm:
        sg = _cttz(sm)
        sm &= sm - 1
        s0, s1, s2 = PERM[sg, 0], PERM[sg, 1], PERM[sg, 2]
        for i0 in range(sc[SC_NCLS + s0]):
            for i1 in range(sc[SC_NCLS + s1]):
                for i2 in range(sc[SC_NCLS + s2]):
                    for d in range(1, 10):
                        sc[SC_LAB + d] = (m >> (4 * d)) & 15
                    nl = m & 15
                    v = np.int64(0)
                    for tt in range(3):
                        s = PERM[sg, tt]
                        i = i0 if tt == 0 else (i1 if tt == 1 else i2)
                        q = cls_q[s, i]
                        for p in range(3):
                            d = src[t, r, 3 * s + PERM[q, p]]
                            if d != 0 and sc[SC_LAB + d] == 0:
                                sc[SC_LAB + d] = nl
                                nl += 1
                            v = v << 4 | sc[SC_LAB + d]
                    if v > best:
                        continue
                    if v < best:
                        best = v
                        nn = 0
                    if nn == buf.shape[1]:
                        return best, -1
                    mm = nl
                    for d in range(1, 10):
                        mm |= sc[SC_LAB + d] << (4 * d)
                    buf[nx, nn, 0] = mm
                    buf[nx, nn, 1] = rows
                    buf[nx, nn, 2] = (
                        np.int64(1) << sg
                        | cls_m[s0, i0] << (8 + 8 * s0)
                        | cls_m[s1, i1] << (8 + 8 * s1)
                        | cls_m[s2, i2] << (8 + 8 * s2)
                    )
                    nn += 1
    return best, nn


@compiled.helper()
def _latin_rows(src, buf, nx, nodes):
    """Candidates after two rows when every row and column holds nine distinct digits.

    Row 0 is 123456789 under any column order, so its digit map is the column order
    itself and row 1 reads, at each result column, the result column where its digit sits
    in row 0.  A depth-first search fixes result columns left to right; when a value
    needs a column not yet placed, the smallest free place for it is forced (earlier
    values weigh more), so only the choice of the column at each place branches.
    Returns (row 1 value, number of candidates in buf[nx], -1 when it is too small).
    """
    best = _BIG
    nn = 0
    phi = np.empty(9, np.int64)
    where = np.empty(10, np.int64)
    for t in range(2):
        for r0 in range(9):
            for c in range(9):
                where[src[t, r0, c]] = c
            for r1 in range(3 * (r0 // 3), 3 * (r0 // 3) + 3):
                if r1 == r0:
                    continue
                for c in range(9):
                    phi[c] = where[src[t, r1, c]]
                # node: depth, column at each place, place of each column (nibbles,
                # 15 = free), result stack of each source stack (2 bits, 3 = free), value
                top = 0
                nodes[0, 0] = 0
                nodes[0, 1] = (np.int64(1) << 36) - 1
                nodes[0, 2] = (np.int64(1) << 36) - 1
                nodes[0, 3] = 63
                nodes[0, 4] = 0
                top = 1
                while top:
                    top -= 1
                    j = nodes[top, 0]
                    colat = nodes[top, 1]
                    placeof = nodes[top, 2]
                    ts = nodes[top, 3]
                    val = nodes[top, 4]
                    if j == 9:
                        if val > best:
                            continue
                        if val < best:
                            best = val
                            nn = 0
                        if nn == buf.shape[1]:
                            return best, -1
                        m = np.int64(10)
                        for p in range(9):
                            m |= np.int64(p + 1) << (4 * src[t, r0, (colat >> (4 * p)) & 15])
                        rows = (
                            np.int64(r0) | np.int64(r1) << 4 | np.int64(t) << 36
                            | np.int64(1) << (40 + r0) | np.int64(1) << (40 + r1)
                        )
                        # source stack at each result stack, as the index of a PERM row
                        code = 0
                        for s in range(3):
                            code += s * (9, 3, 1)[(ts >> (2 * s)) & 3]
                        sg = PERM_INDEX[code]
                        cols = np.int64(1) << sg
                        for tt in range(3):
                            s = PERM[sg, tt]
                            a = ((colat >> (4 * (3 * tt))) & 15) - 3 * s
                            b = ((colat >> (4 * (3 * tt + 1))) & 15) - 3 * s
                            c = ((colat >> (4 * (3 * tt + 2))) & 15) - 3 * s
                            cols |= np.int64(1) << (PERM_INDEX[a * 9 + b * 3 + c] + 8 + 8 * s)
                        buf[nx, nn, 0] = m
                        buf[nx, nn, 1] = rows
                        buf[nx, nn, 2] = cols
                        nn += 1
                        continue
                    here = (colat >> (4 * j)) & 15
                    tgt = j // 3
                    # the columns that can go here: the one placed already, the free ones
                    # of the source stack of this result stack, or (first place of a
                    # result stack that has none) any column of a source stack not used
                    if here != 15:
                        c_lo = here
                        c_hi = here + 1
                    else:
                        c_lo = 0
                        c_hi = 9
                        for s in range(3):
                            if (ts >> (2 * s)) & 3 == tgt:
                                c_lo = 3 * s
                                c_hi = 3 * s + 3
                    for c in range(c_lo, c_hi):
                        if here == 15:
                            if (placeof >> (4 * c)) & 15 != 15:
                                continue
                            if (ts >> (2 * (c // 3))) & 3 not in (3, tgt):
                                continue
                        ca = colat
                        pa = placeof
                        tsa = ts
                        if here == 15:
                            ca = (ca & ~(np.int64(15) << (4 * j))) | np.int64(c) << (4 * j)
                            pa = (pa & ~(np.int64(15) << (4 * c))) | np.int64(j) << (4 * c)
                            sc_ = c // 3
                            tsa = (tsa & ~(3 << (2 * sc_))) | tgt << (2 * sc_)
                        pc = phi[c]
                        v = (pa >> (4 * pc)) & 15
                        if v == 15:
                            sp = pc // 3
                            tp = (tsa >> (2 * sp)) & 3
                            if tp == 3:
                                # the first result stack no source stack has yet
                                tp = 0
                                while (
                                    ((tsa >> 0) & 3) == tp or ((tsa >> 2) & 3) == tp
                                    or ((tsa >> 4) & 3) == tp
                                ):
                                    tp += 1
                                tsa = (tsa & ~(3 << (2 * sp))) | tp << (2 * sp)
                            v = 3 * tp
                            while (ca >> (4 * v)) & 15 != 15:
                                v += 1
                            ca = (ca & ~(np.int64(15) << (4 * v))) | pc << (4 * v)
                            pa = (pa & ~(np.int64(15) << (4 * pc))) | v << (4 * pc)
                        nv = val << 4 | (v + 1)
                        if nv > best >> (4 * (8 - j)):
                            continue
                        nodes[top, 0] = j + 1
                        nodes[top, 1] = ca
                        nodes[top, 2] = pa
                        nodes[top, 3] = tsa
                        nodes[top, 4] = nv
                        top += 1
    return best, nn


# scratch words of _minlex_range (sc): per source stack its number of digit classes;
# labels; stack-order classes; digit triples; the first-row rank (-1: a repeated digit, the
# slow path), clue bits and bound of the 18 lines; the lines that can come first
SC_NCLS, SC_LAB, SC_SIGV, SC_SIGM, SC_KEYS = 0, 3, 13, 19, 25
SC_RANK, SC_PATS, SC_LINE_LB = 31, 49, 67
SC_TOP = 85
SC_SIZE = 87


@compiled.helper()
def _minlex_range(grids, start, forms, autos_out, trans, src, buf, sc, cls_q, cls_m, nodes,
                  force_slow):
    """Minlex forms of grids start.. into forms, automorphism counts into autos_out, one
    minimizing transformation each into trans.

    Returns the number of grids done: short of all when buf is too small for the next.
    One call for the batch: numba counts references of the arrays passed to a call."""
    for i in range(start, grids.shape[0]):
        # Sources of both orientations; per line its clue bits (first cell highest) and, for
        # a line without repeated digits, its clue counts per stack sorted: fewer clues first
        # means more leading blanks, so only the lines of the least rank can come first.
        for r in range(9):
            for c in range(9):
                d = np.int64(grids[i, 9 * r + c])
                d = d if d <= 9 else 0
                src[0, r, c] = d
                src[1, c, r] = d
        top = 1 << 20
        full = True
        for t in range(2):
            for r in range(9):
                bits = 0
                seen = 0
                for c in range(9):
                    d = src[t, r, c]
                    bits = bits << 1 | (d != 0)
                    seen |= np.int64(1) << d
                sc[SC_PATS + 9 * t + r] = bits
                sc[SC_LINE_LB + 9 * t + r] = PAT_NIBBLES[LINE_BEST[bits]]
                rank = FIRST_RANK[bits]
                if _popcnt(seen | 1) != _popcnt(bits) + 1 or force_slow:
                    rank = -1
                elif rank < top:
                    top = rank
                full = full and rank == 63
                sc[SC_RANK + 9 * t + r] = rank
        # the lines that can come first: the least rank, or a repeated digit (tried in full)
        for t in range(2):
            tm = 0
            for r in range(9):
                rank = sc[SC_RANK + 9 * t + r]
                tm |= np.int64(rank <= top) << r
            sc[SC_TOP + t] = tm
        cu = 0
        buf[0, 0, 0] = 1
        buf[0, 0, 1] = 0
        buf[0, 0, 2] = ALL_COLS
        buf[0, 1, 0] = 1
        buf[0, 1, 1] = np.int64(1) << 36
        buf[0, 1, 2] = ALL_COLS
        ncur = 2
        k0 = 0
        if full:
            best, nn = _latin_rows(src, buf, 1, nodes)
            if nn < 0:
                return i
            for p in range(9):
                forms[i, p] = p + 1
                forms[i, 9 + p] = (best >> (4 * (8 - p))) & 15
            cu = 1
            ncur = nn
            k0 = 2
        cap = buf.shape[1]
        for k in range(k0, 9):
            nx = 1 - cu
            best = _BIG
            nn = 0
            for ci in range(ncur):
                m = buf[cu, ci, 0]
                rw = buf[cu, ci, 1]
                cl = buf[cu, ci, 2]
                # keys of all digits in one word: a label, or 15 where none yet; blank 0
                nz = m | (m >> 1)
                nz |= nz >> 2
                kw = (m | ((~nz & _NIBBLE_LOW) * 15)) & ~np.int64(15)
                t = (rw >> 36) & 1
                used = (rw >> 40) & 511
                if k == 0:
                    allowed = sc[SC_TOP + t]
                elif k % 3 == 0:
                    allowed = 511 & ~used
                else:
                    band = ((rw >> (4 * (k - k % 3))) & 15) // 3
                    allowed = (7 << (3 * band)) & ~used
                sm_open = cl & 63
                w0 = (cl >> 8) & 63
                w1 = (cl >> 16) & 63
                w2 = (cl >> 24) & 63
                if (sm_open & (sm_open - 1)) | (w0 & (w0 - 1)) | (w1 & (w1 - 1)) | (w2 & (w2 - 1)) == 0:
                    # one column order left: its source column at each place (nibbles, place 0
                    # highest), so a row is read off directly (never at k = 0)
                    cw = 0
                    sg = _cttz(sm_open)
                    for tt in range(3):
                        s = PERM[sg, tt]
                        q = _cttz((cl >> (8 + 8 * s)) & 63)
                        for p in range(3):
                            cw = cw << 4 | (3 * s + PERM[q, p])
                    while allowed:
                        r = _cttz(allowed)
                        allowed &= allowed - 1
                        if sc[SC_LINE_LB + 9 * t + r] > best:
                            continue
                        if sc[SC_RANK + 9 * t + r] < 0:
                            best, nn = _slow_row(
                                src, t, r, m, rw, cl, k, best, buf, nx, nn, cls_q, cls_m, sc
                            )
                            if nn < 0:
                                return i
                            continue
                        v = np.int64(0)
                        for p in range(9):
                            v = v << 4 | ((kw >> (4 * src[t, r, (cw >> (32 - 4 * p)) & 15])) & 15)
                        nl = m & 15
                        mm = m
                        f = v & (v >> 1) & (v >> 2) & (v >> 3) & _NIBBLE_ALL
                        if f:
                            # new digits take the next labels in order of place
                            lab = nl + _popcnt(f) - 1
                            nl = lab + 1
                            while f:
                                pos = _cttz(f)
                                f &= f - 1
                                v -= (15 - lab) << pos
                                mm |= lab << (4 * src[t, r, (cw >> pos) & 15])
                                lab -= 1
                        if v > best:
                            continue
                        if v < best:
                            best = v
                            nn = 0
                        if nn == cap:
                            return i
                        buf[nx, nn, 0] = (mm & ~np.int64(15)) | nl
                        buf[nx, nn, 1] = rw | np.int64(r) << (4 * k) | np.int64(1) << (40 + r)
                        buf[nx, nn, 2] = cl
                        nn += 1
                    continue
                # the bound's stack order: read directly when only one is open
                sg = _cttz(sm_open)
                a0 = PERM[sg, 0]
                a1 = PERM[sg, 1]
                a2 = PERM[sg, 2]
                sh0 = 6 - 3 * a0
                sh1 = 6 - 3 * a1
                sh2 = 6 - 3 * a2
                m0 = (cl >> (8 + 8 * a0)) & 63
                m1 = (cl >> (8 + 8 * a1)) & 63
                m2 = (cl >> (8 + 8 * a2)) & 63
                one_order = sm_open & (sm_open - 1) == 0
                while allowed:
                    r = _cttz(allowed)
                    allowed &= allowed - 1
                    rank = sc[SC_RANK + 9 * t + r]
                    # a lower bound first: every digit counted as 1 leaves the clue pattern,
                    # whose best order tables give cheaply; most rows lose on it alone
                    if sc[SC_LINE_LB + 9 * t + r] > best:
                        continue
                    bits = sc[SC_PATS + 9 * t + r]
                    if bits == 0:
                        # a line without clues: a row of blanks under every open order
                        if best:
                            best = 0
                            nn = 0
                        if nn == cap:
                            return i
                        buf[nx, nn, 0] = m
                        buf[nx, nn, 1] = rw | np.int64(r) << (4 * k) | np.int64(1) << (40 + r)
                        buf[nx, nn, 2] = cl
                        nn += 1
                        continue
                    if one_order:
                        # each stack's best as nibbles at the top, shifted to its place
                        lb = (
                            PAT_BEST_NIB[((bits >> sh0) & 7) * 64 + m0]
                            | PAT_BEST_NIB[((bits >> sh1) & 7) * 64 + m1] >> 12
                            | PAT_BEST_NIB[((bits >> sh2) & 7) * 64 + m2] >> 24
                        )
                        if lb > best:
                            continue
                    else:
                        # the best stack order of the stacks' bounds: BEST on their ranks
                        p0 = PAT_BEST[(bits >> 6) * 64 + w0]
                        p1 = PAT_BEST[((bits >> 3) & 7) * 64 + w1]
                        p2 = PAT_BEST[(bits & 7) * 64 + w2]
                        pw = p0 << 6 | p1 << 3 | p2
                        e = BEST[_rank_code(p0, p1, p2) * 64 + sm_open]
                        lb = (
                            ((pw >> (6 - 3 * ((e >> 12) & 3))) & 7) << 6
                            | ((pw >> (6 - 3 * ((e >> 14) & 3))) & 7) << 3
                            | ((pw >> (6 - 3 * ((e >> 16) & 3))) & 7)
                        )
                        if PAT_NIBBLES[lb] > best:
                            continue
                    if rank < 0:
                        best, nn = _slow_row(
                            src, t, r, m, rw, cl, k, best, buf, nx, nn, cls_q, cls_m, sc
                        )
                        if nn < 0:
                            return i
                        continue
                    # keys in source order (nibbles, cell 0 highest); new digits are 15s
                    kr = np.int64(0)
                    for c in range(9):
                        kr = kr << 4 | ((kw >> (4 * src[t, r, c])) & 15)
                    fsrc = kr & (kr >> 1) & (kr >> 2) & (kr >> 3) & _NIBBLE_ALL
                    nnew = _popcnt(fsrc)
                    # the best order of each source stack under its open mask
                    bw = np.int64(0)
                    wpw = np.int64(0)  # tied in-stack orders, stack s at bits 8 + 8s
                    for s in range(3):
                        trip = (kr >> (24 - 12 * s)) & 4095
                        e = BEST[
                            _rank_code(trip >> 8, (trip >> 4) & 15, trip & 15) * 64
                            + ((cl >> (8 + 8 * s)) & 63)
                        ]
                        bw = bw << 12 | (
                            ((trip >> (8 - 4 * ((e >> 12) & 3))) & 15) << 8
                            | ((trip >> (8 - 4 * ((e >> 14) & 3))) & 15) << 4
                            | ((trip >> (8 - 4 * ((e >> 16) & 3))) & 15)
                        )
                        wpw |= ((e >> 4) & 63) << (8 + 8 * s)
                    # the best stack order among the open ones: the same table, on the ranks
                    # of the stacks' best triples
                    if sm_open & (sm_open - 1) == 0:
                        sg = _cttz(sm_open)
                        smin = sm_open
                    else:
                        e = BEST[
                            _rank_code(bw >> 24, (bw >> 12) & 4095, bw & 4095) * 64 + sm_open
                        ]
                        sg = e & 15
                        smin = (e >> 4) & 63
                    vmin = (
                        ((bw >> STACK_SHIFT[sg, 0]) & 4095) << 24
                        | ((bw >> STACK_SHIFT[sg, 1]) & 4095) << 12
                        | ((bw >> STACK_SHIFT[sg, 2]) & 4095)
                    )
                    # keys -> labels: new digits (nibbles 15) take the next labels in order,
                    # the last of them (lowest nibble) the highest
                    nl = m & 15
                    v = vmin
                    if nnew:
                        f = vmin & (vmin >> 1) & (vmin >> 2) & (vmin >> 3) & _NIBBLE_ALL
                        lab = nl + nnew - 1
                        while f:
                            pos = _cttz(f)
                            f &= f - 1
                            v -= (15 - lab) << pos
                            lab -= 1
                        nl += nnew
                    if v > best:
                        continue
                    if v < best:
                        best = v
                        nn = 0
                    rows = rw | np.int64(r) << (4 * k) | np.int64(1) << (40 + r)
                    if nnew <= 1:
                        # one digit map for the whole tied set
                        if nn == cap:
                            return i
                        mm = (m & ~np.int64(15)) | nl
                        if nnew == 1:
                            d = src[t, r, 8 - (_cttz(fsrc) >> 2)]
                            mm |= (m & 15) << (4 * d)
                        buf[nx, nn, 0] = mm
                        buf[nx, nn, 1] = rows
                        buf[nx, nn, 2] = smin | wpw
                        nn += 1
                        continue
                    # Two or more new digits: split by where they land.  Stack orders that put
                    # the stacks holding new digits in the same places share a digit map.
                    ns = 0
                    sm = smin
                    while sm:
                        sg = _cttz(sm)
                        sm &= sm - 1
                        sig = 0
                        for s in range(3):
                            if fsrc & (0x111 << (24 - 12 * s)):
                                sig |= PINV[sg, s] << (2 * s)
                        for j in range(ns):
                            if sc[SC_SIGV + j] == sig:
                                sc[SC_SIGM + j] |= np.int64(1) << sg
                                break
                        else:
                            sc[SC_SIGV + ns] = sig
                            sc[SC_SIGM + ns] = np.int64(1) << sg
                            ns += 1
                    for s in range(3):
                        wps = (wpw >> (8 + 8 * s)) & 63
                        if _popcnt(fsrc & (0x111 << (24 - 12 * s))) >= 2:
                            sc[SC_NCLS + s] = _classes(src, t, r, s, wps, cls_q, cls_m,
                                                       sc)
                        else:
                            sc[SC_NCLS + s] = 1
                            cls_q[s, 0] = _cttz(wps)
                            cls_m[s, 0] = wps
                    for gi in range(ns):
                        sg = _cttz(sc[SC_SIGM + gi])
                        for i0 in range(sc[SC_NCLS]):
                            for i1 in range(sc[SC_NCLS + 1]):
                                for i2 in range(sc[SC_NCLS + 2]):
                                    if nn == cap:
                                        return i
                                    mm = m
                                    nl = m & 15
                                    for tt in range(3):
                                        s = PERM[sg, tt]
                                        ii = i0 if s == 0 else (i1 if s == 1 else i2)
                                        q = cls_q[s, ii]
                                        for p in range(3):
                                            d = src[t, r, 3 * s + PERM[q, p]]
                                            if d != 0 and (mm >> (4 * d)) & 15 == 0:
                                                mm |= nl << (4 * d)
                                                nl += 1
                                    mm = (mm & ~np.int64(15)) | nl
                                    buf[nx, nn, 0] = mm
                                    buf[nx, nn, 1] = rows
                                    buf[nx, nn, 2] = (
                                        sc[SC_SIGM + gi] | cls_m[0, i0] << 8
                                        | cls_m[1, i1] << 16 | cls_m[2, i2] << 24
                                    )
                                    nn += 1
            for p in range(9):
                forms[i, 9 * k + p] = (best >> (4 * (8 - p))) & 15
            cu = nx
            ncur = nn
        # automorphisms: the sizes of the tied candidates
        autos = np.int64(0)
        for ci in range(ncur):
            cl = buf[cu, ci, 2]
            autos += (
                _popcnt(cl & 63) * _popcnt((cl >> 8) & 63) * _popcnt((cl >> 16) & 63)
                * _popcnt((cl >> 24) & 63)
            )
        # one minimizing transformation: the first member of the first candidate
        m = buf[cu, 0, 0]
        rw = buf[cu, 0, 1]
        cl = buf[cu, 0, 2]
        trans[i, 0] = (rw >> 36) & 1
        for j in range(3):
            trans[i, 1 + j] = ((rw >> (4 * 3 * j)) & 15) // 3
        for j in range(9):
            trans[i, 4 + j] = ((rw >> (4 * j)) & 15) % 3
        sg = _cttz(cl & 63)
        for j in range(3):
            s = PERM[sg, j]
            trans[i, 13 + j] = s
            q = _cttz((cl >> (8 + 8 * s)) & 63)
            for p in range(3):
                trans[i, 16 + 3 * j + p] = PERM[q, p]
        nl = m & 15
        for d in range(1, 10):
            lab_d = (m >> (4 * d)) & 15
            if lab_d == 0:
                lab_d = nl
                nl += 1
            trans[i, 24 + d] = lab_d
        autos_out[i] = autos
    return grids.shape[0]


@compiled.kernel("(readonly u1[:, ::1], u1[:, ::1], i8[::1], i1[:, ::1], b1, i8) -> void")
def _minlex_batch(grids, forms, autos, trans, force_slow, capacity):
    src = np.zeros((2, 9, 9), np.int64)
    buf = np.empty((2, max(capacity, 2), 3), np.int64)
    sc = np.zeros(SC_SIZE, np.int64)
    cls_q = np.zeros((3, 6), np.int64)
    cls_m = np.zeros((3, 6), np.int64)
    nodes = np.zeros((96, 5), np.int64)
    i = 0
    while i < grids.shape[0]:
        i = _minlex_range(grids, i, forms, autos, trans, src, buf, sc, cls_q, cls_m, nodes,
                          force_slow)
        if i < grids.shape[0]:  # more tied candidates than buf holds: a bigger one
            buf = np.empty((2, 2 * buf.shape[1], 3), np.int64)


def _run(grids: np.ndarray, force_slow: bool = False, capacity: int = 1024):
    g = grid.as_batch(grids)
    n = len(g)
    forms = np.zeros((n, 81), np.uint8)
    autos = np.zeros(n, np.int64)
    trans = np.zeros((n, TRANSFORM_WIDTH), np.int8)
    if n:
        _minlex_batch(g, forms, autos, trans, force_slow, capacity)
    return forms, autos, trans


def warm_up() -> None:
    """Compile or load the cached kernels (call once per process)."""
    g = np.zeros((1, 81), np.uint8)
    g[0, :9] = np.arange(1, 10)
    _run(g)
    _run(g, force_slow=True)
    transform(g, identity_transforms(1))


def minlex(grids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N,81) uint8 grids -> ((N,81) uint8 minlex forms, (N,) int64 automorphism counts)."""
    forms, autos, _ = _run(grids)
    return forms, autos


def canonical_transforms(grids: np.ndarray) -> np.ndarray:
    """(N,34) int8: for each grid one transformation t with transform(grid, t) == its minlex."""
    return _run(grids)[2]


# --------------------------------------------------------------------------------------
# Transformations
# --------------------------------------------------------------------------------------


