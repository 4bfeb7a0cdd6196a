"""Compiled Sudoku solver kernel (numba).

State
-----
The grid is split into three horizontal bands of 27 cells (3 rows x 9 columns).  For
every (band, digit) pair the solver keeps one 27-bit *board* of the cells of the band
where the digit may still go, plus, per band, the mask of cells not yet placed.  A
search node is one row of 64 int32 (JCZSolve keeps its boards the same way)::

    S[b*9 + d]  board of digit d+1 in band b        bit r*9 + c = row r of the band, column c
    S[27 + b]   unplaced cells of band b            (same bit layout)
    S[30]       digits still to settle (a stack entry's pending work)
    S[32 + d]   minirow word H of digit d+1         (below; kept by the settling of d)
    S[41 + d]   minicolumn word K of digit d+1

    one board, band b, digit d+1:      row 0  c0 c1 c2 | c3 c4 c5 | c6 c7 c8   bits  0.. 8
                                       row 1  c0 c1 c2 | c3 c4 c5 | c6 c7 c8   bits  9..17
                                       row 2  c0 c1 c2 | c3 c4 c5 | c6 c7 c8   bits 18..26
                                              box 0      box 1      box 2

At a coarser grain, where may a digit still go inside each box?  Two 27-bit words per
digit say it, one bit per minirow (a row inside a box: tdoku's horizontal triad) and one
per minicolumn (a column inside a box: its vertical triad)::

    minirows     H  bit 9r + 3k + b   band b, row r of the band, box k of the band
    minicolumns  K  bit 9b + 3s + i   band b, stack s (box column), column i of the stack

Read per band (H, the bits b mod 3) or per stack (K, one 3-bit group in each 9-bit
group) these are 3x3 matrices: rows of the band x boxes, and bands x columns of the
stack.  A digit occupies one cell per row, column and box, so it takes exactly one bit
per row and per column of each matrix: one of the six permutations of three.  Every
matrix is kept equal to the union of the permutations it still contains (its closure),
and a bit alone in its matrix row is *forced*: the digit must be in that minirow /
minicolumn.

Propagation
-----------
Work is queued per digit (a 9-bit mask).  Settling a digit closes its three band
matrices (table ``COMPLEX``, indexed by the band matrix: pointing and claiming inside each
band, row and box hidden singles), then its three stack matrices (bitwise: the same inside
each stack, so columns too), until both are stable.  A row of a board left with one cell
places that cell: it leaves the band's other eight boards, which are queued.  Digits
queued during a pass over the queue wait for the next pass (unless still ahead in this
one), so that the choice of the next digit does not wait for the one settling.

When the queue is empty, ``_stall`` looks across digits:

* naked singles (a cell with one candidate) and empty cells, bit-sliced per band;
* triads, after tdoku: a minirow or minicolumn holds exactly three digits, so if only
  three digits can go there they are all forced into it, and if three digits are forced
  into it no other digit may stay.  The digits are counted per minirow and minicolumn by
  bit-sliced binary counters over the nine H and K words (the counters also give the
  bits left per matrix, for the branch).

Branching
---------
When nothing more follows, the search branches the way tdoku does: on the most settled
band or stack, and in it on the digit with the fewest bits (usually two permutations).
tdoku measures a band by the permutations left; here it is the bits left in its nine
matrices plus four times those not forced, over both orientations, which is cheaper and
guesses a few % less.  The branch asserts one minirow / minicolumn of that digit's
first permutation; the pushed alternative is the same node without it.  ``guesses``
counts these branch points.  Backtracking restores whole nodes from an explicit stack.

A puzzle solved without any branch is unique: no second pass is made.

Cost per puzzle and per node
----------------------------
The givens are read and the solution written 32 bytes at a time through LLVM vector
intrinsics (a byte compare and mask per band; bit planes of digit numbers to bytes), and
the boards of the givens are made in bulk, without a branch per cell.  A placement clears
a band's first eight boards as one 32-byte vector, and a naked single finds its digit by
one vector compare.  Where PEXT is fast (``FAST_PEXT``: Intel since Haswell, AMD since
Zen 3) a board's band matrix is its minirow bits packed by PEXT, which shortens the chain
of dependent instructions of every settling; elsewhere three ``SHRINK`` lookups make it.
The closing table's entry also gives the closed board's minirows (the low bit of each
minirow it keeps, all of which hold a cell), so the settling's stop test does not
recompute them.  A row left with one cell is found without POPCNT (which shares its port
with PEXT): in a closed board every row holds a cell, so ``x & (x - 1)`` taken per row
(no borrow crosses a row) is empty exactly where the row has one cell, two bands' boards
side by side in one 64-bit word::

    bits  0..26   board of band 0     rows at bits 0, 9, 18
    bits 32..58   board of band 1     rows at bits 32, 41, 50      (band 2 alone)

A settled digit takes one branch on whether it places a cell in any band (whether it
does in a given band is a coin flip on hard puzzles), and the placement writes the
digit's board back as lane d of the band's vector: a 4-byte store just before a 32-byte
load of the same bytes would stall that load.  For the same reason a branch copies the
node to the stack first and then changes its one denied board in the copy.
The search loop is compiled without numba's reference counting (``_nrt=False``): the
state arrays are made once per batch, and a node is pushed and popped as one 256-byte copy.
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku.intrinsics import (
    NODE,
    band_hits,
    byte_mask32,
    copy_row,
    cttz,
    pext,
    place_in_band,
    popcnt,
    rdcycle,
    store_digits32,
)

__all__ = ["cycles_per_us", "read_cycles", "solve_batch", "warm_up"]

# --------------------------------------------------------------------------------------
# Lookup tables (built once at import; numba freezes global arrays into the kernel)
# --------------------------------------------------------------------------------------

ALL27 = (1 << 27) - 1
# every branch point removes at least one of the at most 6 permutations of one of the
# 54 (matrix, digit) pairs, and never adds one: a path has fewer than 54 * 5 + 1 of them
STACK_DEPTH = 6 * 9 * 5 + 2
ALL_DIGITS = 0x1FF
AT_H = 32  # S[AT_H + d]: minirow word of digit d+1
AT_K = 41  # S[AT_K + d]: minicolumn word of digit d+1

_PERMS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]


def _build_tables():
    shrink = np.zeros(512, np.int64)  # 9 bits of a row -> 3 bits: boxes reached
    for v in range(512):
        for k in range(3):
            if v & (7 << (3 * k)):
                shrink[v] |= 1 << k

    # 3x3 matrix (bit i*3+j) -> union of the permutations inside it, and the first of them
    keep9 = np.zeros(512, np.int64)
    first9 = np.zeros(512, np.int64)
    for m in range(512):
        for p in _PERMS:
            pm = sum(1 << (i * 3 + p[i]) for i in range(3))
            if m & pm == pm:
                if keep9[m] == 0:
                    first9[m] = pm
                keep9[m] |= pm

    # band matrix -> the cells of the board it allows
    expand9 = np.zeros(512, np.int64)
    for m in range(512):
        for i in range(3):
            for j in range(3):
                if m >> (i * 3 + j) & 1:
                    expand9[m] |= 7 << (i * 9 + j * 3)
    complex_ = expand9[keep9]

    # peers of a cell inside its own band (row, box, column), excluding the cell
    peer_keep = np.zeros(27, np.int64)
    for i in range(27):
        r, c = divmod(i, 9)
        m = 0
        for j in range(27):
            r2, c2 = divmod(j, 9)
            if j != i and (r2 == r or c2 == c or c2 // 3 == c // 3):
                m |= 1 << j
        peer_keep[i] = ALL27 & ~m
    return shrink, first9, complex_, peer_keep


SHRINK, FIRST9, COMPLEX, PEER_KEEP = _build_tables()

# 32-bit tables: half the cache footprint (all values fit in 27 bits)
SHRINK = SHRINK.astype(np.int32)
FIRST9 = FIRST9.astype(np.int32)
COMPLEX = COMPLEX.astype(np.int32)
PEER_KEEP = PEER_KEEP.astype(np.int32)


def _fast_pext() -> bool:
    """Whether the kernel may use PEXT (BMI2) for a board's band matrix: one fast
    instruction on Intel since Haswell and AMD since Zen 3, microcoded (tens of cycles) on
    earlier AMD, absent on older CPUs.  Not when numba is asked for a portable target."""
    import llvmlite.binding as ll
    from numba.core import config

    if config.CPU_NAME is not None:
        return False
    try:
        name = ll.get_host_cpu_name()
        bmi2 = bool(ll.get_host_cpu_features().get("bmi2", False))
    except Exception:  # (a host llvmlite cannot describe)
        return False
    return bmi2 and not name.startswith(("znver1", "znver2", "bdver", "btver"))


# A compile-time constant of the kernel (None with the ahead-of-time module, for which it
# was decided when the module was built for this CPU)
FAST_PEXT = _fast_pext() if compiled.loaded() is None else None

# --------------------------------------------------------------------------------------
# Bit helpers on three packed 3x3 matrices (27 bits, matrix m at bits 9m..9m+8)
# --------------------------------------------------------------------------------------


@compiled.helper(inline="always")
def _col_next(v):
    """Each bit takes the value of the next column of its row (cyclically)."""
    return ((v >> 1) & 0o333333333) | ((v << 2) & 0o444444444)


@compiled.helper(inline="always")
def _col_prev(v):
    """Each bit takes the value of the previous column of its row (cyclically)."""
    return ((v >> 2) & 0o111111111) | ((v << 1) & 0o666666666)


@compiled.helper(inline="always")
def _forced(m):
    """Bits alone in their row: in a closed matrix, the digit must be there."""
    return m & ~(_col_next(m) | _col_prev(m))


@compiled.helper(inline="always")
def _minirows(x):
    """Bit 9r + 3k set when minirow (row r, box k) of a board still has a cell."""
    return (x | (x >> 1) | (x >> 2)) & 0o111111111


@compiled.helper(inline="always")
def _other_boxes(h):
    """Minirow word: the same row of the same band, in the two other boxes."""
    return (
        ((h >> 3) & 0o077077077)
        | ((h << 6) & 0o700700700)
        | ((h >> 6) & 0o007007007)
        | ((h << 3) & 0o770770770)
    )


@compiled.helper(inline="always")
def _other_columns(k):
    """Minicolumn word: the same band and stack (one box), the two other columns."""
    return _col_next(k) | _col_prev(k)


@compiled.helper(inline="always")
def _other_nines(v):
    """The same place in the two other 9-bit groups: in a minirow word the other rows of
    the box, in a minicolumn word the other bands of the column."""
    return ((v >> 9) | (v << 18) | (v >> 18) | (v << 9)) & ALL27


@compiled.helper(inline="always")
def _columns(x):
    """The columns (9 bits) where a board still has a cell."""
    return (x | (x >> 9) | (x >> 18)) & 511


@compiled.helper(inline="always")
def _spread(cols):
    """The cells of the given columns (9 bits -> 27 bits)."""
    return cols | (cols << 9) | (cols << 18)


@compiled.helper(inline="always")
def _band_matrix(x):
    """A board's band matrix: rows of the band x boxes where the digit may go."""
    return SHRINK[x & 511] | (SHRINK[(x >> 9) & 511] << 3) | (SHRINK[(x >> 18) & 511] << 6)


