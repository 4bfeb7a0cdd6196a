"""Each technique on a textbook position: an open grid (every candidate everywhere) where
only the pattern's candidates were taken out, so that the pattern is the easiest step; the
eliminations asserted are the pattern's, cell by cell."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import rate
from pipeline.sudoku.rate.board import alone
from pipeline.sudoku.rate.path import first_hint
from pipeline.sudoku.rate.techniques import (
    ELIMS,
    HINT_SIZE,
    NELIM,
    PCELL,
    PDIG,
    RATING,
    TECH,
    next_tight,
)

ALL = 0x1FF


def cell(r: int, c: int) -> int:
    return 9 * (r - 1) + (c - 1)


def open_grid() -> np.ndarray:
    return np.full(81, ALL, np.int64)


def only(grid: np.ndarray, digit: int, cells: list[int], among: list[int]) -> None:
    """Digit stays, of the cells `among`, only in `cells`."""
    for x in among:
        if x not in cells:
            grid[x] &= ~(1 << (digit - 1))


def row(r: int) -> list[int]:
    return [cell(r, c) for c in range(1, 10)]


def col(c: int) -> list[int]:
    return [cell(r, c) for r in range(1, 10)]


def box(b: int) -> list[int]:
    r0, c0 = 3 * ((b - 1) // 3) + 1, 3 * ((b - 1) % 3) + 1
    return [cell(r0 + i, c0 + j) for i in range(3) for j in range(3)]


def hint(grid: np.ndarray):
    H = np.zeros(HINT_SIZE, np.int64)
    assert first_hint(grid, H)
    elims = {(int(e) // 10, int(e) % 10) for e in H[ELIMS:ELIMS + H[NELIM]]}
    place = (int(H[PCELL]), int(H[PDIG])) if H[PCELL] >= 0 else None
    return rate.TECHNIQUES[H[TECH]], H[RATING] / 10, elims, place


def test_hidden_single_in_a_box_and_a_row():
    g = open_grid()
    only(g, 4, [cell(2, 2)], box(1))
    assert hint(g) == ("Hidden Single", 1.2, set(), (cell(2, 2), 4))
    g = open_grid()
    only(g, 4, [cell(2, 2)], row(2))
    assert hint(g) == ("Hidden Single", 1.5, set(), (cell(2, 2), 4))


def test_naked_single():
    g = open_grid()
    g[cell(5, 5)] = 1 << 6
    assert hint(g) == ("Naked Single", 2.3, set(), (cell(5, 5), 7))


def test_pointing():
    g = open_grid()
    only(g, 3, [cell(1, 1), cell(1, 2)], box(1))
    gone = {(x, 3) for x in row(1)[3:]}
    assert hint(g) == ("Pointing", 2.6, gone, None)


def test_claiming():
    g = open_grid()
    only(g, 3, [cell(1, 1), cell(2, 1)], col(1))
    gone = {(x, 3) for x in box(1) if x % 9 != 0}
    assert hint(g) == ("Claiming", 2.8, gone, None)


def test_naked_pair_and_triplet():
    g = open_grid()
    g[cell(1, 1)] = g[cell(1, 9)] = 0b11
    gone = {(x, d) for x in row(1)[1:8] for d in (1, 2)}
    assert hint(g) == ("Naked Pair", 3.0, gone, None)
    g = open_grid()
    g[cell(1, 1)], g[cell(1, 5)], g[cell(1, 9)] = 0b011, 0b110, 0b101
    gone = {(x, d) for x in row(1) if x not in (0, 4, 8) for d in (1, 2, 3)}
    assert hint(g) == ("Naked Triplet", 3.6, gone, None)


def test_hidden_pair():
    g = open_grid()
    for d in (6, 8):
        only(g, d, [cell(4, 2), cell(4, 8)], row(4))
    gone = {(x, d) for x in (cell(4, 2), cell(4, 8)) for d in range(1, 10) if d not in (6, 8)}
    assert hint(g) == ("Hidden Pair", 3.4, gone, None)


def test_x_wing_and_swordfish():
    g = open_grid()
    only(g, 5, [cell(1, 2), cell(1, 7)], row(1))
    only(g, 5, [cell(5, 2), cell(5, 7)], row(5))
    gone = {(cell(r, c), 5) for c in (2, 7) for r in range(1, 10) if r not in (1, 5)}
    assert hint(g) == ("X-Wing", 3.2, gone, None)
    g = open_grid()
    only(g, 5, [cell(1, 2), cell(1, 5)], row(1))
    only(g, 5, [cell(4, 5), cell(4, 8)], row(4))
    only(g, 5, [cell(7, 2), cell(7, 8)], row(7))
    gone = {(cell(r, c), 5) for c in (2, 5, 8) for r in range(1, 10) if r not in (1, 4, 7)}
    assert hint(g) == ("Swordfish", 3.8, gone, None)


def test_xy_and_xyz_wing():
    g = open_grid()
    g[cell(1, 1)], g[cell(1, 5)], g[cell(5, 1)] = 0b011, 0b101, 0b110  # 12, 13, 23
    assert hint(g) == ("XY-Wing", 4.2, {(cell(5, 5), 3)}, None)
    g = open_grid()
    g[cell(1, 1)], g[cell(1, 5)], g[cell(2, 2)] = 0b111, 0b101, 0b110  # 123, 13, 23
    gone = {(cell(1, c), 3) for c in (2, 3)}
    assert hint(g) == ("XYZ-Wing", 4.4, gone, None)


# a house's places or candidates: a few bits each, so that many subsets are tight
FEW_BITS = st.sets(st.integers(0, 8), max_size=4).map(lambda bits: sum(1 << k for k in bits))


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 511), st.integers(2, 4), st.lists(FEW_BITS, min_size=9, max_size=9))
def test_the_tight_subsets_are_the_subsets_whose_join_has_as_many_bits(eligible, size, masks):
    """next_tight's pruned search gives, in increasing order, every subset of `size`
    elements whose masks join into `size` bits."""
    elements = [k for k in range(9) if eligible >> k & 1]
    expected = sorted(sum(1 << k for k in pick) for pick in combinations(elements, size)
                      if bin(np.bitwise_or.reduce([masks[k] for k in pick])).count("1") == size)
    got, m = [], 0
    while m := int(next_tight(m, eligible, size, np.array(masks, np.int64))):
        got.append(m)
    assert got == expected


def house_cells(h: int) -> list[int]:
    """Rows 0-8, columns 9-17, boxes 18-26, from the grid's geometry."""
    if h < 9:
        return [9 * h + k for k in range(9)]
    if h < 18:
        return [9 * k + h - 9 for k in range(9)]
    b = h - 18
    return [9 * (3 * (b // 3) + k // 3) + 3 * (b % 3) + k % 3 for k in range(9)]


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 80), max_size=30))
def test_alone_finds_a_house_s_one_cell_on_a_bitboard(cells):
    """alone(): the house's one cell among `cells` (as a bitboard: bit c % 27 of word
    c // 27), or -1 when the house holds none or several."""
    words = [sum(1 << (c % 27) for c in cells if c // 27 == w) for w in range(3)]
    for h in range(27):
        inside = [c for c in house_cells(h) if c in cells]
        assert alone(*words, h) == (inside[0] if len(inside) == 1 else -1)
