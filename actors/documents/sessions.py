"""The sessions list and a session's header: ``clew sessions --json``, the inspector's
sessions list and the head of its session page.

A session's status is derived once, by :func:`actors.runtime.status.session_info`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from actors.documents.excerpts import clip
from actors.runtime.status import SessionInfo, owner_decides, session_info
from eventlog.events import EVENT_TYPES
from eventlog.global_reads import MAX_PAGE
from eventlog.ids import is_main_run, relative
from eventlog.records import RunRow, SessionRow

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime

#: The longest title shown in the sessions list.
TITLE_LEN: Final = 80
#: Sessions on one page of the inspector's list (``/api/sessions?limit=``).
PAGE: Final = 100


def session_infos_doc(
    infos: Sequence[SessionInfo], scenarios: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Return ``clew sessions --json``: each session's summary line and its scenario."""
    return [
        {**msgspec.to_builtins(i), "scenario": scenarios.get(i.session_id) or None} for i in infos
    ]


def _title(row: SessionRow, first_prompt: str | None) -> str:
    title = row.metadata.get("title") if isinstance(row.metadata, dict) else None
    return clip(title if isinstance(title, str) and title else (first_prompt or ""), TITLE_LEN)


def session_line(
    rt: Runtime, row: SessionRow, runs: list[RunRow] | None = None, events: int | None = None
) -> dict[str, Any]:
    """Return one line of the sessions list: status, title, runs, tokens, last activity
    (``runs`` and ``events``, when the caller read them for a page, are not read again)."""
    sid = row.session_id
    runs = rt.store.read_runs(sid) if runs is None else runs
    owned = owner_decides(runs) and rt.is_owned(sid)  # the lock only where it decides
    events = rt.store.count_events(sid) if events is None else events
    info = session_info(row, runs, owned=owned, events=events)
    mains = [r for r in runs if is_main_run(sid, r.agent_id)]
    prompt = mains[0].metadata.get("raw_prompt") or mains[0].metadata.get("prompt") if mains else ""
    tokens = 0
    for r in runs:
        usage = r.usage or {}
        tokens += int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
    return {
        "session_id": sid,
        "status": info.status,
        "title": _title(row, prompt if isinstance(prompt, str) else ""),
        "runs": info.main_runs,  # the inspector's list shows requests, as `clew sessions`
        "all_runs": info.runs,
        "events": info.events,
        "tokens": tokens,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "parent_session_id": row.parent_session_id,
    }


def sessions_doc(
    rt: Runtime, query: str = "", after: str | None = None, limit: int = PAGE
) -> dict[str, Any]:
    """Return one page of the sessions list (newest activity first), filtered by id prefix
    or title, and the cursor of the next page (``next``: None on the last; a search looks
    at a bounded window of sessions a page, so its page may hold fewer than ``limit``).

    A keyset page of the ``sessions`` table and the page's runs in one query: the cost
    follows the page, not the number of sessions (docs/postgres.md, "Size").
    """
    q = query.strip().lower()
    n = max(1, min(limit, MAX_PAGE))
    store = rt.store
    if q:
        rows, cursor = store.search_sessions_page(q, after=after, limit=n)
    else:
        rows = store.list_sessions_page(after=after, limit=n, newest_first=True)
        cursor = rows[-1].session_id if len(rows) == n else None
    sids = [r.session_id for r in rows]
    runs, counts = store.read_runs_of(sids), store.count_events_of(sids)
    lines = [session_line(rt, row, runs[row.session_id], counts[row.session_id]) for row in rows]
    if q:
        lines = [
            s for s in lines if s["session_id"].lower().startswith(q) or q in s["title"].lower()
        ]
    return {"sessions": lines, "next": cursor}


def session_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the session's header: its line, runs, agents, facets of the timeline, waits."""
    row = rt.store.read_session(sid)
    runs = rt.store.read_runs(sid)
    agents = rt.store.read_agents(sid)
    line = session_line(rt, row, runs)
    waits = rt.waiting(sid) if line["status"] == "waiting" else []
    return {
        **line,
        "cwd": row.cwd,
        "active_node_id": row.active_node_id,
        "last_seq": line["events"],
        "runs_list": [
            {
                "run_id": r.run_id,
                "short": relative(sid, r.run_id),
                "agent": relative(sid, r.agent_id),
                "status": r.status,
                "main": is_main_run(sid, r.agent_id),
                "created_at": r.created_at,
                "redrive": r.metadata.get("redrive"),  # the re-drive that started it
            }
            for r in runs
        ],
        "agents": [{"agent_id": a.agent_id, "short": relative(sid, a.agent_id)} for a in agents],
        "event_types": sorted(EVENT_TYPES),
        "waiting": [msgspec.to_builtins(w) for w in waits],
    }
