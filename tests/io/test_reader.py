"""pipeline.io.shape and pipeline.io.reader: every input shape, row numbering, what is and is not
a row, bad rows; every file read both in one pass and range by range, with the same rows."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import LEET, LEET_SOLUTION, PUZZLE, SOLUTION, read_input

from pipeline.errors import InputError
from pipeline.io import records

P0 = PUZZLE.replace(".", "0")
ROYLE_TITLE = ("Gordon F. Royle, A collection of 49,151 distinct Sudoku con?gurations with 17 "
               "entries, http://mapleta.maths.uwa.edu.au/~gordon/sudokumin.php")


def read(path, range_bytes: int | None = 97, puzzle_column=None, solution_column=None):
    """(frame of every row, {row: reason}, shape), read in one pass and in small ranges."""
    return read_input(path, range_bytes, puzzle_column, solution_column)


def assert_rows(frame: pl.DataFrame, n: int) -> None:
    assert frame["row"].to_list() == list(range(n))


# ---------------------------------------------------------------------------------------
# Shapes


@pytest.mark.parametrize("gz", [False, True])
def test_kaggle_shape(make_input, gz):
    name = "kaggle.csv" + (".gz" if gz else "")
    path = make_input(name, f"quizzes,solutions\n{P0},{SOLUTION}\n{LEET},{LEET_SOLUTION}\n")
    frame, reasons, shape = read(path)
    assert shape.kind == "csv" and shape.header and shape.puzzle_field == 0 and shape.solution_field == 1
    assert_rows(frame, 2)
    assert frame["puzzle"].to_list() == [P0, LEET]
    assert frame["expected_solution"].to_list() == [SOLUTION, LEET_SOLUTION]
    assert reasons == {}


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_radcliffe_shape_carries_columns(make_input, eol):
    text = eol.join(["id,puzzle,solution,clues,difficulty", f"1,{PUZZLE},{SOLUTION},26,2.2",
                     f"2,{LEET},{LEET_SOLUTION},30,0.0"]) + eol
    frame, reasons, shape = read(make_input("radcliffe.csv", text))
    assert (shape.puzzle_field, shape.solution_field) == (1, 2)
    assert frame.columns == ["row", "puzzle", "id", "clues", "difficulty", "expected_solution"]
    assert frame.select("id", "clues", "difficulty").rows() == [("1", "26", "2.2"),
                                                                 ("2", "30", "0.0")]
    assert frame["puzzle"].to_list() == [PUZZLE, LEET]
    assert reasons == {}


@pytest.mark.parametrize("other", ["Über", "名前", "1st", "id:v2", "id [int]", "id?", "id%", "=cmd"])
def test_a_header_with_a_known_name_is_one_whatever_its_other_names(make_input, other):
    """Found by a new user: one name outside [A-Za-z_]... made the header a malformed row 0,
    the rows' numbers off by one and the expected solution unread."""
    frame, reasons, shape = read(make_input("h.csv", f"{other},puzzle,solution\n7,{PUZZLE},{SOLUTION}\n"))
    assert shape.header and (shape.puzzle_field, shape.solution_field) == (1, 2)
    assert_rows(frame, 1)
    assert reasons == {} and frame[other].to_list() == ["7"]
    assert frame["expected_solution"].to_list() == [SOLUTION]


@pytest.mark.parametrize("other", ["Über", "名前", "id:v2", "Größe (cm)"])
def test_a_header_by_shape_alone_may_name_columns_in_any_script(make_input, other):
    frame, reasons, shape = read(make_input("s.csv", f"{other},x\n7,{PUZZLE}\n8,{LEET}\n"))
    assert shape.header and shape.guessed and shape.puzzle_field == 1
    assert_rows(frame, 2)
    assert reasons == {}
    assert frame[other].to_list() == ["7", "8"]


@pytest.mark.parametrize("name", ["puzzle", "Quizzes", "quiz", "grid", "board", "SUDOKU"])
def test_puzzle_column_found_by_name(make_input, name):
    frame, _, shape = read(make_input("n.csv", f"x,{name},y\na,{PUZZLE},b\n"))
    assert shape.puzzle_field == 1
    assert frame["puzzle"].to_list() == [PUZZLE]
    assert frame.columns == ["row", "puzzle", "x", "y"]


