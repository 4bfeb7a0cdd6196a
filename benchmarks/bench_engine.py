"""Benchmark of the compiled engine (pipeline.engine) on the shared puzzle sets.

    .venv/bin/python benchmarks/bench_engine.py [--quick] [--repeats N]

One core, one call of solve_batch per set and limit, best of a few repeats.  Also times
the reference backtracking (pipeline.reference) on the Kaggle slice, the fresh compile
(empty NUMBA_CACHE_DIR, new process) and the cache load (new process, warm cache).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RAW = REPO.parent / "shared" / "data" / "raw"

SETS = [
    ("Kaggle slice", "kaggle_bryanpark_1m/sudoku_small.csv", 10_000, 2_000),
    ("17-clue", "tdoku_benchmark_sets/puzzles2_17_clue", 20_000, 3_000),
    ("top1465", "tdoku_benchmark_sets/puzzles3_magictour_top1465", None, 1_465),
    ("forum hardest 1106", "tdoku_benchmark_sets/puzzles6_forum_hardest_1106", None, 375),
    ("forum hardest 11+", "tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+", 10_000, 1_000),
    ("serg (non-unique)", "tdoku_benchmark_sets/puzzles7_serg_benchmark", 10_000, 2_000),
]
GOALS = {
    "Kaggle slice": 650_000,
    "17-clue": 320_000,
    "top1465": 85_000,
    "forum hardest 1106": 8_000,
    "forum hardest 11+": 15_000,
}

_TOKEN = re.compile(r"(?<![0-9.])[0-9.]{81}(?![0-9.])")


def load(path: Path, n: int | None) -> np.ndarray:
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            m = _TOKEN.search(line)
            if m:
                rows.append(m.group(0).replace(".", "0"))
                if n is not None and len(rows) >= n:
                    break
    return np.frombuffer("".join(rows).encode(), np.uint8).reshape(-1, 81) - 48


def best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def subprocess_seconds(env: dict) -> float:
    code = (
        "import time; t = time.perf_counter()\n"
        "from pipeline import engine\n"
        "engine.warm_up()\n"
        "print(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer puzzles and repeats")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    repeats = args.repeats or (2 if args.quick else 3)

    from pipeline.engine import solve_batch, warm_up

    t = time.perf_counter()
    warm_up()
    print(f"warm_up in this process: {time.perf_counter() - t:.2f} s")
    print(
        f"one core, best of {repeats}; limit 2 proves uniqueness, limit 1 stops at the first solution\n"
    )

    hdr = (
        f"{'set':<20} {'puzzles':>8} {'lim2 puz/s':>12} {'lim2 us/puz':>12} "
        f"{'lim1 puz/s':>12} {'lim1 us/puz':>12} {'guesses(l2)':>12} {'no-guess %':>10} "
        f"{'goal':>9}"
    )
    print(hdr)
    print("-" * len(hdr))
    kaggle = None
    for name, rel, n_full, n_quick in SETS:
        path = RAW / rel
        if not path.exists():
            print(f"{name:<20} (absent: {path})")
            continue
        g = load(path, n_quick if args.quick else n_full)
        if name == "Kaggle slice":
            kaggle = g
        n = len(g)
        res = {}
        for lim in (2, 1):
            res[lim] = best_time(lambda g=g, lim=lim: solve_batch(g, lim), repeats)
        _, ns, guesses, _ = solve_batch(g, 2)
        goal = GOALS.get(name)
        mark = (
            "" if goal is None else (f"{goal // 1000}k " + ("ok" if n / res[2] >= goal else "MISS"))
        )
        print(
            f"{name:<20} {n:>8} {n / res[2]:>12,.0f} {res[2] / n * 1e6:>12.2f} "
            f"{n / res[1]:>12,.0f} {res[1] / n * 1e6:>12.2f} {int(guesses.sum()):>12,} "
            f"{100 * np.mean(guesses == 0):>9.1f}% {mark:>9}"
        )
        counts = np.bincount(ns, minlength=3)
        if name.startswith("serg"):
            assert counts[2] == n, counts
        else:
            assert counts[1] == n, counts

    # the reference backtracking, time-capped
    if kaggle is not None:
        try:
            from pipeline import reference
        except ImportError:
            print("\nreference: pipeline.reference not importable")
        else:
            cap = 1.5 if args.quick else 3.0
            t0 = time.perf_counter()
            k = 0
            while k < len(kaggle) and time.perf_counter() - t0 < cap:
                reference.count_solutions([int(v) for v in kaggle[k]], 2)
                k += 1
            dt = time.perf_counter() - t0
            eng = best_time(lambda: solve_batch(kaggle[:k], 2), repeats)
            print(
                f"\nreference backtracking (pipeline.reference, limit 2) on the Kaggle slice: "
                f"{k} puzzles in {dt:.2f} s = {k / dt:,.0f} puzzles/s ({dt / k * 1e6:,.0f} us/puzzle); "
                f"engine on the same puzzles {k / eng:,.0f} puzzles/s (x{dt / eng:,.0f})"
            )

    # compile and cache-load times, each in a new process
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
        fresh = subprocess_seconds(env)
        warm = subprocess_seconds(env)
    print(
        f"\nimport + warm_up in a new process: fresh compile (empty cache) {fresh:.2f} s, "
        f"cache load (warm cache) {warm:.2f} s"
    )


if __name__ == "__main__":
    main()
