"""The exceptions the pipeline raises on purpose, and the exit code each one means.

    PipelineError              base (a click.ClickException): a one-line message and an
                               exit code; the command line shows it as `pipeline: error: ..`
    ├── UsageError (2)         a bad option, a bad config value
    ├── InputError (2)         an input that cannot be used: missing, a folder, not text, ...
    ├── OutputBusy (2)         another run holds the output folder
    ├── DefinitionMismatch (2) the output folder holds a different run (use --overwrite)
    ├── RunFailed (3)          a failure the run could not recover from: a write error, ...
    │   └── InputChanged (3)   an input's bytes are no longer those the plan hashed
    └── Stopped (130/143)      Ctrl-C or SIGTERM; the folder is left resumable

    WorkerLost                 (executors) the process running a task died: retried

    Interrupted                a BaseException, raised by the Ctrl-C and SIGTERM handler so
                               that no `except Exception` on the way mistakes it for a
                               failure; the run turns it into Stopped once it has cleaned up

    PuzzleError                the classic API's complaint about one board
    ├── MalformedPuzzle
    ├── InvalidPuzzle
    └── UnsolvablePuzzle
"""

from __future__ import annotations

import click


class PipelineError(click.ClickException):
    """A failure with a one-line message for the user and an exit code."""

    exit_code = 3

    def show(self, file=None) -> None:
        from pipeline.io.storage import scrub

        click.echo(f"pipeline: error: {scrub(self.format_message())}", err=True)


class UsageError(PipelineError):
    exit_code = 2


class InputError(PipelineError):
    exit_code = 2


class OutputBusy(PipelineError):
    exit_code = 2


class DefinitionMismatch(PipelineError):
    exit_code = 2


class RunFailed(PipelineError):
    exit_code = 3


class InputChanged(RunFailed):
    pass


class WorkerLost(Exception):
    """The process running a task died (killed, crashed, out of memory)."""


class Stopped(PipelineError):
    def __init__(self, signum: int):
        import signal

        name = signal.Signals(signum).name
        super().__init__(f"stopped by {name}; run the same command again to resume")
        self.exit_code = 128 + signum

    def show(self, file=None) -> None:
        """Say why, and leave at once: a second Ctrl-C during the interpreter's own shutdown
        (which puts the default handler back) would otherwise kill us after the line."""
        import os
        import signal
        import sys

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        super().show(file)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(self.exit_code)


class Interrupted(BaseException):
    """A stop signal arrived (the SIGTERM counterpart of KeyboardInterrupt)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


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
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _importing(frame):
        _PENDING.append(signum)
        signal.signal(signal.SIGALRM, _stop_later)
        signal.setitimer(signal.ITIMER_REAL, RETRY)
        return
    raise Interrupted(signum)


def _stop_later(_signum, frame) -> None:
    import signal

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


class PuzzleError(ValueError):
    """A board the classic API cannot work with."""


class MalformedPuzzle(PuzzleError):
    pass


class InvalidPuzzle(PuzzleError):
    pass


class UnsolvablePuzzle(PuzzleError):
    pass
