"""The ``clew`` typer application; the command modules register on it.

Names, flags, exit codes and JSON shapes are a contract, documented in ``docs/cli.md``.
"""

from __future__ import annotations

import typer

from actors.cli.logs import LogFormatOption, LogLevelOption, configure_logging
from actors.cli.options import BEFORE_COMMAND, Home, Project

app = typer.Typer(
    name="clew",
    help="clew: an event-sourced actor runtime for LLM agent sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    home: Home = None,
    project: Project = None,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = None,
) -> None:
    """clew: an event-sourced actor runtime for LLM agent sessions.

    --home and --project work before the command or after it; --log-level and
    --log-format before it.
    """
    BEFORE_COMMAND.update(home=home, project=project)
    if log_level is not None or log_format is not None:
        configure_logging(level=log_level, fmt=log_format)
