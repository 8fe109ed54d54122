"""The read side of the PostgreSQL store: autocommit readers, a connection per thread.

A full read of a session (:meth:`PostgresReads.iter_events`, :meth:`check_chain`) runs in
one ``REPEATABLE READ`` snapshot on a connection of its own, so the chain head agrees
with the rows, and follows the hash chain (:mod:`eventlog.chain`: the same rows,
the same hashes) as it streams through a server-side cursor.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from eventlog.chain import EVENT_COLUMNS, ChainWalk
from eventlog.codec import decode_event
from eventlog.deletions import deleted_error
from eventlog.errors import DecodeError, UnknownSession
from eventlog.global_reads import GlobalTableReads
from eventlog.ids import validate_session_id
from eventlog.path_memo import PathMemo
from eventlog.postgres.connections import Connections, translate_errors
from eventlog.postgres.deletion import list_deletions, read_deletion
from eventlog.records import (
    ChainStatus,
    NodeRow,
    StoredEvent,
)
from eventlog.row_decoding import (
    node_row,
)
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


class PostgresReads(GlobalTableReads):
    """Readers of sessions, events, nodes, runs, agents and artifacts."""

    def __init__(self, connections: Connections, *, seed_columns: bool = True) -> None:
        """Read through ``connections``.

        Args:
            seed_columns: every node row holds its content and ``runs`` has
                ``status_detail`` (schema version 4+); False only for a read-only store
                on an older database, whose version 3 node rows refer to their events.
        """
        self._connections = connections
        self._streams = threading.local()
        self._seed_columns = seed_columns
        super().__init__(mark="%s", seed_columns=seed_columns)
        #: The last path read_active_path returned, per session.
        self._paths = PathMemo()

    def _node_select(self) -> tuple[str, str]:
        """Return the select list of node rows (``nodes n``) and the join it needs.

        Every node row holds its content since schema version 4. A read-only store on
        a version 3 database joins its rows with their event (those written at version 3
        refer to it); on an older one no row does. Looked up on every read: a writable
        process may migrate the database meanwhile.
        """
        if not self._seed_columns:
            found = self._query(
                "SELECT 1 FROM information_schema.columns"
                " WHERE table_name = 'nodes' AND column_name = 'event_seq'"
                " AND table_schema = current_schema()"
            )
            if found:
                return _NODE_COLUMNS, _EVENT_JOIN
        return f"{_LEGACY_NODE_COLUMNS}, NULL, NULL", ""

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with translate_errors("reading"):
            return self._connections.reader().execute(sql, params).fetchall()

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
                if conn is not self._connections.in_snapshot():  # (else: a savepoint in it)
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
        snapshot = self._connections.in_snapshot()
        if snapshot is not None:
            return snapshot  # inside read_snapshot: every read in its one transaction
        idle: list[psycopg.Connection[Any]] = getattr(self._streams, "idle", [])
        self._streams.idle = idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return self._connections.connect()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        if conn is self._connections.in_snapshot():
            return  # it ends with the snapshot
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

    def count_events_of(self, session_ids: Sequence[str]) -> dict[str, int]:
        """Return the number of events of each of ``session_ids`` (validated; 0 for one not
        stored): one ``GROUP BY`` over the primary key's ranges of the page's sessions."""
        sids = [validate_session_id(s) for s in session_ids]
        out = dict.fromkeys(sids, 0)
        if sids:
            rows = self._query(
                "SELECT session_id, COUNT(*) FROM events WHERE session_id = ANY(%s)"
                " GROUP BY session_id",
                (sids,),
            )
            out.update({str(r[0]): int(r[1]) for r in rows})
        return out

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

    def _usage_payloads(self, sid: str, run_id: str) -> list[str]:
        rows = self._query(
            "SELECT payload_json FROM events WHERE session_id = %s AND run_id = %s"
            " AND event_type = 'token_usage' ORDER BY seq",
            (sid, run_id),
        )
        return [str(r[0]) for r in rows]

    def execute_unchecked(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run raw SQL on a reader connection — for tests that tamper with rows only."""
        with translate_errors("raw sql"):
            self._connections.reader().execute(sql, params)
