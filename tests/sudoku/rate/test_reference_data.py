"""The SER reference data itself (made by serate, tests/sudoku/rate/data/README.md): well
formed, one solution each, every band covered, paths consistent with their ratings, and no
puzzle equivalent to another or to one of the benchmark's held-out puzzles."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from pipeline.sudoku import canonical, grid
from pipeline.sudoku.engine import solve_batch

DATA = Path(__file__).parent / "data"
HELDOUT = Path(__file__).parents[3] / "benchmarks" / "data" / "ser"
BANDS = [(10, 20), (20, 40), (40, 60), (60, 70), (70, 80), (80, 90), (90, 100), (100, 200)]


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _tenths(x) -> int:
    return round(float(x) * 10)


def _forms(puzzles: list[str]) -> list[bytes]:
    g, bad = grid.encode(puzzles)
    assert not any(bad)
    return [f.tobytes() for f in canonical.minlex(g)[0]]


def test_reference_rows_are_well_formed_and_unique_puzzles():
    rows = _rows(DATA / "reference.csv")
    assert list(rows[0]) == ["source", "puzzle", "er", "ep", "ed", "technique"]
    assert len(rows) >= 300
    g, bad = grid.encode([r["puzzle"] for r in rows])
    assert not any(bad)
    _, count, _, _ = solve_batch(np.ascontiguousarray(g), limit=2)
    assert (count == 1).all()
    for r in rows:
        er, ep, ed = (_tenths(r[k]) for k in ("er", "ep", "ed"))
        assert 10 <= ep <= er and 10 <= ed <= er and r["technique"], r
    for lo, hi in BANDS:  # every SER band, at least a few
        assert sum(lo <= _tenths(r["er"]) < hi for r in rows) >= 1, (lo, hi)
    assert len({r["source"].split(":")[0] for r in rows}) >= 6  # mixed sources


def test_paths_match_their_ratings():
    rows = {r["puzzle"]: r for r in _rows(DATA / "reference.csv")}
    paths = [json.loads(line) for line in (DATA / "paths.jsonl").read_text().splitlines()]
    assert len(paths) >= 50
    for p in paths:
        r = rows[p["puzzle"]]
        assert (p["er"], p["ep"], p["ed"], p["technique"]) == (
            float(r["er"]), float(r["ep"]), float(r["ed"]), r["technique"])
        ratings = [rating for rating, _ in p["steps"]]
        assert max(ratings) == p["er"]
        assert all(text.split(":")[0] for _, text in p["steps"])


def test_no_puzzle_is_equivalent_to_another_or_to_a_held_out_one():
    import json

    plus = [json.loads(line)["puzzle"] for name in ("plus.jsonl", "nested.jsonl")
            for line in (DATA / name).read_text().splitlines()]
    reference = _forms([r["puzzle"] for r in _rows(DATA / "reference.csv")] + plus)
    assert len(set(reference)) == len(reference)
    held = [f for path in sorted(HELDOUT.glob("*.csv"))
            for f in _forms([r["puzzle"] for r in _rows(path)])]  # fmt: skip
    assert held and not set(held) & set(reference)
