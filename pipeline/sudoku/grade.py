"""A difficulty grade from the engine's own effort: how many guesses a puzzle needed.

    easy      0 guesses: the engine's propagation (singles, locked candidates) solves it
    medium    1-2 guesses
    hard      3-9 guesses
    expert    10-49 guesses
    extreme   50 or more

Guesses are deterministic for a given puzzle, so the grade is too. Only `solved` rows get a
grade; a puzzle with several solutions, none, or bad givens has none.

The grade says how hard a puzzle is for the engine; how hard it is for a person is its
Sudoku Explainer rating (`run --rate`: pipeline.sudoku.rate), counted in the run's stats by
the SER bands below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pipeline.sudoku.status import NULL, Status

if TYPE_CHECKING:
    from pipeline.sudoku.solver import Outcome

GRADES = ("easy", "medium", "hard", "expert", "extreme")
_LOWER_BOUNDS = np.array([1, 3, 10, 50])  # guesses at which the next grade starts


# SER bands of the stats, [low, high) in tenths of a rating: ser_1_2 .. ser_10_up
SER_BANDS = ((10, 20), (20, 40), (40, 60), (60, 80), (80, 90), (90, 100), (100, 1000))


def ser_band_name(low: int, high: int) -> str:
    return f"ser_{low // 10}_{high // 10}" if high < 1000 else f"ser_{low // 10}_up"


SER_BAND_NAMES = tuple(ser_band_name(lo, hi) for lo, hi in SER_BANDS)


def histogram_quantile(hist: np.ndarray, values: np.ndarray, q: float) -> float:
    """The q-quantile (lower) of a histogram: the value where the count first reaches q*n."""
    cum = np.cumsum(hist)
    return values[int(np.searchsorted(cum, q * cum[-1]))]


def ser_figures(ser: np.ndarray) -> dict[str, float | int | None]:
    """SER percentiles, the rows rated, and the rows per band, of a tenths histogram (the
    stats' figures, and the report's)."""
    n = int(ser.sum())
    names = ("ser_p50", "ser_p90", "ser_p99", "ser_max")
    out: dict[str, float | int | None] = {"ser_rated": n}
    if n == 0:
        out.update(dict.fromkeys(names))
    else:
        values = np.arange(len(ser)) / 10.0
        out.update({name: float(histogram_quantile(ser, values, q))
                    for name, q in zip(names[:3], (0.5, 0.9, 0.99), strict=True)})
        out["ser_max"] = float(np.flatnonzero(ser)[-1] / 10.0)
    for (low, high), name in zip(SER_BANDS, SER_BAND_NAMES, strict=True):
        out[name] = int(ser[low:high].sum())
    return out


OPEN_END = 10**6  # the high end of a band `9+`, in tenths


def parse_ser_band(text: str) -> tuple[int, int]:
    """A SER band as given on the command line, in tenths, both ends included: `7.0-8.0`,
    `9+` (9.0 and up) or `8.3` (that rating alone); ValueError for anything else, with
    the reason when it is that a bound is not a whole tenth (rounding it would let ratings
    outside the band in)."""
    def tenths(t: str) -> int:
        value = float(t)
        if not 0 <= value <= 20:
            raise ValueError(t)
        k = round(value * 10)
        if abs(value * 10 - k) > 1e-6:
            raise ValueError(f"{t.strip()} is not a whole tenth (SER ratings are 1.2, 7.3, ...)")
        return k

    text = text.strip()
    if text.endswith("+"):
        return tenths(text[:-1]), OPEN_END
    low, sep, high = text.partition("-")
    band = (tenths(low), tenths(high)) if sep else (tenths(low), tenths(low))
    if band[0] > band[1]:
        raise ValueError(text)
    return band


def ser_band_text(band: tuple[int, int]) -> str:
    """A band in tenths as parse_ser_band reads it back: 7.0-8.0, 9.0+ or 8.3."""
    low, high = band
    if high >= OPEN_END:
        return f"{low / 10:.1f}+"
    return f"{low / 10:.1f}" if low == high else f"{low / 10:.1f}-{high / 10:.1f}"


def grade_of_guesses(guesses: np.ndarray) -> np.ndarray:
    """(N,) grade index 0..4 for each guess count."""
    return np.searchsorted(_LOWER_BOUNDS, np.asarray(guesses), side="right")


def grade_codes(outcome: Outcome) -> np.ndarray:
    """(N,) int8 index into GRADES, NULL where there is no grade."""
    codes = grade_of_guesses(np.maximum(outcome.guesses, 0)).astype(np.int8)
    codes[outcome.status != Status.SOLVED] = NULL
    return codes
