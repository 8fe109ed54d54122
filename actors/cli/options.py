"""Where the ``clew`` CLI works: resolving ``--home`` / ``--project``, opening the runtime
and a session (refusing before anything is created or written), and run ids as typed.

The read commands (:data:`READ_COMMANDS`) open the home read-only: they work on a
read-only mount or a home they may not write, and cannot change it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import msgspec
import typer

from actors.cli import ids
from actors.cli.output import clipped
from actors.cli.store_option import chosen_store
from actors.errors import UsageError
from eventlog.errors import StoreError
from eventlog.ids import validate_session_id
from eventlog.locations import home_from_env, is_postgres_url

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime
    from actors.runtime.status import StatusReader
    from eventlog.records import SessionRow

#: The largest seq or count a store can hold (SQLite's and PostgreSQL's signed 64-bit
#: integers): the bound of every ``--since`` / ``--limit``, so a bigger one is a usage
#: error, not an overflow deep in the store.
MAX_COUNT: Final = 2**63 - 1

#: The commands that only read a home: they open it read-only.
READ_COMMANDS: Final = frozenset(
    {
        "sessions",
        "show",
        "timeline",
        "tasks",
        "export",
        "verify",
        "replay",
        "tail",
        "pending",
        "usage",
        "calls",
        "call",
    }
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
SessionArg = Annotated[
    str,
    typer.Argument(
        metavar="SESSION",
        help="a session id, a unique prefix of one, or 'last' (the newest)",
        autocompletion=ids.complete_session,
    ),
]
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
ModelOverride = Annotated[
    str | None,
    typer.Option("--model", metavar="SPEC", help="override the model the session was created with"),
]
BaseUrl = Annotated[str | None, typer.Option("--base-url", metavar="URL")]


class Where(msgspec.Struct, frozen=True):
    home: Path
    project: Path
    #: Open the home read-only (the running command is one of :data:`READ_COMMANDS`).
    read_only: bool = False
    #: A ``postgresql://`` store (``--store`` / ``$CLEW_STORE``; actors/cli/store_option.py).
    store: str | None = None


#: ``--home`` / ``--project`` given before the command (``clew --home H sessions``), and
#: the running ``command``; reset by every ``main`` call. After the command they win.
BEFORE_COMMAND: dict[str, str | None] = {}


def where_from(home: str | None, project: str | None) -> Where:
    """Resolve ``--home`` / ``--project`` and check that both can be used.

    Raises:
        UsageError: ``--project`` names no directory (a typo must not create one), the
            home is a file, or the home is damaged (see :func:`check_home`).
    """
    chosen_home = home or BEFORE_COMMAND.get("home")
    chosen_project = project or BEFORE_COMMAND.get("project")
    chosen = Path(chosen_project).expanduser() if chosen_project else Path.cwd()
    try:
        is_dir = chosen.is_dir()
    except OSError:  # a name too long, a loop of links: no directory either
        is_dir = False
    if not is_dir:
        raise UsageError(f"--project {clipped(chosen)} is not a directory")
    store = chosen_store(BEFORE_COMMAND.get("store"), chosen_home, os.environ)
    if chosen_home and is_postgres_url(chosen_home):
        chosen_home = None
    where = Where(
        home=home_from_env(os.environ, chosen_home),
        project=chosen,
        read_only=BEFORE_COMMAND.get("command") in READ_COMMANDS,
        store=store,
    )
    check_home(where)
    return where


def check_home(where: Where) -> None:
    """Refuse a home that is not a directory, or whose database was emptied.

    A zero-byte ``sessions.sqlite`` would open as a new, empty database — every session
    silently gone. clew never leaves one behind (opening a store writes its schema at
    once, and a fresh database in WAL mode keeps its pages in ``-wal`` until the first
    checkpoint), so a zero-byte file beside session locks or Task WALs means the
    database was truncated or replaced.

    Raises:
        UsageError: naming the home and what was found.
    """
    home = where.home
    try:
        if not _size(home, directory=True):
            return  # no home yet: a run creates it, a read says it holds no sessions
        db_size = _size(home / "sessions.sqlite")
        wal_size = _size(home / "sessions.sqlite-wal")
    except OSError as e:
        why = e.strerror or str(e)
        raise UsageError(f"cannot open the clew home {clipped(home)}: {why}") from e
    if db_size != 0 or wal_size:
        return
    from eventlog.taskwal import WAL_SUFFIX  # noqa: PLC0415 - a damaged home only

    locks = sum(1 for _ in (home / "locks").glob("*.lock"))
    tasks_dir = where.project / ".clew" / "tasks"
    wals = sum(1 for p in tasks_dir.glob(f"*/*{WAL_SUFFIX}")) if tasks_dir.is_dir() else 0
    if locks or wals:
        raise UsageError(
            f"the clew home {clipped(home)} is damaged: sessions.sqlite is empty (0 bytes) although"
            f" {locks} session lock(s) and {wals} Task WAL(s) show sessions were recorded;"
            " restore it from a backup, or move it away to start an empty home"
        )


def _size(path: Path, *, directory: bool = False) -> int | None:
    """Return the size of the file at ``path`` (for a directory: 1), None if it is absent.

    Raises:
        OSError: it cannot be looked at, or is a file where a directory is wanted (or the
            other way round).
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode) != directory:
        kind = "a directory" if directory else "a file"
        raise OSError(errno.ENOTDIR if directory else errno.EISDIR, f"not {kind}", str(path))
    return 1 if directory else st.st_size


