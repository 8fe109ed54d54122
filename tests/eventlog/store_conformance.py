"""The event store's contract, written once and run by every backend.

A backend's test module subclasses :class:`StoreConformance` and overrides the
``make_store`` fixture with a factory that opens *its* store (on real storage, never
a mock). Calling the factory twice must return two handles on the *same* data, so
the suite can check what survives a reopen::

    class TestSQLiteStore(StoreConformance):
        @pytest.fixture
        def make_store(self, tmp_path: Path) -> StoreFactory:
            return lambda **kw: SQLiteStore(tmp_path / "s.sqlite", **kw)

The suite talks to the store only through ``append_batch`` and the readers; the
writer actor is tested on its own in ``test_writer.py``.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _fsync_spy import spy_fsync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.blocks import ArtifactRefBlock, JsonBlock, TextBlock
from eventlog.codec import encode
from eventlog.errors import (
    ClewError,
    DeletedSession,
    InvalidSessionId,
    StoreError,
    UnknownSession,
)
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    RunWaiting,
    SessionArchived,
    SessionCreated,
    TodoUpdated,
    ToolFailed,
    Usage,
)
from eventlog.records import (
    AppendRequest,
    ChainStatus,
    NodeRow,
    SessionRow,
    StoredEvent,
)
from eventlog.store import DeletesSessions, EventStore
from tests.eventlog.seed_conformance import SeedConformance
from tests.strategies import events

SID = "sess_20260101_000000_a1b2"
OTHER = "sess_20260101_000001_c3d4"
BAD_SESSION_IDS: list[Any] = ["../x", "a;DROP TABLE sessions", "", "x" * 300, None, 7]


#: ``make_store(**options)``: a new handle on the test's store (options: artifact_threshold).
StoreFactory = Callable[..., EventStore]

_clock = itertools.count(1)


def at() -> str:
    """Return a fresh, increasing timestamp (the store never reads the clock itself)."""
    return f"2026-01-01T00:00:00.{next(_clock):06d}+00:00"


def req(
    event: Event,
    sid: str = SID,
    *,
    run_id: str | None = None,
    agent_id: str | None = "a1",
    created_at: str | None = None,
) -> AppendRequest:
    return AppendRequest(
        session_id=sid,
        event=event,
        created_at=created_at or at(),
        agent_id=agent_id,
        run_id=run_id,
    )


def created(sid: str = SID) -> AppendRequest:
    return req(SessionCreated(session_id=sid, cwd="/work", root_agent_id="a1"), sid)


def node(
    node_id: str,
    parent_id: str | None = None,
    *,
    text: str = "hi",
    role: Any = "user",
    run_id: str | None = None,
) -> Node:
    return Node(
        node_id=node_id,
        parent_id=parent_id,
        agent_id="a1",
        run_id=run_id,
        role=role,
        content=[TextBlock(text=text)],
    )


def appended(n: Node, *, activate: bool = True, sid: str = SID) -> AppendRequest:
    return req(NodeAppended(node=n, activate=activate), sid, run_id=n.run_id)


def todo(note: str, *, run_id: str | None = None, sid: str = SID) -> AppendRequest:
    return req(TodoUpdated(todo_id="t1", status="running", note=note), sid, run_id=run_id)


def append(store: EventStore, *requests: AppendRequest) -> list[StoredEvent]:
    """Append ``requests`` in one batch; raise the first error; return every stored event."""
    out: list[StoredEvent] = []
    for result in store.append_batch(requests):
        if isinstance(result, ClewError):
            raise result
        out.extend(result)
    return out


def _backend_property(max_examples: int) -> Any:
    """Hypothesis settings of the suite's properties: each backend's subclass runs them
    (a different executor by design), on a store fixture made per test."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )


