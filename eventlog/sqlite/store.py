"""The SQLite event store (apsw): one file, WAL mode, one writer, many readers.

:class:`SQLiteStore` composes the parts of this package: the connections
(:mod:`~eventlog.sqlite.connections`), the schema and its migrations
(:mod:`~eventlog.sqlite.schema`), the batch append (:mod:`~eventlog.sqlite.append`,
which writes the materialised rows of :mod:`~eventlog.sqlite.materialise` in the
event's transaction) and the readers (:mod:`~eventlog.sqlite.reads`).

Only the writer actor calls :meth:`SQLiteStore.append_batch` (one write connection);
readers use a connection per thread and run concurrently (WAL).

Files are private whatever the umask: a directory the store creates is 0700 and the
database file is created 0600 (SQLite gives its ``-wal`` and ``-shm`` the database
file's mode). ``read_only=True`` opens without writing anything: no directory, no
journal-mode pragma, no migration (an older schema is read as it is).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from eventlog.artifacts import ArtifactFiles
from eventlog.errors import ClewError, ReadOnlyStore, StoreError
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite.append import BatchAppend, FaultHook
from eventlog.sqlite.connections import BUSY_TIMEOUT_MS, Connections, Durability
from eventlog.sqlite.reads import SQLiteReads
from eventlog.sqlite.schema import (
    OLDEST_READABLE,
    SCHEMA_VERSION,
    check_not_newer,
    migrate,
    schema_version,
)
from eventlog.sqlite.transaction import translate_errors
from eventlog.store import SessionDeletion

if TYPE_CHECKING:
    from eventlog.store import EventStore

#: A JSON block whose encoding is larger than this becomes an artifact (seed rule).
DEFAULT_ARTIFACT_THRESHOLD = 16 * 1024


class SQLiteStore(SQLiteReads):
    """The embedded event store: the readers it inherits, plus the batch append.

    The readers are inherited rather than delegated to: they are the store's own
    surface, and a delegating copy of each would repeat fifteen signatures and docstrings.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        artifacts_dir: Path | str | None = None,
        durability: Durability = "normal",
        artifact_threshold: int = DEFAULT_ARTIFACT_THRESHOLD,
        fault_hook: FaultHook | None = None,
        read_only: bool = False,
    ) -> None:
        """Open (and migrate) the store at ``path``.

        Args:
            artifacts_dir: where artifact files go (default: ``artifacts/`` beside the file).
            durability: ``normal`` survives a process crash, ``full`` a power loss.
            fault_hook: test seam, called with a step name inside the append transaction.
            read_only: open an existing file for reading only (``SQLITE_OPEN_READONLY``);
                every append is refused with ``ReadOnlyStore``.

        Raises:
            StoreError: the file cannot be opened, is not a database, or is from a newer
                clew; read-only, also: it does not exist, or its schema is too old to read
                without migrating it.
        """
        self.path = Path(path)
        self.durability = durability
        self.read_only = read_only
        connections = Connections(self.path, durability, read_only=read_only)
        if read_only:
            version = _check_readable(connections)
        else:
            _create_and_migrate(connections)
            version = SCHEMA_VERSION
        super().__init__(connections, chained=version >= 2, seed_columns=version >= 5)
        self._append = BatchAppend(
            connections.writer,
            ArtifactFiles(Path(artifacts_dir) if artifacts_dir else self.path.parent / "artifacts"),
            artifact_threshold,
            fault_hook,
            main=self.path,
        )

    @property
    def artifacts(self) -> ArtifactFiles:
        """The artifact files the append writes before the events that reference them."""
        return self._append.artifacts

    @property
    def artifact_threshold(self) -> int:
        """Encoded size (bytes) above which a JSON block is stored as an artifact."""
        return self._append.artifact_threshold

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append ``requests`` in one transaction; see :meth:`BatchAppend.append_batch`.

        A read-only store refuses each request with ``ReadOnlyStore`` and writes nothing.
        """
        if self.read_only:
            why = f"{self.path} is open read-only: writing is refused"
            return [ReadOnlyStore(why) for _ in requests]
        return self._append.append_batch(requests)

    def delete_session(
        self, session_id: str, *, deleted_at: str = "", task_wals: int = 0
    ) -> SessionDeletion:
        """Delete the session for good: its tables, rows and the artifact files no other
        session references; record it in ``deleted_sessions`` (time and counts only).

        Only the writer actor calls it (``Writer.delete_session``), like an append.

        Raises:
            ReadOnlyStore: the store is open read-only.
            DeletedSession: it was deleted already.
            UnknownSession: no such session.
        """
        if self.read_only:
            raise ReadOnlyStore(f"{self.path} is open read-only: deleting is refused")
        deletion = self._append.delete_session(
            session_id, deleted_at=deleted_at, task_wals=task_wals
        )
        self._cold.forget(deletion.session_id)  # readers detach its file, if attached
        return deletion

    def move_to_cold(self, session_id: str) -> bool:
        """Move an archived session's table pair to its cold file (``cold/<sid>.sqlite``,
        :mod:`eventlog.sqlite.cold`); its reads go on unchanged. Return False when it is
        cold already.

        Only the writer actor calls it (``Writer.move_to_cold``), like an append.

        Raises:
            ReadOnlyStore: the store is open read-only.
            UnknownSession: no such session.
            StoreError: the session is not archived, or a file cannot be written.
        """
        if self.read_only:
            raise ReadOnlyStore(f"{self.path} is open read-only: moving is refused")
        return self._append.move_to_cold(session_id)

    def read_snapshot(self) -> contextlib.AbstractContextManager[None]:
        """One read transaction for the block's reads on this thread (see the protocol)."""
        return self._connections.snapshot()

    def close(self) -> None:
        """Close the write connection and this thread's reader."""
        self._connections.close()


