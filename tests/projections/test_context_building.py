# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import Node, NodeAppended
from eventlog.records import StoredEvent
from projections.context import MISSING_RESULT_TEXT, build_context
from projections.tree import rebuild


def n(
    node_id: str, parent: str | None, role: str, *blocks: ContentBlock, node_type: str = "message"
) -> Node:
    return Node(
        node_id=node_id,
        parent_id=parent,
        agent_id="a",
        role=role,  # type: ignore[arg-type]
        node_type=node_type,
        content=list(blocks),
    )  # type: ignore[arg-type]


def t(text: str) -> TextBlock:
    return TextBlock(text=text)


def result(call_id: str, text: str) -> ToolResultBlock:
    return ToolResultBlock(tool_call_id=call_id, name="read", content=[t(text)])


CALL = ToolCallBlock(id="c1", name="read", arguments={"path": "a.py"})


def test_each_node_on_the_path_becomes_a_message_with_its_role() -> None:
    path = [n("u1", None, "user", t("hello")), n("a1", "u1", "assistant", t("hi"))]
    expected = [
        Message(role="user", content=[t("hello")]),
        Message(role="assistant", content=[t("hi")]),
    ]
    assert expected == build_context(path)


def test_a_compaction_node_stands_in_for_everything_above_it() -> None:
    path = [
        n("u1", None, "user", t("old question")),
        n("a1", "u1", "assistant", t("old answer")),
        n("c1", "a1", "user", t("summary of the above"), node_type="compaction"),
        n("u2", "c1", "user", t("new question")),
    ]
    expected = [
        Message(role="user", content=[t("summary of the above")]),
        Message(role="user", content=[t("new question")]),
    ]
    assert expected == build_context(path)


def test_a_tool_result_follows_its_call_even_if_recorded_later() -> None:
    path = [
        n("u1", None, "user", t("read a.py")),
        n("a1", "u1", "assistant", t("reading"), CALL),
        n("s1", "a1", "system", t("note"), node_type="system_note"),
        n("t1", "s1", "tool", result("c1", "contents")),
    ]
    assert [
        Message(role="user", content=[t("read a.py")]),
        Message(role="assistant", content=[t("reading"), CALL]),
        Message(role="tool", content=[result("c1", "contents")]),
        Message(role="system", content=[t("note")]),
    ] == build_context(path)


def test_an_unanswered_call_gets_an_error_result_and_an_orphan_result_is_dropped() -> None:
    path = [
        n("c0", None, "user", t("summary"), node_type="compaction"),
        n("t0", "c0", "tool", result("gone", "orphan")),
        n("a1", "t0", "assistant", CALL),
    ]
    messages = build_context(path)
    assert ["user", "assistant", "tool"] == [m.role for m in messages]
    [synthetic] = messages[2].content
    assert isinstance(synthetic, ToolResultBlock)
    assert ("c1", True, [t(MISSING_RESULT_TEXT)]) == (
        synthetic.tool_call_id,
        synthetic.is_error,
        synthetic.content,
    )


def test_artifact_refs_are_kept_as_refs_with_their_summary() -> None:
    ref = ArtifactRefBlock(artifact_id="art_1", summary="JSON document, 40000 bytes")
    path = [n("u1", None, "user", t("see"), ref)]
    assert [Message(role="user", content=[t("see"), ref])] == build_context(path)


def test_sibling_branches_stay_out_of_the_context() -> None:
    nodes = [
        n("u1", None, "user", t("q")),
        n("a1", "u1", "assistant", t("a")),
        n("u2", "a1", "user", t("branch one")),
        n("u3", "a1", "user", t("branch two")),
    ]
    events = [
        StoredEvent(
            event_id=f"e{i}",
            seq=i,
            run_seq=None,
            agent_id="a",
            run_id=None,
            level="info",
            event_type="node_appended",
            node_id=None,
            tool_call_id=None,
            created_at="t",
            event=NodeAppended(node=node, activate=True),
        )
        for i, node in enumerate(nodes, start=1)
    ]
    texts = [m.content[0] for m in build_context(rebuild(events).active_path())]
    assert [t("q"), t("a"), t("branch two")] == texts
