"""The JSON documents of the web inspector, read from the store and the projections.

Pure reads: nothing here writes. Every document is plain JSON (``dict``/``list``) the
browser renders with ``textContent`` (never as markup). Ids are shown relative to their
session (``brain:r1:n4``) and sent in full where the browser must send them back.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from actors.cli.render import excerpt
from actors.cli.summaries import summarise
from actors.runtime.runtime import Runtime
from actors.runtime.status import session_info
from actors.tasks.inspect import inspect_wals
from eventlog.blocks import ArtifactRefBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ClewError
from eventlog.events import EVENT_TYPES
from eventlog.ids import is_main_run, relative
from eventlog.records import NodeRow, RunRow, SessionRow, StoredEvent
from projections.costs import Cell, by_model, by_phase, by_role, grouped, usage_cells
from projections.usage import Totals

#: The longest page of the timeline one request returns.
MAX_PAGE: Final = 500
#: How many events a filtered timeline page scans at most before it answers (the
#: browser asks again from where the scan stopped).
SCAN_LIMIT: Final = 20_000
#: The longest title shown in the sessions list.
TITLE_LEN: Final = 80
#: The bytes of an artifact the preview shows.
PREVIEW_BYTES: Final = 64 * 1024


def _title(row: SessionRow, first_prompt: str | None) -> str:
    title = row.metadata.get("title") if isinstance(row.metadata, dict) else None
    text = title if isinstance(title, str) and title else (first_prompt or "")
    text = " ".join(text.split())
    return text if len(text) <= TITLE_LEN else text[: TITLE_LEN - 1] + "…"


def session_line(rt: Runtime, row: SessionRow, runs: list[RunRow] | None = None) -> dict[str, Any]:
    """Return one line of the sessions list: status, title, runs, tokens, last activity."""
    sid = row.session_id
    runs = rt.store.read_runs(sid) if runs is None else runs
    info = session_info(row, runs, owned=rt.is_owned(sid), events=rt.store.count_events(sid))
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
        "runs": info.runs,
        "all_runs": info.all_runs,
        "events": info.events,
        "tokens": tokens,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "parent_session_id": row.parent_session_id,
    }


def sessions_doc(rt: Runtime, query: str = "") -> dict[str, Any]:
    """Return the sessions list (newest activity first), filtered by id prefix or title."""
    q = query.strip().lower()
    lines = [session_line(rt, row) for row in rt.store.list_sessions()]
    if q:
        lines = [
            s for s in lines if s["session_id"].lower().startswith(q) or q in s["title"].lower()
        ]
    lines.sort(key=lambda s: s["updated_at"], reverse=True)
    return {"sessions": lines}


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
            }
            for r in runs
        ],
        "agents": [{"agent_id": a.agent_id, "short": relative(sid, a.agent_id)} for a in agents],
        "event_types": sorted(EVENT_TYPES),
        "waiting": [msgspec.to_builtins(w) for w in waits],
    }


def _last_seq(rt: Runtime, sid: str) -> int:
    """The seq of the session's last event (seq is dense from 1: the count is the last)."""
    return rt.store.count_events(sid)


def _kinds(row: NodeRow) -> str:
    """Letters saying what a node holds: c tool call, r tool result, a artifact, e error."""
    out = set()
    for b in row.content:
        if isinstance(b, ToolCallBlock):
            out.add("c")
        elif isinstance(b, ToolResultBlock):
            out.add("r")
            if b.is_error:
                out.add("e")
            if any(isinstance(p, ArtifactRefBlock) for p in b.content):
                out.add("a")
        elif isinstance(b, ArtifactRefBlock):
            out.add("a")
    return "".join(sorted(out))


def _links(rt: Runtime, sid: str) -> list[tuple[str, str | None, str, str, str]]:
    """Every node's (id, parent, agent, role, type): without content when the store can."""
    read = getattr(rt.store, "read_node_links", None)
    if read is not None:
        links: list[tuple[str, str | None, str, str, str]] = read(sid)
        return links
    return [
        (n.node_id, n.parent_id, n.agent_id, n.role, n.node_type) for n in rt.store.read_nodes(sid)
    ]


