"""The readers: what only the SQLite read side promises beyond the conformance suite."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

from eventlog.sqlite import SQLiteStore
from tests.eventlog.store_conformance import SID, append, created, todo


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
