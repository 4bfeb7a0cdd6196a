"""job: `pipeline run`, plan -> (workers: read -> encode -> solve -> check -> write) -> merge.

    settings    every knob of a run, declared once
    run         the run end to end: inputs opened and planned, ranges handed out, merged
    plan        every input cut into ranges; tasks: the messages to workers
    worker      what a worker does with a task; preload: what its forkserver imports
    schedule    tasks kept in flight, retries, the hunt for the row to blame
    tally, stats, summary   counts and histograms, stats.parquet's rows, the outcome
    logs        one log for the parent and every worker (DIR/logs/run.jsonl)
    warehouse   --incremental: one run folder per new input file, and a catalog

May import: execute, io, sudoku, and the foundation.
"""

from pipeline.execute.base import Runner

# What every worker process of a run does, local or on Dask (the module is job/worker.py).
RUNNER = Runner(module="pipeline.job.worker", preload="pipeline.job.preload")
