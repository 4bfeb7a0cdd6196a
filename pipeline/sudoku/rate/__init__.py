"""rate: the Sudoku Explainer rating (SER) of puzzles, serate 1.2.1's scale, in batches.

    board       the state: candidates as bitboards, the houses as tables
    techniques  the techniques, each a finder of its easiest hint
    path        the step loop (serate's rules for ER, EP, ED) and the compiled batch kernel

    rate_grids(puzzles, solutions)  -> RateResult (ratings in tenths: 72 = 7.2; with
                                       paths=True, each puzzle's steps too)
    rate(puzzles)                   -> the same, the puzzles solved by the engine first
    path(puzzle)                    -> list[Step], the steps the rating took
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.sudoku import grid
from pipeline.sudoku.grid import square_name
from pipeline.sudoku.rate.board import HOUSE_CELLS
from pipeline.sudoku.rate.path import (
    ED,
    EP,
    ER,
    INVALID,
    MAX_EVENTS,
    MAX_STEPS,
    REACHED,
    STATUS,
    STATUS_NAMES,
    STEP_WORDS,
    STEPS,
    TECHNIQUE,
    rate_all,
)
from pipeline.sudoku.rate.techniques import TECHNIQUES

__all__ = ["DEFAULT_BUDGET", "STATUS_NAMES", "TECHNIQUES", "RateResult", "Step", "path",
           "rate", "rate_grids"]

# Effort units (path.py: one producer's scan of the grid, one chain search from one
# candidate, one look of a run of chains (+) at its grid, or 100 for a nested chains' look
# at its grid). A step without chains takes at most about 20, one with forcing chains up
# to about 3 000, one with dynamic chains (each candidate on and off, and each place of a
# digit in its houses) a few thousand more, one with chains (+) several times that; the
# held-out top1465 puzzles (SER up to 9.x) all fit in 100 000, the public puzzles that
# need chains (+) (tests' plus.jsonl) in 200 000. Forum hardest 1106: the 315 of its
# puzzles that need nested forcing chains of the first two levels all fit in 2^24 (16.8
# million, about 6-9 s a puzzle on a busy core); the 57 that need nested dynamic chains,
# up to 40 million (22 s). The default leaves a quarter more than that.
DEFAULT_BUDGET = 50_000_000


@dataclass
class RateResult:
    """Per puzzle: ER, EP, ED in tenths (0 unless ok), the technique that set ER, the
    path's length, the status (index into STATUS_NAMES) and `reached`: with `budget`, the
    hardest step taken before the budget ran out; with `beyond`, the rating from which the
    techniques we lack start (10.5: nested dynamic forcing chains whose inner chains are
    (+) or nested themselves), or the hardest
    step taken if that is more: serate's ER is at least that. `paths` (when asked for):
    each puzzle's steps, as far as they went."""

    er: np.ndarray
    ep: np.ndarray
    ed: np.ndarray
    technique: np.ndarray
    steps: np.ndarray
    status: np.ndarray
    reached: np.ndarray
    paths: list[list[Step]] | None = None

    def __len__(self) -> int:
        return len(self.status)


@dataclass(frozen=True)
class Step:
    """One step of a path: its rating, technique, text, placements and eliminations
    (cell 0..80 row-major, digit 1..9)."""

    rating: float
    technique: str
    text: str
    placements: tuple[tuple[int, int], ...]
    eliminations: tuple[tuple[int, int], ...]


RECORD_STEP = 256  # puzzles whose paths are recorded at a time (26 KB of records each)


