"""How a command ends: the one map from exceptions to exit codes, and its one line.

    0    finished
    1    finished, but a --fail-on status occurred (the run's Summary says so); a target
         `generate` could not reach (TargetNotReached); `validate`, `solve`: some not valid
    2    a usage error or an unusable input (UsageError, InputError, OutputBusy,
         DefinitionMismatch, and click's own usage errors); --incremental: an input was
         refused, the others done (the Summary says so)
    3    the run failed (RunFailed, InputChanged), an object store failed, or an internal
         error
    128+N  stopped by signal N (Stopped: 130 for Ctrl-C, 143 for SIGTERM); 141 when the
           reader of standard output went away (`| head`), as SIGPIPE ends a process

Every failure is one line on stderr, `pipeline: error: ...`, with the secrets of any URL in
it removed, and never a traceback.
"""

from __future__ import annotations

import logging
import signal
import sys

import click
import typer

from pipeline.errors import (
    DefinitionMismatch,
    InputError,
    Interrupted,
    OutputBusy,
    PipelineError,
    RunFailed,
    Stopped,
    TargetNotReached,
    UsageError,
)
from pipeline.execute import lifecycle
from pipeline.io.storage import scrub, store_failure
from pipeline.io.terminal import visible

EXIT_CODES: dict[type[PipelineError], int] = {
    UsageError: 2, InputError: 2, OutputBusy: 2, DefinitionMismatch: 2,
    TargetNotReached: 1, RunFailed: 3,
}


def exit_code(exc: PipelineError) -> int:
    """The exit code that an exception of ours means."""
    if isinstance(exc, Stopped):
        return 128 + exc.signum
    for kind in type(exc).__mro__:
        if kind in EXIT_CODES:
            return EXIT_CODES[kind]
    return 3


def say(message: str) -> None:
    """A failure's one line on stderr."""
    click.echo(f"pipeline: error: {visible(scrub(message))}", err=True)


def stopped(signum: int, resumable: bool | None = None) -> None:
    """Say that a stop signal ended the command (and, for `run`, that the same command
    resumes it: the other commands start over), and leave at once: a second Ctrl-C during
    the interpreter's own shutdown (which puts the default handler back) would otherwise
    kill us after the line."""
    lifecycle.ignore_stops()
    if resumable is None:
        resumable = sys.argv[1:2] == ["run"]
    exc = Stopped(signum, resumable)
    say(exc.message)
    lifecycle.exit_now(exit_code(exc))


def main() -> None:
    """Run the command line: one line on stderr and an exit code for every failure."""
    from pipeline.cli.app import app

    # A log line that cannot be written (a full disk) is not worth a traceback: the run
    # says what is wrong when its own writes fail.
    logging.raiseExceptions = False
    try:
        code = app(standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `pipeline`: help on stdout
        typer.echo(exc.format_message())
        say("no command given")
        code = 2
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        say(f"{exc.format_message()}{hint}")
        code = 2
    except Stopped as exc:
        stopped(exc.signum, exc.resumable)
    except PipelineError as exc:
        say(exc.message)
        code = exit_code(exc)
    except click.ClickException as exc:  # click's own (a file it could not open, ...)
        exc.show()
        code = exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort, Interrupted) as stop:
        stopped(getattr(stop, "signum", signal.SIGINT))
    except SystemExit:
        # click ends a command whose standard output lost its reader (`| head`) with 1,
        # which here says "some puzzle not solved": 141, as SIGPIPE ends a process
        from click.utils import PacifyFlushWrapper

        if not isinstance(sys.stdout, PacifyFlushWrapper):
            raise
        code = 128 + signal.SIGPIPE
    except Exception as exc:  # the last line of defence: one line, no traceback
        logging.getLogger("pipeline").debug("internal error", exc_info=True)
        said = store_failure(exc)
        if said is not None:  # not ours: an object store refused or did not answer
            say(f"the object store failed: {said}")
            sys.exit(3)
        typer.echo(scrub(f"pipeline: internal error: {type(exc).__name__}: {exc}"), err=True)
        code = 3
    sys.exit(code if isinstance(code, int) else 0)