def test_puzzle_column_found_by_content(make_input):
    frame, _, shape = read(make_input("c.csv", f"name,stuff\nfoo,{PUZZLE}\n"))
    assert shape.puzzle_field == 1 and frame["puzzle"].to_list() == [PUZZLE]


def test_puzzle_and_solution_columns_given(make_input):
    path = make_input("g.csv", f"a,b,c\n{LEET},{PUZZLE},{SOLUTION}\n")
    frame, _, shape = read(path, puzzle_column="B", solution_column="c")
    assert frame["puzzle"].to_list() == [PUZZLE]
    assert frame["expected_solution"].to_list() == [SOLUTION]
    assert frame["a"].to_list() == [LEET]


def test_a_solution_column_is_named_in_every_shape_or_refused(make_input):
    """Fixed-width fields are named column_N, the solution's too; a name no field has, on
    any shape, is an input error (text and fixed-width took any name without a word, and
    expected_match was null)."""
    path = make_input("f.txt", f"x1 {PUZZLE} {SOLUTION} 7.2\nx2 {LEET} {SOLUTION} 1.0\n")
    frame, _, shape = read(path, solution_column="column_3")
    assert shape.kind == "fixed" and frame["expected_solution"].to_list() == [SOLUTION] * 2
    assert frame.columns == ["row", "puzzle", "column_1", "column_4", "expected_solution"]
    for wrong in ("nope", "column_2", "column_9"):
        with pytest.raises(InputError, match=f"no solution column '{wrong}' \\(its fields: "
                                             "column_1, column_2, column_3, column_4; "
                                             "column_2 is the puzzle\\)"):
            read(path, solution_column=wrong)
    with pytest.raises(InputError, match="no puzzle column 'column_9' \\(its fields: "
                                         "column_1, column_2, column_3, column_4\\)"):
        read(path, puzzle_column="column_9")  # (it listed a headerless CSV's one column)
    with pytest.raises(InputError, match="no solution column 'x' \\(a puzzle a line"):
        read(make_input("t.txt", f"{PUZZLE}\n{LEET}\n"), solution_column="x")


def test_named_column_missing_is_an_input_error(make_input):
    path = make_input("g.csv", f"a,b\n{PUZZLE},x\n")
    with pytest.raises(InputError, match="no puzzle column 'zz'"):
        read(path, puzzle_column="zz")


def test_no_puzzle_column_is_an_input_error(make_input):
    with pytest.raises(InputError, match="no puzzle column"):
        read(make_input("k.csv", "a,b,c\n1,2,3\n4,5,6\n"))


def test_clashing_column_names_get_input_prefix(make_input):
    path = make_input("c.csv", f"source,puzzle,row,status,grade\ns,{PUZZLE},7,x,g\n")
    frame, _, _ = read(path)
    assert frame.columns == ["row", "puzzle", "input_source", "input_row", "input_status",
                             "input_grade"]
    assert frame.row(0) == (0, PUZZLE, "s", "7", "x", "g")


def test_a_repeated_name_never_takes_a_name_the_input_has(make_input):
    """`id,id,id_2`: the input's own id_2 keeps its name (the second id took it, and the
    input's id_2 came out as id_2_2); the same around our names."""
    path = make_input("c.csv", f"id,id,id_2,puzzle,status,input_status\n"
                               f"A,B,C,{PUZZLE},S,T\n")
    frame, _, _ = read(path)
    assert frame.columns == ["row", "puzzle", "id", "id_3", "id_2", "input_status_2",
                             "input_status"]
    assert frame.row(0) == (0, PUZZLE, "A", "B", "C", "S", "T")


@pytest.mark.parametrize("gz", [False, True])
def test_csv_without_header(make_input, gz):
    rows = [f"{P0},{SOLUTION}", f"{LEET.replace('.', '0')},{LEET_SOLUTION}"] * 3
    path = make_input("noheader.csv" + (".gz" if gz else ""), "\n".join(rows) + "\n")
    frame, reasons, shape = read(path)
    assert not shape.header and shape.solution_field == 1
    assert_rows(frame, 6)
    assert frame["expected_solution"].to_list()[:2] == [SOLUTION, LEET_SOLUTION]
    assert reasons == {}


