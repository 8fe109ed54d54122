"""``clew pending``, ``approve``, ``deny``, ``answer``: decide for a waiting session from
any process; ``clew resume SESSION`` then continues its run."""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec
import typer

from actors.cli import ids
from actors.cli.app import app
from actors.cli.options import (
    Home,
    Json,
    Project,
    SessionArg,
    home_exists,
    open_runtime,
    open_session,
    session_from,
    where_from,
)
from actors.cli.output import print_json, print_result
from actors.cli.recipes import resume_line
from actors.documents.excerpts import untagged_call_id
from actors.errors import UsageError
from actors.orchestration.approvals import Approve, Decision, Deny, Edit
from actors.runtime.runtime import Runtime
from actors.runtime.waiting import WaitState

CallArg = Annotated[
    str,
    typer.Argument(metavar="CALL", help="the tool call id or a unique prefix (clew pending)"),
]


def _state_json(state: WaitState) -> dict[str, Any]:
    doc: dict[str, Any] = msgspec.to_builtins(state)
    doc["ready"] = state.ready
    return doc


@app.command()
def pending(
    session: Annotated[
        str | None, typer.Argument(metavar="[SESSION]", help="one session (default: all)")
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """List what waiting sessions wait for: tool calls to approve, questions to answer."""
    where = where_from(home, project)
    states: list[WaitState] = []
    if session is not None:
        with open_session(where, session) as (rt, row):
            states = rt.waiting(row.session_id)
    elif home_exists(where):
        with open_runtime(where) as rt:
            states = rt.waiting()
    if as_json:
        print_json({"waiting": [_state_json(s) for s in states]})
        return
    if not states:
        print("no session is waiting" if session is None else f"{session} is not waiting")
    for s in states:
        print(f"{s.session_id} ({s.run_id}): waiting for {s.describe()}")
        for p in s.pending:
            args = json.dumps(p.arguments, ensure_ascii=False)
            print(f"  {p.tool_call_id}  {p.tool_name} {args}  [{p.role}] {p.reason}")
        if s.ready:
            print(f"  everything is decided: clew resume {s.session_id}")


#: What ``approve`` / ``deny`` print a decision as.
_DONE = {Approve: "approved", Edit: "edited", Deny: "denied"}


def _decide(
    session: str, call: str, decision: Decision, home: str | None, project: str | None, js: bool
) -> None:
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        call = _call_named(rt, sid, call)
        rt.decide(sid, call, decision)
        left = _left(rt, sid)
        then = f"still pending: {', '.join(left)}" if left else f"resume it: {resume_line(row)}"
    doc = {"session_id": sid, "tool_call_id": call, "decision": msgspec.to_builtins(decision)}
    text = f"{sid}: {call} {_DONE[type(decision)]}; {then}"
    print_result({**doc, "still_pending": left}, text, as_json=js)


def _call_named(rt: Runtime, sid: str, typed: str) -> str:
    """Return the tool call of the session's wait that ``typed`` names: its id or a unique
    prefix of it (``call_712c``), or the short id the timeline shows; ``typed`` itself when
    none does (the decision then refuses it, naming it)."""
    known = [c for s in rt.waiting(sid) for c in (*(p.tool_call_id for p in s.pending), *s.decided)]
    return ids.pick("tool call", typed, known, alias=untagged_call_id) or typed


def _left(rt: Runtime, sid: str) -> list[str]:
    return [p.tool_call_id for p in rt.pending(sid)]


@app.command()
def approve(
    session: SessionArg,
    call: CallArg,
    args: Annotated[
        str | None,
        typer.Option("--args", metavar="JSON", help="run the call with these arguments instead"),
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Approve a tool call waiting in SESSION (optionally with edited arguments)."""
    decision: Decision = Approve()
    if args is not None:
        try:
            edited = json.loads(args)
        except json.JSONDecodeError as e:
            raise UsageError(f"--args is not JSON: {e}") from None
        if not isinstance(edited, dict):
            raise UsageError("--args must be a JSON object")
        decision = Edit(arguments=edited)
    _decide(session, call, decision, home, project, as_json)


@app.command()
def deny(
    session: SessionArg,
    call: CallArg,
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="what the model is told")],
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Deny a tool call waiting in SESSION: the model gets REASON as its error result."""
    if not reason.strip():
        raise UsageError("the --reason is empty")
    _decide(session, call, Deny(reason=reason), home, project, as_json)


@app.command()
def answer(
    session: SessionArg,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="the answer to the question")],
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Answer the clarifying question SESSION waits on; then clew resume continues it."""
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        rt.answer(sid, text)
        then = resume_line(row)
    doc = {"session_id": sid, "answered": True}
    print_result(doc, f"{sid}: answered; resume it: {then}", as_json=as_json)
