"""PostgresStore: the same conformance suite as SQLite, plus what only PostgreSQL has —
writers in several processes, read-only connections, artifacts as rows."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from _processes import child_env

from eventlog import open_store
from eventlog.errors import DeletedSession, ReadOnlyStore, StoreError, UnknownSession
from eventlog.events import ArtifactCreated
from eventlog.postgres import PostgresStore
from eventlog.records import StoredEvent
from eventlog.store import EventStore
from eventlog.writer import Writer
from projections import verify
from tests.eventlog.seed_conformance import SEED_COLUMNS
from tests.eventlog.seed_conformance import SID as SEED_SID
from tests.eventlog.store_conformance import (
    OTHER,
    SID,
    StoreConformance,
    StoreFactory,
    append,
    appended,
    created,
    node,
    todo,
)

_CHILD = Path(__file__).with_name("_append_child.py")


class TestPostgresStore(StoreConformance):
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

    def raw(self, store: EventStore, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        assert isinstance(store, PostgresStore)
        sql = sql.format(nodes="nodes", events="events").replace("?", "%s")
        with psycopg.connect(store.url, autocommit=True) as conn:
            cur = conn.execute(sql, params)  # type: ignore[arg-type]  # a test's own SQL
            return cur.fetchall() if cur.description else []

    def columns(self, store: EventStore, table: str) -> list[str]:
        rows = self.raw(
            store,
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?"
            " AND table_schema = current_schema() ORDER BY ordinal_position",
            (table,),
        )
        return [r[0] for r in rows]

    def assert_artifact_durable(
        self,
        store: EventStore,
        make_store: StoreFactory,
        event: ArtifactCreated,
        synced: list[str],
    ) -> None:
        # A row committed with its event: another handle (another host) reads it.
        other = make_store()
        assert store.artifacts.read(event.path) == other.artifacts.read(event.path)
        assert event.size_bytes == len(other.artifacts.read(event.path))
        other.close()


def test_the_postgres_store_implements_the_event_store_contract(pg_url: str) -> None:
    store: EventStore = PostgresStore(pg_url)
    assert isinstance(store, EventStore)
    store.close()


def test_open_store_opens_a_url_as_postgres_and_a_path_as_sqlite(
    pg_url: str, tmp_path: Path
) -> None:
    pg = open_store(pg_url)
    lite = open_store(tmp_path / "home")
    assert ("PostgresStore", "SQLiteStore") == (type(pg).__name__, type(lite).__name__)
    assert (tmp_path / "home" / "sessions.sqlite").is_file()
    pg.close()
    lite.close()


def test_writers_in_several_processes_number_one_session_without_gaps(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    append(store, created())
    writers, batches, per_batch = 4, 15, 5
    children = [
        subprocess.Popen(
            [sys.executable, str(_CHILD), pg_url, SID, str(n), str(batches), str(per_batch)],
            env=child_env(),
        )
        for n in range(writers)
    ]
    assert [0] * writers == [c.wait(timeout=120) for c in children]
    events = store.read_events(SID)
    total = 1 + writers * batches * per_batch
    assert list(range(1, total + 1)) == [e.seq for e in events]
    # Each writer's run numbers its own events 1..n in its own order.
    for n in range(writers):
        run = store.read_run(SID, f"r{n}")
        assert list(range(1, batches * per_batch + 1)) == [e.run_seq for e in run]
        assert [f"{n}-{i}" for i in range(batches * per_batch)] == [
            e.event.note  # type: ignore[union-attr]
            for e in run
        ]
    assert total == store.check_chain(SID).events
    store.close()


def test_a_writers_group_commits_in_one_postgres_transaction(pg_url: str) -> None:
    batches: list[list[StoredEvent]] = []
    writer = Writer(PostgresStore(pg_url), after_commit=lambda _n, batch: batches.append(batch))
    writer.append(created())
    stored = writer.submit_group([todo(str(i), run_id="r1") for i in range(7)]).get(timeout=60)
    writer.stop()
    assert [1, 7] == [len(b) for b in batches]
    assert [(i + 2, i + 1) for i in range(7)] == [(e.seq, e.run_seq) for e in stored]


def test_a_read_only_store_refuses_writes_and_reads(pg_url: str) -> None:
    writer = PostgresStore(pg_url)
    append(writer, created(), todo("a"))
    reader = PostgresStore(pg_url, read_only=True)
    assert [1, 2] == [e.seq for e in reader.read_events(SID)]
    [result] = reader.append_batch([todo("b")])
    assert isinstance(result, ReadOnlyStore)
    with pytest.raises(StoreError, match="read-only"):
        reader.artifacts.write(SID, b"x")
    reader.close()
    writer.close()


def test_read_only_on_an_empty_database_is_refused_in_one_line(pg_url: str) -> None:
    with pytest.raises(StoreError, match="not there"):
        PostgresStore(pg_url, read_only=True)


def test_an_unreachable_server_is_one_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        PostgresStore("postgresql://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(caught.value)


def test_a_node_row_holds_the_seeds_columns_filled(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    append(store, created(), appended(node("n1", text="a unique sentence")))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT content_json, metadata_json, token_count FROM nodes").fetchone()
        [count] = conn.execute(
            "SELECT COUNT(*) FROM events WHERE payload_json LIKE '%a unique sentence%'"
        ).fetchone() or [0]
    assert (('[{"type":"text","text":"a unique sentence"}]', "{}", None), 1) == (row, count)
    store.close()


def as_schema_3(conn: psycopg.Connection[Any]) -> None:
    """Turn a database this clew wrote into what clew left at schema version 3: node rows
    referring to their node_appended event with no content, a parked run ``waiting``,
    no ``status_detail`` (the columns' order aside: the readers name them)."""
    conn.execute("ALTER TABLE nodes ADD COLUMN event_seq BIGINT")
    conn.execute("ALTER TABLE nodes ALTER COLUMN content_json DROP NOT NULL")
    conn.execute(
        "UPDATE nodes n SET event_seq = e.seq, content_json = NULL, metadata_json = NULL,"
        " run_id = NULL, token_count = NULL FROM events e WHERE e.session_id = n.session_id"
        " AND e.event_type = 'node_appended' AND e.node_id = n.node_id"
    )
    conn.execute("UPDATE runs SET status = status_detail WHERE status_detail IS NOT NULL")
    conn.execute("UPDATE runs SET usage_json = NULL WHERE status IN ('running', 'waiting')")
    conn.execute("ALTER TABLE runs DROP COLUMN status_detail")
    conn.execute("UPDATE clew_schema SET version = 3")


def test_a_schema_3_database_is_migrated_to_the_seeds_columns_in_one_step(pg_url: str) -> None:
    writer = TestPostgresStore().seeded(PostgresStore(pg_url))
    expected = (writer.read_nodes(SEED_SID), writer.read_runs(SEED_SID))
    assert writer.read_run_statuses(SEED_SID)[-1][2] == "waiting"
    writer.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        as_schema_3(conn)
    reader = PostgresStore(pg_url, read_only=True)  # read as it is: the same records
    assert expected == (reader.read_nodes(SEED_SID), reader.read_runs(SEED_SID))
    reader.close()
    migrated = PostgresStore(pg_url)
    assert expected == (migrated.read_nodes(SEED_SID), migrated.read_runs(SEED_SID))
    assert verify(migrated, SEED_SID).ok
    store = TestPostgresStore()
    for table, seed in SEED_COLUMNS.items():
        assert seed == store.columns(migrated, table)[: len(seed)], table
    assert [("pending", "waiting")] == store.raw(
        migrated, "SELECT status, status_detail FROM runs WHERE run_id = 'r5'"
    )
    assert [] == store.raw(migrated, "SELECT 1 FROM nodes WHERE content_json IS NULL")
    migrated.close()


def test_read_only_reads_the_nodes_of_a_database_before_schema_3(pg_url: str) -> None:
    writer = PostgresStore(pg_url)
    append(writer, created(), appended(node("n1", text="old")), appended(node("n2", "n1")))
    expected = writer.read_nodes(SID)
    writer.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as clew before schema 3 left it
        conn.execute("ALTER TABLE runs DROP COLUMN status_detail")
        conn.execute("UPDATE clew_schema SET version = 2")
    reader = PostgresStore(pg_url, read_only=True)
    assert expected == reader.read_nodes(SID)
    assert expected == reader.read_active_path(SID)
    reader.close()
    migrated = PostgresStore(pg_url)  # a writable open migrates; the old rows still read
    append(migrated, appended(node("n3", "n2", text="new")))
    assert ["old", "hi", "new"] == [
        n.content[0].text  # type: ignore[union-attr]
        for n in migrated.read_active_path(SID)
    ]
    migrated.close()


def test_read_only_reads_a_schema_1_database_without_the_deletion_audit(pg_url: str) -> None:
    writer = PostgresStore(pg_url)
    append(writer, created())
    writer.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as clew 0.x left it
        conn.execute("DROP TABLE deleted_sessions")
        conn.execute("UPDATE clew_schema SET version = 1")
    reader = PostgresStore(pg_url, read_only=True)
    assert [SID] == [s.session_id for s in reader.list_sessions()]
    assert [] == reader.list_deletions()
    with pytest.raises(UnknownSession, match="unknown session"):
        reader.read_session(OTHER)
    reader.close()
    migrated = PostgresStore(pg_url)  # a writable open adds the audit table
    migrated.delete_session(SID, deleted_at="2026-01-02T00:00:00+00:00")
    with pytest.raises(DeletedSession, match="was deleted at 2026-01-02"):
        migrated.read_session(SID)
    migrated.close()