@compiled.helper(inline="always")
def _band_index(x):
    """A board's band matrix as a table index: with PEXT the bits of its minirows packed
    (a short dependency chain, no table load), else ``_band_matrix``."""
    if FAST_PEXT:
        return pext(x | (x >> 1) | (x >> 2), 0o111111111)  # (_minirows, PEXT masking)
    return _band_matrix(x) & 511  # (the mask spares a negative-index check)


@compiled.helper(inline="always")
def _closing(x):
    """The cells of a board's band whose minirow lies on a permutation its band matrix
    still has: ``x & _closing(x)`` is the board closed.  Every minirow kept holds a cell
    of x, so the low bits (``& 0o111111111``) are also the closed board's minirows."""
    return np.int64(COMPLEX[_band_index(x)])


@compiled.helper(inline="always")
def _close_stacks(c0, c1, c2):
    """Closure of a digit's three stack matrices, from the columns (9 bits) of its three
    boards; returns the columns kept in each band.

    Column j of a stack stays in band a when the two other bands can take the two other
    columns of the stack, one way or the other (per band, for a short dependency chain).
    """
    n0 = _col_next(c0)
    p0 = _col_prev(c0)
    n1 = _col_next(c1)
    p1 = _col_prev(c1)
    n2 = _col_next(c2)
    p2 = _col_prev(c2)
    return (
        c0 & ((n1 & p2) | (p1 & n2)),
        c1 & ((n2 & p0) | (p2 & n0)),
        c2 & ((n0 & p1) | (p0 & n1)),
    )


