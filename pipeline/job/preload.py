"""Imported once by the local pool's forkserver, so that every worker forks warm.

It loads numpy, pyarrow and every compiled kernel of a task (the ahead-of-time module of
compiled.py, else numba and its cache), and measures the cycle counter's rate, but starts
no thread: forking a process with threads is what this module exists to avoid (see
execute/local.py).

When the run ends the forkserver leaves at once: it has nothing to flush, and the
interpreter's orderly shutdown with all those modules takes about 0.3 s, during which it
would still hold the run's standard output and error open (a caller reading them, a pipe
to `tee`, would wait for it).
"""

import atexit
import os

from pipeline.job import worker

worker.warm_up()
atexit.register(os._exit, 0)  # the last registered runs first: nothing after it
