# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import msgspec
import pytest
from _events import node
from _events import stored_event as stored
from _sequences import stored_histories
from hypothesis import given, settings

from eventlog.blocks import ToolCallBlock
from eventlog.errors import IntegrityError
from eventlog.events import ActiveNodeSwitched, Event, Node, NodeAppended
from eventlog.records import NodeRow, StoredEvent
from projections.errors import BranchRefused, UnknownNode
from projections.tree import (
    NodeTree,
    check_branch_point,
    check_branch_target,
    check_switch_target,
    fold,
    rebuild,
)


def events_of(*items: Node | str) -> list[StoredEvent]:
    """Nodes are appended and activated; a str is a switch to that node."""
    out = []
    for i, item in enumerate(items, start=1):
        ev: Event = (
            ActiveNodeSwitched(from_node_id=None, to_node_id=item)
            if isinstance(item, str)
            else NodeAppended(node=item, activate=True)
        )
        out.append(stored(i, ev))
    return out


def branched_tree() -> NodeTree:
    # u1 → a1 → u2 → a2, and a second branch from a1: a1 → u3 → a3
    return rebuild(
        events_of(
            node("u1", None),
            node("a1", "u1", "assistant"),
            node("u2", "a1"),
            node("a2", "u2", "assistant"),
            node("u3", "a1"),
            node("a3", "u3", "assistant"),
        )
    )


def test_active_path_runs_from_root_to_the_active_node_and_leaves_siblings_out() -> None:
    tree = branched_tree()
    assert ["u1", "a1", "u3", "a3"] == [n.node_id for n in tree.active_path()]
    assert ["u1", "a1", "u3", "a3"] == tree.active_path_ids()


def test_switching_moves_the_active_path_to_the_other_branch() -> None:
    tree = branched_tree()
    tree = fold(tree, stored(7, ActiveNodeSwitched(from_node_id="a3", to_node_id="a2")))
    assert ["u1", "a1", "u2", "a2"] == [n.node_id for n in tree.active_path()]


def test_branches_children_roots_and_leaves_are_in_node_seq_order() -> None:
    tree = branched_tree()
    assert ["u2", "u3"] == tree.children("a1")
    assert ["a1"] == tree.branch_points()
    assert ["a2", "a3"] == tree.leaves()
    assert ["u1"] == tree.roots()


def test_node_seq_is_the_order_of_node_appended_events() -> None:
    rows = branched_tree().rows()
    assert [1, 2, 3, 4, 5, 6] == [r.node_seq for r in rows]
    assert ["u1", "a1", "u2", "a2", "u3", "a3"] == [r.node_id for r in rows]


def test_a_dangling_parent_is_an_integrity_error_naming_the_node() -> None:
    with pytest.raises(IntegrityError, match=r"'n2'.*dangling parent 'ghost'"):
        rebuild(events_of(node("n1", None), node("n2", "ghost")))


def test_a_parent_appended_after_its_child_is_a_dangling_parent() -> None:
    with pytest.raises(IntegrityError, match="'child'"):
        rebuild(events_of(node("child", "later"), node("later", None)))


def test_a_duplicate_node_id_is_an_integrity_error_naming_the_node() -> None:
    with pytest.raises(IntegrityError, match="duplicate node id 'n1'"):
        rebuild(events_of(node("n1", None), node("n1", None)))


def test_a_node_that_is_its_own_parent_is_a_cycle() -> None:
    with pytest.raises(IntegrityError, match="'n1' is its own parent"):
        rebuild(events_of(node("n1", "n1")))


def test_a_switch_to_an_unknown_node_is_an_integrity_error() -> None:
    with pytest.raises(IntegrityError, match="'nowhere'"):
        rebuild(events_of(node("n1", None), "nowhere"))


def test_a_lenient_tree_collects_every_problem_and_keeps_the_history() -> None:
    tree = rebuild(
        events_of(node("n1", None), node("n2", "ghost"), node("n1", None), "nowhere"), strict=False
    )
    assert 3 == len(tree.problems)
    assert ["n1", "n2"] == [r.node_id for r in tree.rows()]
    assert "nowhere" == tree.active_node_id


def row(node_id: str, seq: int, parent: str | None) -> NodeRow:
    return NodeRow(
        node_id=node_id,
        node_seq=seq,
        parent_id=parent,
        agent_id="a",
        run_id=None,
        role="user",
        node_type="message",
        content=[],
        metadata={},
        token_count=None,
        created_at="t",
    )


def test_rows_forming_a_cycle_are_refused_naming_a_node_on_it() -> None:
    with pytest.raises(IntegrityError, match="own ancestor"):
        NodeTree.from_rows([row("r", 1, None), row("a", 2, "b"), row("b", 3, "a")])


def test_rows_with_a_dangling_parent_are_refused() -> None:
    with pytest.raises(IntegrityError, match="'a' has a dangling parent 'zz'"):
        NodeTree.from_rows([row("a", 1, "zz")])


def test_rows_with_a_duplicate_id_are_refused() -> None:
    with pytest.raises(IntegrityError, match="duplicate node id 'a'"):
        NodeTree.from_rows([row("a", 1, None), row("a", 2, None)])


@settings(max_examples=60, deadline=None)
@given(stored_histories())
def test_a_tree_built_from_its_own_rows_equals_the_folded_tree(events: list[StoredEvent]) -> None:
    tree = rebuild(events)
    assert tree == NodeTree.from_rows(reversed(tree.rows()), tree.active_node_id)


def test_switch_target_must_exist() -> None:
    tree = branched_tree()
    check_switch_target(tree, "u2")
    with pytest.raises(UnknownNode, match="'zz'"):
        check_switch_target(tree, "zz")


def test_a_first_child_may_be_any_node() -> None:
    tree = rebuild(events_of(node("u1", None)))
    check_branch_point(tree, "u1", "assistant")


def test_a_second_child_must_be_a_user_message() -> None:
    tree = branched_tree()
    check_branch_point(tree, "a1", "user", "message")
    with pytest.raises(BranchRefused, match="'a1'"):
        check_branch_point(tree, "a1", "assistant")
    with pytest.raises(BranchRefused):
        check_branch_point(tree, "a1", "user", "system_note")


def test_a_second_answer_may_grow_from_a_user_message_as_a_retry_does() -> None:
    tree = branched_tree()  # u1 already has a child, a1

    check_branch_point(tree, "u1", "assistant", "plan_instruction")
    with pytest.raises(BranchRefused, match="must start at a user message"):
        check_branch_point(tree, "a1", "assistant", "plan_instruction")


def test_a_switch_goes_only_where_the_next_user_message_may_start_a_branch() -> None:
    worker = msgspec.structs.replace(node("w1", None), agent_id="worker")
    calling = node("a4", "a2", "assistant", ToolCallBlock(id="c1", name="lookup"))
    tree = rebuild(events_of(node("u1", None), node("a2", "u1", "assistant"), worker, calling))

    check_branch_target(tree, "a2", "a")  # an answer: the next message branches there
    check_branch_target(tree, "u1", "a")
    with pytest.raises(BranchRefused, match="belongs to worker's isolated context"):
        check_branch_target(tree, "w1", "a")
    with pytest.raises(BranchRefused, match="waiting for its tool results"):
        check_branch_target(tree, "a4", "a")
    with pytest.raises(UnknownNode):
        check_branch_target(tree, "zz", "a")


def test_a_new_root_is_always_allowed_and_an_unknown_parent_never() -> None:
    tree = branched_tree()
    check_branch_point(tree, None, "assistant")
    with pytest.raises(UnknownNode):
        check_branch_point(tree, "zz", "user")
