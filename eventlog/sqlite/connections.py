"""The store's connections: one write connection, one reader per thread (WAL).

SQLite in WAL mode lets readers run beside the one writer without blocking it; a
connection must not be shared between threads, hence a reader per thread.

Read-only (``SQLITE_OPEN_READONLY``): a WAL-mode file is readable only where its
``-shm`` exists or can be created. On a read-only directory holding a cleanly closed
home (no ``-wal``, so no ``-shm``) the file is opened ``immutable`` instead: all of it
is in the main file, and nothing can change it there. A ``-wal`` that holds data but
has no ``-shm`` beside it cannot be read that way; that is refused.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import apsw

from eventlog.errors import ReadOnlyStore, StoreError
from eventlog.sqlite.transaction import translate_errors

#: ``normal`` survives a process crash, ``full`` a power loss (``PRAGMA synchronous``).
Durability = Literal["normal", "full"]

#: Readers and the writer wait this long (ms) for each other instead of failing at once.
BUSY_TIMEOUT_MS = 10_000
#: Idle streaming connections kept per thread for :meth:`Connections.borrow`. A new
#: connection parses the whole schema on its first statement, and every session adds its
#: own tables: with 2,000 sessions that parse cost ~0.1 s per connection, so ``verify --all``
#: opening one per session was quadratic in the number of sessions. Two cover a stream
#: read inside another; more are simply closed when given back.
IDLE_STREAMS = 2
#: Readers of finished threads kept for new threads (each run starts actor threads, and a
#: new connection's first statement parses the whole schema: ~1.4 ms a session).
SPARE_READERS = 4
#: Open flags. URI file names are allowed so that a cold file (:mod:`eventlog.sqlite.cold`)
#: can be attached read-only (a plain path still opens as a path).
_READ_WRITE = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
_READ_ONLY = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI


class Connections:
    """Open connections to the file at ``path`` on demand and close them."""

    def __init__(self, path: Path, durability: Durability, *, read_only: bool = False) -> None:
        self.path = path
        self.durability = durability
        self.read_only = read_only
        self._immutable = False
        self._local = threading.local()
        self._write: apsw.Connection | None = None
        #: Readers of finished threads, kept for the next threads (see :meth:`reader`).
        self._spare: list[apsw.Connection] = []
        self._spare_lock = threading.Lock()
        self._closed = False

    def connect(self) -> apsw.Connection:
        """Return a new connection of the caller's own (closing it is the caller's job)."""
        with translate_errors(f"opening {self.path}"):
            conn = (
                self._open_read_only()
                if self.read_only
                else apsw.Connection(str(self.path), flags=_READ_WRITE)
            )
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        return conn

    def borrow(self) -> apsw.Connection:
        """Return a connection for one streaming read: an idle one of this thread, or a new
        one. Give it back with :meth:`give_back` once its cursor is closed (a connection with
        no open statement holds no snapshot)."""
        snapshot: apsw.Connection | None = getattr(self._local, "snapshot", None)
        if snapshot is not None:
            return snapshot  # inside :meth:`snapshot`: every read on its one connection
        idle: list[apsw.Connection] | None = getattr(self._local, "idle", None)
        return idle.pop() if idle else self.connect()

    def give_back(self, conn: apsw.Connection) -> None:
        """Keep ``conn`` for the thread's next :meth:`borrow`, or close it if enough are kept.

        A connection still in a transaction (a reader's ``BEGIN`` for one snapshot) is
        rolled back first: kept open, it would pin that snapshot and stop checkpoints. One
        that cannot be (a statement still running) is closed instead.
        """
        if conn is getattr(self._local, "snapshot", None):
            return  # the snapshot's connection: it ends with the snapshot
        idle: list[apsw.Connection] | None = getattr(self._local, "idle", None)
        if idle is None:
            idle = self._local.idle = []
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except apsw.Error:
                conn.close()
                return
        if len(idle) < IDLE_STREAMS:
            idle.append(conn)
        else:
            conn.close()

    def _open_read_only(self) -> apsw.Connection:
        """Open read-only; fall back to ``immutable`` where no ``-shm`` can exist."""
        if not self._immutable:
            conn = apsw.Connection(str(self.path), flags=_READ_ONLY)
            try:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            except (apsw.CantOpenError, apsw.ReadOnlyError):
                conn.close()
                wal = self.path.with_name(self.path.name + "-wal")
                if wal.exists() and wal.stat().st_size > 0:
                    raise StoreError(
                        f"cannot read {self.path} read-only: {wal.name} holds changes that"
                        f" are not in the main file yet, and no {self.path.name}-shm can be"
                        " made beside it; open the home once where it is writable"
                    ) from None
                self._immutable = True
            else:
                return conn
        uri = "file:" + quote(str(self.path.resolve())) + "?immutable=1"
        return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction on this thread's reader for the block; streaming reads
        borrow that connection too, so every read in the block sees one snapshot."""
        if getattr(self._local, "snapshot", None) is not None:
            yield  # nested: the outer snapshot holds
            return
        conn = self.reader()
        with translate_errors("reading"):
            conn.execute("BEGIN")  # deferred: the snapshot is taken by the first read
        self._local.snapshot = conn
        try:
            yield
        finally:
            self._local.snapshot = None
            with translate_errors("reading"):
                conn.execute("ROLLBACK")

    def reader(self) -> apsw.Connection:
        """Return this thread's reader connection: on first use, one a finished thread left
        (its schema already parsed: see :meth:`adopt`), else a new one.

        A thread's reader goes back to :attr:`_spare` when the thread object is collected,
        so the actor threads each run starts do not parse the whole schema again.
        """
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            with self._spare_lock:
                conn = self._spare.pop() if self._spare else None
            if conn is None:
                conn = self.connect()
            self._local.conn = conn
            weakref.finalize(threading.current_thread(), self._left_behind, conn)
        return conn

    def _left_behind(self, conn: apsw.Connection) -> None:
        """Keep the reader of a finished thread for the next thread's :meth:`reader`
        (at most :data:`SPARE_READERS`), unless the store was closed or it is busy."""
        with self._spare_lock:
            keep = not self._closed and len(self._spare) < SPARE_READERS
            if keep and not conn.in_transaction:
                self._spare.append(conn)
                return
        with contextlib.suppress(apsw.Error):
            conn.close()

    def adopt(self, conn: apsw.Connection) -> None:
        """Keep ``conn`` (opened by :meth:`connect` to check or migrate the file) as the
        write connection, or as this thread's reader when read-only, instead of closing it.

        Opening a connection costs nothing; its first statement parses the whole schema,
        and every session adds its own table pair to it: ~1.4 ms a session on a loaded
        2-core machine, 7 s at 5,000 sessions. A process that checked the file on one
        connection and then read on another paid that twice.
        """
        if self.read_only:
            self._local.conn = conn
            return
        with translate_errors(f"opening {self.path} for writing"):
            conn.pragma("synchronous", "FULL" if self.durability == "full" else "NORMAL")
        self._write = conn

    def writer(self) -> apsw.Connection:
        """Return the one write connection, opened on first use with the durability pragma."""
        if self.read_only:
            raise ReadOnlyStore(f"{self.path} is open read-only: writing is refused")
        if self._write is None:
            with translate_errors(f"opening {self.path} for writing"):
                conn = self.connect()
                conn.pragma("synchronous", "FULL" if self.durability == "full" else "NORMAL")
                self._write = conn
        return self._write

    def close(self) -> None:
        """Close the write connection, this thread's reader and the spare readers."""
        with self._spare_lock:
            self._closed = True
            spare, self._spare = self._spare, []
        for left in spare:
            left.close()
        if self._write is not None:
            self._write.close()
            self._write = None
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        for idle in getattr(self._local, "idle", ()):
            idle.close()
        self._local.idle = []
