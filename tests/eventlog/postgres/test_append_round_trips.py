"""The PostgreSQL append's round trips, counted on the connection (not timed): one per
durable step when the writer knows the session, and the same numbers, chain and runs as
before when another writer appended in between."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import psycopg
import pytest
from psycopg._enums import Wait

from eventlog.errors import UnknownSession
from eventlog.postgres import PostgresStore
from eventlog.records import AppendRequest
from tests.eventlog.store_conformance import SID, append, appended, created, node, todo


class RoundTrips:
    """Count the times a psycopg connection waits for the server to answer."""

    def __init__(self) -> None:
        self.count = 0

    def spy(self, gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        """Forward ``gen``'s waits, counting the ones for reading (the client has sent
        everything and waits for the server: one round trip)."""
        try:
            value = gen.send(None)
            while True:
                if value == Wait.R:
                    self.count += 1
                value = gen.send((yield value))
        except StopIteration as e:
            return e.value

    def of(self, store: PostgresStore, *requests: AppendRequest) -> int:
        """Append ``requests`` as one batch; return the round trips it took."""
        before = self.count
        append(store, *requests)
        return self.count - before


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    counter = RoundTrips()
    wait = psycopg.Connection.wait

    def counting(conn: psycopg.Connection[Any], gen: Any, *args: Any, **kwargs: Any) -> Any:
        return wait(conn, counter.spy(gen), *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "wait", counting)
    yield counter


def test_a_durable_step_is_one_round_trip_when_the_writer_knows_the_session(
    pg_url: str, trips: RoundTrips
) -> None:
    store = PostgresStore(pg_url)
    assert 1 == trips.of(store, created())  # a session created by the batch is known
    steps = [trips.of(store, todo(str(i), run_id="r1")) for i in range(5)]
    nodes = []
    tip = None
    for i in range(5):
        n = node(f"n{i}", tip)
        nodes.append(trips.of(store, appended(n)))  # node row, active node, event: one trip
        tip = n.node_id
    group = trips.of(store, *[todo(f"g{i}", run_id="r2") for i in range(20)])
    assert ([1] * 5, [1] * 5, 1) == (steps, nodes, group)
    append(store, *[todo(f"c{i}", run_id="r2") for i in range(40)])  # a large batch: COPY
    assert 1 == trips.of(store, todo("last", run_id="r2"))
    assert 72 == store.check_chain(SID).events
    events = store.read_events(SID)
    assert list(range(1, 73)) == [e.seq for e in events]
    assert list(range(1, 62)) == [e.run_seq for e in events if e.run_id == "r2"]
    store.close()


def test_a_writer_numbers_on_after_another_writer_appended(pg_url: str, trips: RoundTrips) -> None:
    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    append(first, created(), todo("a", run_id="r1"))
    append(second, todo("b", run_id="r1"), todo("c", run_id="r2"))
    # first's head is stale: its one-trip pass is refused by the server and re-run.
    assert trips.of(first, todo("d", run_id="r1")) > 1
    assert 1 == trips.of(first, todo("e", run_id="r1"))
    append(second, todo("f", run_id="r2"))
    append(first, todo("g", run_id="r2"))
    events = first.read_events(SID)
    assert list(range(1, 9)) == [e.seq for e in events]
    assert [("r1", 1), ("r1", 2), ("r2", 1), ("r1", 3), ("r1", 4), ("r2", 2), ("r2", 3)] == [
        (e.run_id, e.run_seq) for e in events[1:]
    ]
    assert 8 == second.check_chain(SID).events
    first.close()
    second.close()


def test_a_session_deleted_by_another_store_is_unknown_to_a_writer_that_knew_it(
    pg_url: str,
) -> None:
    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    append(first, created(), todo("a", run_id="r1"))
    second.delete_session(SID)
    with pytest.raises(UnknownSession):
        append(first, todo("b", run_id="r1"))
    append(second, created(), todo("c", run_id="r1"))  # the id again, a new history
    append(first, todo("d", run_id="r1"))
    assert [(1, None), (2, 1), (3, 2)] == [(e.seq, e.run_seq) for e in first.read_events(SID)]
    assert 3 == first.check_chain(SID).events
    first.close()
    second.close()
