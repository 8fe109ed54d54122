"""Cold files (issue 35): an archived session's table pair moves to ``cold/<sid>.sqlite``
byte for byte, the main file's schema loses it, every read finds it there, a crash
between the move's two steps leaves the main tables authoritative, and deleting a cold
session removes its file."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import msgspec
import pytest
from _processes import child_env

from eventlog.blocks import JsonBlock
from eventlog.codec import encode
from eventlog.errors import StoreError
from eventlog.events import ArtifactCreated, Node, SessionArchived
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.cold import MAX_ATTACHED, cold_path
from eventlog.writer import Writer
from tests.eventlog.sqlite._files import raw
from tests.eventlog.store_conformance import append, appended, at, created, node, todo


def _sid(i: int) -> str:
    return f"sess_20260101_000000_{i:04x}"


def _fill(store: SQLiteStore, sid: str, *, archived: bool = True) -> None:
    requests = [
        created(sid),
        appended(node(f"{sid}:n1"), sid=sid),
        appended(node(f"{sid}:n2", f"{sid}:n1", text="hello " * 50), sid=sid),
        todo("x", sid=sid),
    ]
    if archived:
        requests.append(AppendRequest(session_id=sid, event=SessionArchived(), created_at=at()))
    append(store, *requests)


def _rows(conn: apsw.Connection, table: str) -> list[tuple[Any, ...]]:
    return list(conn.execute(f"SELECT * FROM {table} ORDER BY rowid"))


def _columns(conn: apsw.Connection, table: str) -> list[tuple[Any, ...]]:
    return list(conn.execute(f"PRAGMA table_info({table})"))


def _schema_entries(conn: apsw.Connection) -> int:
    value = conn.execute("SELECT COUNT(*) FROM sqlite_schema").fetchall()[0][0]
    assert isinstance(value, int)
    return value


def _session_tables(path: Path) -> list[str]:
    """The session tables (not their indexes) in the file at ``path``, sorted."""
    conn = raw(path)
    try:
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [r[0] for r in names if r[0].startswith(("nodes_", "events_"))]
    finally:
        conn.close()


@pytest.fixture
def main(tmp_path: Path) -> Path:
    return tmp_path / "home" / "sessions.sqlite"


@pytest.fixture
def writer(main: Path) -> Iterator[Writer]:
    w = Writer(SQLiteStore(main))
    yield w
    w.stop()


def test_the_move_keeps_names_columns_and_rows_byte_for_byte(main: Path) -> None:
    store = SQLiteStore(main)
    sid = _sid(1)
    _fill(store, sid)
    conn = raw(main)
    before = {t: (_columns(conn, t), _rows(conn, t)) for t in (f"nodes_{sid}", f"events_{sid}")}
    events, nodes = store.read_events(sid), store.read_nodes(sid)
    conn.close()

    assert store.move_to_cold(sid) is True

    cold = raw(cold_path(main, sid))
    try:
        after = {t: (_columns(cold, t), _rows(cold, t)) for t in before}
        assert before == after  # hash column included
        assert sorted(before) == sorted(
            r[0] for r in cold.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
    finally:
        cold.close()
    assert [] == _session_tables(main)
    conn = raw(main)
    assert [(sid, f"cold/{sid}.sqlite", len(events), len(nodes))] == _rows(
        conn, "clew_cold_sessions"
    )
    conn.close()
    assert (events, nodes) == (store.read_events(sid), store.read_nodes(sid))
    assert store.check_chain(sid).events == len(events)
    assert list(store.iter_events(sid)) == events
    assert (len(events), {sid: len(events)}) == (
        store.count_events(sid),
        store.count_events_of([sid]),
    )
    assert store.move_to_cold(sid) is False  # cold already
    store.close()

    reopened = SQLiteStore(main, read_only=True)
    try:
        assert (events, nodes) == (reopened.read_events(sid), reopened.read_nodes(sid))
    finally:
        reopened.close()


def test_only_an_archived_session_moves_and_the_cold_one_refuses_appends(main: Path) -> None:
    store = SQLiteStore(main)
    try:
        live, archived = _sid(1), _sid(2)
        _fill(store, live, archived=False)
        _fill(store, archived)
        with pytest.raises(StoreError, match="not archived"):
            store.move_to_cold(live)
        assert store.move_to_cold(archived)
        [refused] = store.append_batch([todo("late", sid=archived)])
        assert isinstance(refused, StoreError)
        assert 5 == store.count_events(archived)
    finally:
        store.close()


def test_the_schema_holds_only_the_live_sessions(main: Path) -> None:
    store = SQLiteStore(main)
    try:
        for i in range(30):
            _fill(store, _sid(i), archived=i >= 10)
        conn = raw(main)
        entries = _schema_entries(conn)
        assert 60 == len(_session_tables(main))
        for i in range(10, 30):
            assert store.move_to_cold(_sid(i))
        now = _schema_entries(conn)
        conn.close()
        assert 20 == len(_session_tables(main))
        assert entries - 20 * 5 + 2 == now  # 5 entries a pair; the location table and its key
        # More cold sessions than a connection attaches, read in turn, and in one statement.
        for i in range(30):
            assert (5 if i >= 10 else 4) == store.check_chain(_sid(i)).events
        counts = store.count_events_of([_sid(i) for i in range(30)])
        assert {_sid(i): 5 if i >= 10 else 4 for i in range(30)} == counts
        with store.read_snapshot():
            for i in range(10, 10 + 2 * MAX_ATTACHED):
                assert 2 == len(store.read_nodes(_sid(i)))
    finally:
        store.close()


def test_deleting_a_cold_session_removes_its_file_and_location(writer: Writer, main: Path) -> None:
    sid, other = _sid(1), _sid(2)
    for s in (sid, other):
        for r in [created(s), appended(node(f"{s}:n1"), sid=s), todo("x", sid=s)]:
            writer.append(r)
        writer.append(AppendRequest(session_id=s, event=SessionArchived(), created_at=at()))
        assert writer.move_to_cold(s)

    deletion = writer.delete_session(sid)

    assert (4, 1) == (deletion.events, deletion.nodes)
    assert not cold_path(main, sid).exists()
    assert cold_path(main, other).exists()
    conn = raw(main)
    assert [(other,)] == list(conn.execute("SELECT session_id FROM clew_cold_sessions"))
    conn.close()


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from eventlog.sqlite import SQLiteStore

    def kill(step):
        if step == "cold_file_written":
            os.kill(os.getpid(), signal.SIGKILL)

    store = SQLiteStore(sys.argv[1], fault_hook=kill)
    store.move_to_cold(sys.argv[2])
    """
)


