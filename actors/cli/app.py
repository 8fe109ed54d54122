"""The ``clew`` typer application and its table of commands, each imported when it runs.

Names, flags, exit codes and JSON shapes are a contract, documented in ``docs/cli.md``.

Each command lives in a module under ``actors/cli/`` that registers it on :data:`app`
(``@app.command()``) and is listed in :data:`COMMANDS` with the module and its help line.
Only the command that runs is imported: ``clew --version`` and ``clew --help`` import
no command module, ``clew sessions`` only ``read_commands`` (which loads no orchestration
and no provider), so the CLI starts in a few times the interpreter's own start
(``benchmarks/bench_cli.py``; ``tests/actors/cli/test_startup_imports.py`` keeps it so).
The help page lists the commands from the table's help lines, which a test keeps equal to
the first paragraph of each command's docstring.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer
import typer.core
import typer.main

from actors.cli.help_layout import ClewGroup, help_order, placed
from actors.cli.logs import LogFormatOption, LogLevelOption, configure_logging
from actors.cli.options import BEFORE_COMMAND, Home, Project
from actors.cli.plain_values import take_plain_values

if TYPE_CHECKING:
    # typer carries its own copy of click (typer._click), not the click package.
    from typer._click import Command as ClickCommand
    from typer._click import Context, HelpFormatter


class Command(NamedTuple):
    """One ``clew`` command: its name, the module under ``actors/cli`` that registers it,
    and its line on the help page (the first paragraph of its docstring)."""

    name: str
    module: str
    help: str


#: Every command, in the order ``clew --help`` lists them. A new command: its module
#: registers it with ``@app.command()``; add its line here.
COMMANDS: tuple[Command, ...] = (
    Command(
        "replay",
        "check_commands",
        "Re-execute a session (or --all) against its recording: exit 0 identical, 1 diverged.",
    ),
    Command(
        "verify",
        "check_commands",
        "Rebuild projections from events, compare with the tables, replay every Task WAL.",
    ),
    Command(
        "copy",
        "copy_command",
        "Copy sessions exactly between stores: a clew home or a postgresql:// URL.",
    ),
    Command(
        "delete",
        "delete_command",
        "Delete SESSION for good: its events, artifacts, Task WALs and locks (audited).",
    ),
    Command(
        "usage",
        "usage_command",
        "Show the session's token usage by model, role and phase (and cost, with prices).",
    ),
    Command(
        "fork",
        "history_commands",
        "Create a session whose history is SESSION's path up to a node (its active one).",
    ),
    Command(
        "rerun",
        "history_commands",
        "Fork at the start of a run and re-execute it with one thing changed.",
    ),
    Command(
        "diff",
        "history_commands",
        "Align two histories (two sessions, or two nodes of one) and show where they part.",
    ),
    Command(
        "pending",
        "hitl_commands",
        "List what waiting sessions wait for: tool calls to approve, questions to answer.",
    ),
    Command(
        "approve",
        "hitl_commands",
        "Approve a tool call waiting in SESSION (optionally with edited arguments).",
    ),
    Command(
        "deny",
        "hitl_commands",
        "Deny a tool call waiting in SESSION: the model gets REASON as its error result.",
    ),
    Command(
        "answer",
        "hitl_commands",
        "Answer the clarifying question SESSION waits on; then clew resume continues it.",
    ),
    Command(
        "cancel",
        "live_commands",
        "Cancel the session's run: it stops within a second, recorded as cancelled.",
    ),
    Command(
        "sessions",
        "read_commands",
        "List the sessions of the home (those the filters select).",
    ),
    Command(
        "show",
        "read_commands",
        "Show the node tree: chains flat, runs folded, the active path and node visible.",
    ),
    Command(
        "timeline",
        "read_commands",
        "List the session's events in seq order (paged on a terminal).",
    ),
    Command(
        "tasks",
        "read_commands",
        "Show the session's task DAG and the status of its Task WAL (read-only).",
    ),
    Command(
        "switch-node",
        "read_commands",
        "Make NODE the active node; the next run branches from there. Nothing is deleted.",
    ),
    Command(
        "export",
        "read_commands",
        "Print the session's events as JSON lines, by seq (always JSON: no --json"
        " needed); ``--bundle FILE``: write the session as one verified, importable"
        " file instead.",
    ),
    Command(
        "demo",
        "run_commands",
        "Run the built-in scripted scenario, show its tree and DAG, and replay-check it.",
    ),
    Command(
        "run",
        "run_commands",
        "Run PROMPT with a model chain (and a team), in a new session or a given one.",
    ),
    Command(
        "resume",
        "run_commands",
        "Finish an interrupted session: replay it to the end of its log, then go on live.",
    ),
    Command(
        "submit",
        "serve_commands",
        "Queue PROMPT for a `clew serve` process; print the queued run's id.",
    ),
    Command(
        "queue",
        "serve_commands",
        "List the queued runs: id, status, outcome, attempts, session, owner.",
    ),
    Command(
        "serve",
        "serve_commands",
        "Take queued runs and resume the runs of dead peers until SIGTERM or Ctrl-C.",
    ),
    Command(
        "retry",
        "session_commands",
        "Retry SESSION's failed last run: a new attempt answering the same user message.",
    ),
    Command(
        "archive",
        "session_commands",
        "Archive SESSION: it stays readable and refuses every write from now on.",
    ),
    Command(
        "tail",
        "tail",
        "Print the session's events, one line each; with --follow, as they land.",
    ),
    Command(
        "ui",
        "ui_command",
        "Serve the web inspector: sessions, node tree, timeline, task DAG, usage, actions.",
    ),
    Command(
        "import",
        "bundle_commands",
        "Load a session bundle (clew export SESSION --bundle FILE) into this home or"
        " store, verified. An identical session already there is left alone; an"
        " altered bundle, or a different session of the same id, is refused (exit 2).",
    ),
    Command(
        "rerecord",
        "rerecord_command",
        "Re-record BUNDLE with today's team: its last run re-executed, unchanged"
        " model calls served from the recording, changed ones asked of --model; shows"
        " the diff, then writes.",
    ),
    Command(
        "redrive",
        "redrive_command",
        "Re-drive the sessions the filters select (failed: retried with the answers"
        " it got served; interrupted: resumed). --dry-run prints per session what"
        " would be paid again and which side effects would not run again. Exit 1 if a"
        " session failed again.",
    ),
    Command(
        "calls",
        "calls_command",
        "List the session's model calls: who asked, the model, tokens, latency, cost.",
    ),
    Command(
        "call",
        "calls_command",
        "Show one model call whole: the request as sent, the reply, usage, cost, latency.",
    ),
)
_BY_NAME = {command.name: command for command in COMMANDS}


class _LazyGroup(ClewGroup):
    """The ``clew`` group: imports a command's module when the command is asked for; its
    help groups the commands (:class:`~actors.cli.help_layout.ClewGroup`)."""

    #: True while the help page is written: it shows each command's line from the table.
    _listing = False

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        take_plain_values(self.get_params(ctx))  # the root's: --home, --store, --help …
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Context) -> list[str]:
        return help_order([*_BY_NAME, *(name for name in self.commands if name not in _BY_NAME)])

    def get_command(self, ctx: Context, cmd_name: str) -> ClickCommand | None:
        loaded = self.commands.get(cmd_name)
        command = _BY_NAME.get(cmd_name)
        if loaded is not None or command is None:
            return placed(loaded, cmd_name, ctx)
        if self._listing:  # the help page needs the name and the line, not the command
            return placed(typer.core.TyperCommand(cmd_name, help=command.help), cmd_name, ctx)
        importlib.import_module(f"actors.cli.{command.module}")
        for info in app.registered_commands:
            if info.callback is not None and cmd_name == (
                info.name or typer.main.get_command_name(info.callback.__name__)
            ):
                self.commands[cmd_name] = typer.main.get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )
                take_plain_values(self.commands[cmd_name].get_params(ctx))  # --help's too
                return placed(self.commands[cmd_name], cmd_name, ctx)
        raise LookupError(f"actors.cli.{command.module} registers no command {cmd_name!r}")

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _print_version(value: bool) -> None:
    """Print ``clew <version>`` and stop (``--version``, eager: before any command)."""
    if value:
        # Imported here: importlib.metadata costs more than the rest of --version.
        from importlib.metadata import PackageNotFoundError  # noqa: PLC0415 - see above
        from importlib.metadata import version as installed_version  # noqa: PLC0415

        try:
            number = installed_version("clew")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        print(f"clew {number}")
        raise typer.Exit(0)


app = typer.Typer(
    name="clew",
    cls=_LazyGroup,  # lazy, and grouped in --help (actors/cli/help_layout.py)
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
    # Here, before the command, not in main(): --version and --help never configure it.
    configure_logging(level=log_level, fmt=log_format)