def tree_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the tree's shape: every node (node_seq order), the active path, fork points.

    One row per node: ``[id, parent, agent, role, node_type]`` with ids relative to the
    session; no content (the browser asks :func:`excerpts_doc` for the rows it shows),
    so a session of 10⁵ nodes costs one narrow query here.
    """
    row = rt.store.read_session(sid)
    active = [relative(sid, n.node_id) for n in rt.store.read_active_path(sid)]
    forks: dict[str, str] = {}
    for a in rt.store.read_agents(sid):
        if a.fork_from_node_id:
            forks[relative(sid, a.fork_from_node_id)] = f"agent {relative(sid, a.agent_id)}"
    for other in rt.store.list_sessions():
        node = other.metadata.get("fork_from_node_id")
        if other.parent_session_id == sid and isinstance(node, str):
            forks[relative(sid, node)] = f"session {other.session_id}"
    cut = len(sid) + 1
    return {
        "session_id": sid,
        "active_node_id": relative(sid, row.active_node_id) if row.active_node_id else None,
        "active_path": active,
        "forks": forks,
        "nodes": [
            [
                node[cut:] if node.startswith(sid) else node,
                (parent[cut:] if parent.startswith(sid) else parent) if parent else None,
                agent[cut:] if agent.startswith(sid) else agent,
                role,
                node_type,
            ]
            for node, parent, agent, role, node_type in _links(rt, sid)
        ],
    }


def excerpts_doc(rt: Runtime, sid: str, ids: Iterable[str]) -> dict[str, Any]:
    """Return ``{node: [excerpt, kinds]}`` for the nodes a tree view shows (at most
    :data:`MAX_PAGE`); an unknown id is left out."""
    out: dict[str, Any] = {}
    for short in list(dict.fromkeys(i for i in ids if i))[:MAX_PAGE]:
        row = _read_node(rt, sid, short)
        if row is not None:
            out[short] = [excerpt(row.content), _kinds(row)]
    return {"excerpts": out}


def _read_node(rt: Runtime, sid: str, node_id: str) -> NodeRow | None:
    """Read a node named in full or relative to its session (``brain:r1:n4``)."""
    if not node_id.startswith(f"{sid}:"):
        row = rt.store.read_node(sid, f"{sid}:{node_id}")
        if row is not None:
            return row
    return rt.store.read_node(sid, node_id)


def node_doc(rt: Runtime, sid: str, node_id: str) -> dict[str, Any] | None:
    """Return one node in full: its content blocks, metadata, and artifacts' rows."""
    row = _read_node(rt, sid, node_id)
    if row is None:
        return None
    full = row.node_id
    doc: dict[str, Any] = msgspec.to_builtins(row)
    doc["short"] = relative(sid, row.node_id)
    doc["children"] = [relative(sid, c.node_id) for c in rt.store.read_children(sid, full)]
    refs = {a.artifact_id for a in _artifact_refs(row.content)}
    doc["artifacts"] = [
        msgspec.to_builtins(a) for a in rt.store.read_artifacts(sid) if a.artifact_id in refs
    ]
    return doc


def _artifact_refs(blocks: Iterable[object]) -> Iterable[ArtifactRefBlock]:
    for b in blocks:
        if isinstance(b, ArtifactRefBlock):
            yield b
        elif isinstance(b, ToolResultBlock):
            yield from _artifact_refs(b.content)


def artifact_preview(rt: Runtime, sid: str, artifact_id: str) -> tuple[str, str, int] | None:
    """Return (mime type, the first bytes as text, size) of an artifact; None if unknown."""
    for a in rt.store.read_artifacts(sid):
        if a.artifact_id == artifact_id:
            data = rt.store.artifacts.read_range(a.path, 0, PREVIEW_BYTES)
            text = data.decode("utf-8", errors="replace")
            return a.mime_type or "application/octet-stream", text, a.size_bytes or len(data)
    return None


def event_line(sid: str, e: StoredEvent) -> dict[str, Any]:
    """Return one timeline row."""
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


def dag_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the task DAGs of the session's Task WALs (read-only), one per WAL."""
    try:
        project = rt.session_dir(sid)
    except ClewError as e:
        return {"dags": [], "error": str(e)}
    dags = []
    for wal, tasks in inspect_wals(project, sid, rt.wal_names(sid), wals=rt.task_wals(sid)):
        dags.append(
            {
                "wal": wal.name,
                "available": wal.available,
                "error": wal.error,
                "tasks": [
                    {
                        "id": relative(sid, t.task_id),
                        "title": t.title,
                        "status": t.status,
                        "deps": [relative(sid, d) for d in t.deps],
                        "owner": relative(sid, t.owner) if t.owner else None,
                        "result_summary": t.result_summary,
                    }
                    for t in tasks
                ],
            }
        )
    return {"dags": dags, "error": None}


class UsageCache:
    """Each session's usage cells, folded once and then only over the events that landed
    since (the first look at a session of 10⁵ events reads them all; the next ones don't)."""

    def __init__(self) -> None:
        self._cells: dict[str, tuple[int, dict[Cell, Totals]]] = {}
        self._lock = threading.Lock()

    def cells(self, rt: Runtime, sid: str) -> dict[Cell, Totals]:
        with self._lock:
            last, cells = self._cells.get(sid, (0, {}))
            events = rt.store.iter_events(sid) if last == 0 else rt.store.read_events(sid, last)
            seen = last
            fresh = []
            for e in events:
                if e.seq > seen:
                    fresh.append(e)
                    seen = e.seq
            merged = dict(cells)
            for key, totals in usage_cells(fresh).items():
                old = merged.get(key, Totals())
                merged[key] = Totals(
                    calls=old.calls + totals.calls,
                    input_tokens=old.input_tokens + totals.input_tokens,
                    output_tokens=old.output_tokens + totals.output_tokens,
                    cache_read_tokens=old.cache_read_tokens + totals.cache_read_tokens,
                    cache_write_tokens=old.cache_write_tokens + totals.cache_write_tokens,
                )
            self._cells[sid] = (seen, merged)
            return merged


def usage_doc(rt: Runtime, sid: str, cache: UsageCache | None = None) -> dict[str, Any]:
    """Return the session's token usage by model, role and phase (what ``clew usage`` adds)."""
    cells = (cache or UsageCache()).cells(rt, sid)
    out: dict[str, Any] = {"session_id": sid}
    for key, by in (("by_model", by_model), ("by_role", by_role), ("by_phase", by_phase)):
        out[key] = [
            {
                "name": g.name or "-",
                "calls": g.totals.calls,
                "input_tokens": g.totals.input_tokens,
                "output_tokens": g.totals.output_tokens,
                "total_tokens": g.totals.total_tokens,
            }
            for g in grouped(cells, {}, by)
        ]
    return out
