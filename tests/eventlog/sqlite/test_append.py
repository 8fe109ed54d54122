"""The batch append: atomicity of a request, isolation within a batch, the retry pass."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

import apsw

from eventlog.errors import InvalidSessionId, StoreError
from eventlog.events import AgentCreated, TodoUpdated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from tests.eventlog.store_conformance import SID, append, appended, at, created, node, todo


def _store_failing_once_at(tmp_path: Path, step: str, error: BaseException) -> SQLiteStore:
    """Return a store holding session ``SID`` whose next pass through ``step`` raises ``error``."""
    armed = False

    def hook(name: str) -> None:
        nonlocal armed
        if armed and name == step:
            armed = False
            raise error

    store = SQLiteStore(tmp_path / "s.sqlite", fault_hook=hook)
    append(store, created())
    armed = True
    return store


# --- atomicity: a node and its event, both or neither ---------------------------------------


def test_a_failure_between_the_node_row_and_the_event_row_leaves_neither(
    tmp_path: Path,
) -> None:
    store = _store_failing_once_at(tmp_path, "before_event_row", StoreError("injected"))
    [result] = store.append_batch([appended(node("n1", run_id="r1"))])
    assert isinstance(result, StoreError)
    assert [] == store.read_nodes(SID)
    assert ["session_created"] == [e.event_type for e in store.read_events(SID)]
    assert store.read_session(SID).active_node_id is None
    # The counters the failed request took are given back: no gap, no skipped node_seq.
    [stored] = append(store, appended(node("n1", run_id="r1")))
    assert (2, 1, "r1#1") == (stored.seq, stored.run_seq, stored.event_id)
    assert 1 == store.read_node(SID, "n1").node_seq  # type: ignore[union-attr]
    store.close()


def test_an_unexpected_exception_mid_batch_rolls_back_the_whole_batch(tmp_path: Path) -> None:
    store = _store_failing_once_at(tmp_path, "before_event_row", RuntimeError("bug"))
    results = store.append_batch([todo("a"), appended(node("n1")), todo("b")])
    assert all(isinstance(r, StoreError) for r in results)
    assert 1 == len(store.read_events(SID))
    assert [] == store.read_nodes(SID)
    stored = append(store, todo("c"), appended(node("n1")))
    assert [2, 3] == [e.seq for e in stored]
    assert 1 == store.read_node(SID, "n1").node_seq  # type: ignore[union-attr]
    store.close()


def test_a_failure_before_the_materialised_rows_leaves_no_row(tmp_path: Path) -> None:
    store = _store_failing_once_at(tmp_path, "before_materialise", StoreError("injected"))
    [result] = store.append_batch([appended(node("n1"))])
    assert isinstance(result, StoreError)
    assert ([], 1) == (store.read_nodes(SID), len(store.read_events(SID)))
    store.close()


# --- isolation within a batch ---------------------------------------------------------------


def test_the_request_that_failed_the_optimistic_pass_is_not_run_again(tmp_path: Path) -> None:
    steps: list[str] = []

    def second_event_row_fails(name: str) -> None:
        steps.append(name)
        if steps == ["before_materialise", "before_event_row"] * 2:
            raise StoreError("injected")

    store = SQLiteStore(tmp_path / "s.sqlite", fault_hook=second_event_row_fails)
    append(store, created())
    steps.clear()
    results = store.append_batch([todo("a"), todo("b"), todo("c")])
    assert [False, True, False] == [isinstance(r, StoreError) for r in results]
    # Optimistic pass: a, then b fails. Savepoint pass: a and c only — b is not re-run.
    assert 4 == steps.count("before_materialise")
    assert [1, 2, 3] == [e.seq for e in store.read_events(SID)]
    store.close()


def _batch_with_a_bad_request_in_the_middle(
    tmp_path: Path, bad: AppendRequest
) -> tuple[list[object], list[int]]:
    """Append ``[todo a, bad, todo b]`` as one batch after the session's creation; return
    the batch's results and the seqs then stored."""
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    results: list[object] = list(store.append_batch([todo("a"), bad, todo("b")]))
    seqs = [e.seq for e in store.read_events(SID)]
    store.close()
    return results, seqs


def test_an_invalid_session_id_in_a_batch_does_not_stop_the_valid_ones(tmp_path: Path) -> None:
    bad = AppendRequest(
        session_id="a;DROP TABLE sessions",
        event=TodoUpdated(todo_id="t", status="ready"),
        created_at=at(),
    )
    results, seqs = _batch_with_a_bad_request_in_the_middle(tmp_path, bad)
    assert [list, InvalidSessionId, list] == [
        list if isinstance(r, list) else type(r) for r in results
    ]
    assert [1, 2, 3] == seqs


def test_an_unencodable_payload_fails_only_its_own_request(tmp_path: Path) -> None:
    bad = AppendRequest(
        session_id=SID,
        event=AgentCreated(agent_id="a1", agent_type="sub", metadata={"x": object()}),
        created_at="t",
    )
    results, seqs = _batch_with_a_bad_request_in_the_middle(tmp_path, bad)
    assert [False, True, False] == [isinstance(r, StoreError) for r in results]
    assert [1, 2, 3] == seqs


# --- a full disk mid-batch ----------------------------------------------------------------------


def test_a_full_database_mid_batch_names_the_cause_and_loses_no_committed_request(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created())
    writer = store._connections.writer()
    # SQLite's own SQLITE_FULL: the file may not grow. The first nodes fit in the free
    # space of the pages there are, a later one cannot — and SQLite then rolls the whole
    # transaction back by itself (the savepoint pass used to report only "no such
    # savepoint", hiding the cause).
    writer.pragma("max_page_count", writer.pragma("page_count"))
    results = store.append_batch([appended(node(f"n{i}", text="y" * 3000)) for i in range(30)])
    failures = [r for r in results if isinstance(r, StoreError)]
    assert [] != failures
    assert all("disk full" in str(r) for r in failures), failures
    # What was reported committed is there; nothing else is.
    committed = [e.seq for r in results if isinstance(r, list) for e in r]
    assert [1, *committed] == [e.seq for e in store.read_events(SID)]
    writer.pragma("max_page_count", 2**31)
    assert [len(store.read_events(SID)) + 1] == [e.seq for e in append(store, todo("c"))]
    store.close()


def test_a_full_disk_fails_the_later_requests_of_its_run_in_the_batch(
    tmp_path: Path,
) -> None:
    # A run's events are its causal history: on a full disk a smaller event may fit where
    # a larger one did not, and committing it would leave a gap a resume diverges on.
    full = apsw.FullError("database or disk is full")
    store = _store_failing_once_at(tmp_path, "before_event_row", full)
    results = store.append_batch(
        [todo("a", run_id="r1"), todo("b", run_id="r1"), todo("c", run_id="r2")]
    )
    kinds = [list if isinstance(r, list) else type(r) for r in results]
    assert [StoreError, StoreError, list] == kinds
    assert "disk full" in str(results[0])
    assert "after an earlier event of its run failed" in str(results[1])
    notes = [getattr(e.event, "note", None) for e in store.read_events(SID)]
    assert ["c"] == [n for n in notes if n]
    store.close()
