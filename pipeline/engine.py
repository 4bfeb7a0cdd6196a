"""Compiled Sudoku solver kernel (numba).

State layout
------------
The grid is split into three horizontal bands of 27 cells (3 rows x 9 columns).
For every (band, digit) pair the solver keeps one 27-bit board ``F[b*9+d]`` of the
cells of band ``b`` where digit ``d+1`` may still go (bit ``r*9+c`` = row ``r`` of the
band, column ``c``), plus ``U[b]``, the 27-bit mask of cells of band ``b`` not yet
known.  A search node is therefore 30 small integers, and backtracking uses an
explicit stack of whole-node copies.

Propagation
-----------
A 27-bit *dirty* mask records which boards changed.  Processing a board:

* squeezes each of its three rows to the set of boxes it still reaches (3 bits per
  row, 9 bits in all) and keeps only cells whose (row, box) pair belongs to some
  row->box permutation (one digit per row and per box of the band): this is
  pointing / claiming locked candidates within the band, and detects rows or boxes
  without a place for the digit;
* a box of the band where the digit is confined to one column claims that column:
  it is removed from the two other bands (this also enforces column uniqueness);
* a row left with one cell fixes that cell: it leaves ``U`` and the other eight
  digits' boards of the band.

When the dirty mask is empty, naked singles (and empty cells) are found by
bit-slicing the nine boards of a band into "at least 1/2/3 candidates" masks, and
column hidden singles by bit-slicing the nine rows of a digit.  When all of that
stalls the search branches on a cell with two candidates -- the one with the best
score of 2 per unsolved peer (row, column, box) plus 1 per bivalue peer -- or,
failing that, the unsolved cell with the fewest candidates.  The pushed alternative is
the same node without the chosen candidate; ``guesses`` counts these branch points.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["cycles_per_us", "read_cycles", "solve_batch", "warm_up"]

# --------------------------------------------------------------------------------------
# LLVM intrinsics
# --------------------------------------------------------------------------------------


@intrinsic
def _cttz(typingctx, x):
    """Count trailing zeros of a non-zero int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        (val,) = args
        val = context.cast(builder, val, x, types.int64)
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.cttz.i64")
        return builder.call(fn, [val, ir.Constant(ir.IntType(1), 1)])

    return types.int64(x), codegen


@intrinsic
def _popcnt(typingctx, x):
    """Population count of an int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        (val,) = args
        val = context.cast(builder, val, x, types.int64)
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ctpop.i64")
        return builder.call(fn, [val])

    return types.int64(x), codegen


@intrinsic
def _rdcycle(typingctx):
    """Read the CPU cycle counter (0 on platforms without one)."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return types.int64(), codegen


# --------------------------------------------------------------------------------------
# Lookup tables (built once at import; numba freezes global arrays into the kernel)
# --------------------------------------------------------------------------------------

ALL27 = (1 << 27) - 1
STACK_DEPTH = 96  # a path places one cell per guess, so depth <= 81


def _build_tables():
    shrink = np.zeros(512, np.int64)  # 9 bits of a row -> 3 bits: boxes reached
    single_row = np.zeros(512, np.int64)  # 9 bits -> the bits if exactly one, else 0
    for v in range(512):
        for k in range(3):
            if v & (7 << (3 * k)):
                shrink[v] |= 1 << k
        if v and (v & (v - 1)) == 0:
            single_row[v] = v

    # (row, box) availability (bit r*3+k) -> cells whose pair lies on some permutation
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    complex_ = np.zeros(512, np.int64)
    for sh in range(512):
        keep = 0
        for p in perms:
            if all(sh >> (r * 3 + p[r]) & 1 for r in range(3)):
                for r in range(3):
                    keep |= 1 << (r * 3 + p[r])
        m = 0
        for r in range(3):
            for k in range(3):
                if keep >> (r * 3 + k) & 1:
                    m |= 7 << (r * 9 + k * 3)
        complex_[sh] = m

    # columns reachable in a band (9 bits) -> cells still allowed in the other bands
    colclaim = np.zeros(512, np.int64)
    for cols in range(512):
        claimed = 0
        for k in range(3):
            cb = (cols >> (3 * k)) & 7
            if cb and (cb & (cb - 1)) == 0:
                claimed |= cb << (3 * k)
        colclaim[cols] = ALL27 & ~(claimed | claimed << 9 | claimed << 18)

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
    return shrink, single_row, complex_, colclaim, peer_keep


SHRINK, SINGLE_ROW, COMPLEX, COLCLAIM, PEER_KEEP = _build_tables()
# 32-bit tables: half the cache footprint (all values fit in 27 bits)
SHRINK = SHRINK.astype(np.int32)
SINGLE_ROW = SINGLE_ROW.astype(np.int32)
COMPLEX = COMPLEX.astype(np.int32)
COLCLAIM = COLCLAIM.astype(np.int32)


