"""Generation's search: puzzles with exactly one solution, reproducible from a seed.

How a batch of puzzles is made (numpy over the whole batch; the engine does the searching):

1. Full grids. Three diagonal boxes (1, 5, 9) never constrain each other, so each gets a
   random permutation of 1..9; the engine completes the grid (limit 1). Then each grid goes
   through random validity-preserving symmetries: digit relabelling, row swaps inside
   bands, band swaps, column swaps inside stacks, stack swaps and, half the time, a
   transposition.
2. Clue removal. Every puzzle has its own random order of the 81 squares and a pointer
   into it. In each round every unfinished puzzle tries to blank the next `step` squares
   of its order at once, and the whole batch is re-checked with the engine (limit 2):
   - exactly one solution: the removal stays, the pointer moves on;
   - more than one, step > 1: the puzzle halves its step and tries again from there;
   - more than one, step = 1: that square is needed; it stays and the pointer moves on.
   A square found needed stays needed (a subset of a puzzle's givens never has fewer
   solutions), so a puzzle whose pointer ran out is minimal: no single given can go.
3. A puzzle is done when it reaches its target number of givens or becomes minimal.
   With --clues K, puzzles that got stuck above K are dropped and new ones are made.

The grade of each puzzle is pipeline.sudoku.grade of the guesses the engine needed to prove it
unique (limit 2) -- the same number `pipeline run` reports for it.

What it reaches (REACH), measured with this generator (20,480 candidates a clue count, 102,400
minimal ones): a combination is offered when at least 1 candidate in REACH_RATE is of that
kind. An exact clue count below 22 is rarer (21: 1 in 500); more clues make puzzles easier,
so each grade has a highest clue count (hard: 1 in 320 at 32 clues, 1 in 600 at 33); expert
comes from minimal puzzles (1 in 320; at any exact clue count 1 in 640 or rarer); and none
came out extreme (50+ guesses: the engine proves random minimal puzzles with fewer). Other
combinations are refused before trying, with the nearest one that is reachable.

With SER bands (--ser, --ser-pearl, --ser-diamond) the candidates that pass the rest are
rated (pipeline.sudoku.rate) and kept when each rating falls in its band; a puzzle the
rater cannot rate within its budget is not kept. Minimal puzzles of SER 1-7 are common,
8-9 rare, 9+ out of reach in reasonable time (`make bench` measures each band).

Randomness comes in blocks of BLOCK candidates, each from a numpy Generator seeded with
(seed, block number), and candidates are kept in block order: the same arguments give a
byte-identical file, and a smaller --count is a prefix of a larger one with the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.errors import TargetNotReached, UsageError
from pipeline.sudoku import check, engine, grade, grid, symmetry

MIN_CLUES = 17  # no proper Sudoku has fewer givens (--min-clues 17: as few as removal gets)
MAX_CLUES = 80
REACH_RATE = 400  # a kind of puzzle is offered when 1 candidate in this many is of it
# --clues range for a grade (None: any grade), None where no exact count is reachable;
# the highest --min-clues; None for both: the grade is not reached at all.
REACH: dict[str | None, tuple[tuple[int, int] | None, int | None]] = {
    None: ((22, MAX_CLUES), MAX_CLUES),
    "easy": ((22, MAX_CLUES), MAX_CLUES),
    "medium": ((22, 39), 39),
    "hard": ((22, 32), 32),
    "expert": (None, 24),
    "extreme": (None, None),
}
BLOCK = 512  # candidates drawn from one random stream
BATCH = 40 * BLOCK  # candidates at most per engine round trip (bounds memory)
ATTEMPT_FACTOR = 1200  # give up after this many candidates a puzzle (3 x REACH_RATE)
ATTEMPT_FLOOR = 100_000  # ... but never before this many (about half a minute of work)
PROJECT_AFTER = 20_000  # after this many tries, give up early when the rate says it is futile


@dataclass
class Generated:
    puzzles: np.ndarray  # (N, 81) uint8
    solutions: np.ndarray  # (N, 81) uint8
    guesses: np.ndarray  # (N,) int64, the engine's effort to prove uniqueness
    attempts: int  # candidates made to get these
    ratings: np.ndarray | None = None  # (N, 3) int16 ER, EP, ED in tenths (with SER bands)

    @property
    def clues(self) -> np.ndarray:
        return grid.clues(self.puzzles)

    @property
    def grades(self) -> np.ndarray:
        return np.array(grade.GRADES, dtype=object)[grade.grade_of_guesses(self.guesses)]


# ---------------------------------------------------------------------------------------
# Full grids


def full_grids(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 81) random complete grids."""
    seeds = np.zeros((n, 81), dtype=np.uint8)
    digits = np.tile(np.arange(1, 10, dtype=np.uint8), (n, 1))
    for box in (0, 4, 8):
        seeds[:, grid.BOXES[box]] = rng.permuted(digits, axis=1)
    grids, count, _, _ = engine.solve_batch(seeds, limit=1)
    if n and not (count == 1).all():  # cannot happen: diagonal boxes always complete
        raise RuntimeError("the engine failed to complete a grid")
    return symmetry.shuffle(rng, grids)


