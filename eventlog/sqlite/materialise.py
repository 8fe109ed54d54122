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

from typing import Any, Final

import apsw

from eventlog.codec import encode
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    Node,
    NodeAppended,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionArchived,
    SessionCreated,
)
from eventlog.records import AppendRequest
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
        ArtifactCreated,
    }
)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else encode(value).decode()


def create_session(conn: apsw.Connection, sid: str, event: SessionCreated, at: str) -> None:
    """Create the session's own tables and its ``sessions`` row (``sid`` validated)."""
    conn.execute(session_tables_ddl(sid))
    # chain_from 1: every event of a session created today is chained (eventlog.sqlite.chain).
    conn.execute(
        "INSERT INTO sessions (session_id, cwd, root_agent_id, active_node_id,"
        " parent_session_id, status, metadata_json, created_at, updated_at, chain_from)"
        " VALUES (?, ?, ?, NULL, ?, 'active', ?, ?, ?, 1)",
        (
            sid,
            event.cwd,
            event.root_agent_id,
            event.parent_session_id,
            _json_or_none(event.metadata),
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


def materialise(
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
                (status, _json_or_none(result), at, agent_id, sid),
            )
        case RunStarted():
            _insert_run(conn, sid, event, at)
        case RunEnded():
            _end_run(conn, sid, event, at)
        case RunWaiting() | RunResumed():
            _set_run_status(conn, sid, event, at)
        case ArtifactCreated():
            _insert_artifact(conn, sid, req, event)
        case _:
            pass


def _append_node(
    conn: apsw.Connection, counters: Counters, sid: str, event: NodeAppended, at: str
) -> None:
    node, node_seq = event.node, counters.next_node_seq(conn, sid)
    if counters.nodes_by_reference(conn, sid):
        # The content lives in the event this request inserts next (its seq): stored
        # once. The row keeps the tree's shape, which the indexes and link reads need.
        conn.execute(
            f"INSERT INTO nodes_{sid} VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                node.node_id,
                node_seq,
                node.parent_id,
                node.agent_id,
                node.role,
                node.node_type,
                counters.upcoming_seq(conn, sid),
            ),
        )
    else:
        _insert_legacy_node(conn, sid, node, node_seq, at)
    if event.activate:
        counters.active[sid] = node.node_id


def _insert_legacy_node(
    conn: apsw.Connection, sid: str, node: Node, node_seq: int, at: str
) -> None:
    """A node of a session made before schema version 4: its row holds the content too."""
    conn.execute(
        f"INSERT INTO nodes_{sid} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            node.node_id,
            node_seq,
            node.parent_id,
            node.agent_id,
            node.run_id,
            node.role,
            node.node_type,
            encode(node.content).decode(),
            _json_or_none(node.metadata),
            node.token_count,
            at,
        ),
    )


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
            _json_or_none(meta),
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
        "INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL, NULL, 0, NULL, NULL, ?, ?, ?)",
        (event.run_id, sid, event.agent_id, event.start_node_id, _json_or_none(meta), at, at),
    )


def _set_run_status(
    conn: apsw.Connection, sid: str, event: RunWaiting | RunResumed, at: str
) -> None:
    """A run parks (``waiting``) or goes on after its wait (``running``)."""
    conn.execute(
        "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ? AND session_id = ?",
        ("waiting" if isinstance(event, RunWaiting) else "running", at, event.run_id, sid),
    )


def _end_run(conn: apsw.Connection, sid: str, event: RunEnded, at: str) -> None:
    conn.execute(
        "UPDATE runs SET status = ?, end_reason = ?, end_node_id = ?, turn_count = ?,"
        " usage_json = ?, error_json = ?, updated_at = ?"
        " WHERE run_id = ? AND session_id = ?",
        (
            event.status,
            event.end_reason,
            event.end_node_id,
            event.turn_count,
            _json_or_none(event.usage),
            _json_or_none(event.error),
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
            _json_or_none({"sha256": event.sha256}),
            req.created_at,
        ),
    )
