"""The group-commit batch append: many requests, one transaction, each isolated.

Only the writer actor appends (one write connection). A batch runs in one
:class:`~eventlog.sqlite.transaction.Transaction`. Failures are rare, so it first runs
optimistically: no savepoints, event rows inserted with one ``executemany`` per
session. Only if a request fails is that transaction rolled back and the batch re-run
with a savepoint per request, skipping the request already known to fail (so a fault
hook fires once). The fast path is ~2× the throughput of a savepoint per request
(docs/performance.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import msgspec

from eventlog.artifact_plan import plan_artifacts
from eventlog.artifacts import ArtifactFiles
from eventlog.envelope import node_id_of, tool_call_id_of, type_info
from eventlog.errors import ClewError, InvalidSessionId, StoreError
from eventlog.events import (
    Event,
    NodeAppended,
    SessionCreated,
    ToolCallFinished,
    event_type_of,
)
from eventlog.ids import event_id, validate_session_id
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite.cold import move_to_cold
from eventlog.sqlite.counters import Counters
from eventlog.sqlite.deletion import delete_artifact_files, delete_session_rows
from eventlog.sqlite.materialise import MATERIALISED, create_session, materialise, touch_sessions
from eventlog.sqlite.transaction import Transaction, translate_error
from eventlog.store import SessionDeletion

#: Per request: its stored events, its error, or None while not settled.
Results = list[list[StoredEvent] | ClewError | None]
#: Row tuples of ``events_<sid>`` waiting for one ``executemany`` per session.
Pending = dict[str, list[tuple[Any, ...]]]
#: A test seam called with a step name inside the append transaction.
FaultHook = Callable[[str], None]

_encode = msgspec.json.Encoder().encode


class _Retry(Exception):
    """The optimistic pass met a failing request: it was rolled back, re-run with savepoints."""


class BatchAppend:
    """The write side of the store: the batch append and the counters it caches."""

    def __init__(
        self,
        connect: Callable[[], apsw.Connection],
        artifacts: ArtifactFiles,
        artifact_threshold: int,
        fault_hook: FaultHook | None = None,
        *,
        main: Path,
    ) -> None:
        """Append through the connection ``connect()`` returns (the one write connection)
        to the main file ``main``."""
        self._connect = connect
        self._main = main
        self.artifacts = artifacts
        self.artifact_threshold = artifact_threshold
        self._fault = fault_hook
        self._counters = Counters()
        # Session ids already validated (validation is a regex: ~1.5 µs per request).
        self._valid_sids: set[str] = set()
        self._insert_sqls: dict[str, str] = {}

    def delete_session(
        self, session_id: str, *, deleted_at: str = "", task_wals: int = 0
    ) -> SessionDeletion:
        """Delete the session (:func:`~eventlog.sqlite.deletion.delete_session_rows`) and
        drop what this writer cached of it, then remove its unreferenced artifact files."""
        try:
            deletion, keep, cold_file = delete_session_rows(
                self._connect(), session_id, self._main, deleted_at=deleted_at, task_wals=task_wals
            )
        finally:
            self._counters.drop(session_id)
        with contextlib.suppress(FileNotFoundError):
            cold_file.unlink()
        delete_artifact_files(self.artifacts.root, session_id, keep)
        return deletion

    def move_to_cold(self, session_id: str) -> bool:
        """Move the session's table pair to its cold file
        (:func:`~eventlog.sqlite.cold.move_to_cold`), forgetting what this writer cached
        of it; False when it is cold already."""
        try:
            return move_to_cold(self._connect(), self._main, session_id, self._fault)
        finally:
            self._counters.drop(session_id)

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append ``requests`` in one transaction, each one isolated as if by a savepoint.

        A request that fails (bad session id, unknown session, constraint) leaves no
        trace and its slot holds the error; the others commit together. A request whose
        session id is invalid is refused before any SQL runs. If BEGIN or COMMIT fails,
        every slot holds the error.

        Returns:
            per request, the stored events it produced (an oversize block adds an
            ``artifact_created`` before its ``node_appended`` or ``tool_call_finished``)
            or the error.
        """
        results: Results = [None] * len(requests)
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
            conn = self._connect()
            if not self._run_batch(conn, requests, live, results, savepoints=False):
                self._run_batch(conn, requests, live, results, savepoints=True)
        return [r if r is not None else StoreError("request not run") for r in results]

    def _run_batch(
        self,
        conn: apsw.Connection,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        *,
        savepoints: bool,
    ) -> bool:
        """Run ``requests[live]`` in one transaction, filling ``results``.

        Returns:
            False when the optimistic pass (``savepoints=False``) met a failing request:
            the transaction was rolled back, the failing slot filled, nothing else
            committed — re-run with savepoints. True when the batch is settled.
        """
        done: list[tuple[int, list[StoredEvent]]] = []
        txn = Transaction(conn, "the append batch")
        try:
            with txn:
                if savepoints:
                    self._append_each(txn, requests, live, results, done)
                else:
                    self._append_all(conn, requests, live, results, done)
        except _Retry:
            self._counters.forget()
            return False
        except BaseException as e:
            # The transaction is gone: forget every cached counter and reload lazily.
            self._counters.forget()
            if not isinstance(e, Exception):
                raise
            err = e if isinstance(e, StoreError) else StoreError(f"append failed: {e!r}")
            for i in live:
                # A failed BEGIN ran nothing: a slot that already failed keeps its error.
                if txn.began or results[i] is None:
                    results[i] = err
            return True
        for i, stored in done:
            results[i] = stored
        return True

    def _append_all(
        self,
        conn: apsw.Connection,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
    ) -> None:
        """The optimistic pass: no savepoints, event rows batched per session.

        Raises:
            _Retry: a request failed (its slot holds the error) or the batched insert did.
        """
        touched: dict[str, str] = {}
        pending: Pending = {}
        for i in live:
            req = requests[i]
            try:
                stored = self._append_guarded(conn, req, pending)
            except ClewError as e:
                results[i] = e
                raise _Retry from e
            done.append((i, stored))
            touched[req.session_id] = req.created_at
        try:
            for sid, rows in pending.items():
                conn.executemany(self._insert_sql(sid), rows)
        except apsw.Error as e:
            # Which request broke it is unknown: redo the batch with savepoints.
            raise _Retry from e
        touch_sessions(conn, touched, self._counters)

    def _append_each(
        self,
        txn: Transaction,
        requests: Sequence[AppendRequest],
        live: list[int],
        results: Results,
        done: list[tuple[int, list[StoredEvent]]],
    ) -> None:
        """The careful pass: a savepoint per request, so a failure undoes only its own —
        and, when the environment failed it (a full disk, an I/O error), the later
        requests of the same run: a run's events are its causal history, and on a full
        disk a smaller one may fit where a larger one did not, leaving a gap a resume
        diverges on. A request's own fault (a duplicate node id …) fails it alone."""
        touched: dict[str, str] = {}
        failed: dict[str, ClewError] = {}  # run id → why its earlier request failed
        for i in live:
            req = requests[i]
            earlier = results[i]
            if earlier is not None:  # failed in the optimistic pass: not run again
                if req.run_id is not None and _environmental(earlier):
                    failed.setdefault(req.run_id, earlier)  # type: ignore[arg-type]
                continue
            if req.run_id is not None and req.run_id in failed:
                results[i] = _after_failure(failed[req.run_id])
                continue
            snapshot = self._counters.snapshot(req)
            try:
                with txn.savepoint():
                    stored = self._append_guarded(txn.conn, req, None)
            except ClewError as e:
                if txn.conn.getautocommit():
                    # SQLite rolled the whole transaction back (disk full, I/O error):
                    # the requests before this one are gone too, so the batch failed.
                    raise
                results[i] = e
                self._counters.restore(req, snapshot)
                if req.run_id is not None and _environmental(e):
                    failed.setdefault(req.run_id, e)
                continue
            done.append((i, stored))
            touched[req.session_id] = req.created_at
        touch_sessions(txn.conn, touched, self._counters)

    def _append_guarded(
        self, conn: apsw.Connection, req: AppendRequest, pending: Pending | None
    ) -> list[StoredEvent]:
        """:meth:`_append_one`, with every failure that is this request's own a ClewError."""
        try:
            return self._append_one(conn, req, pending)
        except ClewError:
            raise
        except (apsw.Error, OSError) as e:
            raise translate_error(e, f"appending {event_type_of(req.event)}") from e
        except (TypeError, ValueError) as e:
            # A payload msgspec cannot encode (an object() in metadata, …) is this
            # request's fault alone, not its batch's.
            raise StoreError(f"cannot store {event_type_of(req.event)}: {e}") from e

    def _append_one(
        self, conn: apsw.Connection, req: AppendRequest, pending: Pending | None
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
            create_session(conn, sid, event, req.created_at)
            self._counters.session_created(sid)
        elif sid not in self._counters.known_sessions:
            self._counters.ensure_session(conn, sid)
        if isinstance(event, NodeAppended | ToolCallFinished):
            event, artifact_events = self._externalise(sid, event)
            for art in artifact_events:
                out.append(self._insert_event(conn, sid, req, art, pending))
                materialise(conn, self._counters, sid, req, art)
        if self._fault is not None:
            self._fault("before_materialise")
        if type(event) in MATERIALISED:
            materialise(conn, self._counters, sid, req, event)
        if self._fault is not None:
            self._fault("before_event_row")
        out.append(self._insert_event(conn, sid, req, event, pending))
        return out

    def _insert_sql(self, sid: str) -> str:
        sql = self._insert_sqls.get(sid)
        if sql is None:
            sql = f"INSERT INTO events_{validate_session_id(sid)} VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            self._insert_sqls[sid] = sql
        return sql

    def _insert_event(
        self,
        conn: apsw.Connection,
        sid: str,
        req: AppendRequest,
        event: Event,
        pending: Pending | None,
    ) -> StoredEvent:
        """Number ``event`` and insert its row (or queue it in ``pending``)."""
        counters = self._counters
        seq = counters.next_seq(conn, sid)
        run_id = req.run_id
        run_seq = counters.next_run_seq(conn, sid, run_id) if run_id else None
        ev_id = event_id(sid, run_id, run_seq, seq)
        etype, level, has_node, has_tool = type_info(event)
        node_id = node_id_of(event) if has_node else None
        tool_call_id = tool_call_id_of(event) if has_tool else None
        stored = StoredEvent(
            ev_id,
            seq,
            run_seq,
            req.agent_id,
            run_id,
            level,
            etype,
            node_id,
            tool_call_id,
            req.created_at,
            event,
        )
        # The row holds StoredEvent's fields in order, but the encoded event takes the
        # event's place before created_at (the events_<sid> columns, eventlog.sqlite.schema).
        *columns, created_at, _ = msgspec.structs.astuple(stored)
        values = (*columns, _encode(event).decode(), created_at)
        # The hash chain (eventlog.chain): the row's hash seals it and every row before.
        row = (*values, counters.chain(conn, sid, values))
        if pending is None:
            conn.execute(self._insert_sql(sid), row)
        else:
            rows = pending.get(sid)
            if rows is None:
                rows = pending[sid] = []
            rows.append(row)
        return stored

    def _externalise(self, sid: str, event: Event) -> tuple[Event, list[Event]]:
        """Turn oversize blocks into artifact files + refs (files fsynced first).

        The decision is :func:`eventlog.artifact_plan.plan_artifacts`, shared with the
        replay, which must predict exactly what the writer stores.
        """
        planned, artifacts = plan_artifacts(sid, event, self.artifact_threshold)
        for created, data in artifacts:
            self.artifacts.write(sid, data, ext=created.path.rsplit(".", 1)[-1])
        return planned, [created for created, _ in artifacts]


def _environmental(error: object) -> bool:
    """True when ``error`` came from the environment (a full disk, an I/O error), not
    from its request (a constraint, a payload msgspec cannot encode)."""
    cause = getattr(error, "__cause__", None)
    return isinstance(cause, apsw.FullError | apsw.IOError) or (
        isinstance(cause, OSError) and not isinstance(cause, apsw.Error)
    )


def _after_failure(why: ClewError) -> ClewError:
    """The error of a request not run because an earlier request of its run failed: of the
    same kind (a full disk interrupts the run alike), naming the first failure."""
    text = f"not appended, after an earlier event of its run failed: {why}"
    try:
        return type(why)(text)
    except Exception:  # an error class with another constructor
        return StoreError(text)
