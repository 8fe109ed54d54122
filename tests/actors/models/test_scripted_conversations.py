"""``ScriptedModel`` remembers conversations only to work less: every response is the one a
brand-new model (which remembers nothing) gives for the same request."""

from __future__ import annotations

import threading
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.models.protocol import ModelRequest, ModelResponse
from actors.models.scripted import ScriptedModel, load_script
from eventlog.blocks import JsonBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ModelError

# Replies that differ in every field a memory could get wrong: which reply (the count of
# earlier answers), the tool call ids (the request hash), usage (the characters counted).
SCRIPT = load_script(
    {
        "rules": [
            {
                "role": "worker",
                "contains": "stop",
                "replies": [{"error": "scripted failure", "status": 500}],
            },
            {
                "role": "worker",
                "replies": [
                    {"tool_calls": [{"name": "read", "arguments": {"p": "a"}}]},
                    {"json": {"done": [1, 2]}, "stop_reason": "max_tokens"},
                    {"text": "third", "tool_calls": [{"name": "w"}, {"name": "x"}]},
                ],
            },
            {
                "phase": "plan",
                "replies": [{"text": "plan one"}, {"json": ["p", 2]}, {"text": "plan last"}],
            },
            {
                "replies": [
                    {"text": "first answer"},
                    {"tool_calls": [{"name": "t", "arguments": {"n": 1}}]},
                    {"text": "again", "json": {"k": "v"}},
                    {"tool_calls": [{"name": "u"}]},
                ]
            },
        ]
    }
)

# Lengths in multiples of 4 characters (a token, to usage): a message counted twice or
# missed changes the usage a response reports.
_texts = st.sampled_from(["", "stop", "abcd" * 3, "plan", "é" * 4])
_blocks = st.one_of(
    st.builds(TextBlock, text=_texts),
    st.builds(JsonBlock, data=st.sampled_from([{"a": 1}, "ab", 12345678, [1, "bcd"]])),
    st.builds(ToolCallBlock, id=st.sampled_from(["c1", "c2"]), name=st.just("t")),
    st.builds(
        ToolResultBlock,
        tool_call_id=st.sampled_from(["c1", "c2"]),
        content=st.lists(st.builds(TextBlock, text=_texts), max_size=2),
    ),
)
_messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool"]),
    content=st.lists(_blocks, min_size=1, max_size=3),
)
_KEYS = [("lead", ""), ("worker", ""), ("lead", "plan"), ("worker", "plan")]
_slots = st.integers(min_value=0, max_value=3)
_asks = st.booleans()
# One step: grow a conversation (a new list, or the same list appended to), branch it
# from one of its earlier messages, replace it by equal copies (new list, new messages),
# move it to another role/phase keeping its messages, or only send it to the model; each
# change is sent to the model at once or not (then the next changes pile up).
_steps = st.one_of(
    st.tuples(st.just("grow"), _slots, st.lists(_messages, min_size=1, max_size=2), _asks),
    st.tuples(st.just("grow_in_place"), _slots, st.lists(_messages, min_size=1, max_size=2), _asks),
    st.tuples(st.just("branch"), _slots, st.integers(0, 6), st.lists(_messages, max_size=3), _asks),
    st.tuples(st.just("copy"), _slots, _asks),
    st.tuples(st.just("rekey"), _slots, st.sampled_from(_KEYS), _asks),
    st.tuples(st.just("ask"), _slots, st.just(True)),
)


def _answer(model: ScriptedModel, request: ModelRequest) -> ModelResponse | str:
    try:
        return model.complete(request)
    except ModelError as e:
        return f"ModelError: {e}"


def _fresh(request: ModelRequest) -> ModelResponse | str:
    return _answer(ScriptedModel(SCRIPT), request)


