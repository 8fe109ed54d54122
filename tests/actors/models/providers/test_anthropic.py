"""The Messages API adapter against a live loopback server: the wire mapping both ways."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Callable

import pytest
from _provider_helpers import ask, user
from fake_server import TEST_KEY, FakeServer, Reply, anthropic_reply

from actors.errors import ProviderConfigError
from actors.models.protocol import ModelResponse, ToolSpec
from actors.models.providers import AnthropicModel, model_from_spec
from eventlog.blocks import JsonBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.events import Usage

Make = Callable[..., AnthropicModel]


def test_a_plain_reply_maps_to_text_usage_and_end_turn(
    server: FakeServer, anthropic_model: Make
) -> None:
    server.reply(Reply(body=anthropic_reply({"type": "text", "text": "hello"}, model="c-1")))

    response = ask(anthropic_model(), user("hi"))

    expected = ModelResponse(
        content=[TextBlock(text="hello")],
        usage=Usage(input_tokens=10, output_tokens=2),
        stop_reason="end_turn",
        model="c-1",
    )
    assert expected == response


def test_the_key_and_version_travel_as_headers_and_the_system_prompt_at_top_level(
    server: FakeServer, anthropic_model: Make
) -> None:
    ask(
        anthropic_model(),
        Message(role="system", content=[TextBlock(text="use metric units")]),
        user("hi"),
        system="be brief",
        max_tokens=64,
    )

    [request] = server.requests
    assert "/v1/messages" == request.path
    assert TEST_KEY == request.headers["x-api-key"]
    assert "2023-06-01" == request.headers["anthropic-version"]
    assert "authorization" not in request.headers
    assert {
        "model": "claude-test",
        "max_tokens": 64,
        "system": "be brief\n\nuse metric units",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    } == request.json()


def test_tool_use_comes_back_as_a_tool_call_with_its_id(
    server: FakeServer, anthropic_model: Make
) -> None:
    server.reply(
        Reply(
            body=anthropic_reply(
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "id": "toolu_01", "name": "grep", "input": {"q": "x"}},
                stop_reason="tool_use",
            )
        )
    )

    response = ask(anthropic_model(), user("find x"))

    assert [
        TextBlock(text="let me look"),
        ToolCallBlock(id="toolu_01", name="grep", arguments={"q": "x"}),
    ] == response.content
    assert "tool_use" == response.stop_reason


def test_tool_ids_and_errors_round_trip_into_the_next_request(
    server: FakeServer, anthropic_model: Make
) -> None:
    calls = [
        ToolCallBlock(id="toolu_01", name="grep", arguments={"q": "x"}),
        ToolCallBlock(id="toolu_02", name="cat", arguments={}),
    ]
    ask(
        anthropic_model(),
        user("find x"),
        Message(role="assistant", content=[TextBlock(text="looking"), *calls]),
        Message(
            role="tool",
            content=[
                ToolResultBlock(tool_call_id="toolu_01", content=[JsonBlock(data={"hits": 1})]),
                ToolResultBlock(
                    tool_call_id="toolu_02", content=[TextBlock(text="no file")], is_error=True
                ),
            ],
        ),
        user("and then?"),
        tools=[ToolSpec(name="grep", description="search")],
    )

    body = server.requests[0].json()
    assert [
        {"role": "user", "content": [{"type": "text", "text": "find x"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "toolu_01", "name": "grep", "input": {"q": "x"}},
                {"type": "tool_use", "id": "toolu_02", "name": "cat", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [{"type": "text", "text": '{"hits":1}'}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": [{"type": "text", "text": "no file"}],
                    "is_error": True,
                },
                {"type": "text", "text": "and then?"},
            ],
        },
    ] == body["messages"]
    assert [
        {
            "name": "grep",
            "description": "search",
            "input_schema": {"type": "object", "properties": {}},
        }
    ] == body["tools"]


def test_tool_results_go_first_in_a_merged_user_turn(
    server: FakeServer, anthropic_model: Make
) -> None:
    ask(
        anthropic_model(),
        Message(role="assistant", content=[ToolCallBlock(id="t1", name="x")]),
        Message(
            role="user",
            content=[TextBlock(text="note"), ToolResultBlock(tool_call_id="t1")],
        ),
    )

    [_, turn] = server.requests[0].json()["messages"]
    assert ["tool_result", "text"] == [b["type"] for b in turn["content"]]


def test_cache_usage_maps_to_cache_read_and_write_tokens(
    server: FakeServer, anthropic_model: Make
) -> None:
    usage = {
        "input_tokens": 5,
        "output_tokens": 7,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 100,
    }
    server.reply(Reply(body=anthropic_reply({"type": "text", "text": "x"}, usage=usage)))

    expected = Usage(input_tokens=5, output_tokens=7, cache_read_tokens=900, cache_write_tokens=100)
    assert expected == ask(anthropic_model(), user("hi")).usage


@pytest.mark.parametrize(
    ("wire", "stop_reason"),
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "error"),
    ],
)
def test_stop_reasons_map_to_normalised_stop_reasons(
    server: FakeServer, anthropic_model: Make, wire: str, stop_reason: str
) -> None:
    server.reply(Reply(body=anthropic_reply({"type": "text", "text": "x"}, stop_reason=wire)))

    assert stop_reason == ask(anthropic_model(), user("hi")).stop_reason


def test_model_from_spec_reads_the_base_url_and_key_from_the_given_env(
    server: FakeServer,
) -> None:
    env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": TEST_KEY}

    with model_from_spec("anthropic:claude-haiku-4-5", env=env) as model:
        response = ask(model, user("hi"))

    assert "anthropic:claude-haiku-4-5" == model.name
    assert "claude-haiku-4-5" == server.requests[0].json()["model"]
    assert TEST_KEY == server.requests[0].headers["x-api-key"]
    assert [TextBlock(text="echo: hi")] == response.content


def test_the_public_anthropic_api_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY is not set"):
        model_from_spec("anthropic:claude-haiku-4-5", env={"OPENAI_API_KEY": "k"})
