"""The group-commit batch append on PostgreSQL: one transaction, each request isolated.

Gapless per-session numbering under writers in several processes: the transaction first
locks the ``sessions`` rows of every session the batch touches (``SELECT … FOR UPDATE``,
in session-id order so two writers never deadlock) and reads the counters and chain head
from them; at the end it writes them back. Another process appending to the same session
waits for the commit, then continues from the numbers it left. Nothing is cached across
transactions: another process may have appended since.

As on SQLite the batch first runs optimistically (no savepoints, event rows in one
``COPY``); only if a request fails is the transaction rolled back and the batch
re-run with a savepoint per request, skipping the request already known to fail. A
``NOTIFY clew_events, '<sid> <last_seq>'`` per touched session rides in the transaction:
PostgreSQL delivers it at the commit, never for a batch rolled back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import psycopg

from eventlog.artifact_plan import plan_artifacts
from eventlog.chain import GENESIS, link
from eventlog.envelope import node_id_of, tool_call_id_of, type_info
from eventlog.errors import ClewError, InvalidSessionId, StoreError, UnknownSession
from eventlog.events import (
    Event,
    NodeAppended,
    SessionCreated,
    ToolCallFinished,
    event_type_of,
)
from eventlog.ids import event_id, validate_session_id
from eventlog.postgres.blobs import BlobArtifacts
from eventlog.postgres.connections import translate_error
from eventlog.postgres.materialise import create_session, materialise
from eventlog.records import AppendRequest, StoredEvent

Conn = psycopg.Connection[Any]
Results = list[list[StoredEvent] | ClewError | None]
FaultHook = Callable[[str], None]
#: The channel every committed batch is announced on (payload ``"<sid> <last_seq>"``).
CHANNEL = "clew_events"

_encode = msgspec.json.Encoder().encode
#: An ``events`` row: the seed's columns in order, its chain hash, its session.
_INSERT = "INSERT INTO events VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
_COPY = "COPY events FROM STDIN"


class _Retry(Exception):
    """The optimistic pass met a failing request: roll back, re-run with savepoints."""


class _State:
    """The counters of one transaction, loaded from the locked ``sessions`` rows."""

    __slots__ = ("head", "node_seq", "run_seq", "seq", "touched")

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}
        self.node_seq: dict[str, int] = {}
        self.head: dict[str, str] = {}
        self.run_seq: dict[tuple[str, str], int] = {}
        self.touched: dict[str, str] = {}

    def copy(self) -> _State:
        other = _State()
        other.seq, other.node_seq = dict(self.seq), dict(self.node_seq)
        other.head, other.run_seq = dict(self.head), dict(self.run_seq)
        other.touched = dict(self.touched)
        return other


class BatchAppend:
    """The write side of the PostgreSQL store."""

    def __init__(
        self,
        connect: Callable[[], Conn],
        artifacts: BlobArtifacts,
        artifact_threshold: int,
        fault_hook: FaultHook | None = None,
    ) -> None:
        self._connect = connect
        self.artifacts = artifacts
        self.artifact_threshold = artifact_threshold
        self._fault = fault_hook

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append ``requests`` in one transaction, each isolated as if by a savepoint."""
        results: Results = [None] * len(requests)
        live: list[int] = []
        for i, req in enumerate(requests):
            try:
                validate_session_id(req.session_id)
            except InvalidSessionId as e:
                results[i] = e
                continue
            live.append(i)
        if live:
            conn = self._connect()
            if not self._run_batch(conn, requests, live, results, savepoints=False):
                self._run_batch(conn, requests, live, results, savepoints=True)
        return [r if r is not None else StoreError("request not run") for r in results]

    def _run_batch(
        self,
        conn: Conn,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        *,
        savepoints: bool,
    ) -> bool:
        """Run ``requests[live]`` in one transaction; False: re-run with savepoints."""
        done: list[tuple[int, list[StoredEvent]]] = []
        try:
            state = self._lock_sessions(conn, [requests[i] for i in live])
            if savepoints:
                self._append_each(conn, state, requests, live, results, done)
            else:
                self._append_all(conn, state, requests, live, results, done)
            self._finish(conn, state)
            conn.commit()
        except _Retry:
            conn.rollback()
            return False
        except BaseException as e:
            with contextlib.suppress(psycopg.Error):
                conn.rollback()
            if not isinstance(e, Exception):
                raise
            err = (
                e
                if isinstance(e, StoreError)
                else translate_error(e, "committing the append batch")
                if isinstance(e, psycopg.Error)
                else StoreError(f"append failed: {e!r}")
            )
            for i in live:
                results[i] = err
            return True
        for i, stored in done:
            results[i] = stored
        return True

    def _lock_sessions(self, conn: Conn, requests: list[AppendRequest]) -> _State:
        """Lock the batch's existing sessions' rows in id order; load their counters."""
        sids = sorted({r.session_id for r in requests})
        state = _State()
        rows = conn.execute(
            "SELECT session_id, last_seq, last_node_seq, chain_head FROM sessions"
            " WHERE session_id = ANY(%s) ORDER BY session_id FOR UPDATE",
            (sids,),
        ).fetchall()
        for sid, seq, node_seq, head in rows:
            state.seq[sid] = int(seq)
            state.node_seq[sid] = int(node_seq)
            state.head[sid] = head if head is not None else GENESIS
        return state

    def _append_all(
        self,
        conn: Conn,
        state: _State,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
    ) -> None:
        pending: list[tuple[Any, ...]] = []
        for i in live:
            try:
                stored = self._append_guarded(conn, state, requests[i], pending)
            except ClewError as e:
                results[i] = e
                raise _Retry from e
            done.append((i, stored))
        try:
            if pending:
                # COPY: one stream for the batch's rows (~3× executemany's pipeline).
                with conn.cursor() as cur, cur.copy(_COPY) as copy:
                    for row in pending:
                        copy.write_row(row)
        except psycopg.Error as e:
            raise _Retry from e

    def _append_each(
        self,
        conn: Conn,
        state: _State,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
    ) -> None:
        for i in live:
            if results[i] is not None:
                continue  # failed in the optimistic pass: not run again
            saved = state.copy()
            try:
                with conn.transaction():  # a savepoint inside the batch's transaction
                    stored = self._append_guarded(conn, state, requests[i], None)
            except ClewError as e:
                results[i] = e
                state.seq, state.node_seq = saved.seq, saved.node_seq
                state.head, state.run_seq, state.touched = saved.head, saved.run_seq, saved.touched
                continue
            done.append((i, stored))

    def _finish(self, conn: Conn, state: _State) -> None:
        """Write the counters back to the session rows and announce the commit."""
        for sid, at in state.touched.items():
            conn.execute(
                "UPDATE sessions SET updated_at = %s, chain_head = %s, last_seq = %s,"
                " last_node_seq = %s WHERE session_id = %s",
                (at, state.head[sid], state.seq[sid], state.node_seq[sid], sid),
            )
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{sid} {state.seq[sid]}"))

    def _append_guarded(
        self, conn: Conn, state: _State, req: AppendRequest, pending: list[tuple[Any, ...]] | None
    ) -> list[StoredEvent]:
        try:
            return self._append_one(conn, state, req, pending)
        except ClewError:
            raise
        except psycopg.Error as e:
            raise translate_error(e, f"appending {event_type_of(req.event)}") from e
        except (TypeError, ValueError) as e:
            raise StoreError(f"cannot store {event_type_of(req.event)}: {e}") from e

    def _append_one(
        self, conn: Conn, state: _State, req: AppendRequest, pending: list[tuple[Any, ...]] | None
    ) -> list[StoredEvent]:
        sid = req.session_id
        event = req.event
        out: list[StoredEvent] = []
        if isinstance(event, SessionCreated):
            if event.session_id != sid:
                raise StoreError(f"session_created for {event.session_id} sent to {sid}")
            if sid in state.seq:
                raise StoreError(f"appending session_created: session {sid} already exists")
            create_session(conn, sid, event, req.created_at)
            state.seq[sid] = state.node_seq[sid] = 0
            state.head[sid] = GENESIS
        elif sid not in state.seq:
            raise UnknownSession(f"unknown session {sid}")
        if isinstance(event, NodeAppended | ToolCallFinished):
            planned, artifacts = plan_artifacts(sid, event, self.artifact_threshold)
            for created, data in artifacts:
                self.artifacts.write_in(conn, sid, data, ext=created.path.rsplit(".", 1)[-1])
                out.append(self._insert_event(conn, state, req, created, pending))
                materialise(conn, None, sid, req, created)
            event = planned
        if self._fault is not None:
            self._fault("before_materialise")
        node_seq = None
        if isinstance(event, NodeAppended):
            node_seq = state.node_seq[sid] = state.node_seq[sid] + 1
        materialise(conn, node_seq, sid, req, event)
        if self._fault is not None:
            self._fault("before_event_row")
        out.append(self._insert_event(conn, state, req, event, pending))
        return out

    def _insert_event(
        self,
        conn: Conn,
        state: _State,
        req: AppendRequest,
        event: Event,
        pending: list[tuple[Any, ...]] | None,
    ) -> StoredEvent:
        sid = req.session_id
        seq = state.seq[sid] = state.seq[sid] + 1
        run_id = req.run_id
        run_seq = self._next_run_seq(conn, state, sid, run_id) if run_id else None
        ev_id = event_id(sid, run_id, run_seq, seq)
        etype, level, has_node, has_tool = type_info(event)
        node_id = node_id_of(event) if has_node else None
        tool_call_id = tool_call_id_of(event) if has_tool else None
        stored = StoredEvent(
            ev_id, seq, run_seq, req.agent_id, run_id, level, etype, node_id, tool_call_id,
            req.created_at, event,
        )  # fmt: skip
        *columns, created_at, _ = msgspec.structs.astuple(stored)
        values = (*columns, _encode(event).decode(), created_at)
        digest = state.head[sid] = link(state.head[sid], values)
        state.touched[sid] = req.created_at
        row = (*values, digest, sid)
        if pending is None:
            conn.execute(_INSERT, row)
        else:
            pending.append(row)
        return stored

    @staticmethod
    def _next_run_seq(conn: Conn, state: _State, sid: str, run_id: str) -> int:
        key = (sid, run_id)
        n = state.run_seq.get(key)
        if n is None:
            row = conn.execute(
                "SELECT COALESCE(MAX(run_seq), 0) FROM events"
                " WHERE session_id = %s AND run_id = %s",
                (sid, run_id),
            ).fetchone()
            n = int(row[0]) if row is not None else 0
        n += 1
        state.run_seq[key] = n
        return n
