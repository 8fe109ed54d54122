"""The materialised rows on PostgreSQL, written in the transaction of the event that changes
them: the same rules as :mod:`eventlog.sqlite.materialise`, on the shared tables (the
global rows' statements are :mod:`eventlog.global_rows`', in the :data:`POSTGRES` dialect).

Every row names its session, so an event of one session never changes another's rows.
"""

from __future__ import annotations

from typing import Any, Protocol

import psycopg

from eventlog.events import (
    ActiveNodeSwitched,
    Event,
    Node,
    NodeAppended,
    SessionCreated,
)
from eventlog.global_rows import Dialect, statement
from eventlog.records import AppendRequest
from eventlog.row_encoding import json_or_none, node_content

Conn = psycopg.Connection[Any]


class Executes(Protocol):
    """Where a materialised row's statement goes: the connection, or a list held back."""

    def execute(self, query: Any, params: Any = None, /) -> object: ...


def create_session(conn: Conn, sid: str, event: SessionCreated, at: str) -> None:
    """Insert the session's row (a duplicate is a constraint violation)."""
    conn.execute(
        "INSERT INTO sessions (session_id, cwd, root_agent_id, active_node_id,"
        " parent_session_id, status, metadata_json, created_at, updated_at, chain_from)"
        " VALUES (%s, %s, %s, NULL, %s, 'active', %s, %s, %s, 1)",
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


#: A ``nodes`` row: the seed's columns in order, then its session (one statement, so the
#: append can tell a node row from the rest and insert it with the events).
INSERT_NODE = "INSERT INTO nodes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"

#: PostgreSQL's SQL of the global rows (:mod:`eventlog.global_rows`).
POSTGRES = Dialect(
    mark="%s",
    usage_field="COALESCE((usage_json::json ->> '{f}')::bigint, 0) + ?",
    usage_object="json_build_object({pairs})::text",
    insert="INSERT INTO",
    ignore=" ON CONFLICT DO NOTHING",
)


def materialise(
    conn: Executes,
    node_seq: int | None,
    sid: str,
    req: AppendRequest,
    event: Event,
    active: dict[str, str] | None = None,
) -> None:
    """Apply ``event`` to the materialised tables (``node_seq``: a node_appended's number).

    ``active``: a new active node is put there (session → node id), for the caller to
    write with the session's counters (one write of the row), instead of being updated.
    """
    match event:
        case NodeAppended():
            assert node_seq is not None
            _insert_node(conn, sid, event.node, node_seq, req.created_at)
            if event.activate:
                _set_active_node(conn, sid, event.node.node_id, active)
        case ActiveNodeSwitched(to_node_id=to_node):
            _set_active_node(conn, sid, to_node, active)
        case _:
            change = statement(POSTGRES, sid, req, event)
            if change is not None:
                conn.execute(*change)


def _set_active_node(conn: Executes, sid: str, node_id: str, active: dict[str, str] | None) -> None:
    if active is not None:
        active[sid] = node_id
        return
    conn.execute("UPDATE sessions SET active_node_id = %s WHERE session_id = %s", (node_id, sid))


def _insert_node(conn: Executes, sid: str, node: Node, node_seq: int, at: str) -> None:
    # The row holds the content as its event does (the seed's columns, docs/storage.md).
    run_id, content, metadata, tokens = node_content(node)
    conn.execute(
        INSERT_NODE,
        (
            node.node_id,
            node_seq,
            node.parent_id,
            node.agent_id,
            run_id,
            node.role,
            node.node_type,
            content,
            metadata,
            tokens,
            at,
            sid,
        ),
    )
