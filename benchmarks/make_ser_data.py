"""Make the SER reference data by running serate (benchmarks/serate.py) on public puzzles.

    .venv/bin/python benchmarks/make_ser_data.py reference --work /tmp/se-ref
    .venv/bin/python benchmarks/make_ser_data.py heldout --work /tmp/se-ref
    .venv/bin/python benchmarks/make_ser_data.py marks --work /tmp/se-ref

``reference`` writes tests/sudoku/rate/data/reference.csv (source, puzzle, er, ep, ed,
technique) and paths.jsonl (serate's whole path of about 60 of them, across bands);
``heldout`` writes benchmarks/data/ser/<set>.csv (the same columns and serate's seconds per
puzzle, warm JVM, one core) on other puzzles: none of them is equivalent to a reference puzzle;
``marks`` writes marks.jsonl beside paths.jsonl: for each of its paths, the candidates each step
takes out (serate's pencilmarks before and after it), its text checked against the path's.
Every puzzle is drawn from the shared sets with a fixed seed and put under a random symmetry
(pipeline.sudoku.symmetry). Puzzles rated above 9.5 by the bank or from the forum's hardest
lists run one JVM each under a timeout (``--timeout``); those past it are left out and
counted. serate's answers are kept in the work folder, so a second run only writes files.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import puzzle_sets  # benchmarks/, beside this file
import serate

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RAW = REPO.parent / "shared" / "data" / "raw"
REFERENCE = REPO / "tests" / "sudoku" / "rate" / "data"
HELDOUT = REPO / "benchmarks" / "data" / "ser"
SEED = 24
SLOW_CORE = int(os.environ.get("SLOW_CORE", "0"))  # the core of the unbatched runs
BANDS = [(1.0, 2.0), (2.0, 4.0), (4.0, 6.0), (6.0, 7.0), (7.0, 8.0), (8.0, 9.0), (9.0, 10.0),
         (10.0, 99.0)]  # fmt: skip

FILES = {
    "kaggle": ("kaggle_bryanpark_1m/sudoku_small.csv", 0),
    "radcliffe": ("kaggle_radcliffe_3m/sudoku_curated_5000.csv", 0),
    "royle17": ("royle_17clue/sudoku17.txt", 0),
    "top95": ("norvig/top95.txt", 0),
    "diabolical": ("sudoku_exchange_bank/diabolical.txt", 0),
    "top1465": ("tdoku_benchmark_sets/puzzles3_magictour_top1465", 0),
    "hardest1106": ("tdoku_benchmark_sets/puzzles6_forum_hardest_1106", 0),
    "hardest11+": ("tdoku_benchmark_sets/puzzles5_forum_hardest_1905_11+", 0),
}


def labels(name: str) -> list[str]:
    """A per-puzzle label that steers the draw: the bank's rating, Radcliffe's level."""
    path = RAW / FILES[name][0]
    if name == "diabolical":
        return [line.split()[2] for line in path.read_text().splitlines() if line.strip()]
    if name == "radcliffe":
        with open(path, newline="") as f:
            return [row["level"] for row in csv.DictReader(f)]
    return []


def band_of(er: float) -> str:
    """The SER band holding a rating, as 'lo-hi' ('10+' for the last)."""
    for lo, hi in BANDS:
        if lo <= er < hi:
            return "10+" if lo == 10.0 else f"{lo:g}-{hi:g}"
    return "below 1"


class Draw:
    """Rows drawn from the shared sets without replacement, with a fixed seed."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.grids = {n: puzzle_sets.load(RAW / f, field=k) for n, (f, k) in FILES.items()}
        self.order = {n: self.rng.permutation(len(g)) for n, g in self.grids.items()}
        self.used: dict[str, set[int]] = {n: set() for n in FILES}
        self.labels = {n: labels(n) for n in FILES}

    def take(self, name: str, n: int, label=None) -> list[tuple[str, int]]:
        """n unused rows of a set (those whose label passes `label`, when given)."""
        out = []
        for i in self.order[name]:
            if len(out) == n:
                break
            if i in self.used[name] or (label and not label(self.labels[name][i])):
                continue
            self.used[name].add(int(i))
            out.append((name, int(i)))
        return out

    def disguise(self, picks: list[tuple[str, int]], seed: int) -> list[str]:
        """The picked puzzles under a random symmetry each, '.' for blanks."""
        from pipeline.sudoku import grid, symmetry

        rows = np.stack([self.grids[n][i] for n, i in picks])
        rng = np.random.default_rng(seed)
        return grid.decode(symmetry.transform(rows, symmetry.random_transforms(rng, len(rows))))


def in_range(lo: float, hi: float):
    return lambda label: lo <= float(label) < hi


