"""The exceptions the pipeline raises on purpose: the whole tree, in one place.

    PipelineError              base: a failure with a one-line message for the user
    ├── UsageError             a bad option, a bad config value
    ├── InputError             an input that cannot be used: missing, a folder, not text, ...
    ├── OutputBusy             another run holds the output folder
    ├── DefinitionMismatch     the output folder holds a different run (use --overwrite)
    ├── TargetNotReached       `generate` could not make enough puzzles of the kind asked
    ├── RunFailed              a failure the run could not recover from: a write error, ...
    │   └── InputChanged       an input's bytes are no longer those the plan hashed
    └── Stopped                Ctrl-C or SIGTERM (`signum`); the folder is left resumable

    WorkerLost                 the process running a task died: the scheduler retries it

    Interrupted                a BaseException, raised by the Ctrl-C and SIGTERM handler
                               (execute.lifecycle) so that no `except Exception` on the way
                               mistakes it for a failure; a run turns it into Stopped once
                               it has cleaned up

    PuzzleError                the classic API's complaint about one board
    ├── MalformedPuzzle
    ├── InvalidPuzzle
    └── UnsolvablePuzzle

Nothing here knows about exit codes or terminals: the command line maps each exception
to its exit code and its line (cli/exits.py), so that `pipeline.run()` and the other
functions can be called from Python and their failures caught by type.
"""

from __future__ import annotations

import signal


class PipelineError(Exception):
    """A failure with a one-line message for the user."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else type(self).__name__


class UsageError(PipelineError):
    """A bad option or config value."""


class InputError(PipelineError):
    """An input that cannot be used."""


class OutputBusy(PipelineError):
    """Another run holds the output folder."""


class DefinitionMismatch(PipelineError):
    """The output folder holds a different run."""


class TargetNotReached(PipelineError):
    """The requested grade or clue count did not come up often enough."""


class RunFailed(PipelineError):
    """A failure the run could not recover from (its folder stays resumable)."""


class InputChanged(RunFailed):
    """An input's bytes are no longer those the plan hashed."""

    @classmethod
    def at(cls, source: str, start: int, end: int) -> InputChanged:
        """The failure of bytes [start, end) of `source`, with the advice that works (the
        folder now holds a run of other bytes: a plain rerun would be refused)."""
        return cls(f"{source} changed while the run read it (bytes {start:,}..{end:,} are "
                   "not what was planned); to start over on what it holds now, run the same "
                   "command with --overwrite")


class Stopped(PipelineError):
    """Ctrl-C or SIGTERM stopped the command."""

    def __init__(self, signum: int, resumable: bool = True):
        name = signal.Signals(signum).name
        super().__init__(f"stopped by {name}" + ("; run the same command again to resume"
                                                 if resumable else ""))
        self.signum = signum
        self.resumable = resumable


class WorkerLost(Exception):
    """The process running a task died (killed, crashed, out of memory); `storage`: killed
    for a silence while it read or wrote, which is no fault of its rows."""

    def __init__(self, message: str = "", storage: bool = False):
        super().__init__(message)
        self.storage = storage

    def __reduce__(self):
        return type(self), (str(self), self.storage)


class Interrupted(BaseException):
    """A stop signal arrived (the SIGTERM counterpart of KeyboardInterrupt)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class PuzzleError(ValueError):
    """A board the classic API cannot work with."""


class MalformedPuzzle(PuzzleError):
    pass


class InvalidPuzzle(PuzzleError):
    pass


class UnsolvablePuzzle(PuzzleError):
    pass
