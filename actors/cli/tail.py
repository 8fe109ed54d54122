"""``clew tail SESSION``: print a session's events one line each, and follow them live.

It reads through :meth:`~actors.runtime.runtime.Runtime.follow` on a read-only home, so
a second terminal can watch a run another process is making. Lines are flushed one by
one: ``clew tail -f SESSION | grep tool_call`` shows each as it lands.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import msgspec
import typer

from actors.cli.app import app
from actors.cli.options import MAX_COUNT, Home, Project, SessionArg, session_from
from actors.cli.output import on_interrupt
from actors.documents.excerpts import clip, short
from actors.documents.summaries import call_shown, summarise
from actors.documents.timeline import event_row
from eventlog.events import EVENT_TYPES, AgentCreated
from eventlog.ids import task_of
from eventlog.records import StoredEvent

#: Width of the agent column (``w1 (researcher)``); longer names are cut.
AGENT_WIDTH = 20
_EVENT_WIDTH = max(len(t) for t in EVENT_TYPES)

Follow = Annotated[
    bool, typer.Option("--follow", "-f", help="keep printing events as they land, until Ctrl-C")
]
UntilDone = Annotated[
    bool,
    typer.Option("--until-done", help="follow, and exit once the session has no run in progress"),
]
Since = Annotated[
    int,
    typer.Option(
        "--since", metavar="SEQ", min=0, max=MAX_COUNT, help="only the events after seq SEQ"
    ),
]
Poll = Annotated[
    float,
    typer.Option(
        "--poll", metavar="SECONDS", min=0.01, max=60.0, help="how often to look for new events"
    ),
]
JsonLines = Annotated[
    bool,
    typer.Option("--json", help="one JSON object per event and line (the rows of clew export)"),
]


class TailLines:
    """Formats events as ``clew tail`` lines; learns each agent's role as it is created."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self._roles: dict[str, str] = {}

    def agent(self, agent_id: str | None) -> str:
        """``brain``, or a worker's task with its role: ``w1 (researcher)``."""
        if agent_id is None:
            return "-"
        name = task_of(short(self.sid, agent_id))
        role = self._roles.get(agent_id)
        return clip(f"{name} ({role})" if role and role != name else name, AGENT_WIDTH)

    def line(self, e: StoredEvent) -> str:
        """Return the line of ``e``: seq, time, agent (role), event type, summary."""
        if isinstance(e.event, AgentCreated):
            self._roles[e.event.agent_id] = e.event.role
        # An event with nothing to summarise (an approval) is named by its tool call id,
        # what `clew approve` and `clew rerun --tool-result` take (as clew timeline does).
        said = summarise(self.sid, e.event) or getattr(e.event, "tool_call_id", None) or ""
        if call := call_shown(e.event):  # a tool call's row starts with its short id
            said = f"{call}  {said}"
        return (
            f"{e.seq:>5}  {e.created_at[11:23]:<12}  {self.agent(e.agent_id):<{AGENT_WIDTH}}"
            f"  {e.event_type:<{_EVENT_WIDTH}}  {said}"
        ).rstrip()


@contextmanager
def _ctrl_c_ends_quietly() -> Iterator[None]:
    """Let Ctrl-C end the loop (exit 0) instead of the CLI's exit-130 handler.

    Only the CLI's own handler is swapped (in the main thread); a program that calls
    ``main`` with a handler of its own keeps it.
    """
    swap = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is on_interrupt
    )
    if swap:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    except KeyboardInterrupt:
        pass
    finally:
        if swap:
            signal.signal(signal.SIGINT, on_interrupt)


@app.command()
def tail(
    session: SessionArg,
    follow: Follow = False,
    until_done: UntilDone = False,
    since: Since = 0,
    poll: Poll = 0.2,
    home: Home = None,
    project: Project = None,
    as_json: JsonLines = False,
) -> None:
    """Print the session's events, one line each; with --follow, as they land."""
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        live = follow or until_done
        events = rt.follow(
            sid, since, poll_s=poll, stop=None if live else (lambda: True), until_idle=until_done
        )
        encode = msgspec.json.Encoder().encode
        lines = TailLines(sid)
        write = sys.stdout.write
        with _ctrl_c_ends_quietly():
            for e in events:
                write((encode(event_row(e)).decode() if as_json else lines.line(e)) + "\n")
                sys.stdout.flush()