def reference_picks(d: Draw) -> tuple[list, list]:
    """(ordinary, slow) picks for the reference set, meant to cover every band."""
    picks = d.take("kaggle", 30) + d.take("royle17", 30) + d.take("top95", 25)
    for level in ("Beginner", "Easy", "Medium", "Hard", "Expert"):
        picks += d.take("radcliffe", 20, lambda lab, level=level: lab == level)
    for lo, n in ((5, 25), (6, 35), (7, 35), (8, 40), (9, 25)):
        picks += d.take("diabolical", n, in_range(lo, min(lo + 1, 9.5)))
    picks += d.take("top1465", 40)
    slow = d.take("diabolical", 6, in_range(9.5, 99)) + d.take("hardest1106", 10)
    return picks, slow + d.take("hardest11+", 4)


def extra_picks(d: Draw) -> list:
    """More reference picks for SER 4-7, where the first draw was thin (drawn last, so that
    the held-out sets stay the same)."""
    picks = d.take("radcliffe", 30, lambda lab: lab == "Easy")
    picks += d.take("radcliffe", 30, lambda lab: lab == "Medium")
    return (
        picks + d.take("diabolical", 40, in_range(5, 6)) + d.take("diabolical", 40, in_range(6, 7))
    )


def heldout_picks(d: Draw) -> dict[str, tuple[list, list]]:
    """Per benchmark set, its (ordinary, slow) picks."""
    return {
        "diabolical": (d.take("diabolical", 150, in_range(0, 9.5)), []),
        "top1465": (d.take("top1465", 150), []),
        "radcliffe": (d.take("radcliffe", 150), []),
        "hardest11": ([], d.take("hardest11+", 5)),
    }


