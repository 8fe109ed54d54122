"""Plumbing of the ``clew`` CLI: where the home and project are, opening them, and the
one-line error and output conventions (every refusal is one ``error:`` line, exit 2).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import msgspec
import typer

from actors.cli_support import CliError, default_home
from actors.runtime import Runtime
from eventlog.errors import ClewError, StoreError
from eventlog.ids import validate_session_id
from eventlog.records import SessionRow


class Where(msgspec.Struct, frozen=True):
    home: Path
    project: Path


#: ``--home`` / ``--project`` given before the command (``clew --home H sessions``);
#: reset by every ``main`` call. After the command they win.
BEFORE_COMMAND: dict[str, str | None] = {}


def where_from(home: str | None, project: str | None) -> Where:
    """Resolve ``--home`` / ``--project``.

    Raises:
        CliError: ``--project`` names no directory (a typo must not create one).
    """
    chosen_home = home or BEFORE_COMMAND.get("home")
    chosen_project = project or BEFORE_COMMAND.get("project")
    chosen = Path(chosen_project).expanduser() if chosen_project else Path.cwd()
    if not chosen.is_dir():
        raise CliError(f"--project {chosen} is not a directory")
    return Where(home=default_home(os.environ, chosen_home), project=chosen)


def open_runtime(where: Where) -> Runtime:
    """Open the runtime on the home.

    Raises:
        CliError: a fault variable is not a positive whole number, or the home cannot be
            made or opened (a file in the way, no permission).
    """
    try:
        return Runtime.from_env(os.environ, home=str(where.home), project_dir=str(where.project))
    except OSError as e:
        why = e.strerror or str(e)
        if e.filename is not None and str(e.filename) != str(where.home):
            why += f": {e.filename}"
        raise CliError(f"cannot open the clew home {where.home}: {why}") from e
    except ClewError as e:
        if isinstance(e, StoreError):
            raise CliError(f"cannot open the clew home {where.home}: {e}") from e
        raise CliError(str(e)) from e


def home_exists(where: Where) -> bool:
    return (where.home / "sessions.sqlite").exists()


@contextmanager
def open_session(where: Where, session_id: str) -> Iterator[tuple[Runtime, SessionRow]]:
    """Open the home and read the session; refuse before anything is created or written."""
    sid = validate_session_id(session_id)
    if not home_exists(where):
        raise CliError(f"unknown session {sid}: {where.home} holds no sessions")
    rt = open_runtime(where)
    try:
        yield rt, rt.store.read_session(sid)
    finally:
        rt.close()


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def exit_with(code: int) -> None:
    if code:
        raise typer.Exit(code)


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def usage_error(e: Exception) -> int | None:
    """Report a typer/click usage error (bad flag, missing argument) in one line.

    Duck-typed: typer vendors its own copy of click, so the classes depend on the version.
    """
    format_message = getattr(e, "format_message", None)
    code = getattr(e, "exit_code", None)
    if not callable(format_message) or not isinstance(code, int):
        return None
    ctx = getattr(e, "ctx", None)
    if type(e).__name__ == "NoArgsIsHelpError":
        return 2  # typer has already printed the help
    hint = f"; see {ctx.command_path} --help" if ctx is not None and code == 2 else ""
    print(f"error: {one_line(format_message()).rstrip('.')}{hint}", file=sys.stderr)
    return code


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """Stop at once on Ctrl-C: one line on stderr, exit 130.

    A ``KeyboardInterrupt`` does not stop a run: the runtime's actors finish it before the
    main thread can unwind (measured: a Ctrl-C early in ``demo --slow 1000`` returned ~5 s
    later, after the whole run, with no message). Exiting at once is safe by design: every
    committed event is durable, and a session killed mid-run is flagged interrupted and
    finished by ``clew resume`` (the SIGKILL crash tests pin this).
    """
    with suppress(OSError, ValueError):  # a closed or broken stdout must not stop the exit
        sys.stdout.flush()
    os.write(2, b"error: interrupted; a session left mid-run finishes with: clew resume SESSION\n")
    os._exit(130)
