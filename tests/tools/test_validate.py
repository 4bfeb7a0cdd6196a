"""`pipeline validate`: boards and puzzle/solution pairs, reasons, output modes, exit codes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from conftest import invoke

# A valid complete grid and a puzzle of it.
GRID = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
PUZZLE = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"
OTHER = "123456789456789123789123456214365897365897214897214365531642978642978531978531642"


def run(*args: str):
    return invoke(["validate", *args])


def lines(result) -> list[str]:
    return [ln for ln in result.stdout.splitlines() if ln.startswith("row ")]


def test_boards_valid_and_invalid_with_reasons(tmp_path):
    clash_row = "55" + GRID[2:]  # two 5s in row 1
    clash_col = GRID[:9] + "5" + GRID[10:]  # a second 5 in row 2 (and in column 1)
    f = tmp_path / "boards.txt"
    f.write_text("\n".join([GRID, PUZZLE, clash_row, clash_col, "12345", GRID]) + "\n")
    result = run(str(f))
    assert result.returncode == 1
    got = lines(result)
    assert got[0] == "row 2: digit 5 twice in grid row 1"
    assert got[1].startswith("row 3: digit 5 ")
    assert got[2] == "row 4: not a board: length 5, expected 81"
    assert len(got) == 3  # only invalid rows by default
    # --all: a line for every row, the partial board is valid (Valid Sudoku rules)
    result = run(str(f), "--all")
    got = lines(result)
    assert got[0] == "row 0: valid (complete grid)"
    assert got[1] == "row 1: valid (partial board)"
    assert len(got) == 6
    # --complete: a board with blanks is not valid
    got = lines(run(str(f), "--complete"))
    assert "row 1: not complete: 51 blank squares" in got


def test_all_valid_exits_0(tmp_path):
    f = tmp_path / "ok.txt"
    f.write_text(f"{GRID}\n{OTHER}\n{PUZZLE}\n")
    result = run(str(f))
    assert result.returncode == 0
    assert lines(result) == []
    assert "3 valid, 0 invalid" in result.stderr


def test_pairs(tmp_path):
    bad_solution = GRID[:-2] + "97"  # swap the last two: row 9 fine, columns 8, 9 clash
    changed = OTHER  # a valid grid, but not this puzzle's: it changes givens
    incomplete = GRID[:40] + "." + GRID[41:]
    rows = [
        (PUZZLE, GRID),
        (PUZZLE, bad_solution),
        (PUZZLE, changed),
        (PUZZLE, incomplete),
        ("55" + PUZZLE[2:], GRID),
        (PUZZLE, ""),
        (PUZZLE, GRID[:80]),
    ]
    f = tmp_path / "pairs.csv"
    f.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in rows))
    result = run(str(f), "--all")
    assert result.returncode == 1
    got = lines(result)
    assert got[0] == "row 0: valid (pair)"
    assert got[1] == "row 1: solution: digit 9 twice in grid column 8"
    assert got[2] == "row 2: solution changes the given 5 at grid row 1, column 1 to 1"
    assert got[3] == "row 3: solution: not complete (1 blanks)"
    assert got[4] == "row 4: puzzle: digit 5 twice in grid row 1"
    assert got[5] == "row 5: no solution given"
    assert got[6] == "row 6: solution: length 80, expected 81"


def test_json_summary_and_gzip(tmp_path):
    f = tmp_path / "boards.txt.gz"
    with gzip.open(f, "wt") as out:
        out.write(f"{GRID}\n{'55' + GRID[2:]}\n{GRID}\n")
    result = run(str(f), "--json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["rows"] == 3 and doc["valid"] == 2 and doc["invalid"] == 1
    assert doc["shape"] == "boards" and doc["exit_code"] == 1
    assert doc["listed"] == [{"row": 1, "valid": False,
                              "reason": "digit 5 twice in grid row 1"}]
    assert doc["causes"] == {"digit N twice in grid row N": 1}
    doc = json.loads(run(str(f), "--json", "--all").stdout)
    assert len(doc["listed"]) == 3 and doc["listed"][0] == {
        "row": 0, "valid": True, "kind": "complete grid"}


def test_unusable_files_exit_2(tmp_path):
    assert run(str(tmp_path / "missing.txt")).returncode == 2
    assert run(str(tmp_path)).returncode == 2  # a folder
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert run(str(empty)).returncode == 2
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    assert run(str(binary)).returncode == 2


def test_generated_file_is_valid(tmp_path):
    out = tmp_path / "gen.csv"
    assert invoke(["generate", "-n", "50", "--seed", "4", "-o", str(out),
                               "-q"]).returncode == 0
    result = run(str(out))
    assert result.returncode == 0
    assert "50 valid, 0 invalid" in result.stderr


def test_row_numbers_match_pipeline_run(tmp_path: Path):
    f = tmp_path / "x.csv"
    f.write_text("id,puzzle\n1," + GRID + "\n2,55" + GRID[2:] + "\n")
    assert lines(run(str(f))) == ["row 1: digit 5 twice in grid row 1"]
