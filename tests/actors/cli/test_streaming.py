"""Read commands at scale (issue 12, class 14): ``timeline`` streams its rows in constant
memory, and ``verify --all`` pays per session only for that session.

No timing here (benchmarks/bench_cli.py measures): the tests pin the shape — rows out
before the last event is read, a flat memory peak, no connection opened per session.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli_helpers import Where, invoke

from actors.cli import main, timeline_rows
from eventlog.records import StoredEvent
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.connections import Connections
from eventlog.sqlite.reads import SQLiteReads
from tests.eventlog.store_conformance import append, created, todo

SID = "sess_20260101_000000_beef"


def _home(tmp_path: Path, sessions: dict[str, int]) -> Where:
    """A home holding each session of ``sessions`` with that many events."""
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir(parents=True)
    store = SQLiteStore(where.home / "sessions.sqlite")
    try:
        for sid, events in sessions.items():
            append(store, created(sid))
            for start in range(1, events, 500):
                stop = min(start + 500, events)
                append(store, *(todo(f"note {i}", sid=sid) for i in range(start, stop)))
    finally:
        store.close()
    return where


def test_the_timeline_prints_rows_before_the_last_event_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = _home(tmp_path, {SID: 1000})
    monkeypatch.setattr(timeline_rows, "TIMELINE_CHUNK", 50)
    original = SQLiteReads.iter_events
    printed_at_last: list[int] = []

    def watched(self: SQLiteReads, session_id: str, batch: int = 20_000) -> Iterator[StoredEvent]:
        for e in original(self, session_id, batch):
            if e.seq == 1000:
                printed_at_last.append(len(out.getvalue().splitlines()))
            yield e

    monkeypatch.setattr(SQLiteReads, "iter_events", watched)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert 0 == main(["timeline", SID, *where.flags()])
    lines = out.getvalue().splitlines()
    assert ["seq", "time", "run", "#", "event", "details"] == lines[0].split()
    assert "1000 events" == lines[-1]
    assert 1 + 1000 + 1 == len(lines)
    assert "1000" == lines[-2].split()[0]
    assert ["todo_updated", "t1", "running:", "note", "999"] == lines[-2].split()[3:]
    # When the last event is read, all rows but the last chunk are out already.
    assert [1 + 950] == printed_at_last


def test_the_streamed_timeline_json_is_the_documented_document(tmp_path: Path) -> None:
    where = _home(tmp_path, {SID: 30})
    doc = invoke(where, "timeline", SID, "--json")
    exported = [json.loads(line) for line in invoke(where, "export", SID).out.splitlines()]
    assert {"session_id": SID, "events": exported} == doc.json()
    assert json.dumps(doc.json(), ensure_ascii=False) + "\n" == doc.out
    empty = invoke(where, "timeline", SID, "--json", "--type", "run_started")
    assert f'{{"session_id": "{SID}", "events": []}}\n' == empty.out


def _peak_bytes(where: Where, *args: str) -> int:
    """The peak traced memory of one ``clew`` command whose stdout goes to /dev/null."""
    with Path(os.devnull).open("w") as sink, contextlib.redirect_stdout(sink):
        tracemalloc.start()
        try:
            assert 0 == main([*args, *where.flags()])
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


@pytest.mark.parametrize("as_json", [[], ["--json"]], ids=["table", "json"])
def test_the_timeline_memory_does_not_grow_with_the_session(
    tmp_path: Path, as_json: list[str]
) -> None:
    small, large = "sess_20260101_000000_0001", "sess_20260101_000000_0002"
    where = _home(tmp_path, {small: 500, large: 2_000})
    _peak_bytes(where, "timeline", small, *as_json)  # warm-up: imports, caches
    peaks = [_peak_bytes(where, "timeline", sid, *as_json) for sid in (small, large)]
    # 4× the events; a list of rows (or one rich Table) would make the peak ~4× too.
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_verify_all_opens_no_connection_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    homes = {
        n: _home(tmp_path / str(n), {f"sess_20260101_000000_{i:04x}": 5 for i in range(n)})
        for n in (3, 30)
    }
    opened = dict.fromkeys(homes, 0)
    counting = 0
    original = Connections.connect

    def counted(self: Connections) -> object:
        opened[counting] += 1
        return original(self)

    monkeypatch.setattr(Connections, "connect", counted)
    for counting, where in homes.items():  # counted() reads `counting`
        result = invoke(where, "verify", "--all")
        assert 0 == result.code, result.err
        assert f"{counting} sessions verified: ok" == result.out.splitlines()[-1]
    # A connection per session made verify --all quadratic: each new one parses the schema,
    # which holds every session's tables.
    assert opened[3] == opened[30], opened