def test_text_comments_blank_lines(make_input):
    text = f"# a comment\n#\n\n{PUZZLE}\n   \n# between\n{LEET}\n\n\n{P0}"
    frame, reasons, shape = read(make_input("t.txt", text))
    assert shape.kind == "text"
    assert_rows(frame, 3)
    assert frame["puzzle"].to_list() == [PUZZLE, LEET, P0]
    assert reasons == {}


def test_norvig_count_line(make_input):
    frame, _, shape = read(make_input("top.txt", f"3\n{PUZZLE}\n{LEET}\n{P0}"))
    assert shape.data_start > shape.start  # the first line is not a row
    assert frame["puzzle"].to_list() == [PUZZLE, LEET, P0]


def test_royle_title_line(make_input):
    frame, _, shape = read(make_input("s17.txt", f"{ROYLE_TITLE}\n{P0}\n{P0}\n"))
    assert shape.data_start > shape.start  # the first line is not a row
    assert_rows(frame, 2)
    assert frame["puzzle"].to_list() == [P0, P0]


def test_first_line_a_puzzle_is_a_row(make_input):
    frame, _, shape = read(make_input("p.txt", f"{PUZZLE}\n{LEET}\n"))
    assert shape.data_start == shape.start
    assert_rows(frame, 2)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_bom_and_line_endings(make_input, eol, bom):
    csv_text = bom + eol.join(["puzzle,solution", f"{PUZZLE},{SOLUTION}", ""]).encode()
    frame, reasons, shape = read(make_input("b.csv", csv_text))
    assert shape.columns == ("puzzle", "solution")
    assert frame["puzzle"].to_list() == [PUZZLE]
    assert frame["expected_solution"].to_list() == [SOLUTION]
    txt = bom + eol.join([PUZZLE, LEET]).encode()
    frame, reasons, _ = read(make_input("b.txt", txt))
    assert frame["puzzle"].to_list() == [PUZZLE, LEET] and reasons == {}


@pytest.mark.parametrize("gz", [False, True])
def test_fixed_width_records(make_input, gz):
    text = (f"00015097c6c3 {P0}  7.2\n0001d2888928 {LEET.replace('.', '0')}  7.1\n"
            f"000274921f39 {P0}\n")
    frame, reasons, shape = read(make_input("diabolical.txt" + (".gz" if gz else ""), text))
    assert shape.kind == "fixed" and shape.n_fields == 3 and shape.puzzle_field == 1
    assert_rows(frame, 3)
    assert frame["puzzle"].to_list()[:2] == [P0, LEET.replace(".", "0")]
    assert reasons == {2: "2 fields, expected 3"}
    # The other fields are carried, named as a headerless CSV's columns; null where ragged.
    assert frame["column_1"].to_list() == ["00015097c6c3", "0001d2888928", None]
    assert frame["column_3"].to_list() == ["7.2", "7.1", None]


def test_a_fixed_width_field_named_as_its_column(make_input):
    """--puzzle-column column_2 names a fixed-width record's second field, as the results
    name the others (it forced a CSV reading, where there was only column_1)."""
    text = f"h1 {P0}  5.1\nh2 {LEET.replace('.', '0')}  5.2\n"
    frame, reasons, shape = read(make_input("fixed.txt", text), puzzle_column="column_2")
    assert shape.kind == "fixed" and shape.puzzle_field == 1 and reasons == {}
    assert frame["column_1"].to_list() == ["h1", "h2"]
    assert frame["column_3"].to_list() == ["5.1", "5.2"]


@pytest.mark.parametrize("first, reasons", [
    (f"h0 {P0[:80]}  5.0", {}),  # not a title line: a row (its puzzle malformed: 80 long)
    (f"h0 {P0}", {0: "2 fields, expected 3"}),
    (f"h0 {P0}  5.0 extra", {0: "4 fields, expected 3"}),
])
def test_an_odd_first_fixed_width_record_is_one_bad_row(make_input, first, reasons):
    """The layout is the one most records share: an odd first record is a malformed row,
    neither skipped as a title nor the rule the rows after it are read by."""
    text = f"{first}\nh1 {P0}  5.1\nh2 {P0}  5.2\n"
    frame, found, shape = read(make_input("fixed.txt", text))
    assert shape.kind == "fixed" and shape.n_fields == 3 and shape.puzzle_field == 1
    assert_rows(frame, 3)
    assert found == reasons
    assert frame["puzzle"].to_list()[1:] == [P0, P0]
    assert frame["column_3"].to_list()[1:] == ["5.1", "5.2"]


