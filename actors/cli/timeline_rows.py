"""The rows of ``clew timeline``: one aligned line per event, streamed.

Each row says what a person looks for in it — the role and model of a model call, its
tokens and how long it took, the tool a call ran and its duration, the node appended,
the status a run ended with — instead of an opaque ``call_17e6cfd497_0`` (a tool call's
row starts with its short id, ``17e6cfd497_0``, as ``git log --oneline`` starts with a
commit's: what ``clew approve`` and ``clew rerun --tool-result`` take): the summary
``clew tail`` prints (:mod:`actors.documents.summaries`), plus what needs the rows before
(an approval's decision names the tool and arguments it decides). Durations are
differences of recorded timestamps (a request and its reply, a tool call's start and end,
an approval's request and decision, a run's start and end), so a replayed session shows
the same ones. They need the start: a row whose start lies before ``--since`` shows none.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import datetime
from typing import IO, NamedTuple

from actors.documents.summaries import approval_text, call_shown, summarise
from eventlog.events import (
    EVENT_TYPES,
    ApprovalDecided,
    ApprovalRequested,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    NodeAppended,
    RunEnded,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import relative
from eventlog.records import StoredEvent

#: Rows printed per write: the first page shows after this many events are read, and the
#: memory held never grows with the session (a 100k-event table took 73 s and 544 MB when
#: it was one rich ``Table``, which measures every cell before printing any).
TIMELINE_CHUNK = 200
#: The longest details cell off a terminal (on one, the row is cut to its width).
DETAILS = 100
_ANSI = {"warning": "\x1b[33m", "error": "\x1b[31m", "bold": "\x1b[1m", "dim": "\x1b[2m"}
_RESET = "\x1b[0m"


class TimelineLayout(NamedTuple):
    """Column widths of the streamed timeline, known before the first row is read."""

    seq: int
    run: int
    event: int


def timeline_layout(sid: str, run_ids: Iterable[str], last_seq: int) -> TimelineLayout:
    """Return the widths: seq and ``#`` from the last seq, run from the session's runs."""
    return TimelineLayout(
        seq=max(3, len(str(last_seq))),
        run=max([3, *(len(relative(sid, r)) for r in run_ids)]),
        event=max(len(t) for t in EVENT_TYPES),
    )


def _ms(start: str | None, end: str) -> str:
    """Return the time from ``start`` to ``end`` (ISO-8601), or "" without a start."""
    if start is None:
        return ""
    try:
        took = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return ""
    return f" · {took * 1000:.0f} ms" if took < 10 else f" · {took:.1f} s"


