"""pipeline.sudoku.rate against serate's ratings (recorded, no Java), the checker and itself."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from pipeline.sudoku import check, rate, replay
from pipeline.sudoku.engine import solve_batch

DATA = Path(__file__).parent / "data"
EXACT_BELOW = 65  # the puzzles serate rates without chains
BUDGET_NESTED = rate.DEFAULT_BUDGET  # (every puzzle of nested*.jsonl fits the default)
NESTED_DYNAMIC = 6  # the records of nested_dynamic.jsonl
BEYOND_FROM = 105  # the first rating of the techniques not yet there (nested dynamic chains)
LADDER = 49  # the techniques the recorded paths take, ours up to dynamic chains (+)


def _reference(name: str) -> list[dict]:
    with open(DATA / name, newline="") as f:
        return list(csv.DictReader(f))


def _tenths(x: str) -> int:
    return round(float(x) * 10)


def _grids(puzzles: list[str]) -> np.ndarray:
    return (np.frombuffer("".join(puzzles).encode(), np.uint8) - ord("0")).reshape(-1, 81)


OWN = _reference("own.csv")


def test_names_and_statuses():
    assert rate.TECHNIQUES[0] == "" and "XY-Wing" in rate.TECHNIQUES
    assert rate.STATUS_NAMES == ("ok", "budget", "disagrees", "invalid", "beyond")


@pytest.mark.parametrize("name", ["own.csv", "reference.csv"])
def test_parity_with_serate(name):
    """ER, EP, ED and ER's technique equal serate's on every puzzle it rates below 10.5 (the
    puzzles, chains from an assumption, dynamic chains (+) and nested forcing chains
    included) and on every other
    one rated; one not rated is beyond, at a rating serate's ER reaches."""
    rows = _reference(name)
    result = rate.rate([r["puzzle"] for r in rows])
    for i, r in enumerate(rows):
        er, ep, ed = _tenths(r["er"]), _tenths(r["ep"]), _tenths(r["ed"])
        status = rate.STATUS_NAMES[result.status[i]]
        if er < BEYOND_FROM or status == "ok":
            assert status == "ok", r
            assert (result.er[i], result.ep[i], result.ed[i]) == (er, ep, ed), r
            assert rate.TECHNIQUES[result.technique[i]] == r["technique"], r
        if status == "beyond":
            assert BEYOND_FROM <= result.reached[i] <= er, r


@pytest.mark.parametrize("row", [r for r in OWN if _tenths(r["er"]) < EXACT_BELOW][::9],
                         ids=lambda r: r["puzzle"][:12])
def test_path_places_the_solution(row):
    """The path's placements, on the givens, make a grid the independent checker accepts,
    and every elimination keeps the solution's digit."""
    steps = rate.path(row["puzzle"])
    assert max(s.rating for s in steps) == float(row["er"])
    grid = _grids([row["puzzle"]])[0].copy()
    for s in steps:
        for cell, digit in s.placements:
            assert grid[cell] == 0
            grid[cell] = digit
    assert check.is_solution(_grids([row["puzzle"]]), grid[None, :])[0]
    for s in steps:
        for cell, digit in s.eliminations:
            assert grid[cell] != digit
        assert len(s.placements) + len(s.eliminations) > 0


def test_wrong_solution_disagrees():
    """A complete grid that is not the puzzle's solution: the path parts from it."""
    puzzles = _grids([OWN[0]["puzzle"]])
    sols, _, _, _ = solve_batch(puzzles, 2)
    wrong = sols.copy()
    wrong[0] = np.array([0, 2, 1, 3, 4, 5, 6, 7, 8, 9], np.uint8)[sols[0]]  # 1 <-> 2
    result = rate.rate_grids(puzzles, wrong)
    assert rate.STATUS_NAMES[result.status[0]] == "disagrees"
    assert result.er[0] == 0


def test_budget_stops_and_says_how_far():
    puzzles = [r["puzzle"] for r in OWN if 30 <= _tenths(r["er"]) < EXACT_BELOW][:5]
    full = rate.rate(puzzles)
    cut = rate.rate(puzzles, budget=40)
    assert (cut.status == rate.STATUS_NAMES.index("budget")).all()
    assert (cut.er == 0).all() and (cut.reached <= full.er).all()
    assert (cut.steps < full.steps).all()


