"""pipeline.job.plan: with no pool starting, the planning tasks go a few per worker in one
Bundle each, with the same cuts, in the same order, as task by task.
"""

from __future__ import annotations

import pytest
from conftest import PUZZLE, InlineExecutor

from pipeline.io import inputs, ranges, schema
from pipeline.job import plan
from pipeline.job.tasks import Bundle


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
