"""Deleting a session for good (``Writer.delete_session``): its tables, rows and artifact
files go, every other session and its hash chain stay, and the id can be used again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog.errors import InvalidSessionId, ReadOnlyStore, UnknownSession
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.store import SessionDeletion
from eventlog.writer import Writer
from tests.eventlog.sqlite._files import raw, tables
from tests.eventlog.store_conformance import appended, created, node, todo


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    w = Writer(SQLiteStore(tmp_path / "sessions.sqlite"))
    yield w
    w.stop()


def _fill(w: Writer, sid: str) -> None:
    requests: list[AppendRequest] = [
        created(sid),
        appended(node("n1"), sid=sid),
        appended(node("n2", "n1"), sid=sid),
        todo("x", sid=sid),
    ]
    for r in requests:
        w.append(r)


def test_deleting_a_session_drops_its_tables_rows_and_artifacts(
    writer: Writer, tmp_path: Path
) -> None:
    _fill(writer, "gone")
    _fill(writer, "kept")
    store = writer.store
    assert isinstance(store, SQLiteStore)
    store.artifacts.write("gone", b'{"big": 1}')
    assert (tmp_path / "artifacts" / "gone").is_dir()

    deletion = writer.delete_session("gone", deleted_at="2026-01-02T00:00:00+00:00")

    assert SessionDeletion(
        session_id="gone",
        events=4,
        nodes=2,
        agents=0,
        runs=0,
        artifacts=0,
        deleted_at="2026-01-02T00:00:00+00:00",
    ) == (deletion)
    assert not store.session_exists("gone")
    assert ["kept"] == [s.session_id for s in store.list_sessions()]
    names = set(tables(tmp_path / "sessions.sqlite"))
    assert not {"events_gone", "nodes_gone"} & names
    assert {"events_kept", "nodes_kept"} <= names
    assert not (tmp_path / "artifacts" / "gone").exists()
    assert 4 == store.check_chain("kept").events
    conn = raw(tmp_path / "sessions.sqlite")
    for table in ("sessions", "agents", "runs", "artifacts"):
        rows = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id = 'gone'").fetchone()
        assert (0,) == rows
    conn.close()


def test_a_deleted_id_starts_again_from_seq_1(writer: Writer) -> None:
    _fill(writer, "again")
    writer.delete_session("again")

    first = writer.append(created("again"))
    writer.append(todo("y", sid="again"))

    assert 1 == first.seq
    assert [1, 2] == [e.seq for e in writer.store.read_events("again")]
    assert 2 == writer.store.check_chain("again").events


def test_what_was_queued_before_the_deletion_commits_first(writer: Writer) -> None:
    writer.append(created("q"))
    futures = [writer.submit(todo(str(i), sid="q")) for i in range(20)]

    deletion = writer.delete_session("q")

    assert 21 == deletion.events
    assert all(f.done() for f in futures)


def test_deleting_an_unknown_or_invalid_session_is_refused(writer: Writer) -> None:
    with pytest.raises(UnknownSession):
        writer.delete_session("nobody")
    with pytest.raises(InvalidSessionId):
        writer.delete_session("no such; DROP TABLE sessions")
    _fill(writer, "still")
    assert writer.store.session_exists("still")


def test_a_read_only_store_refuses_to_delete(tmp_path: Path) -> None:
    w = Writer(SQLiteStore(tmp_path / "sessions.sqlite"))
    _fill(w, "ro")
    w.stop()
    ro = SQLiteStore(tmp_path / "sessions.sqlite", read_only=True)
    try:
        with pytest.raises(ReadOnlyStore):
            Writer(ro, read_only=True).delete_session("ro")
        with pytest.raises(ReadOnlyStore):
            ro.delete_session("ro")
        assert ro.session_exists("ro")
    finally:
        ro.close()
