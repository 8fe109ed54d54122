"""A session's events as rows: ``clew export`` / ``timeline --json`` (every field, full
ids), the inspector's timeline rows (ids relative, with the event's summary) and a
filtered page of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from actors.documents.summaries import summarise
from eventlog.ids import relative
from eventlog.records import StoredEvent

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime

#: The longest page of the timeline one request returns.
MAX_PAGE: Final = 500
#: How many events a filtered timeline page scans at most before it answers (the
#: browser asks again from where the scan stopped).
SCAN_LIMIT: Final = 20_000


def event_row(e: StoredEvent) -> dict[str, Any]:
    """Return one event as ``clew export`` / ``timeline --json`` print it."""
    return {
        "seq": e.seq,
        "run_id": e.run_id,
        "run_seq": e.run_seq,
        "event_type": e.event_type,
        "node_id": e.node_id,
        "agent_id": e.agent_id,
        "level": e.level,
        "tool_call_id": e.tool_call_id,
        "event_id": e.event_id,
        "created_at": e.created_at,
        "payload": msgspec.to_builtins(e.event),
    }


def event_line(sid: str, e: StoredEvent) -> dict[str, Any]:
    """Return one row of the inspector's timeline."""
    return {
        "seq": e.seq,
        "type": e.event_type,
        "level": e.level,
        "agent": relative(sid, e.agent_id) if e.agent_id else "",
        "run": relative(sid, e.run_id) if e.run_id else "",
        "node": relative(sid, e.node_id) if e.node_id else "",
        "at": e.created_at,
        "summary": summarise(sid, e.event),
    }


def _last_seq(rt: Runtime, sid: str) -> int:
    """The seq of the session's last event (seq is dense from 1: the count is the last)."""
    return rt.store.count_events(sid)


def timeline_doc(
    rt: Runtime,
    sid: str,
    *,
    after: int = 0,
    limit: int = 100,
    agent: str = "",
    event_type: str = "",
    run: str = "",
) -> dict[str, Any]:
    """Return one page of the timeline after ``after`` (a seq), filtered.

    ``next`` is the seq to ask from for the following page (None at the end); a filtered
    page stops after :data:`SCAN_LIMIT` events scanned, short but with a ``next``.
    """
    limit = max(1, min(limit, MAX_PAGE))
    rows: list[dict[str, Any]] = []
    cursor, scanned = after, 0
    filtered = bool(agent or event_type or run)
    batch = limit if not filtered else 2000
    while len(rows) < limit and scanned < SCAN_LIMIT:
        events = rt.store.read_events(sid, cursor, batch)
        if not events:
            return {"events": rows, "next": None, "last_seq": _last_seq(rt, sid)}
        for e in events:
            cursor = e.seq
            scanned += 1
            if _matches(sid, e, agent, event_type, run):
                rows.append(event_line(sid, e))
                if len(rows) == limit:
                    break
    more = bool(rt.store.read_events(sid, cursor, 1))
    return {"events": rows, "next": cursor if more else None, "last_seq": _last_seq(rt, sid)}


def _matches(sid: str, e: StoredEvent, agent: str, event_type: str, run: str) -> bool:
    if event_type and e.event_type != event_type:
        return False
    if agent and (e.agent_id is None or relative(sid, e.agent_id) != agent):
        return False
    return not run or (e.run_id is not None and relative(sid, e.run_id) == run)
