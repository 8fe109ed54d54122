"""Leases and the run queue in SQL, written once for both dialects (SQLite, PostgreSQL).

:class:`SQLCoordinator` holds every algorithm of the :class:`Coordinator` contract as
one SQL statement each — taking a lease is one upsert whose ``WHERE`` lets it win only
over an expired lease or the owner's own; taking a queued run is one ``UPDATE … WHERE
id = (SELECT …) RETURNING``; adopting an orphan is one ``UPDATE`` that checks the dead
owner's worker lease in the same statement — and decodes the rows. A dialect module
holds only what differs: the connection, the transaction and its error translation,
the column types of the schema, the placeholder style and how a candidate row is
locked (see ``sqlite.py`` and ``postgres.py``).

The statements here use qmark placeholders (``?``); a dialect whose driver wants
another style rewrites them (no statement holds a literal ``?`` or ``%``). Every
statement that decides something runs in :meth:`SQLCoordinator._tx` (the dialect's one
transaction); plain reads run in :meth:`SQLCoordinator._read`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import msgspec

from actors.runtime.coord.protocol import Lease, QueueDepth, QueuedRun, RunSpec, worker_lease

#: Runs one statement with its parameters and returns every row it produced (none for a
#: statement without ``RETURNING``): what a dialect's transaction or read gives.
Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

#: The queue row's columns, in :class:`QueuedRun` field order (every statement selects
#: or returns them in this order, so :func:`queued_run` decodes any of their rows).
QUEUE_COLUMNS = ", ".join(QueuedRun.__struct_fields__)

_LEASE_COLUMNS = "name, owner, expires_at"


def schema(*, id_column: str, real: str) -> list[str]:
    """Return the DDL of both tables, with the dialect's identity column and float type."""
    return [
        f"""CREATE TABLE IF NOT EXISTS clew_leases (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at {real} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS clew_leases_owner ON clew_leases (owner)",
        f"""CREATE TABLE IF NOT EXISTS clew_run_queue (
    id {id_column},
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
    submitted_at {real} NOT NULL,
    started_at {real},
    finished_at {real})""",
        "CREATE INDEX IF NOT EXISTS clew_run_queue_status ON clew_run_queue (status, id)",
    ]


_ACQUIRE = f"""
INSERT INTO clew_leases ({_LEASE_COLUMNS}) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE clew_leases.owner = excluded.owner OR clew_leases.expires_at <= ?
RETURNING name
"""

_RENEW = "UPDATE clew_leases SET expires_at = ? WHERE owner = ? RETURNING name"

_HOLDER = f"SELECT {_LEASE_COLUMNS} FROM clew_leases WHERE name = ? AND expires_at > ?"

_EXPIRED = f"SELECT {_LEASE_COLUMNS} FROM clew_leases WHERE expires_at <= ? ORDER BY name"

_SUBMIT = f"""
INSERT INTO clew_run_queue (prompt, session_id, model, tools, team, submitted_at)
VALUES (?, ?, ?, ?, ?, ?) RETURNING {QUEUE_COLUMNS}
"""

#: Take the oldest queued run that may start: its session (if any) has no run in
#: progress and no live lease of another owner. ``{lock}`` is the dialect's row lock
#: on the candidate (PostgreSQL skips rows another taker holds; SQLite's one write lock
#: already serialises takers).
_TAKE = f"""
UPDATE clew_run_queue SET status = 'running', owner = ?, attempts = attempts + 1,
    started_at = ?
WHERE id = (
    SELECT q.id FROM clew_run_queue AS q
    WHERE q.status = 'queued' AND (q.session_id IS NULL OR (
        NOT EXISTS (SELECT 1 FROM clew_run_queue AS r
                    WHERE r.session_id = q.session_id AND r.status = 'running')
        AND NOT EXISTS (SELECT 1 FROM clew_leases AS l WHERE l.name = q.session_id
                        AND l.expires_at > ? AND l.owner != ?)))
    ORDER BY q.id LIMIT 1{{lock}})
RETURNING {QUEUE_COLUMNS}
"""

_ATTACH = """
UPDATE clew_run_queue SET session_id = ?, runs_before = ?
WHERE id = ? AND owner = ? AND status = 'running'
"""

_FINISH = """
UPDATE clew_run_queue SET status = 'done', outcome = ?, run_id = ?, error = ?, finished_at = ?
WHERE id = ? AND owner = ? AND status = 'running'
"""

_REQUEUE = """
UPDATE clew_run_queue SET status = 'queued', owner = NULL, started_at = NULL, runs_before = NULL
WHERE id = ? AND owner = ? AND status = 'running'
"""

_ORPHANS = f"""
SELECT {QUEUE_COLUMNS} FROM clew_run_queue AS q
WHERE q.status = 'running' AND NOT EXISTS (
    SELECT 1 FROM clew_leases AS l
    WHERE l.name = 'worker:' || q.owner AND l.expires_at > ?)
ORDER BY q.id
"""

#: Move an orphan to its new owner unless the dead owner's worker lease came back to life
#: (checked in the same statement, so a late heartbeat and an adoption never both win).
_ADOPT = f"""
UPDATE clew_run_queue SET owner = ?, attempts = attempts + 1
WHERE id = ? AND owner = ? AND status = 'running'
    AND NOT EXISTS (SELECT 1 FROM clew_leases WHERE name = ? AND expires_at > ?)
RETURNING {QUEUE_COLUMNS}
"""

_GET = f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue WHERE id = ?"

_LIST = f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue ORDER BY id DESC LIMIT ?"

#: Rows of one status, counted on the ``(status, id)`` index.
_COUNT = "SELECT count(*) FROM clew_run_queue WHERE status = ?"

_OLDEST = f"SELECT {QUEUE_COLUMNS} FROM clew_run_queue WHERE status = 'queued' ORDER BY id LIMIT 1"


def queued_run(values: Sequence[Any]) -> QueuedRun:
    """Decode one queue row (its columns in :data:`QUEUE_COLUMNS` order)."""
    return msgspec.convert(dict(zip(QueuedRun.__struct_fields__, values, strict=True)), QueuedRun)


def lease(values: Sequence[Any]) -> Lease:
    """Decode one lease row (``name, owner, expires_at``)."""
    name, owner, expires_at = values
    return Lease(name=name, owner=owner, expires_at=expires_at)


#: The channel a PostgreSQL coordinator notifies when a run may have become takeable.
QUEUE_CHANNEL = "clew_run_queue"


class SQLCoordinator(ABC):
    """The :class:`Coordinator` contract on the two tables; a dialect supplies the rest."""

    #: Appended to the candidate row's ``SELECT`` when taking a queued run.
    lock_candidate: ClassVar[str] = ""

    #: Run in the transaction of a submit, a requeue or a finish (a run may now be
    #: takeable): PostgreSQL's ``NOTIFY``, delivered to listeners when it commits.
    notify_work: ClassVar[str | None] = None

    #: Where it lives: the coordination file's path or the database URL (no password).
    location: str

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._take = _TAKE.format(lock=self.lock_candidate)

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Execute]:
        """One transaction, its driver's errors translated to ``StoreError``."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Execute]:
        """Plain reads (no decision depends on them), errors translated as in ``_tx``."""

    @abstractmethod
    def close(self) -> None:
        """Close its connections."""

    def listen(self, wake: Callable[[], None]) -> bool:
        """Call ``wake`` when a run may have become takeable; False: this dialect cannot
        tell (the caller polls), as SQLite."""
        return False

    def _work(self, execute: Execute) -> None:
        if self.notify_work is not None:
            execute(self.notify_work, ())

    # --- leases ------------------------------------------------------------------------

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Take or extend the lease on ``name``; False when another owner holds it."""
        now = self._clock()
        with self._tx() as execute:
            return bool(execute(_ACQUIRE, (name, owner, now + ttl, now)))

    def renew(self, owner: str, ttl: float) -> set[str]:
        """Extend every lease ``owner`` holds by ``ttl``; return their names."""
        with self._tx() as execute:
            return {str(name) for (name,) in execute(_RENEW, (self._clock() + ttl, owner))}

    def release(self, name: str, owner: str) -> None:
        """Drop ``owner``'s lease on ``name``."""
        with self._tx() as execute:
            execute("DELETE FROM clew_leases WHERE name = ? AND owner = ?", (name, owner))

    def release_all(self, owner: str) -> None:
        """Drop every lease ``owner`` holds."""
        with self._tx() as execute:
            execute("DELETE FROM clew_leases WHERE owner = ?", (owner,))

    def holder(self, name: str) -> Lease | None:
        """Return the live lease on ``name``, if any."""
        with self._read() as execute:
            rows = execute(_HOLDER, (name, self._clock()))
        return lease(rows[0]) if rows else None

    def expired(self) -> list[Lease]:
        """Return every lease whose expiry has passed."""
        with self._read() as execute:
            return [lease(r) for r in execute(_EXPIRED, (self._clock(),))]

    # --- the run queue -----------------------------------------------------------------

    def submit(self, spec: RunSpec) -> QueuedRun:
        """Enqueue ``spec``; return its row."""
        values = (spec.prompt, spec.session_id, spec.model, spec.tools, spec.team, self._clock())
        with self._tx() as execute:
            (row,) = execute(_SUBMIT, values)  # RETURNING of an INSERT returns its one row
            self._work(execute)
        return queued_run(row)

    def take(self, owner: str) -> QueuedRun | None:
        """Give the oldest queued run that can start now to ``owner``."""
        now = self._clock()
        with self._tx() as execute:
            rows = execute(self._take, (owner, now, now, owner))
        return queued_run(rows[0]) if rows else None

    def attach(self, run_id: int, owner: str, session_id: str, runs_before: int) -> None:
        """Record the session the queued run runs in and its main runs so far."""
        with self._tx() as execute:
            execute(_ATTACH, (session_id, runs_before, run_id, owner))

    def finish(
        self, run_id: int, owner: str, outcome: str, *, run: str | None, error: str | None
    ) -> None:
        """Mark the queued run done with the run's ``outcome``."""
        with self._tx() as execute:
            execute(_FINISH, (outcome, run, error, self._clock(), run_id, owner))
            self._work(execute)  # a run queued behind it in its session may start now

    def requeue(self, run_id: int, owner: str) -> None:
        """Put a run ``owner`` took back in the queue."""
        with self._tx() as execute:
            execute(_REQUEUE, (run_id, owner))
            self._work(execute)

    def orphans(self) -> list[QueuedRun]:
        """Return the running rows whose owner's worker lease is gone or expired."""
        with self._read() as execute:
            return [queued_run(r) for r in execute(_ORPHANS, (self._clock(),))]

    def adopt(self, run_id: int, dead_owner: str, owner: str) -> QueuedRun | None:
        """Move an orphaned row from ``dead_owner`` to ``owner``; None if someone was first."""
        values = (owner, run_id, dead_owner, worker_lease(dead_owner), self._clock())
        with self._tx() as execute:
            rows = execute(_ADOPT, values)
        return queued_run(rows[0]) if rows else None

    def get(self, run_id: int) -> QueuedRun | None:
        """Return one row."""
        with self._read() as execute:
            rows = execute(_GET, (run_id,))
        return queued_run(rows[0]) if rows else None

    def list_runs(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` rows, oldest first."""
        with self._read() as execute:
            rows = execute(_LIST, (limit,))
        return [queued_run(r) for r in reversed(rows)]

    def depth(self, *, count_done: bool = True) -> QueueDepth:
        """Return the rows by status and the oldest queued one; ``count_done`` False
        leaves the done rows uncounted (their count grows with the queue's history)."""
        with self._read() as execute:
            counts = {
                status: int(execute(_COUNT, (status,))[0][0])
                for status in ("queued", "running", *(("done",) if count_done else ()))
            }
            oldest = execute(_OLDEST, ())
        return QueueDepth(
            queued=counts["queued"],
            running=counts["running"],
            done=counts.get("done"),
            oldest_queued=queued_run(oldest[0]) if oldest else None,
        )
