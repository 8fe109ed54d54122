"""Connections to the PostgreSQL store, and the one place psycopg errors become ``StoreError``.

Readers use an autocommit connection per thread (each statement sees what committed
before it); the writer actor has one connection of its own whose transactions are the
group commits. Connections are pooled: a thread's reader goes back to the pool when the
thread ends, and so does a connection a caller gives back (a Task WAL's, when the WAL is
closed), so a serving process running run after run — each on fresh threads — reuses a
few connections instead of opening (and leaking) some per run. ``read_only`` connections
are opened with ``default_transaction_read_only=on``, so the server itself refuses a
write.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    import psycopg
    from psycopg import errors as pg_errors
except ImportError as e:  # pragma: no cover - the extra is installed in the tests
    raise ImportError("the PostgreSQL store needs psycopg 3: pip install 'clew[postgres]'") from e

from eventlog.errors import ClewError, ReadOnlyStore, StoreError

#: Idle connections kept per kind (autocommit or not) for the next ``connect``.
MAX_IDLE = 8

#: The first row whose classes match gives the sentence (as in eventlog.sqlite.transaction).
TRANSLATIONS: tuple[tuple[tuple[type[Exception], ...], str], ...] = (
    ((pg_errors.IntegrityConstraintViolation,), "constraint violated"),
    ((pg_errors.ReadOnlySqlTransaction,), "the connection is read-only"),
    ((pg_errors.InsufficientPrivilege,), "refused to this role"),
    ((pg_errors.DiskFull,), "disk full"),
    ((psycopg.OperationalError,), "cannot reach or use the database"),
)


#: What the server refuses this role or connection (a role with only ``SELECT``, a
#: read-only connection): a refusal, ``ReadOnlyStore`` (the CLI exits 2), not a failure.
REFUSALS: tuple[type[Exception], ...] = (
    pg_errors.ReadOnlySqlTransaction,
    pg_errors.InsufficientPrivilege,
)


def translate_error(e: BaseException, what: str) -> StoreError:
    """Return the ``StoreError`` for a psycopg error ``e`` raised while doing ``what``
    (a ``ReadOnlyStore`` for one of :data:`REFUSALS`)."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    kind = ReadOnlyStore if isinstance(e, REFUSALS) else StoreError
    for classes, sentence in TRANSLATIONS:
        if isinstance(e, classes):
            return kind(f"{what}: {sentence} ({first})")
    return kind(f"{what}: {type(e).__name__}: {first}")


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Translate psycopg errors raised in the block into ``StoreError``."""
    try:
        yield
    except ClewError:
        raise
    except psycopg.Error as e:
        raise translate_error(e, what) from e


def redact(url: str) -> str:
    """Return ``url`` without its password (for error sentences and logs)."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"


class Connections:
    """Open connections to the database at ``url`` on demand and close them."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        self._local = threading.local()
        self._write: psycopg.Connection[Any] | None = None
        self._all: list[psycopg.Connection[Any]] = []
        self._idle: dict[bool, list[psycopg.Connection[Any]]] = {True: [], False: []}
        self._lock = threading.Lock()

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        """Return a connection of the caller's own: an idle pooled one, else a new one.

        The caller closes it or hands it back with :meth:`give_back`.
        """
        with self._lock:
            idle = self._idle[autocommit]
            while idle:
                conn = idle.pop()
                if not conn.closed:
                    return conn
        options = "-c default_transaction_read_only=on" if self.read_only else ""
        with translate_errors(f"connecting to {redact(self.url)}"):
            conn = psycopg.connect(self.url, autocommit=autocommit, options=options)
        with self._lock:
            self._all.append(conn)
        return conn

    def give_back(self, conn: psycopg.Connection[Any]) -> None:
        """Keep ``conn`` for a later :meth:`connect`; close it if it is not idle (a
        transaction left open, a broken connection) or the pool is full."""
        idle = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with self._lock:
            pool = self._idle[conn.autocommit] if idle else []
            if idle and len(pool) < MAX_IDLE and any(c is conn for c in self._all):
                pool.append(conn)
                return
            self._all = [c for c in self._all if c is not conn]
        with contextlib.suppress(psycopg.Error):
            conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[psycopg.Connection[Any] | None]:
        """One ``REPEATABLE READ`` read transaction on this thread's reader for the block.

        Yields the snapshot's connection (None when nested: the outer one holds). Reads
        of this thread — streaming ones too — then run on it, in that one snapshot.
        """
        if getattr(self._local, "snapshot", None) is not None:
            yield None
            return
        conn = self.reader()
        with translate_errors("reading"), conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self._local.snapshot = conn
            try:
                yield conn
            finally:
                self._local.snapshot = None

    def in_snapshot(self) -> psycopg.Connection[Any] | None:
        """The connection of this thread's :meth:`snapshot`, if one is open."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "snapshot", None)
        return conn

    def reader(self) -> psycopg.Connection[Any]:
        """Return this thread's autocommit reader connection, opened on first use."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = self.connect()
            # The thread's locals die with it, and this token with them: the reader then
            # goes back to the pool for the next thread.
            self._local.token = token = _ThreadToken()
            weakref.finalize(token, self.give_back, conn)
        return conn

    def writer(self) -> psycopg.Connection[Any]:
        """Return the write connection (not autocommit: a transaction per batch)."""
        if self._write is None or self._write.closed:
            self._write = self.connect(autocommit=False)
        return self._write

    def close(self) -> None:
        """Close every connection this object opened (any thread's)."""
        with self._lock:
            conns, self._all = self._all, []
            self._idle = {True: [], False: []}
        for conn in conns:
            with contextlib.suppress(psycopg.Error):
                conn.close()
        self._write = None
        self._local = threading.local()


class _ThreadToken:
    """An object only a thread's locals refer to (its finalizer runs when the thread ends)."""