def _create_and_migrate(connections: Connections) -> None:
    """Create the file (0600, in a 0700 directory) if needed, switch it to WAL, migrate it."""
    path = connections.path
    with translate_errors(f"opening {path}"):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            # Created here, not by SQLite (which would apply the umask to 0644).
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        conn = connections.connect()
        try:
            # SQLite quietly opens a file it may not write read-only; say so now, not at
            # the first append.
            if conn.readonly("main"):
                raise StoreError(
                    f"cannot write {path}: it or its directory is read-only"
                    " (the read commands open it read-only and work)"
                )
            _switch_to_wal(conn)
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        connections.adopt(conn)  # its schema is parsed: the writer goes on with it


def _switch_to_wal(conn: apsw.Connection) -> None:
    """Put the file in WAL mode, retrying while another process holds a lock on it.

    The switch needs an exclusive lock, and SQLite refuses at once, without waiting for
    the busy timeout, where waiting could deadlock (another process opening the same new
    file is mid-transaction): 1 of ~400 processes racing on a fresh home failed so.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.pragma("journal_mode", "wal")
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)
        else:
            return


def _check_readable(connections: Connections) -> int:
    """Return the schema version of the file a read-only store opens, if it can read it.

    Raises:
        StoreError: no such file, a newer clew's schema, or one too old to read as it is.
    """
    path = connections.path
    if not path.is_file():
        raise StoreError(f"cannot read {path}: no such file")
    conn = connections.connect()
    try:
        with translate_errors(f"reading {path}"):
            version = schema_version(conn)
        check_not_newer(version)
        if version < OLDEST_READABLE:
            raise StoreError(
                f"cannot read {path} read-only: its schema (version {version}) is older than"
                f" this clew reads without migrating it (version {OLDEST_READABLE});"
                " open it once where it is writable"
            )
    except BaseException:
        conn.close()
        raise
    connections.adopt(conn)  # its schema is parsed: this thread's reads go on with it
    return version


if TYPE_CHECKING:
    # Checked by mypy, free at run time: the store satisfies the one store protocol.
    def _conforms(store: SQLiteStore) -> EventStore:
        return store
