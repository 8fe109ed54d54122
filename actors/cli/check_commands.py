"""``clew replay`` and ``clew verify``: the checks users put in their CI."""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer

from actors.cli import render
from actors.cli.app import app
from actors.cli.options import (
    Home,
    Json,
    Project,
    SessionArg,
    TeamOption,
    home_exists,
    open_runtime,
    open_session,
    where_from,
)
from actors.cli.output import exit_with, print_json, stderr_is_tty
from actors.cli.team_file import load_team
from actors.errors import UsageError
from actors.replay.recording import RecordedModel, session_tools
from actors.runtime.verify import VerifyReport


@app.command()
def replay(
    session: SessionArg,
    team_file: TeamOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Re-execute the session against its recording: exit 0 identical, 1 diverged.

    With ``--team FILE`` the runs use that team instead of the recorded one: a changed
    instruction diverges with a diff of the text. Its tools and models are stand-ins.
    """
    where = where_from(home, project)
    with (
        open_session(where, session) as (rt, row),
        render.progress_bar(stderr_is_tty() and not as_json, "replaying runs") as progress,
    ):
        team = None
        if team_file is not None:
            tools = session_tools(rt.store, row.session_id)
            team = load_team(team_file, tools=tools, build_model=RecordedModel)
        report = rt.replay(row.session_id, team=team, progress=progress)
    if as_json:
        print_json(report.to_json())
    else:
        for line in render.replay_lines(report):
            print(line)
    exit_with(0 if report.identical else 1)


@app.command()
def verify(
    session: Annotated[str | None, typer.Argument(metavar="[SESSION]")] = None,
    all_: Annotated[bool, typer.Option("--all", help="verify every session")] = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Rebuild projections from events, compare with the tables, replay every Task WAL."""
    where = where_from(home, project)
    if (session is None) == (not all_):
        raise UsageError("give one SESSION or --all" + (", not both" if all_ else ""))
    show = stderr_is_tty() and not as_json
    if session is not None:
        with open_session(where, session) as (rt, row):
            report = rt.verify(row.session_id)
    elif home_exists(where):
        rt = open_runtime(where)
        try:
            with render.progress_bar(show, "verifying sessions") as progress:
                report = rt.verify(progress=progress)
        finally:
            rt.close()
    else:  # a read never creates a home: nothing to verify
        report = VerifyReport(ok=True, sessions=[])
    if as_json:
        print_json(msgspec.to_builtins(report))
    else:
        for check in report.sessions:
            for line in check.lines():
                print(line)
        print(report.summary())
    exit_with(0 if report.ok else 1)
