"""The ``clew`` typer application; the command modules register on it.

Names, flags, exit codes and JSON shapes are a contract, documented in ``docs/cli.md``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Annotated

import typer

from actors.cli.help_layout import ClewGroup
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
    cls=ClewGroup,  # commands grouped in --help (actors/cli/help_layout.py)
    help="clew: an event-sourced actor runtime for LLM agent sessions.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (docs/cli.md)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _json_before_command(ctx: typer.Context) -> None:
    """Let ``clew --json CMD`` mean ``clew CMD --json`` (as ``--home`` may come first):
    the command's ``--json`` defaults to on; a command without ``--json`` refuses it."""
    name = ctx.invoked_subcommand
    get_command = getattr(ctx.command, "get_command", None)  # typer's group: no click.Group
    command = get_command(ctx, name) if name and get_command is not None else None
    if name is None or command is None:
        return
    if not any(p.name == "as_json" for p in command.params):
        raise typer.BadParameter(f"clew {name} has no --json", ctx)
    ctx.default_map = {**(ctx.default_map or {}), name: {"as_json": True}}


@app.callback()
def _root(
    ctx: typer.Context,
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
    as_json: Annotated[
        bool, typer.Option("--json", help="the command prints one JSON document (as its --json)")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """clew: an event-sourced actor runtime for LLM agent sessions.

    --home, --project and --json work before the command or after it; --log-level and
    --log-format before it.
    """
    BEFORE_COMMAND.update(home=home, project=project)
    if as_json:
        _json_before_command(ctx)
    if log_level is not None or log_format is not None:
        configure_logging(level=log_level, fmt=log_format)
