"""The read side of the PostgreSQL store: autocommit readers, a connection per thread.

A full read of a session (:meth:`PostgresReads.iter_events`, :meth:`check_chain`) runs in
one ``REPEATABLE READ`` snapshot on a connection of its own, so the chain head agrees
with the rows, and follows the hash chain (:mod:`eventlog.sqlite.chain`: the same rows,
the same hashes) as it streams through a server-side cursor.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from eventlog.codec import decode_event
from eventlog.deletions import deleted_error
from eventlog.errors import DecodeError, UnknownSession
from eventlog.ids import validate_session_id
from eventlog.path_memo import PathMemo
from eventlog.postgres.connections import Connections, translate_errors
from eventlog.postgres.deletion import list_deletions, read_deletion
from eventlog.records import (
    AgentRow,
    ArtifactRow,
    ChainStatus,
    NodeRow,
    RunRow,
    SessionRow,
    StoredEvent,
)
from eventlog.row_decoding import (
    SESSION_COLUMNS,
    agent_row,
    artifact_row,
    node_row,
    run_row,
    session_row,
)
from eventlog.sqlite.chain import EVENT_COLUMNS, ChainWalk
from eventlog.store import SessionDeletion

_LEGACY_NODE_COLUMNS = (
    "n.node_id, n.node_seq, n.parent_id, n.agent_id, n.run_id, n.role, n.node_type,"
    " n.content_json, n.metadata_json, n.token_count, n.created_at"
)
#: :data:`~eventlog.row_decoding.NODE_COLUMNS` of ``nodes n`` joined with its event ``e``:
#: a row written since schema version 3 refers to its node_appended event for the content.
_NODE_COLUMNS = f"{_LEGACY_NODE_COLUMNS}, n.event_seq, e.payload_json"
_EVENT_JOIN = "LEFT JOIN events e ON e.session_id = n.session_id AND e.seq = n.event_seq"


def _event(row: Sequence[Any]) -> StoredEvent:
    a, b, c, d, e, f, g, h, i, j, k = row
    try:
        event = decode_event(j)
    except DecodeError as err:
        raise DecodeError(f"event {a} (seq {b}): {err}") from err
    return StoredEvent(a, b, c, d, e, f, g, h, i, k, event)


class PostgresReads:
    """Readers of sessions, events, nodes, runs, agents and artifacts."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._streams = threading.local()
        self._nodes_refer = False
        #: The last path read_active_path returned, per session.
        self._paths = PathMemo()

    def _node_select(self) -> tuple[str, str]:
        """Return the select list of node rows (``nodes n``) and the join it needs.

        A read-only store may read a database older than schema version 3, whose
        ``nodes`` has no ``event_seq``: every row holds its content. Only a yes is
        cached (another process may migrate the database meanwhile).
        """
        if not self._nodes_refer:
            found = self._query(
                "SELECT 1 FROM information_schema.columns"
                " WHERE table_name = 'nodes' AND column_name = 'event_seq'"
                " AND table_schema = current_schema()"
            )
            if not found:
                return f"{_LEGACY_NODE_COLUMNS}, NULL, NULL", ""
            self._nodes_refer = True
        return _NODE_COLUMNS, _EVENT_JOIN

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with translate_errors("reading"):
            return self._connections.reader().execute(sql, params).fetchall()

    def session_exists(self, session_id: str) -> bool:
        """Return whether ``session_id`` (validated) is a stored session."""
        sid = validate_session_id(session_id)
        return bool(self._query("SELECT 1 FROM sessions WHERE session_id = %s", (sid,)))

    def _require(self, session_id: str) -> str:
        sid = validate_session_id(session_id)
        if not self.session_exists(sid):
            raise self._unknown(sid)
        return sid

    def _unknown(self, sid: str) -> UnknownSession:
        """``DeletedSession`` (saying when) for a deleted session, else ``UnknownSession``."""
        gone = self.read_deletion(sid)
        return deleted_error(gone) if gone else UnknownSession(f"unknown session {sid}")

    def read_deletion(self, session_id: str) -> SessionDeletion | None:
        """Return the last recorded deletion of ``session_id`` (validated), or None."""
        sid = validate_session_id(session_id)
        with translate_errors("reading"):
            return read_deletion(self._connections.reader(), sid)

    def list_deletions(self) -> list[SessionDeletion]:
        """Return every recorded deletion (``deleted_sessions``), oldest first."""
        with translate_errors("reading"):
            return list_deletions(self._connections.reader())

    def _events(
        self, where: str, params: Sequence[Any], tail: str = "ORDER BY seq"
    ) -> list[StoredEvent]:
        rows = self._query(f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} {tail}", params)
        return [_event(r) for r in rows]

    def read_events(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Return the session's events with ``seq > after_seq``, in seq order."""
        sid = self._require(session_id)
        tail = "ORDER BY seq" + ("" if limit is None else f" LIMIT {int(limit)}")
        return self._events("session_id = %s AND seq > %s", (sid, after_seq), tail)

    def iter_events(self, session_id: str, batch: int = 20_000) -> Iterator[StoredEvent]:
        """Yield the session's events in seq order, following the hash chain as they stream."""
        sid = self._require(session_id)
        with translate_errors("reading"):
            for row, walk in self._whole_session(sid, batch):
                if walk is not None:
                    walk.finish()
                    return
                yield _event(row)

    def check_chain(self, session_id: str) -> ChainStatus:
        """Follow the session's hash chain over every event (payloads are not decoded)."""
        sid = self._require(session_id)
        with translate_errors("reading"):
            for _row, walk in self._whole_session(sid, 20_000):
                if walk is not None:
                    return walk.finish()
        raise AssertionError("unreachable: the walk always ends")  # pragma: no cover

    def _whole_session(
        self, sid: str, batch: int
    ) -> Iterator[tuple[Sequence[Any], ChainWalk | None]]:
        """Yield ``(row, None)`` per checked row, then ``((), walk)`` once: one snapshot."""
        conn = self._borrow()
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                got = conn.execute(
                    "SELECT chain_from, chain_head FROM sessions WHERE session_id = %s", (sid,)
                ).fetchone()
                chain_from, head = got if got is not None else (None, None)
                walk = ChainWalk(sid, 1 if chain_from is None else chain_from, head)
                with conn.cursor(name="clew_stream") as cur:
                    cur.itersize = max(1, batch)
                    cur.execute(
                        f"SELECT {EVENT_COLUMNS}, hash FROM events"
                        " WHERE session_id = %s ORDER BY seq",
                        (sid,),
                    )
                    step = walk.step
                    for *values, stored_hash in cur:
                        step(values, stored_hash)
                        yield values, None
                yield (), walk
        finally:
            self._give_back(conn)

    def _borrow(self) -> psycopg.Connection[Any]:
        idle: list[psycopg.Connection[Any]] = getattr(self._streams, "idle", [])
        self._streams.idle = idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return self._connections.connect()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        idle: list[psycopg.Connection[Any]] = getattr(self._streams, "idle", [])
        self._streams.idle = idle
        if len(idle) < 2 and not conn.closed and conn.info.transaction_status == 0:
            idle.append(conn)
        else:
            conn.close()

    def read_run(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return one run's events in run_seq order."""
        sid = self._require(session_id)
        return self._events("session_id = %s AND run_id = %s", (sid, run_id), "ORDER BY run_seq")

    def read_runs_under(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return the events of ``run_id`` and of the runs ``run_id + "/…"``, in seq order."""
        sid = self._require(session_id)
        return self._events(
            "session_id = %s AND (run_id = %s OR (run_id >= %s AND run_id < %s))",
            (sid, run_id, run_id + "/", run_id + "0"),
        )

    def read_events_of_types(
        self, session_id: str, event_types: Sequence[str]
    ) -> list[StoredEvent]:
        """Return the session's events of ``event_types``, in seq order."""
        sid = self._require(session_id)
        if not event_types:
            return []
        return self._events("session_id = %s AND event_type = ANY(%s)", (sid, list(event_types)))

    def read_session_events(self, session_id: str, event_type: str) -> list[StoredEvent]:
        """Return the session-level events (no run) of ``event_type``, in seq order."""
        sid = self._require(session_id)
        return self._events(
            "session_id = %s AND run_id IS NULL AND event_type = %s", (sid, event_type)
        )

    def count_events(self, session_id: str) -> int:
        """Return the number of events of the session."""
        sid = self._require(session_id)
        return int(self._query("SELECT COUNT(*) FROM events WHERE session_id = %s", (sid,))[0][0])

    def _nodes(self, where: str, params: Sequence[Any]) -> list[NodeRow]:
        columns, join = self._node_select()
        rows = self._query(f"SELECT {columns} FROM nodes n {join} WHERE {where}", params)
        return [node_row(r) for r in rows]

    def read_node(self, session_id: str, node_id: str) -> NodeRow | None:
        """Return one node, or None."""
        sid = self._require(session_id)
        rows = self._nodes("n.session_id = %s AND n.node_id = %s", (sid, node_id))
        return rows[0] if rows else None

    def read_children(self, session_id: str, node_id: str) -> list[NodeRow]:
        """Return the children of ``node_id`` in node_seq order."""
        sid = self._require(session_id)
        return self._nodes(
            "n.session_id = %s AND n.parent_id = %s ORDER BY n.node_seq", (sid, node_id)
        )

    def read_nodes(self, session_id: str) -> list[NodeRow]:
        """Return every node of the session in node_seq order."""
        sid = self._require(session_id)
        return self._nodes("n.session_id = %s ORDER BY n.node_seq", (sid,))

    def read_active_path(self, session_id: str, node_id: str | None = None) -> list[NodeRow]:
        """Return the path root → ``node_id`` (default: the active node), via a recursive CTE.

        A session's last path is kept (:class:`~eventlog.path_memo.PathMemo`): when
        ``node_id`` descends from its tip, only the nodes below that tip are read.
        """
        session = self.read_session(session_id)  # validates; UnknownSession / DeletedSession
        sid = session.session_id
        if node_id is None:
            node_id = session.active_node_id
            if node_id is None:
                return []
        columns, join = self._node_select()
        # The walk up stops at the second %s (the kept tip; NULL: at the root) when it meets it.
        sql = f"""WITH RECURSIVE path(node_id, depth) AS (
                    SELECT %s::text, 0
                    UNION ALL
                    SELECT n.parent_id, path.depth + 1 FROM nodes n
                    JOIN path ON n.session_id = %s AND n.node_id = path.node_id
                    WHERE n.parent_id IS NOT NULL AND path.depth < 1000000
                        AND path.node_id IS DISTINCT FROM %s::text
                )
                SELECT {columns} FROM path JOIN nodes n
                    ON n.session_id = %s AND n.node_id = path.node_id
                {join}
                ORDER BY path.depth DESC"""

        def walk(stop: str | None) -> list[NodeRow]:
            return [node_row(r) for r in self._query(sql, (node_id, sid, stop, sid))]

        return self._paths.read(sid, session.created_at, walk)

    def read_session(self, session_id: str) -> SessionRow:
        """Return the session's row; raise ``UnknownSession`` if there is none."""
        sid = validate_session_id(session_id)
        rows = self._query(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = %s", (sid,))
        if not rows:
            raise self._unknown(sid)
        return session_row(rows[0])

    def list_sessions(self) -> list[SessionRow]:
        """Return every session, oldest first."""
        rows = self._query(
            f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at, session_id"
        )
        return [session_row(r) for r in rows]

    def read_agents(self, session_id: str) -> list[AgentRow]:
        """Return the session's agents, by creation time."""
        sid = self._require(session_id)
        rows = self._query(
            "SELECT agent_id, session_id, parent_agent_id, agent_type, created_by_run_id,"
            " fork_from_node_id, status, result_json, metadata_json, created_at, updated_at"
            " FROM agents WHERE session_id = %s ORDER BY created_at, agent_id",
            (sid,),
        )
        return [agent_row(r) for r in rows]

    def read_runs(self, session_id: str) -> list[RunRow]:
        """Return the session's runs, by creation time."""
        sid = self._require(session_id)
        rows = self._query(
            "SELECT run_id, session_id, agent_id, status, start_node_id, end_node_id,"
            " end_reason, turn_count, usage_json, error_json, metadata_json, created_at,"
            " updated_at FROM runs WHERE session_id = %s ORDER BY created_at, run_id",
            (sid,),
        )
        return [run_row(r) for r in rows]

    def read_run_statuses(self, session_id: str) -> list[tuple[str, str | None, str]]:
        """Return ``(run_id, agent_id, status)`` of the session's runs, by creation time."""
        sid = self._require(session_id)
        rows = self._query(
            "SELECT run_id, agent_id, status FROM runs WHERE session_id = %s"
            " ORDER BY created_at, run_id",
            (sid,),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def read_artifacts(self, session_id: str) -> list[ArtifactRow]:
        """Return the session's artifacts."""
        sid = self._require(session_id)
        rows = self._query(
            "SELECT artifact_id, session_id, agent_id, run_id, node_id, tool_call_id, path,"
            " filename, mime_type, size_bytes, summary, metadata_json, created_at"
            " FROM artifacts WHERE session_id = %s ORDER BY created_at, artifact_id",
            (sid,),
        )
        return [artifact_row(r) for r in rows]

    def execute_unchecked(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run raw SQL on a reader connection — for tests that tamper with rows only."""
        with translate_errors("raw sql"):
            self._connections.reader().execute(sql, params)