def test_invalid_input():
    result = rate.rate(["1" * 81, "123", "0" * 81])
    assert [rate.STATUS_NAMES[s] for s in result.status] == ["invalid"] * 3


def test_what_is_not_a_puzzle_is_its_row_s_fault_and_misuse_is_refused():
    """Digits that are not ASCII (`²`, Arabic `٣`: str.isdigit says yes) and array values
    outside 0..9 make their rows invalid, never the batch's crash nor another puzzle (260
    was wrapped to 4); one string, a float array or a budget past int64 are refused."""
    good = next(r["puzzle"] for r in OWN if 30 <= _tenths(r["er"]) < EXACT_BELOW)
    result = rate.rate([good, good[:-1] + "²", good[:-1] + "٣", good])
    assert [rate.STATUS_NAMES[s] for s in result.status] == ["ok", "invalid", "invalid", "ok"]
    grids = np.array([[int(c) if c.isdigit() else 0 for c in good]] * 3, np.int64)
    grids[1, 2] += 256
    grids[2, 5] = -1
    result = rate.rate(grids)
    assert [rate.STATUS_NAMES[s] for s in result.status] == ["ok", "invalid", "invalid"]
    assert rate.path(good[:-1] + "²") == []
    assert rate.rate([good], budget=0).er[0] == rate.rate([good]).er[0]  # 0: the default
    for misuse in (lambda: rate.rate(good), lambda: rate.rate(grids.astype(float)),
                   lambda: rate.rate([good], budget=10**30),
                   lambda: rate.rate([good], budget=-1)):
        with pytest.raises((TypeError, ValueError)):
            misuse()


def test_batch_equals_one_by_one():
    puzzles = [r["puzzle"] for r in OWN[:40]]
    batch = rate.rate(puzzles)
    for i, p in enumerate(puzzles):
        one = rate.rate([p])
        assert (one.er[0], one.ep[0], one.ed[0], one.steps[0]) == (
            batch.er[i], batch.ep[i], batch.ed[i], batch.steps[i])


def test_a_batch_grows_its_scratch_as_its_puzzles_need_it():
    """A call starts with no scratch for chains from an assumption, makes it at the first
    puzzle that needs it and the nested chains' at the first that needs those, and rates
    that puzzle again: each as when rated alone, and those after it too."""
    import json

    easy = [r["puzzle"] for r in OWN if float(r["er"]) < 2][:2]
    assuming = next(r["puzzle"] for r in OWN if float(r["er"]) >= 8.5)
    nested = json.loads((DATA / "nested.jsonl").read_text().splitlines()[0])["puzzle"]
    puzzles = [easy[0], assuming, easy[1], nested, easy[0], assuming]
    batch = rate.rate(puzzles, budget=BUDGET_NESTED)
    for i, p in enumerate(puzzles):
        one = rate.rate([p], budget=BUDGET_NESTED)
        assert (one.er[0], one.ep[0], one.ed[0], one.steps[0], one.status[0]) == (
            batch.er[i], batch.ep[i], batch.ed[i], batch.steps[i], batch.status[i])
    assert batch.er[3] >= 95  # (rated by nested chains)


ASSUMING = ("Nishio Forcing Chain:", "Cell Forcing Chains:", "Region Forcing Chains:",
            "Contradiction Forcing Chain:", "Double Forcing Chain:")


def _paths() -> list[dict]:
    import json

    return [json.loads(line) for line in (DATA / "paths.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("recorded", [p for p in _paths()
                                      if any(t.startswith(ASSUMING) for _, t in p["steps"])],
                         ids=lambda p: p["puzzle"][:12])
def test_first_chain_from_an_assumption_is_serates(recorded):
    """The first step that assumes a candidate (Nishio, cell, region, contradiction or
    double forcing chains) is serate's recorded one: the same rating, start, kind and
    conclusion, text for text; past the techniques we have, the rating stops there."""
    theirs = next((r, t) for r, t in recorded["steps"] if t.startswith(ASSUMING))
    steps = rate.path(recorded["puzzle"])
    ours = next(((s.rating, s.text) for s in steps if s.text.startswith(ASSUMING)), None)
    if ours is None:
        assert theirs[0] >= BEYOND_FROM / 10
        assert rate.STATUS_NAMES[rate.rate([recorded["puzzle"]]).status[0]] == "beyond"
    else:
        assert ours == (theirs[0], theirs[1])


