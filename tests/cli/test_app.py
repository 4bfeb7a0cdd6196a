"""pipeline.cli.app: the conventions of a command-line tool: --version (also through
`python -m pipeline`); --help lists every command and every option of `run` and `solve`,
with choices, metavars, environment variables and shell completion.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from pipeline.cli.app import app


@pytest.mark.slow
def test_version_and_python_dash_m(run_cli):
    from pipeline import __version__

    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"pipeline {__version__}"
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--version"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"pipeline {__version__}"


def test_help_shows_choices_metavars_and_completion(run_cli):
    top = run_cli("--help").stdout
    assert "--install-completion" in top and "--show-completion" in top
    text = " ".join(run_cli("run", "--help").stdout.split())
    for words in ("[local|dask]", "[debug|info|warning|error]", "--input PATH", "--workers N",
                  "--fail-on STATUS,...", "--output DIR", "--config FILE",
                  "env var: PIPELINE_WORKERS", "--limit N"):
        assert words in text, words
    assert "<list" not in text and "TEXT" not in text
    assert "[board|line]" in " ".join(run_cli("solve", "--help").stdout.split())


@pytest.mark.parametrize("cmd", ["run", "solve"])
def test_help_mentions_every_option(run_cli, cmd):
    res = run_cli(cmd, "--help")
    assert res.returncode == 0
    command = typer.main.get_command(app).commands[cmd]
    text = " ".join(res.stdout.split())
    for param in command.params:
        for opt in param.opts + param.secondary_opts:
            if opt.startswith("-"):
                assert opt in text, f"{cmd} --help does not mention {opt}"


def _argument_helps(fn) -> dict[str, str]:
    """The help texts of a command's arguments, as its annotations give them."""
    import typing

    out = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        for info in getattr(hint, "__metadata__", ()):
            if isinstance(info, typer.models.ArgumentInfo) and info.help:
                out[name] = info.help
    return out


def test_help_explains_every_argument(run_cli):
    # click 8.5 gave every parameter a `help` that typer 0.21's arguments lost theirs to
    seen = 0
    for command in app.registered_commands:
        name = command.name or command.callback.__name__
        text = " ".join(run_cli(name, "--help").stdout.split())
        for arg, help_text in _argument_helps(command.callback).items():
            seen += 1
            assert " ".join(help_text.split())[:40] in text, f"{name} --help: {arg}"
    assert seen >= 5  # solve, explain, report, show, dedup, ... take arguments


def test_help_lists_commands(run_cli):
    res = run_cli("--help")
    assert res.returncode == 0
    for name in typer.main.get_command(app).commands:
        assert name in res.stdout


def test_a_mistyped_command_is_suggested_once(run_cli):
    res = run_cli("rn")
    assert res.returncode == 2
    assert len(res.stderr_lines) == 1
    assert res.stderr.count("Did you mean 'run'?") == 1, res.stderr
