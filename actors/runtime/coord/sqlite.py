"""Leases and the run queue on a coordination SQLite file (``<home>/coord.sqlite``).

Several processes on one host share the file. Each statement that decides something —
taking a lease, taking a queued run, adopting an orphan — runs in one ``BEGIN
IMMEDIATE`` transaction: SQLite then holds its one write lock for the whole check and
change, so two processes never both win. The file is in WAL mode (readers do not block
the writer); each process has one connection guarded by a lock, so any thread may call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import msgspec

from actors.runtime.coord.protocol import QUEUE_COLUMNS, Lease, QueuedRun, RunSpec, worker_lease
from eventlog.errors import StoreError

#: A second process waits this long (ms) for the write lock instead of failing at once.
BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS clew_leases (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS clew_leases_owner ON clew_leases (owner);
CREATE TABLE IF NOT EXISTS clew_run_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt TEXT NOT NULL,
    session_id TEXT,
    model TEXT NOT NULL,
    tools TEXT,
    team TEXT,
    status TEXT NOT NULL DEFAULT 'queued',
    owner TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    runs_before INTEGER,
    outcome TEXT,
    run_id TEXT,
    error TEXT,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS clew_run_queue_status ON clew_run_queue (status, id);
"""

_ACQUIRE = """
INSERT INTO clew_leases (name, owner, expires_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE clew_leases.owner = excluded.owner OR clew_leases.expires_at <= ?4
"""

#: The oldest queued run that may start: its session (if any) has no run in progress
#: and no live lease of another owner.
_NEXT = f"""
SELECT {QUEUE_COLUMNS} FROM clew_run_queue AS q
WHERE q.status = 'queued' AND (q.session_id IS NULL OR (
    NOT EXISTS (SELECT 1 FROM clew_run_queue AS r
                WHERE r.session_id = q.session_id AND r.status = 'running')
    AND NOT EXISTS (SELECT 1 FROM clew_leases AS l
                    WHERE l.name = q.session_id AND l.expires_at > ?1 AND l.owner != ?2)))
ORDER BY q.id LIMIT 1
"""

_ORPHANS = f"""
SELECT {QUEUE_COLUMNS} FROM clew_run_queue AS q
WHERE q.status = 'running' AND NOT EXISTS (
    SELECT 1 FROM clew_leases AS l
    WHERE l.name = 'worker:' || q.owner AND l.expires_at > ?1)
ORDER BY q.id
"""


def _row(values: tuple[Any, ...]) -> QueuedRun:
    return msgspec.convert(dict(zip(QueuedRun.__struct_fields__, values, strict=True)), QueuedRun)


