"""``clew delete``: delete a session for good (docs/cli.md, docs/runtime.md)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from actors.cli.app import app
from actors.cli.options import Home, Json, Project, SessionArg, session_from
from actors.cli.output import print_result
from actors.errors import UsageError
from eventlog.store import SessionDeletion

Yes = Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")]
Force = Annotated[
    bool,
    typer.Option("--force", help="delete a running or waiting session, or one with forks"),
]


def _confirmed(sid: str, yes: bool) -> bool:
    """``--yes``, or the answer to a question on a terminal; refuse without either."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(
            f"deleting {sid} needs --yes (stdin is not a terminal to confirm on); nothing deleted"
        )
    return typer.confirm(f"Delete session {sid} and its artifacts and Task WALs for good?")


def _summary(d: SessionDeletion) -> str:
    kept = f", {d.artifacts_kept} kept (referenced by another session)" if d.artifacts_kept else ""
    return (
        f"{d.session_id}: deleted at {d.deleted_at} ({d.events} events, {d.nodes} nodes,"
        f" {d.runs} runs, {d.artifacts} artifacts{kept}, {d.task_wals} task WALs)"
    )


@app.command()
def delete(
    session: SessionArg,
    yes: Yes = False,
    force: Force = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Delete SESSION for good: its events, artifacts, Task WALs and locks (audited)."""
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        if not _confirmed(sid, yes):
            print(f"{sid}: not deleted", file=sys.stderr)
            raise typer.Exit(1)
        deletion = rt.delete_session(sid, force=force)
    print_result({"deleted": True, **_as_dict(deletion)}, _summary(deletion), as_json=as_json)


def _as_dict(d: SessionDeletion) -> dict[str, object]:
    return {f: getattr(d, f) for f in d.__struct_fields__}