def open_runtime(where: Where) -> Runtime:
    """Open the runtime on the home (read-only when ``where.read_only``).

    Raises:
        UsageError: a fault variable is not a positive whole number, or the home cannot be
            made or opened (a file in the way, no permission).
    """
    # Imported here: the runtime loads when a command opens the home, not when ``clew
    # --version`` or ``clew --help`` imports the options.
    from actors.runtime.runtime import Runtime  # noqa: PLC0415 - see above

    with _opening(where):
        return Runtime.from_env(
            os.environ,
            home=str(where.home),
            project_dir=str(where.project),
            read_only=where.read_only,
            store=where.store,
        )


def open_reader(where: Where) -> StatusReader:
    """Open the home read-only to list its sessions and read them, without a runtime
    (:class:`~actors.runtime.status.StatusReader`: no writer, no actors, no run imports).

    Raises:
        UsageError: the home cannot be opened (as :func:`open_runtime`).
    """
    from actors.runtime.status import StatusReader  # noqa: PLC0415 - as Runtime above

    with _opening(where):
        return StatusReader(where.home, where.store)


@contextmanager
def _opening(where: Where) -> Iterator[None]:
    """Turn the failure to open the home (or store) of ``where`` into a ``UsageError``."""
    try:
        yield
    except OSError as e:
        why = e.strerror or str(e)
        if e.filename is not None and str(e.filename) != str(where.home):
            why += f": {e.filename}"
        raise UsageError(f"cannot open the clew home {where.home}: {why}") from e
    except StoreError as e:
        if where.store is not None:
            raise UsageError(f"cannot open the store: {e}") from e
        raise UsageError(f"cannot open the clew home {where.home}: {e}") from e


def home_exists(where: Where) -> bool:
    """True when the home holds a store (a PostgreSQL store: always, it says itself)."""
    return where.store is not None or (where.home / "sessions.sqlite").exists()


@contextmanager
def open_session(where: Where, session_id: str) -> Iterator[tuple[Runtime, SessionRow]]:
    """Open the home and read the session ``session_id`` names (an id, a unique prefix,
    ``last``: see :mod:`actors.cli.ids`); refuse before anything is created or written."""
    sid = validate_session_id(session_id)
    if not home_exists(where):
        raise UsageError(f"unknown session {sid}: {where.home} holds no sessions")
    with open_runtime(where) as rt:
        yield rt, rt.store.read_session(ids.resolve_session(rt.store, sid))


@contextmanager
def read_session(
    home: str | None, project: str | None, session_id: str
) -> Iterator[tuple[StatusReader, SessionRow]]:
    """:func:`session_from` for a command that only reads the session's tables (``clew
    show``): the home opened by :func:`open_reader`, not a runtime."""
    where = where_from(home, project)
    sid = validate_session_id(session_id)
    if not home_exists(where):
        raise UsageError(f"unknown session {sid}: {where.home} holds no sessions")
    with open_reader(where) as reader:
        yield reader, reader.store.read_session(ids.resolve_session(reader.store, sid))


@contextmanager
def session_from(
    home: str | None, project: str | None, session_id: str
) -> Iterator[tuple[Runtime, SessionRow]]:
    """:func:`open_session` on the home ``--home`` and ``--project`` name (:func:`where_from`)."""
    with open_session(where_from(home, project), session_id) as opened:
        yield opened
