"""Leases and the run queue on tables of a PostgreSQL database (``clew_leases``,
``clew_run_queue``): the coordinator of processes on several hosts.

Taking a lease is one upsert whose ``WHERE`` lets it win only over an expired lease or
the owner's own, so concurrent takers on any host serialise on the row and one wins.
Taking a queued run is ``UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED)``:
workers never wait on each other's candidate rows and never take the same one.
psycopg is imported when the first coordinator is opened (the ``postgres`` extra).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from actors.runtime.coord.protocol import QUEUE_COLUMNS, Lease, QueuedRun, RunSpec, worker_lease
from eventlog.errors import StoreError

if TYPE_CHECKING:
    import psycopg

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS clew_leases (
        name TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS clew_leases_owner ON clew_leases (owner)",
    """CREATE TABLE IF NOT EXISTS clew_run_queue (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
        submitted_at DOUBLE PRECISION NOT NULL,
        started_at DOUBLE PRECISION,
        finished_at DOUBLE PRECISION)""",
    "CREATE INDEX IF NOT EXISTS clew_run_queue_status ON clew_run_queue (status, id)",
]

#: Several processes may create the tables at once; the advisory lock serialises them
#: (``CREATE … IF NOT EXISTS`` alone races on the catalogue). The key is arbitrary.
_SCHEMA_LOCK = 0x636C6577

_ACQUIRE = """
INSERT INTO clew_leases (name, owner, expires_at) VALUES (%(name)s, %(owner)s, %(expires)s)
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE clew_leases.owner = EXCLUDED.owner OR clew_leases.expires_at <= %(now)s
RETURNING name
"""

_TAKE = f"""
UPDATE clew_run_queue SET status = 'running', owner = %(owner)s, attempts = attempts + 1,
    started_at = %(now)s
