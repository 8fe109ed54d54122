"""The hash chain over a session's events: written by the append, followed by every full
read, and what it does and does not let through (eventlog/chain.py)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog.chain import EVENT_COLUMNS, GENESIS, link
from eventlog.errors import IntegrityError
from eventlog.records import ChainStatus
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from tests.eventlog.sqlite._files import raw
from tests.eventlog.store_conformance import SID, append, created, todo

GOLDEN_DEMO = Path(__file__).resolve().parents[2] / "golden" / "sessions" / "demo"
GOLDEN_SID = "sess_20261130_231819_679c"
#: Every column of ``events_<sid>`` that the hash covers, plus the hash itself.
COLUMNS = [c.strip() for c in EVENT_COLUMNS.split(",")] + ["hash"]


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    """A store with one session of 6 events (5 of them in run r1), closed."""
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created(), todo("a", run_id="r1"), todo("b", run_id="r1"))
    append(store, todo("c", run_id="r1"), todo("d", run_id="r1"), todo("e", run_id="r1"))
    store.close()
    yield tmp_path / "s.sqlite"


def rows(path: Path) -> list[tuple[Any, ...]]:
    conn = raw(path)
    try:
        return list(conn.execute(f"SELECT {EVENT_COLUMNS}, hash FROM events_{SID} ORDER BY seq"))
    finally:
        conn.close()


def sql(path: Path, statement: str, params: tuple[Any, ...] = ()) -> None:
    conn = raw(path)
    try:
        conn.execute(statement, params)
    finally:
        conn.close()


def flip_one_bit(value: Any) -> Any:
    """Return ``value`` with one bit flipped (text: the low bit of its first character)."""
    if isinstance(value, int):
        return value ^ (1 << 20)  # far from every other seq: no UNIQUE collision
    return chr(ord(value[0]) ^ 1) + value[1:]


def broken_at(path: Path) -> str:
    """Return the message of the IntegrityError each full reader raises (they must agree)."""
    store = SQLiteStore(path)
    try:
        with pytest.raises(IntegrityError) as by_check:
            store.check_chain(SID)
        with pytest.raises(IntegrityError) as by_iter:
            list(store.iter_events(SID))
    finally:
        store.close()
    assert str(by_check.value) == str(by_iter.value)
    return str(by_check.value)


# --- what the append writes ---------------------------------------------------------------


def test_each_event_row_holds_the_hash_of_its_values_after_the_previous_hash(
    path: Path,
) -> None:
    prev = GENESIS
    for *values, stored in rows(path):
        assert link(prev, values) == stored
        prev = stored
    conn = raw(path)
    [(chain_from, head)] = conn.execute(
        "SELECT chain_from, chain_head FROM sessions WHERE session_id = ?", (SID,)
    )
    conn.close()
    assert (1, prev) == (chain_from, head)


def test_a_chain_goes_on_across_a_reopen_and_a_rolled_back_request(path: Path) -> None:
    store = SQLiteStore(path)
    results = store.append_batch([todo("f"), todo("g", sid="sess_20260101_000000_none"), todo("h")])
    store.close()
    assert [False, True, False] == [isinstance(r, Exception) for r in results]
    assert ChainStatus(session_id=SID, events=8, legacy_events=0) == SQLiteStore(path).check_chain(
        SID
    )


def test_an_intact_chain_reads_back_every_event(path: Path) -> None:
    store = SQLiteStore(path)
    assert [1, 2, 3, 4, 5, 6] == [e.seq for e in store.iter_events(SID)]
    assert ChainStatus(session_id=SID, events=6, legacy_events=0) == store.check_chain(SID)
    store.close()


# --- what the chain detects ---------------------------------------------------------------


@pytest.mark.parametrize("column", [c for c in COLUMNS if c not in ("node_id", "tool_call_id")])
def test_one_flipped_bit_in_any_column_of_an_event_breaks_the_chain_at_that_seq(
    path: Path, column: str
) -> None:
    # node_id and tool_call_id are NULL in these rows: a bit cannot flip in nothing.
    value = next(r for r in rows(path) if r[1] == 4)[COLUMNS.index(column)]
    sql(path, f"UPDATE events_{SID} SET {column} = ? WHERE seq = 4", (flip_one_bit(value),))
    # A changed seq moves the row to the end: the chain then breaks where seq 4 is missing.
    expected = "breaks at seq 5" if column == "seq" else "breaks at seq 4"
    assert expected in broken_at(path)


def test_a_deleted_event_breaks_the_chain_at_the_next_one(path: Path) -> None:
    sql(path, f"DELETE FROM events_{SID} WHERE seq = 3")
    assert "breaks at seq 4" in broken_at(path)


def test_two_swapped_events_break_the_chain_at_the_first_of_them(path: Path) -> None:
    for a, b in ((3, -1), (4, 3), (-1, 4)):
        sql(path, f"UPDATE events_{SID} SET seq = ? WHERE seq = ?", (b, a))
    assert "breaks at seq 3" in broken_at(path)


def test_removing_the_newest_events_is_seen_by_the_chain_head(path: Path) -> None:
    sql(path, f"DELETE FROM events_{SID} WHERE seq >= 5")
    assert "head does not match its last event (seq 4)" in broken_at(path)


def test_a_removed_hash_inside_the_chain_is_a_break(path: Path) -> None:
    sql(path, f"UPDATE events_{SID} SET hash = NULL WHERE seq = 2")
    assert "seq 2 has no hash" in broken_at(path)


def test_a_changed_chain_start_is_seen(path: Path) -> None:
    sql(path, "UPDATE sessions SET chain_from = 3")
    assert "sessions.chain_from was changed" in broken_at(path)


def test_a_broken_chain_stops_the_event_iterator_before_the_broken_event(path: Path) -> None:
    sql(path, f"UPDATE events_{SID} SET created_at = 'x' WHERE seq = 3")
    store = SQLiteStore(path)
    seen: list[int] = []
    with pytest.raises(IntegrityError):
        seen.extend(e.seq for e in store.iter_events(SID))
    store.close()
    assert [1, 2] == seen


def test_a_stored_byte_that_is_not_utf8_is_an_integrity_error_naming_its_seq(
    path: Path,
) -> None:
    needle = b'"note":"c"'
    data = path.read_bytes()
    assert needle in data
    path.write_bytes(data.replace(needle, b'"note":"\xff"'))
    store = SQLiteStore(path)
    try:
        with pytest.raises(IntegrityError, match="event seq 4 is not valid UTF-8"):
            list(store.iter_events(SID))
        with pytest.raises(IntegrityError, match="event seq 4 is not valid UTF-8"):
            store.check_chain(SID)
        with pytest.raises(IntegrityError, match="not valid UTF-8"):
            store.read_events(SID)
    finally:
        store.close()


# --- sessions written before the chain ------------------------------------------------------


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """A copy of a store written by clew 0a7c95d (schema version 1, no hash column)."""
    return Path(shutil.copy(GOLDEN_DEMO / "home" / "sessions.sqlite", tmp_path / "s.sqlite"))


def test_events_written_before_the_chain_are_reported_as_legacy_not_as_a_break(
    legacy: Path,
) -> None:
    store = SQLiteStore(legacy)
    assert ChainStatus(session_id=GOLDEN_SID, events=102, legacy_events=102) == (
        store.check_chain(GOLDEN_SID)
    )
    assert 102 == len(list(store.iter_events(GOLDEN_SID)))
    store.close()
    conn = raw(legacy)
    assert SCHEMA_VERSION == conn.pragma("user_version")
    conn.close()


def test_the_first_chained_event_of_an_old_session_seals_the_events_before_it(
    legacy: Path,
) -> None:
    store = SQLiteStore(legacy)
    append(store, todo("after the upgrade", sid=GOLDEN_SID))
    assert ChainStatus(session_id=GOLDEN_SID, events=103, legacy_events=102) == (
        store.check_chain(GOLDEN_SID)
    )
    store.close()
    sql(legacy, f"UPDATE events_{GOLDEN_SID} SET created_at = 'x' WHERE seq = 50")
    store = SQLiteStore(legacy)
    with pytest.raises(IntegrityError, match="breaks at seq 103"):
        store.check_chain(GOLDEN_SID)
    store.close()


def test_a_removed_chain_start_makes_every_event_count_as_chained(legacy: Path) -> None:
    SQLiteStore(legacy).close()  # migrated: its 102 events are legacy
    sql(legacy, "UPDATE sessions SET chain_from = NULL")
    store = SQLiteStore(legacy)
    with pytest.raises(IntegrityError, match="seq 1 has no hash"):
        store.check_chain(GOLDEN_SID)
    store.close()
