"""Benchmark of the canonical form (pipeline.sudoku.canonical.minlex) beside patminlex.

    .venv/bin/python benchmarks/bench_canonical.py [--quick] [--repeats N]

One pinned core, one call of minlex per set, best of a few repeats (wall clock; the
CPU-time column is steadier when other work shares the machine). Beside it, on the same
puzzles and core in the same run: patminlex, the fastest public minlexing code, built from
../shared/peers/patminlex with g++ -O3 -march=native into bench-results/ (its own I/O
included, as its harness reads and writes lines; its process start is not). Without a C++
compiler its column says so. The two do different work: ours is the true minlex form (blanks as 0), patminlex's
minimises the pattern of givens first.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import puzzle_sets  # benchmarks/, beside this file
from bench_engine import pin  # one pinned core for every peer

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
PATMINLEX_SRC = REPO.parent / "shared" / "peers" / "patminlex"
OUT = REPO / "bench-results"
PEER_GRIDS = 20  # solution grids patminlex is timed on (its pattern-first search is slow there)


def build_patminlex() -> tuple[Path | None, str]:
    """patminlex's harness built into bench-results/: (binary, how) or (None, why not)."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    if not (PATMINLEX_SRC / "main.cpp").exists():
        return None, f"no patminlex source at {PATMINLEX_SRC}"
    if cxx is None:
        return None, "no C++ compiler: patminlex's column is skipped"
    OUT.mkdir(exist_ok=True)
    binary = OUT / "patminlex"
    sources = [PATMINLEX_SRC / "main.cpp", PATMINLEX_SRC / "patminlex.cpp"]
    if not binary.exists() or binary.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        done = subprocess.run([cxx, "-O3", "-march=native", "-o", str(binary),
                               *map(str, sources)], capture_output=True, text=True)
        if done.returncode:
            return None, f"patminlex did not build: {done.stderr.strip()[:200]}"
    return binary, f"{Path(cxx).name} -O3 -march=native"


def patminlex_time(binary: Path, grids: np.ndarray, prefix: list[str], repeats: int) -> float:
    """Best wall seconds of patminlex over the puzzles (a file of lines, its output
    discarded), started pinned as we are, less its best on an empty file: its process
    start (about 2 ms) is no work on the puzzles, and on top1465's 1,465 it was 40% of
    the time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "puzzles.txt"
        puzzle_sets.write_dots(grids, path)
        empty = Path(tmp) / "empty.txt"
        empty.touch()
        best = {path: float("inf"), empty: float("inf")}
        for _ in range(repeats):
            for p in (path, empty):
                with open(p, "rb") as f:
                    t = time.perf_counter()
                    subprocess.run(prefix + [str(binary)], stdin=f, stdout=subprocess.DEVNULL,
                                   check=True)
                    best[p] = min(best[p], time.perf_counter() - t)
    return max(best[path] - best[empty], 1e-9)


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

    prefix = pin()
    t = time.perf_counter()
    minlex(np.zeros((1, 81), np.uint8))
    print(f"compile or cache load in this process: {time.perf_counter() - t:.2f} s")
    binary, how = build_patminlex()
    print(f"one core (pinned: {bool(prefix)}), best of {repeats}; patminlex: {how}\n")
    hdr = (
        f"{'set':<20} {'puzzles':>8} {'puzzles/s':>12} {'us/puzzle':>10} "
        f"{'patminlex/s':>12} {'ours/patminlex':>15} {'cpu us/puz':>11} {'autos>1':>8}"
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
        if binary is not None:  # patminlex takes ~0.2 s a full grid: a sample of those
            m = min(n, PEER_GRIDS) if field else n
            pt = patminlex_time(binary, g[:m], prefix, repeats) * n / m
            peer = f"{n / pt:>12,.0f} {pt / dt:>14.2f}x"
        else:
            peer = f"{'-':>12} {'-':>15}"
        print(
            f"{name:<20} {n:>8} {n / dt:>12,.0f} {dt / n * 1e6:>10.2f} {peer} "
            f"{cpu / n * 1e6:>11.2f} {int((autos > 1).sum()):>8}"
        )


if __name__ == "__main__":
    main()
