"""The `pipeline` command (and `python -m pipeline`).

Ctrl-C and SIGTERM are handled before anything else is imported, so that a stop at any
moment of start-up ends with its exit code and its one line, not a traceback or a silent
death. (Only the interpreter's own start, before this module runs, is out of reach.)

For `pipeline run` the local pool's forkserver is started here too: its second of imports
(numba, the compiled kernels) then overlaps the reading of the command line and of the
inputs' first bytes. A run that turns out to use Dask leaves it unused; it ends with us.
"""

import os
import signal
import sys


def main() -> None:
    from pipeline.errors import Interrupted, Stopped, stop_signal

    signal.signal(signal.SIGINT, stop_signal)
    signal.signal(signal.SIGTERM, stop_signal)
    try:
        if _local_run(sys.argv[1:]):
            from pipeline.executors import start_forkserver

            start_forkserver()
        from pipeline import cli
    except (KeyboardInterrupt, Interrupted) as stop:
        exc = Stopped(getattr(stop, "signum", signal.SIGINT))
        print(f"pipeline: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    cli.main()


def _local_run(args: list[str]) -> bool:
    """Whether the command line asks for a run on the local pool (as far as it says)."""
    return (args[:1] == ["run"] and "dask" not in args and "--help" not in args
            and os.environ.get("PIPELINE_EXECUTOR", "local") == "local")


if __name__ == "__main__":
    main()
