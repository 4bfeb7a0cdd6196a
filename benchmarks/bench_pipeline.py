"""End-to-end benchmark of `pipeline run`: wall time, peak memory, overhead over the kernel.

    1. A 2,000,000-row Kaggle-shaped CSV (`quizzes,solutions`, made by repeating the Kaggle
       slice in ../shared/data/raw): the time polars takes to read it and write its two
       columns to Parquet (the yardstick), then `pipeline run --workers 2` on it, with the
       peak of the summed resident memory of the run and all its workers (sampled every 0.1 s).
    2. The same at 10,000,000 rows (--rows-big; 0 skips it): memory must not grow.
    3. `pipeline run --workers 1` on the forum-hardest 11+ set against the kernel's own rate
       on the same puzzles, in one process: what parsing, checking and writing add.
    4. With --dask: the 2M file on a local Dask cluster with 1 and 2 workers.

Usage: python benchmarks/bench_pipeline.py [--rows N] [--rows-big N] [--dask] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import psutil

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT.parent / "shared" / "data" / "raw"
WORK = ROOT / "bench-results"
PIPELINE = [sys.executable, "-m", "pipeline.cli"]


def kaggle_csv(rows: int) -> Path:
    """A Kaggle-shaped CSV of `rows` distinct rows (cached in bench-results/).

    The Kaggle slice's 9,999 puzzles, each copy under a fresh random relabelling of the
    digits (solutions alike), so rows do not repeat and compress like real data.
    """
    path = WORK / f"kaggle_{rows}.csv"
    if path.exists():
        return path
    lines = (RAW / "kaggle_bryanpark_1m" / "sudoku_small.csv").read_bytes().split()
    pairs = np.frombuffer(b"".join(ln[:81] + ln[82:163] for ln in lines), np.uint8)
    pairs = pairs.reshape(len(lines), 162) - ord("0")
    rng = np.random.default_rng(2026)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(b"quizzes,solutions\n")
        done = 0
        while done < rows:
            take = min(len(pairs), rows - done)
            relabel = np.concatenate([[0], rng.permutation(9) + 1]).astype(np.uint8)
            text = np.empty((take, 164), np.uint8)
            text[:, :81] = relabel[pairs[:take, :81]] + ord("0")
            text[:, 81] = ord(",")
            text[:, 82:163] = relabel[pairs[:take, 81:]] + ord("0")
            text[:, 163] = ord("\n")
            f.write(text.tobytes())
            done += take
    os.replace(tmp, path)
    return path


def polars_yardstick(csv: Path) -> float:
    """Seconds for polars to read the CSV (as text) and write both columns to Parquet."""
    out = WORK / "yardstick.parquet"
    t0 = time.perf_counter()
    pl.scan_csv(csv, infer_schema=False).sink_parquet(out)
    seconds = time.perf_counter() - t0
    out.unlink()
    return seconds


def run_measured(args: list[str]) -> tuple[float, int, dict]:
    """Run a pipeline command; its wall seconds, peak summed RSS (bytes) and JSON summary."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            parent = psutil.Process(proc.pid)
        except psutil.NoSuchProcess:
            return
        while not stop.is_set():
            try:
                procs = [parent, *parent.children(recursive=True)]
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass
                peak = max(peak, total)
            except psutil.NoSuchProcess:
                return
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"pipeline failed ({proc.returncode}): {err.decode()[-500:]}")
    return seconds, peak, json.loads(out.decode().strip().splitlines()[-1])


def pipeline_run(csv: Path, workers: int, extra: list[str] = ()) -> tuple[float, int, dict]:
    out = WORK / f"run-{csv.stem}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    res = run_measured([*PIPELINE, "run", "--input", str(csv), "--output", str(out),
                        "--workers", str(workers), "--json", "--quiet", *extra])
    shutil.rmtree(out, ignore_errors=True)
    return res


