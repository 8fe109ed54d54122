"""The log's codec: round trips for every event and packet type, upcasting, bad payloads."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.blocks import ContentBlock, TextBlock, ToolResultBlock
from eventlog.codec import (
    CURRENT_VERSIONS,
    UPCASTERS,
    decode_event,
    encode,
    encode_event,
    upcast,
    upcaster,
)
from eventlog.errors import DecodeError
from eventlog.events import (
    EVENT_TYPES,
    AgentCreated,
    Event,
    RunEnded,
    TokenUsage,
    Usage,
    event_type_of,
)
from eventlog.packets import Packet
from tests.strategies import content_blocks, event_of_type, events, packets

_block_decoder = msgspec.json.Decoder(ContentBlock)


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_event_type_survives_an_encode_decode_round_trip(
    event_type: str, data: st.DataObject
) -> None:
    event = data.draw(event_of_type(event_type))
    actual = decode_event(encode_event(event))
    assert event == actual
    assert event_type == event_type_of(actual)


@settings(max_examples=100, deadline=None)
@given(event=events())
def test_the_stored_payload_carries_its_tag_and_current_version(event: Event) -> None:
    payload = json.loads(encode_event(event))
    tag = event_type_of(event)
    assert tag == payload["event_type"]
    assert CURRENT_VERSIONS[tag] == payload["schema_version"]


@settings(max_examples=100, deadline=None)
@given(packet=packets())
def test_every_packet_survives_an_encode_decode_round_trip(packet: Packet) -> None:
    # ``Packet`` is an untagged union (msgspec cannot decode it as one), so each packet
    # is decoded as its own type — which is how the events carrying them decode them.
    assert packet == msgspec.json.decode(encode(packet), type=type(packet))


@settings(max_examples=100, deadline=None)
@given(block=content_blocks())
def test_every_content_block_survives_an_encode_decode_round_trip(block: ContentBlock) -> None:
    assert block == _block_decoder.decode(encode(block))


def test_a_content_block_is_dispatched_on_its_type_field() -> None:
    raw = (
        b'{"type":"tool_result","tool_call_id":"c1",'
        b'"content":[{"type":"text","text":"boom"}],"is_error":true}'
    )
    expected = ToolResultBlock(tool_call_id="c1", content=[TextBlock(text="boom")], is_error=True)
    assert expected == _block_decoder.decode(raw)


def test_a_v1_token_usage_is_upcast_to_the_nested_v2_shape() -> None:
    v1 = {
        "event_type": "token_usage",
        "schema_version": 1,
        "model": "m",
        "input_tokens": 10,
        "output_tokens": 3,
    }
    expected = TokenUsage(model="m", usage=Usage(input_tokens=10, output_tokens=3))
    assert expected == decode_event(json.dumps(v1))


@pytest.mark.parametrize(
    ("v1_status", "status"),
    [
        ("completed", "completed"),
        ("aborted", "cancelled"),
        ("queued", "failed"),
        ("running", "failed"),
    ],
)
def test_a_v1_run_ended_is_read_with_an_end_status(v1_status: str, status: str) -> None:
    v1 = {"event_type": "run_ended", "run_id": "r", "status": v1_status, "end_reason": "failed"}

    event = decode_event(json.dumps(v1))

    assert isinstance(event, RunEnded)
    assert (status, 2) == (event.status, event.schema_version)
    kept = {} if v1_status == status else {"v1_status": v1_status}
    assert kept == event.outcome


def test_a_v1_main_agent_is_read_as_the_orchestrator() -> None:
    v1 = {"event_type": "agent_created", "agent_id": "a", "agent_type": "main"}

    event = decode_event(json.dumps(v1))

    assert isinstance(event, AgentCreated)
    assert ("orchestrator", 2) == (event.agent_type, event.schema_version)


def test_a_payload_without_schema_version_is_read_as_version_1() -> None:
    v1 = {"event_type": "token_usage", "model": "m", "input_tokens": 1}
    assert Usage(input_tokens=1) == decode_event(json.dumps(v1)).usage  # type: ignore[union-attr]


def test_upcast_chains_to_the_current_version_and_stamps_it() -> None:
    payload = upcast({"event_type": "token_usage", "schema_version": 1, "model": "m"})
    assert CURRENT_VERSIONS["token_usage"] == payload["schema_version"]


def test_every_version_below_current_has_an_upcaster() -> None:
    expected = {(tag, v) for tag, cur in CURRENT_VERSIONS.items() for v in range(1, cur)}
    assert expected == set(UPCASTERS)


def test_registering_a_second_upcaster_for_the_same_version_is_refused() -> None:
    with pytest.raises(ValueError, match="duplicate upcaster"):
        upcaster("token_usage", 1)(lambda p: p)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"event_type": "no_such_event"}, "unknown event_type"),
        ({"schema_version": 1}, "unknown event_type"),
        ({"event_type": "token_usage", "schema_version": 99, "model": "m"}, "newer than this code"),
        ({"event_type": "token_usage", "schema_version": 0, "model": "m"}, "bad schema_version"),
        ({"event_type": "token_usage", "schema_version": "2", "model": "m"}, "bad schema_version"),
        ({"event_type": "run_ended", "run_id": "r"}, "invalid event payload"),
        (
            {
                "event_type": "run_ended",
                "run_id": "r",
                "status": "exploded",
                "end_reason": "completed",
            },
            "invalid event payload",
        ),
    ],
)
def test_a_bad_payload_raises_decode_error(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_event(json.dumps(payload))


@pytest.mark.parametrize("raw", [b"", b"{", b"not json", b"[1,2", b"null"])
def test_bytes_that_are_not_an_event_object_raise_decode_error(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_event(raw)
