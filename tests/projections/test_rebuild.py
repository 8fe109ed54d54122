"""``rebuild(all) == fold after each event``, and against a naive model of the tree."""

from __future__ import annotations

from _sequences import stored_histories
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.events import ActiveNodeSwitched, NodeAppended
from eventlog.records import StoredEvent
from projections import SessionState, fold, rebuild
from projections import boards as boards_mod
from projections import tree as tree_mod
from projections import usage as usage_mod

HISTORIES = stored_histories(max_steps=40)


@settings(max_examples=150, deadline=None)
@given(HISTORIES)
def test_rebuild_of_all_events_equals_the_state_after_folding_each_event(
    events: list[StoredEvent],
) -> None:
    state = SessionState()
    for i, e in enumerate(events):
        state = fold(state, e)
        # every intermediate state is the rebuild of its prefix
        prefix = rebuild(events[: i + 1])
        assert prefix == state
        assert prefix.node_rows() == state.node_rows()
        assert prefix.session == state.session
    assert rebuild(events) == state


@settings(max_examples=100, deadline=None)
@given(HISTORIES, st.data())
def test_rebuilding_a_prefix_then_folding_the_rest_equals_rebuilding_all(
    events: list[StoredEvent], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(events)))
    state = rebuild(events[:cut])
    for e in events[cut:]:
        fold(state, e)
    expected = rebuild(events)
    assert expected == state
    assert expected.run_rows() == state.run_rows()
    assert expected.agent_rows() == state.agent_rows()
    assert expected.artifact_rows() == state.artifact_rows()


@settings(max_examples=100, deadline=None)
@given(HISTORIES)
def test_each_projection_alone_equals_its_part_of_the_session_rebuild(
    events: list[StoredEvent],
) -> None:
    state = rebuild(events)
    assert state.tree == tree_mod.rebuild(events)
    assert state.boards == boards_mod.rebuild(events)
    assert state.usage == usage_mod.rebuild(events)


@settings(max_examples=100, deadline=None)
@given(HISTORIES)
def test_the_tree_agrees_with_a_naive_dict_model(events: list[StoredEvent]) -> None:
    parents: dict[str, str | None] = {}
    active: str | None = None
    for e in events:
        if isinstance(e.event, NodeAppended):
            parents[e.event.node.node_id] = e.event.node.parent_id
            if e.event.activate:
                active = e.event.node.node_id
        elif isinstance(e.event, ActiveNodeSwitched):
            active = e.event.to_node_id
    path: list[str] = []
    cur = active
    while cur is not None:
        path.append(cur)
        cur = parents[cur]
    path.reverse()
    state = rebuild(events)
    assert path == state.tree.active_path_ids()
    assert list(parents) == [r.node_id for r in state.node_rows()]
    assert active == (state.session.active_node_id if state.session else None)
