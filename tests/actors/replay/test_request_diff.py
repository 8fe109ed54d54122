"""describe_request_change: what changed between two model requests, as text a person reads."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.models.protocol import ModelRequest, ToolSpec, request_hash
from actors.replay.request_diff import (
    UNEXPLAINED,
    describe_request_change,
    recorded_request,
    request_change,
)
from eventlog.blocks import Message, TextBlock
from eventlog.events import ModelRequested

LOOKUP = ToolSpec(
    name="lookup",
    description="Look up facts about a topic.",
    parameters={"type": "object", "properties": {"topic": {"type": "string"}}},
)


def _request(**kw: object) -> ModelRequest:
    base: dict[str, object] = {
        "model": "m1",
        "messages": [Message(role="user", content=[TextBlock(text="Where is my order?")])],
        "system": "You are a support agent.\nBe brief.",
        "tools": [LOOKUP],
        "role": "researcher",
    }
    return ModelRequest(**{**base, **kw})  # type: ignore[arg-type]


def test_a_changed_tool_description_is_a_text_diff_of_the_description() -> None:
    changed = ToolSpec(
        name="lookup", description="Look up facts (cached).", parameters=LOOKUP.parameters
    )
    (d,) = describe_request_change(_request(), _request(tools=[changed]))
    assert "tools[lookup].description" == d.path
    assert ["@@ -1 +1 @@", "-Look up facts about a topic.", "+Look up facts (cached)."] == d.lines


def test_changed_fields_are_named_with_their_old_and_new_values() -> None:
    recorded = _request()
    current = _request(model="m2", max_tokens=100, temperature=0.5, tools=[])
    diff = {d.path: (d.expected, d.actual) for d in describe_request_change(recorded, current)}
    assert {
        "model": ("m1", "m2"),
        "max_tokens": (4096, 100),
        "temperature": (None, 0.5),
        "tools[lookup]": (
            {"name": "lookup", "description": LOOKUP.description, "parameters": LOOKUP.parameters},
            None,
        ),
    } == diff


def test_a_changed_system_prompt_and_message_text_get_line_diffs() -> None:
    current = _request(
        system="You are a support agent.\nBe kind.",
        messages=[Message(role="user", content=[TextBlock(text="Where is my parcel?")])],
    )
    by_path = {d.path: d.lines for d in describe_request_change(_request(), current)}
    assert [" You are a support agent.", "-Be brief.", "+Be kind."] == by_path["system"][1:]
    assert ["-Where is my order?", "+Where is my parcel?"] == by_path[
        "messages[0].content[0].text"
    ][1:]


def test_a_renamed_parameter_is_a_change_of_the_tool_parameters() -> None:
    changed = ToolSpec(
        name="lookup",
        description=LOOKUP.description,
        parameters={"type": "object", "properties": {"subject": {"type": "string"}}},
    )
    paths = [d.path for d in describe_request_change(_request(), _request(tools=[changed]))]
    assert [
        "tools[lookup].parameters.properties.topic",
        "tools[lookup].parameters.properties.subject",
    ] == paths


def _requested(request: ModelRequest) -> ModelRequested:
    return ModelRequested(
        call_index=1,
        model=request.model,
        role=request.role,
        phase=request.phase,
        request_hash=request_hash(request),
        messages=request.messages,
        tools=[t.name for t in request.tools],
        system=request.system,
    )


def test_the_recorded_request_is_rebuilt_exactly_from_the_event_and_the_recorded_specs() -> None:
    recorded = _request()
    changed = ToolSpec(name="lookup", description="Other.", parameters=LOOKUP.parameters)
    rebuilt = recorded_request(_requested(recorded), {"lookup": LOOKUP}, _request(tools=[changed]))
    assert recorded == rebuilt
    diff = request_change(_requested(recorded), {"lookup": LOOKUP}, _request(tools=[changed]))
    assert ["tools[lookup].description"] == [d.path for d in diff]


def test_a_change_the_recording_does_not_hold_is_said_so_not_hidden() -> None:
    # The recorded specs are unknown here, so the rebuilt request cannot hash right.
    changed = ToolSpec(name="lookup", description="Other.", parameters=LOOKUP.parameters)
    diff = request_change(_requested(_request()), {}, _request(tools=[changed]))
    assert [UNEXPLAINED] == [d.path for d in diff]


tool_specs = st.lists(
    st.builds(
        ToolSpec,
        name=st.sampled_from(["a", "b", "c"]),
        description=st.sampled_from(["", "x", "x\ny"]),
    ),
    max_size=3,
    unique_by=lambda t: t.name,
)
text_messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    content=st.lists(st.builds(TextBlock, text=st.sampled_from(["hi", "hi\nthere"])), max_size=2),
)
fields = {
    "model": st.sampled_from(["m1", "m2"]),
    "messages": st.lists(text_messages, max_size=2),
    "system": st.sampled_from(["", "s", "s\nt"]),
    "tools": tool_specs,
    "role": st.sampled_from(["", "writer"]),
    "max_tokens": st.sampled_from([4096, 100]),
    "temperature": st.none() | st.sampled_from([0.0, 0.5]),
}
requests = st.builds(ModelRequest, **fields)


@settings(max_examples=60)
@given(requests, st.data())
def test_two_requests_differ_exactly_when_a_change_is_described(
    a: ModelRequest, data: st.DataObject
) -> None:
    # b is a itself, or a with some fields drawn again (often the same value: no change).
    changed = data.draw(st.lists(st.sampled_from(sorted(fields)), max_size=3, unique=True))
    b = msgspec.structs.replace(a, **{f: data.draw(fields[f]) for f in changed})
    assert (a == b) == (describe_request_change(a, b) == [])
    assert [] == describe_request_change(a, a)
