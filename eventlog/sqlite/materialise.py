"""The materialised rows, written in the same transaction as the event that changes them.

The events table of a session is its source of truth. The ``nodes_<sid>`` table and the
status / active-node / counter columns of the global tables (``sessions``, ``agents``,
``runs``, ``artifacts``) are projections of it, kept here so a reader never folds.
:mod:`projections.boards` and :mod:`projections.tree` state the same rules as pure folds,
and :mod:`projections.verify` compares the two.

The global tables are keyed globally, so an update names the session too: an event of
one session never changes another session's agent or run row.
"""

from __future__ import annotations

from typing import Final

import apsw

from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    NodeAppended,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionArchived,
    SessionCreated,
    TokenUsage,
)
from eventlog.records import AppendRequest
from eventlog.row_encoding import json_or_none, node_content, run_end_values
from eventlog.seed_enums import stored_run_status
from eventlog.sqlite.counters import Counters
from eventlog.sqlite.schema import session_tables_ddl

#: Event types that change a materialised table (every other event only adds its row).
MATERIALISED: Final[frozenset[type]] = frozenset(
    {
        NodeAppended,
        ActiveNodeSwitched,
        SessionArchived,
        AgentCreated,
        AgentStatusChanged,
        RunStarted,
        RunEnded,
        RunWaiting,
        RunResumed,
        TokenUsage,
        ArtifactCreated,
    }
)


def create_session(conn: apsw.Connection, sid: str, event: SessionCreated, at: str) -> None:
    """Create the session's own tables and its ``sessions`` row (``sid`` validated)."""
    conn.execute(session_tables_ddl(sid))
    # chain_from 1: every event of a session created today is chained (eventlog.chain).
    conn.execute(
        "INSERT INTO sessions (session_id, cwd, root_agent_id, active_node_id,"
        " parent_session_id, status, metadata_json, created_at, updated_at, chain_from)"
        " VALUES (?, ?, ?, NULL, ?, 'active', ?, ?, ?, 1)",
        (
            sid,
            event.cwd,
            event.root_agent_id,
            event.parent_session_id,
            json_or_none(event.metadata),
            at,
            at,
        ),
    )


def touch_sessions(conn: apsw.Connection, touched: dict[str, str], counters: Counters) -> None:
    """Set ``sessions.updated_at`` to the created_at of each session's last event,
    ``sessions.chain_head`` to that event's hash, and ``active_node_id`` to the node the
    batch made active, if it did (:attr:`Counters.active`, then cleared).

    One UPDATE per batch and session rather than one per event (a turn's node events each
    moved the active node with an UPDATE of their own).
    """
    heads, active = counters.head, counters.active
    for sid, at in touched.items():
        node_id = active.get(sid)
        if node_id is None:
            conn.execute(
                "UPDATE sessions SET updated_at = ?, chain_head = ? WHERE session_id = ?",
                (at, heads[sid], sid),
            )
        else:
            conn.execute(
                "UPDATE sessions SET updated_at = ?, chain_head = ?, active_node_id = ?"
                " WHERE session_id = ?",
                (at, heads[sid], node_id, sid),
            )
    active.clear()


def materialise(  # noqa: C901 - one case per materialised event type
    conn: apsw.Connection, counters: Counters, sid: str, req: AppendRequest, event: Event
) -> None:
    """Apply ``event`` (of a type in :data:`MATERIALISED`) to the materialised tables."""
    at = req.created_at
    match event:
        case NodeAppended():
            _append_node(conn, counters, sid, event, at)
        case ActiveNodeSwitched(to_node_id=to_node):
            counters.active[sid] = to_node
        case SessionArchived():
            conn.execute("UPDATE sessions SET status = 'archived' WHERE session_id = ?", (sid,))
        case AgentCreated():
            _insert_agent(conn, sid, event, at)
        case AgentStatusChanged(agent_id=agent_id, status=status, result=result):
            conn.execute(
                "UPDATE agents SET status = ?, result_json = COALESCE(?, result_json),"
                " updated_at = ? WHERE agent_id = ? AND session_id = ?",
                (status, json_or_none(result), at, agent_id, sid),
            )
        case RunStarted():
            _insert_run(conn, sid, event, at)
        case RunEnded():
            _end_run(conn, sid, event, at)
        case RunWaiting() | RunResumed():
            _set_run_status(conn, sid, event, at)
        case TokenUsage():
            _add_usage(conn, sid, req, event)
        case ArtifactCreated():
            _insert_artifact(conn, sid, req, event)
        case _:
            pass


