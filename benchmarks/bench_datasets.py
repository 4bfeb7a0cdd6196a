"""Memory and time of the data-set tools (dedup, split, augment, overlap) on runs of a few million rows.

The input is mostly distinct classes, the hard case for memory: puzzles from the shared sets
(17-clue, Kaggle slice, Radcliffe 5000, top1465), each with one random given removed (a new
class, most with several solutions), half of the rows once and the other half random
equivalents of those (symmetry.random_transforms), shuffled; one puzzle a line. It is run
with `pipeline run --canonical --workers 2`; then each tool runs in a fresh process whose
peak resident memory (ru_maxrss of the child) and wall time are reported, next to the
baseline of a process that only imports the module, and polars' own answer to "distinct
canonical forms" (eager and streaming engine) for comparison.

Usage: python benchmarks/bench_datasets.py [--rows 1000000,3000000] [--memory-rows N]
                                          [--only TEXT]  (the jobs whose name holds TEXT)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT.parent / "shared" / "data" / "raw"
WORK = ROOT / "bench-results" / "datasets"
IMPORTS = ("from pipeline.io import classes\n"
           "from pipeline.tools import augment, dedup, overlap, split\n")
BIN = Path(sys.executable).parent
PIPELINE = [str(BIN / "pipeline")] if (BIN / "pipeline").exists() else [
    sys.executable, "-m", "pipeline"]


def base_puzzles() -> np.ndarray:
    """(N,81) uint8 grids of the fast shared sets."""
    from pipeline.sudoku import grid

    texts: list[str] = []
    for name in ("tdoku_benchmark_sets/puzzles2_17_clue",
                 "tdoku_benchmark_sets/puzzles3_magictour_top1465"):
        texts += [ln.strip() for ln in (RAW / name).read_text().splitlines()
                  if ln.strip() and not ln.startswith("#")]
    for line in (RAW / "kaggle_bryanpark_1m" / "sudoku_small.csv").read_text().splitlines():
        texts.append(line.split(",")[0])
    for line in (RAW / "kaggle_radcliffe_3m" / "sudoku_curated_5000.csv").read_text(
            ).splitlines()[1:]:
        texts.append(line.split(",")[1])
    grids, bad = grid.encode(texts)
    return grids[[b is None for b in bad]]


def make_input(rows: int) -> Path:
    """The input file of `rows` rows (cached)."""
    from pipeline.sudoku import grid, symmetry

    path = WORK / f"mixed_{rows}.txt"
    if path.exists():
        return path
    WORK.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(rows)
    base = base_puzzles()
    distinct = rows // 2
    pick = base[rng.integers(0, len(base), distinct)]
    # Remove one random given from each: a new class (the same base twice rarely meets).
    givens = pick != 0
    nth = (rng.random(distinct) * givens.sum(1)).astype(np.int64)
    cell = np.argmax(np.cumsum(givens, axis=1) > nth[:, None], axis=1)
    pick[np.arange(distinct), cell] = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        step = 500_000
        order = rng.permutation(rows)
        for lo in range(0, rows, step):
            idx = order[lo: lo + step]
            src = np.where(idx < distinct, idx, rng.integers(0, distinct, len(idx)))
            g = pick[src]
            copy = idx >= distinct
            g[copy] = symmetry.transform(g[copy], symmetry.random_transforms(
                rng, int(copy.sum())))
            text = np.empty((len(g), 82), np.uint8)
            text[:, :81] = grid.to_ascii(g, ".").view(np.uint8).reshape(-1, 81)
            text[:, 81] = ord("\n")
            f.write(text.tobytes())
    os.replace(tmp, path)
    return path


def make_run(rows: int) -> Path:
    out = WORK / f"run_{rows}"
    if (out / "_SUCCESS").exists():
        return out
    inp = make_input(rows)
    t = time.perf_counter()
    subprocess.run([*PIPELINE, "run", "--input", str(inp), "--output", str(out),
                    "--canonical", "--workers", "2", "--overwrite", "-q"], check=True)
    print(f"  pipeline run --canonical, {rows:,} rows: {time.perf_counter() - t:.1f} s",
          flush=True)
    return out


def peak_of(code: str) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in bytes, stdout) of `code` in a fresh Python process, which
    reports its own peak resident memory (VmHWM) at the end."""
    wrapped = (code + "\nimport re\n"
               "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())"
               ".group(1))\nprint('HWM', hwm)\n")
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True,
                         cwd=ROOT)
    seconds = time.perf_counter() - t
    if res.returncode:
        raise SystemExit(res.stderr[-2000:])
    lines = res.stdout.strip().splitlines()
    hwm = int(lines[-1].split()[1]) * 1024
    return seconds, hwm, "\n".join(lines[:-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1000000,3000000")
    ap.add_argument("--memory-rows", type=int, default=None)
    ap.add_argument("--no-polars", action="store_true")
    ap.add_argument("--only", default="", help="run only the jobs whose name holds this")
    args = ap.parse_args()
    mem = f", memory_rows={args.memory_rows}" if args.memory_rows else ""
    print(f"{'what':<44} {'rows':>11} {'seconds':>8} {'peak RSS':>9}")
    _, base, _ = peak_of("import pipeline.tools.dedup, pipeline.tools.split, pipeline.tools.augment, "
                         "pyarrow.parquet, polars")
    print(f"{'import only (numpy, numba, pyarrow, polars)':<44} {'':>11} {'':>8} "
          f"{base / 2**20:>6.0f} MB", flush=True)
    for rows in [int(x) for x in args.rows.split(",")]:
        run = make_run(rows)
        out = WORK / "out"
        out.mkdir(exist_ok=True)
        jobs = {
            "distinct_classes": IMPORTS +
                                f"print(classes.distinct_classes({str(run)!r}{mem})[1])",
            "dedup -> parquet": IMPORTS +
                                f"print(dedup.dedup({str(run)!r}, {str(out / 'd.parquet')!r}{mem})"
                                f".classes)",
            "split 0.8,0.1,0.1 (stratified)": (
                IMPORTS +
                f"print(int(split.split({str(run)!r}, '0.8,0.1,0.1', None, 1, "
                f"{str(out / 'split')!r}{mem}).classes.sum()))"),
            "augment --copies 2": IMPORTS +
                                  f"print(augment.augment({str(run)!r}, 2, 1, "
                                  f"{str(out / 'aug.parquet')!r}).written)",
            "overlap of the run with itself -> parquet": IMPORTS +
                f"print(overlap.overlap({str(run)!r}, {str(run)!r}, "
                f"{str(out / 'o.parquet')!r}{mem}).found)",
        }
        if not args.no_polars:
            glob = str(run / "results" / "*.parquet")
            jobs["polars eager: n_unique(canonical)"] = (
                f"import polars as pl\nprint(pl.read_parquet({glob!r}, columns=['canonical'])"
                f"['canonical'].drop_nulls().n_unique())")
            jobs["polars streaming: n_unique(canonical)"] = (
                f"import polars as pl\nprint(pl.scan_parquet({glob!r}).select(pl.col('canonical')"
                f".drop_nulls().n_unique()).collect(engine='streaming').item())")
        for name, code in jobs.items():
            if args.only not in name:
                continue
            seconds, peak, said = peak_of(code)
            print(f"{name:<44} {rows:>11,} {seconds:>8.1f} {peak / 2**20:>6.0f} MB   ({said})",
                  flush=True)


if __name__ == "__main__":
    main()
