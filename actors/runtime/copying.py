"""Copy sessions between stores exactly: a clew home (SQLite) ↔ a PostgreSQL database.

A session is copied by appending its events, in seq order, to the target in **one**
``append_batch`` (one transaction: the target holds all of it or none of it). Every
number and id the writer assigns — ``seq``, ``run_seq``, ``node_seq``, ``event_id`` — is
a function of the append order, and each hash of the chain a function of the stored
values, so the target's rows are the source's rows: the copy is checked event by event
(``StoredEvent`` equality) and by :func:`projections.verify` before it is reported.

Artifacts are copied first (bytes read from the source, written to the target's files
or blob rows under the same content-addressed path), and the target is opened with no
artifact threshold, so nothing is externalised anew. Task WALs are copied record by
record with their recorded ``at`` times (:class:`_RecordedClock`), so their lines are
the source's lines.

A session already on the target is skipped when it is identical (events and Task WALs),
and refused otherwise (``CopyRefused``: exit 2), before anything is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from actors.errors import CopyRefused
from eventlog.errors import ClewError
from eventlog.events import ArtifactCreated
from eventlog.ids import validate_session_id
from eventlog.locations import is_postgres_url, open_store
from eventlog.records import AppendRequest, StoredEvent
from eventlog.store import EventStore
from eventlog.taskwal import WalRecord
from eventlog.wals import FileWals, TaskWals
from projections import verify


class CopyResult(msgspec.Struct, frozen=True, kw_only=True):
    """What happened to one session."""

    session_id: str
    #: ``copied``, or ``identical`` (already on the target: nothing written).
    outcome: str
    events: int
    artifacts: int
    task_wal_lines: int


class _RecordedClock:
    """Hands out the recorded ``at`` of each Task WAL line, in order."""

    def __init__(self, records: Sequence[WalRecord]) -> None:
        self._ats: Iterator[str] = iter([r.at for r in records])

    def now(self) -> str:
        return next(self._ats)


class Endpoint:
    """One side of a copy: its store and where each session's Task WALs live."""

    def __init__(self, location: str | Path, project_dir: Path, *, read_only: bool) -> None:
        self.location = str(location)
        self.project_dir = project_dir
        # No threshold on the target: the source's blocks were externalised already.
        self.store: EventStore = open_store(
            location, read_only=read_only, artifact_threshold=sys.maxsize
        )
        self._table: TaskWals | None = None
        if is_postgres_url(self.location):
            from eventlog.postgres.taskwal import PgWals  # noqa: PLC0415 - optional extra

            self._table = PgWals(self.location)

    def wals(self, cwd: str) -> TaskWals:
        """The session's Task WALs: the table, or the files of its recorded project
        directory (this host's ``--project`` when that directory is not here)."""
        if self._table is not None:
            return self._table
        recorded = Path(cwd)
        return FileWals(
            recorded if recorded.is_absolute() and recorded.is_dir() else self.project_dir
        )

    def close(self) -> None:
        close_wals = getattr(self._table, "close", None)
        if close_wals is not None:
            close_wals()
        self.store.close()


def copy_sessions(
    source: str | Path, target: str | Path, session_ids: Sequence[str], project_dir: Path
) -> list[CopyResult]:
    """Copy ``session_ids`` (every session of the source when empty) from ``source`` to
    ``target`` (each a clew home or a ``postgresql://`` URL).

    Raises:
        CopyRefused: a session on the target differs from the source's.
        UnknownSession: the source has no such session.
        StoreError: a store cannot be opened, read or written.
    """
    src = Endpoint(source, project_dir, read_only=True)
    try:
        dst = Endpoint(target, project_dir, read_only=False)
        try:
            sids = list(session_ids) or [r.session_id for r in src.store.list_sessions()]
            for sid in sids:
                src.store.read_session(validate_session_id(sid))  # UnknownSession first
            return [_copy_one(src, dst, sid) for sid in sids]
        finally:
            dst.close()
    finally:
        src.close()


