"""The Task WAL protocol over both backends: files (with SQLite) and a table (PostgreSQL)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog.clock import ManualClock
from eventlog.errors import TaskWalError
from eventlog.taskwal import wal_path
from eventlog.wals import FileWals, TaskWals
from tests.eventlog.taskwal_conformance import EVENTS, SID, TaskWalConformance, WalsFactory


class TestFileWals(TaskWalConformance):
    @pytest.fixture
    def make_wals(self, tmp_path: Path) -> WalsFactory:
        return lambda: FileWals(tmp_path)

    def put_raw(self, wals: TaskWals, session_id: str, name: str, seq: int, line: bytes) -> None:
        assert isinstance(wals, FileWals)
        path = wal_path(wals.project_dir, session_id, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as f:
            f.write(line)
        os.sync()


class TestPgWals(TaskWalConformance):
    @pytest.fixture
    def make_wals(self, pg_url: str) -> Iterator[WalsFactory]:
        from eventlog.postgres import PostgresStore  # noqa: PLC0415 - creates the tables
        from eventlog.postgres.taskwal import PgWals  # noqa: PLC0415

        PostgresStore(pg_url).close()
        opened: list[PgWals] = []

        def factory() -> PgWals:
            opened.append(PgWals(pg_url))
            return opened[-1]

        yield factory
        for wals in opened:
            wals.close()

    def put_raw(self, wals: TaskWals, session_id: str, name: str, seq: int, line: bytes) -> None:
        import psycopg  # noqa: PLC0415

        url = wals.url  # type: ignore[attr-defined]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO task_wal VALUES (%s, %s, %s, %s)", (session_id, name, seq, line)
            )

    # The file backend relies on the session's single owner; the table refuses a fork.
    def test_an_append_that_collides_with_a_line_already_there_commits_nothing(
        self, wals: TaskWals
    ) -> None:
        ahead = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        ahead.append(EVENTS[:1])
        ahead.close()
        # A stale writer (it believes the WAL is empty): the WAL must not fork.
        stale = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        with pytest.raises(TaskWalError, match="nothing was committed"):
            stale.append(EVENTS[1:3])
        stale.close()
        assert [EVENTS[0]] == [r.event for r in wals.replay(SID, "plan").records]