WHERE id = (
    SELECT q.id FROM clew_run_queue AS q
    WHERE q.status = 'queued' AND (q.session_id IS NULL OR (
        NOT EXISTS (SELECT 1 FROM clew_run_queue AS r
                    WHERE r.session_id = q.session_id AND r.status = 'running')
        AND NOT EXISTS (SELECT 1 FROM clew_leases AS l WHERE l.name = q.session_id
                        AND l.expires_at > %(now)s AND l.owner != %(owner)s)))
    ORDER BY q.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING {QUEUE_COLUMNS}
"""

_ORPHANS = f"""
SELECT {QUEUE_COLUMNS} FROM clew_run_queue AS q
WHERE q.status = 'running' AND NOT EXISTS (
    SELECT 1 FROM clew_leases AS l
    WHERE l.name = 'worker:' || q.owner AND l.expires_at > %s)
ORDER BY q.id
"""


def _row(values: tuple[Any, ...]) -> QueuedRun:
    return msgspec.convert(dict(zip(QueuedRun.__struct_fields__, values, strict=True)), QueuedRun)


def without_password(url: str) -> str:
    """Return ``url`` with any password removed (for messages and ``location``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresCoordinator:
    """Leases and the run queue on a PostgreSQL database shared by many processes."""

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        """Connect to ``url`` and create the tables if they are missing.

        Raises:
            StoreError: psycopg is not installed or the server cannot be reached.
        """
        self.location = without_password(url)
        self._clock = clock
        self._lock = threading.Lock()
        try:
            import psycopg  # noqa: PLC0415 - the optional extra, only when asked for
        except ImportError as e:
            raise StoreError(
                "a postgresql:// coordinator needs psycopg: pip install 'clew[postgres]'"
            ) from e
        self._errors = psycopg.Error
        try:
            self._conn: psycopg.Connection[tuple[Any, ...]] = psycopg.connect(url, autocommit=True)
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to {self.location}: {e}") from e
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                cur.execute(statement)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[tuple[Any, ...]]]:
        """One transaction; psycopg errors become ``StoreError``."""
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            except self._errors as e:
                raise StoreError(f"coordination database {self.location}: {e}") from e

    # --- leases ------------------------------------------------------------------------

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Take or extend the lease on ``name``; False when another owner holds it."""
        now = self._clock()
        with self._tx() as cur:
            cur.execute(_ACQUIRE, {"name": name, "owner": owner, "expires": now + ttl, "now": now})
            return cur.fetchone() is not None

    def renew(self, owner: str, ttl: float) -> set[str]:
        """Extend every lease ``owner`` holds by ``ttl``; return their names."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE clew_leases SET expires_at = %s WHERE owner = %s RETURNING name",
                (self._clock() + ttl, owner),
            )
            return {str(name) for (name,) in cur.fetchall()}

    def release(self, name: str, owner: str) -> None:
        """Drop ``owner``'s lease on ``name``."""
        with self._tx() as cur:
            cur.execute("DELETE FROM clew_leases WHERE name = %s AND owner = %s", (name, owner))

    def release_all(self, owner: str) -> None:
        """Drop every lease ``owner`` holds."""
        with self._tx() as cur:
            cur.execute("DELETE FROM clew_leases WHERE owner = %s", (owner,))

    def holder(self, name: str) -> Lease | None:
        """Return the live lease on ``name``, if any."""
        with self._tx() as cur:
            cur.execute(
                "SELECT name, owner, expires_at FROM clew_leases"
                " WHERE name = %s AND expires_at > %s",
                (name, self._clock()),
            )
            row = cur.fetchone()
        return Lease(name=row[0], owner=row[1], expires_at=row[2]) if row else None

    def expired(self) -> list[Lease]:
        """Return every lease whose expiry has passed."""
        with self._tx() as cur:
            cur.execute(
                "SELECT name, owner, expires_at FROM clew_leases WHERE expires_at <= %s"
                " ORDER BY name",
                (self._clock(),),
            )
            rows = cur.fetchall()
        return [Lease(name=n, owner=o, expires_at=e) for n, o, e in rows]

    # --- the run queue -----------------------------------------------------------------

    def submit(self, spec: RunSpec) -> QueuedRun:
        """Enqueue ``spec``; return its row."""
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO clew_run_queue (prompt, session_id, model, tools, team, submitted_at)"
                f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {QUEUE_COLUMNS}",
                (spec.prompt, spec.session_id, spec.model, spec.tools, spec.team, self._clock()),
            )
            return _row(_one(cur))

    def take(self, owner: str) -> QueuedRun | None:
        """Give the oldest queued run that can start now to ``owner``."""
        with self._tx() as cur:
            cur.execute(_TAKE, {"owner": owner, "now": self._clock()})
            row = cur.fetchone()
        return _row(row) if row else None

    def attach(self, run_id: int, owner: str, session_id: str, runs_before: int) -> None:
        """Record the session the queued run runs in and its main runs so far."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE clew_run_queue SET session_id = %s, runs_before = %s"
                " WHERE id = %s AND owner = %s AND status = 'running'",
                (session_id, runs_before, run_id, owner),
            )

    def finish(
        self, run_id: int, owner: str, outcome: str, *, run: str | None, error: str | None
    ) -> None:
        """Mark the queued run done with the run's ``outcome``."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE clew_run_queue SET status = 'done', outcome = %s, run_id = %s,"
                " error = %s, finished_at = %s WHERE id = %s AND owner = %s"
                " AND status = 'running'",
                (outcome, run, error, self._clock(), run_id, owner),
            )

    def requeue(self, run_id: int, owner: str) -> None:
        """Put a run ``owner`` took back in the queue."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE clew_run_queue SET status = 'queued', owner = NULL, started_at = NULL,"
                " runs_before = NULL WHERE id = %s AND owner = %s AND status = 'running'",
                (run_id, owner),
            )

    def orphans(self) -> list[QueuedRun]:
        """Return the running rows whose owner's worker lease is gone or expired."""
        with self._tx() as cur:
            cur.execute(_ORPHANS, (self._clock(),))
            return [_row(r) for r in cur.fetchall()]

    def adopt(self, run_id: int, dead_owner: str, owner: str) -> QueuedRun | None:
        """Move an orphaned row from ``dead_owner`` to ``owner``; None if someone was first."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE clew_run_queue SET owner = %(owner)s, attempts = attempts + 1"
                " WHERE id = %(id)s AND owner = %(dead)s AND status = 'running'"
                " AND NOT EXISTS (SELECT 1 FROM clew_leases WHERE name = %(worker)s"
                f" AND expires_at > %(now)s) RETURNING {QUEUE_COLUMNS}",
                {
                    "owner": owner,
                    "id": run_id,
                    "dead": dead_owner,
                    "worker": worker_lease(dead_owner),
                    "now": self._clock(),
                },
            )
            row = cur.fetchone()
        return _row(row) if row else None

    def get(self, run_id: int) -> QueuedRun | None:
        """Return one row."""
        with self._tx() as cur:
            cur.execute(f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue WHERE id = %s", (run_id,))
            row = cur.fetchone()
        return _row(row) if row else None

    def list_runs(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` rows, oldest first."""
        with self._tx() as cur:
            cur.execute(
                f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue ORDER BY id DESC LIMIT %s",
                (limit,),
            )
            rows = cur.fetchall()
        return [_row(r) for r in reversed(rows)]


def _one(cur: psycopg.Cursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    row = cur.fetchone()
    assert row is not None  # RETURNING of an INSERT always returns its row
    return row
