"""The `pipeline` command (and `python -m pipeline`).

Ctrl-C and SIGTERM are handled before anything else is imported, so that a stop at any
moment of start-up ends with its exit code and its one line, not a traceback or a silent
death. (Only the interpreter's own start, before this module runs, is out of reach.)
"""

import signal
import sys


def main() -> None:
    from pipeline.errors import Interrupted, Stopped, stop_signal

    signal.signal(signal.SIGINT, stop_signal)
    signal.signal(signal.SIGTERM, stop_signal)
    try:
        from pipeline import cli
    except (KeyboardInterrupt, Interrupted) as stop:
        exc = Stopped(getattr(stop, "signum", signal.SIGINT))
        print(f"pipeline: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    cli.main()


if __name__ == "__main__":
    main()