@pytest.mark.parametrize("first", [PUZZLE, f"{P0},{SOLUTION},x"])
def test_an_odd_first_headerless_csv_record_is_one_bad_row(make_input, first):
    rows = [first] + [f"{P0},{SOLUTION}", f"{LEET.replace('.', '0')},{LEET_SOLUTION}"] * 3
    frame, reasons, shape = read(make_input("odd.csv", "\n".join(rows) + "\n"))
    assert not shape.header and shape.n_fields == 2 and shape.solution_field == 1
    assert_rows(frame, 7)
    assert list(reasons) == [0] and reasons[0].startswith("ragged record")
    assert frame["expected_solution"].to_list()[1:3] == [SOLUTION, LEET_SOLUTION]


# ---------------------------------------------------------------------------------------
# Not rows, empty files


@pytest.mark.parametrize("content", ["", "\n\n  \n", "id,puzzle,solution\n", "# only\n# comments",
                                     "puzzle\r\n", "95\n", b"\xef\xbb\xbf"])
def test_files_without_rows(make_input, content):
    frame, reasons, _ = read(make_input("empty.csv", content))
    assert frame.height == 0 and reasons == {}


# ---------------------------------------------------------------------------------------
# Bad rows: malformed with a one-line reason, keeping their row index


def test_bad_csv_rows_keep_their_index(make_input):
    lines = [
        b"id,puzzle,solution",
        f"0,{PUZZLE},{SOLUTION}".encode(),
        f"1,{PUZZLE}".encode(),  # too few fields
        f"2,{PUZZLE},{SOLUTION},extra".encode(),  # too many
        f'3,"{PUZZLE}",{SOLUTION}'.encode(),  # fine quoting
        f'4,"{PUZZLE},{SOLUTION}'.encode(),  # broken quoting
        f"5,,{SOLUTION}".encode(),  # empty puzzle field
        b"6,\xff\xfe" + PUZZLE[2:].encode() + b"," + SOLUTION.encode(),  # not UTF-8
        f"7,{'1' * 100_000},{SOLUTION}".encode(),  # absurdly long field
        f"8,{LEET},{LEET_SOLUTION}".encode(),
    ]
    frame, reasons, _ = read(make_input("bad.csv", b"\n".join(lines) + b"\n"), range_bytes=300)
    assert_rows(frame, 9)
    assert set(reasons) == {1, 2, 4, 6}
    assert reasons[1] == "ragged record: 2 fields, expected 3"
    assert reasons[2] == "ragged record: 4 fields, expected 3"
    assert reasons[4].startswith("broken quoting")
    assert "UTF-8" in reasons[6]
    assert all("\n" not in r for r in reasons.values())
    assert frame["puzzle"][3] == PUZZLE and frame["id"][3] == "3"
    assert frame["puzzle"][5] == "" and frame["id"][5] == "5"
    assert len(frame["puzzle"][7]) == 100_000  # the encoder will call it length 100000
    assert frame["puzzle"][8] == LEET


def test_invalid_utf8_line_in_text_file(make_input):
    data = PUZZLE.encode() + b"\n" + b"\x80\x81" + PUZZLE[2:].encode() + b"\n" + LEET.encode()
    frame, reasons, _ = read(make_input("u.txt", data))
    assert_rows(frame, 3)
    assert set(reasons) == {1} and "UTF-8" in reasons[1]


def test_over_long_line_is_one_truncated_row(make_input, monkeypatch):
    monkeypatch.setattr(records, "BLOCK", 64 << 10)
    long = "7" * (3 << 20)
    path = make_input("long.txt", f"{PUZZLE}\n{long}\n{LEET}\n")
    frame, reasons, _ = read(path)
    assert_rows(frame, 3)
    assert frame["puzzle"].to_list()[::2] == [PUZZLE, LEET]
    assert set(reasons) == {1}
    assert "over the" in reasons[1] and "truncated" in reasons[1]
    assert f"{len(long):,}" in reasons[1]
    assert len(frame["puzzle"][1]) <= 1000


