"""The schema: migrations applied once each by ``PRAGMA user_version``, per-session tables."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.errors import StoreError
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import MIGRATIONS
from tests.eventlog.sqlite._files import raw, tables
from tests.eventlog.store_conformance import SID, append, created


def test_a_new_store_is_migrated_to_the_latest_user_version(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.sqlite").close()
    conn = raw(tmp_path / "s.sqlite")
    assert len(MIGRATIONS) == conn.pragma("user_version")
    conn.close()
    assert {"sessions", "agents", "runs", "artifacts"} <= set(tables(tmp_path / "s.sqlite"))


def test_reopening_a_migrated_store_applies_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path)
    append(store, created())
    store.close()
    SQLiteStore(path).close()  # a second CREATE TABLE sessions would raise
    assert 1 == len(SQLiteStore(path).list_sessions())


def test_a_store_from_a_newer_clew_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    conn = raw(path)
    conn.pragma("user_version", len(MIGRATIONS) + 1)
    conn.close()
    with pytest.raises(StoreError, match="newer than this clew"):
        SQLiteStore(path)


def test_the_per_session_tables_are_created_with_the_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    store.close()
    assert {f"nodes_{SID}", f"events_{SID}"} <= set(tables(tmp_path / "s.sqlite"))
