"""The `pipeline` command (and `python -m pipeline`).

Ctrl-C and SIGTERM are handled before anything else is imported, so that a stop at any
moment of start-up ends with its exit code and its one line, not a traceback or a silent
death. (Only the interpreter's own start, before this module runs, is out of reach; a stop
that comes during an import is raised once the import is over: execute/lifecycle.py.)

For `pipeline run` the local pool's forkserver is started here too: its second of imports
(numba, the compiled kernels) then overlaps the reading of the command line and of the
inputs' first bytes. A run that turns out to use Dask leaves it unused; it ends with us.

Once a command has returned its exit code, and every exit handler has run (ours is
registered first, so it runs last: the loggers are closed, the pool's processes are gone,
threads that wanted joining are joined), the process ends at once. What is left is the
interpreter tearing down its modules and freeing every object one by one: 0.1 s after a
run on the local pool, nearly 0.2 s after one on Dask, for nothing anybody would see.
"""

import atexit
import os
import signal
import sys

_EXIT_CODE: list[int] = []  # the command's exit code, once it has one


def _exit_now() -> None:
    """The last exit handler: end the process with the command's code, stdio flushed."""
    if not _EXIT_CODE:
        return  # not a command's own end (an error escaped it): the usual teardown
    from pipeline.execute.lifecycle import exit_now

    exit_now(_EXIT_CODE[0])


def main() -> None:
    """The process's entry point (console script and `python -m pipeline`): it ends the
    process."""
    atexit.register(_exit_now)  # before anything that registers one: the last to run
    from pipeline.errors import Interrupted
    from pipeline.execute import lifecycle

    lifecycle.handle_stops()
    from pipeline.io.scratch import private_tempdir

    mine = private_tempdir()
    atexit.register(_remove, mine)  # (a run killed with SIGKILL: the next one removes it)
    try:
        try:
            if _local_run(sys.argv[1:]):
                from pipeline.job import RUNNER

                lifecycle.start_forkserver(RUNNER.preload)
            from pipeline.cli import exits

            exits.main()
        except (KeyboardInterrupt, Interrupted) as stop:  # before exits.main handles them
            from pipeline.cli import exits

            exits.stopped(getattr(stop, "signum", signal.SIGINT))
    except SystemExit as done:  # how cli.main always ends
        code = done.code
        _EXIT_CODE.append(code if isinstance(code, int) else 0 if code is None else 1)
        raise


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _local_run(args: list[str]) -> bool:
    """Whether the command line asks for a run on the local pool (as far as it says)."""
    return (args[:1] == ["run"] and "dask" not in args and "--help" not in args
            and os.environ.get("PIPELINE_EXECUTOR", "local") == "local")


if __name__ == "__main__":
    main()
