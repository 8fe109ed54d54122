"""The coordination contract (leases and the run queue), written once and run by every
backend: SQLite (``coord.sqlite``) and PostgreSQL (a real server, ``pg_url``).

A backend's test class subclasses :class:`CoordConformance` and overrides the
``make_coord`` fixture: a factory returning a *new* handle (its own connection) on the
*same* database each call, with the given clock — two handles are two processes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from actors.runtime.coord.protocol import Coordinator, RunSpec, worker_lease

SID = "sess_20260101_000000_0001"
OTHER_SID = "sess_20260101_000000_0002"


class Clock:
    """A clock the test moves: expiry without sleeping."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


CoordFactory = Callable[[Clock], Coordinator]


class CoordConformance:
    @pytest.fixture
    def make_coord(self) -> CoordFactory:
        raise NotImplementedError

    @pytest.fixture
    def clock(self) -> Clock:
        return Clock()

    @pytest.fixture
    def coord(self, make_coord: CoordFactory, clock: Clock) -> Iterator[Coordinator]:
        handle = make_coord(clock)
        yield handle
        handle.close()

    # --- leases ----------------------------------------------------------------------

    def test_a_free_lease_is_taken_and_a_held_one_refused(self, coord: Coordinator) -> None:
        assert coord.acquire(SID, "a", 10)
        assert not coord.acquire(SID, "b", 10)
        holder = coord.holder(SID)
        assert holder is not None
        assert "a" == holder.owner

    def test_the_owner_takes_its_own_lease_again(self, coord: Coordinator, clock: Clock) -> None:
        assert coord.acquire(SID, "a", 10)
        clock.now += 5
        assert coord.acquire(SID, "a", 10)
        holder = coord.holder(SID)
        assert holder is not None
        assert clock.now + 10 == holder.expires_at

    def test_an_expired_lease_goes_to_the_next_taker(
        self, coord: Coordinator, clock: Clock
    ) -> None:
        assert coord.acquire(SID, "a", 10)
        clock.now += 10
        assert coord.holder(SID) is None
        assert [SID] == [lease.name for lease in coord.expired()]
        assert coord.acquire(SID, "b", 10)
        holder = coord.holder(SID)
        assert holder is not None
        assert "b" == holder.owner
        assert [] == coord.expired()

    def test_renewing_extends_every_lease_of_the_owner_and_no_other(
        self, coord: Coordinator, clock: Clock
    ) -> None:
        coord.acquire(SID, "a", 10)
        coord.acquire(worker_lease("a"), "a", 10)
        coord.acquire(OTHER_SID, "b", 10)
        clock.now += 8
        assert {SID, worker_lease("a")} == coord.renew("a", 10)
        clock.now += 8
        assert {OTHER_SID} == {lease.name for lease in coord.expired()}
        assert not coord.acquire(SID, "b", 10)

    def test_release_drops_only_the_owners_lease(self, coord: Coordinator) -> None:
        coord.acquire(SID, "a", 10)
        coord.release(SID, "b")
        assert coord.holder(SID) is not None
        coord.release(SID, "a")
        assert coord.holder(SID) is None
        assert coord.acquire(SID, "b", 10)

    def test_release_all_drops_every_lease_of_the_owner(self, coord: Coordinator) -> None:
        coord.acquire(SID, "a", 10)
        coord.acquire(OTHER_SID, "a", 10)
        coord.acquire(worker_lease("b"), "b", 10)
        coord.release_all("a")
        assert coord.holder(SID) is None
        assert coord.holder(OTHER_SID) is None
        assert coord.holder(worker_lease("b")) is not None

    def test_of_many_concurrent_takers_exactly_one_wins(
        self, make_coord: CoordFactory, clock: Clock
    ) -> None:
        handles = [make_coord(clock) for _ in range(6)]
        wins: list[str] = []
        barrier = threading.Barrier(len(handles))

        def take(i: int) -> None:
            barrier.wait()
            if handles[i].acquire(SID, f"owner{i}", 10):
                wins.append(f"owner{i}")

        _on_threads(handles, take)
        assert 1 == len(wins)

    # --- the run queue ---------------------------------------------------------------

    def test_queued_runs_are_taken_oldest_first(self, coord: Coordinator) -> None:
        first = coord.submit(RunSpec(prompt="one", model="demo"))
        second = coord.submit(RunSpec(prompt="two", model="demo", tools="demo"))
        assert "queued" == first.status
        taken = coord.take("a")
        assert taken is not None
        assert (first.id, "running", "a", 1) == (taken.id, taken.status, taken.owner, 1)
        taken2 = coord.take("b")
        assert taken2 is not None
        assert second.id == taken2.id
        assert "demo" == taken2.tools
        assert coord.take("c") is None

    def test_a_sessions_runs_wait_for_its_run_in_progress(self, coord: Coordinator) -> None:
        first = coord.submit(RunSpec(prompt="one", session_id=SID))
        second = coord.submit(RunSpec(prompt="two", session_id=SID))
        other = coord.submit(RunSpec(prompt="three", session_id=OTHER_SID))
        taken = coord.take("a")
        assert taken is not None
        assert first.id == taken.id
        nxt = coord.take("b")
        assert nxt is not None
        assert other.id == nxt.id  # the second run of SID waits
        assert coord.take("b") is None
        coord.finish(first.id, "a", "completed", run="r1", error=None)
        last = coord.take("b")
        assert last is not None
        assert second.id == last.id

    def test_a_session_leased_by_another_owner_is_not_taken(
        self, coord: Coordinator, clock: Clock
    ) -> None:
        coord.submit(RunSpec(prompt="one", session_id=SID))
        coord.acquire(SID, "embedded", 10)
        assert coord.take("a") is None
        assert coord.take("embedded") is not None
        coord.requeue(1, "embedded")
        clock.now += 10  # the lease lapses
        assert coord.take("a") is not None

    def test_attach_finish_and_requeue_belong_to_the_owner(self, coord: Coordinator) -> None:
        row = coord.submit(RunSpec(prompt="one"))
        coord.take("a")
        coord.attach(row.id, "b", SID, 0)  # not b's: ignored
        coord.attach(row.id, "a", SID, 2)
        coord.finish(row.id, "b", "completed", run="r", error=None)  # ignored
        got = coord.get(row.id)
        assert got is not None
        assert (SID, 2, "running") == (got.session_id, got.runs_before, got.status)
        coord.requeue(row.id, "a")
        again = coord.get(row.id)
        assert again is not None
        assert ("queued", None, None) == (again.status, again.owner, again.runs_before)
        coord.take("c")
        coord.finish(row.id, "c", "completed", run="r9", error=None)
        done = coord.get(row.id)
        assert done is not None
        assert ("done", "completed", "r9", 2) == (done.status, done.outcome, done.run_id, 2)
        assert 2 == done.attempts

    def test_a_dead_owners_runs_are_orphans_and_one_adopter_wins(
        self, coord: Coordinator, clock: Clock
    ) -> None:
        row = coord.submit(RunSpec(prompt="one"))
        coord.acquire(worker_lease("a"), "a", 10)
        coord.take("a")
        assert [] == coord.orphans()
        clock.now += 10
        assert [row.id] == [o.id for o in coord.orphans()]
        adopted = coord.adopt(row.id, "a", "b")
        assert adopted is not None
        assert ("b", 2) == (adopted.owner, adopted.attempts)
        assert coord.adopt(row.id, "a", "c") is None

    def test_a_live_owners_run_cannot_be_adopted(self, coord: Coordinator) -> None:
        row = coord.submit(RunSpec(prompt="one"))
        coord.acquire(worker_lease("a"), "a", 10)
        coord.take("a")
        assert coord.adopt(row.id, "a", "b") is None

    def test_concurrent_takers_take_every_run_exactly_once(
        self, make_coord: CoordFactory, clock: Clock
    ) -> None:
        setup = make_coord(clock)
        ids = {setup.submit(RunSpec(prompt=f"p{i}")).id for i in range(40)}
        handles = [make_coord(clock) for _ in range(4)]
        taken: list[int] = []
        lock = threading.Lock()

        def drain(i: int) -> None:
            while (row := handles[i].take(f"w{i}")) is not None:
                with lock:
                    taken.append(row.id)

        _on_threads(handles, drain)
        assert sorted(ids) == sorted(taken)
        assert [1] * 40 == [r.attempts for r in setup.list_runs(100)]
        setup.close()

    def test_list_runs_returns_the_newest_oldest_first(self, coord: Coordinator) -> None:
        for i in range(5):
            coord.submit(RunSpec(prompt=f"p{i}"))
        assert ["p2", "p3", "p4"] == [r.prompt for r in coord.list_runs(3)]

    def test_depth_counts_each_status_and_names_the_oldest_waiting_run(
        self, coord: Coordinator
    ) -> None:
        empty = coord.depth()
        assert (0, 0, 0, None) == (empty.queued, empty.running, empty.done, empty.oldest_queued)
        rows = [coord.submit(RunSpec(prompt=f"p{i}")) for i in range(4)]
        coord.take("a")
        coord.take("a")
        coord.finish(rows[0].id, "a", "completed", run=None, error=None)

        depth = coord.depth()
        quick = coord.depth(count_done=False)

        assert (2, 1, 1) == (depth.queued, depth.running, depth.done)
        assert depth.oldest_queued is not None
        assert (rows[2].id, "queued") == (depth.oldest_queued.id, depth.oldest_queued.status)
        assert (2, 1, None) == (quick.queued, quick.running, quick.done)

    def test_a_listener_is_woken_by_a_submit_a_requeue_and_a_finish_of_another_handle(
        self, make_coord: CoordFactory, clock: Clock
    ) -> None:
        listener, other = make_coord(clock), make_coord(clock)
        woken = threading.Event()
        try:
            if not listener.listen(woken.set):
                return  # this backend cannot tell: its serving loop polls
            assert woken.wait(5)  # once listening: anything missed before
            for step in ("submit", "take", "requeue", "take", "finish"):
                woken.clear()
                if step == "submit":
                    row = other.submit(RunSpec(prompt="p"))
                elif step == "take":
                    assert other.take("a") is not None
                    continue
                elif step == "requeue":
                    other.requeue(row.id, "a")
                else:
                    other.finish(row.id, "a", "completed", run=None, error=None)
                assert woken.wait(5), f"no wake-up after a {step}"
        finally:
            listener.close()
            other.close()


def _on_threads(handles: list[Coordinator], target: Callable[[int], None]) -> None:
    """Run ``target(i)`` for every handle on its own thread, wait, close the handles."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(len(handles))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h in handles:
        h.close()
