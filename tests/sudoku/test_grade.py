"""pipeline.sudoku.grade: a grade from the engine's guesses, at the boundaries; SER bands
written as they are read.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.sudoku import grade


def test_grade_boundaries():
    guesses = np.array([0, 1, 2, 3, 9, 10, 49, 50, 10_000])
    assert [grade.GRADES[g] for g in grade.grade_of_guesses(guesses)] == [
        "easy", "medium", "medium", "hard", "hard", "expert", "expert", "extreme", "extreme"]


@given(st.integers(0, 200), st.integers(0, 200), st.booleans())
def test_a_ser_band_reads_back_as_it_is_written(a, b, open_end):
    band = (min(a, b), grade.OPEN_END if open_end else max(a, b))
    text = grade.ser_band_text(band)
    assert grade.parse_ser_band(text) == band
    assert text.count(".") == (1 if open_end or a == b else 2)


def test_ser_bands_are_written_as_the_command_line_takes_them():
    assert [grade.ser_band_text(b) for b in [(70, 80), (90, grade.OPEN_END), (83, 83)]] == [
        "7.0-8.0", "9.0+", "8.3"]


@given(st.integers(0, 199), st.integers(1, 9), st.sampled_from(["{}", "{}-20", "{}+", "0.0-{}"]))
def test_a_bound_between_two_tenths_is_refused_not_rounded(tenth, hundredth, form):
    """1.25 rounded to 1.2 let 1.2 in, 1.29 to 1.3 let 1.3 in: ratings outside the band."""
    bound = f"{tenth / 10:.1f}{hundredth}"
    with pytest.raises(ValueError, match="not a whole tenth"):
        grade.parse_ser_band(form.format(bound))
    assert grade.parse_ser_band(form.format(f"{tenth / 10:.1f}0"))  # 1.20 is 1.2
