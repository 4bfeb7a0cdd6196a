"""pipeline.job.plan and the counting it does (pipeline.io.records): the plain fast path the parent
runs while the pool starts agrees with the full scan, and run_all shares the tasks between
this process and the workers without losing or repeating one.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import LEET, PUZZLE, InlineExecutor, needs_aot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import compiled
from pipeline.io import inputs, ranges, records, schema
from pipeline.io.storage import Location
from pipeline.job import plan, schedule
from pipeline.job.tasks import Bundle


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


class Warming(InlineExecutor):
    """Inline, but no worker is ready for the first `calls` questions."""

    def __init__(self, calls: int):
        self.calls = calls
        self.ran: list = []

    def warming(self) -> bool:
        self.calls -= 1
        return self.calls >= 0

    def submit(self, task):
        self.ran.append(task)
        fut: cf.Future = cf.Future()
        fut.set_result(("worker", task))
        return fut


@pytest.mark.parametrize("calls", [0, 3, 100])
def test_run_all_shares_the_tasks_with_this_process(calls):
    tasks = list(range(20))
    here: list = []

    def helper(task):
        here.append(task)
        return None if task % 3 == 0 else ("here", task)  # multiples of 3: for a worker

    ex = Warming(calls)
    results = schedule.run_all(ex, tasks, helper=helper)
    assert [r[1] for r in results] == tasks  # each result in its place
    done_here = {r[1] for r in results if r[0] == "here"}
    assert sorted(done_here | set(ex.ran)) == tasks and not done_here & set(ex.ran)
    assert all(t % 3 for t in done_here)
    assert here == sorted(here, reverse=True)  # from the back, each looked at once
    if calls == 0:
        assert not here
    if calls == 100:  # warming throughout: only what this process declined was handed over
        assert sorted(ex.ran) == [t for t in tasks if t % 3 == 0]


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_ready_workers_plan_in_batches_with_every_result_in_its_place(tmp_path, workers):
    """With no pool starting, the planning tasks go a few per worker in one Bundle each:
    the same cuts, in the same order, as task by task."""
    path = tmp_path / "in.txt"
    path.write_text((PUZZLE + "\n") * 400)
    inp = inputs.open_input(str(path), 0, None, None, schema.OURS)
    inp.range_bytes = 1_000
    pieces = plan.nominal_ranges(inp, path.stat().st_size)
    ex = InlineExecutor()
    ex.workers = workers
    sent: list = []
    submit = ex.submit
    ex.submit = lambda task: (sent.append(task), submit(task))[1]
    cuts = plan.run_planning(ex, pieces)
    assert cuts == [ranges.find_range(p) for p in pieces]
    assert all(isinstance(t, Bundle) for t in sent)
    assert len(sent) <= workers * plan.BATCHES_PER_WORKER < len(pieces)


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
