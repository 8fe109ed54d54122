"""Leases and the run queue on tables of a PostgreSQL database (``clew_leases``,
``clew_run_queue``): the coordinator of processes on several hosts.

The statements are the neutral ones of ``sql.py``. Taking a lease is one upsert, so
concurrent takers on any host serialise on the row and one wins. Taking a queued run
locks its candidate with ``FOR UPDATE SKIP LOCKED`` (this module's one addition to the
statements): workers never wait on each other's candidate rows and never take the same
one. This module holds the connection, the transaction, the schema lock and the
placeholder style (psycopg's ``%s``). psycopg is imported when the first coordinator is
opened (the ``postgres`` extra).

**Wake-ups.** A submit, a requeue and a finish send ``NOTIFY clew_run_queue`` in their
transaction (delivered when it commits). :meth:`PostgresCoordinator.listen` holds one
more connection, ``LISTEN``-ing on a thread of its own, and wakes the serving loop on
each: an idle serve costs the database no statement until there is work (it still
polls, rarely, for what no notification announces: a session lease expiring). A
listening connection that breaks is opened again, and the loop woken once, in case a
notification was lost meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from actors.runtime.coord.sql import QUEUE_CHANNEL, Execute, SQLCoordinator, schema
from eventlog.errors import ReadOnlyStore, StoreError
from eventlog.logs import get_logger

if TYPE_CHECKING:
    import psycopg

_SCHEMA = schema(
    id_column="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real="DOUBLE PRECISION"
)

#: Several processes may create the tables at once; the advisory lock serialises them
#: (``CREATE … IF NOT EXISTS`` alone races on the catalogue). The key is arbitrary.
_SCHEMA_LOCK = 0x636C6577

_log = get_logger("clew.coord")

#: Seconds between two attempts to listen again after the listening connection broke.
_RELISTEN_S = 1.0

_TABLES_PRESENT = (
    "SELECT to_regclass('clew_leases') IS NOT NULL AND to_regclass('clew_run_queue') IS NOT NULL"
)


@cache
def _placeholders(sql: str) -> str:
    """Return a neutral (qmark) statement in psycopg's ``%s`` style."""
    return sql.replace("?", "%s")


class PostgresCoordinator(SQLCoordinator):
    """Leases and the run queue on a PostgreSQL database shared by many processes."""

    lock_candidate = " FOR UPDATE SKIP LOCKED"
    notify_work = f"NOTIFY {QUEUE_CHANNEL}"

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        """Connect to ``url`` and create the tables if they are missing.

        Raises:
            StoreError: psycopg is not installed or the server cannot be reached.
        """
        super().__init__(clock=clock)
        self._url = url
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._listeners: list[threading.Thread] = []
        try:
            import psycopg  # noqa: PLC0415 - the optional extra, only when asked for

            from eventlog.postgres.connections import redact  # noqa: PLC0415 - psycopg's
        except ImportError as e:
            raise StoreError(
                "a postgresql:// coordinator needs psycopg: pip install 'clew[postgres]'"
            ) from e
        self.location = redact(url)
        self._errors = psycopg.Error
        #: What the server refuses this role (a role with only ``SELECT``): a refusal.
        self._refusals = (
            psycopg.errors.InsufficientPrivilege,
            psycopg.errors.ReadOnlySqlTransaction,
        )
        try:
            self._conn: psycopg.Connection[tuple[Any, ...]] = psycopg.connect(url, autocommit=True)
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to {self.location}: {e}") from e
        with self._tx() as execute:
            # Tables there already: no DDL (a read-only role may read leases, not create).
            [(present,)] = execute(_TABLES_PRESENT, ())
            if not present:
                execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    execute(statement, ())

    def close(self) -> None:
        """Close the connection; stop listening."""
        self._closed.set()
        for thread in self._listeners:
            thread.join()
        with self._lock:
            self._conn.close()

    def listen(self, wake: Callable[[], None]) -> bool:
        """Call ``wake`` on every ``NOTIFY clew_run_queue``, from a thread of its own,
        until :meth:`close`; True (the caller may poll rarely)."""
        thread = threading.Thread(
            target=self._listen, args=(wake,), name="clew-queue-listen", daemon=True
        )
        self._listeners.append(thread)
        thread.start()
        return True

    def _listen(self, wake: Callable[[], None]) -> None:
        import psycopg  # noqa: PLC0415 - imported by __init__ already

        while not self._closed.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {QUEUE_CHANNEL}")
                    wake()  # anything notified before LISTEN took effect
                    while not self._closed.is_set():
                        for _ in conn.notifies(timeout=0.5):
                            wake()
            except psycopg.Error as e:
                _log.warning("listening for queued runs failed", error=str(e))
                self._closed.wait(_RELISTEN_S)

    @contextmanager
    def _tx(self) -> Iterator[Execute]:
        """One transaction; psycopg errors become ``StoreError``."""
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:

                    def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                        cur.execute(_placeholders(sql), params)
                        # A statement without RETURNING has no result set to fetch.
                        return cur.fetchall() if cur.description is not None else []

                    yield execute
            except self._errors as e:
                kind = ReadOnlyStore if isinstance(e, self._refusals) else StoreError
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise kind(f"coordination database {self.location}: {first}") from e

    # Reads take the same short transaction: one round trip either way, and psycopg's
    # connection is in autocommit, so a lone statement is its own transaction anyway.
    _read = _tx