@given(
    st.lists(_messages, min_size=1, max_size=2),
    st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(0, 1)), min_size=4, max_size=4),
    st.lists(_steps, max_size=40),
)
def test_every_response_is_what_a_fresh_model_gives_for_the_same_request(
    firsts: list[Message],
    starts: list[tuple[tuple[str, str], int]],
    steps: list[tuple[Any, ...]],
) -> None:
    """Four conversations; each starts with one of a few shared first messages (so some
    share the model's memory of a conversation, by role, phase and first message)."""
    model = ScriptedModel(SCRIPT)
    keys = [key for key, _ in starts]
    convs = [[firsts[min(i, len(firsts) - 1)]] for _, i in starts]
    expected: list[ModelResponse | str] = []
    actual: list[ModelResponse | str] = []
    for step in steps:
        kind, slot = step[0], step[1]
        if kind == "grow":
            convs[slot] = [*convs[slot], *step[2]]
        elif kind == "grow_in_place":
            convs[slot].extend(step[2])
        elif kind == "branch":
            convs[slot] = [*convs[slot][: step[2]], *step[3]]
        elif kind == "copy":
            convs[slot] = [msgspec.structs.replace(m) for m in convs[slot]]
        elif kind == "rekey":
            keys[slot] = step[2]
        if step[-1]:
            role, phase = keys[slot]
            # The runtime sends its conversation's own list: the next request may be
            # the same list object, grown.
            request = ModelRequest(model="m", messages=convs[slot], role=role, phase=phase)
            expected.append(_fresh(request))
            actual.append(_answer(model, request))
            convs[slot].append(Message(role="assistant", content=[TextBlock(text="ok")]))
    assert expected == actual


def test_a_branch_from_an_earlier_message_is_measured_from_the_branch() -> None:
    model = ScriptedModel(SCRIPT)
    first = Message(role="user", content=[TextBlock(text="go")])
    answer = Message(role="assistant", content=[TextBlock(text="abcd" * 40)])
    grown = [first, answer, Message(role="user", content=[TextBlock(text="more")])]
    # As long as the conversation it replaces, and shares its first message.
    branched = [first, *(Message(role="user", content=[TextBlock(text="x")]) for _ in range(3))]
    requests = [
        ModelRequest(model="m", messages=messages, role="worker")
        for messages in (grown, branched, grown)
    ]

    assert [_fresh(r) for r in requests] == [_answer(model, r) for r in requests]


def test_the_same_request_asked_twice_gets_the_same_response() -> None:
    model = ScriptedModel(SCRIPT)
    messages = [Message(role="user", content=[TextBlock(text="go")])]
    request = ModelRequest(model="m", messages=messages, role="worker")

    first, second = model.complete(request), model.complete(request)

    assert first == second == _fresh(request)


def test_more_conversations_than_the_model_remembers_are_still_answered_right() -> None:
    model = ScriptedModel(SCRIPT)
    convs = [[Message(role="user", content=[TextBlock(text=f"go {i}")])] for i in range(600)]
    expected: list[ModelResponse | str] = []
    actual: list[ModelResponse | str] = []
    for _ in range(3):  # each round outgrows the model's memory (256 conversations)
        for conv in convs:
            request = ModelRequest(model="m", messages=conv, role="worker")
            expected.append(_fresh(request))
            actual.append(_answer(model, request))
            conv.append(Message(role="assistant", content=[TextBlock(text="ok")]))
    assert expected == actual


@pytest.mark.parametrize("shared_first", [False, True], ids=["own-first", "shared-first"])
def test_threads_with_their_own_conversations_get_what_a_fresh_model_gives(
    shared_first: bool,
) -> None:
    """``shared-first``: every thread's conversation starts with the same message object,
    so all of them contend for one memory of the model (each request starts it over)."""
    model = ScriptedModel(SCRIPT)
    first = Message(role="system", content=[TextBlock(text="you are a worker")])
    threads_n, turns = 8, 40
    start = threading.Barrier(threads_n)
    results: dict[int, tuple[list[Any], list[Any]]] = {}

    def converse(n: int) -> None:
        head = first if shared_first else msgspec.structs.replace(first)
        conv = [head, Message(role="user", content=[TextBlock(text=f"task {n}")])]
        role = ("worker", "lead")[n % 2]
        expected: list[ModelResponse | str] = []
        actual: list[ModelResponse | str] = []
        start.wait()
        for turn in range(turns):
            request = ModelRequest(model="m", messages=conv, role=role)
            actual.append(_answer(model, request))
            expected.append(_fresh(request))
            reply = actual[-1]
            content = reply.content if isinstance(reply, ModelResponse) else []
            conv.append(Message(role="assistant", content=[TextBlock(text=f"t{turn}"), *content]))
            conv.append(Message(role="user", content=[TextBlock(text="abcd" * (turn % 3))]))
        results[n] = (expected, actual)

    threads = [threading.Thread(target=converse, args=(n,)) for n in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert list(range(threads_n)) == sorted(results)
    for n in range(threads_n):
        expected, actual = results[n]
        assert expected == actual, f"thread {n}"
