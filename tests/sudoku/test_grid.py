"""pipeline.sudoku.grid: text <-> arrays, the givens check, display."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PUZZLE, SOLUTION
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sudoku import grid

digits81 = st.text(alphabet="0123456789", min_size=81, max_size=81)


def test_units_cover_every_square_three_times():
    counts = np.bincount(grid.UNITS.ravel(), minlength=81)
    assert grid.UNITS.shape == (27, 9)
    assert (counts == 3).all()
    assert grid.UNIT_NAMES[0] == "grid row 1" and grid.UNIT_NAMES[9] == "grid column 1"
    assert grid.UNIT_NAMES[18] == "box 1" and grid.UNIT_NAMES[-1] == "box 9"
    assert grid.BOXES[4] == [30, 31, 32, 39, 40, 41, 48, 49, 50]


def test_encode_dots_and_zeros_are_blanks():
    grids, why = grid.encode([PUZZLE, PUZZLE.replace(".", "0")])
    assert why == [None, None]
    assert grids.dtype == np.uint8 and grids.shape == (2, 81)
    assert (grids[0] == grids[1]).all()
    assert grids[0][6] == 9 and grids[0][0] == 0


@pytest.mark.parametrize("text, reason", [
    (PUZZLE[:80], "length 80, expected 81"),
    (PUZZLE + "1", "length 82, expected 81"),
    ("", "empty puzzle field"),
    ("   ", "empty puzzle field"),
    (PUZZLE[:40] + "x" + PUZZLE[41:], "character 'x' at position 41"),
    (PUZZLE[:40] + "é" + PUZZLE[41:], "character 'é' at position 41"),
    ("-" + PUZZLE[1:], "character '-' at position 1"),
])
def test_encode_reasons(text, reason):
    grids, why = grid.encode([text])
    assert why == [reason]
    assert (grids[0] == 0).all()


def test_encode_tolerates_surrounding_whitespace():
    grids, why = grid.encode(["  " + PUZZLE + "\t", PUZZLE + "\r"])
    assert why == [None, None]
    assert (grids[0] == grid.encode([PUZZLE])[0][0]).all()


def test_encode_none_is_missing():
    _, why = grid.encode([None, PUZZLE])
    assert why == ["missing puzzle field", None]


def test_encode_empty_batch():
    grids, why = grid.encode([])
    assert grids.shape == (0, 81) and why == []


def test_encode_buffers_matches_encode():
    texts = [PUZZLE, "bad", SOLUTION, PUZZLE.replace(".", "0")]
    raw = [t.encode() for t in texts]
    offsets = np.cumsum([0] + [len(r) for r in raw]).astype(np.int64)
    data = np.frombuffer(b"".join(raw), dtype=np.uint8)
    g1, reasons = grid.encode_buffers(offsets, data)
    g2, why = grid.encode(texts)
    assert (g1 == g2).all()
    assert reasons == {1: "length 3, expected 81"} and why[1] == "length 3, expected 81"


@given(digits81)
@settings(max_examples=200, deadline=None)
def test_decode_encode_roundtrip(text):
    grids, why = grid.encode([text])
    assert why == [None]
    assert grid.decode(grids, blank="0") == [text]
    assert grid.decode(grids) == [text.replace("0", ".")]


def test_to_ascii_is_81_bytes_per_row():
    grids, _ = grid.encode([SOLUTION, PUZZLE])
    out = grid.to_ascii(grids)
    assert out.tolist() == [SOLUTION.encode(), PUZZLE.replace(".", "0").encode()]
    for blank in ".x-":  # any blank, by the arithmetic that replaced a table lookup
        got = grid.to_ascii(grids, blank).tolist()
        assert got == [SOLUTION.encode(), PUZZLE.replace(".", blank).encode()]


def test_find_clashes_and_reasons():
    solved = grid.encode([SOLUTION])[0][0]
    assert grid.find_clashes(solved[None]) == {}
    # Row clash: put row 1's first digit into its second square.
    row = solved.copy()
    row[1] = row[0]
    # Column clash only: two blanks-only grid with the same digit in column 3.
    col = np.zeros(81, np.uint8)
    col[2] = 7
    col[2 + 9 * 5] = 7
    box = np.zeros(81, np.uint8)
    box[30] = 4
    box[50] = 4
    triple = np.zeros(81, np.uint8)
    triple[[0, 3, 6]] = 5
    found = grid.find_clashes(np.stack([solved, row, col, box, triple]))
    assert set(found) == {1, 2, 3, 4}
    assert found[1] == f"digit {solved[0]} twice in grid row 1"
    assert found[2] == "digit 7 twice in grid column 3"
    assert found[3] == "digit 4 twice in box 5"
    assert found[4] == "digit 5 three times in grid row 1"


def test_clash_reason_raises_on_a_clean_grid():
    with pytest.raises(ValueError):
        grid.clash_reason(np.zeros(81, np.uint8))


def test_empty_batch_has_no_clashes():
    assert grid.find_clashes(np.zeros((0, 81), np.uint8)) == {}


def test_clues():
    grids, _ = grid.encode([PUZZLE, SOLUTION, "0" * 81])
    assert grid.clues(grids).tolist() == [PUZZLE.count(".") and 81 - PUZZLE.count("."), 81, 0]


def test_show_draws_a_board():
    text = grid.show(grid.encode([PUZZLE])[0][0])
    lines = text.splitlines()
    assert len(lines) == 11
    assert lines[3] == lines[7] == "------+-------+------"
    assert lines[0] == ". . . | . . . | 9 5 ."
