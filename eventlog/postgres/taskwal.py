"""The Task WAL as a table: ``task_wal(session_id, name, seq, line)``, for the PostgreSQL store.

Same semantics as the file (:mod:`eventlog.taskwal`): each row holds one encoded
:class:`~eventlog.taskwal.WalRecord` line, seq 1, 2, 3, … without gaps; an append
commits its lines in one transaction (``synchronous_commit``: durable when it returns)
before the task manager applies them; a replay decodes the rows in seq order with the
file's rules, so a gap or an undecodable row is ``TaskWalCorrupt`` naming
``<url>#<sid>/<name>:<seq>``. A transaction cannot be torn, so there is never a torn tail
to cut. A second writer that raced ahead makes the append fail on the primary key,
committing nothing — the WAL never forks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import psycopg

from eventlog.clock import Clock
from eventlog.errors import TaskWalCorrupt, TaskWalError
from eventlog.ids import validate_session_id
from eventlog.postgres.connections import Connections, redact
from eventlog.taskwal import (
    WAL_FORMAT_VERSION,
    ReplayResult,
    TaskEvent,
    WalRecord,
    encode_record,
    validate_wal_name,
)

_decoder = msgspec.json.Decoder(WalRecord)


class PgWals:
    """The Task WALs of every session, as rows of one database."""

    def __init__(self, url: str, *, connections: Connections | None = None) -> None:
        self.url = url
        self.connections = connections or Connections(url)

    def __repr__(self) -> str:
        return f"PgWals({redact(self.url)!r})"

    def location(self, session_id: str, name: str) -> str:
        """``<url without password>#<sid>/<name>``."""
        sid = validate_session_id(session_id)
        return f"{redact(self.url)}#{sid}/{validate_wal_name(name)}"

    def names(self, session_id: str) -> list[str]:
        """The session's WALs holding at least one line, sorted."""
        sid = validate_session_id(session_id)
        rows = self._run(
            "listing the task WALs",
            "SELECT DISTINCT name FROM task_wal WHERE session_id = %s ORDER BY name",
            (sid,),
        )
        return [str(r[0]) for r in rows]

    def replay(
        self, session_id: str, name: str, *, repair: bool = True, log: Any = None
    ) -> ReplayResult:
        """Decode the WAL's rows in seq order (``repair`` and ``log``: nothing to cut)."""
        where = self.location(session_id, name)
        rows = self._run(
            f"{where}: reading the task WAL",
            "SELECT seq, line FROM task_wal WHERE session_id = %s AND name = %s ORDER BY seq",
            (session_id, name),
        )
        records: list[WalRecord] = []
        for expected, (seq, line) in enumerate(rows, 1):
            if seq != expected:
                raise TaskWalCorrupt(where, expected, f"seq {seq} where {expected} was expected")
            try:
                record = _decoder.decode(bytes(line))
            except msgspec.DecodeError as e:
                raise TaskWalCorrupt(where, expected, f"undecodable line: {e}") from e
            if record.seq != expected:
                raise TaskWalCorrupt(
                    where, expected, f"seq {record.seq} where {expected} was expected"
                )
            if record.v != WAL_FORMAT_VERSION:
                raise TaskWalCorrupt(
                    where,
                    expected,
                    f"record format v{record.v}, this code reads v{WAL_FORMAT_VERSION}",
                )
            records.append(record)
        return ReplayResult(path=where, records=records)

    def appender(self, session_id: str, name: str, *, last_seq: int, clock: Clock) -> PgWalAppender:
        """The append side of the WAL on a connection of its own."""
        return PgWalAppender(self, session_id, name, last_seq=last_seq, clock=clock)

    def _run(self, what: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self.connections.reader().execute(sql, params).fetchall()
        except psycopg.Error as e:
            raise TaskWalError(f"{what}: {str(e).strip().splitlines()[0]}") from e

    def close(self) -> None:
        """Close the connections."""
        self.connections.close()


class PgWalAppender:
    """One WAL's append side: one transaction per append, committed before it returns."""

    def __init__(
        self, wals: PgWals, session_id: str, name: str, *, last_seq: int, clock: Clock
    ) -> None:
        self._wals = wals
        self._sid = validate_session_id(session_id)
        self._name = validate_wal_name(name)
        self._last_seq = last_seq
        self._clock = clock
        self._conn: psycopg.Connection[Any] | None = None

    @property
    def last_seq(self) -> int:
        """The seq of the last committed line (0 for an empty WAL)."""
        return self._last_seq

    def append(self, events: Sequence[TaskEvent]) -> list[WalRecord]:
        """Insert ``events`` as the next rows in one transaction; all or none.

        Raises:
            TaskWalError: the insert or the commit failed (nothing was committed).
        """
        if not events:
            return []
        records = [
            WalRecord(seq=self._last_seq + i, v=WAL_FORMAT_VERSION, at=self._clock.now(), event=e)
            for i, e in enumerate(events, 1)
        ]
        rows = [(self._sid, self._name, r.seq, encode_record(r)) for r in records]
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._wals.connections.connect(autocommit=False)
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO task_wal VALUES (%s, %s, %s, %s)", rows)
            self._conn.commit()
        except psycopg.Error as e:
            if self._conn is not None and not self._conn.closed:
                self._conn.rollback()
            where = self._wals.location(self._sid, self._name)
            first = str(e).strip().splitlines()[0]
            raise TaskWalError(f"{where}: append failed, nothing was committed: {first}") from e
        self._last_seq += len(records)
        return records

    def close(self) -> None:
        """Give the connection back to the store's pool; a later append takes one again."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._wals.connections.give_back(conn)
