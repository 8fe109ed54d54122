"""Row shapes: what producers hand the writer, and what readers get back."""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog.blocks import ContentBlock
from eventlog.events import Event


class AppendRequest(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One event to append. The writer assigns seq, run_seq, node_seq and event_id."""

    session_id: str
    event: Event
    created_at: str
    agent_id: str | None = None
    run_id: str | None = None


class StoredEvent(msgspec.Struct, frozen=True, gc=False):
    """One committed row of ``events_<sid>`` with its decoded payload.

    Positional on purpose (the only struct here that is): readers build ~10⁵ of these
    per second from row tuples, and positional construction is the cheaper call.
    """

    event_id: str
    seq: int
    run_seq: int | None
    agent_id: str | None
    run_id: str | None
    level: str
    event_type: str
    node_id: str | None
    tool_call_id: str | None
    created_at: str
    event: Event


class ChainStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What following a session's hash chain found (it raises when the chain is broken).

    ``legacy_events`` were written before clew hashed events: the chain does not cover
    them (the first chained event seals them as they were when it was written).
    """

    session_id: str
    events: int
    legacy_events: int


class SessionRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    session_id: str
    cwd: str
    root_agent_id: str
    active_node_id: str | None
    parent_session_id: str | None
    status: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str


class AgentRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    agent_id: str
    session_id: str
    parent_agent_id: str | None
    agent_type: str
    created_by_run_id: str | None
    fork_from_node_id: str | None
    status: str
    result: dict[str, Any] | None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str


class NewRunCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What a new run checks of its session (``EventStore.read_new_run_check``)."""

    #: ``(run_id, agent_id, status)`` of the runs not finished, by creation time.
    unfinished: list[tuple[str, str | None, str]]
    #: How many runs the agent asked about owns (a main run: the Brain's runs so far).
    owned: int


class RunRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    run_id: str
    session_id: str
    agent_id: str
    status: str
    start_node_id: str | None
    end_node_id: str | None
    end_reason: str | None
    turn_count: int | None
    usage: dict[str, Any] | None
    error: dict[str, Any] | None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str


class NodeRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    node_id: str
    node_seq: int
    parent_id: str | None
    agent_id: str
    run_id: str | None
    role: str
    node_type: str
    content: list[ContentBlock]
    metadata: dict[str, Any]
    token_count: int | None
    created_at: str


class ArtifactRow(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    artifact_id: str
    session_id: str
    agent_id: str | None
    run_id: str | None
    node_id: str | None
    tool_call_id: str | None
    path: str
    filename: str | None
    mime_type: str | None
    size_bytes: int | None
    summary: str | None
    metadata: dict[str, Any]
    created_at: str
