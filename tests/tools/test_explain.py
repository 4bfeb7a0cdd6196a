"""`pipeline explain`: the path a person takes, in players' notation, that replays (judged by
the independent replayer) to the engine's solution, with the rater's ER/EP/ED."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from conftest import LEET, SAMPLE_CSV

from pipeline.sudoku import grid, rate, replay, solver

LINE = re.compile(r"^\d+\.\d [A-Z][\w\- ()+]*: (r\dc\d=\d.*|.*=> r\dc\d(=|<>)\d.*)$")


@pytest.fixture(scope="module")
def hard():
    """A sample puzzle whose path has chains (one of the highest rated of the first 300)."""
    puzzles = pl.read_csv(SAMPLE_CSV, infer_schema=False)["puzzle"].to_list()[:300]
    got = rate.rate(puzzles)
    return puzzles[int(got.er.argmax())]


def _solution(puzzle: str) -> str:
    out = solver.solve_strings([puzzle])
    return grid.decode(out.solutions, blank="0")[0]


def test_every_step_a_line_then_er_ep_ed(run_cli, hard):
    res = run_cli("explain", hard)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    steps, last = lines[:-1], lines[-1]
    assert steps and all(LINE.match(s) for s in steps), [s for s in steps if not LINE.match(s)]
    got = rate.rate([hard])
    er, ep, ed = (x[0] / 10 for x in (got.er, got.ep, got.ed))
    assert last.startswith(f"ER {er:.1f} ({rate.TECHNIQUES[got.technique[0]]}), "
                           f"EP {ep:.1f} (")
    assert f"ED {ed:.1f} (" in last
    assert max(float(s.split(" ", 1)[0]) for s in steps) == er


def test_the_json_steps_replay_to_the_solution(run_cli, hard):
    res = run_cli("explain", hard, "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)

    def cells(texts, sep):
        return tuple((int(t[1]) * 9 - 10 + int(t[3]), int(t.split(sep)[1])) for t in texts)

    steps = [(cells(s["placements"], "="), cells(s["eliminations"], "<>"))
             for s in out["steps"]]
    assert replay.why_not(hard, _solution(hard), steps) is None
    assert out["er"] == max(s["rating"] for s in out["steps"])
    for s in out["steps"]:  # the pattern: the cells the step's text names
        assert s["pattern"] and all(re.fullmatch(r"r\dc\d", p) for p in s["pattern"]), s
        if s["technique"] in ("Pointing", "Claiming"):  # in one box and one line
            rows, cols = {p[1] for p in s["pattern"]}, {p[3] for p in s["pattern"]}
            boxes = {(int(p[1]) - 1) // 3 * 3 + (int(p[3]) - 1) // 3 for p in s["pattern"]}
            assert len(boxes) == 1 and 1 in (len(rows), len(cols)), s


def test_the_board_before_a_step_keeps_every_solution_digit(run_cli, hard):
    n = len(rate.path(hard)) // 2
    res = run_cli("explain", hard, "--board", str(n))
    assert res.returncode == 0, res.stderr
    rows = [ln for ln in res.stdout.splitlines() if "|" in ln][:27]
    solution = _solution(hard)
    for r in range(9):
        for c in range(9):
            block = [rows[r * 3 + k].replace("‖", "|").split("|")[c] for k in range(3)]
            text = "".join(block)
            digit = solution[r * 9 + c]
            assert digit in text, (r, c, block)
    assert run_cli("explain", hard, "--board", "100000").returncode == 2


def test_a_puzzle_not_solved_gets_its_status_and_exit_1(run_cli):
    res = run_cli("explain", "." * 81)
    assert res.returncode == 1
    assert res.stdout == f"{'.' * 81}: multiple\n"  # its status once, no reason to repeat
    res = run_cli("explain", "-", input=f"{LEET}\n{'1' * 81}\nshort\n")
    assert res.returncode == 1
    assert "Hidden Single" in res.stdout and "invalid" in res.stdout
    assert "malformed" in res.stdout


def test_a_complete_grid_has_no_step_and_says_so(run_cli, tmp_path):
    """Found by a new user: explain said `ER 0.0 ()`, solve `0.0/0.0/0.0 ` and a run left
    `ser` null without a rate_note (serate rates a complete grid 0.0/0.0/0.0)."""
    full = _solution(LEET)
    res = run_cli("explain", full)
    assert res.returncode == 0 and res.stdout.startswith("no step: the grid is complete")
    res = run_cli("solve", "--rate", "--format", "line", full)
    assert res.returncode == 0 and "(a complete grid: no step to rate)" in res.stdout
    (tmp_path / "f.txt").write_text(full + "\n")
    assert run_cli("run", "-i", tmp_path / "f.txt", "-o", tmp_path / "out", "--rate",
                   "--workers", "1", "-q").returncode == 0
    row = pl.read_parquet(tmp_path / "out" / "results" / "*.parquet").row(0, named=True)
    assert row["status"] == "solved" and row["ser"] is None
    assert row["rate_note"].startswith("a complete grid: no step to rate")


def test_board_on_many_puzzles_goes_on_past_a_short_path(run_cli, hard):
    """Found by a new user: `explain - --board N` stopped at the first puzzle of fewer
    steps, exit 2, the others dropped."""
    n = len(rate.path(hard))
    res = run_cli("explain", "-", "--board", str(n), input=f"{LEET}\n{hard}\n")
    assert res.returncode == 0, res.stderr
    assert f"(--board {n}: the path has steps 1 to {len(rate.path(LEET))}: no board drawn)" \
        in res.stdout
    assert res.stdout.count("ER ") == 2 and "‖" in res.stdout  # the second one's board
    assert run_cli("explain", hard, "--board", "2", "-f", "json").returncode == 2


def test_json_of_a_puzzle_not_rated_says_how_far_it_came(run_cli, hard):
    """Found by a new user: the text said `not rated: budget (reached X)`, the JSON not."""
    res = run_cli("explain", hard, "--format", "json", "--rate-budget", "30")
    out = json.loads(res.stdout)
    assert out["rating"] == "budget" and out["er"] is None
    assert 1.0 <= out["reached"] <= rate.rate([hard]).er[0] / 10
    assert json.loads(run_cli("explain", hard, "--format", "json").stdout)["reached"] is None


def test_a_puzzle_without_a_step_says_why_not_steps_above(run_cli):
    """The text said "the steps above are as far as the rater came" above no step (a
    puzzle whose first step needs a technique past the ladder: before nested chains, most
    of forum hardest 11+); one stopped with steps says they are how far it came."""
    from pipeline.tools.explain import not_rated

    assert not_rated("beyond", 10.5, False) == (
        "not rated: beyond (reached 10.5); no step: the first one needs a technique past "
        "the rater's ladder")
    res = run_cli("explain", LEET, "--rate-budget", "1")
    assert res.returncode == 0
    assert res.stdout.strip().splitlines()[-1] == (
        "not rated: budget (reached 1.2); the steps above are as far as the rater came")