ROW_ONES = 0o1001001 | (0o1001001 << 32)  # bit 0 of each row, of two boards side by side


@compiled.helper(inline="always")
def _single_rows(x):
    """The cells alone in their row, for one board or two side by side (bits 0..26 and
    32..58), each with a cell in every row (as a closed board is): ``x & (x - 1)`` per row
    (no borrow crosses a row) is empty where the row has one cell.  No POPCNT: it shares
    its port with PEXT and the multiplier."""
    w = x & (x - ROW_ONES)
    m = (w | (w >> 1) | (w >> 2)) & (ROW_ONES * 0o111)  # minirows of w
    m = (m | (m >> 3) | (m >> 6)) & ROW_ONES  # bit 9r: row r has two cells or more
    return x & ~((m << 9) - m)


@compiled.helper(inline="always")
def _propagate(S, todo):
    """Settle queued digits until none is left.  Returns False on contradiction.

    The digits queued while a pass over ``todo`` runs wait for the next pass (``later``),
    unless still ahead in this one: the next digit does not wait for the one settling.
    """
    later = np.int64(0)
    while True:
        if todo == 0:
            if later == 0:
                break
            todo = later
            later = np.int64(0)
        d = cttz(todo)
        todo &= todo - 1
        x0 = np.int64(S[d])
        x1 = np.int64(S[9 + d])
        x2 = np.int64(S[18 + d])
        # (k*: what the closing keeps, whose low bits are the closed boards' minirows)
        k0 = _closing(x0)
        k1 = _closing(x1)
        k2 = _closing(x2)
        x0 &= k0
        x1 &= k1
        x2 &= k2
        while True:
            if x0 == 0 or x1 == 0 or x2 == 0:
                return False
            c0, c1, c2 = _close_stacks(_columns(x0), _columns(x1), _columns(x2))
            y0 = x0 & _spread(c0)
            y1 = x1 & _spread(c1)
            y2 = x2 & _spread(c2)
            # the band step changes nothing unless a band matrix lost a bit: a minirow
            # emptied (then the boards are y, and stable)
            if (
                _minirows(y0) == k0 & 0o111111111
                and _minirows(y1) == k1 & 0o111111111
                and _minirows(y2) == k2 & 0o111111111
            ):
                x0 = y0
                x1 = y1
                x2 = y2
                break
            k0 = _closing(y0)
            k1 = _closing(y1)
            k2 = _closing(y2)
            x0 = y0 & k0
            x1 = y1 & k1
            x2 = y2 & k2
            if x0 == y0 and x1 == y1 and x2 == y2:
                if x0 == 0 or x1 == 0 or x2 == 0:
                    return False
                break
        # the digit's minirow and minicolumn words, for the stall (c*: its closed columns)
        S[AT_H + d] = _minirows(x0) | (_minirows(x1) << 1) | (_minirows(x2) << 2)
        S[AT_K + d] = c0 | (c1 << 9) | (c2 << 18)
        # rows reduced to one cell place that cell: it leaves the band's other boards.  One
        # branch for the three bands (whether one places, a coin flip on hard puzzles), not
        # one per band; the placement writes the board back itself (lane d of its vector): a
        # scalar store just before its 32-byte load of the band would stall that load (no
        # store forwarding from a narrow store into a wider load)
        u0 = np.int64(S[27])
        u1 = np.int64(S[28])
        u2 = np.int64(S[29])
        n01 = _single_rows(x0 | (x1 << 32))
        n0 = n01 & u0
        n1 = (n01 >> 32) & u1
        n2 = _single_rows(x2) & u2
        if (n0 | n1 | n2) == 0:
            S[d] = x0
            S[9 + d] = x1
            S[18 + d] = x2
        else:
            S[27] = u0 & ~n0
            S[28] = u1 & ~n1
            S[29] = u2 & ~n2
            hit = place_in_band(S, 0, n0, d, x0)
            hit |= place_in_band(S, 9, n1, d, x1)
            hit |= place_in_band(S, 18, n2, d, x2)
            later |= hit & ~(todo | (np.int64(1) << d))
    return True


