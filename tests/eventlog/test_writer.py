"""The storage writer actor: group commit, futures after commit, order, isolation, stop."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog.blocks import TextBlock
from eventlog.errors import InvalidSessionId, StoreError, UnknownSession
from eventlog.events import Node, NodeAppended, SessionCreated, TodoUpdated
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite import SQLiteStore
from eventlog.writer import CommitFuture, Writer
from tests.eventlog.store_conformance import OTHER, SID, appended, created, node, todo

WAIT = 30.0


class Gate:
    """An ``after_commit`` hook that holds the writer after its first commit until opened."""

    def __init__(self) -> None:
        self.commits: list[list[StoredEvent]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, _total: int, batch: list[StoredEvent]) -> None:
        self.commits.append(batch)
        if len(self.commits) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)


def _done(future: CommitFuture) -> bool:
    return future.done()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite"


@pytest.fixture
def writer(path: Path) -> Iterator[Writer]:
    w = Writer(SQLiteStore(path))
    w.append(created())
    yield w
    w.stop()


def _wait(futures: list[CommitFuture]) -> list[StoredEvent]:
    return [stored for f in futures for stored in f.get(timeout=WAIT)]


def _commit_sizes_of_requests_queued_while_busy(path: Path, n: int, **options: Any) -> list[int]:
    """Hold the writer in its first commit, queue ``n`` requests, release it; return the
    size of every commit."""
    gate = Gate()
    writer = Writer(SQLiteStore(path), after_commit=gate, **options)
    first = writer.submit(created())
    assert gate.entered.wait(WAIT)
    queued = [writer.submit(todo(str(i))) for i in range(n)]
    gate.release.set()
    _wait([first, *queued])
    writer.stop()
    return [len(batch) for batch in gate.commits]


def test_requests_queued_while_the_writer_is_busy_commit_in_one_transaction(
    path: Path,
) -> None:
    assert [1, 500] == _commit_sizes_of_requests_queued_while_busy(path, 500)


def test_max_batch_bounds_the_size_of_one_transaction(path: Path) -> None:
    assert [1, 100, 100, 50] == _commit_sizes_of_requests_queued_while_busy(
        path, 250, max_batch=100
    )


def test_a_future_resolves_only_after_its_transaction_committed(path: Path) -> None:
    in_transaction = threading.Event()
    proceed = threading.Event()

    def hold_inside_the_transaction(step: str) -> None:
        if step == "before_event_row" and not proceed.is_set():
            in_transaction.set()
            assert proceed.wait(WAIT)

    store = SQLiteStore(path, fault_hook=hold_inside_the_transaction)
    writer = Writer(store)
    proceed.set()
    writer.append(created())
    proceed.clear()
    reader = SQLiteStore(path)

    future = writer.submit(todo("held"))
    assert in_transaction.wait(WAIT)
    # The row is written but not committed: the future is pending, readers don't see it.
    assert not _done(future)
    assert 1 == len(reader.read_events(SID))
    proceed.set()
    [stored] = future.get(timeout=WAIT)
    # Once the future resolved, any other connection sees the event.
    assert [stored] == reader.read_events(SID, after_seq=1)
    writer.stop()
    reader.close()


def test_after_commit_runs_before_any_future_of_its_batch_resolves(path: Path) -> None:
    gate = Gate()
    futures: list[CommitFuture] = []
    seen: list[bool] = []

    def hook(total: int, batch: list[StoredEvent]) -> None:
        if gate.commits:  # the second commit: the 20 queued requests
            seen.extend(_done(f) for f in futures)
        gate(total, batch)

    writer = Writer(SQLiteStore(path), after_commit=hook)
    writer.submit(created())
    assert gate.entered.wait(WAIT)
    futures.extend(writer.submit(todo(str(i))) for i in range(20))
    gate.release.set()
    _wait(futures)
    writer.stop()
    assert [False] * 20 == seen


def test_eight_producers_get_a_gapless_seq_and_keep_their_own_order(path: Path) -> None:
    producers, per_producer = 8, 10_000
    writer = Writer(SQLiteStore(path, durability="normal"))
    writer.append(created())
    errors: list[BaseException] = []

    def produce(p: int) -> None:
        try:
            outstanding: list[CommitFuture] = []
            for i in range(per_producer):
                outstanding.append(writer.submit(todo(f"{p}:{i}", run_id=f"run{p}")))
                if len(outstanding) >= 512:
                    _wait(outstanding)
                    outstanding.clear()
            _wait(outstanding)
        except BaseException as e:  # surfaced by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.stop()
    assert [] == errors

    events = list(SQLiteStore(path).iter_events(SID))
    assert list(range(1, producers * per_producer + 2)) == [e.seq for e in events]
    by_producer: dict[str, list[tuple[int, int]]] = {}
    for e in events[1:]:
        assert isinstance(e.event, TodoUpdated)
        p, i = e.event.note.split(":")
        assert e.run_id == f"run{p}"
        assert e.run_seq is not None
        by_producer.setdefault(p, []).append((int(i), e.run_seq))
    expected = [(i, i + 1) for i in range(per_producer)]
    for p in range(producers):
        assert expected == by_producer[str(p)]


def test_a_failing_request_fails_only_its_own_future(path: Path) -> None:
    gate = Gate()
    writer = Writer(SQLiteStore(path), after_commit=gate)
    writer.submit(created())
    assert gate.entered.wait(WAIT)
    ok1 = writer.submit(appended(node("n1")))
    unknown = writer.submit(todo("x", sid=OTHER))
    duplicate = writer.submit(appended(node("n1")))
    ok2 = writer.submit(todo("y"))
    gate.release.set()
    assert 2 == ok1.get(timeout=WAIT)[0].seq
    with pytest.raises(UnknownSession):
        unknown.get(timeout=WAIT)
    with pytest.raises(StoreError):
        duplicate.get(timeout=WAIT)
    assert 3 == ok2.get(timeout=WAIT)[0].seq
    assert 2 == len(gate.commits)
    writer.stop()


def test_append_returns_the_stored_row_of_its_event(writer: Writer) -> None:
    stored = writer.append(todo("x", run_id="r1"))
    assert ("r1#1", 2, "todo_updated") == (stored.event_id, stored.seq, stored.event_type)


def test_append_raises_the_stores_error(writer: Writer) -> None:
    with pytest.raises(UnknownSession):
        writer.append(todo("x", sid=OTHER))


def test_flush_waits_for_everything_submitted_before_it(writer: Writer, path: Path) -> None:
    futures = [writer.submit(todo(str(i))) for i in range(300)]
    writer.flush()
    assert all(_done(f) for f in futures)
    assert 301 == SQLiteStore(path).count_events(SID)


def test_stop_commits_everything_queued_before_it(path: Path) -> None:
    writer = Writer(SQLiteStore(path))
    writer.append(created())
    futures = [writer.submit(todo(str(i))) for i in range(2000)]
    writer.stop()
    assert list(range(2, 2002)) == [e.seq for e in _wait(futures)]
    assert 2001 == SQLiteStore(path).count_events(SID)


def test_submitting_to_a_stopped_writer_raises_store_error(path: Path) -> None:
    writer = Writer(SQLiteStore(path))
    writer.stop()
    with pytest.raises(StoreError, match="stopped"):
        writer.submit(created())
    writer.stop()  # idempotent
    writer.flush()  # a no-op once stopped


def test_the_writer_keeps_a_bad_request_from_stopping_the_queue(writer: Writer) -> None:
    bad = AppendRequest(
        session_id="../x", event=TodoUpdated(todo_id="t", status="ready"), created_at="t"
    )
    future = writer.submit(bad)
    after = writer.submit(todo("after"))
    with pytest.raises(InvalidSessionId):
        future.get(timeout=WAIT)
    assert 2 == after.get(timeout=WAIT)[0].seq


def test_a_store_that_raises_fails_the_drained_batch_at_once_instead_of_hanging(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(path)
    w = Writer(store)
    w.append(created())

    def broken(_requests: object) -> object:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(store, "append_batch", broken)
    future = w.submit(todo("lost"))
    # Before the fix the future never resolved: the caller waited for its whole timeout.
    with pytest.raises(StoreError, match="the disk went away"):
        future.get(timeout=5)
    # Later requests fail too (the writer stopped), whether refused or drained by on_failure.
    with pytest.raises(StoreError, match=r"stopped|crashed"):
        w.submit(todo("after")).get(timeout=5)
    w.stop()


def test_a_node_appended_through_the_writer_is_on_the_active_path(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    writer = Writer(store)
    sid = "sess_1"
    writer.append(
        AppendRequest(
            session_id=sid,
            event=SessionCreated(session_id=sid, cwd="/", root_agent_id="a"),
            created_at="t0",
        )
    )
    n1 = Node(
        node_id="n1", parent_id=None, agent_id="a", role="user", content=[TextBlock(text="hi")]
    )
    writer.append(
        AppendRequest(session_id=sid, event=NodeAppended(node=n1, activate=True), created_at="t1")
    )
    writer.stop()
    assert ["n1"] == [n.node_id for n in SQLiteStore(tmp_path / "s.sqlite").read_active_path(sid)]