# --------------------------------------------------------------------------------------
# Kernel
# --------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _propagate(F, U, dirty):
    """Process dirty boards until none is left.  Returns False on contradiction."""
    while dirty != 0:
        s = _cttz(dirty)
        dirty &= dirty - 1
        x = np.int64(F[s])
        sh = SHRINK[x & 511] | (SHRINK[(x >> 9) & 511] << 3) | (SHRINK[(x >> 18) & 511] << 6)
        x &= COMPLEX[sh & 511]
        if x == 0:
            return False
        F[s] = x
        b = s // 9
        # column claims -> the other two bands of the same digit (branch-free)
        cm = COLCLAIM[(x | (x >> 9) | (x >> 18)) & 511]
        t = s + 9 if s < 18 else s - 18
        o = np.int64(F[t])
        n = o & cm
        F[t] = n
        dirty |= np.int64(n != o) << t
        t = s + 18 if s < 9 else s - 9
        o = np.int64(F[t])
        n = o & cm
        F[t] = n
        dirty |= np.int64(n != o) << t
        # rows reduced to one cell fix that cell
        solved = (
            SINGLE_ROW[x & 511]
            | (SINGLE_ROW[(x >> 9) & 511] << 9)
            | (SINGLE_ROW[(x >> 18) & 511] << 18)
        )
        u = np.int64(U[b])
        ns = solved & u
        if ns != 0:
            U[b] = u & ~ns
            keep = ~ns
            base = b * 9
            for t in range(base, base + 9):
                o = np.int64(F[t])
                n = o & keep
                F[t] = n
                dirty |= np.int64(n != o) << t
            F[s] = x
            dirty &= ~(np.int64(1) << s)
    return True


@njit(cache=True, inline="always")
def _singles(F, U, pairs):
    """Place naked singles and column hidden singles.

    Returns a dirty mask (> 0) if something was placed, 0 if nothing, -1 on contradiction.
    Fills ``pairs[b]`` with the bivalue cells of each band.
    """
    dirty = np.int64(0)
    for b in range(3):
        base = b * 9
        c1 = np.int64(0)
        c2 = np.int64(0)
        c3 = np.int64(0)
        for d in range(9):
            m = np.int64(F[base + d])
            c3 |= c2 & m
            c2 |= c1 & m
            c1 |= m
        if c1 != ALL27:
            return -1
        pairs[b] = c2 & ~c3
        sing = c1 & ~c2 & np.int64(U[b])
        while sing != 0:
            i = _cttz(sing)
            bit = np.int64(1) << i
            sing &= sing - 1
            for d in range(9):
                s = base + d
                o = np.int64(F[s])
                if o & bit:
                    F[s] = o & PEER_KEEP[i]
                    dirty |= np.int64(1) << s
                    break
    if dirty != 0:
        return dirty
    # hidden singles in columns: a digit with exactly one place left in a column
    for d in range(9):
        x0 = np.int64(F[d])
        x1 = np.int64(F[9 + d])
        x2 = np.int64(F[18 + d])
        o1 = np.int64(0)
        o2 = np.int64(0)
        for x in (x0, x1, x2):
            for r in range(3):
                m = (x >> (9 * r)) & 511
                o2 |= o1 & m
                o1 |= m
        if o1 != 511:
            return -1
        one = o1 & ~o2
        if one == 0:
            continue
        one3 = one | (one << 9) | (one << 18)
        for b in range(3):
            s = b * 9 + d
            h = np.int64(F[s]) & one3 & np.int64(U[b])
            while h != 0:
                i = _cttz(h)
                h &= h - 1
                F[s] = np.int64(F[s]) & PEER_KEEP[i]
                dirty |= np.int64(1) << s
    return dirty