@compiled.helper(inline="always")
def _count_in(m, c0, c1, c2, c3):
    """Add the bits of m to four bit-sliced binary counters (one count per bit)."""
    t = c0 & m
    c0 ^= m
    u = c1 & t
    c1 ^= t
    c3 |= c2 & u
    c2 ^= u
    return c0, c1, c2, c3


@compiled.helper(inline="always")
def _count_to4(m, c0, c1, c2):
    """``_count_in`` for counts that only matter up to three: c2 is set from four on."""
    t = c0 & m
    c0 ^= m
    c2 |= c1 & t
    c1 ^= t
    return c0, c1, c2


@compiled.helper(inline="always")
def _stall(S, pick):
    """Reasoning across digits once propagation is stable.

    Returns the digits changed (> 0), 0 when nothing follows (then ``pick`` holds the
    branch: kind 0 band / 1 stack, its index, the digit, the entry), or -1 on contradiction.
    """
    # naked singles and empty cells, bit-sliced over the nine boards of each band
    todo = np.int64(0)
    for b in range(3):
        base = b * 9
        c1 = np.int64(0)
        c2 = np.int64(0)
        for d in range(9):
            m = np.int64(S[base + d])
            c2 |= c1 & m
            c1 |= m
        if c1 != ALL27:
            return -1
        sing = c1 & ~c2 & np.int64(S[27 + b])
        while sing != 0:
            i = cttz(sing)
            bit = np.int64(1) << i
            sing &= sing - 1
            # the one board that holds the cell (no branch per board), or none when an
            # earlier single of the band took its last candidate
            dm = band_hits(S, base, bit)
            if dm == 0:
                return -1
            s = base + cttz(dm)
            S[s] = np.int64(S[s]) & PEER_KEEP[i]
            todo |= dm
    if todo != 0:
        return todo

    # triads: count over the digits, per minirow and minicolumn, those that may go there
    # (h*, v*) and those forced there (f*, g*; these counters stop at four, which is
    # already a contradiction): bit-sliced binary counters
    h0 = h1 = h2 = h3 = np.int64(0)
    v0 = v1 = v2 = v3 = np.int64(0)
    f0 = f1 = f2 = np.int64(0)
    g0 = g1 = g2 = np.int64(0)
    for d in range(9):
        mh = np.int64(S[AT_H + d])
        mv = np.int64(S[AT_K + d])
        h0, h1, h2, h3 = _count_in(mh, h0, h1, h2, h3)
        v0, v1, v2, v3 = _count_in(mv, v0, v1, v2, v3)
        f0, f1, f2 = _count_to4(mh & ~_other_boxes(mh), f0, f1, f2)
        g0, g1, g2 = _count_to4(mv & ~_other_columns(mv), g0, g1, g2)
    # every minirow and minicolumn holds three digits
    if ((h2 | h3 | (h1 & h0)) & (v2 | v3 | (v1 & v0))) != ALL27 or (f2 | g2) != 0:
        return -1
    h_only3 = h1 & h0 & ~(h2 | h3)
    v_only3 = v1 & v0 & ~(v2 | v3)
    h_forced3 = f1 & f0
    v_forced3 = g1 & g0
    if (h_only3 ^ h_forced3) | (v_only3 ^ v_forced3):
        for d in range(9):
            mh = np.int64(S[AT_H + d])
            mv = np.int64(S[AT_K + d])
            fh = mh & ~_other_boxes(mh)
            fv = mv & ~_other_columns(mv)
            # only three digits may go there: each is forced in, so its other minirows
            # in that row and box go; three are forced there: no other digit may stay
            need = mh & h_only3 & ~fh
            nh = mh & ~(_other_boxes(need) | _other_nines(need) | (mh & h_forced3 & ~fh))
            need = mv & v_only3 & ~fv
            nv = mv & ~(_other_columns(need) | _other_nines(need) | (mv & v_forced3 & ~fv))
            if nh != mh or nv != mv:
                for b in range(3):
                    s = b * 9 + d
                    keep = (((nh >> b) & 0o111111111) * 7) & _spread((nv >> (9 * b)) & 511)
                    n = np.int64(S[s]) & keep
                    if n == 0:
                        return -1
                    S[s] = n
                todo |= np.int64(1) << d
        if todo != 0:
            return todo

    # how open each band's and stack's nine matrices are, from the counters: the bits left
    # plus four times those not forced (a matrix of fixed digits scores 27)
    best = 1 << 30
    kind = -1
    idx = 0
    for m in range(3):
        mb = np.int64(0o111111111) << m
        th = popcnt(h0 & mb) + 2 * popcnt(h1 & mb) + 4 * popcnt(h2 & mb) + 8 * popcnt(h3 & mb)
        th += 4 * (th - popcnt(f0 & mb) - 2 * popcnt(f1 & mb))
        ms = np.int64(0o007007007) << (3 * m)
        tv = popcnt(v0 & ms) + 2 * popcnt(v1 & ms) + 4 * popcnt(v2 & ms) + 8 * popcnt(v3 & ms)
        tv += 4 * (tv - popcnt(g0 & ms) - 2 * popcnt(g1 & ms))
        if th > 27 and th < best:
            best = th
            kind = 0
            idx = m
        if tv > 27 and tv < best:
            best = tv
            kind = 1
            idx = m
    _choose_branch(S, kind, idx, pick)
    return 0


