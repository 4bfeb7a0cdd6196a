"""cli: the `pipeline` command line.

    app         the typer app: every command and option
    progress    the progress bar and the table at the end of a run
    exits       the one map from exceptions to exit codes, and how a failure is said

May import: every layer.
"""
