"""The storage writer actor: group commit, futures after commit, order, isolation, stop."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog.blocks import JsonBlock, TextBlock
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


# --- submit_group: one turn's events in one transaction (issue 17) ----------------------


class Commits:
    """An ``after_commit`` hook that keeps the events of each commit."""

    def __init__(self) -> None:
        self.batches: list[list[StoredEvent]] = []

    def __call__(self, _total: int, batch: list[StoredEvent]) -> None:
        self.batches.append(batch)


def test_a_group_commits_in_one_transaction_and_resolves_with_every_stored_event(
    path: Path,
) -> None:
    commits = Commits()
    writer = Writer(SQLiteStore(path), after_commit=commits)
    writer.append(created())
    group = [todo(str(i), run_id="r1") for i in range(7)]
    stored = writer.submit_group(group).get(timeout=WAIT)
    writer.stop()
    assert [1, 7] == [len(b) for b in commits.batches]
    assert [(f"r1#{i + 1}", i + 1) for i in range(7)] == [(e.event_id, e.run_seq) for e in stored]
    assert commits.batches[1] == stored


def test_a_group_is_never_split_across_commits_even_past_max_batch(path: Path) -> None:
    gate = Gate()
    writer = Writer(SQLiteStore(path), after_commit=gate, max_batch=4)
    first = writer.submit(created())
    assert gate.entered.wait(WAIT)
    singles = [writer.submit(todo(f"s{i}")) for i in range(3)]
    group = writer.submit_group([todo(f"g{i}") for i in range(6)])
    last = writer.submit(todo("after"))
    gate.release.set()
    _wait([first, *singles, group, last])
    writer.stop()
    # The three singles fill a batch the group does not fit; the group (6 > max_batch)
    # commits alone, whole; the single after it starts the next batch.
    assert [["s0", "s1", "s2"], [f"g{i}" for i in range(6)], ["after"]] == [
        [e.event.note for e in b if isinstance(e.event, TodoUpdated)] for b in gate.commits[1:]
    ]


def test_a_group_gives_each_requests_stored_events_and_artifacts_before_their_event(
    path: Path,
) -> None:
    writer = Writer(SQLiteStore(path, artifact_threshold=64))
    writer.append(created())
    big = Node(
        node_id="n1", parent_id=None, agent_id="a1", role="user",
        content=[JsonBlock(data={"rows": list(range(100))})],
    )  # fmt: skip
    future = writer.submit_group([todo("a"), appended(big), todo("b")])
    per_request = future.results(timeout=WAIT)
    flat = future.get(timeout=WAIT)
    writer.stop()
    assert [["todo_updated"], ["artifact_created", "node_appended"], ["todo_updated"]] == [
        [e.event_type for e in r] for r in per_request if isinstance(r, list)
    ]
    assert [e for r in per_request if isinstance(r, list) for e in r] == flat
    assert [2, 3, 4, 5] == [e.seq for e in flat]


def test_a_failing_request_of_a_group_raises_its_error_and_the_others_commit(
    writer: Writer, path: Path
) -> None:
    future = writer.submit_group([todo("a"), todo("x", sid=OTHER), todo("b")])
    with pytest.raises(UnknownSession):
        future.get(timeout=WAIT)
    ok1, failed, ok2 = future.results(timeout=WAIT)
    assert isinstance(failed, UnknownSession)
    assert isinstance(ok1, list) and isinstance(ok2, list)
    assert ["a", "b"] == [
        e.event.note for e in SQLiteStore(path).read_events(SID) if isinstance(e.event, TodoUpdated)
    ]


def test_an_empty_group_resolves_at_once_with_nothing(writer: Writer) -> None:
    future = writer.submit_group([])
    assert ([], []) == (future.get(timeout=0), future.results(timeout=0))


def test_a_single_requests_future_gives_one_result(writer: Writer) -> None:
    future = writer.submit(todo("one"))
    [only] = future.results(timeout=WAIT)
    assert isinstance(only, list)
    assert ["todo_updated"] == [e.event_type for e in only]
