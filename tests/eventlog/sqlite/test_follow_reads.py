"""The read a follower polls with (``read_events(after_seq=…, limit=…)``): an indexed range
read that sees what another connection committed since, never a scan of the session."""

from __future__ import annotations

from pathlib import Path

from _files import raw

from eventlog.sqlite import SQLiteStore
from tests.eventlog.store_conformance import SID, append, created, todo


def test_the_range_read_searches_by_seq_instead_of_scanning_the_table(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created(), todo("a"))
    store.close()
    conn = raw(tmp_path / "s.sqlite")

    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            f"EXPLAIN QUERY PLAN SELECT * FROM events_{SID} WHERE seq > ? ORDER BY seq LIMIT ?",
            (1, 10),
        )
    )
    conn.close()

    # seq is the table's rowid (eventlog/sqlite/schema.py): a range search of the table
    # itself; tables made before that search their unique seq index instead.
    assert plan.startswith(f"SEARCH events_{SID} USING INTEGER PRIMARY KEY (rowid>?)"), plan


def test_a_reader_sees_each_poll_what_another_store_on_the_file_committed_since(
    tmp_path: Path,
) -> None:
    writer = SQLiteStore(tmp_path / "s.sqlite")
    reader = SQLiteStore(tmp_path / "s.sqlite", read_only=True)
    append(writer, created(), todo("a"))
    assert [1, 2] == [e.seq for e in reader.read_events(SID)]

    append(writer, todo("b"), todo("c"))

    assert [3, 4] == [e.seq for e in reader.read_events(SID, after_seq=2, limit=10)]
    assert [] == reader.read_events(SID, after_seq=4, limit=10)
    reader.close()
    writer.close()
