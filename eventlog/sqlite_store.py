"""The SQLite event store (apsw): schema, the batched append, and the readers.

The events table of a session is its source of truth. The nodes table and the
status / active-node / counter columns of the global tables are materialised
projections written in the *same transaction* as the event that changes them.

Only the writer actor calls :meth:`SQLiteStore.append_batch` (one write
connection); readers use a connection per thread and run concurrently (WAL).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import apsw
import msgspec

from eventlog.artifact_plan import plan_artifacts
from eventlog.artifacts import ArtifactFiles
from eventlog.codec import encode
from eventlog.errors import ClewError, InvalidSessionId, StoreError, UnknownSession
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    InDoubtResolved,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    SessionArchived,
    SessionCreated,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    event_type_of,
    level_of,
)
from eventlog.ids import event_id, validate_session_id
from eventlog.records import (
    AppendRequest,
    StoredEvent,
)
from eventlog.schema import MIGRATIONS, session_tables_ddl
from eventlog.sql_errors import translate_error, translate_errors
from eventlog.sqlite_reads import SQLiteReads

Durability = Literal["normal", "full"]
#: A JSON block whose encoding is larger than this becomes an artifact (seed rule).
DEFAULT_ARTIFACT_THRESHOLD = 16 * 1024

_encode = msgspec.json.Encoder().encode


_TOOL_CALL_EVENTS = (ToolCallStarted, ToolCallFinished, ToolFailed, InDoubtResolved)
#: Event types that change a materialised table (everything else only adds its row).
_MATERIALISED: frozenset[type] = frozenset(
    {
        NodeAppended,
        ActiveNodeSwitched,
        SessionArchived,
        AgentCreated,
        AgentStatusChanged,
        RunStarted,
        RunEnded,
        ArtifactCreated,
    }
)


def _tool_call_id(event: Event) -> str | None:
    if isinstance(event, _TOOL_CALL_EVENTS):
        return event.tool_call_id
    return None


def _node_id(event: Event) -> str | None:
    if isinstance(event, NodeAppended):
        return event.node.node_id
    if isinstance(event, ActiveNodeSwitched):
        return event.to_node_id
    if isinstance(event, ArtifactCreated):
        return event.node_id
    return None


#: Per event class: (event_type, level, may carry node_id, may carry tool_call_id). Looked
#: up once per event instead of re-deriving the tag and running isinstance chains.
_TYPE_INFO: dict[type, tuple[str, str, bool, bool]] = {}


def _type_info(event: Event) -> tuple[str, str, bool, bool]:
    cls = type(event)
    info = _TYPE_INFO.get(cls)
    if info is None:
        info = (
            event_type_of(event),
            level_of(event),
            cls in (NodeAppended, ActiveNodeSwitched, ArtifactCreated),
            issubclass(cls, _TOOL_CALL_EVENTS),
        )
        _TYPE_INFO[cls] = info
    return info


#: Row tuples of ``events_<sid>`` waiting for one ``executemany`` per session.
Pending = dict[str, list[tuple[Any, ...]]]


def _scalar(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    assert row is not None  # an aggregate always returns one row
    return int(row[0])


def _json_or_none(value: Any) -> str | None:
    return None if value is None else encode(value).decode()


class SQLiteStore(SQLiteReads):
    """The embedded event store. One file, WAL mode, one writer, many readers."""

    def __init__(
        self,
        path: Path | str,
        *,
        artifacts_dir: Path | str | None = None,
        durability: Durability = "normal",
        artifact_threshold: int = DEFAULT_ARTIFACT_THRESHOLD,
        fault_hook: Callable[[str], None] | None = None,
    ) -> None:
        """Open (and migrate) the store at ``path``.

        Args:
            artifacts_dir: where artifact files go (default: ``artifacts/`` beside the file).
            durability: ``normal`` survives a process crash, ``full`` a power loss.
            fault_hook: test seam, called with a step name inside the append transaction.
        """
        self.path = Path(path)
        self.artifacts = ArtifactFiles(
            Path(artifacts_dir) if artifacts_dir else self.path.parent / "artifacts"
        )
        self.durability = durability
        self.artifact_threshold = artifact_threshold
        self._fault = fault_hook
        self._local = threading.local()
        self._write: apsw.Connection | None = None
        self._known_sessions: set[str] = set()
        # Session ids already validated (validation is a regex: ~1.5 µs per request).
        self._valid_sids: set[str] = set()
        self._insert_sqls: dict[str, str] = {}
        self._seq: dict[str, int] = {}
        self._node_seq: dict[str, int] = {}
        self._run_seq: dict[tuple[str, str], int] = {}
        with translate_errors(f"opening {self.path}"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._connect()
            conn.pragma("journal_mode", "wal")
            self._migrate(conn)
            conn.close()

    # --- connections ---------------------------------------------------------------------

    def _connect(self) -> apsw.Connection:
        conn = apsw.Connection(str(self.path))
        # Readers and the writer wait for each other briefly instead of failing at once.
        conn.set_busy_timeout(10_000)
        return conn

    def _reader(self) -> apsw.Connection:
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            with translate_errors(f"opening {self.path}"):
                conn = self._connect()
            self._local.conn = conn
        return conn

    def _writer(self) -> apsw.Connection:
        if self._write is None:
            with translate_errors(f"opening {self.path} for writing"):
                conn = self._connect()
                conn.pragma("synchronous", "FULL" if self.durability == "full" else "NORMAL")
                self._write = conn
        return self._write

    @staticmethod
    def _migrate(conn: apsw.Connection) -> None:
        version = int(conn.pragma("user_version"))
        if version > len(MIGRATIONS):
            raise StoreError(
                f"database schema version {version} is newer than this clew ({len(MIGRATIONS)})"
            )
        for i in range(version, len(MIGRATIONS)):
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(MIGRATIONS[i])
                conn.pragma("user_version", i + 1)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the write connection and this thread's reader."""
        if self._write is not None:
            self._write.close()
            self._write = None
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --- writing -------------------------------------------------------------------------

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append ``requests`` in one transaction, each one isolated as if by a savepoint.

        A request that fails (bad session id, unknown session, constraint) leaves no
        trace and its slot holds the error; the others commit together. A request whose
        session id is invalid is refused before any SQL runs. If BEGIN or COMMIT fails,
        every slot holds the error.

        Failures are rare, so the batch first runs optimistically: no savepoints, event
        rows inserted with one ``executemany`` per session. Only if a request fails is
        that transaction rolled back and the batch re-run with a savepoint per request,
        skipping the request already known to fail (so a fault hook fires once). The
        fast path is ~2× the throughput of a savepoint per request (docs/performance.md).

        Returns:
            per request, the stored events it produced (an oversize JSON block adds an
            ``artifact_created`` before its ``node_appended``) or the error.
        """
        results: list[list[StoredEvent] | ClewError | None] = [None] * len(requests)
        live: list[int] = []
        for i, req in enumerate(requests):
            sid = req.session_id
            if not (type(sid) is str and sid in self._valid_sids):
                try:
                    self._valid_sids.add(validate_session_id(sid))
                except InvalidSessionId as e:
                    results[i] = e
                    continue
            live.append(i)
        if live:
            conn = self._writer()
            if not self._run_batch(conn, requests, live, results, savepoints=False):
                self._run_batch(conn, requests, live, results, savepoints=True)
        return [r if r is not None else StoreError("request not run") for r in results]

    def _run_batch(
        self,
        conn: apsw.Connection,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: list[list[StoredEvent] | ClewError | None],
        *,
        savepoints: bool,
    ) -> bool:
        """Run ``requests[live]`` in one transaction, filling ``results``.

        Returns:
            False when the optimistic pass (``savepoints=False``) met a failing request:
            the transaction was rolled back, the failing slot filled, nothing else
            committed — re-run with savepoints. True when the batch is settled.
        """
        # sessions.updated_at = created_at of the session's last event; written once per
        # batch and session rather than once per event.
        touched: dict[str, str] = {}
        done: list[tuple[int, list[StoredEvent]]] = []
        pending: Pending | None = None if savepoints else {}
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as e:
            err = translate_error(e, "begin")
            for i in live:
                if results[i] is None:
                    results[i] = err
            return True
        try:
            for i in live:
                if results[i] is not None:
                    continue  # failed in the optimistic pass: not run again
                req = requests[i]
                snapshot = self._snapshot_counters(req) if savepoints else None
                if savepoints:
                    conn.execute("SAVEPOINT req")
                try:
                    try:
                        stored = self._append_one(conn, req, pending)
                    except ClewError:
                        raise
                    except (apsw.Error, OSError) as e:
                        raise translate_error(e, f"appending {event_type_of(req.event)}") from e
                    except (TypeError, ValueError) as e:
                        # A payload msgspec cannot encode (an object() in metadata, …)
                        # is this request's fault alone, not its batch's.
                        raise StoreError(
                            f"cannot store {event_type_of(req.event)}: {e}"
                        ) from e
                except ClewError as e:
                    results[i] = e
                    if not savepoints:
                        conn.execute("ROLLBACK")
                        self._forget_counters()
                        return False
                    conn.execute("ROLLBACK TO req")
                    conn.execute("RELEASE req")
                    assert snapshot is not None
                    self._restore_counters(req, snapshot)
                    continue
                if savepoints:
                    conn.execute("RELEASE req")
                done.append((i, stored))
                touched[req.session_id] = req.created_at
            if pending:
                try:
                    for sid, rows in pending.items():
                        conn.executemany(self._insert_sql(sid), rows)
                except apsw.Error:
                    # Which request broke it is unknown: redo the batch with savepoints.
                    conn.execute("ROLLBACK")
                    self._forget_counters()
                    return False
            try:
                for sid, at in touched.items():
                    conn.execute(
                        "UPDATE sessions SET updated_at = ? WHERE session_id = ?", (at, sid)
                    )
                conn.execute("COMMIT")
            except (apsw.Error, OSError) as e:
                raise translate_error(e, "commit") from e
        except BaseException as e:
            # The transaction is gone: forget every cached counter and reload lazily.
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            self._forget_counters()
            if not isinstance(e, Exception):
                raise
            err = e if isinstance(e, StoreError) else StoreError(f"append failed: {e!r}")
            for i in live:
                results[i] = err
            return True
        for i, stored in done:
            results[i] = stored
        return True

    def _snapshot_counters(self, req: AppendRequest) -> tuple[int | None, int | None, int | None]:
        sid = req.session_id
        run_key = (sid, req.run_id) if req.run_id else None
        return (
            self._seq.get(sid),
            self._node_seq.get(sid),
            self._run_seq.get(run_key) if run_key else None,
        )

    def _restore_counters(
        self, req: AppendRequest, snap: tuple[int | None, int | None, int | None]
    ) -> None:
        sid = req.session_id
        for cache, key, value in (
            (self._seq, sid, snap[0]),
            (self._node_seq, sid, snap[1]),
        ):
            if value is None:
                cache.pop(key, None)
            else:
                cache[key] = value
        if req.run_id:
            if snap[2] is None:
                self._run_seq.pop((sid, req.run_id), None)
            else:
                self._run_seq[(sid, req.run_id)] = snap[2]
        if isinstance(req.event, SessionCreated):
            self._known_sessions.discard(sid)

    def _forget_counters(self) -> None:
        self._seq.clear()
        self._node_seq.clear()
        self._run_seq.clear()
        self._known_sessions.clear()

    def _ensure_session(self, conn: apsw.Connection, sid: str) -> None:
        if sid in self._known_sessions:
            return
        row = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        if row is None:
            raise UnknownSession(f"unknown session {sid}")
        self._known_sessions.add(sid)

    def _next_seq(self, conn: apsw.Connection, sid: str) -> int:
        n = self._seq.get(sid)
        if n is None:
            n = _scalar(conn, f"SELECT COALESCE(MAX(seq), 0) FROM events_{sid}")
        n += 1
        self._seq[sid] = n
        return n

    def _next_node_seq(self, conn: apsw.Connection, sid: str) -> int:
        n = self._node_seq.get(sid)
        if n is None:
            n = _scalar(conn, f"SELECT COALESCE(MAX(node_seq), 0) FROM nodes_{sid}")
        n += 1
        self._node_seq[sid] = n
        return n

    def _next_run_seq(self, conn: apsw.Connection, sid: str, run_id: str) -> int:
        key = (sid, run_id)
        n = self._run_seq.get(key)
        if n is None:
            n = _scalar(
                conn, f"SELECT COALESCE(MAX(run_seq), 0) FROM events_{sid} WHERE run_id = ?",
                (run_id,),
            )
        n += 1
        self._run_seq[key] = n
        return n

    def _insert_sql(self, sid: str) -> str:
        sql = self._insert_sqls.get(sid)
        if sql is None:
            sql = f"INSERT INTO events_{validate_session_id(sid)} VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            self._insert_sqls[sid] = sql
        return sql

    def _append_one(
        self, conn: apsw.Connection, req: AppendRequest, pending: Pending | None = None
    ) -> list[StoredEvent]:
        """Append one request: materialised rows, then its event row(s).

        ``req.session_id`` was validated by :meth:`append_batch`. With ``pending`` the
        event rows are collected for one ``executemany`` instead of inserted at once.
        """
        sid = req.session_id
        event = req.event
        out: list[StoredEvent] = []
        if isinstance(event, SessionCreated):
            if event.session_id != sid:
                raise StoreError(f"session_created for {event.session_id} sent to {sid}")
            conn.execute(session_tables_ddl(sid))
            conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, NULL, ?, 'active', ?, ?, ?)",
                (
                    sid,
                    event.cwd,
                    event.root_agent_id,
                    event.parent_session_id,
                    _json_or_none(event.metadata),
                    req.created_at,
                    req.created_at,
                ),
            )
            self._known_sessions.add(sid)
            self._seq[sid] = 0
            self._node_seq[sid] = 0
        elif sid not in self._known_sessions:
            self._ensure_session(conn, sid)
        if isinstance(event, NodeAppended):
            event, artifact_events = self._externalise_json(sid, req, event)
            for art in artifact_events:
                out.append(self._insert_event(conn, sid, req, art, pending))
                self._materialise(conn, sid, req, art)
        if self._fault is not None:
            self._fault("before_materialise")
        if type(event) in _MATERIALISED:
            self._materialise(conn, sid, req, event)
        if self._fault is not None:
            self._fault("before_event_row")
        out.append(self._insert_event(conn, sid, req, event, pending))
        return out

    def _insert_event(
        self,
        conn: apsw.Connection,
        sid: str,
        req: AppendRequest,
        event: Event,
        pending: Pending | None = None,
    ) -> StoredEvent:
        seq = self._next_seq(conn, sid)
        run_id = req.run_id
        run_seq = self._next_run_seq(conn, sid, run_id) if run_id else None
        ev_id = event_id(sid, run_id, run_seq, seq)
        etype, level, has_node, has_tool = _type_info(event)
        node_id = _node_id(event) if has_node else None
        tool_call_id = _tool_call_id(event) if has_tool else None
        row = (
            ev_id,
            seq,
            run_seq,
            req.agent_id,
            run_id,
            level,
            etype,
            node_id,
            tool_call_id,
            _encode(event).decode(),
            req.created_at,
        )
        if pending is None:
            conn.execute(self._insert_sql(sid), row)
        else:
            rows = pending.get(sid)
            if rows is None:
                rows = pending[sid] = []
            rows.append(row)
        return StoredEvent(
            event_id=ev_id,
            seq=seq,
            run_seq=run_seq,
            agent_id=req.agent_id,
            run_id=run_id,
            level=level,
            event_type=etype,
            node_id=node_id,
            tool_call_id=tool_call_id,
            created_at=req.created_at,
            event=event,
        )

    def _externalise_json(
        self, sid: str, req: AppendRequest, event: NodeAppended
    ) -> tuple[NodeAppended, list[Event]]:
        """Turn oversize JSON blocks into artifact files + refs (files fsynced first).

        The decision is :func:`eventlog.artifact_plan.plan_artifacts`, shared with the
        replay, which must predict exactly what the writer stores.
        """
        planned, artifacts = plan_artifacts(sid, event, self.artifact_threshold)
        for _, data in artifacts:
            self.artifacts.write(sid, data)
        return planned, [created for created, _ in artifacts]

    def _materialise(
        self, conn: apsw.Connection, sid: str, req: AppendRequest, event: Event
    ) -> None:
        """Apply ``event`` to the materialised tables (same transaction as its row).

        The global tables are keyed globally, so an update names the session too: an
        event of one session never changes another session's agent or run row.
        """
        at = req.created_at
        match event:
            case NodeAppended(node=node, activate=activate):
                self._insert_node(conn, sid, node, at)
                if activate:
                    conn.execute(
                        "UPDATE sessions SET active_node_id = ? WHERE session_id = ?",
                        (node.node_id, sid),
                    )
            case ActiveNodeSwitched(to_node_id=to_node):
                conn.execute(
                    "UPDATE sessions SET active_node_id = ? WHERE session_id = ?", (to_node, sid)
                )
            case SessionArchived():
                conn.execute(
                    "UPDATE sessions SET status = 'archived' WHERE session_id = ?", (sid,)
                )
            case AgentCreated():
                meta = {"role": event.role, "purpose": event.purpose, **event.metadata}
                conn.execute(
                    "INSERT INTO agents VALUES (?, ?, ?, ?, ?, ?, 'idle', NULL, ?, ?, ?)",
                    (
                        event.agent_id,
                        sid,
                        event.parent_agent_id,
                        event.agent_type,
                        event.created_by_run_id,
                        event.fork_from_node_id,
                        _json_or_none(meta),
                        at,
                        at,
                    ),
                )
            case AgentStatusChanged(agent_id=agent_id, status=status, result=result):
                conn.execute(
                    "UPDATE agents SET status = ?, result_json = COALESCE(?, result_json),"
                    " updated_at = ? WHERE agent_id = ? AND session_id = ?",
                    (status, _json_or_none(result), at, agent_id, sid),
                )
            case RunStarted():
                meta = {
                    "phase": event.phase,
                    "attempt": event.attempt,
                    "rng_seed": event.rng_seed,
                    **event.metadata,
                }
                conn.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL, NULL, 0, NULL, NULL,"
                    " ?, ?, ?)",
                    (event.run_id, sid, event.agent_id, event.start_node_id,
                     _json_or_none(meta), at, at),
                )
            case RunEnded():
                conn.execute(
                    "UPDATE runs SET status = ?, end_reason = ?, end_node_id = ?, turn_count = ?,"
                    " usage_json = ?, error_json = ?, updated_at = ?"
                    " WHERE run_id = ? AND session_id = ?",
                    (
                        event.status,
                        event.end_reason,
                        event.end_node_id,
                        event.turn_count,
                        _json_or_none(event.usage),
                        _json_or_none(event.error),
                        at,
                        event.run_id,
                        sid,
                    ),
                )
            case ArtifactCreated():
                conn.execute(
                    "INSERT OR IGNORE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                        _json_or_none({"sha256": event.sha256}),
                        at,
                    ),
                )
            case _:
                pass

    def _insert_node(self, conn: apsw.Connection, sid: str, node: Node, at: str) -> None:
        node_seq = self._next_node_seq(conn, sid)
        conn.execute(
            f"INSERT INTO nodes_{sid} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node.node_id,
                node_seq,
                node.parent_id,
                node.agent_id,
                node.run_id,
                node.role,
                node.node_type,
                encode(node.content).decode(),
                _json_or_none(node.metadata),
                node.token_count,
                at,
            ),
        )
