"""The ``clew`` typer application; the command modules register on it.

Names, flags, exit codes and JSON shapes are a contract, documented in ``docs/cli.md``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Annotated

import typer

from actors.cli.logs import LogFormatOption, LogLevelOption, configure_logging
from actors.cli.options import BEFORE_COMMAND, Home, Project


def _print_version(value: bool) -> None:
    """Print ``clew <version>`` and stop (``--version``, eager: before any command)."""
    if value:
        try:
            number = installed_version("clew")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        print(f"clew {number}")
        raise typer.Exit(0)


app = typer.Typer(
    name="clew",
    help="clew: an event-sourced actor runtime for LLM agent sessions.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (docs/cli.md)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    home: Home = None,
    project: Project = None,
    _store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="a postgresql:// store (default: $CLEW_STORE); works after the command too",
            show_default=False,
        ),
    ] = None,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """clew: an event-sourced actor runtime for LLM agent sessions.

    --home and --project work before the command or after it; --log-level and
    --log-format before it.
    """
    BEFORE_COMMAND.update(home=home, project=project)
    if log_level is not None or log_format is not None:
        configure_logging(level=log_level, fmt=log_format)
