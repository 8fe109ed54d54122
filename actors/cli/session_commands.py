"""``clew retry`` and ``clew archive``: a failed run's new attempt; an archived session."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from actors.cli.app import app
from actors.cli.options import Home, Json, Project, SessionArg, TeamOption, open_session, where_from
from actors.cli.output import print_json
from actors.cli.recipes import models_for_resume, recipe_of
from actors.cli.run_commands import _report, _team, check_recordable


@app.command()
def retry(
    session: SessionArg,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="SPEC", help="override the model the session was created with"
        ),
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL")] = None,
    team_file: TeamOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Retry SESSION's failed last run: a new attempt answering the same user message."""
    where = where_from(home, project)
    check_recordable(where, ("a --model spec", model), ("--base-url", base_url))
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        models, tools = models_for_resume(
            row,
            env=os.environ,
            project_dir=rt.session_dir(sid),
            slow_ms=None,
            override=[model] if model else [],
            base_url=base_url,
        )
        recipe = recipe_of(row)
        chosen = team_file or (recipe.team if recipe is not None else None)
        team = _team(chosen, tools, base_url) if chosen is not None else None
        outcome = rt.retry(sid, model=models, tools=tools, team=team)
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
    if as_json:
        print_json({"session_id": sid, "status": "archived", "changed": changed})
    else:
        print(f"{sid}: {'archived' if changed else 'already archived'}")
