"""Leases and the run queue on tables of a PostgreSQL database (``clew_leases``,
``clew_run_queue``): the coordinator of processes on several hosts.

The statements are the neutral ones of ``sql.py``. Taking a lease is one upsert, so
concurrent takers on any host serialise on the row and one wins. Taking a queued run
locks its candidate with ``FOR UPDATE SKIP LOCKED`` (this module's one addition to the
statements): workers never wait on each other's candidate rows and never take the same
one. This module holds the connection, the transaction, the schema lock and the
placeholder style (psycopg's ``%s``). psycopg is imported when the first coordinator is
opened (the ``postgres`` extra).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from actors.runtime.coord.sql import Execute, SQLCoordinator, schema
from eventlog.errors import StoreError

if TYPE_CHECKING:
    import psycopg

_SCHEMA = schema(
    id_column="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real="DOUBLE PRECISION"
)

#: Several processes may create the tables at once; the advisory lock serialises them
#: (``CREATE … IF NOT EXISTS`` alone races on the catalogue). The key is arbitrary.
_SCHEMA_LOCK = 0x636C6577

_TABLES_PRESENT = (
    "SELECT to_regclass('clew_leases') IS NOT NULL AND to_regclass('clew_run_queue') IS NOT NULL"
)


@cache
def _placeholders(sql: str) -> str:
    """Return a neutral (qmark) statement in psycopg's ``%s`` style."""
    return sql.replace("?", "%s")


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


class PostgresCoordinator(SQLCoordinator):
    """Leases and the run queue on a PostgreSQL database shared by many processes."""

    lock_candidate = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        """Connect to ``url`` and create the tables if they are missing.

        Raises:
            StoreError: psycopg is not installed or the server cannot be reached.
        """
        super().__init__(clock=clock)
        self.location = without_password(url)
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
        with self._tx() as execute:
            # Tables there already: no DDL (a read-only role may read leases, not create).
            [(present,)] = execute(_TABLES_PRESENT, ())
            if not present:
                execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    execute(statement, ())

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

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
                raise StoreError(f"coordination database {self.location}: {e}") from e

    # Reads take the same short transaction: one round trip either way, and psycopg's
    # connection is in autocommit, so a lone statement is its own transaction anyway.
    _read = _tx