@njit(cache=True)
def _solve_one(grids, p, out, limit, F, U, pairs, stack):
    """Solve puzzle ``p``; write the first solution to ``out[p]``.

    Returns (number of solutions capped at limit, number of branch points).
    """
    for s in range(27):
        F[s] = ALL27
    for b in range(3):
        U[b] = ALL27
    for c in range(81):
        v = np.int64(grids[p, c])
        if v >= 1 and v <= 9:
            b = c // 27
            i = c - 27 * b
            s = b * 9 + v - 1
            o = np.int64(F[s])
            bit = np.int64(1) << i
            if o & bit == 0:
                return 0, 0
            # full elimination: the cell leaves the other digits, its row/box/column
            # peers lose the digit (in this band and, by column, in the other two)
            U[b] = np.int64(U[b]) & ~bit
            base = b * 9
            for t in range(base, base + 9):
                F[t] = np.int64(F[t]) & ~bit
            F[s] = o & PEER_KEEP[i]
            cm = ~(np.int64(0x40201) << (i % 9))
            t = s + 9 if s < 18 else s - 18
            F[t] = np.int64(F[t]) & cm
            t = s + 18 if s < 9 else s - 9
            F[t] = np.int64(F[t]) & cm
    dirty = np.int64(ALL27)
    sp = 0
    nsol = 0
    guesses = 0
    while True:
        ok = _propagate(F, U, dirty)
        solved = False
        if ok:
            while True:
                if (np.int64(U[0]) | np.int64(U[1]) | np.int64(U[2])) == 0:
                    solved = True
                    break
                r = _singles(F, U, pairs)
                if r < 0:
                    ok = False
                    break
                if r == 0:
                    break
                if not _propagate(F, U, r):
                    ok = False
                    break
        if ok:
            if solved:
                nsol += 1
                if nsol == 1:
                    for s in range(27):
                        x = np.int64(F[s])
                        off = (s // 9) * 27
                        dig = s % 9 + 1
                        while x != 0:
                            out[p, off + _cttz(x)] = dig
                            x &= x - 1
                if nsol >= limit:
                    break
            else:
                # branch on a bivalue cell; among them prefer the one whose peers hold
                # the most unsolved cells (score 2 each) and bivalue cells (1 more each)
                guesses += 1
                bb = -1
                best = -1
                bi = 0
                p0 = np.int64(pairs[0])
                p1 = np.int64(pairs[1])
                p2 = np.int64(pairs[2])
                u0 = np.int64(U[0])
                u1 = np.int64(U[1])
                u2 = np.int64(U[2])
                for b in range(3):
                    pb = p0 if b == 0 else (p1 if b == 1 else p2)
                    ub = u0 if b == 0 else (u1 if b == 1 else u2)
                    q = pb
                    while q != 0:
                        j = _cttz(q)
                        q &= q - 1
                        cm = np.int64(0x40201) << (j % 9)  # column of j, all 3 rows
                        seen = ~PEER_KEEP[j] & ALL27
                        k = 2 * _popcnt(ub & seen) + _popcnt(pb & seen)
                        if b != 0:
                            k += 2 * _popcnt(u0 & cm) + _popcnt(p0 & cm)
                        if b != 1:
                            k += 2 * _popcnt(u1 & cm) + _popcnt(p1 & cm)
                        if b != 2:
                            k += 2 * _popcnt(u2 & cm) + _popcnt(p2 & cm)
                        if k > best:
                            best = k
                            bb = b
                            bi = j
                if bb >= 0:
                    i = bi
                else:
                    # no bivalue cell: the unsolved cell with the fewest candidates
                    bestn = 10
                    bi = 0
                    for b in range(3):
                        u = np.int64(U[b])
                        while u != 0:
                            j = _cttz(u)
                            u &= u - 1
                            n = 0
                            for d in range(9):
                                n += (np.int64(F[b * 9 + d]) >> j) & 1
                            if n < bestn:
                                bestn = n
                                bb = b
                                bi = j
                    i = bi
                bit = np.int64(1) << i
                base = bb * 9
                s = base
                for d in range(9):
                    if np.int64(F[base + d]) & bit:
                        s = base + d
                        break
                # alternative: the same node without this candidate
                for t in range(27):
                    stack[sp, t] = F[t]
                stack[sp, 27] = U[0]
                stack[sp, 28] = U[1]
                stack[sp, 29] = U[2]
                stack[sp, 30] = s
                stack[sp, s] = np.int64(F[s]) & ~bit
                sp += 1
                F[s] = np.int64(F[s]) & PEER_KEEP[i]
                dirty = np.int64(1) << s
                continue
        # backtrack
        if sp == 0:
            break
        sp -= 1
        for t in range(27):
            F[t] = stack[sp, t]
        U[0] = stack[sp, 27]
        U[1] = stack[sp, 28]
        U[2] = stack[sp, 29]
        dirty = np.int64(1) << np.int64(stack[sp, 30])
    return nsol, guesses


@njit(cache=True)
def _kernel(grids, limit, out, nsol, nguess):
    F = np.empty(27, np.int32)
    U = np.empty(3, np.int32)
    pairs = np.empty(3, np.int64)
    stack = np.empty((STACK_DEPTH, 32), np.int32)
    for p in range(grids.shape[0]):
        ns, g = _solve_one(grids, p, out, limit, F, U, pairs, stack)
        nsol[p] = ns
        nguess[p] = g


@njit(cache=True)
def _kernel_timed(grids, limit, out, nsol, nguess, cycles):
    F = np.empty(27, np.int32)
    U = np.empty(3, np.int32)
    pairs = np.empty(3, np.int64)
    stack = np.empty((STACK_DEPTH, 32), np.int32)
    for p in range(grids.shape[0]):
        t0 = _rdcycle()
        ns, g = _solve_one(grids, p, out, limit, F, U, pairs, stack)
        t1 = _rdcycle()
        nsol[p] = ns
        nguess[p] = g
        cycles[p] = t1 - t0


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
    if timings:
        cycles = np.zeros(n, np.int64)
        if n:
            _kernel_timed(g, lim, out, nsol, nguess, cycles)
        return out, nsol, nguess, cycles
    if n:
        _kernel(g, lim, out, nsol, nguess)
    return out, nsol, nguess, None


def warm_up() -> None:
    """Compile or load the cached kernel (call once per process)."""
    g = np.zeros((1, 81), np.uint8)
    solve_batch(g, 2, False)
    solve_batch(g, 1, True)


@njit(cache=True)
def read_cycles() -> int:
    """The CPU's cycle counter now, as the timed kernel reads it (0 where there is none)."""
    return _rdcycle()


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
