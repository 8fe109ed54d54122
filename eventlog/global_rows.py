"""The materialised rows of the global tables, as one SQL for every backend.

``sessions.status``, the ``agents``, ``runs`` and ``artifacts`` rows change the same
way on SQLite and PostgreSQL (both hold the seed's columns in the seed's order): this
module turns an event into the statement that applies it, written once. A backend's
:class:`Dialect` says what differs — its parameter mark, how it adds a call's usage to
``usage_json`` in place, how an insert keeps the first row of a key — and its
materialiser runs the statement in the event's transaction (the node rows and the
active node stay with each backend: their tables differ).

The global tables are keyed globally, so every statement names the session too: an
event of one session never changes another session's agent or run row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionArchived,
    TokenUsage,
)
from eventlog.records import AppendRequest
from eventlog.row_encoding import json_or_none, run_end_values
from eventlog.seed_enums import stored_run_status

#: A statement and its parameters.
Statement = tuple[str, tuple[Any, ...]]

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

#: The statements, with ``?`` marks; ``{usage}`` and ``{insert}``/``{ignore}`` are the
#: dialect's.
_SQL = {
    "archive": "UPDATE sessions SET status = 'archived' WHERE session_id = ?",
    "agent": "INSERT INTO agents VALUES (?, ?, ?, ?, ?, ?, 'idle', NULL, ?, ?, ?)",
    "agent_status": "UPDATE agents SET status = ?, result_json = COALESCE(?, result_json),"
    " updated_at = ? WHERE agent_id = ? AND session_id = ?",
    "run": "INSERT INTO runs VALUES"
    " (?, ?, ?, 'running', ?, NULL, NULL, 0, NULL, NULL, ?, ?, ?, NULL)",
    "run_status": "UPDATE runs SET status = ?, status_detail = ?, updated_at = ?"
    " WHERE run_id = ? AND session_id = ?",
    # A run not ended keeps its usage so far, added in place (no read of the row first).
    "usage": "UPDATE runs SET usage_json = {usage}"
    " WHERE run_id = ? AND session_id = ? AND status IN ('running', 'pending')",
    "run_end": "UPDATE runs SET status = ?, status_detail = ?, end_reason = ?,"
    " end_node_id = ?, turn_count = ?, usage_json = ?, error_json = ?, updated_at = ?"
    " WHERE run_id = ? AND session_id = ?",
    # The first artifact_created of a content-addressed id wins.
    "artifact": "{insert} artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?){ignore}",
}


class Dialect:
    """What one backend's SQL says its own way; holds the statements in that dialect."""

    __slots__ = ("sql",)

    def __init__(
        self, *, mark: str, usage_field: str, usage_object: str, insert: str, ignore: str
    ) -> None:
        """Args:
        mark: the parameter mark (``?``, ``%s``).
        usage_field: the SQL of one field of ``usage_json`` plus a parameter, with
            ``{f}`` for the field's name.
        usage_object: the SQL of the JSON object of ``{pairs}`` (``'name', value, …``).
        insert, ignore: what starts an insert that keeps the first row of a key, and
            what ends it.
        """
        pairs = ", ".join(f"'{f}', " + usage_field.format(f=f) for f in _USAGE_FIELDS)
        usage = usage_object.format(pairs=pairs)
        self.sql = {
            name: text.format(usage=usage, insert=insert, ignore=ignore).replace("?", mark)
            for name, text in _SQL.items()
        }


def _archive(sql: dict[str, str], sid: str, req: AppendRequest, e: SessionArchived) -> Statement:
    return sql["archive"], (sid,)


def _agent(sql: dict[str, str], sid: str, req: AppendRequest, e: AgentCreated) -> Statement:
    at = req.created_at
    meta = {"role": e.role, "purpose": e.purpose, **e.metadata}
    return sql["agent"], (
        e.agent_id, sid, e.parent_agent_id, e.agent_type, e.created_by_run_id,
        e.fork_from_node_id, json_or_none(meta), at, at,
    )  # fmt: skip


def _agent_status(
    sql: dict[str, str], sid: str, req: AppendRequest, e: AgentStatusChanged
) -> Statement:
    return sql["agent_status"], (
        e.status, json_or_none(e.result), req.created_at, e.agent_id, sid,
    )  # fmt: skip


def _run(sql: dict[str, str], sid: str, req: AppendRequest, e: RunStarted) -> Statement:
    at = req.created_at
    meta = {"phase": e.phase, "attempt": e.attempt, "rng_seed": e.rng_seed, **e.metadata}
    return sql["run"], (e.run_id, sid, e.agent_id, e.start_node_id, json_or_none(meta), at, at)


def _run_status(
    sql: dict[str, str], sid: str, req: AppendRequest, e: RunWaiting | RunResumed
) -> Statement:
    # A parked run (API ``waiting``) is stored ``pending`` (eventlog.seed_enums).
    status, detail = stored_run_status("waiting" if isinstance(e, RunWaiting) else "running")
    return sql["run_status"], (status, detail, req.created_at, e.run_id, sid)


def _usage(sql: dict[str, str], sid: str, req: AppendRequest, e: TokenUsage) -> Statement | None:
    if req.run_id is None:
        return None
    added = tuple(getattr(e.usage, f) for f in _USAGE_FIELDS)
    return sql["usage"], (*added, req.run_id, sid)


def _run_end(sql: dict[str, str], sid: str, req: AppendRequest, e: RunEnded) -> Statement:
    status, detail, end_reason = run_end_values(e)
    return sql["run_end"], (
        status, detail, end_reason, e.end_node_id, e.turn_count, json_or_none(e.usage),
        json_or_none(e.error), req.created_at, e.run_id, sid,
    )  # fmt: skip


def _artifact(sql: dict[str, str], sid: str, req: AppendRequest, e: ArtifactCreated) -> Statement:
    return sql["artifact"], (
        e.artifact_id, sid, req.agent_id, req.run_id, e.node_id, e.tool_call_id, e.path,
        e.filename, e.mime_type, e.size_bytes, e.summary, json_or_none({"sha256": e.sha256}),
        req.created_at,
    )  # fmt: skip


_Builder = Callable[[dict[str, str], str, AppendRequest, Any], "Statement | None"]
#: Per event class, what makes its statement.
_BUILDERS: dict[type, _Builder] = {
    SessionArchived: _archive,
    AgentCreated: _agent,
    AgentStatusChanged: _agent_status,
    RunStarted: _run,
    RunEnded: _run_end,
    RunWaiting: _run_status,
    RunResumed: _run_status,
    TokenUsage: _usage,
    ArtifactCreated: _artifact,
}
#: The events whose statement :func:`statement` returns.
GLOBAL_EVENTS = frozenset(_BUILDERS)


def statement(d: Dialect, sid: str, req: AppendRequest, event: Event) -> Statement | None:
    """Return the statement that applies ``event`` to the global tables, or None."""
    build = _BUILDERS.get(type(event))
    return None if build is None else build(d.sql, sid, req, event)
