"""``context_artifact_ids``: the incremental scan of a conversation is ``artifact_ids`` of it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.orchestration.artifact_tool import artifact_ids, context_artifact_ids
from actors.orchestration.loop import Conversation
from eventlog.blocks import ArtifactRefBlock, Message, TextBlock, ToolResultBlock

# A few ids, so that references repeat, and come and go with a compaction.
_art_ids = st.sampled_from(["art_a", "art_b", "art_c", "art_d"])
_refs = st.builds(ArtifactRefBlock, artifact_id=_art_ids)
_texts = st.builds(TextBlock, text=st.sampled_from(["", "x", "[artifact art_a]"]))
_results = st.builds(
    ToolResultBlock, tool_call_id=st.just("call_1"), content=st.lists(_refs | _texts, max_size=3)
)
_messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool"]),
    content=st.lists(_refs | _texts | _results, max_size=3),
)
# One step of a conversation's life: append a message to its list; replace the list (a
# compaction) by new messages, by a copy of the old list (equal, not the same), or by a
# prefix of it (the same message objects); each then asks for the ids or not (then the
# next changes pile up before the next scan).
_asks = st.booleans()
_steps = st.one_of(
    st.tuples(st.just("append"), _messages, _asks),
    st.tuples(st.just("replace"), st.lists(_messages, max_size=6), _asks),
    st.tuples(st.just("copy"), st.none(), _asks),
    st.tuples(st.just("prefix"), st.integers(min_value=0, max_value=5), _asks),
    st.tuples(st.just("extend_as_new_list"), st.lists(_messages, min_size=1, max_size=2), _asks),
)


def _conversation(history: list[Message]) -> Conversation:
    # The recorder is only used by ``append``, which these tests never call: they change
    # ``messages`` directly, as the conversation's own append and a compaction do.
    return Conversation(None, parent_id=None, history=history, activate=False)  # type: ignore[arg-type]


@given(st.lists(_messages, max_size=3), st.lists(_steps, max_size=30))
def test_context_artifact_ids_equal_a_full_scan_after_any_steps(
    history: list[Message], steps: list[tuple[str, Any, bool]]
) -> None:
    conv = _conversation(history)
    answers: list[tuple[frozenset[str], frozenset[str]]] = []
    for kind, value, ask in steps:
        if kind == "append":
            conv.messages.append(value)
        elif kind == "replace":
            conv.messages = list(value)
        elif kind == "copy":
            conv.messages = list(conv.messages)
        elif kind == "prefix":
            conv.messages = conv.messages[:value]
        elif kind == "extend_as_new_list":
            conv.messages = [*conv.messages, *value]
        if ask:
            answers.append((artifact_ids(conv.messages), context_artifact_ids(conv)))
    answers.append((artifact_ids(conv.messages), context_artifact_ids(conv)))
    assert [expected for expected, _ in answers] == [actual for _, actual in answers]


def test_a_reference_inside_a_tool_result_appended_later_is_found() -> None:
    conv = _conversation([Message(role="user", content=[TextBlock(text="go")])])
    assert frozenset() == context_artifact_ids(conv)

    conv.messages.append(
        Message(
            role="tool",
            content=[
                ToolResultBlock(tool_call_id="c1", content=[ArtifactRefBlock(artifact_id="art_x")])
            ],
        )
    )
    conv.messages.append(Message(role="assistant", content=[ArtifactRefBlock(artifact_id="art_y")]))

    assert frozenset({"art_x", "art_y"}) == context_artifact_ids(conv)


def test_a_compaction_that_drops_a_reference_drops_its_id() -> None:
    ref = Message(role="tool", content=[ArtifactRefBlock(artifact_id="art_x")])
    conv = _conversation([ref, Message(role="assistant", content=[TextBlock(text="ok")])])
    assert frozenset({"art_x"}) == context_artifact_ids(conv)

    conv.messages = [Message(role="user", content=[TextBlock(text="summary")])]

    assert frozenset() == context_artifact_ids(conv)