def rate_cached(
    work: Path, key: str, puzzles: list[str], mode: str, timeout: float, cached_only: bool
) -> list:
    """serate's results for the puzzles (with "timeout" for one past it; None for one not
    rated yet, with cached_only), kept in work/key.jsonl.

    mode: "batch" (a JVM per 50 puzzles), "timed" (one JVM, warmed up first, so that its
    seconds are a warm JVM's) or "slow" (a JVM per puzzle, under the timeout).
    """
    cache = work / f"{key}.jsonl"
    done = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            r = json.loads(line)
            if r.get("timeout", timeout) >= timeout:  # past a shorter timeout: again
                done[r["puzzle"]] = r
    todo = [] if cached_only else [p for p in puzzles if p not in done]
    size = {"batch": 50, "timed": len(todo) or 1, "slow": 1}[mode]
    warm = warm_up_puzzles() if mode == "timed" else []
    for at in range(0, len(todo), size):
        batch = todo[at : at + size]
        try:
            results = serate.rate(
                work / "classes", batch, warm=warm, paths=True,
                timeout=timeout if mode == "slow" else None, core=1 if mode == "timed" else SLOW_CORE,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            results = [{"timeout": timeout, "steps": []}]
        with open(cache, "a") as f:
            for p, r in zip(batch, results, strict=True):
                r["puzzle"] = p
                done[p] = r
                f.write(json.dumps(r) + "\n")
        print(
            f"{key}: {sum(p in done for p in puzzles)} of {len(puzzles)} rated",
            file=sys.stderr,
            flush=True,
        )
    return [done.get(p) for p in puzzles]


def warm_up_puzzles() -> list[str]:
    """Puzzles serate rates first in a timed JVM (dropped): Kaggle's and the bank's, 60 each."""
    from pipeline.sudoku import grid

    bank = puzzle_sets.load(RAW / FILES["diabolical"][0], n=60)
    return grid.decode(np.concatenate([puzzle_sets.load(RAW / FILES["kaggle"][0], n=60), bank]))


def rated_rows(d: Draw, key: str, groups: list[tuple[list, str, int]], args) -> list:
    """Rows of the rated picks, group by group: (picks, how serate runs them, the seed of
    their random symmetries)."""
    rows = []
    for group, how, seed in groups:
        if not group:
            continue
        puzzles = d.disguise(group, seed)
        results = rate_cached(args.work, key, puzzles, how, args.timeout, args.cached_only)
        for (name, i), p, r in zip(group, puzzles, results, strict=True):
            if r is None or ("timeout" in r and key == "reference"):
                print(f"{key}: {name}:{i} not rated (past the timeout), left out", file=sys.stderr)
            elif "timeout" in r:  # held out: serate's time is at least this
                rows.append({"source": f"{name}:{i}", "puzzle": p, "er": None, "ep": None,
                             "ed": None, "technique": "", "seconds": r["timeout"]})  # fmt: skip
            elif r["er"] > 0:
                rows.append({"source": f"{name}:{i}", "puzzle": p, **r})
    return rows


def first_of_each_class(rows: list[dict]) -> list[dict]:
    """The rows whose puzzle is not equivalent to an earlier row's (the sets overlap)."""
    from pipeline.sudoku import canonical, grid

    if not rows:
        return rows
    seen: set[bytes] = set()
    kept = []
    for r, f in zip(rows, canonical.minlex(grid.encode([r["puzzle"] for r in rows])[0])[0],
                    strict=True):  # fmt: skip
        if f.tobytes() not in seen:
            seen.add(f.tobytes())
            kept.append(r)
    return kept


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([("" if r[c] is None else f"{r[c]:.1f}") if c in ("er", "ep", "ed")
                        else r[c] for c in columns])  # fmt: skip


def write_marks(classes: Path) -> None:
    """marks.jsonl: per path of paths.jsonl (same order), the candidates each step takes out."""
    paths = [json.loads(line) for line in (REFERENCE / "paths.jsonl").read_text().splitlines()]
    rated = serate.rate(classes, [p["puzzle"] for p in paths], paths=True, marks=True,
                        core=SLOW_CORE)  # fmt: skip
    with open(REFERENCE / "marks.jsonl", "w") as f:
        for p, r in zip(paths, rated, strict=True):
            if [list(s) for s in r["steps"]] != p["steps"]:
                sys.exit(f"{p['source']}: serate's path is not the one recorded")
            f.write(json.dumps({"source": p["source"], "removed": r["removed"]}) + "\n")
    print(f"marks: {len(paths)} paths, {sum(len(r['removed']) for r in rated)} steps",
          file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=["reference", "heldout", "marks"])
    ap.add_argument("--work", type=Path, default=Path("/tmp/se-ref"))
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--cached-only", action="store_true", help="write what is rated so far")
    ap.add_argument("--paths", type=int, default=8, help="paths kept per band")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if serate.build(args.work / "classes") is None:
        sys.exit("serate cannot be built (javac missing?)")
    if args.what == "marks":
        write_marks(args.work / "classes")
        return
    d = Draw(SEED)
    ref_picks, ref_slow = reference_picks(d)
    held = heldout_picks(d)  # drawn after the reference's, so never the same rows
    extra = extra_picks(d)  # more of the bands the first draw left thin
    if args.what == "reference":
        rows = rated_rows(
            d, "reference", [(ref_picks, "batch", SEED), (extra, "batch", SEED + 2),
                             (ref_slow, "slow", SEED + 1)], args)  # fmt: skip
        rows = first_of_each_class(rows)
        cols = ["source", "puzzle", "er", "ep", "ed", "technique"]
        write_csv(REFERENCE / "reference.csv", rows, cols)
        per_band: dict[str, int] = {}
        with open(REFERENCE / "paths.jsonl", "w") as f:
            for r in rows:
                band = band_of(r["er"])
                if per_band.get(band, 0) < args.paths:
                    per_band[band] = per_band.get(band, 0) + 1
                    keep = {k: r[k] for k in ("source", "puzzle", "er", "ep", "ed", "technique")}
                    keep["steps"] = [[rating, text] for rating, text in r["steps"]]
                    f.write(json.dumps(keep) + "\n")
        bands = {
            b: sum(band_of(r["er"]) == b for r in rows)
            for b in sorted(set(map(band_of, [r["er"] for r in rows])))
        }
        print(f"reference: {len(rows)} rows, per band {bands}, paths {per_band}", file=sys.stderr)
        return
    from pipeline.sudoku import canonical, grid

    ref_keys = set()
    cache = args.work / "reference.jsonl"
    if cache.exists():
        ref = [json.loads(line)["puzzle"] for line in cache.read_text().splitlines()]
        forms = canonical.minlex(grid.encode(ref)[0])[0]
        ref_keys = {f.tobytes() for f in forms}
    for k, (name, (picks, slow)) in enumerate(held.items()):
        rows = rated_rows(
            d, f"heldout-{name}", [(picks, "timed", SEED + 10 * (k + 1)),
                                   (slow, "slow", SEED + 10 * (k + 1) + 1)], args)  # fmt: skip
        forms = canonical.minlex(grid.encode([r["puzzle"] for r in rows])[0])[0]
        kept = [r for r, f in zip(rows, forms, strict=True) if f.tobytes() not in ref_keys]
        cols = ["source", "puzzle", "er", "ep", "ed", "technique", "seconds"]
        write_csv(HELDOUT / f"{name}.csv", kept, cols)
        dropped = len(rows) - len(kept)
        print(f"held-out {name}: {len(kept)} rows ({dropped} equivalent to a reference puzzle "
              "dropped)", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