def test_over_long_last_line_without_newline(make_input, monkeypatch):
    monkeypatch.setattr(records, "BLOCK", 64 << 10)
    path = make_input("long.csv", f"puzzle,x\n{PUZZLE},1\n" + "9" * (2 << 20))
    frame, reasons, _ = read(path)
    assert_rows(frame, 2)
    assert set(reasons) == {1} and "truncated" in reasons[1]


# ---------------------------------------------------------------------------------------
# Blocks: rows numbered across block boundaries, whatever the block and chunk size


def _messy_text(n: int) -> tuple[str, list[str]]:
    rng = np.random.default_rng(7)
    puzzles, lines = [], ["# header comment", ""]
    for i in range(n):
        p = [PUZZLE, LEET, P0][i % 3]
        puzzles.append(p)
        lines.append(p)
        if rng.random() < 0.2:
            lines.append("")
        if rng.random() < 0.1:
            lines.append("# note")
    return "\r\n".join(lines), puzzles


@pytest.mark.parametrize("block", [97, 256, 4096])
@pytest.mark.parametrize("chunk", [1, 83, 1000])
def test_row_numbers_across_blocks(make_input, monkeypatch, block, chunk):
    monkeypatch.setattr(records, "BLOCK", block)
    text, puzzles = _messy_text(150)
    frame, reasons, _ = read(make_input("m.txt", text), range_bytes=chunk)
    assert_rows(frame, 150)
    assert frame["puzzle"].to_list() == puzzles
    assert reasons == {}


@pytest.mark.parametrize("block", [50, 300, 5000])
def test_csv_across_blocks_with_a_bad_row(make_input, monkeypatch, block):
    monkeypatch.setattr(records, "BLOCK", block)
    lines = ["id,puzzle,solution"] + [f"{i},{PUZZLE},{SOLUTION}" for i in range(40)]
    lines[21] = "20,broken"
    frame, reasons, _ = read(make_input("m.csv", "\n".join(lines) + "\n"), range_bytes=600)
    assert_rows(frame, 40)
    assert reasons == {20: "ragged record: 2 fields, expected 3"}
    ids = frame["id"].to_list()
    assert ids[:20] == [str(i) for i in range(20)] and ids[21:] == [str(i) for i in range(21, 40)]


@pytest.mark.parametrize("block", [40, 1000])
def test_gzip_across_blocks(make_input, monkeypatch, block):
    monkeypatch.setattr(records, "BLOCK", block)
    lines = ["quizzes,solutions"] + [f"{P0},{SOLUTION}"] * 50
    frame, reasons, _ = read(make_input("k.csv.gz", "\n".join(lines)), range_bytes=700)
    assert_rows(frame, 50)
    assert reasons == {}


# ---------------------------------------------------------------------------------------
# Unusable inputs


@pytest.mark.parametrize("header", ["puzzle", "Quizzes", '"sudoku"'])
def test_one_column_csv_with_header(make_input, header):
    frame, reasons, shape = read(make_input("one.csv", f"{header}\r\n{PUZZLE}\r\n{LEET}\r\n"))
    assert shape.kind == "csv" and shape.header
    assert frame["puzzle"].to_list() == [PUZZLE, LEET]
    assert reasons == {}


@pytest.mark.parametrize("tail", ["\r\n\r\n", "\n\n", "\r\n \r\n", "\n#c\n"])
@pytest.mark.parametrize("range_bytes", [2, 5, 200, 10_000])
def test_blank_and_comment_records_at_a_range_end(make_input, tail, range_bytes):
    """Found by hypothesis: a range of nothing but empty CRLF records read as two rows."""
    eol = "\r\n" if "\r" in tail else "\n"
    frame, reasons, _ = read(make_input("t.txt", eol.join([PUZZLE] * 8) + tail),
                             range_bytes=range_bytes)
    assert frame["puzzle"].to_list() == [PUZZLE] * 8 and reasons == {}
