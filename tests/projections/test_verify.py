"""Materialised tables == rebuild on sessions written through the store; tampering is found."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest
from _sequences import SESSION_ID, Step, session_histories
from hypothesis import HealthCheck, given, settings

from eventlog.blocks import TextBlock
from eventlog.errors import IntegrityError
from eventlog.events import (
    AgentCreated,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    SessionCreated,
)
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer
from projections import Difference, rebuild, verify


def write(path: Path, steps: list[Step], *, artifact_threshold: int = 100) -> SQLiteStore:
    """Append ``steps`` through the writer; return a fresh store on the same file."""
    store = SQLiteStore(path, artifact_threshold=artifact_threshold)
    writer = Writer(store)
    futures = [
        writer.submit(
            AppendRequest(
                session_id=SESSION_ID,
                event=s.event,
                created_at=s.created_at,
                agent_id=s.agent_id,
                run_id=s.run_id,
            )
        )
        for s in steps
    ]
    for f in futures:
        f.get(timeout=30)
    writer.stop()
    return SQLiteStore(path, artifact_threshold=artifact_threshold)


@contextmanager
def stored_session(steps: list[Step]) -> Iterator[SQLiteStore]:
    with tempfile.TemporaryDirectory() as tmp:
        store = write(Path(tmp) / "sessions.sqlite", steps)
        try:
            yield store
        finally:
            store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_histories(max_steps=30, big_json=True))
def test_the_materialised_tables_equal_the_rebuild_of_the_stored_events(steps: list[Step]) -> None:
    with stored_session(steps) as store:
        state = rebuild(store.read_events(SESSION_ID))
        assert state.session == store.read_session(SESSION_ID)
        assert state.node_rows() == store.read_nodes(SESSION_ID)
        assert state.agent_rows() == store.read_agents(SESSION_ID)
        assert state.run_rows() == store.read_runs(SESSION_ID)
        assert state.artifact_rows() == store.read_artifacts(SESSION_ID)
        report = verify(store, SESSION_ID)
        assert [] == report.differences
        assert report.ok


def user(node_id: str, parent: str | None, text: str = "hi") -> Node:
    return Node(
        node_id=node_id,
        parent_id=parent,
        agent_id="main",
        role="user",
        content=[TextBlock(text=text)],
    )


BASE = [
    Step(
        event=SessionCreated(session_id=SESSION_ID, cwd="/p", root_agent_id="main"), created_at="t0"
    ),
    Step(
        event=AgentCreated(agent_id="main", agent_type="orchestrator"),
        created_at="t1",
        agent_id="main",
    ),
    Step(
        event=RunStarted(run_id="run_1", agent_id="main"),
        created_at="t2",
        agent_id="main",
        run_id="run_1",
    ),
    Step(
        event=NodeAppended(node=user("n1", None), activate=True),
        created_at="t3",
        agent_id="main",
        run_id="run_1",
    ),
    Step(
        event=NodeAppended(node=user("n2", "n1"), activate=True),
        created_at="t4",
        agent_id="main",
        run_id="run_1",
    ),
    Step(
        event=RunEnded(run_id="run_1", status="completed", end_reason="completed", turn_count=1),
        created_at="t5",
        agent_id="main",
        run_id="run_1",
    ),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = write(tmp_path / "sessions.sqlite", BASE)
    yield s
    s.close()


def test_an_untouched_session_verifies_clean(store: SQLiteStore) -> None:
    report = verify(store, SESSION_ID)
    assert report.ok
    assert 6 == report.events


def test_a_changed_node_content_is_reported_with_table_key_and_column(store: SQLiteStore) -> None:
    # The row holds the content (the seed's content_json), as its event does: a row
    # changed by hand differs from the rebuild from the events.
    store.execute_unchecked(
        f"UPDATE nodes_{SESSION_ID} SET content_json = ? WHERE node_id = 'n2'",
        ('[{"type":"text","text":"forged"}]',),
    )
    report = verify(store, SESSION_ID)
    expected = Difference(
        table=f"nodes_{SESSION_ID}",
        key="n2",
        column="content_json",
        expected=[{"type": "text", "text": "hi"}],
        actual=[{"type": "text", "text": "forged"}],
    )
    assert [expected] == report.differences
    assert not report.ok


def test_a_changed_node_role_is_reported_with_table_key_and_column(store: SQLiteStore) -> None:
    store.execute_unchecked(f"UPDATE nodes_{SESSION_ID} SET role = 'tool' WHERE node_id = 'n2'")
    report = verify(store, SESSION_ID)
    expected = Difference(
        table=f"nodes_{SESSION_ID}", key="n2", column="role", expected="user", actual="tool"
    )
    assert [expected] == report.differences
    assert not report.ok


def test_a_deleted_node_row_is_reported_as_missing(store: SQLiteStore) -> None:
    store.execute_unchecked(f"DELETE FROM nodes_{SESSION_ID} WHERE node_id = 'n1'")
    [diff] = verify(store, SESSION_ID).differences
    assert (f"nodes_{SESSION_ID}", "n1", None, None) == (
        diff.table,
        diff.key,
        diff.column,
        diff.actual,
    )
    assert "n1" == diff.expected["node_id"]
    assert f"nodes_{SESSION_ID}[n1]: row missing" == str(diff)


def test_a_changed_run_status_is_reported(store: SQLiteStore) -> None:
    store.execute_unchecked("UPDATE runs SET status = 'running' WHERE run_id = 'run_1'")
    expected = [
        Difference(
            table="runs", key="run_1", column="status", expected="completed", actual="running"
        )
    ]
    assert expected == verify(store, SESSION_ID).differences


def test_an_extra_row_and_a_moved_active_node_are_reported(store: SQLiteStore) -> None:
    store.execute_unchecked(
        "INSERT INTO agents VALUES ('ghost', ?, NULL, 'sub', NULL, NULL, 'idle', NULL, NULL,"
        " 't9', 't9')",
        (SESSION_ID,),
    )
    store.execute_unchecked("UPDATE sessions SET active_node_id = 'n1'")
    diffs = {(d.table, d.key, d.column): d for d in verify(store, SESSION_ID).differences}
    assert {("agents", "ghost", None), ("sessions", SESSION_ID, "active_node_id")} == set(diffs)
    assert diffs[("agents", "ghost", None)].expected is None
    assert ("n2", "n1") == (
        diffs[("sessions", SESSION_ID, "active_node_id")].expected,
        diffs[("sessions", SESSION_ID, "active_node_id")].actual,
    )


def test_a_dangling_parent_in_the_log_is_reported_by_verify_and_refused_by_rebuild(
    tmp_path: Path,
) -> None:
    steps = [
        *BASE,
        Step(event=NodeAppended(node=user("n3", "ghost")), created_at="t6", agent_id="main"),
    ]
    store = write(tmp_path / "s.sqlite", steps)
    report = verify(store, SESSION_ID)
    assert [] == report.differences
    assert ["node 'n3' has a dangling parent 'ghost'"] == report.integrity_errors
    assert not report.ok
    with pytest.raises(IntegrityError, match="'n3'"):
        rebuild(store.read_events(SESSION_ID))


def test_the_report_is_plain_data(store: SQLiteStore) -> None:
    store.execute_unchecked("UPDATE runs SET turn_count = 7 WHERE run_id = 'run_1'")
    report = verify(store, SESSION_ID)
    decoded = msgspec.json.decode(msgspec.json.encode(report), type=type(report))
    assert report == decoded
    assert "runs[run_1].turn_count: expected 1, actual 7" == report.lines()[1]


def test_a_parent_cycle_in_the_log_is_reported_by_verify_naming_the_node(tmp_path: Path) -> None:
    # a names a parent b that does not exist yet; b then names a: a → b → a. The store
    # keeps both rows, so only the integrity check can tell.
    steps = [
        *BASE,
        Step(event=NodeAppended(node=user("a", "b")), created_at="t6", agent_id="main"),
        Step(event=NodeAppended(node=user("b", "a")), created_at="t7", agent_id="main"),
    ]
    store = write(tmp_path / "s.sqlite", steps)
    report = verify(store, SESSION_ID)
    assert [] == report.differences
    assert [
        "node 'a' has a dangling parent 'b'",
        "node 'b' is its own ancestor (a cycle: b → a → b)",
    ] == report.integrity_errors
    store.close()
