"""Imported first by the local pool's forkserver: how it and the workers it forks, before
they become workers, take the run's going away.

The forkserver and a worker on its way up share the run's stderr. A run that leaves (a
stop, an exit, kill -9) while a worker start is under way cuts that start short: the
forkserver reads a request with no file descriptors in it, or the new process finds its
start data (the pickled worker) ended early. Python would print a traceback for either on
the run's stderr, after the run's own last line. Neither is news: the run that asked for
the worker is gone, or has said itself why it stopped. So they end quietly; any other
exception in these processes is printed as usual.
"""

import pickle
import sys

_CUT_SHORT = (EOFError, pickle.UnpicklingError)  # what reading a request cut short raises


def _quiet_if_the_run_left(kind, value, tb) -> None:
    """sys.excepthook: nothing for a start request cut short, the usual report otherwise."""
    if issubclass(kind, _CUT_SHORT) and _in_the_forkserver(tb):
        return
    sys.__excepthook__(kind, value, tb)


def _in_the_forkserver(tb) -> bool:
    """Whether the traceback runs through multiprocessing's forkserver (which reads the
    requests and starts the new processes) rather than through a worker of ours."""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith("multiprocessing/forkserver.py"):
            return True
        tb = tb.tb_next
    return False


sys.excepthook = _quiet_if_the_run_left
