"""The plan: every input cut into ranges, each with its part number and first row (the
ranges of small inputs share a part: io/ranges.share_parts).

Ranges have a fixed nominal size per input (`--chunk-size` rows times the average record
length in the file's first bytes); their exact bounds are record starts, found by the
planning tasks (io/ranges.py), one per nominal range, run in parallel on the workers. While
the local pool is still starting (its forkserver's imports take half a second), or the
Dask client connecting, the parent runs those of local files whose bytes are plain
(`ranges.find_in_parent`, with the compiled module only: numba is never imported here).
With the workers ready (Dask) they go in a few bundles per worker, since a round trip
through a scheduler costs more than a planning task. The parent adds up the counts to
number the rows. A CSV in which quotes appear is planned by one task reading it from the
start instead, because a line end may be inside a quoted field and only a reading from the
start can tell.

The plan is the run's definition of its inputs: a rerun plans again with the recorded range
sizes and resumes only if every range hashes the same.
"""

from __future__ import annotations

from pipeline.io import parquet
from pipeline.io.inputs import Input
from pipeline.io.ranges import (
    FindRange,
    Found,
    HashRange,
    Range,
    ScanInput,
    find_in_parent,
    share_parts,
)
from pipeline.io.shape import Shape
from pipeline.job import schedule
from pipeline.job.tasks import Bundle


def range_bytes(head: bytes, shape: Shape, chunk_size: int) -> int:
    """The nominal range size: about chunk_size records of the file's first bytes."""
    body = head[shape.start:]
    lines = max(1, body.count(b"\n") + body.count(b"\r") - body.count(b"\r\n"))
    mean = max(1.0, len(body) / lines)
    return max(64, int(chunk_size * mean))


# ---------------------------------------------------------------------------------------
# Spilling an input that can be read only once


# ---------------------------------------------------------------------------------------
# Planning tasks (they run on the workers) and putting their answers together


BATCHES_PER_WORKER = 2


def run_planning(executor, tasks: list) -> list:
    """Every planning task's result, in order. While the local pool starts, task by task,
    this process taking some (find_in_parent); with workers ready, a few Batches per worker."""
    if executor.warming() or len(tasks) <= executor.workers:
        return schedule.run_all(executor, tasks, helper=find_in_parent)
    size = -(-len(tasks) // (executor.workers * BATCHES_PER_WORKER))
    batches = [Bundle(tuple(tasks[i:i + size])) for i in range(0, len(tasks), size)]
    return [r for done in schedule.run_all(executor, batches) for r in done]


def nominal_ranges(inp: Input, size: int) -> list[FindRange]:
    """The planning tasks of an input of `size` bytes."""
    shape, step = inp.shape, inp.range_bytes
    out = []
    k, start = 0, shape.start
    while start < size or k == 0:
        out.append(FindRange(inp.index, inp.location, shape, start, start + step, k == 0))
        k += 1
        start += step
    return out


def ranges_from_found(inp: Input, cuts: list[Found], first_part: int) -> list[Range]:
    """Ranges numbered from `first_part`, empty ones dropped, rows numbered in order."""
    out = []
    row = 0
    part = first_part
    for cut in cuts:
        if cut.scan.next_start <= cut.start:
            continue
        out.append(Range(inp.index, part, cut.start, cut.scan.next_start, row, cut.scan.rows,
                         cut.scan.digest, cut.skip))
        row += cut.scan.rows
        part += 1
    return out


def consistent(cuts: list[Found], shape: Shape, size: int) -> bool:
    """Each range ends where the next begins, from the first record to the end, and (in a
    CSV) no quote could have hidden a line end from the pieces' line-by-line cutting."""
    if shape.kind == "csv" and any(c.scan.quotes for c in cuts):
        return False
    full = [c for c in cuts if c.scan.next_start > c.start]
    if not full:
        return size <= shape.start or all(c.scan.next_start >= size for c in cuts)
    return (full[0].start == shape.start and full[-1].scan.next_start == size
            and all(a.scan.next_start == b.start for a, b in zip(full, full[1:], strict=False)))


def plan_inputs(inputs: list[Input], executor, chunk_size: int, manifest: dict | None = None
                ) -> int:
    """Found every input into ranges (the planning tasks run on the executor's workers) and
    number the parts and rows. A range size recorded in `manifest` for the same input and
    shape is kept, and so is the rows small inputs share a part up to (`shared_rows`), so
    that a rerun plans the same ranges and parts whatever its chunk size; returns the
    latter."""
    recorded = {}
    definition = (manifest or {}).get("definition") or {}
    layouts = definition.get("layouts") or []
    for entry in definition.get("inputs", []):
        layout = entry.get("layout")
        if isinstance(layout, int) and 0 <= layout < len(layouts):
            entry = {**entry, "layout": layouts[layout]}
        recorded[entry.get("path")] = entry
    tasks, owners = [], []
    for inp in inputs:
        inp.size = inp.location.size()
        earlier = recorded.get(inp.source)
        if earlier and earlier.get("layout") == inp.shape.describe() \
                and earlier.get("range_bytes"):
            inp.range_bytes = int(earlier["range_bytes"])
        else:  # a Parquet file's ranges are counted in rows: its row groups
            inp.range_bytes = chunk_size if inp.parquet else range_bytes(
                inp.head, inp.shape, chunk_size)
        if inp.parquet:  # row groups, counted by the footer: only their bytes to hash
            spans = parquet.row_group_ranges(inp.location, inp.range_bytes)
            tasks.extend(HashRange(inp.index, inp.location, a, b, n, skip)
                         for a, b, n, skip in spans)
            owners.extend((inp, k) for k in range(len(spans)))
        elif inp.shape.quoted:
            tasks.append(ScanInput(inp.index, inp.location, inp.shape, inp.range_bytes))
            owners.append((inp, None))
        else:
            these = nominal_ranges(inp, inp.size)
            tasks.extend(these)
            owners.extend((inp, k) for k in range(len(these)))
    results = run_planning(executor, tasks) if tasks else []
    cuts: dict[int, list] = {i.index: [] for i in inputs}
    for (inp, k), result in zip(owners, results, strict=True):
        if k is None:
            cuts[inp.index] = result
        else:
            cuts[inp.index].append(result)
    redo = [inp for inp in inputs if not inp.shape.quoted and not inp.parquet
            and not consistent(cuts[inp.index], inp.shape, inp.size)]
    if redo:  # quotes seen: only a reading from the start can tell where records end
        swept = schedule.run_all(executor, [ScanInput(i.index, i.location, i.shape, i.range_bytes)
                                            for i in redo])
        for inp, result in zip(redo, swept, strict=True):
            cuts[inp.index] = result
    found = [ranges_from_found(inp, cuts[inp.index], 0) for inp in inputs]
    # The rows small inputs share a part up to: as recorded, so a rerun's parts are the same
    shared = int((manifest or {}).get("shared_rows") or chunk_size)
    numbered = share_parts([(_columns(inp), rs) for inp, rs in zip(inputs, found, strict=True)],
                           shared)
    k = 0
    for inp, rs in zip(inputs, found, strict=True):
        inp.ranges, k = numbered[k:k + len(rs)], k + len(rs)
    return shared


def _columns(inp: Input) -> tuple | None:
    """What an input's ranges must have in common to share a part: the columns they read
    into (None: a Parquet file's, whose types are its own, shares none)."""
    if inp.parquet:
        return None
    shape = inp.shape
    return ("puzzle", *[c for _, c in shape.carried], shape.solution_field is not None)
