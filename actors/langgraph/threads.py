"""LangGraph threads as clew sessions: naming, creating, folding, appending, deleting.

One session per thread. Its id is derived from the thread id (:func:`session_id_for`);
the thread id itself is kept in the session's metadata (``langgraph_thread_id``), which
is how the saver finds every thread of a home. :class:`Threads` keeps the fold of each
thread it touched (:class:`~actors.langgraph.thread_log.ThreadLog`) and brings it up to
date from the store before each use, so several processes may share a home. A fold made
from nothing follows the session's hash chain as it reads (as ``clew verify`` does): an
event changed or removed since it was written raises
:class:`~actors.errors.CheckpointDamaged` naming the thread and the seq, instead of
handing LangGraph the changed bytes. Nothing here imports LangGraph.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from actors.errors import CheckpointDamaged
from actors.langgraph.listing import copied
from actors.langgraph.thread_log import ThreadLog
from eventlog.clock import Clock
from eventlog.errors import ClewError, IntegrityError, UnknownSession
from eventlog.events import Event, SessionCreated
from eventlog.records import AppendRequest, SessionRow, StoredEvent
from eventlog.store import EventStore, SessionDeletion
from eventlog.writer import Writer

#: The session metadata key holding the LangGraph thread id.
THREAD_KEY = "langgraph_thread_id"
#: The root agent id recorded for a thread's session (no clew agent runs in it).
THREAD_AGENT = "langgraph"
_SAFE = re.compile(r"^[a-zA-Z0-9_]{1,100}$")
#: Thread folds kept in memory; the least recently used is dropped (and re-read later).
_MAX_LOGS = 64


def session_id_for(thread_id: str) -> str:
    """Return the clew session id of a LangGraph thread (one-to-one).

    A UUID becomes ``lgu_<32 hex>``, an id already made of ``[a-zA-Z0-9_]`` ``lgt_<id>``,
    anything else ``lgh_<sha256 prefix>`` (the thread id is in the session's metadata).
    """
    try:
        parsed = uuid.UUID(thread_id)
    except ValueError:
        parsed = None
    if parsed is not None and str(parsed) == thread_id:
        return f"lgu_{parsed.hex}"
    if _SAFE.match(thread_id):
        return f"lgt_{thread_id}"
    return "lgh_" + hashlib.sha256(thread_id.encode()).hexdigest()[:40]


class Threads:
    """The threads of one clew home, as the saver sees them."""

    def __init__(self, store: EventStore, writer: Writer, clock: Clock, cwd: str) -> None:
        self._store = store
        self._writer = writer
        self._clock = clock
        self._cwd = cwd
        self._logs: OrderedDict[str, ThreadLog] = OrderedDict()
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    def lock(self, thread_id: str) -> threading.RLock:
        """Return the lock serialising this process's reads and writes of the thread."""
        with self._guard:
            return self._locks.setdefault(session_id_for(thread_id), threading.RLock())

    def log(self, thread_id: str, *, create: bool = False) -> ThreadLog | None:
        """Return the thread's fold, up to date with the store (hold :meth:`lock`).

        Returns None for a thread never saved, unless ``create`` (then its session is
        created).
        """
        sid = session_id_for(thread_id)
        try:
            row = self._store.read_session(sid)
        except UnknownSession:
            self._drop(sid)
            if not create:
                return None
            row = self._create(sid, thread_id)
        with self._guard:
            log = self._logs.get(sid)
            if log is None or log.created_at != row.created_at:
                log = ThreadLog(sid, row.created_at, thread_id)
            self._logs[sid] = log
            self._logs.move_to_end(sid)
            while len(self._logs) > _MAX_LOGS:
                self._logs.popitem(last=False)
        if log.last_seq:  # the rest, after events this fold has read or written already
            for stored in self._store.read_events(sid, after_seq=log.last_seq):
                log.apply(stored)
            return log
        try:  # from nothing: the hash chain is followed from the first event to the head
            for stored in self._store.iter_events(sid):
                log.apply(stored)
        except IntegrityError as e:
            self._drop(sid)  # a fold of part of the thread is not kept
            raise CheckpointDamaged(f"LangGraph thread {thread_id!r}: {e}") from e
        return log

    def _create(self, sid: str, thread_id: str) -> SessionRow:
        event = SessionCreated(
            session_id=sid,
            cwd=self._cwd,
            root_agent_id=THREAD_AGENT,
            metadata={THREAD_KEY: thread_id},
        )
        try:
            self._writer.append(
                AppendRequest(session_id=sid, event=event, created_at=self._clock.now())
            )
        except ClewError:
            if not self._store.session_exists(sid):
                raise
            # Another process created it meanwhile: use theirs.
        return self._store.read_session(sid)

    def _drop(self, sid: str) -> None:
        with self._guard:
            self._logs.pop(sid, None)

    def append(self, log: ThreadLog, events: Sequence[Event]) -> None:
        """Append ``events`` to the thread's session (one commit, durable on return) and
        fold them into ``log``."""
        now = self._clock.now()
        futures = [
            self._writer.submit(AppendRequest(session_id=log.session_id, event=e, created_at=now))
            for e in events
        ]
        stored: list[StoredEvent] = [row for fut in futures for row in fut.get(timeout=60.0)]
        expected = range(log.last_seq + 1, log.last_seq + 1 + len(stored))
        if [s.seq for s in stored] == list(expected):
            for row in stored:
                log.apply(row)
            return
        # Another process wrote to the thread meanwhile: fold everything in seq order.
        for row in self._store.read_events(log.session_id, after_seq=log.last_seq):
            log.apply(row)

    def graph_events(self, log: ThreadLog, target_thread_id: str) -> list[Event]:
        """The thread's LangGraph events up to ``log.last_seq``, re-addressed to another."""
        rows = self._store.read_events(log.session_id)
        return copied([r for r in rows if r.seq <= log.last_seq], target_thread_id)

    def delete(self, thread_id: str) -> SessionDeletion | None:
        """Delete the thread's session for good; None when there is none."""
        sid = session_id_for(thread_id)
        self._drop(sid)
        try:
            return self._writer.delete_session(sid)
        except UnknownSession:
            return None

    def thread_ids(self) -> list[str]:
        """Every LangGraph thread stored in the home, oldest first."""
        found: list[str] = []
        for row in self._store.list_sessions():
            tid = row.metadata.get(THREAD_KEY)
            if isinstance(tid, str) and session_id_for(tid) == row.session_id:
                found.append(tid)
        return found