@compiled.helper(inline="always")
def _choose_branch(S, kind, idx, pick):
    """The branch, after tdoku: in the most settled band or stack (``kind``, ``idx``), the
    digit with the fewest bits, and an entry of its first permutation that is not forced."""
    pick[0] = kind
    if kind < 0:
        return
    mask = (np.int64(0o111111111) << idx) if kind == 0 else (np.int64(0o007007007) << (3 * idx))
    fewest = 10
    digit = 0
    for d in range(9):
        c = popcnt(np.int64(S[(AT_H if kind == 0 else AT_K) + d]) & mask)
        if c >= 4 and c < fewest:
            fewest = c
            digit = d
    if kind == 0:
        mat = _band_matrix(np.int64(S[idx * 9 + digit]))
    else:
        k = np.int64(S[AT_K + digit]) >> (3 * idx)
        mat = (k & 7) | ((k >> 6) & 0o70) | ((k >> 12) & 0o700)
    entry = np.int64(FIRST9[mat]) & ~_forced(mat)
    pick[1] = idx
    pick[2] = digit
    pick[3] = cttz(entry)


@compiled.helper(inline="always")
def _denied(S, s, kind, idx, e):
    """Board s (of the branch's digit) without entry e of matrix idx: the only board that
    denying the entry changes."""
    if kind == 0:
        cells = np.int64(7) << (9 * (e // 3) + 3 * (e % 3))
    else:
        cells = _spread(np.int64(1) << (3 * idx + e % 3))
    return np.int64(S[s]) & ~cells


@compiled.helper(inline="always")
def _assert_entry(S, kind, idx, d, e):
    """Assert entry e of matrix idx of digit d in node S."""
    if kind == 0:
        s = idx * 9 + d
        cells = np.int64(7) << (9 * (e // 3) + 3 * (e % 3))
        # the digit's row of the band lies in this box, and the box's digit in this row
        row = np.int64(511) << (9 * (e // 3))
        box = np.int64(0o007007007) << (3 * (e % 3))
        S[s] = np.int64(S[s]) & ~((row | box) & ~cells)
    else:
        band = e // 3
        colcells = _spread(np.int64(1) << (3 * idx + e % 3))
        for b in range(3):
            s = b * 9 + d
            if b == band:
                other = _spread(np.int64(7) << (3 * idx)) & ~colcells
                S[s] = np.int64(S[s]) & ~other
            else:
                S[s] = np.int64(S[s]) & ~colcells


@compiled.helper(inline="always")
def _setup(grids, p, S):
    """The node of the givens; False if two givens of a digit share a row, column or box.

    A board starts as its band less the cells given to another digit and less the rows,
    boxes and columns (in all bands) of the digit's own givens, which stay: each given
    is then alone in its row of the board, and not among the unplaced cells.
    """
    at = p * 81
    # bit i set when cell i of the band holds a given (one 32-byte compare per band; the
    # last band is read from byte 49 so as not to read past the grid)
    giv0 = byte_mask32(grids, at, 1, 9) & ALL27
    giv1 = byte_mask32(grids, at + 27, 1, 9) & ALL27
    giv2 = byte_mask32(grids, at + 49, 1, 9) >> 5
    S[27] = ALL27 & ~giv0
    S[28] = ALL27 & ~giv1
    S[29] = ALL27 & ~giv2
    n_cells = popcnt(giv0 | (giv1 << 27)) + popcnt(giv2)
    n_units = 0
    for d in range(9):
        g0 = byte_mask32(grids, at, d + 1, d + 1) & ALL27
        g1 = byte_mask32(grids, at + 27, d + 1, d + 1) & ALL27
        g2 = byte_mask32(grids, at + 49, d + 1, d + 1) >> 5
        cols = _columns(g0) | _columns(g1) | _columns(g2)
        # the digit's columns, boxes and rows as distinct bits of one word, one POPCNT:
        # bits 0..8 columns, 9 + 3k + b box k of band b, 32 + 9r + b row r of band b
        units = cols
        for b in range(3):
            g = g0 if b == 0 else (g1 if b == 1 else g2)
            giv = giv0 if b == 0 else (giv1 if b == 1 else giv2)
            mr = _minirows(g)
            rows = (mr | (mr >> 3) | (mr >> 6)) & 0x40201
            boxes = (mr | (mr >> 9) | (mr >> 18)) & 0o111
            units |= (boxes << (9 + b)) | (rows << (32 + b))
            out = _spread(cols) | (rows * 511) | _spread(boxes * 7) | giv
            S[b * 9 + d] = (ALL27 & ~out) | g
        n_units += popcnt(units)
    # as many distinct rows, columns and boxes as givens, for every digit
    return n_units == 3 * n_cells


@compiled.helper(inline="always")
def _digit_planes(S, b):
    """Bit-slice the digit number (0..8) of every cell of a solved band: four planes."""
    base = b * 9
    odd = np.int64(S[base + 3]) | np.int64(S[base + 7])  # numbers 3 and 7 have bits 0 and 1
    return (
        np.int64(S[base + 1]) | np.int64(S[base + 5]) | odd,
        np.int64(S[base + 2]) | np.int64(S[base + 6]) | odd,
        np.int64(S[base + 4])
        | np.int64(S[base + 5])
        | np.int64(S[base + 6])
        | np.int64(S[base + 7]),
        np.int64(S[base + 8]),
    )


@compiled.helper(inline="always")
def _extract(S, out, p):
    """Write the solved node as digits, 32 bytes at a time from the bit planes."""
    at = p * 81
    a0, a1, a2, a3 = _digit_planes(S, 0)
    store_digits32(out, at, a0, a1, a2, a3)
    a0, a1, a2, a3 = _digit_planes(S, 1)
    store_digits32(out, at + 27, a0, a1, a2, a3)
    # bytes 49..80 (so as not to write past the grid): the last 5 cells of band 1, band 2
    b0, b1, b2, b3 = _digit_planes(S, 2)
    store_digits32(
        out,
        at + 49,
        (a0 >> 22) | (b0 << 5),
        (a1 >> 22) | (b1 << 5),
        (a2 >> 22) | (b2 << 5),
        (a3 >> 22) | (b3 << 5),
    )


@compiled.helper(_nrt=False)
def _solve_one(grids, p, out, limit, S, pick, stack):
    """Solve puzzle ``p``; write the first solution to ``out[p]``.

    Returns (number of solutions capped at limit, number of branch points).
    """
    if not _setup(grids, p, S):
        return 0, 0
    todo = np.int64(ALL_DIGITS)
    sp = 0
    nsol = 0
    guesses = 0
    while True:
        # (one call of _propagate, so one inlined copy of it: the stall's work comes back here)
        ok = _propagate(S, todo)
        if ok and (np.int64(S[27]) | np.int64(S[28]) | np.int64(S[29])) != 0:
            r = _stall(S, pick)
            if r > 0:
                todo = r
                continue
            ok = r == 0
        if ok:
            if (np.int64(S[27]) | np.int64(S[28]) | np.int64(S[29])) == 0:
                nsol += 1
                if nsol == 1:
                    _extract(S, out, p)
                if nsol >= limit:
                    break
            elif pick[0] >= 0:
                guesses += 1
                kind = pick[0]
                idx = pick[1]
                d = pick[2]
                e = pick[3]
                # push the node without the entry (copied first, then its one board changed
                # in the copy: the copy's 32-byte loads follow no store into S), go on with it
                copy_row(stack, sp, S, 0)
                s = idx * 9 + d if kind == 0 else (e // 3) * 9 + d
                stack[sp, s] = _denied(S, s, kind, idx, e)
                stack[sp, 30] = np.int64(1) << d
                sp += 1
                _assert_entry(S, kind, idx, d, e)
                todo = np.int64(1) << d
                continue
        # backtrack
        if sp == 0:
            break
        sp -= 1
        copy_row(S, 0, stack, sp)
        todo = np.int64(S[30])
    return nsol, guesses


@compiled.kernel("(readonly u1[:, ::1], i8, u1[:, ::1], i1[::1], i8[::1], i8[::1], i4[::1], "
                 "i8[::1], i4[:, ::1]) -> void", _nrt=False)
def _solve_all(grids, limit, out, nsol, nguess, cycles, S, pick, stack):
    """The loop over puzzles. No array is made here, so numba compiles it without
    reference counting (the ahead-of-time module keeps that on for the module, which
    this loop never calls): the state arrays cost no bookkeeping per puzzle or node."""
    timed = cycles.shape[0] == grids.shape[0]
    for p in range(grids.shape[0]):
        t0 = rdcycle() if timed else 0
        ns, g = _solve_one(grids, p, out, limit, S, pick, stack)
        nsol[p] = ns
        nguess[p] = g
        if timed:
            cycles[p] = rdcycle() - t0


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def solve_batch(
    grids: np.ndarray, limit: int = 2, timings: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Solve a batch of puzzles; count solutions up to `limit`.

    grids: (N, 81) uint8, row-major, 0 = blank, 1..9 = given (values > 9 are blanks).
    Returns (solutions (N, 81) uint8 -- first solution found, zeros when none;
             n_solutions (N,) int8 capped at limit;
             guesses (N,) int64 -- branch points of the search, 0 = solved by propagation;
             cycles (N,) int64 CPU cycles per puzzle when timings=True, else None).
    """
    g = np.ascontiguousarray(grids, dtype=np.uint8)
    if g.ndim != 2 or g.shape[1] != 81:
        g = g.reshape(-1, 81)
    n = g.shape[0]
    lim = int(limit)
    if lim < 1:
        raise ValueError("limit must be >= 1")
    lim = min(lim, 127)
    out = np.zeros((n, 81), np.uint8)
    nsol = np.zeros(n, np.int8)
    nguess = np.zeros(n, np.int64)
    # One compiled entry point, timed or not (an empty `cycles` means untimed): a worker
    # loads one kernel from numba's cache, not two.
    cycles = np.zeros(n if timings else 0, np.int64)
    if n:
        S = np.zeros(NODE, np.int32)
        pick = np.zeros(4, np.int64)
        stack = np.empty((STACK_DEPTH, NODE), np.int32)
        _solve_all(g, lim, out, nsol, nguess, cycles, S, pick, stack)
    return out, nsol, nguess, (cycles if timings else None)


def warm_up() -> None:
    """Compile or load the cached kernel (call once per process)."""
    solve_batch(np.zeros((1, 81), np.uint8), 2, True)


@compiled.kernel("() -> i8")
def read_cycles() -> int:
    """The CPU's cycle counter now, as the timed kernel reads it (0 where there is none)."""
    return rdcycle()


def cycles_per_us(window: float = 0.02) -> float | None:
    """The cycle counter's rate, measured against perf_counter over a short busy wait."""
    import time

    read_cycles()  # compile or load before timing
    t0, c0 = time.perf_counter(), read_cycles()
    while time.perf_counter() - t0 < window:
        pass
    t1, c1 = time.perf_counter(), read_cycles()
    if c1 <= c0:
        return None
    return (c1 - c0) / ((t1 - t0) * 1e6)
