"""The PostgreSQL event store: shared tables keyed by session, one writer per process.

:class:`PostgresStore` composes the connections, the schema (migrated on open), the batch
append and the readers of this package. Several processes, on several hosts, may open
the same database: each numbers events gaplessly under a row lock per session
(:mod:`eventlog.postgres.append`). ``read_only=True`` opens without migrating, on
connections the server keeps read-only; every append is refused with ``ReadOnlyStore``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from eventlog.errors import ClewError, ReadOnlyStore, StoreError
from eventlog.postgres import deletion
from eventlog.postgres.append import BatchAppend, FaultHook
from eventlog.postgres.blobs import BlobArtifacts
from eventlog.postgres.connections import Connections, redact, translate_errors
from eventlog.postgres.reads import PostgresReads
from eventlog.postgres.schema import (
    CHUNKED_ARTIFACTS,
    OLDEST_READABLE,
    SCHEMA_VERSION,
    check_not_newer,
    migrate,
    schema_version,
)
from eventlog.records import AppendRequest, StoredEvent
from eventlog.store import SessionDeletion

if TYPE_CHECKING:
    from eventlog.store import EventStore

#: A JSON block whose encoding is larger than this becomes an artifact (as on SQLite).
DEFAULT_ARTIFACT_THRESHOLD = 16 * 1024


class PostgresStore(PostgresReads):
    """The event store on a PostgreSQL database given by its URL."""

    def __init__(
        self,
        url: str,
        *,
        artifact_threshold: int = DEFAULT_ARTIFACT_THRESHOLD,
        fault_hook: FaultHook | None = None,
        read_only: bool = False,
    ) -> None:
        """Open (and migrate) the store at ``url`` (``postgresql://user@host:port/db``).

        Raises:
            StoreError: the server cannot be reached, or the schema is from a newer clew;
                read-only, also: clew's tables are not there.
        """
        self.url = url
        self.read_only = read_only
        connections = Connections(url, read_only=read_only)
        conn = connections.connect(autocommit=False)
        try:
            with translate_errors(f"opening {redact(url)}"):
                version = SCHEMA_VERSION
                if read_only:
                    version = schema_version(conn)
                    conn.rollback()
                    check_not_newer(version)
                    if version < OLDEST_READABLE:
                        raise StoreError(
                            f"cannot read {redact(url)} read-only: clew's tables are not there"
                            f" (schema version {version}); open it once where it is writable"
                        )
                else:
                    migrate(conn)
        except BaseException:
            connections.close()
            raise
        conn.close()
        super().__init__(connections, seed_columns=version >= 4)
        self._blobs = BlobArtifacts(connections, chunked=version >= CHUNKED_ARTIFACTS)
        self._append = BatchAppend(connections.writer, self._blobs, artifact_threshold, fault_hook)

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.url)!r})"

    @property
    def artifacts(self) -> BlobArtifacts:
        """The artifacts: rows of ``artifact_blobs`` (and ``artifact_chunks``), committed
        with their events."""
        return self._blobs

    @property
    def artifact_threshold(self) -> int:
        """Encoded size (bytes) above which a JSON block is stored as an artifact."""
        return self._append.artifact_threshold

    def append_batch(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[StoredEvent] | ClewError]:
        """Append ``requests`` in one transaction (see :mod:`eventlog.postgres.append`)."""
        if self.read_only:
            why = f"{redact(self.url)} is open read-only: writing is refused"
            return [ReadOnlyStore(why) for _ in requests]
        return self._append.append_batch(requests)

    def delete_session(
        self, session_id: str, *, deleted_at: str = "", task_wals: int = 0
    ) -> SessionDeletion:
        """Delete the session for good (:mod:`eventlog.postgres.deletion`): its rows, its
        blobs no other session references, its ``task_wal`` rows; record it in
        ``deleted_sessions``. Only the writer actor calls it, like an append.

        Raises:
            ReadOnlyStore: the store is open read-only.
            DeletedSession: it was deleted already.
            UnknownSession: no such session.
        """
        if self.read_only:
            raise ReadOnlyStore(f"{redact(self.url)} is open read-only: deleting is refused")
        self._append.forget(session_id)
        return deletion.delete_session(
            self._connections.writer(), session_id, deleted_at=deleted_at, task_wals=task_wals
        )

    def read_snapshot(self) -> AbstractContextManager[None]:
        """One ``REPEATABLE READ`` transaction for the block's reads on this thread."""

        @contextmanager
        def snapshot() -> Iterator[None]:
            with self._connections.snapshot():
                yield

        return snapshot()

    def close(self) -> None:
        """Close every connection."""
        self._connections.close()


if TYPE_CHECKING:

    def _conforms(store: PostgresStore) -> EventStore:
        return store