def hard_overhead(quick: bool) -> tuple[float, float, int]:
    """Kernel puzzles/s in-process vs `pipeline run --workers 1` rows/s on the same file."""
    from pipeline.sources import Source

    from pipeline import engine

    path = RAW / "tdoku_benchmark_sets" / "puzzles5_forum_hardest_1905_11+"
    n = 5000 if quick else 20000
    lines = [ln for ln in path.read_text().splitlines() if len(ln.strip()) == 81][:n]
    text = WORK / "hardest.txt"
    text.write_text("\n".join(lines) + "\n")
    src = Source(str(text), 0)
    from pipeline import grid

    grids, _ = grid.encode([c for ch in src.chunks(10**9) for c in ch.frame["puzzle"]])
    engine.warm_up()
    t0 = time.perf_counter()
    engine.solve_batch(grids, 2, False)
    kernel = len(grids) / (time.perf_counter() - t0)
    # The pipeline's own rows/s excludes start-up (interpreter, imports, pool, cache load).
    seconds, _, summary = pipeline_run(text, 1, ["--no-timings"])
    return kernel, summary["steady_rows_per_second"], len(grids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rows-big", type=int, default=10_000_000)
    ap.add_argument("--dask", action="store_true", help="also time a local Dask cluster")
    ap.add_argument("--quick", action="store_true", help="200k rows, no big file")
    args = ap.parse_args()
    if not RAW.exists():
        raise SystemExit(f"shared data not found at {RAW}")
    if args.quick:
        args.rows, args.rows_big = 200_000, 0
    WORK.mkdir(exist_ok=True)
    results: dict = {"cpu_count": os.cpu_count()}
    csv = kaggle_csv(args.rows)
    size_mb = csv.stat().st_size / 1e6
    yard = polars_yardstick(csv)
    secs, peak, summary = pipeline_run(csv, 2)
    results["main"] = {"rows": args.rows, "mb": size_mb, "polars_s": yard, "pipeline_s": secs,
                       "peak_rss_mb": peak / 1e6, "counts": summary["counts"]}
    rows = [("Kaggle-shaped CSV", f"{args.rows:,} rows, {size_mb:,.0f} MB", "", "")]
    rows.append(("polars read CSV + write Parquet", f"{yard:.2f} s", "", "yardstick"))
    rows.append(("pipeline run --workers 2", f"{secs:.2f} s", f"{peak / 1e6:,.0f} MB",
                 f"{secs / yard:.2f}x the yardstick"))
    if args.rows_big:
        big = kaggle_csv(args.rows_big)
        bsecs, bpeak, _ = pipeline_run(big, 2)
        results["big"] = {"rows": args.rows_big, "pipeline_s": bsecs, "peak_rss_mb": bpeak / 1e6}
        rows.append((f"pipeline run, {args.rows_big:,} rows", f"{bsecs:.2f} s",
                     f"{bpeak / 1e6:,.0f} MB", f"peak {bpeak / peak:.2f}x the 2M run's"))
    if args.dask:
        for w in (1, 2):
            dsecs, dpeak, dsum = pipeline_run(csv, w, ["--executor", "dask"])
            results[f"dask_{w}"] = {"pipeline_s": dsecs, "rows_per_second": dsum["rows_per_second"]}
            rows.append((f"pipeline run --executor dask, {w} worker(s)", f"{dsecs:.2f} s",
                         f"{dpeak / 1e6:,.0f} MB", f"{dsum['rows_per_second']:,.0f} rows/s"))
        lsecs, _, lsum = pipeline_run(csv, 2)
        rows.append(("pipeline run --executor local, 2 workers (again)", f"{lsecs:.2f} s", "",
                     f"{lsum['rows_per_second']:,.0f} rows/s"))
    kernel, piped, n = hard_overhead(args.quick)
    results["hard"] = {"puzzles": n, "kernel_per_s": kernel, "pipeline_rows_per_s": piped}
    rows.append((f"forum hardest 11+ ({n:,}): kernel alone", f"{kernel:,.0f} /s", "", ""))
    rows.append(("  pipeline run --workers 1 (start-up aside)", f"{piped:,.0f} rows/s", "",
                 f"{piped / kernel:.1%} of the kernel's rate"))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'pipeline benchmark':<{width}}  {'time / rate':>16}  {'peak RSS':>10}  note")
    for r in rows:
        print(f"{r[0]:<{width}}  {r[1]:>16}  {r[2]:>10}  {r[3]}")
    (WORK / "bench_pipeline.json").write_text(json.dumps(results, indent=2, default=float))
    _ = np  # numpy is imported for the engine's sake


if __name__ == "__main__":
    main()
