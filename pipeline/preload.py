"""Imported once by the local pool's forkserver, so that every worker forks warm.

It loads numpy, numba, pyarrow and every compiled kernel of a task from numba's cache,
and measures the cycle counter's rate, but starts no thread: forking a process with
threads is what this module exists to avoid (see executors.py).
"""

from pipeline import worker

worker.warm_up()
