"""Session bundles on the command line: ``clew export SESSION --bundle FILE`` and
``clew import FILE`` (the format: :mod:`actors.runtime.bundles.files`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec
import typer

from actors.cli.app import app
from actors.cli.options import Home, Json, Project, Where, open_session, where_from
from actors.cli.output import clipped, print_result
from actors.runtime.bundles.files import export_bundle, import_bundle


def _location(where: Where) -> str:
    return where.store or str(where.home)


def write_bundle(where: Where, session: str, file: str) -> None:
    """``clew export SESSION --bundle FILE``: write the session (an id, a prefix, ``last``)
    and, for a fork, its ancestors to ``file``; print one line."""
    with open_session(where, session) as (_, row):
        sid = row.session_id
    header = export_bundle(_location(where), sid, file, where.project)
    size = Path(file).stat().st_size
    print(f"{sid}: bundle {clipped(file)} ({len(header.sessions)} sessions, {size} bytes)")


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(metavar="FILE", help="a session bundle")],
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Load a session bundle (clew export SESSION --bundle FILE) into this home or store,
    verified. An identical session already there is left alone; an altered bundle, or a
    different session of the same id, is refused (exit 2)."""
    where = where_from(home, project)
    result = import_bundle(_location(where), file, where.project)
    lines = [
        f"{r.session_id}: {r.outcome} ({r.events} events, {r.artifacts} artifacts,"
        f" {r.task_wal_lines} task WAL lines)"
        for r in result.sessions
    ]
    print_result(msgspec.to_builtins(result), "\n".join(lines), as_json=as_json)