# ---------------------------------------------------------------------------------------
# Clue removal


def removal_ranks(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 81) int16: rank[i, s] is when square s comes up in puzzle i's removal order."""
    return np.argsort(rng.random((n, 81)), axis=1).astype(np.int16)


def remove_clues(solutions: np.ndarray, rank: np.ndarray, target: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Blank squares of each solution down to `target` givens or to a minimal puzzle.

    Returns (puzzles, guesses): every puzzle has exactly one solution, its solution row;
    guesses is the engine's effort to prove that (limit 2).
    """
    n = len(solutions)
    puzzles = solutions.copy()
    pos = np.zeros(n, dtype=np.int16)  # next rank to try
    clues = np.full(n, 81, dtype=np.int16)
    guesses = np.zeros(n, dtype=np.int64)
    # Blanking half of what is left to go rarely loses uniqueness early on.
    step = np.full(n, max(1, (81 - max(target, 22)) // 2), dtype=np.int16)
    active = np.flatnonzero(clues > target)
    while len(active):
        k = np.minimum(np.minimum(step[active], clues[active] - target), 81 - pos[active])
        r = rank[active]
        lo = pos[active][:, None]
        blank = (r >= lo) & (r < lo + k[:, None])
        trial = np.where(blank, np.uint8(0), puzzles[active])
        _, count, effort, _ = engine.solve_batch(trial, limit=2)
        unique = count == 1
        ok = active[unique]
        puzzles[ok] = trial[unique]
        clues[ok] -= k[unique]
        pos[ok] += k[unique]
        guesses[ok] = effort[unique]
        bad = ~unique
        halve = active[bad & (k > 1)]
        step[halve] = np.maximum(1, k[bad & (k > 1)] // 2)
        needed = active[bad & (k == 1)]
        pos[needed] += 1
        active = active[(clues[active] > target) & (pos[active] < 81)]
    return puzzles, guesses


def _make_blocks(seed: int, first: int, blocks: int, target: int) -> tuple[np.ndarray, ...]:
    """Candidates of blocks first..first+blocks-1, each BLOCK long from its own random stream.

    A block's candidates depend only on (seed, block number), so a smaller --count with the
    same seed makes a prefix of a larger one; removal runs on all the blocks at once.
    """
    solutions, ranks = [], []
    for b in range(first, first + blocks):
        rng = np.random.default_rng([seed, b])
        solutions.append(full_grids(rng, BLOCK))
        ranks.append(removal_ranks(rng, BLOCK))
    solutions = np.concatenate(solutions)
    puzzles, guesses = remove_clues(solutions, np.concatenate(ranks), target)
    return puzzles, solutions, guesses


SER_MOST = 90  # a band must reach below 9.0: harder minimal puzzles are too rare to make
SER_LEAST = 10  # the easiest step (a last cell left in a house) rates 1.0


def generate(count: int, clues: int | None = None, min_clues: int | None = None,
             seed: int = 0, grade_name: str | None = None, batch: int = BATCH,
             bands: tuple | None = None) -> Generated:
    """`count` unique puzzles; see the module docstring for how. `bands`: (ER, EP, ED)
    bands in tenths, both ends included, None for any."""
    if count < 0:
        raise UsageError("--count must be 0 or more")
    if seed < 0:
        raise UsageError("--seed must be 0 or more")
    if clues is not None and min_clues is not None:
        raise UsageError("give --clues or --min-clues, not both")
    if min_clues is not None and not MIN_CLUES <= min_clues <= MAX_CLUES:
        raise UsageError(f"--min-clues {min_clues}: must be between {MIN_CLUES} and {MAX_CLUES}")
    if grade_name is not None and grade_name not in grade.GRADES:
        raise UsageError(f"--grade {grade_name!r}: must be one of {', '.join(grade.GRADES)}")
    check_reachable(clues, min_clues, grade_name)
    rated = bands is not None and any(b is not None for b in bands)
    if rated:
        for name, band in zip(("--ser", "--ser-pearl", "--ser-diamond"), bands, strict=True):
            if band is not None and band[0] >= SER_MOST:
                raise UsageError(f"{name} {grade.ser_band_text(band)}: minimal puzzles rated "
                                 "9.0 or more are too rare to make here; ask for a band "
                                 "that reaches below 9.0")
            if band is not None and band[1] < SER_LEAST:
                raise UsageError(f"{name} {grade.ser_band_text(band)}: no step rates below "
                                 f"{SER_LEAST / 10:.1f}")
        # ED <= EP <= ER: a step is in the path up to the first placement, which is in the
        # whole path; so a band must reach as high as the one of a wider span asks
        names = ("--ser", "--ser-pearl", "--ser-diamond")
        for wide in range(3):
            for narrow in range(wide + 1, 3):
                w, n = bands[wide], bands[narrow]
                if w is not None and n is not None and w[1] < n[0]:
                    raise UsageError(
                        f"{names[narrow]} {grade.ser_band_text(n)} is above "
                        f"{names[wide]} {grade.ser_band_text(w)}: no puzzle has them both "
                        f"(ED <= EP <= ER)")
    target = clues if clues is not None else (min_clues if min_clues is not None else MIN_CLUES)
    want = grade.GRADES.index(grade_name) if grade_name is not None else None
    cap = max(ATTEMPT_FACTOR * count, ATTEMPT_FLOOR)
    got_p, got_s, got_g, got_r = [], [], [], []
    have = attempts = 0
    while have < count:
        rate = have / attempts if attempts else 1.0
        # Give up at the cap, or as soon as the success rate so far says the cap is too low.
        hopeless = attempts >= PROJECT_AFTER and have + rate * (cap - attempts) < count
        if attempts >= cap or hopeless:
            raise TargetNotReached(_shortfall(count, have, attempts, clues, grade_name,
                                              bands if rated else None))
        # Ask for a bit more than is missing, scaled by the success rate so far.
        n = min(batch, (count - have) / max(rate, 1e-4) * 1.1, cap - attempts)
        blocks = max(1, int(np.ceil(n / BLOCK)))
        puzzles, solutions, guesses = _make_blocks(seed, attempts // BLOCK, blocks, target)
        n = len(puzzles)
        attempts += n
        keep = np.ones(n, dtype=bool)
        if clues is not None:
            keep &= grid.clues(puzzles) == clues
        if want is not None:
            keep &= grade.grade_of_guesses(guesses) == want
        where = np.flatnonzero(keep)
        if rated:
            where, ratings = _in_bands(puzzles, solutions, where, bands, count - have)
            got_r.append(ratings)
        where = where[: count - have]
        got_p.append(puzzles[where])
        got_s.append(solutions[where])
        got_g.append(guesses[where])
        have += len(where)
    empty = np.zeros((0, 81), dtype=np.uint8)
    out = Generated(np.concatenate(got_p) if got_p else empty,
                    np.concatenate(got_s) if got_s else empty,
                    np.concatenate(got_g) if got_g else np.zeros(0, np.int64), attempts,
                    (np.concatenate(got_r) if got_r else np.zeros((0, 3), np.int16))
                    if rated else None)
    # The independent checker's word on every solution, not the engine's.
    if len(out.puzzles) and not check.is_solution(out.puzzles, out.solutions).all():
        raise RuntimeError("a generated solution fails the independent check")
    return out


RATE_STEP = 64  # candidates rated at a time, so that rating stops when enough are found
RATE_BUDGET = 500_000  # effort units a candidate may take: every public puzzle up to SER 9.x
# fits in 200,000 (rate.DEFAULT_BUDGET also fits nested chains, seconds a puzzle)


def _in_bands(puzzles, solutions, where, bands, need: int) -> tuple[np.ndarray, np.ndarray]:
    """Of the candidates `where`, in order, the first `need` whose ER, EP and ED fall in
    their bands, and their ratings."""
    from pipeline.sudoku import rate

    kept, ratings = [], []
    for at in range(0, len(where), RATE_STEP):
        rows = where[at:at + RATE_STEP]
        got = rate.rate_grids(puzzles[rows], solutions[rows], RATE_BUDGET)
        ok = got.status == 0
        for values, band in zip((got.er, got.ep, got.ed), bands, strict=True):
            if band is not None:
                ok &= (values >= band[0]) & (values <= band[1])
        kept.append(rows[ok])
        ratings.append(np.stack([got.er, got.ep, got.ed], axis=1)[ok])
        if sum(len(k) for k in kept) >= need:
            break
    if not kept:
        return where[:0], np.zeros((0, 3), np.int16)
    rows, values = np.concatenate(kept)[:need], np.concatenate(ratings)[:need]
    return rows, values.astype(np.int16)


def reachable(clues: int | None, min_clues: int | None, grade_name: str | None) -> bool:
    """Whether REACH offers this combination of --clues, --min-clues and --grade."""
    exact, most = REACH[grade_name]
    if most is None:
        return False
    if clues is not None:
        return exact is not None and exact[0] <= clues <= exact[1]
    return min_clues is None or min_clues <= most


def nearest_reachable(clues: int | None, min_clues: int | None, grade_name: str | None
                      ) -> tuple[int | None, int | None, str | None]:
    """The reachable combination closest to the one asked: the hardest grade reached, the
    clue count moved into its range (or dropped where no exact count is reachable)."""
    while REACH[grade_name][1] is None:
        grade_name = grade.GRADES[grade.GRADES.index(grade_name) - 1]
    exact, most = REACH[grade_name]
    if clues is not None:
        clues = None if exact is None else min(max(clues, exact[0]), exact[1])
    if min_clues is not None:
        min_clues = min(min_clues, most)
    return clues, min_clues, grade_name


def options(clues: int | None, min_clues: int | None, grade_name: str | None) -> str:
    """The command-line options for a combination ('' for none)."""
    return " ".join(f"{name} {v}" for name, v in (
        ("--grade", grade_name), ("--clues", clues), ("--min-clues", min_clues))
        if v is not None)


def check_reachable(clues: int | None, min_clues: int | None, grade_name: str | None) -> None:
    """UsageError naming what is reachable, and the nearest combination that is."""
    if reachable(clues, min_clues, grade_name):
        return
    asked = options(clues, min_clues, grade_name)
    exact, most = REACH[grade_name]
    rare = f"under 1 in {REACH_RATE:,} tries"
    if most is None:
        why = (f"no candidate came out {grade_name} (the engine proves random minimal puzzles "
               "with fewer guesses)")
    elif clues is not None and exact is None:
        why = (f"{grade_name} puzzles come from minimal ones; at an exact clue count, {rare}")
    elif clues is not None and clues < exact[0]:
        what = f"{grade_name} puzzles reach" if grade_name else "removing givens reaches"
        why = f"{what} {exact[0]} to {exact[1]} clues (fewer: {rare})"
    elif clues is not None and grade_name is None:
        why = f"a puzzle has at most {MAX_CLUES} clues"
    else:
        most = exact[1] if clues is not None else most
        why = (f"{grade_name} puzzles have at most {most} clues (more clues make puzzles "
               f"easier: {rare})")
    try_ = options(*nearest_reachable(clues, min_clues, grade_name)) or "no --clues"
    raise UsageError(f"{asked}: not reachable: {why}; try {try_}")


def reach_summary() -> str:
    """What REACH offers, in a sentence (the --grade help says it)."""
    said = []
    for name in grade.GRADES:
        exact, most = REACH[name]
        if most is None:
            said.append(f"never {name}")
        elif exact is None:
            said.append(f"{name} without --clues, --min-clues {most} at most")
        elif exact[1] == MAX_CLUES:
            said.append(f"{name} with --clues {exact[0]}-{exact[1]}")
        else:
            said.append(f"{name} with --clues {exact[0]}-{exact[1]} or --min-clues {most} at most")
    return "; ".join(said)


def _shortfall(count: int, have: int, attempts: int, clues: int | None,
               grade_name: str | None, bands: tuple | None = None) -> str:
    what = []
    if clues is not None:
        what.append(f"exactly {clues} clues")
    if grade_name is not None:
        what.append(f"grade {grade_name}")
    for name, band in zip(("ER", "EP", "ED"), bands or (), strict=False):
        if band is not None:
            what.append(f"{name} {grade.ser_band_text(band)}")
    # Minimal puzzles are the hardest: a grade is met more often without a clue count.
    hint = ["fewer puzzles"]
    if bands is not None:
        hint.append("a wider or easier SER band")
    elif grade_name is not None:
        hint.append("no --clues" if clues is not None else "an easier grade")
    elif clues is not None:
        hint.append("more clues")
    rate = f" (1 in {attempts // have:,})" if have else ""
    return (f"cannot make {count:,} puzzles with {' and '.join(what)}: {have:,} came out of "
            f"{attempts:,} tries{rate}; ask for {' or '.join(hint)}")


# ---------------------------------------------------------------------------------------
# Output