class StoreConformance(SeedConformance):
    """The event store contract. Subclass and override :meth:`make_store`, and
    :class:`SeedConformance`'s two SQL hooks."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        """Return a factory of handles on one fresh store under ``tmp_path``."""
        raise NotImplementedError("a backend's test class must override make_store")

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[EventStore]:
        s = make_store()
        yield s
        s.close()

    @pytest.fixture
    def session(self, store: EventStore) -> EventStore:
        append(store, created())
        return store

    # --- sessions ---------------------------------------------------------------------------

    def test_a_new_store_lists_no_sessions(self, store: EventStore) -> None:
        assert [] == store.list_sessions()

    def test_session_created_writes_the_session_row_and_its_first_event(
        self, store: EventStore
    ) -> None:
        request = created()
        [stored] = append(store, request)
        expected_row = SessionRow(
            session_id=SID,
            cwd="/work",
            root_agent_id="a1",
            active_node_id=None,
            parent_session_id=None,
            status="active",
            metadata={},
            created_at=request.created_at,
            updated_at=request.created_at,
        )
        assert expected_row == store.read_session(SID)
        assert [expected_row] == store.list_sessions()
        expected_event = StoredEvent(
            event_id=f"{SID}#s1",
            seq=1,
            run_seq=None,
            agent_id="a1",
            run_id=None,
            level="info",
            event_type="session_created",
            node_id=None,
            tool_call_id=None,
            created_at=request.created_at,
            event=request.event,
        )
        assert expected_event == stored
        assert [expected_event] == store.read_events(SID)

    def test_sessions_are_listed_oldest_first(self, store: EventStore) -> None:
        append(store, created(OTHER))
        append(store, created(SID))
        assert [OTHER, SID] == [s.session_id for s in store.list_sessions()]

    def test_session_archived_sets_the_status(self, session: EventStore) -> None:
        append(session, req(SessionArchived(reason="done")))
        assert "archived" == session.read_session(SID).status

    def test_updated_at_is_the_created_at_of_the_sessions_last_event(
        self, session: EventStore
    ) -> None:
        last = todo("x")
        append(session, todo("w"), last)
        assert last.created_at == session.read_session(SID).updated_at

    def test_two_sessions_keep_separate_timelines(self, session: EventStore) -> None:
        append(session, created(OTHER), todo("a"), todo("b", sid=OTHER), todo("c"))
        assert [1, 2, 3] == [e.seq for e in session.read_events(SID)]
        assert [1, 2] == [e.seq for e in session.read_events(OTHER)]

    # --- the timeline -----------------------------------------------------------------------

    def test_seq_is_gapless_across_single_appends_and_batches(self, session: EventStore) -> None:
        append(session, todo("1"))
        append(session, *(todo(str(i)) for i in range(50)))
        append(session, todo("last"))
        assert list(range(1, 54)) == [e.seq for e in session.read_events(SID)]

    def test_the_events_read_back_are_the_events_stored(self, session: EventStore) -> None:
        stored = append(session, todo("a", run_id="r1"), todo("b"))
        assert stored == session.read_events(SID)[1:]

    def test_read_events_returns_what_follows_a_seq_up_to_a_limit(
        self, session: EventStore
    ) -> None:
        append(session, *(todo(str(i)) for i in range(9)))
        assert [4, 5, 6] == [e.seq for e in session.read_events(SID, after_seq=3, limit=3)]
        assert [9, 10] == [e.seq for e in session.read_events(SID, after_seq=8)]
        assert [] == session.read_events(SID, after_seq=10)

    def test_run_seq_counts_each_run_separately_in_append_order(self, session: EventStore) -> None:
        stored = append(
            session,
            todo("r1-1", run_id="r1"),
            todo("r2-1", run_id="r2"),
            todo("none"),
            todo("r1-2", run_id="r1"),
            todo("r2-2", run_id="r2"),
            todo("r1-3", run_id="r1"),
        )
        actual = [(e.event_id, e.seq, e.run_seq) for e in stored]
        expected = [
            ("r1#1", 2, 1),
            ("r2#1", 3, 1),
            (f"{SID}#s4", 4, None),
            ("r1#2", 5, 2),
            ("r2#2", 6, 2),
            ("r1#3", 7, 3),
        ]
        assert expected == actual

    def test_the_hash_chain_covers_every_event_appended_to_a_new_session(
        self, session: EventStore
    ) -> None:
        append(session, todo("a", run_id="r1"), todo("b"))
        append(session, todo("c", run_id="r1"))
        assert ChainStatus(session_id=SID, events=4, legacy_events=0) == session.check_chain(SID)

    def test_read_run_returns_one_runs_events_in_run_seq_order(self, session: EventStore) -> None:
        append(session, *(todo(f"{r}-{i}", run_id=r) for i in range(3) for r in ("r1", "r2")))
        actual = [(e.run_seq, e.event.note) for e in session.read_run(SID, "r2")]  # type: ignore[union-attr]
        assert [(1, "r2-0"), (2, "r2-1"), (3, "r2-2")] == actual
        assert [] == session.read_run(SID, "nope")

    def test_level_and_tool_call_id_are_taken_from_the_event(self, session: EventStore) -> None:
        [stored] = append(
            session,
            req(ToolFailed(tool_call_id="c1", tool_name="sh", error_type="E", message="m")),
        )
        assert ("warning", "tool_failed", "c1") == (
            stored.level,
            stored.event_type,
            stored.tool_call_id,
        )

    @_backend_property(max_examples=30)
    @given(batch=st.lists(events(), min_size=1, max_size=8))
    def test_any_event_without_a_materialised_row_reads_back_equal(
        self, store: EventStore, batch: list[Event]
    ) -> None:
        # One store for every example: each example gets a fresh session.
        sid = f"sess_h{next(_clock)}"
        append(store, created(sid))
        plain = [
            e
            for e in batch
            if not isinstance(
                e, SessionCreated | NodeAppended | AgentCreated | RunStarted | ArtifactCreated
            )
        ]
        requests = [req(e, sid, run_id="r1" if i % 2 else None) for i, e in enumerate(plain)]
        append(store, *requests)
        assert plain == [e.event for e in store.read_events(sid, after_seq=1)]

    # --- nodes ------------------------------------------------------------------------------

    def test_a_node_and_its_event_are_stored_together(self, session: EventStore) -> None:
        request = appended(node("n1", run_id="r1"))
        [stored] = append(session, request)
        assert ("r1#1", "node_appended", "n1") == (
            stored.event_id,
            stored.event_type,
            stored.node_id,
        )
        expected = NodeRow(
            node_id="n1",
            node_seq=1,
            parent_id=None,
            agent_id="a1",
            run_id="r1",
            role="user",
            node_type="message",
            content=[TextBlock(text="hi")],
            metadata={},
            token_count=None,
            created_at=request.created_at,
        )
        assert expected == session.read_node(SID, "n1")

    def test_node_seq_is_gapless_in_creation_order_apart_from_seq(
        self, session: EventStore
    ) -> None:
        append(session, appended(node("n1")), todo("x"), appended(node("n2", "n1")))
        append(session, appended(node("n3", "n1")))
        assert [("n1", 1), ("n2", 2), ("n3", 3)] == [
            (n.node_id, n.node_seq) for n in session.read_nodes(SID)
        ]

    def test_every_read_of_a_node_returns_what_its_event_carried(self, session: EventStore) -> None:
        # The content, metadata, run and token count are read from the node's event
        # (stored once): seq and node_seq differ here, and each node has every field set.
        first = Node(
            node_id="n1",
            parent_id=None,
            agent_id="a1",
            run_id="r1",
            role="user",
            node_type="task_instruction",
            content=[TextBlock(text="héllo\n\u2028"), JsonBlock(data={"k": [1, None]})],
            metadata={"why": {"nested": True}},
            token_count=7,
        )
        second = Node(node_id="n2", parent_id="n1", agent_id="a2", role="assistant", content=[])
        appended_first, _, appended_second = append(
            session, appended(first), todo("between"), appended(second, activate=True)
        )
        rows = session.read_nodes(SID)
        expected = [
            NodeRow(
                node_seq=i,
                created_at=stored.created_at,
                **msgspec.structs.asdict(n),
            )
            for i, (n, stored) in enumerate(
                [(first, appended_first), (second, appended_second)], start=1
            )
        ]
        assert expected == rows
        assert expected == session.read_active_path(SID)
        assert expected[1:] == session.read_children(SID, "n1")
        assert expected[0] == session.read_node(SID, "n1")

    def test_read_node_of_a_missing_node_is_none(self, session: EventStore) -> None:
        assert session.read_node(SID, "nope") is None

    def test_read_children_returns_the_children_in_node_seq_order(
        self, session: EventStore
    ) -> None:
        append(
            session,
            appended(node("root")),
            appended(node("b", "root")),
            appended(node("a", "root")),
            appended(node("deep", "a")),
        )
        assert ["b", "a"] == [n.node_id for n in session.read_children(SID, "root")]
        assert [] == session.read_children(SID, "deep")

    def test_node_appended_with_activate_moves_the_active_node(self, session: EventStore) -> None:
        append(session, appended(node("n1")), appended(node("n2", "n1"), activate=False))
        assert "n1" == session.read_session(SID).active_node_id

    def test_active_node_switched_moves_the_active_node(self, session: EventStore) -> None:
        append(session, appended(node("n1")), appended(node("n2", "n1")))
        [stored] = append(session, req(ActiveNodeSwitched(from_node_id="n2", to_node_id="n1")))
        assert "n1" == stored.node_id
        assert "n1" == session.read_session(SID).active_node_id

    def test_the_active_path_runs_from_the_root_to_the_active_node_without_siblings(
        self, session: EventStore
    ) -> None:
        append(
            session,
            appended(node("u1")),
            appended(node("a1", "u1", role="assistant")),
            appended(node("u2", "a1")),
            appended(node("u2b", "a1")),  # a sibling branch, now active
            appended(node("a2b", "u2b", role="assistant")),
        )
        assert ["u1", "a1", "u2b", "a2b"] == [n.node_id for n in session.read_active_path(SID)]
        append(session, req(ActiveNodeSwitched(from_node_id="a2b", to_node_id="u2")))
        assert ["u1", "a1", "u2"] == [n.node_id for n in session.read_active_path(SID)]
        assert ["u1", "a1"] == [n.node_id for n in session.read_active_path(SID, "a1")]

    def test_the_active_path_of_a_session_without_nodes_is_empty(self, session: EventStore) -> None:
        assert [] == session.read_active_path(SID)

    @_backend_property(max_examples=25)
    @given(moves=st.lists(st.tuples(st.booleans(), st.integers(min_value=0)), max_size=25))
    def test_the_node_tree_matches_a_simple_model_after_any_appends_and_switches(
        self, store: EventStore, moves: list[tuple[bool, int]]
    ) -> None:
        sid = f"sess_m{next(_clock)}"
        append(store, created(sid))
        parents: dict[str, str | None] = {}
        active: str | None = None
        for i, (is_switch, pick) in enumerate(moves):
            if is_switch and parents:
                target = sorted(parents)[pick % len(parents)]
                append(store, req(ActiveNodeSwitched(from_node_id=active, to_node_id=target), sid))
                active = target
            else:
                nid = f"n{i}"
                parents[nid] = active
                append(store, appended(node(nid, active), sid=sid))
                active = nid
        expected_path: list[str] = []
        cursor = active
        while cursor is not None:
            expected_path.insert(0, cursor)
            cursor = parents[cursor]
        assert expected_path == [n.node_id for n in store.read_active_path(sid)]
        assert active == store.read_session(sid).active_node_id
        assert parents == {n.node_id: n.parent_id for n in store.read_nodes(sid)}

    @_backend_property(max_examples=25)
    @given(
        moves=st.lists(
            st.tuples(st.sampled_from(["append", "branch", "read"]), st.integers(min_value=0)),
            max_size=30,
        )
    )
    def test_a_path_read_again_after_any_appends_is_what_a_new_handle_reads(
        self, make_store: StoreFactory, moves: list[tuple[str, int]]
    ) -> None:
        # A store may keep the last path it read (SQLite does); a new handle reads afresh.
        store = make_store()
        sid = f"sess_p{next(_clock)}"
        append(store, created(sid))
        ids: list[str] = []
        tip: str | None = None
        for i, (move, pick) in enumerate(moves):
            if move == "read" and ids:
                at_node = ids[pick % len(ids)]
                fresh = make_store()
                assert fresh.read_active_path(sid, at_node) == store.read_active_path(sid, at_node)
                fresh.close()
                continue
            parent = ids[pick % len(ids)] if move == "branch" and ids else tip
            nid = f"n{i}"
            append(store, appended(node(nid, parent, text=f"text {i}"), sid=sid))
            ids.append(nid)
            tip = nid
            fresh = make_store()
            assert fresh.read_active_path(sid) == store.read_active_path(sid)
            fresh.close()
        store.close()

    def test_the_path_of_a_session_made_again_under_its_id_is_the_new_sessions(
        self, make_store: StoreFactory
    ) -> None:
        store = make_store()
        if not isinstance(store, DeletesSessions):
            pytest.skip("this backend cannot delete sessions")
        # Made again with the same created_at and the same node ids: only the content tells
        # the two sessions apart, so a kept path must be checked against what it leads to.
        made = req(SessionCreated(session_id=SID, cwd="/work", root_agent_id="a1"), SID)
        append(store, made, appended(node("n1", text="old")), appended(node("n2", "n1")))
        assert ["n1", "n2"] == [n.node_id for n in store.read_active_path(SID)]
        store.delete_session(SID, deleted_at="2026-01-02T00:00:00+00:00")
        append(
            store,
            made,
            appended(node("n1", text="new")),
            appended(node("n2", "n1", text="new too")),
            appended(node("n3", "n2")),
        )
        path = store.read_active_path(SID, "n3")
        assert [("n1", "new"), ("n2", "new too"), ("n3", "hi")] == [
            (n.node_id, n.content[0].text) for n in path if isinstance(n.content[0], TextBlock)
        ]
        assert make_store().read_active_path(SID, "n3") == path

    # --- agents, runs, artifacts -------------------------------------------------------------

    def test_agent_created_and_status_changes_are_materialised(self, session: EventStore) -> None:
        first = req(
            AgentCreated(
                agent_id="a2",
                agent_type="sub",
                parent_agent_id="a1",
                created_by_run_id="r1",
                role="coder",
                purpose="worker",
            )
        )
        append(session, first)
        [agent] = session.read_agents(SID)
        assert ("a2", "sub", "idle", "a1", "r1") == (
            agent.agent_id,
            agent.agent_type,
            agent.status,
            agent.parent_agent_id,
            agent.created_by_run_id,
        )
        assert {"role": "coder", "purpose": "worker"} == agent.metadata
        last = req(AgentStatusChanged(agent_id="a2", status="completed", result={"ok": True}))
        append(session, req(AgentStatusChanged(agent_id="a2", status="running")), last)
        [agent] = session.read_agents(SID)
        assert ("completed", {"ok": True}, first.created_at, last.created_at) == (
            agent.status,
            agent.result,
            agent.created_at,
            agent.updated_at,
        )

    def test_run_started_and_run_ended_are_materialised(self, session: EventStore) -> None:
        append(
            session,
            req(
                RunStarted(run_id="r1", agent_id="a1", phase="route", start_node_id="n1"),
                run_id="r1",
            ),
        )
        [run] = session.read_runs(SID)
        assert ("r1", "a1", "running", "n1", None) == (
            run.run_id,
            run.agent_id,
            run.status,
            run.start_node_id,
            run.end_reason,
        )
        assert "route" == run.metadata["phase"]
        ended = RunEnded(
            run_id="r1",
            status="failed",
            end_reason="max_turns",
            end_node_id="n9",
            turn_count=4,
            usage=Usage(input_tokens=7),
            error={"why": "x"},
        )
        append(session, req(ended, run_id="r1"))
        [run] = session.read_runs(SID)
        assert ("failed", "max_turns", "n9", 4, {"why": "x"}) == (
            run.status,
            run.end_reason,
            run.end_node_id,
            run.turn_count,
            run.error,
        )
        assert msgspec.to_builtins(Usage(input_tokens=7)) == run.usage

    def test_run_statuses_are_the_runs_ids_agents_and_statuses_in_the_same_order(
        self, session: EventStore
    ) -> None:
        for i, agent in enumerate(["a1", "a2", "a1"], 1):
            rid = f"r{i}"
            started = RunStarted(run_id=rid, agent_id=agent, phase="route", start_node_id="n1")
            append(session, req(started, run_id=rid, agent_id=agent))
        ended = RunEnded(run_id="r2", status="completed", end_reason="done", turn_count=1)
        append(session, req(ended, run_id="r2", agent_id="a2"))
        assert [("r1", "a1", "running"), ("r2", "a2", "completed"), ("r3", "a1", "running")] == (
            session.read_run_statuses(SID)
        )
        assert [(r.run_id, r.agent_id, r.status) for r in session.read_runs(SID)] == (
            session.read_run_statuses(SID)
        )
        with pytest.raises(UnknownSession):
            session.read_run_statuses("sess_20260101_000009_ffff")

    def test_a_new_run_check_is_the_unfinished_runs_and_the_agents_run_count(
        self, session: EventStore
    ) -> None:
        for i, agent in enumerate(["a1", "a2", "a1", "a1", "a2"], 1):
            rid = f"r{i}"
            started = RunStarted(run_id=rid, agent_id=agent, phase="route", start_node_id="n1")
            append(session, req(started, run_id=rid, agent_id=agent))
        for rid, agent in (("r1", "a1"), ("r2", "a2")):
            ended = RunEnded(run_id=rid, status="completed", end_reason="done", turn_count=1)
            append(session, req(ended, run_id=rid, agent_id=agent))
        append(session, req(RunWaiting(run_id="r4", reason="approval"), run_id="r4"))
        statuses = session.read_run_statuses(SID)
        check = session.read_new_run_check(SID, "a1")
        assert [s for s in statuses if s[2] in ("running", "pending", "waiting")] == (
            check.unfinished
        )
        assert [("r3", "a1", "running"), ("r4", "a1", "waiting"), ("r5", "a2", "running")] == (
            check.unfinished
        )
        assert 3 == check.owned
        assert 0 == session.read_new_run_check(SID, "a9").owned
        with pytest.raises(UnknownSession):
            session.read_new_run_check("sess_20260101_000009_ffff", "a1")

    def test_artifact_created_is_materialised(self, session: EventStore) -> None:
        event = ArtifactCreated(
            artifact_id="art_1",
            path=f"{SID}/x.json",
            filename="x.json",
            size_bytes=3,
            sha256="ab",
            summary="s",
            tool_call_id="c1",
        )
        append(session, req(event, run_id="r1"))
        [row] = session.read_artifacts(SID)
        assert ("art_1", SID, "r1", "c1", f"{SID}/x.json", 3, "s") == (
            row.artifact_id,
            row.session_id,
            row.run_id,
            row.tool_call_id,
            row.path,
            row.size_bytes,
            row.summary,
        )

    def test_materialised_rows_belong_to_their_session_only(self, session: EventStore) -> None:
        append(
            session,
            created(OTHER),
            req(AgentCreated(agent_id="a9", agent_type="orchestrator"), OTHER),
        )
        assert [] == session.read_agents(SID)
        assert ["a9"] == [a.agent_id for a in session.read_agents(OTHER)]

    def test_an_event_naming_another_sessions_agent_or_run_leaves_that_row_alone(
        self, session: EventStore
    ) -> None:
        append(
            session,
            created(OTHER),
            req(AgentCreated(agent_id="a9", agent_type="orchestrator"), OTHER),
            req(RunStarted(run_id="r9", agent_id="a9"), OTHER, run_id="r9"),
        )
        agents_before, runs_before = session.read_agents(OTHER), session.read_runs(OTHER)
        append(
            session,
            req(AgentStatusChanged(agent_id="a9", status="failed", result={"x": 1})),
            req(RunEnded(run_id="r9", status="failed", end_reason="failed"), run_id="r9"),
        )
        assert agents_before == session.read_agents(OTHER)
        assert runs_before == session.read_runs(OTHER)

    # --- oversize JSON --------------------------------------------------------------------

    def test_an_oversize_json_block_becomes_a_fsynced_artifact_file_and_a_ref(
        self, make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        store = make_store(artifact_threshold=1024)
        append(store, created())
        synced = spy_fsync(monkeypatch)
        big = {"rows": ["x" * 100] * 40}
        small = {"k": "v"}
        n = Node(
            node_id="n1",
            parent_id=None,
            agent_id="a1",
            role="tool",
            content=[JsonBlock(data=big, summary="forty rows"), JsonBlock(data=small)],
        )
        art, stored = append(store, appended(n))
        monkeypatch.undo()

        assert ("artifact_created", "node_appended") == (art.event_type, stored.event_type)
        assert art.seq + 1 == stored.seq
        assert isinstance(art.event, ArtifactCreated)
        data = encode(big)
        assert data == store.artifacts.read(art.event.path)
        assert (len(data), "forty rows", "n1") == (
            art.event.size_bytes,
            art.event.summary,
            art.event.node_id,
        )
        expected_content = [
            ArtifactRefBlock(artifact_id=art.event.artifact_id, summary="forty rows"),
            JsonBlock(data=small),
        ]
        stored_node = store.read_node(SID, "n1")
        assert stored_node is not None
        assert expected_content == stored_node.content
        assert expected_content == stored.event.node.content  # type: ignore[union-attr]
        [row] = store.read_artifacts(SID)
        assert (art.event.artifact_id, art.event.path, len(data), "n1") == (
            row.artifact_id,
            row.path,
            row.size_bytes,
            row.node_id,
        )
        self.assert_artifact_durable(store, make_store, art.event, synced)
        store.close()

    def assert_artifact_durable(
        self,
        store: EventStore,
        make_store: StoreFactory,
        event: ArtifactCreated,
        synced: list[str],
    ) -> None:
        """Check the artifact was durable when ``append_batch`` returned (a backend's way).

        Files: the bytes are fsynced (under the final name or a temporary one renamed onto
        it) and so is the directory entry.
        """
        root: Path = store.artifacts.root  # type: ignore[attr-defined]
        final = (root / event.path).resolve()
        assert any(
            Path(p).parent == final.parent and Path(p).name.startswith(event.sha256) for p in synced
        )
        assert str(final.parent) in synced

    def test_a_json_block_at_the_threshold_stays_inline(self, make_store: StoreFactory) -> None:
        data = {"k": "x" * 100}
        store = make_store(artifact_threshold=len(encode(data)))
        append(store, created())
        n = Node(
            node_id="n1", parent_id=None, agent_id="a1", role="tool", content=[JsonBlock(data=data)]
        )
        [stored] = append(store, appended(n))
        assert [JsonBlock(data=data)] == stored.event.node.content  # type: ignore[union-attr]
        assert [] == store.read_artifacts(SID)
        store.close()

    # --- errors and isolation ---------------------------------------------------------------

    def test_appending_to_an_unknown_session_raises_unknown_session(
        self, store: EventStore
    ) -> None:
        with pytest.raises(UnknownSession):
            append(store, todo("x"))

    @pytest.mark.parametrize(
        "read",
        [
            lambda s: s.read_events(SID),
            lambda s: s.read_run(SID, "r1"),
            lambda s: s.read_node(SID, "n1"),
            lambda s: s.read_children(SID, "n1"),
            lambda s: s.read_nodes(SID),
            lambda s: s.read_active_path(SID),
            lambda s: s.read_session(SID),
            lambda s: s.read_agents(SID),
            lambda s: s.read_runs(SID),
            lambda s: s.read_artifacts(SID),
            lambda s: s.check_chain(SID),
        ],
    )
    def test_every_reader_raises_unknown_session_for_a_missing_session(
        self, store: EventStore, read: Callable[[EventStore], object]
    ) -> None:
        with pytest.raises(UnknownSession):
            read(store)

    @pytest.mark.parametrize("bad", BAD_SESSION_IDS, ids=lambda v: repr(v)[:24])
    def test_an_invalid_session_id_is_refused_everywhere_and_changes_nothing(
        self, session: EventStore, bad: Any
    ) -> None:
        before = (session.list_sessions(), session.read_events(SID))
        readers: list[Callable[[], object]] = [
            lambda: session.read_events(bad),
            lambda: session.read_run(bad, "r1"),
            lambda: session.read_node(bad, "n1"),
            lambda: session.read_children(bad, "n1"),
            lambda: session.read_nodes(bad),
            lambda: session.read_active_path(bad),
            lambda: session.read_session(bad),
            lambda: session.read_agents(bad),
            lambda: session.read_runs(bad),
            lambda: session.read_artifacts(bad),
            lambda: session.check_chain(bad),
        ]
        for read in readers:
            with pytest.raises(InvalidSessionId):
                read()
        bad_created = AppendRequest(
            session_id=bad,
            event=SessionCreated(session_id=bad, cwd="/", root_agent_id="a"),  # type: ignore[arg-type]
            created_at=at(),
        )
        for request in (
            bad_created,
            AppendRequest(
                session_id=bad, event=TodoUpdated(todo_id="t", status="ready"), created_at=at()
            ),
        ):
            [result] = session.append_batch([request])
            assert isinstance(result, InvalidSessionId)
        assert before == (session.list_sessions(), session.read_events(SID))

    def test_a_failing_request_in_a_batch_is_rolled_back_alone(self, session: EventStore) -> None:
        append(session, appended(node("n1")))
        results = session.append_batch(
            [
                todo("ok1", run_id="r1"),
                todo("lost", sid=OTHER),  # unknown session
                appended(node("n2", "n1")),
                appended(node("n1", run_id="r1")),  # duplicate node id
                todo("ok2", run_id="r1"),
                appended(node("n3", "n2")),
            ]
        )
        assert [list, UnknownSession, list, StoreError, list, list] == [
            list if isinstance(r, list) else type(r) for r in results
        ]
        timeline = session.read_events(SID)
        assert list(range(1, 7)) == [e.seq for e in timeline]
        assert ["r1#1", "r1#2"] == [e.event_id for e in session.read_run(SID, "r1")]
        assert [("n1", 1), ("n2", 2), ("n3", 3)] == [
            (n.node_id, n.node_seq) for n in session.read_nodes(SID)
        ]
        assert "n3" == session.read_session(SID).active_node_id

    def test_a_second_session_created_fails_without_touching_the_first(
        self, session: EventStore
    ) -> None:
        append(session, todo("x"))
        [result] = session.append_batch([created()])
        assert isinstance(result, StoreError)
        assert [1, 2] == [e.seq for e in session.read_events(SID)]
        [stored] = append(session, todo("y"))
        assert 3 == stored.seq

    def test_session_created_for_another_session_id_is_refused(self, store: EventStore) -> None:
        request = req(SessionCreated(session_id=OTHER, cwd="/", root_agent_id="a"), SID)
        [result] = store.append_batch([request])
        assert isinstance(result, StoreError)
        assert [] == store.list_sessions()

    # --- durability across handles ------------------------------------------------------------

    def test_a_reopened_store_reads_the_same_history_and_continues_its_counters(
        self, make_store: StoreFactory
    ) -> None:
        first = make_store()
        written = append(
            first, created(), appended(node("n1", run_id="r1")), todo("a", run_id="r1")
        )
        first.close()
        second = make_store()
        assert written == second.read_events(SID)
        [stored] = append(second, appended(node("n2", "n1", run_id="r1")))
        assert (4, 3, "r1#3") == (stored.seq, stored.run_seq, stored.event_id)
        assert 2 == second.read_node(SID, "n2").node_seq  # type: ignore[union-attr]
        second.close()

    def test_a_second_handle_sees_what_the_first_committed(
        self, store: EventStore, make_store: StoreFactory
    ) -> None:
        append(store, created(), todo("x"))
        reader = make_store()
        assert [1, 2] == [e.seq for e in reader.read_events(SID)]
        reader.close()

    # --- deleting a session -----------------------------------------------------------------

    def test_deleting_a_session_removes_it_records_the_audit_and_keeps_the_other(
        self, make_store: StoreFactory
    ) -> None:
        store = make_store(artifact_threshold=1024)
        if not isinstance(store, DeletesSessions):
            pytest.skip("this backend cannot delete sessions")
        append(store, created(), created(OTHER))
        big = Node(
            node_id="n1",
            parent_id=None,
            agent_id="a1",
            role="tool",
            content=[JsonBlock(data={"rows": ["x" * 100] * 40})],
        )
        art = append(store, appended(big))[0]
        append(store, appended(node("o1"), sid=OTHER))
        assert isinstance(art.event, ArtifactCreated)

        deletion = store.delete_session(SID, deleted_at="2026-01-02T00:00:00+00:00")

        assert (3, 1, 1, 0) == (deletion.events, deletion.nodes, deletion.artifacts, 0)
        assert [OTHER] == [s.session_id for s in store.list_sessions()]
        assert not store.session_exists(SID)
        with pytest.raises(DeletedSession, match=f"session {SID} was deleted at 2026-01-02"):
            store.read_session(SID)
        with pytest.raises(DeletedSession):
            store.read_events(SID)
        with pytest.raises(StoreError):
            store.artifacts.read(art.event.path)
        assert [deletion] == store.list_deletions()
        reopened = make_store()
        assert isinstance(reopened, DeletesSessions)
        assert deletion == reopened.read_deletion(SID)  # durable, seen by a new handle
        assert 2 == store.check_chain(OTHER).events
        with pytest.raises(DeletedSession):
            store.delete_session(SID)
        with pytest.raises(UnknownSession, match="unknown session"):
            store.delete_session("sess_20260101_000009_ffff")

    def test_a_deleted_id_can_be_made_again_and_deleted_again(
        self, make_store: StoreFactory
    ) -> None:
        store = make_store()
        if not isinstance(store, DeletesSessions):
            pytest.skip("this backend cannot delete sessions")
        append(store, created())
        store.delete_session(SID, deleted_at="2026-01-02T00:00:00+00:00")
        append(store, created(), appended(node("n1")))
        assert 2 == store.count_events(SID)
        store.delete_session(SID, deleted_at="2026-01-03T00:00:00+00:00")
        assert ["2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00"] == [
            d.deleted_at for d in store.list_deletions()
        ]
        with pytest.raises(DeletedSession, match="2026-01-03"):
            store.read_session(SID)

    def test_deleting_keeps_an_artifact_another_session_references(
        self, make_store: StoreFactory
    ) -> None:
        store = make_store(artifact_threshold=1024)
        if not isinstance(store, DeletesSessions):
            pytest.skip("this backend cannot delete sessions")
        big = Node(
            node_id="n1",
            parent_id=None,
            agent_id="a1",
            role="tool",
            content=[JsonBlock(data={"rows": ["x" * 100] * 40})],
        )
        append(store, created(), created(OTHER))
        art = append(store, appended(big))[0].event
        assert isinstance(art, ArtifactCreated)
        append(store, appended(node("o1", text=f"see {art.path}"), sid=OTHER))

        deletion = store.delete_session(SID)

        assert (1, 1) == (deletion.artifacts, deletion.artifacts_kept)
        assert encode({"rows": ["x" * 100] * 40}) == store.artifacts.read(art.path)
