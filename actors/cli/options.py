"""Where the ``clew`` CLI works: resolving ``--home`` / ``--project``, opening the runtime
and a session (refusing before anything is created or written), and run ids as typed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from actors.errors import UsageError
from actors.runtime.runtime import Runtime, home_from_env
from eventlog.errors import StoreError
from eventlog.ids import qualified, validate_session_id
from eventlog.records import SessionRow

Home = Annotated[
    str | None,
    typer.Option(
        "--home",
        metavar="DIR",
        help="clew home (default: $CLEW_HOME, else ~/.clew)",
        show_default=False,
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
SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        metavar="SESSION",
        help="continue this session (default: a new one)",
        show_default=False,
    ),
]
TeamOption = Annotated[
    str | None,
    typer.Option(
        "--team",
        metavar="FILE",
        help="a team file (TOML): instructions, roles, tools, models",
        show_default=False,
    ),
]


class Where(msgspec.Struct, frozen=True):
    home: Path
    project: Path


#: ``--home`` / ``--project`` given before the command (``clew --home H sessions``);
#: reset by every ``main`` call. After the command they win.
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
    return Where(home=home_from_env(os.environ, chosen_home), project=chosen)


def open_runtime(where: Where) -> Runtime:
    """Open the runtime on the home.

    Raises:
        UsageError: a fault variable is not a positive whole number, or the home cannot be
            made or opened (a file in the way, no permission).
    """
    try:
        return Runtime.from_env(os.environ, home=str(where.home), project_dir=str(where.project))
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
