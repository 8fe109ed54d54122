"""A home written at schema version 4 (node content only in the events, a parked run
stored ``waiting``) is migrated in place to version 5: the seed's columns, filled.

``tests/golden/stores/v4_home`` is a real home written by clew at schema version 4 (its
README says how), with ``reads.json``: what that clew's reads returned. After the
migration today's code reads the same records (a parked run's usage so far aside, which
version 4 did not keep), verifies and replays every session, and the rows hold the
seed's columns and enums. Read-only, the file is read the same without migrating it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import apsw
import msgspec
import pytest

from actors.runtime.runtime import Runtime
from eventlog.errors import StoreError
from eventlog.seed_enums import END_REASONS, RUN_STATUSES
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from projections import verify
from tests.eventlog.seed_conformance import SEED_COLUMNS

GOLDEN = Path(__file__).parents[2] / "golden" / "stores" / "v4_home"
RECORDED: dict[str, Any] = json.loads((GOLDEN / "reads.json").read_text())
SESSIONS: dict[str, Any] = RECORDED["sessions"]
DEMO = "sess_20261202_062933_013a"
WAITING = "sess_20261202_062951_61be"
SEED_NODE_COLUMNS = SEED_COLUMNS["nodes"]


def builtins(value: Any) -> Any:
    return json.loads(json.dumps(msgspec.to_builtins(value), sort_keys=True))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy of the version 4 home (the fixture itself is never opened)."""
    (tmp_path / "home").mkdir()
    shutil.copy(GOLDEN / "sessions.sqlite", tmp_path / "home" / "sessions.sqlite")
    return tmp_path / "home"


def usage_so_far(store: SQLiteStore, sid: str, run_id: str) -> dict[str, int]:
    total = dict.fromkeys(
        ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), 0
    )
    for e in store.iter_events(sid):
        if e.event_type == "token_usage" and e.run_id == run_id:
            for k in total:
                total[k] += getattr(e.event.usage, k)
    return total


def expected_runs(store: SQLiteStore, sid: str) -> list[dict[str, Any]]:
    """The recorded runs, a parked run's usage being its usage so far."""
    return [
        {**run, "usage": usage_so_far(store, sid, run["run_id"])}
        if run["status"] == "waiting"
        else run
        for run in SESSIONS[sid]["read_runs"]
    ]


def test_the_fixture_is_a_version_4_home() -> None:
    assert 4 == RECORDED["schema_version"]
    conn = apsw.Connection(
        f"file:{GOLDEN / 'sessions.sqlite'}?mode=ro&immutable=1",
        flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
    )
    try:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info(nodes_{DEMO})")]
        assert "event_seq" in columns and "content_json" not in columns
    finally:
        conn.close()


def test_a_version_4_home_is_migrated_and_reads_as_the_clew_that_wrote_it(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        assert SCHEMA_VERSION == store._query("PRAGMA user_version")[0][0]
        for sid, recorded in SESSIONS.items():
            assert recorded["read_nodes"] == builtins(store.read_nodes(sid))
            assert recorded["read_active_path"] == builtins(store.read_active_path(sid))
            assert recorded["read_node_links"] == [list(x) for x in store.read_node_links(sid)]
            assert recorded["read_agents"] == builtins(store.read_agents(sid))
            assert recorded["read_artifacts"] == builtins(store.read_artifacts(sid))
            assert recorded["read_session"] == builtins(store.read_session(sid))
            assert expected_runs(store, sid) == builtins(store.read_runs(sid))
            assert recorded["read_run_statuses"] == [list(x) for x in store.read_run_statuses(sid)]
            assert recorded["events"] == store.check_chain(sid).events
            assert verify(store, sid).ok, verify(store, sid).lines()
    finally:
        store.close()


def test_the_migrated_rows_hold_the_seeds_columns_filled(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        for sid, recorded in SESSIONS.items():
            columns = [r[1] for r in store._query(f"PRAGMA table_info(nodes_{sid})")]
            assert SEED_NODE_COLUMNS == columns
            rows = store._query(
                f"SELECT node_id, run_id, content_json, metadata_json, token_count, created_at"
                f" FROM nodes_{sid} ORDER BY node_seq"
            )
            assert [
                (
                    n["node_id"],
                    n["run_id"],
                    n["content"],
                    n["metadata"],
                    n["token_count"],
                    n["created_at"],
                )
                for n in recorded["read_nodes"]
            ] == [(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4], r[5]) for r in rows]
        statuses = store._query("SELECT DISTINCT status FROM runs")
        reasons = store._query("SELECT DISTINCT end_reason FROM runs")
        assert {s for (s,) in statuses} <= RUN_STATUSES
        assert {r for (r,) in reasons} - {None} <= END_REASONS
        [(run_id, status, detail, usage)] = store._query(
            "SELECT run_id, status, status_detail, usage_json FROM runs WHERE session_id = ?",
            (WAITING,),
        )
        assert ("pending", "waiting") == (status, detail)
        assert usage_so_far(store, WAITING, run_id) == json.loads(usage)
        assert 0 < json.loads(usage)["input_tokens"]
    finally:
        store.close()


def test_a_migrated_version_4_home_replays_identically(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with Runtime(home, project) as rt:
        for sid in SESSIONS:
            assert rt.replay(sid).identical, sid
        assert "waiting" == rt.store.read_run_statuses(WAITING)[0][2]


def test_a_version_4_file_opened_read_only_reads_the_same_without_migrating(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite", read_only=True)
    try:
        assert 4 == store._query("PRAGMA user_version")[0][0]
        for sid, recorded in SESSIONS.items():
            assert recorded["read_nodes"] == builtins(store.read_nodes(sid))
            assert expected_runs(store, sid) == builtins(store.read_runs(sid))
            assert verify(store, sid).ok, verify(store, sid).lines()
    finally:
        store.close()


def test_a_tampered_content_after_the_migration_fails_verify(home: Path) -> None:
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        last = SESSIONS[DEMO]["read_nodes"][-1]["node_id"]
        store.execute_unchecked(
            f"UPDATE nodes_{DEMO} SET content_json = ? WHERE node_id = ?",
            ('[{"type":"text","text":"forged"}]', last),
        )
        [diff] = verify(store, DEMO).differences
        assert (last, "content_json") == (diff.key, diff.column)
    finally:
        store.close()


def test_a_version_4_node_row_pointing_elsewhere_stops_the_whole_migration(home: Path) -> None:
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    nodes = SESSIONS[WAITING]["read_nodes"]
    conn.execute(
        f"UPDATE nodes_{WAITING} SET event_seq = event_seq + 1 WHERE node_id = ?",
        (nodes[-1]["node_id"],),
    )
    conn.close()
    with pytest.raises(StoreError, match=f"cannot migrate session {WAITING} to schema version 5"):
        SQLiteStore(home / "sessions.sqlite")
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        # One transaction: nothing of version 5 was kept, in any session.
        assert 4 == conn.execute("PRAGMA user_version").fetchone()[0]
        assert "status_detail" not in [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
        assert "event_seq" in [r[1] for r in conn.execute(f"PRAGMA table_info(nodes_{DEMO})")]
        assert [("waiting",)] == conn.execute(
            "SELECT status FROM runs WHERE session_id = ?", (WAITING,)
        ).fetchall()
    finally:
        conn.close()
