"""The Chat Completions adapter against a live loopback server: the wire mapping both ways."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Callable

import pytest
from _provider_helpers import ask, user
from fake_server import TEST_KEY, FakeServer, Reply, openai_reply

from actors.errors import ProviderConfigError
from actors.models.protocol import ModelResponse, ToolSpec
from actors.models.providers import OpenAIChatModel, model_from_spec
from eventlog.blocks import (
    ArtifactRefBlock,
    JsonBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.errors import ModelError
from eventlog.events import Usage

Make = Callable[..., OpenAIChatModel]


def test_a_plain_reply_maps_to_text_usage_and_end_turn(
    server: FakeServer, openai_model: Make
) -> None:
    server.reply(Reply(body=openai_reply("hello there", model="gpt-test-2024")))

    response = ask(openai_model(), user("hi"))

    expected = ModelResponse(
        content=[TextBlock(text="hello there")],
        usage=Usage(input_tokens=10, output_tokens=2),
        stop_reason="end_turn",
        model="gpt-test-2024",
    )
    assert expected == response


def test_the_system_prompt_is_the_first_message_and_the_key_a_bearer_header(
    server: FakeServer, openai_model: Make
) -> None:
    ask(openai_model(), user("hi"), system="be brief", temperature=0.0, max_tokens=55)

    [request] = server.requests
    assert "/v1/chat/completions" == request.path
    assert f"Bearer {TEST_KEY}" == request.headers["authorization"]
    assert {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "max_tokens": 55,
        "temperature": 0.0,
    } == request.json()


def test_without_a_key_no_authorization_header_is_sent(
    server: FakeServer, openai_model: Make
) -> None:
    response = ask(openai_model(api_key=None), user("ping"))

    assert "authorization" not in server.requests[0].headers
    assert [TextBlock(text="echo: ping")] == response.content


def test_tool_calls_come_back_with_their_ids_and_parsed_arguments(
    server: FakeServer, openai_model: Make
) -> None:
    server.reply(
        Reply(
            body=openai_reply(
                None,
                tool_calls=[{"id": "call_7", "name": "grep", "arguments": '{"pattern": "x"}'}],
                finish_reason="tool_calls",
            )
        )
    )

    response = ask(openai_model(), user("find x"))

    assert [ToolCallBlock(id="call_7", name="grep", arguments={"pattern": "x"})] == response.content
    assert "tool_use" == response.stop_reason


def test_a_tool_call_id_round_trips_into_the_next_request(
    server: FakeServer, openai_model: Make
) -> None:
    model = openai_model()
    call = ToolCallBlock(id="call_7", name="grep", arguments={"pattern": "x"})
    ask(
        model,
        user("find x"),
        Message(role="assistant", content=[TextBlock(text="looking"), call]),
        Message(
            role="tool",
            content=[
                ToolResultBlock(
                    tool_call_id="call_7", name="grep", content=[TextBlock(text="a.py:1")]
                )
            ],
        ),
        tools=[ToolSpec(name="grep", description="search", parameters={"type": "object"})],
    )

    body = server.requests[0].json()
    assert [
        {"role": "user", "content": "find x"},
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "grep", "arguments": '{"pattern":"x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "a.py:1"},
    ] == body["messages"]
    assert [
        {
            "type": "function",
            "function": {"name": "grep", "description": "search", "parameters": {"type": "object"}},
        }
    ] == body["tools"]


def test_json_artifact_and_failed_tool_results_are_sent_as_text(
    server: FakeServer, openai_model: Make
) -> None:
    ask(
        openai_model(),
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_call_id="c1", content=[TextBlock(text="boom")], is_error=True),
                JsonBlock(data={"a": [1, 2]}),
                ArtifactRefBlock(artifact_id="art_1", summary="big table"),
            ],
        ),
    )

    assert [
        {"role": "tool", "tool_call_id": "c1", "content": "ERROR: boom"},
        {"role": "user", "content": '{"a":[1,2]}\n[artifact art_1: big table]'},
    ] == server.requests[0].json()["messages"]


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("tool_calls", "tool_use"),
        ("length", "max_tokens"),
        ("content_filter", "error"),
        ("something_new", "end_turn"),
    ],
)
def test_finish_reasons_map_to_normalised_stop_reasons(
    server: FakeServer, openai_model: Make, finish_reason: str, stop_reason: str
) -> None:
    server.reply(Reply(body=openai_reply("x", finish_reason=finish_reason)))

    assert stop_reason == ask(openai_model(), user("hi")).stop_reason


def test_cached_prompt_tokens_are_split_out_of_the_input_tokens(
    server: FakeServer, openai_model: Make
) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 800},
    }
    server.reply(Reply(body=openai_reply("x", usage=usage)))

    expected = Usage(input_tokens=200, output_tokens=20, cache_read_tokens=800)
    assert expected == ask(openai_model(), user("hi")).usage


def test_arguments_that_are_not_a_json_object_are_kept_for_the_tool_to_refuse(
    server: FakeServer, openai_model: Make
) -> None:
    server.reply(
        Reply(body=openai_reply(None, tool_calls=[{"id": "c", "name": "t", "arguments": "{oops"}]))
    )

    [call] = ask(openai_model(), user("hi")).content

    assert ToolCallBlock(id="c", name="t", arguments={"_raw_arguments": "{oops"}) == call


def test_a_reply_without_choices_is_a_model_error_with_an_excerpt(
    server: FakeServer, openai_model: Make
) -> None:
    server.reply(Reply(body={"choices": [], "detail": "z" * 500}))

    with pytest.raises(ModelError) as caught:
        ask(openai_model(), user("hi"))

    assert 200 == caught.value.status
    assert "no choices" in str(caught.value)
    assert len(str(caught.value)) < 330


def test_model_from_spec_reads_the_base_url_and_key_from_the_given_env(
    server: FakeServer,
) -> None:
    env = {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": TEST_KEY}

    with model_from_spec("openai:llama3.2:3b", env=env) as model:
        response = ask(model, user("hi"))

    assert "openai:llama3.2:3b" == model.name
    assert "llama3.2:3b" == server.requests[0].json()["model"]
    assert f"Bearer {TEST_KEY}" == server.requests[0].headers["authorization"]
    assert [TextBlock(text="echo: hi")] == response.content


def test_the_base_url_argument_wins_over_the_env(server: FakeServer) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

    with model_from_spec("openai:local", env=env, base_url=server.url + "/v1") as model:
        ask(model, user("hi"))

    assert 1 == len(server.requests)


def test_the_public_openai_api_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY is not set"):
        model_from_spec("openai:gpt-4o-mini", env={})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("scripted:demo.json", "unknown model provider 'scripted'"),
        ("gpt-4o", "has no provider prefix"),
        ("openai:", "names no model"),
    ],
)
def test_bad_specs_are_refused_with_one_sentence(spec: str, message: str) -> None:
    with pytest.raises(ProviderConfigError, match=message) as caught:
        model_from_spec(spec, env={})

    assert isinstance(caught.value, ValueError)
    assert 1 == str(caught.value).count(". ") + 1


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ProviderConfigError, match="not an http"):
        model_from_spec("openai:x", env={}, base_url="ftp://example.org")


# --- real payloads (issue 32, item 4) -------------------------------------------------------


def test_a_content_filter_stop_without_a_message_is_an_error_reply_with_its_usage(
    server: FakeServer, openai_model: Make
) -> None:
    # Azure OpenAI: the filter stopped the completion; the choice has no message at all.
    body = {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "content_filter", "content_filter_results": {}}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 0},
    }
    server.reply(Reply(body=body))

    response = ask(openai_model(), user("hi"))

    expected = ModelResponse(
        content=[], usage=Usage(input_tokens=31), stop_reason="error", model="gpt-4o"
    )
    assert expected == response


def test_a_legacy_function_call_reply_maps_to_a_tool_call(
    server: FakeServer, openai_model: Make
) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "weather", "arguments": '{"city": "Lisbon"}'},
    }
    body = {
        "id": "chatcmpl-2",
        "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
    }
    server.reply(Reply(body=body))

    response = ask(openai_model(), user("hi"))

    [call] = response.content
    assert isinstance(call, ToolCallBlock)
    assert ("weather", {"city": "Lisbon"}, "tool_use") == (
        call.name,
        call.arguments,
        response.stop_reason,
    )
    assert call.id.startswith("call_")
