"""pipeline.io.records: the plain fast path the parent runs while the pool starts
(plain_lines, and the compiled counts it rests on) says what its docstring says, against
bytes counted one by one.
"""

from __future__ import annotations

import numpy as np
from conftest import PUZZLE
from hypothesis import given
from hypothesis import strategies as st

from pipeline.io import records


def _plain_by_definition(data: bytes, quotes: bool, comments: bool) -> bool:
    lines = data.split(b"\n")
    return (all(b >= 33 or b == 10 for b in data)
            and not (quotes and b'"' in data) and not (comments and b"#" in data)
            and not data.startswith(b"\n") and b"\n\n" not in data
            and all(lines[:-1]))


@given(st.binary(max_size=300) | st.lists(st.sampled_from(
    [PUZZLE.encode(), b"\n", b"\r", b'"', b"#", b" ", b",", b"\t"]), max_size=40).map(b"".join),
       st.booleans(), st.booleans())
def test_plain_lines_says_what_its_docstring_says(data, quotes, comments):
    lfs, ok = records.plain_lines(data, quotes, comments)
    assert ok == _plain_by_definition(data, quotes, comments)
    assert not ok or lfs == data.count(b"\n")


@given(st.binary(max_size=80) | st.lists(st.sampled_from([b"\n", b"\r", b" ", b"a", b"\x00",
                                                          b"\x80", b"\xff", b"!"]),
                                         max_size=80).map(b"".join), st.booleans())
def test_plain_counts_counts_what_it_says_in_every_byte_of_a_word(data, after_lf):
    """The compiled counts, eight bytes a word and the rest one by one, against bytes
    counted one by one: LFs, bytes below 33, LFs right after an LF."""
    previous = after_lf
    after = 0
    for b in data:
        after += b == 10 and previous
        previous = b == 10
    counts = records._plain_counts(np.frombuffer(data, np.uint8), after_lf)
    assert counts == (data.count(b"\n"), sum(b < 33 for b in data), after)


def test_plain_lines_finds_an_empty_line_anywhere_in_a_word_or_across_two():
    good = b"1234567\n" * 4
    assert records.plain_lines(good, True, True) == (4, True)
    for cut in range(len(good) + 1):
        bad = good[:cut] + b"\n" + good[cut:]
        assert records.plain_lines(bad, True, True)[1] == _plain_by_definition(bad, True, True)
        assert records.plain_lines(bad[1:], True, True)[1] == _plain_by_definition(
            bad[1:], True, True)
