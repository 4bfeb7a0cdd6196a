"""The CPU cycle counter the kernel reads per puzzle, and its rate in cycles per µs."""

from __future__ import annotations

import time

from numba import njit

from pipeline.engine import _rdcycle


@njit(cache=True)
def read_cycles() -> int:
    """The CPU's cycle counter now (0 where the platform has none)."""
    return _rdcycle()


def cycles_per_us(window: float = 0.02) -> float | None:
    """The counter's rate, measured against perf_counter over a short busy wait."""
    read_cycles()  # compile or load before timing
    t0, c0 = time.perf_counter(), read_cycles()
    while time.perf_counter() - t0 < window:
        pass
    t1, c1 = time.perf_counter(), read_cycles()
    if c1 <= c0:
        return None
    return (c1 - c0) / ((t1 - t0) * 1e6)
