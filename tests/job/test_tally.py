"""pipeline.job.tally: counts and histograms merged; percentiles exact for guesses, within a
bin for solve times.
"""

from __future__ import annotations

import numpy as np

from pipeline.job import tally
from pipeline.sudoku.status import Status


def test_percentiles_are_exact_for_guesses_and_within_a_bin_for_times():
    t = tally.Tally()
    status = np.zeros(100, dtype=np.int64)
    t.add(status, np.arange(100), np.full(100, 1.0))
    t.add(np.array([Status.MALFORMED]), np.array([-1]), np.array([np.nan]))
    g = t.guesses_figures()
    assert (g["guesses_mean"], g["guesses_p99"], g["guesses_max"]) == (49.5, 98, 99)
    us = t.solve_us_figures()
    assert us["solve_us_max"] == 1.0
    assert all(abs(us[k] - 1.0) / 1.0 < 0.006 for k in ("solve_us_p50", "solve_us_p99"))
    assert t.count_of()["malformed"] == 1 and t.rows == 101
