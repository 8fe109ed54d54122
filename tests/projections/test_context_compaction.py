"""Context building with compaction nodes: the summary first, then the kept tail."""

from __future__ import annotations

from _events import node

from eventlog.blocks import Message, TextBlock
from eventlog.events import Node
from projections.context import build_context, context_nodes


def compaction(node_id: str, parent: str, summary: str, kept_from: str | None) -> Node:
    base = node(node_id, parent, "user", TextBlock(text=summary), node_type="compaction")
    compacted = {"from": "u1", "through": "a1", "nodes": 2, "kept_from": kept_from}
    return Node(**{**_fields(base), "metadata": {"compacted": compacted}})


def _fields(n: Node) -> dict[str, object]:
    return {f: getattr(n, f) for f in n.__struct_fields__}


def ids(path: list[Node]) -> list[str]:
    return [n.node_id for n in context_nodes(path)]


def test_a_compaction_that_keeps_a_tail_puts_its_summary_before_the_tail() -> None:
    path = [
        node("u1", None, "user"),
        node("a1", "u1", "assistant"),
        node("u2", "a1", "user"),
        node("a2", "u2", "assistant"),
        compaction("c1", "a2", "summary of u1, a1", kept_from="u2"),
        node("u3", "c1", "user"),
    ]

    assert ["c1", "u2", "a2", "u3"] == ids(path)
    assert (
        Message(role="user", content=[TextBlock(text="summary of u1, a1")])
        == (build_context(path)[0])
    )


def test_a_compaction_that_keeps_nothing_replaces_everything_above_it() -> None:
    path = [
        node("u1", None, "user"),
        node("a1", "u1", "assistant"),
        compaction("c1", "a1", "all of it", kept_from=None),
        node("u2", "c1", "user"),
    ]
    assert ["c1", "u2"] == ids(path)


def test_a_second_compaction_replaces_the_first_and_its_tail() -> None:
    path = [
        node("u1", None, "user"),
        node("a1", "u1", "assistant"),
        node("u2", "a1", "user"),
        compaction("c1", "u2", "first", kept_from="u2"),
        node("a2", "c1", "assistant"),
        node("u3", "a2", "user"),
        compaction("c2", "u3", "second", kept_from="u3"),
    ]
    assert ["c2", "u3"] == ids(path)


def test_a_kept_node_that_is_not_on_the_path_keeps_nothing() -> None:
    path = [node("u1", None, "user"), compaction("c1", "u1", "s", kept_from="gone")]
    assert ["c1"] == ids(path)
