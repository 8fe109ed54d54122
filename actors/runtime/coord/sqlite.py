"""Leases and the run queue on a coordination SQLite file (``<home>/coord.sqlite``).

Several processes on one host share the file. Each statement that decides something —
taking a lease, taking a queued run, adopting an orphan — runs in one ``BEGIN
IMMEDIATE`` transaction: SQLite then holds its one write lock for the whole check and
change, so two processes never both win (the candidate row needs no lock of its own).
The file is in WAL mode (readers do not block the writer); each process has one
connection guarded by a lock, so any thread may call. The statements themselves are
the neutral ones of ``sql.py``; this module holds the connection and the transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from actors.runtime.coord.sql import Execute, SQLCoordinator, schema
from eventlog.errors import StoreError

#: A second process waits this long (ms) for the write lock instead of failing at once.
BUSY_TIMEOUT_MS = 10_000

_SCHEMA = ";\n".join(schema(id_column="INTEGER PRIMARY KEY AUTOINCREMENT", real="REAL"))


class SQLiteCoordinator(SQLCoordinator):
    """Leases and the run queue on one SQLite file, shared by the processes of a host."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        """Open (creating if needed) the coordination file at ``path``.

        Raises:
            StoreError: the file cannot be opened or is not a coordination database.
        """
        super().__init__(clock=clock)
        self.path = path
        self.location = str(path)
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

    def _execute(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        # apsw steps a statement as its rows are read: reading them all runs it to the end.
        return list(self._conn.execute(sql, params))

    @contextmanager
    def _tx(self) -> Iterator[Execute]:
        """One ``BEGIN IMMEDIATE`` transaction; apsw errors become ``StoreError``."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._execute
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except apsw.Error as e:
                raise StoreError(f"coordination database {self.path}: {e}") from e

    @contextmanager
    def _read(self) -> Iterator[Execute]:
        """Reads in autocommit (a consistent snapshot per statement, no write lock)."""
        with self._lock:
            try:
                yield self._execute
            except apsw.Error as e:
                raise StoreError(f"coordination database {self.path}: {e}") from e