class SQLiteCoordinator:
    """Leases and the run queue on one SQLite file, shared by the processes of a host."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        """Open (creating if needed) the coordination file at ``path``.

        Raises:
            StoreError: the file cannot be opened or is not a coordination database.
        """
        self.path = path
        self.location = str(path)
        self._clock = clock
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._conn = apsw.Connection(str(path))
            self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # As the home's default durability ("normal"): a commit survives the process
            # dying, not a power loss — and costs no fsync, so taking a lease stays cheap.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._conn:
                self._conn.execute(_SCHEMA)
        except (apsw.Error, OSError) as e:
            raise StoreError(f"cannot open the coordination database {path}: {e}") from e

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[apsw.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; apsw errors become ``StoreError``."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except apsw.Error as e:
                raise StoreError(f"coordination database {self.path}: {e}") from e

    @contextmanager
    def _read(self) -> Iterator[apsw.Connection]:
        """Reads in autocommit (a consistent snapshot per statement, no write lock)."""
        with self._lock:
            try:
                yield self._conn
            except apsw.Error as e:
                raise StoreError(f"coordination database {self.path}: {e}") from e

    # --- leases ------------------------------------------------------------------------

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Take or extend the lease on ``name``; False when another owner holds it."""
        now = self._clock()
        with self._tx() as conn:
            conn.execute(_ACQUIRE, (name, owner, now + ttl, now))
            return conn.changes() == 1

    def renew(self, owner: str, ttl: float) -> set[str]:
        """Extend every lease ``owner`` holds by ``ttl``; return their names."""
        expires = self._clock() + ttl
        with self._tx() as conn:
            conn.execute("UPDATE clew_leases SET expires_at = ? WHERE owner = ?", (expires, owner))
            rows = conn.execute("SELECT name FROM clew_leases WHERE owner = ?", (owner,))
            return {str(name) for (name,) in rows}

    def release(self, name: str, owner: str) -> None:
        """Drop ``owner``'s lease on ``name``."""
        with self._tx() as conn:
            conn.execute("DELETE FROM clew_leases WHERE name = ? AND owner = ?", (name, owner))

    def release_all(self, owner: str) -> None:
        """Drop every lease ``owner`` holds."""
        with self._tx() as conn:
            conn.execute("DELETE FROM clew_leases WHERE owner = ?", (owner,))

    def holder(self, name: str) -> Lease | None:
        """Return the live lease on ``name``, if any."""
        with self._read() as conn:
            rows = list(
                conn.execute(
                    "SELECT name, owner, expires_at FROM clew_leases"
                    " WHERE name = ? AND expires_at > ?",
                    (name, self._clock()),
                )
            )
        return Lease(name=rows[0][0], owner=rows[0][1], expires_at=rows[0][2]) if rows else None

    def expired(self) -> list[Lease]:
        """Return every lease whose expiry has passed."""
        with self._read() as conn:
            rows = list(
                conn.execute(
                    "SELECT name, owner, expires_at FROM clew_leases WHERE expires_at <= ?"
                    " ORDER BY name",
                    (self._clock(),),
                )
            )
        return [Lease(name=n, owner=o, expires_at=e) for n, o, e in rows]

    # --- the run queue -----------------------------------------------------------------

    def submit(self, spec: RunSpec) -> QueuedRun:
        """Enqueue ``spec``; return its row."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO clew_run_queue (prompt, session_id, model, tools, team,"
                " submitted_at) VALUES (?, ?, ?, ?, ?, ?)",
                (spec.prompt, spec.session_id, spec.model, spec.tools, spec.team, self._clock()),
            )
            return self._get(conn, conn.last_insert_rowid())

    def take(self, owner: str) -> QueuedRun | None:
        """Give the oldest queued run that can start now to ``owner``."""
        now = self._clock()
        with self._tx() as conn:
            rows = list(conn.execute(_NEXT, (now, owner)))
            if not rows:
                return None
            conn.execute(
                "UPDATE clew_run_queue SET status = 'running', owner = ?, attempts = attempts + 1,"
                " started_at = ? WHERE id = ?",
                (owner, now, rows[0][0]),
            )
            return self._get(conn, rows[0][0])

    def attach(self, run_id: int, owner: str, session_id: str, runs_before: int) -> None:
        """Record the session the queued run runs in and its main runs so far."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE clew_run_queue SET session_id = ?, runs_before = ?"
                " WHERE id = ? AND owner = ? AND status = 'running'",
                (session_id, runs_before, run_id, owner),
            )

    def finish(
        self, run_id: int, owner: str, outcome: str, *, run: str | None, error: str | None
    ) -> None:
        """Mark the queued run done with the run's ``outcome``."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE clew_run_queue SET status = 'done', outcome = ?, run_id = ?, error = ?,"
                " finished_at = ? WHERE id = ? AND owner = ? AND status = 'running'",
                (outcome, run, error, self._clock(), run_id, owner),
            )

    def requeue(self, run_id: int, owner: str) -> None:
        """Put a run ``owner`` took back in the queue."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE clew_run_queue SET status = 'queued', owner = NULL, started_at = NULL,"
                " runs_before = NULL WHERE id = ? AND owner = ? AND status = 'running'",
                (run_id, owner),
            )

    def orphans(self) -> list[QueuedRun]:
        """Return the running rows whose owner's worker lease is gone or expired."""
        with self._read() as conn:
            return [_row(r) for r in conn.execute(_ORPHANS, (self._clock(),))]

    def adopt(self, run_id: int, dead_owner: str, owner: str) -> QueuedRun | None:
        """Move an orphaned row from ``dead_owner`` to ``owner``; None if someone was first."""
        now = self._clock()
        with self._tx() as conn:
            live = list(
                conn.execute(
                    "SELECT 1 FROM clew_leases WHERE name = ? AND expires_at > ?",
                    (worker_lease(dead_owner), now),
                )
            )
            if live:
                return None
            conn.execute(
                "UPDATE clew_run_queue SET owner = ?, attempts = attempts + 1"
                " WHERE id = ? AND owner = ? AND status = 'running'",
                (owner, run_id, dead_owner),
            )
            return self._get(conn, run_id) if conn.changes() == 1 else None

    def get(self, run_id: int) -> QueuedRun | None:
        """Return one row."""
        with self._read() as conn:
            rows = list(
                conn.execute(f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue WHERE id = ?", (run_id,))
            )
        return _row(rows[0]) if rows else None

    def list_runs(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` rows, oldest first."""
        with self._read() as conn:
            rows = list(
                conn.execute(
                    f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue ORDER BY id DESC LIMIT ?",
                    (limit,),
                )
            )
        return [_row(r) for r in reversed(rows)]

    @staticmethod
    def _get(conn: apsw.Connection, run_id: int) -> QueuedRun:
        rows = list(
            conn.execute(f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue WHERE id = ?", (run_id,))
        )
        return _row(rows[0])