def test_the_paths_are_serates():
    """Every recorded serate path, step by step: the same rating, technique and text (which
    names the instance: cells, digits, houses, a loop's cells in serate's order), up to
    where serate goes on with a technique past ours (nested dynamic chains, 10.5 and up).
    Measured: every path agrees whole (80 of 80), 5,812 steps in all."""
    agreed = whole = 0
    for recorded in _paths():
        ours = rate.path(recorded["puzzle"])
        for k, (rating, text) in enumerate(recorded["steps"]):
            step = ours[k] if k < len(ours) else None
            if step is None and rating >= BEYOND_FROM / 10:
                break
            assert step is not None and (step.rating, step.text) == (rating, text), (
                recorded["puzzle"], k, step, (rating, text))
            agreed += 1
        else:
            whole += 1
    assert agreed >= 5812 and whole >= 80


def test_each_step_takes_out_what_serates_does():
    """Every step of every recorded path takes out exactly the candidates serate's does
    (marks.jsonl: serate's pencilmarks before and after each step), from singles to
    dynamic chains, up to where serate goes on past our techniques."""
    import json

    marks = [json.loads(line) for line in (DATA / "marks.jsonl").read_text().splitlines()]
    paths = _paths()
    assert [m["source"] for m in marks] == [p["source"] for p in paths]
    techniques = set()
    steps = 0
    for recorded, theirs in zip(paths, marks, strict=True):
        ours = rate.path(recorded["puzzle"])
        assert len(ours) <= len(theirs["removed"])
        states = list(replay.candidates_along(recorded["puzzle"], ours))
        for k, step in enumerate(ours):
            gone = {c * 10 + d for c in range(81) for d in range(1, 10)
                    if (states[k][c] & ~states[k + 1][c]) >> (d - 1) & 1}
            assert gone == set(theirs["removed"][k]), (recorded["puzzle"], k, step.text)
            techniques.add(step.technique)
            steps += 1
    assert steps >= 5300 and len(techniques) >= LADDER, (steps, sorted(techniques))


@pytest.mark.parametrize("row", [r for r in OWN + _reference("reference.csv")
                                 if r["technique"] == "Aligned Triplet Exclusion"],
                         ids=lambda r: r["puzzle"][:12])
def test_aligned_triplet_exclusion_sets_er(row):
    """Where serate's ER is an aligned triplet exclusion (7.5), ours is too: the same
    rating and technique, with EP and ED."""
    result = rate.rate([row["puzzle"]])
    assert rate.TECHNIQUES[result.technique[0]] == "Aligned Triplet Exclusion"
    assert (result.er[0], result.ep[0], result.ed[0]) == (75, _tenths(row["ep"]),
                                                         _tenths(row["ed"]))


def test_dynamic_chains_plus_whole_paths_are_serates():
    """Puzzles whose paths need Dynamic Forcing Chains (+) (plus.jsonl: every one of
    top1465 and forum hardest 1106 that needs no nested chains), their whole paths step
    by step as serate takes them, and ER, EP, ED and ER's technique: three of them rated
    by the (+) chains themselves (9.7-10.1), three by plain dynamic chains whose paths go
    on with (+) chains rated below their ER."""
    import json

    records = [json.loads(line) for line in (DATA / "plus.jsonl").read_text().splitlines()]
    plus = 0
    for r in records:
        ours = rate.path(r["puzzle"])
        assert [(s.rating, s.text) for s in ours] == [tuple(x) for x in r["steps"]], r["source"]
        plus += sum(s.technique.endswith("(+)") for s in ours)
        got = rate.rate([r["puzzle"]])
        assert (got.er[0], got.ep[0], got.ed[0]) == tuple(_tenths(str(r[k])) for k in
                                                          ("er", "ep", "ed")), r["source"]
        assert rate.TECHNIQUES[got.technique[0]] == r["technique"], r["source"]
    assert len(records) == 6 and plus >= 48