def _wal_records(end: Endpoint, sid: str, cwd: str) -> dict[str, list[WalRecord]]:
    wals = end.wals(cwd)
    return {name: wals.replay(sid, name, repair=False).records for name in wals.names(sid)}


def _copy_one(src: Endpoint, dst: Endpoint, sid: str) -> CopyResult:
    row = src.store.read_session(sid)
    events = list(src.store.iter_events(sid))
    wal_records = _wal_records(src, sid, row.cwd)
    lines = sum(len(r) for r in wal_records.values())
    artifacts = [e.event for e in events if isinstance(e.event, ArtifactCreated)]
    if dst.store.session_exists(sid):
        same = events == list(dst.store.iter_events(sid))
        if same and wal_records == _wal_records(dst, sid, row.cwd):
            return CopyResult(
                session_id=sid,
                outcome="identical",
                events=len(events),
                artifacts=len(artifacts),
                task_wal_lines=lines,
            )
        raise CopyRefused(
            f"session {sid} already exists on the target and differs from the source;"
            " nothing was copied (remove it there first)"
        )
    to_write = _wals_to_write(dst.wals(row.cwd), sid, wal_records)  # refuses before writing
    for art in artifacts:
        data = src.store.artifacts.read(art.path)
        rel, _, _ = dst.store.artifacts.write(sid, data, ext=art.path.rsplit(".", 1)[-1])
        if rel != art.path:  # pragma: no cover - content-addressed on both backends
            raise CopyRefused(f"artifact {art.path} of {sid} lands at {rel} on the target")
    _append_all(dst.store, sid, events)
    _copy_wals(dst.wals(row.cwd), sid, to_write)
    _check_copy(src, dst, sid, events, wal_records, row.cwd)
    return CopyResult(
        session_id=sid,
        outcome="copied",
        events=len(events),
        artifacts=len(artifacts),
        task_wal_lines=lines,
    )


def _append_all(store: EventStore, sid: str, events: Sequence[StoredEvent]) -> None:
    requests = [
        AppendRequest(
            session_id=sid,
            event=e.event,
            created_at=e.created_at,
            agent_id=e.agent_id,
            run_id=e.run_id,
        )
        for e in events
    ]
    errors = [r for r in store.append_batch(requests) if isinstance(r, ClewError)]
    if errors:
        raise CopyRefused(f"copying {sid} failed: {errors[0]} ({len(errors)} events refused)")


def _wals_to_write(
    wals: TaskWals, sid: str, wal_records: dict[str, list[WalRecord]]
) -> dict[str, list[WalRecord]]:
    """The WALs the target lacks; one it holds already must be the source's, line for line
    (the same project directory on one host: the files are shared)."""
    out: dict[str, list[WalRecord]] = {}
    for name, records in wal_records.items():
        there = wals.replay(sid, name, repair=False).records
        if not there:
            out[name] = records
        elif there != records:
            raise CopyRefused(
                f"the target already holds a different Task WAL {name} of {sid}"
                f" ({wals.location(sid, name)}); nothing was copied"
            )
    return out


def _copy_wals(wals: TaskWals, sid: str, wal_records: dict[str, list[WalRecord]]) -> None:
    for name, records in wal_records.items():
        appender = wals.appender(sid, name, last_seq=0, clock=_RecordedClock(records))
        try:
            appender.append([r.event for r in records])
        finally:
            appender.close()


def _check_copy(
    src: Endpoint,
    dst: Endpoint,
    sid: str,
    events: Sequence[StoredEvent],
    wal_records: dict[str, list[WalRecord]],
    cwd: str,
) -> None:
    """Read the copy back: the same events, the same WAL lines, and it verifies."""
    problems: list[str] = []
    if list(events) != list(dst.store.iter_events(sid)):
        problems.append("its events differ from the source's")
    if wal_records != _wal_records(dst, sid, cwd):
        problems.append("its Task WALs differ from the source's")
    check = verify(dst.store, sid)
    if not check.ok:
        problems.append("it does not verify: " + "; ".join(check.lines()[:3]))
    if problems:
        raise CopyRefused(f"the copy of {sid} on the target is wrong: " + ", ".join(problems))