def _append_node(
    conn: apsw.Connection, counters: Counters, sid: str, event: NodeAppended, at: str
) -> None:
    # The row holds the content as its event does (the seed's columns, docs/storage.md).
    node = event.node
    run_id, content, metadata, tokens = node_content(node)
    conn.execute(
        f"INSERT INTO nodes_{sid} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            node.node_id,
            counters.next_node_seq(conn, sid),
            node.parent_id,
            node.agent_id,
            run_id,
            node.role,
            node.node_type,
            content,
            metadata,
            tokens,
            at,
        ),
    )
    if event.activate:
        counters.active[sid] = node.node_id


def _insert_agent(conn: apsw.Connection, sid: str, event: AgentCreated, at: str) -> None:
    meta = {"role": event.role, "purpose": event.purpose, **event.metadata}
    conn.execute(
        "INSERT INTO agents VALUES (?, ?, ?, ?, ?, ?, 'idle', NULL, ?, ?, ?)",
        (
            event.agent_id,
            sid,
            event.parent_agent_id,
            event.agent_type,
            event.created_by_run_id,
            event.fork_from_node_id,
            json_or_none(meta),
            at,
            at,
        ),
    )


def _insert_run(conn: apsw.Connection, sid: str, event: RunStarted, at: str) -> None:
    meta = {
        "phase": event.phase,
        "attempt": event.attempt,
        "rng_seed": event.rng_seed,
        **event.metadata,
    }
    conn.execute(
        "INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL, NULL, 0, NULL, NULL, ?, ?, ?, NULL)",
        (event.run_id, sid, event.agent_id, event.start_node_id, json_or_none(meta), at, at),
    )


def _set_run_status(
    conn: apsw.Connection, sid: str, event: RunWaiting | RunResumed, at: str
) -> None:
    """A run parks (API ``waiting``: stored ``pending``) or goes on after its wait."""
    status, detail = stored_run_status("waiting" if isinstance(event, RunWaiting) else "running")
    conn.execute(
        "UPDATE runs SET status = ?, status_detail = ?, updated_at = ?"
        " WHERE run_id = ? AND session_id = ?",
        (status, detail, at, event.run_id, sid),
    )


def _add_usage(conn: apsw.Connection, sid: str, req: AppendRequest, event: TokenUsage) -> None:
    """A run not ended keeps its usage so far: ``usage_json`` plus this call's (run_ended
    then sets the run's own). The SQL adds in place, without reading the row first."""
    if req.run_id is None:
        return
    u = event.usage
    conn.execute(
        "UPDATE runs SET usage_json = json_object("
        "'input_tokens', COALESCE(json_extract(usage_json, '$.input_tokens'), 0) + ?,"
        " 'output_tokens', COALESCE(json_extract(usage_json, '$.output_tokens'), 0) + ?,"
        " 'cache_read_tokens', COALESCE(json_extract(usage_json, '$.cache_read_tokens'), 0) + ?,"
        " 'cache_write_tokens', COALESCE(json_extract(usage_json, '$.cache_write_tokens'), 0) + ?)"
        " WHERE run_id = ? AND session_id = ? AND status IN ('running', 'pending')",
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            req.run_id,
            sid,
        ),
    )


def _end_run(conn: apsw.Connection, sid: str, event: RunEnded, at: str) -> None:
    status, detail, end_reason = run_end_values(event)
    conn.execute(
        "UPDATE runs SET status = ?, status_detail = ?, end_reason = ?, end_node_id = ?,"
        " turn_count = ?, usage_json = ?, error_json = ?, updated_at = ?"
        " WHERE run_id = ? AND session_id = ?",
        (
            status,
            detail,
            end_reason,
            event.end_node_id,
            event.turn_count,
            json_or_none(event.usage),
            json_or_none(event.error),
            at,
            event.run_id,
            sid,
        ),
    )


def _insert_artifact(
    conn: apsw.Connection, sid: str, req: AppendRequest, event: ArtifactCreated
) -> None:
    # INSERT OR IGNORE: the first artifact_created of a content-addressed id wins.
    conn.execute(
        "INSERT OR IGNORE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            event.artifact_id,
            sid,
            req.agent_id,
            req.run_id,
            event.node_id,
            event.tool_call_id,
            event.path,
            event.filename,
            event.mime_type,
            event.size_bytes,
            event.summary,
            json_or_none({"sha256": event.sha256}),
            req.created_at,
        ),
    )
