"""The materialised rows on PostgreSQL, written in the transaction of the event that changes
them: the same rules as :mod:`eventlog.sqlite.materialise`, on the shared tables.

Every row names its session, so an event of one session never changes another's rows.
"""

from __future__ import annotations

from typing import Any

import psycopg

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
    TokenUsage,
)
from eventlog.records import AppendRequest
from eventlog.row_encoding import json_or_none, node_content, run_end_values
from eventlog.seed_enums import stored_run_status

Conn = psycopg.Connection[Any]


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


def materialise(  # noqa: C901 - one case per materialised event type, as on SQLite
    conn: Conn,
    node_seq: int | None,
    sid: str,
    req: AppendRequest,
    event: Event,
) -> None:
    """Apply ``event`` to the materialised tables (``node_seq``: a node_appended's number)."""
    at = req.created_at
    match event:
        case NodeAppended():
            assert node_seq is not None
            _insert_node(conn, sid, event.node, node_seq, at)
            if event.activate:
                _set_active_node(conn, sid, event.node.node_id)
        case ActiveNodeSwitched(to_node_id=to_node):
            _set_active_node(conn, sid, to_node)
        case SessionArchived():
            conn.execute("UPDATE sessions SET status = 'archived' WHERE session_id = %s", (sid,))
        case AgentCreated():
            meta = {"role": event.role, "purpose": event.purpose, **event.metadata}
            conn.execute(
                "INSERT INTO agents VALUES (%s, %s, %s, %s, %s, %s, 'idle', NULL, %s, %s, %s)",
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
        case AgentStatusChanged(agent_id=agent_id, status=status, result=result):
            conn.execute(
                "UPDATE agents SET status = %s, result_json = COALESCE(%s, result_json),"
                " updated_at = %s WHERE agent_id = %s AND session_id = %s",
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


def _set_active_node(conn: Conn, sid: str, node_id: str) -> None:
    conn.execute("UPDATE sessions SET active_node_id = %s WHERE session_id = %s", (node_id, sid))


def _insert_node(conn: Conn, sid: str, node: Node, node_seq: int, at: str) -> None:
    # The row holds the content as its event does (the seed's columns, docs/storage.md).
    run_id, content, metadata, tokens = node_content(node)
    conn.execute(
        "INSERT INTO nodes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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


def _set_run_status(conn: Conn, sid: str, event: RunWaiting | RunResumed, at: str) -> None:
    """A run parks (API ``waiting``: stored ``pending``) or goes on after its wait."""
    status, detail = stored_run_status("waiting" if isinstance(event, RunWaiting) else "running")
    conn.execute(
        "UPDATE runs SET status = %s, status_detail = %s, updated_at = %s"
        " WHERE run_id = %s AND session_id = %s",
        (status, detail, at, event.run_id, sid),
    )


def _add_usage(conn: Conn, sid: str, req: AppendRequest, event: TokenUsage) -> None:
    """A run not ended keeps its usage so far: ``usage_json`` plus this call's (run_ended
    then sets the run's own), added in place as on SQLite."""
    if req.run_id is None:
        return
    u = event.usage
    conn.execute(
        "UPDATE runs SET usage_json = json_build_object("
        "'input_tokens', COALESCE((usage_json::json ->> 'input_tokens')::bigint, 0) + %s,"
        " 'output_tokens', COALESCE((usage_json::json ->> 'output_tokens')::bigint, 0) + %s,"
        " 'cache_read_tokens',"
        " COALESCE((usage_json::json ->> 'cache_read_tokens')::bigint, 0) + %s,"
        " 'cache_write_tokens',"
        " COALESCE((usage_json::json ->> 'cache_write_tokens')::bigint, 0) + %s)::text"
        " WHERE run_id = %s AND session_id = %s AND status IN ('running', 'pending')",
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            req.run_id,
            sid,
        ),
    )


def _insert_run(conn: Conn, sid: str, event: RunStarted, at: str) -> None:
    meta = {
        "phase": event.phase,
        "attempt": event.attempt,
        "rng_seed": event.rng_seed,
        **event.metadata,
    }
    conn.execute(
        "INSERT INTO runs VALUES"
        " (%s, %s, %s, 'running', %s, NULL, NULL, 0, NULL, NULL, %s, %s, %s, NULL)",
        (event.run_id, sid, event.agent_id, event.start_node_id, json_or_none(meta), at, at),
    )


def _end_run(conn: Conn, sid: str, event: RunEnded, at: str) -> None:
    status, detail, end_reason = run_end_values(event)
    conn.execute(
        "UPDATE runs SET status = %s, status_detail = %s, end_reason = %s, end_node_id = %s,"
        " turn_count = %s, usage_json = %s, error_json = %s, updated_at = %s"
        " WHERE run_id = %s AND session_id = %s",
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


def _insert_artifact(conn: Conn, sid: str, req: AppendRequest, event: ArtifactCreated) -> None:
    # ON CONFLICT DO NOTHING: the first artifact_created of a content-addressed id wins.
    conn.execute(
        "INSERT INTO artifacts VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
        " ON CONFLICT DO NOTHING",
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
