"""pipeline.io.ranges: where the parent finds a range itself by the plain rules while the pool
starts (find_in_parent), it finds what a worker's full scan finds (find_range); what it
cannot read here, or cannot count without numba, it leaves to the workers.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import LEET, PUZZLE, needs_aot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import compiled
from pipeline.io import inputs, ranges, schema
from pipeline.io.storage import Location
from pipeline.job import plan

_line = st.sampled_from([PUZZLE, LEET, PUZZLE + "," + LEET, "", " ", "# note", '"a,b"',
                         PUZZLE[:40]])


@given(st.lists(_line, max_size=40), st.sampled_from(["\n", "\r\n"]), st.booleans(),
       st.integers(min_value=20, max_value=400))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_parents_pieces_are_the_workers_or_none(tmp_path, lines, eol, csv, range_bytes):
    """Where the parent counts a piece by the plain rules it finds what the full scan finds."""
    path = tmp_path / ("in.csv" if csv else "in.txt")
    path.write_bytes(((("puzzle,solution" + eol) if csv else "") + eol.join(lines)).encode())
    try:
        inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    except Exception:
        return  # not a usable input at all: nothing to plan
    inp.range_bytes = range_bytes
    for piece in plan.nominal_ranges(inp, path.stat().st_size):
        mine = ranges.find_in_parent(piece)
        assert mine is None or mine == ranges.find_range(piece)


@needs_aot
@pytest.mark.parametrize("header", ["quizzes,solutions\n", '"quizzes","solutions"\n', ""])
def test_the_parent_plans_every_piece_of_a_plain_file(tmp_path, header):
    """A header (even a quoted one: the shape found where it ends) is hashed, not counted."""
    path = tmp_path / "in.csv"
    path.write_text(header + (PUZZLE + "," + PUZZLE + "\n") * 300)
    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    inp.range_bytes = 2_000
    pieces = plan.nominal_ranges(inp, path.stat().st_size)
    mine = [ranges.find_in_parent(p) for p in pieces]
    assert all(m is not None and m == ranges.find_range(p)
               for m, p in zip(mine, pieces, strict=True))
    assert sum(m.scan.rows for m in mine) == 300


@needs_aot
def test_the_parent_leaves_what_it_cannot_read_here_to_the_workers(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text((PUZZLE + "\n") * 50)
    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    inp.range_bytes = 1_000
    piece = plan.nominal_ranges(inp, path.stat().st_size)[1]
    assert ranges.find_in_parent(piece) is not None
    remote = ranges.FindRange(0, Location("memory://in.txt"), piece.shape, piece.start,
                        piece.stop, False)
    assert ranges.find_in_parent(remote) is None
    path.unlink()
    assert ranges.find_in_parent(piece) is None  # the worker that runs it says what is wrong
    assert ranges.find_in_parent("not a piece") is None


def test_without_the_compiled_module_the_parent_leaves_planning_to_the_workers(tmp_path):
    """Counting lines here would import numba (half a second) in the parent."""
    path = tmp_path / "in.txt"
    path.write_text((PUZZLE + "\n") * 50)
    code = ("import sys\n"
            "from pipeline.io import inputs, ranges, schema\nfrom pipeline.job import plan\n"
            f"inp = inputs.open_input({str(path)!r}, 0, None, None, schema.OURS)\n"
            "inp.range_bytes = 1_000\n"
            "print([ranges.find_in_parent(p) for p in plan.nominal_ranges(inp, inp.location.size())][:2],"
            " 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, compiled.MODE_ENV: "jit"})
    assert out.stdout.split() == ["[None,", "None]", "False"]


# ---------------------------------------------------------------------------------------
# Small inputs share a part

_inputs = st.lists(st.tuples(st.sampled_from(["a", "b", None]),  # the columns' key
                             st.lists(st.integers(min_value=0, max_value=30), min_size=0,
                                      max_size=3)),  # each range's rows
                   max_size=40)


@given(_inputs, st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=4))
@settings(max_examples=200, deadline=None)
def test_small_inputs_share_parts_and_nothing_else_does(given_inputs, chunk, most):
    """Parts are numbered in order from 0 without a gap; a part of several ranges holds only
    whole inputs of one range each, of one key, their rows within the chunk size."""
    groups = [(key, [ranges.Range(i, k, 0, 1, 0, rows, f"{i}.{k}") for k, rows in
                     enumerate(counts)]) for i, (key, counts) in enumerate(given_inputs)]
    old = ranges.MAX_SHARED
    ranges.MAX_SHARED = most
    try:
        out = ranges.share_parts(groups, chunk)
    finally:
        ranges.MAX_SHARED = old
    assert [(r.input, r.first_row, r.rows, r.digest) for r in out] == \
        [(r.input, r.first_row, r.rows, r.digest) for _, rs in groups for r in rs]
    numbers = [r.part for r in out]
    assert numbers == sorted(numbers)
    assert sorted(set(numbers)) == list(range(len(set(numbers))))
    for members in ranges.by_part(out).values():
        if len(members) == 1:
            continue
        assert len(members) <= most
        assert sum(r.rows for r in members) <= chunk
        keys = {groups[r.input][0] for r in members}
        assert len(keys) == 1 and None not in keys
        assert all(len(groups[r.input][1]) == 1 for r in members)
    # Consecutive small inputs of one key fill a part before the next begins.
    by = ranges.by_part(out)
    for a, b in zip(sorted(by), sorted(by)[1:], strict=False):
        last, nxt = by[a][-1], by[b][0]
        ka, kb = groups[last.input], groups[nxt.input]
        if (ka[0] is not None and ka[0] == kb[0] and len(ka[1]) == len(kb[1]) == 1
                and max(ka[1][0].rows, kb[1][0].rows) < chunk and len(by[a]) < most
                and all(len(groups[r.input][1]) == 1 for r in by[a])):
            assert sum(r.rows for r in by[a]) + nxt.rows > chunk


def test_a_shared_parts_footer_sums_its_ranges():
    members = [ranges.Range(i, 7, 0, 10, 0, 3, f"d{i}") for i in range(3)]
    rows, digest = ranges.footers(members)[7]
    assert rows == 9
    assert digest != ranges.footers(members[:2])[7][1]
    assert ranges.footers(members[:1])[7] == (3, "d0")  # a part of one range: the range's
