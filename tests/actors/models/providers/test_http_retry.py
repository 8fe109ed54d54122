"""The shared retry loop against a live loopback server: statuses, waits, deadline, bodies."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import datetime as dt
import email.utils
import random
import socket
import time
from collections.abc import Callable

import pytest
from fake_server import TEST_KEY, FakeClock, FakeServer, Reply, anthropic_reply, openai_reply

from actors.errors import ProviderConfigError
from actors.models.protocol import Model, ModelRequest
from actors.models.providers import (
    AnthropicModel,
    HttpOptions,
    OpenAIChatModel,
    RetryPolicy,
    end_reason_for,
    parse_retry_after,
)
from actors.models.providers.http import excerpt
from eventlog.blocks import Message, TextBlock
from eventlog.codec import encode
from eventlog.errors import ModelError

MakeOpenAI = Callable[..., OpenAIChatModel]
MakeAnthropic = Callable[..., AnthropicModel]

REQUEST = ModelRequest(
    model="openai:gpt-test",
    messages=[Message(role="user", content=[TextBlock(text="hi")])],
    system="be brief",
)
OK = Reply(body=openai_reply("fine"))


def failure(make: Callable[..., Model], **overrides: object) -> ModelError:
    with pytest.raises(ModelError) as caught:
        make(**overrides).complete(REQUEST)
    return caught.value


# --- waits ------------------------------------------------------------------------------


def test_a_429_waits_exactly_the_retry_after_seconds_then_succeeds(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "3"}),
        OK,
    )

    response = openai_model().complete(REQUEST)

    assert [TextBlock(text="fine")] == response.content
    assert [3.0] == clock.sleeps
    assert 2 == len(server.requests)


def test_a_retry_after_http_date_becomes_a_wait_from_the_wall_clock(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    now = dt.datetime(2026, 6, 12, 15, 30, 0, tzinfo=dt.UTC)
    later = email.utils.format_datetime(now + dt.timedelta(seconds=7), usegmt=True)
    server.reply(Reply(status=429, headers={"Retry-After": later}), OK)

    openai_model(wall_clock=now.timestamp).complete(REQUEST)

    assert [7.0] == clock.sleeps


def test_a_500_then_success_waits_one_full_jitter_backoff(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(status=500, body={"error": {"message": "oops"}}), OK)

    openai_model().complete(REQUEST)

    assert [random.Random(7).uniform(0, 0.5)] == clock.sleeps


def test_5xx_retries_double_the_jitter_cap_and_stop_after_four_attempts(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(*[Reply(status=503, body={"error": {"message": "overloaded"}})] * 4)

    error = failure(openai_model)

    rng = random.Random(7)
    assert [rng.uniform(0, 0.5), rng.uniform(0, 1.0), rng.uniform(0, 2.0)] == clock.sleeps
    assert 4 == len(server.requests)
    assert (503, True) == (error.status, error.retryable)
    assert "HTTP 503: overloaded (after 4 attempts)" in str(error)


def test_a_400_is_not_retried_and_the_provider_message_is_shown(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(status=400, body={"error": {"message": "bad tool schema"}}))

    error = failure(openai_model)

    assert "openai:gpt-test call failed: HTTP 400: bad tool schema" == str(error)
    assert (400, False) == (error.status, error.retryable)
    assert 1 == len(server.requests)
    assert [] == clock.sleeps


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "no such model", "type": "invalid_request_error"}},  # OpenAI
        {"type": "error", "error": {"type": "not_found_error", "message": "no such model"}},
        {"error": "no such model"},  # Ollama
        {"object": "error", "message": "no such model", "code": 404},  # vLLM
        b"no such model",  # a plain-text proxy page
    ],
)
def test_each_servers_error_shape_yields_its_message(
    server: FakeServer, openai_model: MakeOpenAI, body: object
) -> None:
    server.reply(Reply(status=404, body=body))

    error = failure(openai_model)

    assert "openai:gpt-test call failed: HTTP 404: no such model" == str(error)


def test_an_anthropic_529_with_retry_after_goes_through_the_same_loop(
    server: FakeServer, clock: FakeClock, anthropic_model: MakeAnthropic
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    server.reply(
        Reply(status=529, body=overloaded, headers={"retry-after": "2"}),
        Reply(body=anthropic_reply({"type": "text", "text": "fine"})),
    )

    response = anthropic_model().complete(REQUEST)

    assert [TextBlock(text="fine")] == response.content
    assert [2.0] == clock.sleeps


# --- timeouts and the deadline ----------------------------------------------------------


def test_a_hang_past_the_timeout_is_retried_and_the_next_reply_used(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(hang=5.0), OK)

    response = openai_model(timeout=0.2).complete(REQUEST)

    assert [TextBlock(text="fine")] == response.content
    assert 2 == len(server.requests)


def test_a_server_that_always_hangs_fails_as_a_timeout_after_the_bounded_attempts(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(hang=5.0), Reply(hang=5.0))

    error = failure(openai_model, timeout=0.2, retry=RetryPolicy(max_attempts=2))

    assert "openai:gpt-test call failed: timed out after 0.2 s (after 2 attempts)" == str(error)
    assert (None, True) == (error.status, error.retryable)


def test_the_deadline_cuts_the_attempt_timeout_and_stops_the_retries(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(hang=5.0), Reply(hang=5.0))
    started = time.monotonic()

    error = failure(
        openai_model, timeout=5.0, retry=RetryPolicy(deadline=0.3), clock=time.monotonic
    )

    assert time.monotonic() - started < 2.0
    assert "timed out after 0.3 s" in str(error)
    assert 1 == len(server.requests)


def test_a_retry_after_past_the_deadline_is_not_waited_for(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(status=429, headers={"Retry-After": "100"}))

    error = failure(openai_model, retry=RetryPolicy(deadline=30))

    assert 429 == error.status
    assert "not retried: Retry-After 100 s would pass the deadline" in str(error)
    assert [] == clock.sleeps


def test_retries_stop_once_the_next_wait_would_pass_the_deadline(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(*[Reply(status=429, headers={"Retry-After": "10"})] * 4)

    error = failure(openai_model, retry=RetryPolicy(deadline=25))

    assert [10.0, 10.0] == clock.sleeps
    assert 3 == len(server.requests)
    assert "(after 3 attempts; not retried" in str(error)


# --- bodies -----------------------------------------------------------------------------


def test_a_body_cut_off_mid_way_is_a_model_error_with_the_status_and_an_excerpt(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    cut = Reply(body=b'{"choices": [{"mess', content_length=500)
    server.reply(cut, cut)

    error = failure(openai_model, retry=RetryPolicy(max_attempts=2))

    assert 200 == error.status
    assert 'body cut off after 19 bytes: \'{"choices": [{"mess\'' in str(error)
    assert 2 == len(server.requests)


def test_a_cut_off_body_then_a_whole_one_succeeds(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=b'{"cho', content_length=100), OK)

    assert [TextBlock(text="fine")] == openai_model().complete(REQUEST).content


def test_a_body_that_is_not_json_is_not_retried_and_shows_at_most_200_chars(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    page = b"<html>" + b"x" * 1000 + b"</html>"
    server.reply(Reply(body=page))

    error = failure(openai_model)

    shown = str(error).split("not a JSON object: ", 1)[1]
    assert 200 == len(shown.strip("'"))
    assert shown.startswith("'<html>xxx")
    assert (200, False) == (error.status, error.retryable)
    assert 1 == len(server.requests)


def test_a_refused_connection_is_retried_then_reported_in_one_line(
    clock: FakeClock, options: HttpOptions
) -> None:
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", options=options)

    with model, pytest.raises(ModelError) as caught:
        model.complete(REQUEST)

    assert (
        f"openai:gpt-test call failed: cannot connect to http://127.0.0.1:{port}/v1/chat"
        "/completions (ConnectError) (after 4 attempts)"
    ) == str(caught.value)
    assert 3 == len(clock.sleeps)


# --- secrets ----------------------------------------------------------------------------


def test_the_key_never_appears_in_an_error_or_the_encoded_request_and_response(
    server: FakeServer, openai_model: MakeOpenAI, anthropic_model: MakeAnthropic
) -> None:
    echoed = {"error": {"message": f"Incorrect API key provided: {TEST_KEY}"}}
    server.reply(
        Reply(status=401, body=echoed),
        Reply(status=500, body=echoed),
        Reply(status=500, body=echoed),
        Reply(body=b"not json " + TEST_KEY.encode()),
    )
    errors = [
        failure(openai_model),
        failure(anthropic_model, retry=RetryPolicy(max_attempts=2)),
        failure(openai_model),
    ]
    models: list[Model] = [openai_model(), anthropic_model()]
    responses = [m.complete(REQUEST) for m in models]

    assert all("Incorrect API key provided: ***" in str(e) for e in errors[:2])
    seen = [str(e) for e in errors] + [repr(m) for m in models]
    seen += [encode(REQUEST).decode()] + [encode(r).decode() for r in responses]
    assert [] == [text for text in seen if TEST_KEY in text]
    assert TEST_KEY in server.requests[-1].headers["x-api-key"]  # it did travel, as a header


# --- pure helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "-2"}, 0.0),
        ({"retry-after": "Fri, 12 Jun 2026 15:30:20 GMT"}, 20.0),
        ({"retry-after": "Fri, 12 Jun 2026 15:29:00 GMT"}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_as_millis_seconds_or_an_http_date(
    headers: dict[str, str], expected: float | None
) -> None:
    now = dt.datetime(2026, 6, 12, 15, 30, 0, tzinfo=dt.UTC).timestamp()

    assert expected == parse_retry_after(headers, now)


def test_an_excerpt_masks_secrets_collapses_whitespace_and_keeps_200_chars() -> None:
    text = f"key {TEST_KEY}\n\n  then " + "y" * 500

    shown = excerpt(text, [TEST_KEY])

    assert 200 == len(shown)
    assert shown.startswith("key *** then yyy")
    assert shown.endswith("…")


@pytest.mark.parametrize(
    ("stop_reason", "end_reason"),
    [
        ("end_turn", "completed"),
        ("tool_use", "completed"),
        ("stop_sequence", "completed"),
        ("max_tokens", "max_output_tokens_recovery"),
        ("error", "failed"),
    ],
)
def test_stop_reasons_map_to_run_end_reasons(stop_reason: str, end_reason: str) -> None:
    assert end_reason == end_reason_for(stop_reason)


def test_a_retry_policy_without_attempts_is_refused() -> None:
    with pytest.raises(ProviderConfigError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)


def test_a_429_insufficient_quota_fails_at_once_without_retries(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    # A billing state, not a rate limit: no wait ends it (issue 32, item 4).
    quota = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server.reply(Reply(status=429, body=quota), OK)

    error = failure(openai_model)

    assert (429, False) == (error.status, error.retryable)
    assert "exceeded your current quota" in str(error)
    assert 1 == len(server.requests)
    assert [] == clock.sleeps
