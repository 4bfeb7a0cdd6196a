"""The run in figures: stats.parquet's rows (one per input file, one for the run), and the
counts of parts a resumed run finds already written."""

from __future__ import annotations

import importlib.metadata
import platform
import time

import numpy as np

from pipeline import VERSION
from pipeline.io import timestamps
from pipeline.io.inputs import Input
from pipeline.io.ranges import Range
from pipeline.io.runfolder import RunFolder
from pipeline.job.settings import Settings
from pipeline.job.summary import Summary
from pipeline.job.tally import Tally
from pipeline.sudoku.grade import ser_figures
from pipeline.sudoku.status import NULL, STATUS_NAMES


def count_done(run_folder: RunFolder, parts: dict[int, list[Range]], tallies: list[Tally],
               rated: bool = False) -> None:
    """Count the rows of parts already written ({part: its ranges}) into the tallies, one
    part at a time (a shared part's rows are its ranges', in order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(STATUS_NAMES)
    for part, members in parts.items():
        table = run_folder.read_part(part, ["status", "guesses", "solve_us",
                                            *(["ser"] if rated else [])])
        status = pc.index_in(table.column("status"), value_set=names).to_numpy()
        guesses = pc.fill_null(table.column("guesses"), NULL).to_numpy()
        us = pc.fill_null(table.column("solve_us"), float("nan")).to_numpy()
        ser = (np.rint(pc.fill_null(table.column("ser"), 0.0).to_numpy() * 10).astype(np.int64)
               if rated else None)
        at = 0
        for r in members:
            end = at + r.rows
            tallies[r.input].add(status[at:end], guesses[at:end], us[at:end],
                                 None if ser is None else ser[at:end])
            at = end


def rows(inputs: list[Input], settings: Settings, summary: Summary, tallies: list[Tally],
           total: Tally, worker_seconds: list[float], part_us: list[float], started: float,
           run_id: str, workers: int, engine: list[float],
           classes: tuple[dict[str, int], int] | None) -> list[dict]:
    """One row per input file and one for the whole run."""
    per_part = np.array(part_us, dtype=np.float64)
    common = {
        "run_id": run_id, "workers": workers,
        "chunk_size": settings.chunk_size, "executor": settings.executor,
        "uniqueness_checked": settings.solution_limit >= 2,
        "pipeline_version": VERSION, "python_version": platform.python_version(),
        "numba_version": numba_version(),
        "started_at": timestamps.utc_ms(started), "finished_at": timestamps.utc_ms(time.time()),
    }
    single = len(inputs) == 1
    rows = [{
        "scope": "run", "source": None, "rows": total.rows, **total.count_of(),
        "resumed_rows": summary.resumed_rows,
        "wall_seconds": summary.wall_seconds, "rows_per_second": summary.rows_per_second,
        "worker_seconds": float(sum(worker_seconds)),
        # solve_us is elapsed time: when the engine had less CPU than time, some puzzles'
        # times include a stretch when the OS ran something else on their core.
        "engine_seconds": engine[0], "engine_cpu_seconds": engine[1],
        "distinct_classes": classes[1] if classes else None,
        **total.guesses_figures(), **total.solve_us_figures(),
        **(ser_figures(total.ser) if settings.rate else {}),
        "chunk_solve_us_per_row_p50": float(np.percentile(per_part, 50)) if len(per_part)
        else None,
        "chunk_solve_us_per_row_p99": float(np.percentile(per_part, 99)) if len(per_part)
        else None,
        **common,
    }]
    for inp, tally, seconds in zip(inputs, tallies, worker_seconds, strict=True):
        rows.append({
            "scope": "file", "source": inp.source, "rows": tally.rows, **tally.count_of(),
            "resumed_rows": None,
            # A file's own wall time is known only when it is the run's only file.
            "wall_seconds": summary.wall_seconds if single else None,
            "rows_per_second": summary.rows_per_second if single else None,
            "worker_seconds": seconds, "engine_seconds": None, "engine_cpu_seconds": None,
            "distinct_classes": classes[0].get(inp.source, 0) if classes else None,
            **tally.guesses_figures(), **tally.solve_us_figures(),
            **(ser_figures(tally.ser) if settings.rate else {}),
            "chunk_solve_us_per_row_p50": None, "chunk_solve_us_per_row_p99": None,
            **common,
        })
    return rows


_NUMBA_VERSION: list[str] = []


def numba_version() -> str:
    """The installed numba's version (recorded even where the compiled module is used)."""
    if not _NUMBA_VERSION:
        _NUMBA_VERSION.append(importlib.metadata.version("numba"))
    return _NUMBA_VERSION[0]


def prepare() -> None:
    """Import and read now what the stats will need (run in a thread while workers solve)."""
    import numpy.ma  # noqa: F401  (np.percentile's first call imports it)
    import pyarrow.parquet  # noqa: F401

    numba_version()
