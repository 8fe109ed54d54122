"""``clew retry`` and ``clew archive``: a failed run's new attempt; an archived session."""

from __future__ import annotations

from typing import Annotated

import typer

from actors.cli.app import app
from actors.cli.options import (
    BaseUrl,
    Home,
    Json,
    ModelOverride,
    Project,
    SessionArg,
    TeamOption,
    open_session,
    where_from,
)
from actors.cli.output import print_result
from actors.cli.run_commands import _report, check_recordable, going_on_with


@app.command()
def retry(
    session: SessionArg,
    model: ModelOverride = None,
    base_url: BaseUrl = None,
    team_file: TeamOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Retry SESSION's failed last run: a new attempt answering the same user message."""
    where = where_from(home, project)
    check_recordable(where, ("a --model spec", model), ("--base-url", base_url))
    with open_session(where, session) as (rt, row):
        models, tools, team = going_on_with(
            rt, row, model=model, base_url=base_url, team_file=team_file
        )
        outcome = rt.retry(row.session_id, model=models, tools=tools, team=team)
    _report(outcome, gave_up=False, as_json=as_json)


@app.command()
def archive(
    session: SessionArg,
    reason: Annotated[str, typer.Option("--reason", help="why (recorded)")] = "",
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Archive SESSION: it stays readable and refuses every write from now on."""
    where = where_from(home, project)
    check_recordable(where, ("--reason", reason))
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        changed = rt.archive(sid, reason)
    doc = {"session_id": sid, "status": "archived", "changed": changed}
    print_result(doc, f"{sid}: {'archived' if changed else 'already archived'}", as_json=as_json)
