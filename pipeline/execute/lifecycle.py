"""A process's life: stop signals, the forkserver, the parent-death signal, the fast exit.

Everything here touches the process as a whole (its signal handlers, its environment, the
kernel's view of it), so it lives in one place that the command's entry point, the local
pool and the Dask client process share:

* `stop_signal`: the handler of Ctrl-C and SIGTERM. The first stop raises `Interrupted` in
  the main thread; later ones are ignored, so that stopping (closing workers, saying why) is
  not itself interrupted. A stop that lands during an import is raised once it is over.
* `start_forkserver`: the local pool's forkserver, started early with an environment that
  keeps its imports from starting threads, and with Ctrl-C ignored.
* `die_with_parent`: ask the kernel to kill this process when its parent dies, so that no
  worker or client process outlives a run killed with SIGKILL.
* `exit_now`: end the process at once, stdio flushed: once a command has its exit code,
  the interpreter's orderly teardown of every module is time nobody would see.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading

from pipeline.errors import Interrupted

RETRY = 0.01  # seconds after which a stop that came during an import is raised again
_PENDING: list[int] = []  # the signal of a stop put off until an import is over


def stop_signal(signum, frame) -> None:
    """The handler of Ctrl-C and SIGTERM: the first one stops whatever the main thread is
    doing; later ones are ignored, so that stopping (closing workers, saying why) is not
    itself interrupted (a second Ctrl-C used to print a traceback or hang).

    A stop that comes while the main thread is importing a module is raised once the
    import is over (checked every RETRY seconds, by SIGALRM): raised inside an import it
    could be swallowed (Python ignores an exception in importlib's callbacks, and the run
    went on) or changed (one raised in a class's `__set_name__` comes out as a
    RuntimeError, and the run said "internal error")."""
    ignore_stops()
    if _importing(frame):
        _PENDING.append(signum)
        signal.signal(signal.SIGALRM, _stop_later)
        signal.setitimer(signal.ITIMER_REAL, RETRY)
        return
    raise Interrupted(signum)


def handle_stops() -> dict:
    """Install `stop_signal` for SIGINT and SIGTERM; the handlers it replaced."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, stop_signal)
    return previous


def ignore_stops() -> None:
    """Ignore further Ctrl-C and SIGTERM (a stop under way is not interrupted).

    By a handler that does nothing, not SIG_IGN: a signal that lands while a handler is
    being changed is run by Python just after, and finding SIG_IGN in place CPython
    prints a traceback ("Signal 2 ignored due to race condition") after the stop's line."""
    signal.signal(signal.SIGINT, _ignored)
    signal.signal(signal.SIGTERM, _ignored)


def _ignored(_signum, _frame) -> None:
    """A stop while stopping: nothing to do."""


@contextlib.contextmanager
def stops_ignored():
    """Ctrl-C and SIGTERM ignored inside (steps that must all happen once begun, such as an
    output's files replaced one by one), the handlers before restored after. Outside the
    main thread, where no handler can be set, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    ignore_stops()
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop_later(_signum, frame) -> None:
    if not _PENDING:
        return
    if _importing(frame):
        signal.setitimer(signal.ITIMER_REAL, RETRY)
        return
    raise Interrupted(_PENDING.pop())


def _importing(frame) -> bool:
    """Whether `frame` or one of its callers is importlib's."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def die_with_parent(name: bytes) -> None:
    """Ask the kernel for SIGKILL when our parent dies, and name the process (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        libc.prctl(15, name)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def exit_now(code: int) -> None:
    """End the process with `code` at once, stdio flushed (nothing else is torn down)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, a closed stream
            pass
    os._exit(code)


# What the forkserver's environment holds so that its imports start no thread.
FORKSERVER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "JE_ARROW_MALLOC_CONF": "background_thread:false", "POLARS_MAX_THREADS": "1"}


def start_forkserver(preload: str) -> None:
    """Start the forkserver (once per process, without waiting for it) importing the module
    `preload`, with an environment that keeps the libraries it imports from starting threads
    before it forks, and with Ctrl-C blocked; ours is left as it was."""
    from multiprocessing import forkserver

    # forkserved: its excepthook keeps a worker start cut short by the run's exit quiet.
    # The main module too, or every worker would import it again on its way up.
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["pipeline.execute.forkserved", "__main__", preload])
    saved = {k: os.environ.get(k) for k in FORKSERVER_ENV}
    for k, v in FORKSERVER_ENV.items():
        os.environ.setdefault(k, v)
    # A Ctrl-C reaches our whole process group, and the run handles it for all; the
    # forkserver ignores it only once its imports are done (a traceback otherwise). An
    # ignored signal stays ignored through exec, so the forkserver starts with it ignored.
    # Here it is held back meanwhile (blocked, it stays pending), not lost.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
