"""SQLiteStore: the conformance suite and the store protocol, plus what only SQLite has."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog.errors import InvalidSessionId, StoreError
from eventlog.events import SessionCreated, TodoUpdated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.store import EventStore
from tests.eventlog.sqlite._files import raw, tables
from tests.eventlog.store_conformance import (
    BAD_SESSION_IDS,
    SID,
    StoreConformance,
    StoreFactory,
    append,
    at,
    created,
)


class TestSQLiteStoreConformance(StoreConformance):
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

    def raw(self, store: EventStore, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        assert isinstance(store, SQLiteStore)
        sql = sql.format(nodes=f"nodes_{SID}", events=f"events_{SID}")
        if sql.startswith("SELECT"):
            return store._query(sql, params)
        store.execute_unchecked(sql, params)
        return []

    def columns(self, store: EventStore, table: str) -> list[str]:
        name = f"{table}_{SID}" if table in ("nodes", "events") else table
        return [r[1] for r in self.raw(store, f"SELECT * FROM pragma_table_info('{name}')")]


def test_the_sqlite_store_implements_the_event_store_contract(tmp_path: Path) -> None:
    # Run time: every member is there. Statically, eventlog/sqlite/store.py assigns a
    # SQLiteStore to an EventStore, so `mypy eventlog` checks the signatures too.
    store: EventStore = SQLiteStore(tmp_path / "s.sqlite")
    assert isinstance(store, EventStore)
    store.close()


# --- file format and pragmas --------------------------------------------------------------


def test_a_new_store_is_in_wal_mode(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.sqlite").close()
    conn = raw(tmp_path / "s.sqlite")
    assert "wal" == conn.pragma("journal_mode")
    conn.close()


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="corrupt"):
        SQLiteStore(path)


@pytest.mark.parametrize(("durability", "expected"), [("normal", 1), ("full", 2)])
def test_durability_sets_synchronous_on_the_write_connection(
    tmp_path: Path, durability: Any, expected: int
) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite", durability=durability)
    append(store, created())
    # White-box: synchronous is a per-connection setting, so ask the writer's connection.
    assert expected == store._connections.writer().pragma("synchronous")
    store.close()


# --- bad input never reaches SQL ------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_SESSION_IDS, ids=lambda v: repr(v)[:24])
def test_an_invalid_session_id_executes_no_sql(tmp_path: Path, bad: Any) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path)
    append(store, created())
    tables_before = tables(path)
    executed: list[str] = []

    def tracer(_cursor: Any, sql: str, _bindings: Any) -> bool:
        executed.append(sql)
        return True

    store._connections.reader().exec_trace = tracer
    store._connections.writer().exec_trace = tracer
    for read in (
        store.read_events,
        store.read_nodes,
        store.read_active_path,
        store.read_session,
        store.read_agents,
        store.read_runs,
        store.read_artifacts,
    ):
        with pytest.raises(InvalidSessionId):
            read(bad)
    with pytest.raises(InvalidSessionId):
        store.read_run(bad, "r1")
    with pytest.raises(InvalidSessionId):
        store.read_node(bad, "n1")
    with pytest.raises(InvalidSessionId):
        store.read_children(bad, "n1")
    requests = [
        AppendRequest(
            session_id=bad,
            event=SessionCreated(session_id=bad, cwd="/", root_agent_id="a"),
            created_at=at(),
        ),
        AppendRequest(
            session_id=bad, event=TodoUpdated(todo_id="t", status="ready"), created_at=at()
        ),
    ]
    results = store.append_batch(requests)
    assert [InvalidSessionId, InvalidSessionId] == [type(r) for r in results]
    assert [] == executed
    store.close()
    assert tables_before == tables(path)
