"""pipeline.sudoku.grade: a grade from the engine's guesses, at the boundaries.
"""

from __future__ import annotations

import numpy as np

from pipeline.sudoku import grade


def test_grade_boundaries():
    guesses = np.array([0, 1, 2, 3, 9, 10, 49, 50, 10_000])
    assert [grade.GRADES[g] for g in grade.grade_of_guesses(guesses)] == [
        "easy", "medium", "medium", "hard", "hard", "expert", "expert", "extreme", "extreme"]
