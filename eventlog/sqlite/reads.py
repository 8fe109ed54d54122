"""The read side of the SQLite store: readers on a connection per thread (WAL).

:class:`eventlog.sqlite.store.SQLiteStore` extends :class:`SQLiteReads` with the
write side; they are apart because the write path and the read path change for
different reasons.

A full read of a session (:meth:`SQLiteReads.iter_events`, :meth:`SQLiteReads.check_chain`)
follows its hash chain (:mod:`eventlog.chain`) and raises ``IntegrityError`` at
the first break; a stored value that is not valid UTF-8 (a flipped byte) is an
``IntegrityError`` from every reader, never a ``UnicodeDecodeError``.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import apsw
import msgspec

from eventlog.chain import EVENT_COLUMNS, GENESIS, ChainWalk, follow_chain
from eventlog.codec import CURRENT_BY_CLASS, EVENT_DECODER, decode_event
from eventlog.deletions import deleted_error
from eventlog.errors import DecodeError, IntegrityError, UnknownSession
from eventlog.global_reads import GlobalTableReads
from eventlog.ids import validate_session_id
from eventlog.path_memo import PathMemo
from eventlog.records import (
    ChainStatus,
    NodeRow,
    StoredEvent,
)
from eventlog.row_decoding import (
    node_row,
)
from eventlog.sqlite.cold import ColdAttachments, cold_files
from eventlog.sqlite.connections import Connections
from eventlog.sqlite.deletion import list_deletions, read_deletion
from eventlog.sqlite.paths import path_sql
from eventlog.sqlite.schema import nodes_by_reference
from eventlog.sqlite.transaction import translate_errors
from eventlog.store import SessionDeletion

_encode = msgspec.json.Encoder().encode
_sha256 = hashlib.sha256


@contextmanager
def _valid_utf8(what: str) -> Iterator[None]:
    """Turn a stored value that is not valid UTF-8 into a one-line ``IntegrityError``.

    SQLite stores TEXT as given; only apsw's conversion to ``str`` notices a flipped byte.
    """
    try:
        yield
    except UnicodeDecodeError as e:
        raise IntegrityError(
            f"{what}: a stored value is not valid UTF-8 ({e.reason} at byte {e.start}):"
            " the database file was changed outside clew"
        ) from e


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while decoding a batch of rows.

    Decoded events cannot form reference cycles, yet each batch allocates ~10⁵
    containers, and the collector's repeated young-generation passes over them cost
    about 40% of the read time (bench_replay: 207k → 293k events/s without them).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class SQLiteReads(GlobalTableReads):
    """Readers of sessions, events, nodes, runs, agents and artifacts."""

    def __init__(
        self, connections: Connections, *, chained: bool = True, seed_columns: bool = True
    ) -> None:
        """Read through ``connections`` (a reader connection per thread).

        Args:
            chained: the file has the hash chain (schema version 2+); False only for a
                read-only store on a version 1 file, whose events all read as legacy.
            seed_columns: every node row holds its content and ``runs`` has
                ``status_detail`` (schema version 5+); False only for a read-only store
                on an older file, whose version 4 sessions' node rows refer to their events.
        """
        self._connections = connections
        #: The cold files (archived sessions' tables) each connection has attached.
        self._cold = ColdAttachments(connections.path)
        self._chained = chained
        #: The last path read_active_path returned, per session.
        self._paths = PathMemo()
        self._hash_column = "hash" if chained else "NULL"
        self._seed_columns = seed_columns
        super().__init__(mark="?", seed_columns=seed_columns)

    # --- reading -------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with translate_errors("reading"), _valid_utf8("reading the store"):
            return list(self._cold.execute(self._connections.reader(), sql, params))

    @contextmanager
    def _events_utf8(self, sql: str) -> Iterator[None]:
        """Name the event whose stored bytes are not valid UTF-8 (the flipped-byte case)."""
        try:
            yield
        except UnicodeDecodeError as e:
            match = re.search(r"events_(\w+)", sql)
            if match is None:  # pragma: no cover - every events query names its table
                raise
            sid = match.group(1)
            row = _bad_utf8_row(self._connections.reader(), sid, self._hash_column)
            raise IntegrityError(
                f"session {sid}: {row} is not valid UTF-8 ({e.reason}):"
                " the database file was changed outside clew"
            ) from e

    def _unknown(self, sid: str) -> UnknownSession:
        """The error for a session that is not stored: ``DeletedSession`` (saying when)
        for one the audit table records as deleted."""
        with translate_errors("reading"):
            gone = read_deletion(self._connections.reader(), sid)
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

    def _events(self, sql: str, params: Sequence[Any]) -> list[StoredEvent]:
        """Run an events query and decode its rows (the hot read path: kept inline)."""
        with translate_errors("reading"), self._events_utf8(sql), _gc_paused():
            cursor = self._cold.execute(self._connections.reader(), sql, params)
            try:
                # Field order of StoredEvent: the row's columns minus payload_json, then
                # the decoded payload. Inline on purpose: no per-row helper call on the hot path.
                return [
                    StoredEvent(a, b, c, d, e, f, g, h, i, k, decode_event(j))
                    for (a, b, c, d, e, f, g, h, i, j, k) in cursor
                ]
            except DecodeError:
                pass
        # Slow path, only to name the broken row in the error.
        for row in self._query(sql, params):
            try:
                decode_event(row[9])
            except DecodeError as err:
                raise DecodeError(f"event {row[0]} (seq {row[1]}): {err}") from err
        raise AssertionError("unreachable: a row failed, then decoded")  # pragma: no cover

    def read_events(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Return the session's events with ``seq > after_seq``, in seq order."""
        sid = self._require(session_id)
        sql = f"SELECT {EVENT_COLUMNS} FROM events_{sid} WHERE seq > ? ORDER BY seq"
        params: tuple[Any, ...] = (after_seq,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (after_seq, limit)
        return self._events(sql, params)

    def iter_events(self, session_id: str, batch: int = 20_000) -> Iterator[StoredEvent]:
        """Yield the session's events in seq order, decoding each row as it streams.

        One cursor, no intermediate lists, so memory stays flat (bench_replay's rebuild
        went from 267k to 311k events/s when this replaced batched reads). The cursor lives
        on a connection of its own, so a suspended iterator never pins the snapshot the
        thread's other reads see; it is given back (for the next stream, not re-opened: see
        ``IDLE_STREAMS``) when the iterator is exhausted or closed.
        The hash chain is followed as the rows stream, each row checked before it is
        decoded; the chain head is read in the same snapshot. ``batch`` is kept for the
        :class:`~eventlog.store.EventStore` contract.

        Raises:
            IntegrityError: the chain breaks (before the broken event is yielded; the
                head is checked after the last one), or a value is not valid UTF-8.
        """
        sid = self._require(session_id)
        with translate_errors("reading"), self._whole_session(sid) as (walk, rows):
            # The chain is followed inline (eventlog.chain's link and ChainWalk.step
            # unrolled): a method call and a tuple per row cost ~20% of the read
            # (docs/performance.md). A row the inline test does not pass goes to the walk,
            # which accepts a legacy row or raises naming the break.
            fast_from = walk.fast_from()
            prev, digest, count, seq = b"", GENESIS, 0, 0
            decode, current_of = EVENT_DECODER.decode, CURRENT_BY_CLASS
            for a, b, c, d, e, f, g, h, i, j, k, stored_hash in rows:
                values = (a, b, c, d, e, f, g, h, i, j, k)
                digest = _sha256(prev + _encode(values)).hexdigest()
                if digest != stored_hash or b < fast_from:
                    digest = walk.slow_step(values, stored_hash, prev.decode(), count)
                prev = digest.encode()
                count += 1
                seq = b
                try:
                    event = decode(j)
                    current = current_of[type(event)]
                    # codec.decode_event's test for the current version, inlined.
                    if event.schema_version != current or (
                        current != 1 and '"schema_version"' not in j
                    ):
                        event = decode_event(j)
                except (msgspec.DecodeError, DecodeError):
                    try:
                        event = decode_event(j)  # upcasts an older shape, or names the error
                    except DecodeError as err:
                        raise DecodeError(f"event {a} (seq {b}): {err}") from err
                yield StoredEvent(a, b, c, d, e, f, g, h, i, k, event)
            walk.settle(digest, count, seq)

    def check_chain(self, session_id: str) -> ChainStatus:
        """Follow the session's hash chain over every event (payloads are not decoded).

        Raises:
            IntegrityError: the chain is broken (naming the first seq that breaks it), or
                a stored value is not valid UTF-8.
        """
        sid = self._require(session_id)
        with translate_errors("reading"), self._whole_session(sid) as (walk, rows):
            return follow_chain(walk, rows)

    @contextmanager
    def _whole_session(self, sid: str) -> Iterator[tuple[ChainWalk, Iterator[Any]]]:
        """Open one read snapshot of the session: its chain walk and its rows in seq order.

        The rows come from a connection of their own (borrowed: opening one parses the whole
        schema, so verifying many sessions would be quadratic), given back on the way out.
        A value that is not valid UTF-8 is reported with the seq of its row.
        """
        conn = self._connections.borrow()
        cursor = None
        try:
            if not conn.in_transaction:  # (in a read_snapshot it is that snapshot's)
                conn.execute("BEGIN")  # one snapshot: the chain head agrees with the rows
            try:
                if self._chained:
                    chain_from, head = conn.execute(
                        "SELECT chain_from, chain_head FROM sessions WHERE session_id = ?",
                        (sid,),
                    ).fetchone() or (None, None)
                    # The migration set chain_from on every session: a NULL one was
                    # removed, and then every event must be chained.
                    walk = ChainWalk(sid, 1 if chain_from is None else chain_from, head)
                else:
                    walk = ChainWalk(sid, None, None)
                cursor = self._cold.execute(
                    conn,
                    f"SELECT {EVENT_COLUMNS}, {self._hash_column} FROM events_{sid} ORDER BY seq",
                )
                yield walk, cursor
            except UnicodeDecodeError as e:
                row = _bad_utf8_row(conn, sid, self._hash_column)
                raise IntegrityError(
                    f"session {sid}: {row} is not valid UTF-8 ({e.reason}):"
                    " the database file was changed outside clew"
                ) from e
        finally:
            if cursor is not None:
                cursor.close()
            self._connections.give_back(conn)

    def read_run(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return one run's events in run_seq order."""
        sid = self._require(session_id)
        return self._events(
            f"SELECT {EVENT_COLUMNS} FROM events_{sid} WHERE run_id = ? ORDER BY run_seq",
            (run_id,),
        )

    def read_runs_under(self, session_id: str, run_id: str) -> list[StoredEvent]:
        """Return the events of ``run_id`` and of every run whose id starts with
        ``run_id + "/"`` (a main run's worker runs), in seq order.

        Two index range scans on ``(run_id, run_seq)``: the cost follows the size of
        that family of runs, not of the session.
        """
        sid = self._require(session_id)
        # '0' is the character after '/', so [run/, run0) is exactly the "run/…" prefix.
        return self._events(
            f"SELECT {EVENT_COLUMNS} FROM events_{sid}"
            " WHERE run_id = ? OR (run_id >= ? AND run_id < ?)"
            " ORDER BY seq",
            (run_id, run_id + "/", run_id + "0"),
        )

    def read_events_of_types(
        self, session_id: str, event_types: Sequence[str]
    ) -> list[StoredEvent]:
        """Return the session's events of ``event_types``, in seq order.

        A scan of the table that decodes only the rows asked for (a waterfall's 13 types
        of bench_replay's 100k-event mix: 56% of the rows, read in ~45% of
        ``iter_events``'s time); the chain is not followed.
        """
        sid = self._require(session_id)
        if not event_types:
            return []
        marks = ", ".join("?" for _ in event_types)
        return self._events(
            f"SELECT {EVENT_COLUMNS} FROM events_{sid} WHERE event_type IN ({marks}) ORDER BY seq",
            tuple(event_types),
        )

    def read_session_events(self, session_id: str, event_type: str) -> list[StoredEvent]:
        """Return the session-level events (no run) of ``event_type``, in seq order.

        A range of the ``(run_id, run_seq)`` index (its NULL run ids): the cost follows the
        session-level events, not the session's size.
        """
        sid = self._require(session_id)
        return self._events(
            f"SELECT {EVENT_COLUMNS} FROM events_{sid}"
            " WHERE run_id IS NULL AND event_type = ? ORDER BY seq",
            (event_type,),
        )

    def count_events(self, session_id: str) -> int:
        """Return the number of events of the session."""
        sid = self._require(session_id)
        return int(self._query(f"SELECT COUNT(*) FROM events_{sid}")[0][0])

    def count_events_of(self, session_ids: Sequence[str]) -> dict[str, int]:
        """Return the number of events of each of ``session_ids`` (validated; 0 for one not
        stored): one ``UNION ALL`` statement per 200 sessions (SQLite allows 500 terms),
        not a session check and a count each."""
        sids = [validate_session_id(s) for s in session_ids]
        out = dict.fromkeys(sids, 0)
        marks = ", ".join("?" * len(sids))
        sql = f"SELECT session_id FROM sessions WHERE session_id IN ({marks})"
        stored = {str(r[0]) for r in self._query(sql, sids)} if sids else set()
        with translate_errors("reading"):
            cold = cold_files(self._connections.reader(), sorted(stored))
        out.update({s: events for s, (_, events, _) in cold.items()})  # they never change
        have = [s for s in sids if s in stored and s not in cold]
        for i in range(0, len(have), 200):
            terms = [f"SELECT '{s}', COUNT(*) FROM events_{s}" for s in have[i : i + 200]]
            out.update({str(r[0]): int(r[1]) for r in self._query(" UNION ALL ".join(terms))})
        return out

    def _node_source(self, sid: str) -> tuple[str, str]:
        """Return the select list (:data:`~eventlog.row_decoding.NODE_COLUMNS`) of the
        session's node rows, ``n`` the node table, and the join that list needs.

        Every node row holds its content since schema version 5. Only a read-only store
        on an older file meets a session made at version 4, whose rows refer to their
        ``node_appended`` event: those are joined with it by ``seq`` (the events table's
        rowid). That layout is looked up on every read (a writable process may migrate
        the file meanwhile).
        """
        if not self._seed_columns:
            with translate_errors("reading"):
                by_reference = nodes_by_reference(self._connections.reader(), sid)
            if by_reference:
                return (
                    "n.node_id, n.node_seq, n.parent_id, n.agent_id, NULL, n.role, n.node_type,"
                    " NULL, NULL, NULL, e.created_at, n.event_seq, e.payload_json",
                    f"LEFT JOIN events_{sid} e ON e.seq = n.event_seq",
                )
        return "n.*, NULL, NULL", ""

    def _nodes(self, sid: str, where: str = "", params: Sequence[Any] = ()) -> list[NodeRow]:
        columns, join = self._node_source(sid)
        rows = self._query(f"SELECT {columns} FROM nodes_{sid} n {join} {where}", params)
        return [node_row(r) for r in rows]

    def read_node(self, session_id: str, node_id: str) -> NodeRow | None:
        """Return one node, or None."""
        sid = self._require(session_id)
        rows = self._nodes(sid, "WHERE n.node_id = ?", (node_id,))
        return rows[0] if rows else None

    def read_children(self, session_id: str, node_id: str) -> list[NodeRow]:
        """Return the children of ``node_id`` in node_seq order."""
        sid = self._require(session_id)
        return self._nodes(sid, "WHERE n.parent_id = ? ORDER BY n.node_seq", (node_id,))

    def read_nodes(self, session_id: str) -> list[NodeRow]:
        """Return every node of the session in node_seq order."""
        sid = self._require(session_id)
        return self._nodes(sid, "ORDER BY n.node_seq")

    def read_node_links(self, session_id: str) -> list[tuple[str, str | None, str, str, str]]:
        """Return ``(node_id, parent_id, agent_id, role, node_type)`` of every node in
        node_seq order: the tree's shape without decoding any content (a tree view of a
        large session draws this first and reads the nodes it shows one by one)."""
        sid = self._require(session_id)
        rows = self._query(
            f"SELECT node_id, parent_id, agent_id, role, node_type FROM nodes_{sid}"
            " ORDER BY node_seq"
        )
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def read_active_path(self, session_id: str, node_id: str | None = None) -> list[NodeRow]:
        """Return the path root → ``node_id`` (default: the active node), via a recursive CTE.

        Cost grows with the path's depth, not the session's size (parent lookups by key).
        A session's last path is kept (:class:`PathMemo`): when ``node_id`` descends from
        its tip — a conversation's next run, whose context is built from the path to the
        previous run's end — only the nodes below that tip are read. Nodes never change
        once appended, so the kept rows are what reading them again would return.
        """
        session = self.read_session(session_id)  # validates; UnknownSession / DeletedSession
        sid = session.session_id
        if node_id is None:
            node_id = session.active_node_id
            if node_id is None:
                return []
        sql = path_sql(sid, *self._node_source(sid))

        def walk(stop: str | None) -> list[NodeRow]:
            return [node_row(r) for r in self._query(sql, (node_id, stop))]

        return self._paths.read(sid, session.created_at, walk)

    def _usage_payloads(self, sid: str, run_id: str) -> list[str]:
        rows = self._query(
            f"SELECT payload_json FROM events_{sid}"
            " WHERE run_id = ? AND event_type = 'token_usage' ORDER BY seq",
            (run_id,),
        )
        return [str(r[0]) for r in rows]

    def execute_unchecked(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run raw SQL on a reader connection — for tests that tamper with rows only."""
        with translate_errors("raw sql"):
            self._connections.reader().execute(sql, params)


def _bad_utf8_row(conn: apsw.Connection, sid: str, hash_column: str) -> str:
    """Name the first row of ``events_<sid>`` holding bytes that are not valid UTF-8."""
    columns = [c.strip() for c in EVENT_COLUMNS.split(",")] + [hash_column]
    blobs = ", ".join(f"CAST({c} AS BLOB)" for c in columns)
    for seq, *values in conn.execute(f"SELECT seq, {blobs} FROM events_{sid} ORDER BY seq"):
        for value in values:
            if isinstance(value, bytes):
                try:
                    value.decode()
                except UnicodeDecodeError:
                    return f"event seq {seq}"
    return "an event"
