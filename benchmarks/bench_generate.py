"""Benchmark of puzzles made to a SER band (`pipeline generate --ser BAND`), one core.

    .venv/bin/python benchmarks/bench_generate.py [--count N] [--seconds S]

For each band of issue 25 (1-2, 2-4, 4-6, 6-8, 8-9): minimal puzzles with one solution
whose rating (ER) is in the band, made from one seed on this process's core only, timed
whole (making candidates, proving them unique, rating them). A band that does not give
its puzzles within the generator's own limit of tries is said to be out of reach.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BANDS = [(10, 20), (20, 40), (40, 60), (60, 80), (80, 90)]  # tenths, both ends included


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100, help="puzzles a band")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):  # one core, as the goal is stated per core
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    from pipeline.errors import TargetNotReached
    from pipeline.sudoku import rate, search

    rate.rate(["." * 80 + "1"])  # the rater's kernels loaded before any timing
    search.generate(1, seed=1)
    print("puzzles made to a SER band (ER), minimal, one core")
    print(f"{'band':>8} {'puzzles':>8} {'seconds':>8} {'puzzles/s':>10} {'tried':>10}")
    for low, high in BANDS:
        band = f"{low / 10:.0f}-{high / 10:.0f}"
        t = time.perf_counter()
        try:
            made = search.generate(args.count, seed=args.seed, bands=((low, high), None, None))
        except TargetNotReached as exc:
            print(f"{band:>8} out of reach here: {exc}")
            continue
        dt = time.perf_counter() - t
        print(f"{band:>8} {len(made.puzzles):>8} {dt:>8.2f} {len(made.puzzles) / dt:>10.1f} "
              f"{made.attempts:>10,}")


if __name__ == "__main__":
    main()
