"""``clew copy --from HOME_OR_URL --to HOME_OR_URL [SESSION…]``: move sessions between stores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec
import typer

from actors.cli.app import app
from actors.cli.options import Json, Project
from actors.cli.output import clipped, print_json
from actors.errors import UsageError
from actors.runtime.upkeep import copy_sessions
from eventlog.errors import StoreError
from eventlog.locations import is_postgres_url, open_store


def _location(value: str, flag: str) -> str:
    """A ``postgresql://`` URL as it is; a home directory, expanded (a file is refused)."""
    if is_postgres_url(value):
        return value
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {clipped(path)} is not a clew home directory or a URL")
    return str(path)


def _check_opens(location: str, flag: str, *, read_only: bool) -> None:
    """Refuse (exit 2, as every command refuses a store it cannot open) a store that
    cannot be opened as the copy needs it: a PostgreSQL role without the right to create
    or write clew's tables, a home that is not writable. A failure while copying is
    still exit 1.

    Raises:
        UsageError: naming the flag and the store's own reason (its password hidden).
    """
    try:
        open_store(location, read_only=read_only).close()
    except StoreError as e:
        raise UsageError(f"{flag}: {e}; nothing was copied") from e


@app.command()
def copy(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(metavar="[SESSION]...", help="session ids (default: every session)"),
    ] = None,
    source: Annotated[
        str, typer.Option("--from", metavar="HOME_OR_URL", help="the store to copy from")
    ] = "",
    target: Annotated[
        str, typer.Option("--to", metavar="HOME_OR_URL", help="the store to copy to")
    ] = "",
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Copy sessions exactly between stores: a clew home or a postgresql:// URL.

    Events keep their seq and hash chain; artifacts and Task WALs come along. A session
    already on the target is skipped if identical and refused (exit 2) if not."""
    if not source or not target:
        raise UsageError("clew copy needs --from HOME_OR_URL and --to HOME_OR_URL")
    src, dst = _location(source, "--from"), _location(target, "--to")
    if src == dst:
        raise UsageError("--from and --to name the same store")
    if not is_postgres_url(src) and not (Path(src) / "sessions.sqlite").exists():
        raise UsageError(f"--from {clipped(src)} holds no clew store")
    project_dir = Path(project).expanduser() if project else Path.cwd()
    _check_opens(src, "--from", read_only=True)
    _check_opens(dst, "--to", read_only=False)
    pin = project is not None  # given: the copy's Task WAL files go there
    results = copy_sessions(src, dst, sessions or [], project_dir, pin_project=pin)
    if as_json:
        print_json({"sessions": [msgspec.to_builtins(r) for r in results]})
        return
    for r in results:
        print(
            f"{r.session_id}: {r.outcome} ({r.events} events, {r.artifacts} artifacts,"
            f" {r.task_wal_lines} task WAL lines)"
        )
    print(f"{len(results)} sessions: {sum(r.outcome == 'copied' for r in results)} copied")
