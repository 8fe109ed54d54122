"""How ``clew --help`` reads: commands grouped by what a person does with them (as ``gh``
groups its own), in that order, and flags shown without a type.

typer lists commands in the order their modules were imported and shows every flag as
``<bool>``; :class:`ClewGroup` is the app's click group and fixes both when help is drawn.
A command missing from :data:`GROUPS` still works and is listed last, under "other".
"""

from __future__ import annotations

from typing import Final

# typer vendors its own click: its commands and contexts are that copy's classes.
from typer import _click as click
from typer.core import TyperGroup

#: The help's panels in order, each with its commands in order.
GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "Start and continue a run": ("demo", "run", "resume", "retry", "cancel"),
    "Decide for a waiting run": ("pending", "approve", "deny", "answer"),
    "Inspect": (
        "sessions",
        "show",
        "timeline",
        "tail",
        "calls",
        "call",
        "tasks",
        "usage",
        "export",
    ),
    "Check": ("replay", "verify", "rerecord"),
    "History": ("fork", "rerun", "diff", "switch-node", "redrive"),
    "Serve": ("submit", "queue", "serve", "ui"),
    "Keep and move sessions": ("archive", "delete", "copy", "import"),
}
OTHER: Final = "Other"
_PANEL: Final = {name: panel for panel, names in GROUPS.items() for name in names}
_ORDER: Final = {name: i for i, name in enumerate(_PANEL)}


class ClewGroup(TyperGroup):
    """The ``clew`` group: commands in :data:`GROUPS` order and panels; flags untyped."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Return the command names in help order (unknown ones last, as registered)."""
        return help_order(super().list_commands(ctx))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return the command, placed in its help panel, its flags shown without a type."""
        return placed(super().get_command(ctx, cmd_name), cmd_name, ctx)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Draw the group's help with its own flags untyped too."""
        untyped_flags(self, ctx)
        super().format_help(ctx, formatter)


def help_order(names: list[str]) -> list[str]:
    """Return command names in help order (unknown ones last, in the order given)."""
    return sorted(names, key=lambda n: _ORDER.get(n, len(_ORDER)))


def placed(
    command: click.Command | None, cmd_name: str, ctx: click.Context
) -> click.Command | None:
    """Put ``command`` in its help panel and show its flags without a type."""
    if command is not None:
        # The attribute typer's rich help reads to put a command in a panel.
        command.rich_help_panel = _PANEL.get(cmd_name, OTHER)  # type: ignore[attr-defined]
        untyped_flags(command, ctx)
    return command


def untyped_flags(command: click.Command, ctx: click.Context) -> None:
    """Show ``command``'s flags (``--json``, ``--help``…) without typer's ``<bool>``: an
    empty metavar is what typer's help prints in the type column of an option."""
    for param in [*command.params, command.get_help_option(ctx)]:
        # typer's options are click parameters but not click.Option: ask for the flag.
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
