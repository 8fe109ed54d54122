"""What the writer caches across batches: the counters ``seq``, ``node_seq``, ``run_seq``,
and each session's chain head (the hash its next event chains to).

Each is loaded lazily from its table (``MAX(...)``, ``sessions.chain_head``) and then
kept in memory, so an append costs no ``SELECT``. The cache is only right while it
matches what committed: a request undone by a savepoint gives its counters back
(:meth:`Counters.restore`), and a transaction that is rolled back as a whole drops them
all (:meth:`Counters.forget`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import apsw

from eventlog.chain import EVENT_COLUMNS, GENESIS, link
from eventlog.errors import UnknownSession
from eventlog.events import SessionCreated
from eventlog.records import AppendRequest

#: What :meth:`Counters.snapshot` saves of one request: seq, node_seq, run_seq, chain head,
#: the session's active node set in this transaction.
Snapshot = tuple[int | None, int | None, int | None, str | None, str | None]

K = TypeVar("K", str, tuple[str, str])
V = TypeVar("V", int, str)


def _scalar(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    assert row is not None  # an aggregate always returns one row
    return int(row[0])


class Counters:
    """Per-session counters and the set of sessions known to exist (session ids valid)."""

    __slots__ = ("active", "head", "known_sessions", "node_seq", "run_seq", "seq")

    def __init__(self) -> None:
        self.known_sessions: set[str] = set()
        self.seq: dict[str, int] = {}
        self.node_seq: dict[str, int] = {}
        self.run_seq: dict[tuple[str, str], int] = {}
        self.head: dict[str, str] = {}
        #: The active node each session was given in the open transaction, written to its
        #: ``sessions`` row once, with the batch's other changes to it (touch_sessions).
        self.active: dict[str, str] = {}

    def session_created(self, sid: str) -> None:
        """Record a session created in this transaction: it exists, its counters are 0."""
        self.known_sessions.add(sid)
        self.seq[sid] = 0
        self.node_seq[sid] = 0
        self.head[sid] = GENESIS

    def ensure_session(self, conn: apsw.Connection, sid: str) -> None:
        """Raise ``UnknownSession`` unless ``sid`` is a stored session."""
        if sid in self.known_sessions:
            return
        row = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        if row is None:
            raise UnknownSession(f"unknown session {sid}")
        self.known_sessions.add(sid)

    def next_seq(self, conn: apsw.Connection, sid: str) -> int:
        """Take the session's next event ``seq``."""
        return _take(self.seq, sid, conn, f"SELECT COALESCE(MAX(seq), 0) FROM events_{sid}")

    def next_node_seq(self, conn: apsw.Connection, sid: str) -> int:
        """Take the session's next ``node_seq``."""
        return _take(
            self.node_seq, sid, conn, f"SELECT COALESCE(MAX(node_seq), 0) FROM nodes_{sid}"
        )

    def next_run_seq(self, conn: apsw.Connection, sid: str, run_id: str) -> int:
        """Take the run's next ``run_seq``."""
        return _take(
            self.run_seq,
            (sid, run_id),
            conn,
            f"SELECT COALESCE(MAX(run_seq), 0) FROM events_{sid} WHERE run_id = ?",
            (run_id,),
        )

    def chain(self, conn: apsw.Connection, sid: str, row: tuple[Any, ...]) -> str:
        """Return the hash of the session's next event row ``row``; it becomes the head."""
        prev = self.head.get(sid)
        if prev is None:
            prev = load_head(conn, sid)
        digest = self.head[sid] = link(prev, row)
        return digest

    def snapshot(self, req: AppendRequest) -> Snapshot:
        """Save the counters ``req`` may take, for :meth:`restore`."""
        sid = req.session_id
        return (
            self.seq.get(sid),
            self.node_seq.get(sid),
            self.run_seq.get((sid, req.run_id)) if req.run_id else None,
            self.head.get(sid),
            self.active.get(sid),
        )

    def restore(self, req: AppendRequest, snap: Snapshot) -> None:
        """Give back what ``req`` took (its savepoint was rolled back)."""
        sid = req.session_id
        _put(self.seq, sid, snap[0])
        _put(self.node_seq, sid, snap[1])
        if req.run_id:
            _put(self.run_seq, (sid, req.run_id), snap[2])
        _put(self.head, sid, snap[3])
        _put(self.active, sid, snap[4])
        if isinstance(req.event, SessionCreated):
            self.known_sessions.discard(sid)

    def drop(self, sid: str) -> None:
        """Forget one session (it was deleted): a session made again under its id starts
        from 0."""
        self.known_sessions.discard(sid)
        self.seq.pop(sid, None)
        self.node_seq.pop(sid, None)
        self.head.pop(sid, None)
        for key in [k for k in self.run_seq if k[0] == sid]:
            del self.run_seq[key]

    def forget(self) -> None:
        """Drop everything (the transaction is gone); counters reload lazily."""
        self.seq.clear()
        self.node_seq.clear()
        self.run_seq.clear()
        self.head.clear()
        self.active.clear()
        self.known_sessions.clear()


def _take(
    cache: dict[K, int], key: K, conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()
) -> int:
    """Take the next number after ``cache[key]``, loaded with ``sql`` (a ``MAX``) on a miss."""
    n = cache.get(key)
    if n is None:
        n = _scalar(conn, sql, params)
    n += 1
    cache[key] = n
    return n


def _put(cache: dict[Any, V], key: Any, value: V | None) -> None:
    if value is None:
        cache.pop(key, None)
    else:
        cache[key] = value


def load_head(conn: apsw.Connection, sid: str) -> str:
    """Return the hash the session's next row chains to (``sid`` validated).

    ``sessions.chain_head`` once the session has a chained row; else the running
    digest of its legacy rows (read once per writer and session: the first row the
    writer appends to an old session seals what was there).
    """
    row = conn.execute("SELECT chain_head FROM sessions WHERE session_id = ?", (sid,)).fetchone()
    if row is not None and row[0] is not None:
        return str(row[0])
    digest = GENESIS
    for values in conn.execute(f"SELECT {EVENT_COLUMNS} FROM events_{sid} ORDER BY seq"):
        digest = link(digest, values)
    return digest
