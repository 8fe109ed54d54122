"""The store's connections: one write connection, one reader per thread (WAL).

SQLite in WAL mode lets readers run beside the one writer without blocking it; a
connection must not be shared between threads, hence a reader per thread.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

import apsw

from eventlog.sqlite.transaction import translate_errors

#: ``normal`` survives a process crash, ``full`` a power loss (``PRAGMA synchronous``).
Durability = Literal["normal", "full"]

#: Readers and the writer wait this long (ms) for each other instead of failing at once.
BUSY_TIMEOUT_MS = 10_000


class Connections:
    """Open connections to the file at ``path`` on demand and close them."""

    def __init__(self, path: Path, durability: Durability) -> None:
        self.path = path
        self.durability = durability
        self._local = threading.local()
        self._write: apsw.Connection | None = None

    def connect(self) -> apsw.Connection:
        """Return a new connection of the caller's own (closing it is the caller's job)."""
        with translate_errors(f"opening {self.path}"):
            conn = apsw.Connection(str(self.path))
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        return conn

    def reader(self) -> apsw.Connection:
        """Return this thread's reader connection, opened on first use."""
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.connect()
        return conn

    def writer(self) -> apsw.Connection:
        """Return the one write connection, opened on first use with the durability pragma."""
        if self._write is None:
            with translate_errors(f"opening {self.path} for writing"):
                conn = self.connect()
                conn.pragma("synchronous", "FULL" if self.durability == "full" else "NORMAL")
                self._write = conn
        return self._write

    def close(self) -> None:
        """Close the write connection and this thread's reader."""
        if self._write is not None:
            self._write.close()
            self._write = None
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
