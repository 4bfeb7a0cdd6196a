"""Run statistics gathered chunk by chunk, so memory stays flat however many rows a run has.

Counts and guesses are exact (guesses as a histogram of whole numbers). Per-puzzle solve
times go into a histogram of log-spaced bins 1.2% wide, so their percentiles are right to
within about 0.6%; the maximum is exact.
"""

from __future__ import annotations

import numpy as np

from pipeline.sudoku.grade import histogram_quantile
from pipeline.sudoku.status import NULL, STATUS_NAMES

_BINS_PER_DECADE = 200  # 10 ** (1 / 200): bins about 1.2% wide, midpoints within 0.6%
_LOW, _HIGH = -2, 8  # 0.01 µs .. 100 s
_EDGES = np.logspace(_LOW, _HIGH, (_HIGH - _LOW) * _BINS_PER_DECADE + 1)


class Tally:
    """Status counts, guesses and solve times of one input (or of a whole run)."""

    def __init__(self) -> None:
        self.counts = np.zeros(len(STATUS_NAMES), dtype=np.int64)
        self.guesses = np.zeros(1, dtype=np.int64)  # guesses -> how many puzzles
        # The time histogram, sparse: its bins that hold any (sorted) and their counts. A
        # run may have a hundred thousand inputs; 2,000 bins each would be 16 KB apiece.
        self.us_bins = np.zeros(0, dtype=np.int64)
        self.us_counts = np.zeros(0, dtype=np.int64)
        self.solve_us_max: float | None = None
        self.ser = np.zeros(0, dtype=np.int64)  # SER in tenths -> how many rows (--rate)

    def add(self, status: np.ndarray, guesses: np.ndarray, solve_us: np.ndarray | None,
            ser: np.ndarray | None = None) -> None:
        """Count one chunk: status codes, guesses (NULL = none), solve µs (NaN = none) and
        SER in tenths (0 = none)."""
        if ser is not None:
            self._add_ser(np.bincount(np.asarray(ser, dtype=np.int64)))
        self.counts += np.bincount(np.asarray(status, dtype=np.int64),
                                   minlength=len(STATUS_NAMES))
        g = np.asarray(guesses, dtype=np.int64)
        g = g[g != NULL]
        if len(g):
            hist = np.bincount(g)
            if len(hist) > len(self.guesses):
                self.guesses = np.pad(self.guesses, (0, len(hist) - len(self.guesses)))
            self.guesses[: len(hist)] += hist
        if solve_us is not None:
            us = np.asarray(solve_us, dtype=np.float64)
            us = us[~np.isnan(us)]
            if len(us):
                bins, counts = np.unique(np.searchsorted(_EDGES, us), return_counts=True)
                self._add_bins(bins, counts)
                top = float(us.max())
                self.solve_us_max = top if self.solve_us_max is None else max(top,
                                                                              self.solve_us_max)

    def _add_bins(self, bins: np.ndarray, counts: np.ndarray) -> None:
        if not len(self.us_bins):
            self.us_bins, self.us_counts = bins.astype(np.int64), counts.astype(np.int64)
            return
        merged, where = np.unique(np.concatenate([self.us_bins, bins]), return_inverse=True)
        total = np.zeros(len(merged), dtype=np.int64)
        np.add.at(total, where, np.concatenate([self.us_counts, counts]))
        self.us_bins, self.us_counts = merged, total

    def _add_ser(self, hist: np.ndarray) -> None:
        hist = hist.copy()
        hist[:1] = 0  # no rating
        if len(hist) > len(self.ser):
            self.ser = np.pad(self.ser, (0, len(hist) - len(self.ser)))
        self.ser[: len(hist)] += hist

    @property
    def solve_us(self) -> np.ndarray:
        """The time histogram, all its bins."""
        dense = np.zeros(len(_EDGES) + 1, dtype=np.int64)
        dense[self.us_bins] = self.us_counts
        return dense

    def merge(self, other: Tally) -> None:
        self.counts += other.counts
        if len(other.guesses) > len(self.guesses):
            self.guesses = np.pad(self.guesses, (0, len(other.guesses) - len(self.guesses)))
        self.guesses[: len(other.guesses)] += other.guesses
        if len(other.us_bins):
            self._add_bins(other.us_bins, other.us_counts)
        if len(other.ser):
            self._add_ser(other.ser)
        if other.solve_us_max is not None:
            self.solve_us_max = max(other.solve_us_max, self.solve_us_max or 0.0)

    @property
    def rows(self) -> int:
        return int(self.counts.sum())

    def count_of(self) -> dict[str, int]:
        return {name: int(n) for name, n in zip(STATUS_NAMES, self.counts, strict=True)}

    def guesses_figures(self) -> dict[str, float | int | None]:
        n = int(self.guesses.sum())
        if n == 0:
            return {"guesses_mean": None, "guesses_p99": None, "guesses_max": None}
        values = np.arange(len(self.guesses))
        return {
            "guesses_mean": float((values * self.guesses).sum() / n),
            "guesses_p99": float(histogram_quantile(self.guesses, values, 0.99)),
            "guesses_max": int(np.flatnonzero(self.guesses)[-1]),
        }

    def solve_us_figures(self) -> dict[str, float | None]:
        n = int(self.us_counts.sum())
        names = ("solve_us_p50", "solve_us_p90", "solve_us_p99")
        if n == 0:
            return {**dict.fromkeys(names), "solve_us_max": None}
        # Bin i holds values in [EDGES[i-1], EDGES[i]); its geometric midpoint stands for it.
        mids = np.sqrt(np.concatenate([[_EDGES[0]], _EDGES])
                       * np.concatenate([_EDGES, [_EDGES[-1]]]))
        hist = self.solve_us
        out = {name: float(histogram_quantile(hist, mids, q))
               for name, q in zip(names, (0.5, 0.9, 0.99), strict=True)}
        out["solve_us_max"] = self.solve_us_max
        return out

