"""Node rows of a session recorded at schema version 3 (its rows hold the content, as
every session's do again since schema version 5: the seed's columns).

``tests/golden/stores/v3_demo`` is a real home written by clew at schema version 3 (the
3-worker demo, checkpointed, then ``VACUUM``), with ``reads.json``: what that clew's
``read_nodes``, ``read_active_path``, ``read_children`` and ``read_node_links``
returned. Today's code must return exactly the same, verify it, replay it, go on
appending to it, and copy it to another home.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.runtime.runtime import Runtime
from actors.runtime.upkeep import copy_sessions
from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended, SessionCreated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from eventlog.writer import Writer
from projections import Difference, rebuild, verify
from tests.eventlog.seed_conformance import SEED_COLUMNS

SEED_NODE_COLUMNS = SEED_COLUMNS["nodes"]
GOLDEN = Path(__file__).parents[2] / "golden" / "stores" / "v3_demo"
RECORDED: dict[str, Any] = json.loads((GOLDEN / "reads.json").read_text())
SID: str = RECORDED["session_id"]


def builtins(value: Any) -> Any:
    return json.loads(json.dumps(msgspec.to_builtins(value), sort_keys=True))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy of the version 3 home (the fixture itself is never opened for writing)."""
    (tmp_path / "home").mkdir()
    shutil.copy(GOLDEN / "sessions.sqlite", tmp_path / "home" / "sessions.sqlite")
    return tmp_path / "home"


def reads(store: SQLiteStore, sid: str) -> dict[str, Any]:
    nodes = store.read_nodes(sid)
    return {
        "read_nodes": builtins(nodes),
        "read_active_path": builtins(store.read_active_path(sid)),
        "read_children": {n.node_id: builtins(store.read_children(sid, n.node_id)) for n in nodes},
        "read_node_links": [list(x) for x in store.read_node_links(sid)],
    }


def expected_reads() -> dict[str, Any]:
    return {
        k: RECORDED[k]
        for k in ("read_nodes", "read_active_path", "read_children", "read_node_links")
    }


def test_a_version_3_session_reads_as_the_clew_that_wrote_it(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        assert expected_reads() == reads(store, SID)
        assert (
            builtins(store.read_node(SID, RECORDED["read_nodes"][3]["node_id"]))
            == (RECORDED["read_nodes"][3])
        )
        assert verify(store, SID).ok
        assert RECORDED["events"] == store.check_chain(SID).events
    finally:
        store.close()


def test_a_version_3_file_opened_read_only_reads_the_same_without_migrating(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite", read_only=True)
    try:
        assert expected_reads() == reads(store, SID)
        assert 3 == store._query("PRAGMA user_version")[0][0]
    finally:
        store.close()


def test_a_version_3_session_replays_identically_and_verifies(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with Runtime(home, project) as rt:
        assert rt.replay(SID).identical
        assert rt.store.read_session(SID).status == "active"


def node(node_id: str, parent: str, text: str) -> Node:
    return Node(
        node_id=node_id,
        parent_id=parent,
        agent_id=f"{SID}:brain",
        role="user",
        content=[TextBlock(text=text)],
        metadata={"k": 1},
        token_count=3,
    )


def test_nodes_appended_to_a_version_3_session_keep_its_layout(
    home: Path,
) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    assert SCHEMA_VERSION == store._query("PRAGMA user_version")[0][0]
    writer = Writer(store)
    try:
        tip = RECORDED["read_active_path"][-1]["node_id"]
        writer.append(
            AppendRequest(
                session_id=SID,
                event=NodeAppended(node=node(f"{SID}:x1", tip, "more"), activate=True),
                created_at="2026-12-01T10:00:00Z",
                agent_id=f"{SID}:brain",
            )
        )
        [(content,)] = store._query(
            f"SELECT content_json FROM nodes_{SID} WHERE node_id = ?", (f"{SID}:x1",)
        )
        assert '[{"type":"text","text":"more"}]' == content
        path = store.read_active_path(SID)
        assert RECORDED["read_active_path"] == builtins(path[:-1])
        tip_row = path[-1]
        assert ([TextBlock(text="more")], {"k": 1}, 3) == (
            tip_row.content,
            tip_row.metadata,
            tip_row.token_count,
        )
        assert verify(store, SID).ok
        assert rebuild(store.iter_events(SID), SID).node_rows() == store.read_nodes(SID)
        columns = [r[1] for r in store._query(f"PRAGMA table_info(nodes_{SID})")]
        assert "content_json" in columns and "event_seq" not in columns
    finally:
        writer.stop()
        store.close()


def test_a_changed_content_in_a_version_3_row_is_reported_with_its_column(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        first = RECORDED["read_nodes"][0]
        store.execute_unchecked(
            f"UPDATE nodes_{SID} SET content_json = ? WHERE node_id = ?",
            ('[{"type":"text","text":"forged"}]', first["node_id"]),
        )
        [diff] = verify(store, SID).differences
        assert (
            Difference(
                table=f"nodes_{SID}",
                key=first["node_id"],
                column="content_json",
                expected=first["content"],
                actual=[{"type": "text", "text": "forged"}],
            )
            == diff
        )
    finally:
        store.close()


def test_a_version_3_session_copies_to_a_new_home_and_reads_the_same(
    home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    [result] = copy_sessions(home, target, [SID], tmp_path)
    assert "copied" == result.outcome
    store = SQLiteStore(target / "sessions.sqlite", read_only=True)
    try:
        # The copy was made by today's writer: its node rows hold the seed's columns.
        columns = [r[1] for r in store._query(f"PRAGMA table_info(nodes_{SID})")]
        assert SEED_NODE_COLUMNS == columns
        assert expected_reads() == reads(store, SID)
        assert verify(store, SID).ok
    finally:
        store.close()


def test_a_new_sessions_node_row_holds_the_seeds_columns_filled(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.sqlite")
    writer = Writer(store)
    try:
        sid = "sess_new"
        writer.append(
            AppendRequest(
                session_id=sid,
                event=SessionCreated(session_id=sid, cwd="/p", root_agent_id="a"),
                created_at="t0",
            )
        )
        writer.append(
            AppendRequest(
                session_id=sid,
                event=NodeAppended(node=node("n1", "", "a unique sentence")),
                created_at="t1",
            )
        )
        columns = [r[1] for r in store._query(f"PRAGMA table_info(nodes_{sid})")]
        assert SEED_NODE_COLUMNS == columns
        assert [
            ("n1", None, '[{"type":"text","text":"a unique sentence"}]', '{"k":1}', 3, "t1")
        ] == store._query(
            f"SELECT node_id, run_id, content_json, metadata_json, token_count, created_at"
            f" FROM nodes_{sid}"
        )
    finally:
        writer.stop()
        store.close()
