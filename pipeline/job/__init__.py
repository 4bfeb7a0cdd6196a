"""job."""

from pipeline.execute.base import Runner

# What every worker process of a run does, local or on Dask (the module is job/worker.py).
RUNNER = Runner(module="pipeline.job.worker", preload="pipeline.job.preload")
