"""``Runtime.follow``: a session's committed events as they land, read by another runtime
(what another process does), one indexed range read per poll, never a re-read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _processes import run_crash_demo
from _runtime_helpers import run_session

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import UsageError
from actors.runtime.runtime import Runtime
from eventlog.errors import InvalidSessionId, UnknownSession
from eventlog.records import StoredEvent
from eventlog.sqlite import SQLiteStore


@pytest.fixture
def writer_rt(tmp_path: Path) -> Iterator[Runtime]:
    project = tmp_path / "project"
    project.mkdir()
    rt = Runtime(tmp_path / "home", project)
    yield rt
    rt.close()


@pytest.fixture
def reader_rt(writer_rt: Runtime) -> Iterator[Runtime]:
    """A second runtime on the same home, read-only: it sees only what is committed."""
    rt = Runtime(writer_rt.home, writer_rt.project_dir, read_only=True)
    yield rt
    rt.close()


def _seqs(events: list[StoredEvent]) -> list[int]:
    return [e.seq for e in events]


def test_follow_yields_every_event_a_running_session_commits_in_seq_order_without_a_gap(
    writer_rt: Runtime, reader_rt: Runtime
) -> None:
    session = writer_rt.new_session()
    run = threading.Thread(
        target=session.run,
        args=(DEMO_PROMPT,),
        kwargs={"model": demo_model(3, delay_ms=20), "tools": demo_tools(writer_rt.project_dir)},
    )
    run.start()

    seen = list(reader_rt.follow(session.id, poll_s=0.01, stop=lambda: not run.is_alive()))
    run.join()

    stored = writer_rt.store.read_events(session.id)
    assert stored == seen
    assert list(range(1, len(stored) + 1)) == _seqs(seen)
    assert "run_ended" == seen[-1].event_type


def test_follow_since_a_seq_starts_after_it_and_a_set_stop_event_ends_it_when_caught_up(
    writer_rt: Runtime, reader_rt: Runtime
) -> None:
    done = run_session(
        writer_rt, DEMO_PROMPT, demo_model(2), tools=demo_tools(writer_rt.project_dir)
    )
    stop = threading.Event()
    stop.set()

    seen = list(reader_rt.follow(done.sid, since_seq=40, stop=stop))

    assert _seqs(done.events)[40:] == _seqs(seen)


def test_until_idle_ends_once_no_run_is_in_progress_after_the_last_event(
    writer_rt: Runtime, reader_rt: Runtime
) -> None:
    done = run_session(
        writer_rt, DEMO_PROMPT, demo_model(2), tools=demo_tools(writer_rt.project_dir)
    )

    seen = list(reader_rt.follow(done.sid, poll_s=0.01, until_idle=True))

    assert done.events == seen


def test_an_interrupted_run_is_not_in_progress_so_until_idle_ends(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    killed = run_crash_demo(home, project, "run", "2", env={"CLEW_FAULT_KILL_AFTER_EVENTS": "30"})
    assert -9 == killed.returncode, killed.stderr

    with Runtime(home, project, read_only=True) as rt:
        (info,) = rt.sessions()
        assert info.interrupted
        seen = list(rt.follow(info.session_id, poll_s=0.01, until_idle=True))

    assert info.events == len(seen)


class _RangeReads:
    """The real store, noting every ``read_events`` call (the follower's only query)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self.calls: list[tuple[int, int | None]] = []

    def read_events(
        self, session_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        self.calls.append((after_seq, limit))
        return self._store.read_events(session_id, after_seq, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_each_poll_reads_only_what_follows_the_last_event_yielded(
    writer_rt: Runtime, reader_rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run_session(
        writer_rt, DEMO_PROMPT, demo_model(2), tools=demo_tools(writer_rt.project_dir)
    )
    spy = _RangeReads(reader_rt._engine.store)  # type: ignore[arg-type]
    monkeypatch.setattr(reader_rt._engine, "store", spy)
    monkeypatch.setattr("actors.runtime.status.FOLLOW_BATCH", 25)

    seen = list(reader_rt.follow(done.sid, stop=lambda: True))

    assert done.events == seen
    # Batches of 25, each after the last seq yielded, up to a short one; then the last
    # read before stopping (what was committed meanwhile).
    n = len(seen)
    expected = [*((after, 25) for after in range(0, n + 1, 25)), (n, None)]
    assert expected == spy.calls


@pytest.mark.parametrize(
    ("session_id", "kw", "error"),
    [
        ("no such id!", {}, InvalidSessionId),
        ("sess_20260101_000000_beef", {}, UnknownSession),
        (None, {"since_seq": -1}, UsageError),
        (None, {"poll_s": 0}, UsageError),
    ],
)
def test_a_bad_session_or_argument_is_refused_at_the_call(
    writer_rt: Runtime, session_id: str | None, kw: dict[str, Any], error: type[Exception]
) -> None:
    sid = session_id or writer_rt.new_session().id

    with pytest.raises(error):
        writer_rt.follow(sid, **kw)  # refused before any iteration
