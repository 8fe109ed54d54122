"""Where the ``clew`` CLI works: resolving ``--home`` / ``--project``, opening the runtime
and a session (refusing before anything is created or written), and run ids as typed.

The read commands (:data:`READ_COMMANDS`) open the home read-only: they work on a
read-only mount or a home they may not write, and cannot change it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Final

import msgspec
import typer

from actors.errors import UsageError
from actors.runtime.runtime import Runtime, home_from_env
from eventlog.errors import StoreError
from eventlog.ids import qualified, validate_session_id
from eventlog.records import SessionRow

#: The commands that only read a home: they open it read-only.
READ_COMMANDS: Final = frozenset(
    {"sessions", "show", "timeline", "tasks", "export", "verify", "replay"}
)


def _note_command(ctx: typer.Context, value: str | None) -> str | None:
    """Remember which command runs: ``--home``'s callback, so every command that opens a
    home notes itself (the root's ``--home`` has no parent context and notes nothing)."""
    if ctx.parent is not None:
        BEFORE_COMMAND["command"] = ctx.info_name
    return value


Home = Annotated[
    str | None,
    typer.Option(
        "--home",
        metavar="DIR",
        help="clew home (default: $CLEW_HOME, else ~/.clew)",
        show_default=False,
        callback=_note_command,
    ),
]
Project = Annotated[
    str | None,
    typer.Option(
        "--project",
        metavar="DIR",
        help="project dir holding .clew/tasks (default: cwd)",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="print one JSON document and nothing else")]
SessionArg = Annotated[str, typer.Argument(metavar="SESSION", help="a session id")]


class Where(msgspec.Struct, frozen=True):
    home: Path
    project: Path
    #: Open the home read-only (the running command is one of :data:`READ_COMMANDS`).
    read_only: bool = False


#: ``--home`` / ``--project`` given before the command (``clew --home H sessions``), and
#: the running ``command``; reset by every ``main`` call. After the command they win.
BEFORE_COMMAND: dict[str, str | None] = {}


def where_from(home: str | None, project: str | None) -> Where:
    """Resolve ``--home`` / ``--project``.

    Raises:
        UsageError: ``--project`` names no directory (a typo must not create one).
    """
    chosen_home = home or BEFORE_COMMAND.get("home")
    chosen_project = project or BEFORE_COMMAND.get("project")
    chosen = Path(chosen_project).expanduser() if chosen_project else Path.cwd()
    if not chosen.is_dir():
        raise UsageError(f"--project {chosen} is not a directory")
    return Where(
        home=home_from_env(os.environ, chosen_home),
        project=chosen,
        read_only=BEFORE_COMMAND.get("command") in READ_COMMANDS,
    )


def open_runtime(where: Where) -> Runtime:
    """Open the runtime on the home (read-only when ``where.read_only``).

    Raises:
        UsageError: a fault variable is not a positive whole number, or the home cannot be
            made or opened (a file in the way, no permission).
    """
    try:
        return Runtime.from_env(
            os.environ,
            home=str(where.home),
            project_dir=str(where.project),
            read_only=where.read_only,
        )
    except OSError as e:
        why = e.strerror or str(e)
        if e.filename is not None and str(e.filename) != str(where.home):
            why += f": {e.filename}"
        raise UsageError(f"cannot open the clew home {where.home}: {why}") from e
    except StoreError as e:
        raise UsageError(f"cannot open the clew home {where.home}: {e}") from e


def home_exists(where: Where) -> bool:
    return (where.home / "sessions.sqlite").exists()


@contextmanager
def open_session(where: Where, session_id: str) -> Iterator[tuple[Runtime, SessionRow]]:
    """Open the home and read the session; refuse before anything is created or written."""
    sid = validate_session_id(session_id)
    if not home_exists(where):
        raise UsageError(f"unknown session {sid}: {where.home} holds no sessions")
    rt = open_runtime(where)
    try:
        yield rt, rt.store.read_session(sid)
    finally:
        rt.close()


def resolve_run(rt: Runtime, sid: str, run: str) -> str:
    """Accept a full run id or one relative to the session (``brain:r1``).

    Raises:
        UsageError: the session has no such run.
    """
    known = {r.run_id for r in rt.store.read_runs(sid)}
    for candidate in (run, qualified(sid, run)):
        if candidate in known:
            return candidate
    raise UsageError(f"session {sid} has no run {run!r}")


def resolve_node(rt: Runtime, sid: str, node: str) -> str:
    """Accept a full node id or one relative to the session (``brain:r1:n2``)."""
    known = {n.node_id for n in rt.store.read_nodes(sid)}
    full = qualified(sid, node)
    return full if node not in known and full in known else node
