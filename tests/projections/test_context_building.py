# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from _events import node, stored_event

from eventlog.blocks import (
    ArtifactRefBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import NodeAppended
from projections.context import MISSING_RESULT_TEXT, build_context
from projections.tree import rebuild


def t(text: str) -> TextBlock:
    return TextBlock(text=text)


def result(call_id: str, text: str) -> ToolResultBlock:
    return ToolResultBlock(tool_call_id=call_id, name="read", content=[t(text)])


CALL = ToolCallBlock(id="c1", name="read", arguments={"path": "a.py"})


def test_each_node_on_the_path_becomes_a_message_with_its_role() -> None:
    path = [node("u1", None, "user", t("hello")), node("a1", "u1", "assistant", t("hi"))]
    expected = [
        Message(role="user", content=[t("hello")]),
        Message(role="assistant", content=[t("hi")]),
    ]
    assert expected == build_context(path)


def test_a_compaction_node_stands_in_for_everything_above_it() -> None:
    path = [
        node("u1", None, "user", t("old question")),
        node("a1", "u1", "assistant", t("old answer")),
        node("c1", "a1", "user", t("summary of the above"), node_type="compaction"),
        node("u2", "c1", "user", t("new question")),
    ]
    expected = [
        Message(role="user", content=[t("summary of the above")]),
        Message(role="user", content=[t("new question")]),
    ]
    assert expected == build_context(path)


def test_a_tool_result_follows_its_call_even_if_recorded_later() -> None:
    path = [
        node("u1", None, "user", t("read a.py")),
        node("a1", "u1", "assistant", t("reading"), CALL),
        node("s1", "a1", "system", t("note"), node_type="system_note"),
        node("t1", "s1", "tool", result("c1", "contents")),
    ]
    assert [
        Message(role="user", content=[t("read a.py")]),
        Message(role="assistant", content=[t("reading"), CALL]),
        Message(role="tool", content=[result("c1", "contents")]),
        Message(role="system", content=[t("note")]),
    ] == build_context(path)


def test_an_unanswered_call_gets_an_error_result_and_an_orphan_result_is_dropped() -> None:
    path = [
        node("c0", None, "user", t("summary"), node_type="compaction"),
        node("t0", "c0", "tool", result("gone", "orphan")),
        node("a1", "t0", "assistant", CALL),
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
    path = [node("u1", None, "user", t("see"), ref)]
    assert [Message(role="user", content=[t("see"), ref])] == build_context(path)


def test_sibling_branches_stay_out_of_the_context() -> None:
    nodes = [
        node("u1", None, "user", t("q")),
        node("a1", "u1", "assistant", t("a")),
        node("u2", "a1", "user", t("branch one")),
        node("u3", "a1", "user", t("branch two")),
    ]
    events = [
        stored_event(i, NodeAppended(node=n, activate=True)) for i, n in enumerate(nodes, start=1)
    ]
    texts = [m.content[0] for m in build_context(rebuild(events).active_path())]
    assert [t("q"), t("a"), t("branch two")] == texts
