"""Where a session's Task WALs live: the one Task WAL protocol and its two backends.

A Task WAL is an append-only sequence of records (:class:`~eventlog.taskwal.WalRecord`),
seq 1, 2, 3, … without gaps, written by one writer that commits a batch of lines
durably *before* the DAG applies them, and replayed from seq 1 to rebuild the DAG.
:class:`TaskWals` says where the WALs of a session are:

- :class:`FileWals` (the default, with SQLite): fsynced JSON-lines files under
  ``<project>/.clew/tasks/<sid>/<name>.wal.jsonl`` (:mod:`eventlog.taskwal`);
- ``PgWals`` (with the PostgreSQL store, :mod:`eventlog.postgres.taskwal`): rows of the
  ``task_wal`` table, one committed transaction per append, so a session resumes on
  another host with its task DAGs.

``tests/eventlog/taskwal_conformance.py`` is the protocol's executable form, run over both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from eventlog.clock import Clock
from eventlog.taskwal import (
    ReplayResult,
    TaskEvent,
    TaskWal,
    WalRecord,
    list_wal_names,
    replay_wal,
    wal_dir,
    wal_path,
)


class TaskWalAppender(Protocol):
    """The append side of one Task WAL, owned by exactly one writer."""

    @property
    def last_seq(self) -> int:
        """The seq of the last committed line (0 for an empty WAL)."""
        ...

    def append(self, events: Sequence[TaskEvent]) -> list[WalRecord]:
        """Commit ``events`` as the next lines, durably, all or none; return the records.

        Raises:
            TaskWalError: nothing was committed.
        """
        ...

    def close(self) -> None:
        """Release what the appender holds; a later append may reopen it."""
        ...


@runtime_checkable
class TaskWals(Protocol):
    """The Task WALs of sessions: list, replay, append."""

    def location(self, session_id: str, name: str) -> str:
        """Where the WAL ``name`` lives (a path, or ``<url>#<sid>/<name>``): for reports."""
        ...

    def names(self, session_id: str) -> list[str]:
        """The names of the session's WALs that hold (or held) a line, sorted."""
        ...

    def replay(
        self, session_id: str, name: str, *, repair: bool = True, log: Any = None
    ) -> ReplayResult:
        """Every committed record of the WAL (a missing WAL is empty).

        Raises:
            TaskWalCorrupt: a bad record before the last one, a seq gap, a future format.
            TaskWalError: the WAL cannot be read.
        """
        ...

    def appender(
        self, session_id: str, name: str, *, last_seq: int, clock: Clock
    ) -> TaskWalAppender:
        """The append side of the WAL, after ``last_seq`` committed lines (from a replay)."""
        ...


class FileWals:
    """Task WALs as fsynced JSON-lines files under ``<project_dir>/.clew/tasks/``."""

    def __init__(self, project_dir: str | os.PathLike[str]) -> None:
        self.project_dir = os.fspath(project_dir)

    def __repr__(self) -> str:
        return f"FileWals({self.project_dir!r})"

    def location(self, session_id: str, name: str) -> str:
        """The WAL's file path."""
        return str(wal_path(self.project_dir, session_id, name))

    def directory(self, session_id: str) -> str:
        """The directory of the session's WALs."""
        return str(wal_dir(self.project_dir, session_id))

    def names(self, session_id: str) -> list[str]:
        """The WAL files of the session (no symlink followed)."""
        return list_wal_names(self.project_dir, session_id)

    def replay(
        self, session_id: str, name: str, *, repair: bool = True, log: Any = None
    ) -> ReplayResult:
        """Replay the file, cutting a torn last line when ``repair``."""
        path = wal_path(self.project_dir, session_id, name)
        return replay_wal(path, repair=repair, log=log, root=self.project_dir)

    def appender(self, session_id: str, name: str, *, last_seq: int, clock: Clock) -> TaskWal:
        """The file's append side: one write and one fsync per append."""
        path = wal_path(self.project_dir, session_id, name)
        return TaskWal(path, last_seq=last_seq, clock=clock, root=self.project_dir)
