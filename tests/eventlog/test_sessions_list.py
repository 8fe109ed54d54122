"""The sessions list on both backends (``sessions_list_conformance``), and what only SQLite
shows: a page reads no session's own tables (SQLite's authorizer names every table a
statement reads), and an older home gets the list's indexes when it is opened."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from eventlog.postgres import PostgresStore
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from tests.eventlog.sessions_list_conformance import SessionsListConformance, make_sessions
from tests.eventlog.store_conformance import StoreFactory

#: Sessions of the table-counting test: enough that reading each one's tables would show,
#: few enough to make quickly (a new table costs SQLite a scan of its whole schema).
MANY = 600


class TestSQLiteSessionsList(SessionsListConformance):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[StoreFactory]:
        opened: list[SQLiteStore] = []

        def factory(**options: Any) -> SQLiteStore:
            store = SQLiteStore(tmp_path / "sessions.sqlite", **options)
            opened.append(store)
            return store

        yield factory
        for store in opened:
            store.close()


class TestPostgresSessionsList(SessionsListConformance):
    @pytest.fixture
    def make_store(self, pg_url: str) -> Iterator[StoreFactory]:
        opened: list[PostgresStore] = []

        def factory(**options: Any) -> PostgresStore:
            store = PostgresStore(pg_url, **options)
            opened.append(store)
            return store

        yield factory
        for store in opened:
            store.close()


def _tables_read(conn: apsw.Connection, log: set[str]) -> None:
    def authorizer(op: int, a: str | None, b: str | None, db: str | None, _t: str | None) -> int:
        if op == apsw.SQLITE_READ and a is not None:
            log.add(a)
        return apsw.SQLITE_OK

    conn.authorizer = authorizer


def test_a_page_of_the_list_reads_no_session_table_but_the_pages_own(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.sqlite")
    try:
        ids = make_sessions(store, 0, MANY, runs=True)
        read: set[str] = set()
        _tables_read(store._connections.reader(), read)
        page = store.list_sessions_page(limit=50, newest_first=True)
        sids = [r.session_id for r in page]
        store.read_runs_of(sids)
        assert {"sessions", "runs"} == read
        store.open_run_sessions()
        store.sessions_mark()
        assert {"sessions", "runs"} == read
        store.count_events_of(sids)  # the page's counts: its 50 events tables, no other
        assert {"sessions", "runs", *(f"events_{s}" for s in sids)} == read
        assert 50 == len(set(sids) & set(ids))
    finally:
        store.close()


def test_an_older_home_gets_the_lists_indexes_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    for index in ("sessions_by_created", "sessions_by_updated", "runs_open"):
        conn.execute(f"DROP INDEX {index}")
    conn.pragma("user_version", SCHEMA_VERSION - 1)  # what clew wrote before them
    conn.close()
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"sessions_by_created", "sessions_by_updated", "runs_open"} <= names
    assert SCHEMA_VERSION == conn.pragma("user_version")
    plan = " ".join(
        str(r[3])
        for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT session_id FROM sessions"
            " ORDER BY updated_at DESC, session_id DESC LIMIT 50"
        )
    )
    assert "sessions_by_updated" in plan
    conn.close()
