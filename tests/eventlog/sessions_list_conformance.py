"""The sessions list's reads, one suite for both backends (issue 35, "Size").

``list_sessions_page`` pages by keyset: each session exactly once oldest first, even while
sessions are created between pages; ``read_runs_of`` and ``count_events_of`` read a page's
runs and counts in one statement each. A backend's subclass gives ``make_store`` (as the
store conformance suite does).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eventlog import global_reads
from eventlog.events import RunEnded, RunStarted, SessionCreated, TodoUpdated
from eventlog.records import SessionRow
from eventlog.store import EventStore
from tests.eventlog.store_conformance import StoreFactory, append, created, req


def sid_of(i: int) -> str:
    return f"sess_20260101_000000_{i:05d}"


def make_sessions(store: EventStore, first: int, n: int, *, runs: bool = False) -> list[str]:
    """Append ``n`` sessions (ids from ``first``), one batch; with ``runs`` each gets a run,
    ended for even ``i``, still running for odd."""
    ids, requests = [], []
    for i in range(first, first + n):
        sid = sid_of(i)
        ids.append(sid)
        requests.append(created(sid))
        if runs:
            run = f"{sid}:brain:r1"
            agent = f"{sid}:brain"
            started = RunStarted(run_id=run, agent_id=agent, phase="route", start_node_id=None)
            requests.append(req(started, sid, run_id=run, agent_id=agent))
            if i % 2 == 0:
                ended = RunEnded(run_id=run, status="completed", end_reason="completed")
                requests.append(req(ended, sid, run_id=run, agent_id=agent))
    append(store, *requests)
    return ids


class SessionsListConformance:
    """What every backend's sessions list guarantees."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        raise NotImplementedError("a backend's subclass gives its store factory")

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[EventStore]:
        s = make_store()
        yield s
        s.close()

    def test_keyset_pages_give_every_session_once_while_sessions_are_created(
        self, store: EventStore
    ) -> None:
        before = make_sessions(store, 0, 120)
        seen: list[str] = []
        after: str | None = None
        made = 120
        while True:
            page = store.list_sessions_page(after=after, limit=17)
            if not page:
                break
            seen += [r.session_id for r in page]
            after = page[-1].session_id
            make_sessions(store, made, 5)  # created between two pages: later pages hold them
            made += 5
            if made > 400:
                break
        assert len(seen) == len(set(seen))
        assert set(before) <= set(seen)
        assert seen == sorted(seen)  # oldest first: ids and times grow together here

    def test_newest_first_pages_follow_the_last_activity(self, store: EventStore) -> None:
        ids = make_sessions(store, 0, 10)
        append(store, req(TodoUpdated(todo_id="t", status="running", note="x"), ids[3]))
        first = store.list_sessions_page(limit=4, newest_first=True)
        assert [ids[3], ids[9], ids[8], ids[7]] == [r.session_id for r in first]
        rest = store.list_sessions_page(after=first[-1].session_id, limit=100, newest_first=True)
        assert [ids[i] for i in (6, 5, 4, 2, 1, 0)] == [r.session_id for r in rest]

    def test_a_cursor_naming_no_session_gives_an_empty_page(self, store: EventStore) -> None:
        make_sessions(store, 0, 3)
        assert [] == store.list_sessions_page(after="sess_nothing_here")

    def test_runs_and_event_counts_of_a_page_match_the_per_session_reads(
        self, store: EventStore
    ) -> None:
        ids = make_sessions(store, 0, 30, runs=True)
        runs = store.read_runs_of([*ids, "sess_not_stored"])
        counts = store.count_events_of([*ids, "sess_not_stored"])
        for sid in ids:
            assert store.read_runs(sid) == runs[sid]
            assert store.count_events(sid) == counts[sid]
        assert [] == runs["sess_not_stored"]
        assert 0 == counts["sess_not_stored"]
        assert sorted(ids[1::2]) == store.open_run_sessions()
        assert sorted(ids[-10:][1::2]) == store.open_run_sessions(newest=10)

    def test_the_mark_moves_at_every_append_and_new_session(self, store: EventStore) -> None:
        assert (0, None) == store.sessions_mark()
        ids = make_sessions(store, 0, 3)
        mark = store.sessions_mark()
        assert 3 == mark[0]
        append(store, req(TodoUpdated(todo_id="t", status="running", note="x"), ids[0]))
        assert mark != store.sessions_mark()

    def test_a_search_finds_ids_by_prefix_and_text_in_metadata(self, store: EventStore) -> None:
        ids = make_sessions(store, 0, 12)
        found, cursor = store.search_sessions_page("sess_20260101_000000_0001")
        assert ([ids[10], ids[11]], None) == ([r.session_id for r in found], cursor)
        titled = "sess_titled"
        made = SessionCreated(
            session_id=titled, cwd="/w", root_agent_id="a1", metadata={"title": "Sync 100% OK"}
        )
        append(store, req(made, titled))
        assert ([titled], None) == _ids(store.search_sessions_page("sync 100%"))
        assert ([], None) == _ids(store.search_sessions_page("sync 1000"))
        assert ([], None) == _ids(store.search_sessions_page("c_100"))  # '_' is no wildcard

    def test_a_text_search_looks_at_a_window_and_gives_the_cursor_on(
        self, store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(global_reads, "SEARCH_WINDOW", 4)
        ids = make_sessions(store, 0, 10)
        seen: list[str] = []
        cursor: str | None = None
        windows = 0
        while True:
            found, cursor = store.search_sessions_page("nothing matches", after=cursor)
            seen += [r.session_id for r in found]
            windows += 1
            if cursor is None:
                break
        assert ([], 3) == (seen, windows)  # 10 sessions, 4 a window
        assert 10 == len(ids)


def _ids(result: tuple[list[SessionRow], str | None]) -> tuple[list[str], str | None]:
    return [r.session_id for r in result[0]], result[1]