def test_a_crash_between_the_two_steps_leaves_the_main_tables_authoritative(main: Path) -> None:
    store = SQLiteStore(main)
    sid = _sid(1)
    _fill(store, sid)
    events = store.read_events(sid)
    store.close()

    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(main), sid],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert -signal.SIGKILL == child.returncode, child.stderr
    assert cold_path(main, sid).exists()  # written whole, not recorded
    assert [f"events_{sid}", f"nodes_{sid}"] == _session_tables(main)
    store = SQLiteStore(main)
    try:
        assert events == store.read_events(sid)
        cold_path(main, sid).write_bytes(b"left over")  # the next move overwrites it
        assert store.move_to_cold(sid)
        assert events == store.read_events(sid)
        assert store.check_chain(sid).events == len(events)
    finally:
        store.close()


def test_an_id_deleted_made_again_and_archived_again_reads_its_new_file(main: Path) -> None:
    store = SQLiteStore(main)
    writer = Writer(store)
    try:
        sid = _sid(1)
        for text in ("first", "second"):
            for r in [created(sid), appended(node(f"{sid}:n1", text=text), sid=sid)]:
                writer.append(r)
            writer.append(AppendRequest(session_id=sid, event=SessionArchived(), created_at=at()))
            assert writer.move_to_cold(sid)
            [row] = store.read_nodes(sid)  # attaches the cold file to this thread's reader
            assert text in msgspec.json.encode(row.content).decode()
            writer.delete_session(sid)
    finally:
        writer.stop()


def test_deleting_keeps_an_artifact_a_cold_session_references(main: Path) -> None:
    store = SQLiteStore(main, artifact_threshold=1024)
    try:
        sid, other = _sid(1), _sid(2)
        big = Node(
            node_id="n1",
            parent_id=None,
            agent_id="a1",
            role="tool",
            content=[JsonBlock(data={"rows": ["x" * 100] * 40})],
        )
        append(store, created(sid), created(other))
        art = append(store, appended(big, sid=sid))[0].event
        assert isinstance(art, ArtifactCreated)
        append(store, appended(node("o1", text=f"see {art.path}"), sid=other))
        append(store, AppendRequest(session_id=other, event=SessionArchived(), created_at=at()))
        assert store.move_to_cold(other)

        deletion = store.delete_session(sid)

        assert (1, 1) == (deletion.artifacts, deletion.artifacts_kept)
        assert encode({"rows": ["x" * 100] * 40}) == store.artifacts.read(art.path)
    finally:
        store.close()


def test_a_snapshot_reading_more_cold_files_than_sqlite_attaches_is_refused(main: Path) -> None:
    store = SQLiteStore(main)
    try:
        sids = [_sid(i) for i in range(12)]
        for sid in sids:
            _fill(store, sid)
            assert store.move_to_cold(sid)
        store._connections.reader().limit(apsw.SQLITE_LIMIT_ATTACHED, 10)  # SQLite's default
        for sid in sids:  # one at a time: the oldest file is detached for the next
            assert 2 == len(store.read_nodes(sid))
        with store.read_snapshot():  # a file read in the snapshot cannot be detached in it
            for sid in sids[:10]:
                assert 2 == len(store.read_nodes(sid))
            with pytest.raises(StoreError, match="more cold files in one read"):
                store.read_nodes(sids[10])
        assert 2 == len(store.read_nodes(sids[11]))
    finally:
        store.close()
