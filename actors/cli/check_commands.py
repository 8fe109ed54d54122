"""``clew replay`` and ``clew verify``: the checks users put in their CI."""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer

from actors.cli import ids, render
from actors.cli.app import app
from actors.cli.junit import write_junit
from actors.cli.options import (
    Home,
    Json,
    Project,
    TeamOption,
    Where,
    home_exists,
    open_runtime,
    open_session,
    where_from,
)
from actors.cli.output import exit_with, print_json, print_result, stderr_is_tty
from actors.cli.recipes import replay_tools
from actors.cli.team_file import load_team
from actors.errors import UsageError
from actors.models.tools import Tool
from actors.recording.recorded import RecordedModel, session_tools
from actors.replay.report import ReplayReport
from actors.runtime.runtime import Runtime
from actors.runtime.upkeep import VerifyReport

#: The session a check reads; without one, ``--all`` names every session of the home.
OneSession = Annotated[
    str | None,
    typer.Argument(metavar="[SESSION]", autocompletion=ids.complete_session, show_default=False),
]
AllOption = Annotated[bool, typer.Option("--all", help="every session of the home")]
LiveTools = Annotated[
    bool,
    typer.Option(
        "--live-tools",
        help="run the session's idempotent tools again with the recorded arguments and"
        " compare their outputs (a model is never called; other tools never run)",
    ),
]
AllowEmpty = Annotated[
    bool,
    typer.Option("--allow-empty", help="with --all: a home without sessions passes (exit 0)"),
]


def one_or_all(session: str | None, all_: bool) -> None:
    """Refuse neither or both of SESSION and ``--all``."""
    if (session is None) == (not all_):
        raise UsageError("give one SESSION or --all" + (", not both" if all_ else ""))


def every_session(rt: Runtime | None, where: Where, what: str, *, allow_empty: bool) -> list[str]:
    """Return the ids of every session of the home (oldest first) for ``--all``.

    Raises:
        UsageError: there is none and ``allow_empty`` is not set: a typo in ``--home``
            must not pass a CI job that checks nothing.
    """
    ids = [] if rt is None else [r.session_id for r in rt.store.list_sessions()]
    if not ids and not allow_empty:
        store = "the store" if where.store is not None else f"the clew home {where.home}"
        flag = "--store" if where.store is not None else "--home"
        raise UsageError(
            f"no sessions in {store}: nothing to {what} (is {flag} right?"
            " --allow-empty accepts an empty home)"
        )
    return ids


@app.command()
def replay(
    session: OneSession = None,
    all_: AllOption = False,
    allow_empty: AllowEmpty = False,
    team_file: TeamOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
    live_tools: LiveTools = False,
    junit: Annotated[
        str | None, typer.Option("--junit", metavar="FILE", help="also write JUnit XML there")
    ] = None,
) -> None:
    """Re-execute a session (or --all) against its recording: exit 0 identical, 1 diverged.

    With ``--team FILE`` the runs use that team instead of the recorded one: a changed
    instruction diverges with a diff of the text. Its tools and models are stand-ins.
    With ``--live-tools`` the idempotent tools run again and their outputs are compared.
    """
    where = where_from(home, project)
    one_or_all(session, all_)
    if session is not None:
        with open_session(where, session) as (rt, row):
            report = _replay_one(rt, row.session_id, team_file, show=not as_json, live=live_tools)
        if junit is not None:
            write_junit(junit, [report])
        print_result(report.to_json(), "\n".join(render.replay_lines(report)), as_json=as_json)
        exit_with(0 if report.identical else 1)
        return
    reports = _replay_all(where, team_file, allow_empty=allow_empty, live=live_tools)
    if junit is not None:
        write_junit(junit, reports)
    identical = all(r.identical for r in reports)
    if as_json:
        print_json({"identical": identical, "sessions": [r.to_json() for r in reports]})
    else:
        for report in reports:
            print("\n".join(f"{report.session_id}: {line}" for line in render.replay_lines(report)))
        diverged = sum(1 for r in reports if not r.identical)
        verdict = "identical" if identical else f"{diverged} diverged"
        print(f"{len(reports)} sessions replayed: {verdict}")
    exit_with(0 if identical else 1)


def _replay_all(
    where: Where, team_file: str | None, *, allow_empty: bool, live: bool
) -> list[ReplayReport]:
    """Replay every session of the home, oldest first (refused when there is none)."""
    if not home_exists(where):  # a read never creates a home
        every_session(None, where, "replay", allow_empty=allow_empty)
        return []
    with open_runtime(where) as rt:
        sids = every_session(rt, where, "replay", allow_empty=allow_empty)
        return [_replay_one(rt, sid, team_file, show=False, live=live) for sid in sids]


def _replay_one(
    rt: Runtime, sid: str, team_file: str | None, *, show: bool, live: bool = False
) -> ReplayReport:
    """Replay one session (with the team of ``team_file`` if given; ``live``: live tools)."""
    with render.progress_bar(show and stderr_is_tty(), "replaying runs") as progress:
        tools: dict[str, Tool] = dict(session_tools(rt.store, sid))
        if live:
            tools.update(_live_tools(rt, sid))
        team = None
        if team_file is not None:
            team = load_team(team_file, tools=tools, build_model=RecordedModel)
        given = list(tools.values()) if live and team is None else None
        return rt.replay(sid, team=team, tools=given, progress=progress, live_tools=live)


def _live_tools(rt: Runtime, sid: str) -> dict[str, Tool]:
    """Return the real tools of the session for ``--live-tools``.

    Raises:
        UsageError: an idempotent tool the session recorded is not one the CLI can run.
    """
    real = {t.name: t for t in replay_tools(rt.store.read_session(sid), rt.session_dir(sid))}
    missing = sorted(
        name
        for name, t in session_tools(rt.store, sid).items()
        if t.idempotent and name not in real
    )
    if missing:
        raise UsageError(
            f"--live-tools: session {sid} used idempotent tools the CLI cannot run"
            f" ({', '.join(missing)}); replay it from Python with live_tools=True"
        )
    return real


@app.command()
def verify(
    session: OneSession = None,
    all_: AllOption = False,
    allow_empty: AllowEmpty = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Rebuild projections from events, compare with the tables, replay every Task WAL."""
    where = where_from(home, project)
    one_or_all(session, all_)
    show = stderr_is_tty() and not as_json
    if session is not None:
        with open_session(where, session) as (rt, row):
            report = rt.verify(row.session_id)
    elif home_exists(where):
        with open_runtime(where) as rt:
            every_session(rt, where, "verify", allow_empty=allow_empty)
            with render.progress_bar(show, "verifying sessions") as progress:
                report = rt.verify(progress=progress)
    else:  # a read never creates a home: nothing to verify
        every_session(None, where, "verify", allow_empty=allow_empty)
        report = VerifyReport(ok=True, sessions=[])
    if as_json:
        print_json(msgspec.to_builtins(report))
    else:
        for check in report.sessions:
            for line in check.lines():
                print(line)
        print(report.summary())
    exit_with(0 if report.ok else 1)
