"""SQLiteStore: the conformance suite, plus what only SQLite has (WAL, pragmas, apsw errors)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from eventlog.errors import ClewError, InvalidSessionId, StoreError
from eventlog.events import AgentCreated, SessionCreated, TodoUpdated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore, translate_errors
from eventlog.sqlite.schema import MIGRATIONS
from tests.eventlog.store_conformance import (
    BAD_SESSION_IDS,
    SID,
    StoreConformance,
    StoreFactory,
    append,
    appended,
    at,
    created,
    node,
    todo,
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


def _raw(path: Path) -> apsw.Connection:
    return apsw.Connection(str(path))


def _tables(path: Path) -> list[str]:
    conn = _raw(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]
    finally:
        conn.close()


# --- file format and pragmas --------------------------------------------------------------


def test_a_new_store_is_in_wal_mode(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.sqlite").close()
    conn = _raw(tmp_path / "s.sqlite")
    assert "wal" == conn.pragma("journal_mode")
    conn.close()


def test_a_new_store_is_migrated_to_the_latest_user_version(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.sqlite").close()
    conn = _raw(tmp_path / "s.sqlite")
    assert len(MIGRATIONS) == conn.pragma("user_version")
    conn.close()
    assert {"sessions", "agents", "runs", "artifacts"} <= set(_tables(tmp_path / "s.sqlite"))


def test_reopening_a_migrated_store_applies_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path)
    append(store, created())
    store.close()
    SQLiteStore(path).close()  # a second CREATE TABLE sessions would raise
    assert 1 == len(SQLiteStore(path).list_sessions())


def test_a_store_from_a_newer_clew_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    conn = _raw(path)
    conn.pragma("user_version", len(MIGRATIONS) + 1)
    conn.close()
    with pytest.raises(StoreError, match="newer than this clew"):
        SQLiteStore(path)


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


def test_the_per_session_tables_are_created_with_the_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    store.close()
    assert {f"nodes_{SID}", f"events_{SID}"} <= set(_tables(tmp_path / "s.sqlite"))


# --- atomicity: a node and its event, both or neither ---------------------------------------


def _failing_at(step: str, error: BaseException) -> tuple[Callable[[str], None], list[bool]]:
    armed = [False]

    def hook(name: str) -> None:
        if armed[0] and name == step:
            armed[0] = False
            raise error

    return hook, armed


def test_a_failure_between_the_node_row_and_the_event_row_leaves_neither(
    tmp_path: Path,
) -> None:
    hook, armed = _failing_at("before_event_row", StoreError("injected"))
    store = SQLiteStore(tmp_path / "s.sqlite", fault_hook=hook)
    append(store, created())
    armed[0] = True
    [result] = store.append_batch([appended(node("n1", run_id="r1"))])
    assert isinstance(result, StoreError)
    assert [] == store.read_nodes(SID)
    assert ["session_created"] == [e.event_type for e in store.read_events(SID)]
    assert store.read_session(SID).active_node_id is None
    # The counters the failed request took are given back: no gap, no skipped node_seq.
    [stored] = append(store, appended(node("n1", run_id="r1")))
    assert (2, 1, "r1#1") == (stored.seq, stored.run_seq, stored.event_id)
    assert 1 == store.read_node(SID, "n1").node_seq  # type: ignore[union-attr]
    store.close()


def test_an_unexpected_exception_mid_batch_rolls_back_the_whole_batch(tmp_path: Path) -> None:
    hook, armed = _failing_at("before_event_row", RuntimeError("bug"))
    store = SQLiteStore(tmp_path / "s.sqlite", fault_hook=hook)
    append(store, created())
    armed[0] = True
    results = store.append_batch([todo("a"), appended(node("n1")), todo("b")])
    assert all(isinstance(r, StoreError) for r in results)
    assert 1 == len(store.read_events(SID))
    assert [] == store.read_nodes(SID)
    stored = append(store, todo("c"), appended(node("n1")))
    assert [2, 3] == [e.seq for e in stored]
    assert 1 == store.read_node(SID, "n1").node_seq  # type: ignore[union-attr]
    store.close()


def test_a_failure_before_the_materialised_rows_leaves_no_row(tmp_path: Path) -> None:
    hook, armed = _failing_at("before_materialise", StoreError("injected"))
    store = SQLiteStore(tmp_path / "s.sqlite", fault_hook=hook)
    append(store, created())
    armed[0] = True
    [result] = store.append_batch([appended(node("n1"))])
    assert isinstance(result, StoreError)
    assert ([], 1) == (store.read_nodes(SID), len(store.read_events(SID)))
    store.close()


# --- bad input never reaches SQL ------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_SESSION_IDS, ids=lambda v: repr(v)[:24])
def test_an_invalid_session_id_executes_no_sql(tmp_path: Path, bad: Any) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path)
    append(store, created())
    tables_before = _tables(path)
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
        AppendRequest(session_id=bad, event=TodoUpdated(todo_id="t", status="ready"),
                      created_at=at()),
    ]
    results = store.append_batch(requests)
    assert [InvalidSessionId, InvalidSessionId] == [type(r) for r in results]
    assert [] == executed
    store.close()
    assert tables_before == _tables(path)


def test_an_invalid_session_id_in_a_batch_does_not_stop_the_valid_ones(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    bad = AppendRequest(session_id="a;DROP TABLE sessions",
                        event=TodoUpdated(todo_id="t", status="ready"), created_at=at())
    results = store.append_batch([todo("a"), bad, todo("b")])
    assert [list, InvalidSessionId, list] == [
        list if isinstance(r, list) else type(r) for r in results
    ]
    assert [1, 2, 3] == [e.seq for e in store.read_events(SID)]
    store.close()


# --- the apsw error translation table -------------------------------------------------------


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (apsw.ConstraintError("UNIQUE constraint failed"), "op: constraint violated"),
        (apsw.BusyError("database is locked"), "op: database is locked by another writer"),
        (apsw.CorruptError("malformed"), "op: database file is corrupt"),
        (apsw.NotADBError("file is not a database"), "op: database file is corrupt"),
        (apsw.CantOpenError("unable to open"), "op: cannot open or write the database"),
        (apsw.PermissionsError("denied"), "op: cannot open or write the database"),
        (apsw.ReadOnlyError("readonly"), "op: cannot open or write the database"),
        (apsw.FullError("disk full"), "op: disk full"),
        (apsw.SQLError("no such table: x"), "op: SQLError: no such table: x"),
        (apsw.IOError("disk I/O error"), "op: IOError: disk I/O error"),
        (FileNotFoundError(2, "No such file or directory"), "op: No such file or directory"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None,
)
def test_apsw_and_os_errors_become_one_store_error_sentence(
    raised: BaseException, expected: str
) -> None:
    with pytest.raises(StoreError) as info, translate_errors("op"):
        raise raised
    assert str(info.value).startswith(expected)
    assert raised is info.value.__cause__


@pytest.mark.parametrize("error", [InvalidSessionId("bad"), StoreError("mine")])
def test_clew_errors_pass_through_translation_unchanged(error: ClewError) -> None:
    with pytest.raises(type(error)) as info, translate_errors("op"):
        raise error
    assert error is info.value


def test_other_exceptions_are_not_translated() -> None:
    with pytest.raises(KeyError), translate_errors("op"):
        raise KeyError("bug")


def test_an_unencodable_payload_fails_only_its_own_request(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    bad = AppendRequest(
        session_id=SID,
        event=AgentCreated(agent_id="a1", agent_type="sub", metadata={"x": object()}),
        created_at="t",
    )
    results = store.append_batch([todo("a"), bad, todo("b")])
    assert [False, True, False] == [isinstance(r, StoreError) for r in results]
    assert [1, 2, 3] == [e.seq for e in store.read_events(SID)]
    store.close()


def test_a_suspended_event_iterator_does_not_pin_the_snapshot_of_other_reads(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created(), todo("a"), todo("b"))
    events = store.iter_events(SID)
    assert 1 == next(events).seq  # suspended mid-scan, its cursor open
    append(store, todo("c"))
    assert 4 == store.count_events(SID)
    assert [2, 3] == [e.seq for e in events]  # the scan keeps its own snapshot
    store.close()