def test_nested_forcing_chains_whole_paths_are_serates():
    """Puzzles of forum hardest 1106 rated by nested forcing chains (nested.jsonl): nine by
    Dynamic Forcing Chains (+ Forcing Chains) (a run that is stuck takes what every cycle
    and forcing chain on its grid removes, 9.5 and up), six by (+ Multiple Forcing Chains)
    (then what every cell and region forcing chain removes, 10.0 and up); their whole paths
    step by step as serate takes them, and ER, EP, ED and ER's technique (10.2-11.3: the
    nested chains' complexity counts)."""
    import json

    records = [json.loads(line) for line in (DATA / "nested.jsonl").read_text().splitlines()]
    nested = [0, 0]
    for r in records:
        ours = rate.path(r["puzzle"], budget=BUDGET_NESTED)
        assert [(s.rating, s.text) for s in ours] == [tuple(x) for x in r["steps"]], r["source"]
        for k, inner in enumerate(("(+ Forcing Chains)", "(+ Multiple Forcing Chains)")):
            nested[k] += sum(s.technique.endswith(inner) for s in ours)
        got = rate.rate([r["puzzle"]], budget=BUDGET_NESTED)
        assert (got.er[0], got.ep[0], got.ed[0]) == tuple(_tenths(str(r[k])) for k in
                                                          ("er", "ep", "ed")), r["source"]
        assert rate.TECHNIQUES[got.technique[0]] == r["technique"], r["source"]
    assert len(records) == 15 and nested[0] >= 9 and nested[1] >= 6


def test_nested_dynamic_forcing_chains_whole_paths_are_serates():
    """Puzzles of forum hardest 1106 whose ER is set by Dynamic Forcing Chains (+ Dynamic
    Forcing Chains), 10.5 and up (nested_dynamic.jsonl): a run that is stuck takes what
    every dynamic forcing chain on its grid removes, each such chain's parents the
    candidates gone from the run's grid that its ons' causes need. Their whole paths step
    by step as serate takes them (contradictions, cells and regions nested), and ER, EP,
    ED and ER's technique."""
    import json

    records = [json.loads(line)
               for line in (DATA / "nested_dynamic.jsonl").read_text().splitlines()]
    kinds = set()
    for r in records:
        ours = rate.path(r["puzzle"], budget=BUDGET_NESTED)
        assert [(s.rating, s.text) for s in ours] == [tuple(x) for x in r["steps"]], r["source"]
        kinds |= {s.technique.split()[1] for s in ours
                  if s.technique.endswith("(+ Dynamic Forcing Chains)")}
        got = rate.rate([r["puzzle"]], budget=BUDGET_NESTED)
        assert (got.er[0], got.ep[0], got.ed[0]) == tuple(_tenths(str(r[k])) for k in
                                                          ("er", "ep", "ed")), r["source"]
        assert rate.TECHNIQUES[got.technique[0]] == r["technique"], r["source"]
    assert len(records) == NESTED_DYNAMIC and {"Contradiction", "Region"} <= kinds


def test_budget_stops_inside_a_step_of_nested_dynamic_chains():
    """Such a step can take seconds: the budget is read between its runs' looks too, so a
    puzzle stops inside it (the step before it is the last one taken), not after it."""
    puzzle = "......7....71.9...68..7......1.9.6.....3...2..4......3..8.6.1..5......4..1...2..5"
    whole = rate.rate([puzzle])
    assert rate.STATUS_NAMES[whole.status[0]] == "ok" and whole.er[0] == 114
    cut = rate.rate([puzzle], budget=600_000)  # past its first three steps, short of the 4th
    assert rate.STATUS_NAMES[cut.status[0]] == "budget"
    assert (cut.steps[0], cut.reached[0]) == (3, 105)
    assert [s.rating for s in rate.path(puzzle, budget=600_000)] == [1.2, 2.6, 10.5]


def test_aligned_pair_of_cells_that_do_not_see_each_other():
    """Found by a new user (top1465 #202, 0-based): serate's aligned pair exclusion also
    takes two cells in no common house (then a digit may be in both); ours took only cells
    that see each other, in another order, and its path went another way at step 49 (the
    same ER). The step as serate's run of the puzzle printed it (`--after='%r %s'`), and
    its whole path, 111 steps, is serate's again."""
    puzzle = "12.4.........8...37....6...........8.....2.45..59...6..1...4.9..7....8..96..1..2."
    steps = rate.path(puzzle)
    assert (steps[48].rating, steps[48].text) == (6.2, "Aligned Pair Exclusion: r2c7,r3c5")
    assert len(steps) == 111 and max(s.rating for s in steps) == 9.1
