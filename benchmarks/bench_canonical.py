"""Benchmark of the canonical form (pipeline.sudoku.canonical.minlex) on the shared puzzle sets.

    .venv/bin/python benchmarks/bench_canonical.py [--quick] [--repeats N]

One core, one call of minlex per set, best of a few repeats (wall clock; the CPU-time
column is steadier when other work shares the machine).  The reference rate is the
fastest public C++ minlexer on this machine, about 230,000 puzzles/s (4.3 us/puzzle); the
aim is twice that.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import puzzle_sets  # benchmarks/, beside this file

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RAW = REPO.parent / "shared" / "data" / "raw"

# name, file, field of the line, rows (full run), rows (--quick)
SETS = [
    ("17-clue", "tdoku_benchmark_sets/puzzles2_17_clue", 0, None, 10_000),
    ("forum hardest 11+", "tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+", 0, None, 10_000),
    ("top1465", "tdoku_benchmark_sets/puzzles3_magictour_top1465", 0, None, 1_465),
    ("Kaggle slice", "kaggle_bryanpark_1m/sudoku_small.csv", 0, None, 5_000),
    ("solution grids", "kaggle_bryanpark_1m/sudoku_small.csv", 1, 2_000, 300),
]
CPP_RATE = 230_000
AIM_RATE = 2 * CPP_RATE

def best_time(fn, repeats: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of a few calls."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer puzzles and repeats")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    repeats = args.repeats or (2 if args.quick else 3)

    from pipeline.sudoku.canonical import minlex

    t = time.perf_counter()
    minlex(np.zeros((1, 81), np.uint8))
    print(f"compile or cache load in this process: {time.perf_counter() - t:.2f} s")
    print(
        f"one core, best of {repeats}; C++ reference {CPP_RATE:,} puzzles/s, "
        f"aim {AIM_RATE:,} puzzles/s\n"
    )
    hdr = (
        f"{'set':<20} {'puzzles':>8} {'puzzles/s':>12} {'us/puzzle':>10} "
        f"{'vs C++':>7} {'cpu us/puz':>11} {'autos>1':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    for name, rel, field, n_full, n_quick in SETS:
        path = RAW / rel
        if not path.exists():
            print(f"{name:<20} (absent: {path})")
            continue
        g = puzzle_sets.load(path, n_quick if args.quick else n_full, field)
        n = len(g)
        dt, cpu = best_time(lambda g=g: minlex(g), repeats)
        _, autos = minlex(g)
        print(
            f"{name:<20} {n:>8} {n / dt:>12,.0f} {dt / n * 1e6:>10.2f} "
            f"{n / dt / CPP_RATE:>6.2f}x {cpu / n * 1e6:>11.2f} {int((autos > 1).sum()):>8}"
        )


if __name__ == "__main__":
    main()
