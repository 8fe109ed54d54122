"""Leases and the run queue: the conformance suite on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.runtime.coord.location import COORD_FILE, open_coordinator
from actors.runtime.coord.postgres import PostgresCoordinator
from actors.runtime.coord.sqlite import SQLiteCoordinator
from eventlog.errors import ReadOnlyStore, StoreError
from eventlog.postgres.connections import redact
from tests.actors.runtime.coord_conformance import Clock, CoordConformance, CoordFactory


class TestSQLiteCoordinator(CoordConformance):
    @pytest.fixture
    def make_coord(self, tmp_path: Path) -> CoordFactory:
        return lambda clock: SQLiteCoordinator(tmp_path / COORD_FILE, clock=clock)


class TestPostgresCoordinator(CoordConformance):
    @pytest.fixture
    def make_coord(self, pg_url: str) -> CoordFactory:
        return lambda clock: PostgresCoordinator(pg_url, clock=clock)


def test_a_home_path_opens_its_coord_file(tmp_path: Path) -> None:
    coord = open_coordinator(tmp_path / "home")
    try:
        assert str(tmp_path / "home" / COORD_FILE) == coord.location
    finally:
        coord.close()


def test_a_postgresql_url_opens_the_database(pg_url: str) -> None:
    coord = open_coordinator(pg_url)
    try:
        assert isinstance(coord, PostgresCoordinator)
    finally:
        coord.close()


def test_an_unreachable_database_is_one_store_error() -> None:
    url = "postgresql://clew:secret@127.0.0.1:1/x?connect_timeout=2"
    with pytest.raises(StoreError, match=re.escape("cannot connect to postgresql://clew@")) as e:
        PostgresCoordinator(url)
    assert "secret" not in str(e.value)


def test_a_password_never_appears_in_the_location() -> None:
    assert "postgresql://u@h:5/db" == redact("postgresql://u:pw@h:5/db")
    assert "postgresql://h/db" == redact("postgresql://h/db")


def test_a_file_that_is_not_a_database_is_one_store_error(tmp_path: Path) -> None:
    (tmp_path / COORD_FILE).write_text("not a database " * 100)
    with pytest.raises(StoreError, match="cannot open the coordination database"):
        SQLiteCoordinator(tmp_path / COORD_FILE, clock=Clock())


def test_a_role_that_may_only_read_gets_a_one_line_refusal_not_a_failure(pg_url: str) -> None:
    import secrets  # noqa: PLC0415

    import psycopg  # noqa: PLC0415

    open_coordinator(pg_url).close()  # the tables, as a role that may write made them
    role = f"clew_ro_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    url = pg_url.replace("://postgres@", f"://{role}:hunter2@", 1)
    try:
        coord = PostgresCoordinator(url)
        try:
            assert [] == coord.list_runs()  # reading is allowed
            with pytest.raises(ReadOnlyStore) as refused:
                coord.acquire("worker:x", "me", 10.0)
        finally:
            coord.close()
        message = str(refused.value)
        assert 1 == len(message.splitlines()) and "permission denied for table" in message
        assert "hunter2" not in message
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