class Describer:
    """Say what an event is about in one cell; remember the starts that time the ends."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        #: (run, call_index, attempt) → (role, requested at)
        self._calls: dict[tuple[str | None, int, int], tuple[str, str]] = {}
        self._tools: dict[str, str] = {}
        #: tool call id → (what the approval asks for, requested at)
        self._approvals: dict[str, tuple[str, str]] = {}
        self._runs: dict[str, str] = {}
        self._short: dict[str | None, str] = {}

    def short(self, ident: str | None) -> str:
        """Return ``ident`` relative to the session (memoised: a run id repeats per row)."""
        found = self._short.get(ident)
        if found is None:
            found = self._short[ident] = "-" if ident is None else relative(self.sid, ident)
        return found

    def __call__(self, e: StoredEvent) -> str:
        """Return the details cell of ``e``: ``clew tail``'s summary of it (one wording for
        both commands), and what only a timeline read in order knows — the role a model
        reply answers and how long a model call, a tool call or a run took. A node is
        named by its id (what ``switch-node`` takes) rather than its text."""
        at, event = e.created_at, e.event
        match event:
            case NodeAppended(node=n):
                return f"{n.role}/{n.node_type} {self.short(n.node_id)}"
            case ModelRequested(role=role, call_index=i, attempt=attempt):
                self._calls[(e.run_id, i, attempt)] = (role, at)
            case (
                ModelResponded(call_index=i, attempt=attempt)
                | ModelFailed(call_index=i, attempt=attempt)
            ):
                role, started = self._calls.pop((e.run_id, i, attempt), ("", None))
                return f"{role or '-'} ← {summarise(self.sid, event)}{_ms(started, at)}"
            case ToolCallStarted(tool_call_id=call):
                self._tools[call] = at
            case ToolCallFinished(tool_call_id=call) | ToolFailed(tool_call_id=call):
                return f"{summarise(self.sid, event)}{_ms(self._tools.pop(call, None), at)}"
            case ApprovalRequested(tool_call_id=call):
                self._approvals[call] = (approval_text(event), at)
            case ApprovalDecided(tool_call_id=call):
                asked, since = self._approvals.pop(call, (call, None))
                return f"{asked} ← {summarise(self.sid, event)}{_ms(since, at)}"
            case RunStarted(run_id=run):
                self._runs[run] = at
            case RunEnded(run_id=run):
                return f"{summarise(self.sid, event)}{_ms(self._runs.pop(run, None), at)}"
        named = e.tool_call_id or getattr(event, "tool_call_id", None)  # an approval's too
        return summarise(self.sid, event) or self.short(e.node_id or named)


def _one_line(text: str, n: int) -> str:
    """Return ``text`` on one line, at most ``n`` characters."""
    if len(text) <= n and text.isprintable():
        return text  # the common case: a short cell, nothing to fold
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def print_timeline(
    sid: str,
    events: Iterable[StoredEvent],
    layout: TimelineLayout,
    *,
    out: IO[str] | None = None,
    color: bool = False,
    width: int | None = None,
) -> int:
    """Write events by seq as aligned rows, :data:`TIMELINE_CHUNK` at a time; return how
    many. ``color``: the header bold, warnings and errors coloured (ANSI). ``width``: cut
    every row to it (a terminal's width, so no row wraps)."""
    out = out or sys.stdout
    w = layout
    header = (
        f"{'seq':>{w.seq}}  {'time':<12}  {'run':<{w.run}}  {'#':>{w.seq}}"
        f"  {'event':<{w.event}}  details"
    )
    out.write((f"{_ANSI['bold']}{header}{_RESET}" if color else header) + "\n")
    describe = Describer(sid)
    # The fixed part of a row; the details cell gets what is left of the width.
    room = DETAILS if width is None else max(10, width - len(header) + len("details"))
    count = 0
    chunk: list[str] = []
    for e in events:
        run_seq = "" if e.run_seq is None else str(e.run_seq)
        event = f"{e.event_type:<{w.event}}"
        if color and e.level in _ANSI:
            event = f"{_ANSI[e.level]}{event}{_RESET}"
        details = describe(e)
        if call := call_shown(e.event):
            # A tool call's row starts with its short id (dimmed), a column of its own:
            # off a terminal the details keep their room, on one the row keeps the width.
            cut = _one_line(details, room if width is None else max(10, room - len(call) - 2))
            details = f"{_ANSI['dim']}{call}{_RESET}  {cut}" if color else f"{call}  {cut}"
        else:
            details = _one_line(details, room)
        chunk.append(
            f"{e.seq:>{w.seq}}  {e.created_at[11:23]:<12}  {describe.short(e.run_id):<{w.run}}"
            f"  {run_seq:>{w.seq}}  {event}  {details}\n"
        )
        if len(chunk) == TIMELINE_CHUNK:
            count += _flush(out, chunk)
    count += _flush(out, chunk)
    out.write(f"{count} events\n")
    out.flush()
    return count


def _flush(out: IO[str], chunk: list[str]) -> int:
    """Write the rows of ``chunk`` at once, empty it, return how many there were."""
    n = len(chunk)
    out.write("".join(chunk))
    out.flush()
    chunk.clear()
    return n
