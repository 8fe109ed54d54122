"""The event store contract every backend implements (SQLite and PostgreSQL).

:class:`EventStore` is the one store protocol: the writer actor, the projections and
the runtime type against it, never against a backend class. It holds what code outside
a store uses. ``tests/eventlog/store_conformance.py`` is its executable form: each
backend runs that suite through its own factory fixture.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import msgspec

from eventlog.artifacts import Artifacts
from eventlog.errors import ClewError
from eventlog.records import (
    AgentRow,
    AppendRequest,
    ArtifactRow,
    ChainStatus,
    NewRunCheck,
    NodeRow,
    RunRow,
    SessionRow,
    StoredEvent,
)


@runtime_checkable
class EventStore(Protocol):
    """Append-only events per session, plus the materialised rows written with them.

    Every reader validates its session id first (``InvalidSessionId``) and, except
    :meth:`session_exists`, raises ``UnknownSession`` for a session that is not stored.
    """

    @property
    def artifact_threshold(self) -> int:
        """Encoded size (bytes) above which a JSON block is stored as an artifact."""
        ...

    @property
    def artifacts(self) -> Artifacts:
        """The artifacts (files or rows), durable before the events that reference them."""
        ...

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append in one transaction; a failing request is rolled back alone.

        Returns:
            per request, its stored events or its error.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...

    def session_exists(self, session_id: str) -> bool:
        """Return whether ``session_id`` is a stored session."""
        ...

    def read_session(self, session_id: str) -> SessionRow:
        """Return the session's row."""
        ...

    def list_sessions(self) -> list[SessionRow]:
        """Return every session, oldest first."""
        ...

    def list_sessions_page(
        self, *, after: str | None = None, limit: int = 50, newest_first: bool = False
    ) -> list[SessionRow]:
        """Return one keyset page of sessions after the session ``after`` (None: the
        first), oldest first, or by last activity with ``newest_first``; reads only the
        ``sessions`` table, through an index."""
        ...

    def search_sessions_page(
        self, text: str, *, after: str | None = None, limit: int = 50
    ) -> tuple[list[SessionRow], str | None]:
        """Return the sessions whose id starts with ``text`` (text like ``sess_…``) or, in
        a bounded window of sessions after ``after``, whose metadata or runs' metadata
        holds it (case-insensitive); and the cursor to search on from (None: the end)."""
        ...

    def read_runs_of(self, session_ids: Sequence[str]) -> dict[str, list[RunRow]]:
        """Return the runs of each session of ``session_ids``, by creation time (one query)."""
        ...

    def count_events_of(self, session_ids: Sequence[str]) -> dict[str, int]:
        """Return the number of events of each session of ``session_ids`` (one statement
        for a page; 0 for a session not stored)."""
        ...

    def open_run_sessions(self, newest: int | None = None) -> list[str]:
        """Return the sessions with a run ``running`` or ``pending`` in the store (with
        ``newest``: among the ``newest`` sessions by last activity)."""
        ...

    def sessions_mark(self) -> tuple[int, str | None]:
        """Return ``(number of sessions, latest updated_at)``: changes at every append."""
        ...

    def read_events(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Return the session's events with ``seq > after_seq``, in seq order."""
        ...

    def iter_events(self, session_id: str, batch: int = 20_000) -> Iterator[StoredEvent]:
        """Yield the session's events in seq order, ``batch`` a backend's read-ahead hint.

        Follows the hash chain as it goes: ``IntegrityError`` before yielding an event whose
        chain link is broken, or after the last one when the newest events are missing.
        """
        ...

    def check_chain(self, session_id: str) -> ChainStatus:
        """Follow the session's hash chain over every event; raise ``IntegrityError`` naming
        the first seq that breaks it (:meth:`iter_events` checks the same as it streams)."""
        ...

    def read_snapshot(self) -> AbstractContextManager[None]:
        """Hold one read snapshot for the block: every read of this thread in it sees the
        same committed state, whatever other processes commit meanwhile (``verify``
        compares the events with the tables). Nested blocks share the outer snapshot."""
        ...

    def read_run(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return one run's events in run_seq order."""
        ...

    def read_runs_under(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return the events of ``run_id`` and of the runs ``run_id + "/…"``, in seq order."""
        ...

    def read_session_events(self, session_id: str, event_type: str) -> list[StoredEvent]:
        """Return the session-level events (no run) of ``event_type``, in seq order
        (``content_stored``: the texts requests recorded by reference refer to)."""
        ...

    def read_events_of_types(
        self, session_id: str, event_types: Sequence[str]
    ) -> list[StoredEvent]:
        """Return the session's events of ``event_types``, in seq order (a read model that
        needs a few types skips decoding the rest; the hash chain is not followed)."""
        ...

    def count_events(self, session_id: str) -> int:
        """Return the number of events of the session."""
        ...

    def read_node(self, session_id: str, node_id: str) -> NodeRow | None:
        """Return one node, or None."""
        ...

    def read_children(self, session_id: str, node_id: str) -> list[NodeRow]:
        """Return the children of ``node_id`` in node_seq order."""
        ...

    def read_nodes(self, session_id: str) -> list[NodeRow]:
        """Return every node of the session in node_seq order."""
        ...

    def read_active_path(self, session_id: str, node_id: str | None = None) -> list[NodeRow]:
        """Return the path root → ``node_id`` (default: the active node)."""
        ...

    def read_agents(self, session_id: str) -> list[AgentRow]:
        """Return the session's agents, by creation time."""
        ...

    def read_runs(self, session_id: str) -> list[RunRow]:
        """Return the session's runs, by creation time."""
        ...

    def read_run_statuses(self, session_id: str) -> list[tuple[str, str | None, str]]:
        """Return ``(run_id, agent_id, status)`` of the session's runs, by creation time:
        :meth:`read_runs` without decoding each run's record (what a new run checks)."""
        ...

    def read_new_run_check(self, session_id: str, agent_id: str) -> NewRunCheck:
        """Return the session's runs not finished (``running``, ``pending``, ``waiting``;
        ``(run_id, agent_id, status)`` by creation time) and how many runs ``agent_id``
        owns: what a new main run checks, without a row per ended run."""
        ...

    def read_artifacts(self, session_id: str) -> list[ArtifactRow]:
        """Return the session's artifacts."""
        ...


class SessionDeletion(msgspec.Struct, frozen=True, kw_only=True):
    """What deleting a session removed (counts only: no content): the store's reply to
    ``delete_session`` and a row of its ``deleted_sessions`` audit table."""

    session_id: str
    events: int
    nodes: int
    agents: int
    runs: int
    #: Artifact rows of the session.
    artifacts: int
    #: When (the caller's clock; the store's wall clock when none was given).
    deleted_at: str = ""
    #: Artifact blobs/files kept because another session (a fork) references them.
    artifacts_kept: int = 0
    #: Task WALs removed (the caller's count for file WALs; the ``task_wal`` table's).
    task_wals: int = 0


@runtime_checkable
class KeepsColdFiles(Protocol):
    """A store that moves an archived session's tables to a file of its own, so the main
    file's schema holds only the live sessions (SQLite: :mod:`eventlog.sqlite.cold`;
    PostgreSQL has shared tables and needs none).

    Only the writer actor calls it (``Writer.move_to_cold``), like an append.
    """

    def move_to_cold(self, session_id: str) -> bool:
        """Move the archived session's tables to its cold file; False when they are
        there already. Its reads go on unchanged."""
        ...


@runtime_checkable
class DeletesSessions(Protocol):
    """A store that can delete a session for good (both backends can).

    Only the writer actor calls it (``Writer.delete_session``), like an append.
    """

    def delete_session(
        self, session_id: str, *, deleted_at: str = "", task_wals: int = 0
    ) -> SessionDeletion:
        """Remove the session's events, materialised rows and the artifacts no other
        session references, and record the deletion in ``deleted_sessions`` (same
        transaction); ``task_wals`` is the caller's count of file WALs it removes.

        Raises:
            DeletedSession: the session was deleted already.
            UnknownSession: no such session.
        """
        ...

    def read_deletion(self, session_id: str) -> SessionDeletion | None:
        """Return the last recorded deletion of ``session_id``, or None."""
        ...

    def list_deletions(self) -> list[SessionDeletion]:
        """Return every recorded deletion, oldest first."""
        ...
