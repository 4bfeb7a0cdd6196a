"""Symmetries of the grid: the 2 x 6^8 cell permutations and the 9! relabellings, encoded.

A transformation is 34 int8 values (TRANSFORM_WIDTH), read as a map from the result's
squares to the source's::

    t[0]       transpose (1) or not (0)
    t[1:4]     band order: result band i is source band t[1+i]
    t[4:13]    row order inside each band: result row r is row t[4+r] of its band
    t[13:16]   stack order, t[16:25] column order inside each stack (as for rows)
    t[25:34]   digit relabelling: source digit d becomes t[24+d]

    result[r, c] = relabel(source[R(r), C(c)])      R(r) = 3 t[1 + r//3] + t[4 + r]
    (transposed: source[C(c), R(r)])                C(c) = 3 t[13 + c//3] + t[16 + c]

The canonical form (canonical.py) returns one such transformation per grid; the data-set
tools draw random ones (augment), and generation shuffles its grids with them (`shuffle`).
"""

from __future__ import annotations

import numpy as np

from pipeline import compiled
from pipeline.sudoku import grid

TRANSFORM_WIDTH = 34


def _check_transforms(transforms: np.ndarray, n: int) -> np.ndarray:
    t = np.ascontiguousarray(transforms, dtype=np.int8)
    if t.ndim == 1:
        t = t.reshape(1, -1)
    if t.shape != (n, TRANSFORM_WIDTH):
        raise ValueError(f"expected ({n}, {TRANSFORM_WIDTH}) transforms, got {t.shape}")
    return t


@compiled.helper()
def _gather(t):
    """Cell gather index (81,) and digit table (10,) of one encoded transformation."""
    idx = np.empty(81, np.int64)
    dig = np.zeros(10, np.uint8)
    for r in range(9):
        rr = 3 * t[1 + r // 3] + t[4 + r]
        for c in range(9):
            cc = 3 * t[13 + c // 3] + t[16 + c]
            idx[r * 9 + c] = cc * 9 + rr if t[0] else rr * 9 + cc
    for d in range(1, 10):
        dig[d] = t[24 + d]
    return idx, dig


@compiled.kernel("(readonly u1[:, ::1], readonly i1[:, ::1], u1[:, ::1]) -> void")
def _transform_batch(grids, transforms, out):
    for i in range(grids.shape[0]):
        idx, dig = _gather(transforms[i])
        for s in range(81):
            v = grids[i, idx[s]]
            out[i, s] = dig[v] if v <= 9 else 0


def transform(grids: np.ndarray, transforms: np.ndarray) -> np.ndarray:
    """Apply one encoded transformation per grid (values above 9 become blanks)."""
    g = grid.as_batch(grids)
    t = _check_transforms(transforms, len(g))
    out = np.zeros_like(g)
    if len(g):
        _transform_batch(g, t, out)
    return out


def _random_perms(rng: np.random.Generator, shape: tuple[int, ...], k: int) -> np.ndarray:
    return rng.random((*shape, k)).argsort(axis=-1).astype(np.int8)


def random_transforms(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n,34) int8: n uniformly random transformations."""
    out = np.empty((n, TRANSFORM_WIDTH), np.int8)
    out[:, 0] = rng.integers(0, 2, n)
    out[:, 1:4] = _random_perms(rng, (n,), 3)
    out[:, 4:13] = _random_perms(rng, (n, 3), 3).reshape(n, 9)
    out[:, 13:16] = _random_perms(rng, (n,), 3)
    out[:, 16:25] = _random_perms(rng, (n, 3), 3).reshape(n, 9)
    out[:, 25:34] = _random_perms(rng, (n,), 9) + 1
    return out


def identity_transforms(n: int) -> np.ndarray:
    """(n,34) int8: n identity transformations."""
    one = np.array([0, 0, 1, 2] + [0, 1, 2] * 3 + [0, 1, 2] + [0, 1, 2] * 3 + list(range(1, 10)))
    return np.tile(one.astype(np.int8), (n, 1))


def _inverse_axis(bands: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of R(3i+j) = 3*bands[i] + rows[3i+j], in the same form, row-wise."""
    n = len(bands)
    ar = np.arange(n)[:, None]
    inv_bands = np.argsort(bands, axis=1)
    inv_rows = np.empty_like(rows)
    for i in range(3):
        b = bands[:, i]
        for j in range(3):
            inv_rows[ar[:, 0], 3 * b + rows[:, 3 * i + j]] = j
    return inv_bands.astype(np.int8), inv_rows.astype(np.int8)


def inverse(transforms: np.ndarray) -> np.ndarray:
    """(N,34) int8: the transformations that undo each given one."""
    t = np.ascontiguousarray(transforms, dtype=np.int8)
    if t.ndim != 2 or t.shape[1] != TRANSFORM_WIDTH:
        raise ValueError(f"expected (N, {TRANSFORM_WIDTH}) transforms, got {t.shape}")
    rb, rr = _inverse_axis(t[:, 1:4].astype(np.int64), t[:, 4:13].astype(np.int64))
    cb, cr = _inverse_axis(t[:, 13:16].astype(np.int64), t[:, 16:25].astype(np.int64))
    out = np.empty_like(t)
    out[:, 0] = t[:, 0]
    flip = t[:, 0].astype(bool)[:, None]
    # Transposed: Q[r,c] = S[C(c), R(r)], so S[a,b] = Q[R^-1(b), C^-1(a)]: the inverse
    # transposes too and its row map is C^-1, its column map R^-1.
    out[:, 1:4] = np.where(flip, cb, rb)
    out[:, 4:13] = np.where(flip, cr, rr)
    out[:, 13:16] = np.where(flip, rb, cb)
    out[:, 16:25] = np.where(flip, rr, cr)
    out[:, 25:34] = np.argsort(t[:, 25:34], axis=1) + 1
    return out


def _line_orders(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3) band (or stack) orders and (n, 9) line orders inside them, drawn from rng."""
    bands = np.argsort(rng.random((n, 3)), axis=1)
    inside = np.argsort(rng.random((n, 3, 3)), axis=2)
    return bands.astype(np.int8), inside.reshape(n, 9).astype(np.int8)


def shuffle(rng: np.random.Generator, grids: np.ndarray) -> np.ndarray:
    """Each grid through a random symmetry (still valid, still complete): a relabelling,
    rows and columns reordered inside their bands and stacks, bands and stacks reordered,
    and half the time a transposition. (Drawn in generation's own order, so a seed makes
    the same puzzles as it always has; `random_transforms` draws another way.)"""
    n = len(grids)
    t = np.empty((n, TRANSFORM_WIDTH), np.int8)
    t[:, 25:34] = rng.permuted(np.tile(np.arange(1, 10, dtype=np.int8), (n, 1)), axis=1)
    row_bands, rows = _line_orders(rng, n)
    col_bands, cols = _line_orders(rng, n)
    flip = rng.random(n) < 0.5
    t[:, 0] = flip
    # Transposed, the drawn row order picks the source's rows at the result's columns.
    f = flip[:, None]
    t[:, 1:4] = np.where(f, col_bands, row_bands)
    t[:, 4:13] = np.where(f, cols, rows)
    t[:, 13:16] = np.where(f, row_bands, col_bands)
    t[:, 16:25] = np.where(f, rows, cols)
    return transform(grids, t)
