"""The group-commit batch append on PostgreSQL: one transaction, each request isolated,
in one round trip to the server when the writer knows the sessions it appends to.

Gapless per-session numbering under writers in several processes: the transaction locks
the ``sessions`` rows of every session the batch touches (``SELECT … FOR UPDATE``, in
session-id order so two writers never deadlock), numbers and hashes the events from the
counters and chain head, and writes them back. Another process appending to the same
session waits for the commit, then continues from the numbers it left.

**One round trip.** The writer remembers, for each session it appended to (at most
:data:`KNOWN_SESSIONS`), the counters and chain head its last commit left (:class:`_Head`).
A batch whose sessions are all known (or created by the batch) is numbered and hashed from
them in Python first; then ``BEGIN``, the lock (of several sessions' rows), one statement
that advances each session's counters *only where they still hold the values the batch
started from*, sets its active node, inserts the event and node rows and sends the
``NOTIFY`` (:data:`_ADVANCE`), the other materialised rows, and ``COMMIT`` go to the
server in one psycopg pipeline with one sync: one wait (three statements for a
``node_appended`` step). If another
process appended meanwhile, the advance matches no row, the event rows get a NULL
``session_id``, and the NOT NULL violation aborts the transaction before its ``COMMIT``:
the writer forgets what it knew and runs the batch again from the rows it reads under the
lock (two round trips: the lock's rows are read before numbering, as for a session not
known). A run this writer has not seen in a session it did not create costs one more,
once (``MAX(run_seq)``).

A batch of more than :data:`PIPELINED_REQUESTS` requests (a busy writer's) goes statement
by statement from the locked rows, its event rows in one ``COPY``: its few round trips are
shared by many events. Any other failure rolls back and re-runs the batch with a savepoint
per request, skipping the request known to fail (as on SQLite). A ``NOTIFY clew_events,
'<sid> <last_seq>'`` per touched session rides in the transaction: PostgreSQL delivers it
at the commit, never for a batch rolled back.

The check is SQL, not a server-side function, so the schema (and its version) stays as it
was. A durable step waited for the server 8 times before (``BEGIN``, the lock, the run's
``MAX(run_seq)``, ``COPY``'s two, the head, the ``NOTIFY``, ``COMMIT``), once now
(docs/postgres.md; ``tests/eventlog/postgres/test_append_round_trips.py`` counts them).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
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
from eventlog.postgres.materialise import INSERT_NODE, create_session, materialise
from eventlog.records import AppendRequest, StoredEvent

Conn = psycopg.Connection[Any]
Results = list[list[StoredEvent] | ClewError | None]
FaultHook = Callable[[str], None]
#: The channel every committed batch is announced on (payload ``"<sid> <last_seq>"``).
CHANNEL = "clew_events"
#: How many sessions' heads a writer remembers (least recently appended forgotten first);
#: a forgotten one costs its next batch one more round trip, nothing else.
KNOWN_SESSIONS = 4096

#: A batch of more requests than this is not pipelined: its event rows go in one ``COPY``
#: (512 rows: ~24k rows/s, twice the one statement of arrays), and its few round trips
#: are shared by many events (~48 µs a row more against ~7 round trips of ~0.2 ms).
PIPELINED_REQUESTS = 32

_encode = msgspec.json.Encoder().encode
#: An ``events`` row: the seed's columns in order, its chain hash, its session.
_INSERT = "INSERT INTO events VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
_LOCK = (
    "SELECT session_id, last_seq, last_node_seq, chain_head FROM sessions"
    " WHERE session_id = ANY(%s) ORDER BY session_id FOR UPDATE"
)
_EVENT_COLUMNS = (
    "event_id, seq, run_seq, agent_id, run_id, level, event_type, node_id, tool_call_id,"
    " payload_json, created_at, hash"
)
#: Advance each touched session from the counters the batch started from (and set its
#: active node, if the batch moved it), insert the batch's event rows, and announce the
#: commit, in one statement (arrays: one bind whatever the batch's size; a stale head
#: leaves a row's ``session_id`` NULL, which aborts the transaction).
_ADVANCE = (
    "WITH advanced AS (UPDATE sessions AS s SET updated_at = h.at, chain_head = h.head,"
    " last_seq = h.seq, last_node_seq = h.node_seq,"
    " active_node_id = COALESCE(h.active, s.active_node_id)"
    " FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[],"
    " %s::bigint[], %s::bigint[], %s::text[])"
    " AS h(sid, from_seq, from_node_seq, from_head, at, head, seq, node_seq, active)"
    " WHERE s.session_id = h.sid AND s.last_seq = h.from_seq"
    " AND s.last_node_seq = h.from_node_seq AND COALESCE(s.chain_head, '') = h.from_head"
    " RETURNING s.session_id, s.last_seq),"
    f" inserted AS (INSERT INTO events ({_EVENT_COLUMNS}, session_id)"
    f" SELECT {_EVENT_COLUMNS}, (SELECT a.session_id FROM advanced AS a WHERE a.session_id = e.sid)"
    " FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[],"
    " %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
    f" AS e({_EVENT_COLUMNS}, sid)),"
    " noded AS (INSERT INTO nodes SELECT * FROM unnest(%s::text[], %s::bigint[], %s::text[],"
    " %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[],"
    " %s::text[], %s::text[]))"
    " SELECT pg_notify(%s, a.session_id || ' ' || a.last_seq) FROM advanced AS a"
)
#: :data:`_ADVANCE` for one session and one event (a durable step): scalars, not arrays
#: (dumping 33 lists was about half of a step's client CPU); ``{node}``: its node row.
_ADVANCE_ONE = (
    "WITH advanced AS (UPDATE sessions AS s SET updated_at = %s, chain_head = %s,"
    " last_seq = %s, last_node_seq = %s, active_node_id = COALESCE(%s, s.active_node_id)"
    " WHERE s.session_id = %s AND s.last_seq = %s AND s.last_node_seq = %s"
    " AND COALESCE(s.chain_head, '') = %s RETURNING s.session_id, s.last_seq),"
    f" inserted AS (INSERT INTO events ({_EVENT_COLUMNS}, session_id) VALUES"
    " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, (SELECT session_id FROM advanced))){node}"
    " SELECT pg_notify(%s, a.session_id || ' ' || a.last_seq) FROM advanced AS a"
)
_ADVANCE_ONE_NODE = _ADVANCE_ONE.format(node=f", noded AS ({INSERT_NODE})")
_ADVANCE_ONE = _ADVANCE_ONE.format(node="")
#: The columns of a ``nodes`` row, for a batch without one.
_NO_NODES: list[list[Any]] = [[] for _ in range(12)]
_COPY = "COPY events FROM STDIN"


class _Retry(Exception):
    """The pass met a failing request or statement: roll back, re-run the next way."""


class _Head:
    """What a writer's last commit left in one session's row (and its runs' numbers)."""

    __slots__ = ("complete", "head", "node_seq", "run_seq", "seq")

    def __init__(
        self, seq: int, node_seq: int, head: str, run_seq: dict[str, int], *, complete: bool
    ) -> None:
        self.seq, self.node_seq, self.head = seq, node_seq, head
        self.run_seq = run_seq
        #: Every event of the session was appended by this writer: a run not in
        #: ``run_seq`` has no event yet (no ``MAX(run_seq)`` to ask).
        self.complete = complete


class _Later:
    """Materialised rows' statements held back until the advance is sent: a pipelined
    transaction writes its sessions' rows first (their lock), then the rest. Node rows
    go in with the advance itself."""

    __slots__ = ("nodes", "statements")

    def __init__(self) -> None:
        self.statements: list[tuple[Any, Any]] = []
        self.nodes: list[Any] = []

    def execute(self, query: Any, params: Any = None) -> None:
        if query is INSERT_NODE:
            self.nodes.append(params)
        else:
            self.statements.append((query, params))


class _State:
    """The counters of one transaction, from the locked rows or the writer's known heads."""

    __slots__ = (
        "active",
        "complete",
        "head",
        "later",
        "node_seq",
        "run_seq",
        "seq",
        "start",
        "touched",
    )

    def __init__(self, *, defer_active: bool = False) -> None:
        self.seq: dict[str, int] = {}
        self.node_seq: dict[str, int] = {}
        self.head: dict[str, str] = {}
        self.run_seq: dict[str, dict[str, int]] = {}
        self.touched: dict[str, str] = {}
        #: The (seq, node_seq, head) each session started from: what the advance checks.
        self.start: dict[str, tuple[int, int, str]] = {}
        self.complete: set[str] = set()
        #: Pipelined: each session's new active node, set by the advance (one write of
        #: the session's row); None: set by the materialiser as the events come.
        self.active: dict[str, str] | None = {} if defer_active else None
        #: Pipelined: the materialised rows, sent after the advance.
        self.later: _Later | None = _Later() if defer_active else None

    def load(self, sid: str, seq: int, node_seq: int, head: str, known: _Head | None) -> None:
        self.seq[sid], self.node_seq[sid], self.head[sid] = seq, node_seq, head
        self.start[sid] = (seq, node_seq, head)
        # A known head's run numbers are used in place: a failed pass forgets the head.
        self.run_seq[sid] = known.run_seq if known is not None else {}
        if known is not None and known.complete:
            self.complete.add(sid)

    def restore(self, saved: _State) -> None:
        """Go back to ``saved`` (a :meth:`copy`): a request's savepoint was rolled back."""
        self.seq, self.node_seq, self.head = saved.seq, saved.node_seq, saved.head
        self.run_seq, self.touched = saved.run_seq, saved.touched
        self.start, self.complete, self.active = saved.start, saved.complete, saved.active

    def copy(self) -> _State:
        other = _State()
        other.seq, other.node_seq = dict(self.seq), dict(self.node_seq)
        other.head, other.touched = dict(self.head), dict(self.touched)
        other.run_seq = {sid: dict(runs) for sid, runs in self.run_seq.items()}
        other.start, other.complete = dict(self.start), set(self.complete)
        other.active = dict(self.active) if self.active is not None else None
        other.later = self.later
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
        self._known: OrderedDict[str, _Head] = OrderedDict()

    def forget(self, session_id: str) -> None:
        """Drop what this writer knows of the session (it was deleted, say)."""
        self._known.pop(session_id, None)

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
            if len(live) > PIPELINED_REQUESTS:
                if not self._run_batch(conn, requests, live, results, mode="copy"):
                    self._run_batch(conn, requests, live, results, mode="savepoints")
                return _final(results)
            if self._knows_all(requests, live):
                if self._run_batch(conn, requests, live, results, mode="known"):
                    return _final(results)
                for i in live:  # a stale head may have misjudged a request: judge again
                    results[i] = None
            if not self._run_batch(conn, requests, live, results, mode="fresh"):
                self._run_batch(conn, requests, live, results, mode="savepoints")
        return _final(results)

    def _knows_all(self, requests: Sequence[AppendRequest], live: list[int]) -> bool:
        """Whether every session of the batch is known, or created by its first request."""
        seen: set[str] = set()
        for i in live:
            sid = requests[i].session_id
            if sid not in seen:
                seen.add(sid)
                if sid not in self._known and not isinstance(requests[i].event, SessionCreated):
                    return False
        return True

    def _run_batch(
        self,
        conn: Conn,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        *,
        mode: str,
    ) -> bool:
        """Run ``requests[live]`` in one transaction; False: re-run the next way.

        ``mode``: ``"known"`` numbers from the known heads, in one round trip;
        ``"fresh"`` from the rows read under the lock; both pipelined, with our own
        ``BEGIN``/``COMMIT`` (psycopg's would wait for the ``BEGIN`` alone).
        ``"copy"`` (a large batch) from the locked rows, its event rows in one ``COPY``,
        statement by statement; ``"savepoints"`` each request in a savepoint.
        """
        sids = sorted({requests[i].session_id for i in live})
        done: list[tuple[int, list[StoredEvent]]] = []
        pipelined = mode in {"known", "fresh"}
        try:
            if pipelined:
                conn.autocommit = True
                state = self._pipelined(conn, sids, requests, live, results, done, mode)
                conn.autocommit = False
            elif mode == "copy":
                state = self._lock_sessions(conn, sids, known=False)
                self._copy(conn, self._append_all(conn, state, requests, live, results, done))
                self._finish(conn, state)
                conn.commit()
            else:
                state = self._lock_sessions(conn, sids, known=False)
                self._append_each(conn, state, requests, live, results, done)
                self._finish(conn, state)
                conn.commit()
        except (_Retry, psycopg.Error) as e:
            self._abandon(conn, sids)
            if isinstance(e, _Retry) or (pipelined and _worth_retrying(e)):
                return False
            for i in live:
                results[i] = translate_error(e, "committing the append batch")
            return True
        except BaseException as e:
            self._abandon(conn, sids)
            if not isinstance(e, Exception):
                raise
            err = e if isinstance(e, StoreError) else StoreError(f"append failed: {e!r}")
            for i in live:
                results[i] = err
            return True
        for i, stored in done:
            results[i] = stored
        self._remember(state)
        return True

    def _pipelined(
        self,
        conn: Conn,
        sids: list[str],
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
        mode: str,
    ) -> _State:
        """Send the transaction in one pipeline, one sync; return its committed state.

        A failure is raised after the pipeline's sync, not through it (psycopg would log
        the sync's own "pipeline aborted" as a warning beside it).
        """
        failed: Exception | None = None
        state = _State()
        try:
            with conn.pipeline():
                try:
                    conn.execute("BEGIN")
                    state = self._lock_sessions(conn, sids, known=mode == "known", defer=True)
                    rows = self._append_all(conn, state, requests, live, results, done)
                    self._advance(conn, state, rows)
                    for query, params in state.later.statements if state.later else ():
                        conn.execute(query, params)
                    conn.execute("COMMIT")
                except (_Retry, psycopg.Error) as e:
                    failed = e  # no COMMIT was sent: the rollback follows the sync
        except psycopg.Error as e:
            failed = failed or e
        if failed is not None:
            raise failed
        return state

    def _abandon(self, conn: Conn, sids: list[str]) -> None:
        """Roll back, forget the batch's sessions, and leave ``conn`` out of autocommit."""
        for sid in sids:
            self.forget(sid)
        try:
            conn.rollback()
            conn.autocommit = False
        except psycopg.Error:
            with contextlib.suppress(psycopg.Error):
                conn.close()  # a broken connection: the next batch opens another

    def _remember(self, state: _State) -> None:
        """Keep what the committed transaction left in each of its sessions' rows."""
        known = self._known
        for sid, seq in state.seq.items():
            known[sid] = _Head(
                seq,
                state.node_seq[sid],
                state.head[sid],
                state.run_seq[sid],
                complete=sid in state.complete,
            )
            known.move_to_end(sid)
        while len(known) > KNOWN_SESSIONS:
            known.popitem(last=False)

    def _lock_sessions(
        self, conn: Conn, sids: list[str], *, known: bool, defer: bool = False
    ) -> _State:
        """Lock the batch's existing sessions' rows in id order; load their counters.

        ``known``: from the known heads, without waiting for the rows (the advance checks
        them); else from the rows. ``defer``: the advance sets the active nodes.
        """
        state = _State(defer_active=defer)
        if known:
            # Several sessions: their rows locked in id order first (no deadlock). One,
            # pipelined: its row is locked by the advance, the first statement to write it.
            if not (defer and len(sids) == 1):
                conn.execute(_LOCK, (sids,))
            for sid in sids:
                head = self._known.get(sid)
                if head is not None:
                    state.load(sid, head.seq, head.node_seq, head.head, head)
            return state
        for sid, seq, node_seq, head in conn.execute(_LOCK, (sids,)).fetchall():
            state.load(sid, int(seq), int(node_seq), head if head is not None else GENESIS, None)
        return state

    def _append_all(
        self,
        conn: Conn,
        state: _State,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
    ) -> list[tuple[Any, ...]]:
        pending: list[tuple[Any, ...]] = []
        for i in live:
            try:
                stored = self._append_one(conn, state, requests[i], pending)
            except psycopg.Error as e:
                # Pipelined: an earlier statement's error may surface here; blame no one.
                raise _Retry from e
            except (ClewError, TypeError, ValueError) as e:
                results[i] = _refusal(requests[i], e)
                raise _Retry from e
            done.append((i, stored))
        return pending

    @staticmethod
    def _copy(conn: Conn, rows: list[tuple[Any, ...]]) -> None:
        """Insert the event rows in one ``COPY`` stream."""
        try:
            with conn.cursor() as cur, cur.copy(_COPY) as copy:
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as e:
            raise _Retry from e

    def _advance(self, conn: Conn, state: _State, rows: list[tuple[Any, ...]]) -> None:
        """Send the advance with the event ``rows``, and the announcements (pipelined)."""
        if not rows:
            return
        sids = list(state.touched)
        starts = [state.start[sid] for sid in sids]
        heads = (
            sids,
            [s[0] for s in starts],
            [s[1] for s in starts],
            [s[2] for s in starts],
            [state.touched[sid] for sid in sids],
            [state.head[sid] for sid in sids],
            [state.seq[sid] for sid in sids],
            [state.node_seq[sid] for sid in sids],
            [(state.active or {}).get(sid) for sid in sids],
        )
        nodes = state.later.nodes if state.later is not None else []
        if len(sids) == 1 and len(rows) == 1 and len(nodes) <= 1:
            sid = sids[0]
            one = (
                state.touched[sid], state.head[sid], state.seq[sid], state.node_seq[sid],
                (state.active or {}).get(sid), sid, *state.start[sid], *rows[0][:-1],
            )  # fmt: skip
            query = _ADVANCE_ONE_NODE if nodes else _ADVANCE_ONE
            conn.execute(query, (*one, *(nodes[0] if nodes else ()), CHANNEL))
            return
        columns = [list(column) for column in zip(*rows, strict=True)]
        node_columns = [list(c) for c in zip(*nodes, strict=True)] if nodes else _NO_NODES
        conn.execute(_ADVANCE, (*heads, *columns, *node_columns, CHANNEL))

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
                state.restore(saved)
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
        except (ClewError, psycopg.Error, TypeError, ValueError) as e:
            raise _refusal(req, e) from e

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
            state.load(sid, 0, 0, GENESIS, None)
            state.complete.add(sid)
        elif sid not in state.seq:
            raise UnknownSession(f"unknown session {sid}")
        if isinstance(event, NodeAppended | ToolCallFinished):
            planned, artifacts = plan_artifacts(sid, event, self.artifact_threshold)
            for created, data in artifacts:
                self.artifacts.write_in(conn, sid, data, ext=created.path.rsplit(".", 1)[-1])
                out.append(self._insert_event(conn, state, req, created, pending))
                materialise(state.later or conn, None, sid, req, created, state.active)
            event = planned
        if self._fault is not None:
            self._fault("before_materialise")
        node_seq = None
        if isinstance(event, NodeAppended):
            node_seq = state.node_seq[sid] = state.node_seq[sid] + 1
        materialise(state.later or conn, node_seq, sid, req, event, state.active)
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
        runs = state.run_seq[sid]
        n = runs.get(run_id)
        if n is None and sid in state.complete:
            n = 0  # every event of the session is this writer's: the run has none yet
        if n is None:
            row = conn.execute(
                "SELECT COALESCE(MAX(run_seq), 0) FROM events"
                " WHERE session_id = %s AND run_id = %s",
                (sid, run_id),
            ).fetchone()
            n = int(row[0]) if row is not None else 0
        n += 1
        runs[run_id] = n
        return n


def _refusal(req: AppendRequest, e: BaseException) -> ClewError:
    """The error a request failed with, as the caller receives it."""
    if isinstance(e, ClewError):
        return e
    if isinstance(e, psycopg.Error):
        return translate_error(e, f"appending {event_type_of(req.event)}")
    return StoreError(f"cannot store {event_type_of(req.event)}: {e}")


def _worth_retrying(e: psycopg.Error) -> bool:
    """Whether a pipelined pass's error may go away on the next pass (a stale head, a
    request that fails): not a lost connection, which fails the batch at once."""
    return not isinstance(e, psycopg.OperationalError) or isinstance(
        e, psycopg.errors.PipelineAborted
    )


def _final(results: Results) -> list[list[StoredEvent] | ClewError]:
    return [r if r is not None else StoreError("request not run") for r in results]
