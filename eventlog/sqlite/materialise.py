"""The materialised rows, written in the same transaction as the event that changes them.

The events table of a session is its source of truth. The ``nodes_<sid>`` table and the
status / active-node / counter columns of the global tables (``sessions``, ``agents``,
``runs``, ``artifacts``) are projections of it, kept here so a reader never folds.
:mod:`projections.boards` and :mod:`projections.tree` state the same rules as pure folds,
and :mod:`projections.verify` compares the two.

The statements of the global tables are :mod:`eventlog.global_rows`' (the same for every
backend, in SQLite's :data:`SQLITE` dialect); the node rows and the active node are here.
"""

from __future__ import annotations

from typing import Final

import apsw

from eventlog.events import (
    ActiveNodeSwitched,
    Event,
    NodeAppended,
    SessionCreated,
)
from eventlog.global_rows import GLOBAL_EVENTS, Dialect, statement
from eventlog.records import AppendRequest
from eventlog.row_encoding import json_or_none, node_content
from eventlog.sqlite.counters import Counters
from eventlog.sqlite.schema import session_tables_ddl

#: Event types that change a materialised table (every other event only adds its row).
MATERIALISED: Final[frozenset[type]] = frozenset({NodeAppended, ActiveNodeSwitched, *GLOBAL_EVENTS})


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


#: SQLite's SQL of the global rows (:mod:`eventlog.global_rows`).
SQLITE = Dialect(
    mark="?",
    usage_field="COALESCE(json_extract(usage_json, '$.{f}'), 0) + ?",
    usage_object="json_object({pairs})",
    insert="INSERT OR IGNORE INTO",
    ignore="",
)


def materialise(
    conn: apsw.Connection, counters: Counters, sid: str, req: AppendRequest, event: Event
) -> None:
    """Apply ``event`` (of a type in :data:`MATERIALISED`) to the materialised tables."""
    match event:
        case NodeAppended():
            _append_node(conn, counters, sid, event, req.created_at)
        case ActiveNodeSwitched(to_node_id=to_node):
            counters.active[sid] = to_node
        case _:
            change = statement(SQLITE, sid, req, event)
            if change is not None:
                conn.execute(*change)


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