def _run(puzzles: np.ndarray, solutions: np.ndarray, budget: int, record: bool):
    """The kernel's result rows, and with `record` each puzzle's steps."""
    n = len(puzzles)
    out = np.zeros((n, 7), np.int32)
    if not record:
        if n:
            rate_all(puzzles, solutions, int(budget), out, np.zeros((0, 0, STEP_WORDS), np.int32),
                     np.zeros((0, 0), np.int32))
        return out, None
    paths = []
    for at in range(0, n, RECORD_STEP):
        k = min(RECORD_STEP, n - at)
        t_step = np.zeros((k, MAX_STEPS, STEP_WORDS), np.int32)
        t_event = np.zeros((k, MAX_EVENTS), np.int32)
        rate_all(puzzles[at:at + k], solutions[at:at + k], int(budget), out[at:at + k],
                 t_step, t_event)
        paths += [_steps(t_step[i], t_event[i], int(out[at + i, STEPS])) for i in range(k)]
    return out, paths


def _steps(t_step: np.ndarray, t_event: np.ndarray, n: int) -> list[Step]:
    """One puzzle's recorded steps (path.py's records) as Steps."""
    steps = []
    start = 0
    for k in range(n):
        tech, rating, end = (int(x) for x in t_step[k, :3])
        events = t_event[start:end].tolist()
        start = end
        placements = tuple(((e - 1000) // 10, e % 10) for e in events if e >= 1000)
        eliminations = tuple((e // 10, e % 10) for e in events if e < 1000)
        steps.append(Step(rating / 10, TECHNIQUES[tech],
                          _text(tech, t_step[k, 3:], placements, eliminations),
                          placements, eliminations))
    return steps


def _result(out: np.ndarray, paths: list | None = None) -> RateResult:
    ok = out[:, STATUS] == 0
    return RateResult(
        er=np.where(ok, out[:, ER], 0).astype(np.int16),
        ep=np.where(ok, out[:, EP], 0).astype(np.int16),
        ed=np.where(ok, out[:, ED], 0).astype(np.int16),
        technique=out[:, TECHNIQUE].astype(np.int16),
        steps=out[:, STEPS].astype(np.int32),
        status=out[:, STATUS].astype(np.uint8),
        reached=out[:, REACHED].astype(np.int16),
        paths=paths,
    )


def rate_grids(puzzles: np.ndarray, solutions: np.ndarray,
               budget: int = DEFAULT_BUDGET, paths: bool = False) -> RateResult:
    """Rate puzzles (u1[n, 81], 0 = blank) given their solutions (u1[n, 81]); with
    `paths`, each one's steps as well (from the same rating)."""
    p = np.ascontiguousarray(puzzles, dtype=np.uint8)
    s = np.ascontiguousarray(solutions, dtype=np.uint8)
    if p.ndim != 2 or p.shape[1] != 81 or p.shape != s.shape:
        raise ValueError(f"expected two (n, 81) arrays, got {p.shape} and {s.shape}")
    return _result(*_run(p, s, _budget(budget), paths))


def _budget(budget: int) -> int:
    """The effort budget; 0 (as on the command line) is the default."""
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) \
            or not 0 <= budget < 1 << 62:
        raise ValueError(f"budget: a whole number of effort units from 0 (the default, "
                         f"{DEFAULT_BUDGET:,}) to 2^62, not {budget!r}")
    return int(budget) or DEFAULT_BUDGET


def _solved(grids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The engine's solutions, and which puzzles have exactly one."""
    from pipeline.sudoku.engine import solve_batch

    ok = (grids <= 9).all(axis=1)
    sols, nsol, _, _ = solve_batch(np.where(ok[:, None], grids, 0).astype(np.uint8), 2)
    return sols, ok & (nsol == 1)


def rate(puzzles: Sequence[str] | np.ndarray, budget: int = DEFAULT_BUDGET) -> RateResult:
    """Rate puzzles (81-character strings or u1[n, 81]); each is solved by the engine
    first, and one without exactly one solution is `invalid`."""
    grids, malformed = grid.checked_batch(puzzles)
    sols, unique = _solved(grids)
    unique[list(malformed)] = False
    result = rate_grids(np.where(unique[:, None], grids, 0), sols, budget)
    bad = ~unique
    for name in ("er", "ep", "ed", "technique", "steps", "reached"):
        getattr(result, name)[bad] = 0
    result.status[bad] = INVALID
    return result


def path(puzzle: str | np.ndarray, budget: int = DEFAULT_BUDGET) -> list[Step]:
    """The steps that rate one puzzle, in order (as far as they went)."""
    grids, malformed = grid.checked_batch([puzzle] if isinstance(puzzle, str) else puzzle)
    grids = grids[:1]
    sols, unique = _solved(grids)
    if not len(grids) or not unique[0] or malformed:
        return []
    return _run(grids, sols, _budget(budget), True)[1][0]


_HOUSE = ("row", "column", "block")
_CHAINS = ("Bidirectional X-Cycle", "Bidirectional Y-Cycle", "Bidirectional Cycle",
           "Turbot Fish", "Forcing X-Chain", "Forcing Chain")


_ASSUMING = ("Nishio Forcing Chains", "Cell Forcing Chains", "Region Forcing Chains",
             "Dynamic Contradiction Forcing Chains", "Dynamic Double Forcing Chains",
             "Dynamic Cell Forcing Chains", "Dynamic Region Forcing Chains",
             "Dynamic Contradiction Forcing Chains (+)", "Dynamic Double Forcing Chains (+)",
             "Dynamic Cell Forcing Chains (+)", "Dynamic Region Forcing Chains (+)",
             *(f"Dynamic {kind} Forcing Chains (+ {inner}Forcing Chains)"
               for inner in ("", "Multiple ", "Dynamic ")
               for kind in ("Contradiction", "Double", "Cell", "Region")))


def _assuming(name: str, info, placements, eliminations) -> str:
    """Serate's text of a chain from an assumption (rate/dynamic.py's info): Nishio and
    contradiction, `r7c9.7 on ==> r5c5.7 both on & off`; double, `r1c5.1 on & off ==>
    r1c5.7 off`; cell, `r3c2 ==> r5c3.2 off`; region, `9 in row ==> r5c8.7 off`."""
    start, kind, _, where = (int(x) for x in info[:4])
    (c, d), = placements or eliminations
    result = f"{square_name(c)}.{d} {'on' if placements else 'off'}"
    source = f"{square_name(start // 10)}.{start % 10}"
    if kind == 7:  # a contradiction: the source is the opposite of the result
        said = "Nishio Forcing Chain" if name.startswith("Nishio") else "Contradiction Forcing Chain"
        return (f"{said}: {source} {'off' if placements else 'on'} ==> "
                f"{square_name(where // 10)}.{where % 10} both on & off")
    if kind == 1:
        return f"Double Forcing Chain: {source} on & off ==> {result}"
    if kind == 5:
        return f"Cell Forcing Chains: {square_name(start // 10)} ==> {result}"
    return f"Region Forcing Chains: {start % 10} in {_HOUSE[where // 9]} ==> {result}"


def _cells(cells) -> str:
    return "Cells " + ",".join(square_name(int(c)) for c in cells)


def _in_house(h: int, places: int) -> list[int]:
    """The cells of house h (0-8 rows, 9-17 columns, 18-26 boxes) at the given places."""
    return [int(HOUSE_CELLS[h, k]) for k in range(9) if places >> k & 1]


def _digits(mask: int) -> str:
    return ",".join(str(d + 1) for d in range(9) if mask >> d & 1)


def _pattern(name: str, info) -> str | None:
    """Serate's text of the intersections, subsets, fish, unique rectangles, BUG,
    aligned exclusions and cycles (techniques.py's and chains.py's info), or None for
    another technique."""
    i0, i1, i2, i3 = (int(x) for x in info[:4])
    if name in ("Pointing", "Claiming"):
        return (f"{name}: {_cells(_in_house(i1, i3))}: {i2} in {_HOUSE[i0 // 9]} and "
                f"{_HOUSE[i1 // 9]}")
    if name == "Direct Pointing":
        return (f"{name}: {_cells(_in_house(i1, i3))}: {i2} of {_HOUSE[i0 // 9]} in "
                f"{_HOUSE[i1 // 9]}")
    if name.startswith("Naked") and name != "Naked Single":
        return f"{name}: {_cells(_in_house(i0, i1))}: {_digits(i2)} in {_HOUSE[i0 // 9]}"
    if name.startswith(("Hidden", "Direct Hidden")) and name != "Hidden Single":
        return f"{name}: {_cells(_in_house(i0, i1))}: {_digits(i2)} in {_HOUSE[i0 // 9]}"
    if name in ("X-Wing", "Swordfish", "Jellyfish"):
        base = [i for i in range(9) if i1 >> i & 1]
        cross = [j for j in range(9) if i2 >> j & 1]
        shape = i3 >> 4
        cells = [9 * j + i if i0 == 1 else 9 * i + j  # kind 1: the base lines are columns
                 for a, j in enumerate(cross) for b, i in enumerate(base)
                 if shape >> (4 * a + b) & 1]
        lines = ("rows", "columns") if i0 == 0 else ("columns", "rows")
        return (f"{name}: {_cells(cells)}: {i3 & 15} in {len(base)} {lines[0]} and "
                f"{len(base)} {lines[1]}")
    if name == "BUG type 1":
        return f"{name}: {square_name(i0)}"
    if name in ("BUG type 2", "BUG type 4"):  # techniques.bug's: the digit, then the cells
        return f"{name}: {','.join(square_name(c) for c in _named(info))} on {i0}"
    if name == "BUG type 3":
        return (f"{name}: {','.join(square_name(c) for c in _named(info))} on "
                f"{_digits(i0).replace(',', ', ')}")
    if name == "Aligned Pair Exclusion":
        return f"{name}: {square_name(i0)},{square_name(i1)}"
    if name == "Aligned Triplet Exclusion":
        return f"{name}: {square_name(i0)},{square_name(i1)},{square_name(i2)}"
    if name.startswith("Unique"):  # techniques.deadly's words
        return f"{name}: {_cells(_named(info))} on {i1 // 10}, {i1 % 10}"
    if name.startswith("Bidirectional"):  # chains.name_loop's
        return f"{name}: " + ",".join(square_name(c) for c in _named(info))
    return None


def _named(info) -> list[int]:
    """The cells a step's record lists from INFO + 4 on (four a word, each + 1 in 7 bits)."""
    cells = [(int(w) >> 7 * j & 127) - 1 for w in info[4:] for j in range(4)]
    return [c for c in cells if c >= 0]


def _text(tech: int, info, placements, eliminations) -> str:
    """The step's short description, serate's where the step's record names the instance
    taken, else the technique and what it removes."""
    name = TECHNIQUES[tech]
    said = _pattern(name, info)
    if said is not None:
        return said
    if name == "Hidden Single":
        (c, d), = placements
        return f"{name}: {square_name(c)}: {d} in {_HOUSE[int(info[0]) // 9]}"
    if name == "Naked Single":
        (c, d), = placements
        return f"{name}: {square_name(c)}: {d}"
    if name in ("XY-Wing", "XYZ-Wing"):
        cells = ",".join(square_name(int(c)) for c in info[:3])
        return f"{name}: Cells {cells} on value {int(info[3])}"
    if name in _CHAINS[3:]:
        (c, d), = placements or eliminations
        return f"{name}: {square_name(c)}.{d} {'on' if placements else 'off'}"
    if name in _ASSUMING:
        return _assuming(name, info, placements, eliminations)
    if placements:
        (c, d), = placements
        return f"{name}: {square_name(c)}: {d}"
    gone = ",".join(f"{square_name(c)}.{d}" for c, d in eliminations)
    return f"{name}: {gone} off"
