"""How a stream fails, against a live loopback SSE server, for both adapters.

Before any text was yielded a failure is an ordinary failed attempt (the retry policy of
``complete``); after, it is ``StreamInterrupted`` at once, never retried behind the
caller's back. The attempt's wall-clock deadline and the size cap bound the stream.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from fake_server import TEST_KEY, FakeClock, FakeServer, Reply
from sse_bodies import (
    StreamedText,
    anthropic_stream,
    openai_chunk,
    openai_stream,
    sse_event,
    sse_reply,
)

from actors.models.protocol import STREAM_INTERRUPTED, ModelRequest, ModelResponse, StreamItem
from actors.models.providers import AnthropicModel, OpenAIChatModel, RetryPolicy
from eventlog.blocks import Message, TextBlock
from eventlog.errors import ModelError

Make = Callable[..., OpenAIChatModel | AnthropicModel]
Events = Callable[[list[str]], list[bytes]]

REQUEST = ModelRequest(
    model="x:test", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
ONCE = RetryPolicy(max_attempts=1)
# Events before the first text piece: OpenAI sends a role chunk; Anthropic message_start,
# ping and content_block_start.
BEFORE_TEXT = {"openai": 1, "anthropic": 3}


def _openai_events(pieces: list[str]) -> list[bytes]:
    return openai_stream(pieces)


def _anthropic_events(pieces: list[str]) -> list[bytes]:
    return anthropic_stream(StreamedText(pieces))


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> tuple[str, Make, Events]:
    """Return (name, make adapter, text pieces → the provider's event stream)."""
    name: str = request.param
    make: Make = request.getfixturevalue(f"{name}_model")
    return name, make, _openai_events if name == "openai" else _anthropic_events


def until_error(items: Iterator[StreamItem]) -> tuple[list[str], ModelError]:
    """Consume a stream that must fail; return the text it yielded first and the error."""
    pieces: list[str] = []
    with pytest.raises(ModelError) as caught:
        for item in items:
            assert isinstance(item, str), "the stream ended although it should fail"
            pieces.append(item)
    return pieces, caught.value


# --- before any text: the retry policy of complete --------------------------------------


def test_a_429_before_the_stream_waits_its_retry_after_then_streams(
    server: FakeServer, clock: FakeClock, provider: tuple[str, Make, Events]
) -> None:
    _, make, events = provider
    busy = Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "3"})
    server.reply(busy, sse_reply(events(["fine"])))

    items = list(make().stream(REQUEST))

    assert "fine" == items[0] and isinstance(items[-1], ModelResponse)
    assert [3.0] == clock.sleeps
    assert 2 == len(server.requests)


def test_a_400_fails_at_once_with_the_providers_message(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    _, make, _ = provider
    server.reply(Reply(status=400, body={"error": {"message": "bad tool schema"}}))

    pieces, error = until_error(make().stream(REQUEST))

    assert ([], (400, False)) == (pieces, (error.status, error.retryable))
    assert str(error).endswith("call failed: HTTP 400: bad tool schema")
    assert "ModelError" == error.error_type


def test_a_stream_cut_before_any_text_is_retried_as_complete_retries_a_cut_body(
    server: FakeServer, clock: FakeClock, provider: tuple[str, Make, Events]
) -> None:
    name, make, events = provider
    full = events(["after the cut"])
    server.reply(sse_reply(full, cut_after=BEFORE_TEXT[name]), sse_reply(full))

    items = list(make().stream(REQUEST))

    assert ["after the cut"] == items[:-1]
    assert 2 == len(server.requests) and 1 == len(clock.sleeps)


def test_an_error_event_before_text_is_retried_then_gives_up_like_complete(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    name, make, _ = provider
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    event = sse_event(overloaded, "error")
    server.reply(*[sse_reply([event])] * 4)

    _, error = until_error(make().stream(REQUEST))

    assert 4 == len(server.requests)
    spec = "openai:gpt-test" if name == "openai" else "anthropic:claude-test"
    said = "HTTP 200 stream with an error event: 'Overloaded' (after 4 attempts)"
    assert f"{spec} call failed: {said}" == str(error)
    assert (200, True) == (error.status, error.retryable)


def test_an_event_that_is_not_json_before_text_fails_at_once(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    _, make, _ = provider
    server.reply(sse_reply([b"data: <html>oops</html>\n\n"]))

    _, error = until_error(make().stream(REQUEST))

    assert 1 == len(server.requests)
    assert "HTTP 200 stream with an event that cannot be read" in str(error)
    assert "'<html>oops</html>'" in str(error)
    assert (200, False) == (error.status, error.retryable)


def test_a_2xx_html_page_fails_as_complete_fails_it(
    server: FakeServer, openai_model: Callable[..., OpenAIChatModel]
) -> None:
    server.reply(Reply(body=b"<html>login</html>", content_type="text/html"))

    _, error = until_error(openai_model().stream(REQUEST))

    assert "HTTP 200 with a body that is not a JSON object: '<html>login</html>'" in str(error)
    assert False is error.retryable


# --- after text: StreamInterrupted, never retried here -----------------------------------


def test_a_stream_cut_mid_way_raises_stream_interrupted_after_its_pieces(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    name, make, events = provider
    full = events(["one", " two", " three"])
    size = len(b"".join(full))  # a Content-Length the server never reaches: a broken link
    server.reply(sse_reply(full, cut_after=BEFORE_TEXT[name] + 2, content_length=size))

    pieces, error = until_error(make().stream(REQUEST))

    assert ["one", " two"] == pieces
    assert (STREAM_INTERRUPTED, True, 200) == (error.error_type, error.retryable, error.status)
    assert "HTTP 200 stream cut off after" in str(error)
    assert str(error).endswith("(stream interrupted after 2 pieces of text)")
    assert 1 == len(server.requests)  # not retried: the caller saw the pieces


def test_a_stream_that_ends_early_after_text_is_interrupted(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    name, make, events = provider
    server.reply(sse_reply(events(["one", " two"]), cut_after=BEFORE_TEXT[name] + 1))

    pieces, error = until_error(make().stream(REQUEST))

    done = "[DONE]" if name == "openai" else "message_stop"
    assert ["one"] == pieces
    assert f"HTTP 200 stream ended before {done} (stream interrupted after 1 piece of text)" in str(
        error
    )
    assert STREAM_INTERRUPTED == error.error_type


def test_a_bad_event_after_text_is_interrupted_and_retryable(
    server: FakeServer, openai_model: Callable[..., OpenAIChatModel]
) -> None:
    server.reply(sse_reply([openai_chunk({"content": "partial"}), b"data: {not json\n\n"]))

    pieces, error = until_error(openai_model().stream(REQUEST))

    assert ["partial"] == pieces
    assert (STREAM_INTERRUPTED, True) == (error.error_type, error.retryable)


def test_an_error_event_echoing_the_key_is_masked(
    server: FakeServer, anthropic_model: Callable[..., AnthropicModel]
) -> None:
    events = anthropic_stream(StreamedText(["hi"]))
    echo = {"type": "error", "error": {"type": "api_error", "message": f"bad key {TEST_KEY}"}}
    server.reply(sse_reply([*events[:4], sse_event(echo, "error")]))

    pieces, error = until_error(anthropic_model().stream(REQUEST))

    assert ["hi"] == pieces
    assert TEST_KEY not in str(error) and "bad key ***" in str(error)


# --- bounds: size and time --------------------------------------------------------------


def test_a_stream_over_the_size_cap_fails_without_retry_before_text(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    _, make, _ = provider
    server.reply(Reply(body=b": padding", content_type="text/event-stream", endless=True))

    _, error = until_error(make(max_response_bytes=100_000).stream(REQUEST))

    assert "HTTP 200 body over the 100,000 bytes limit" in str(error)
    assert (False, 1) == (error.retryable, len(server.requests))


def test_a_stream_passing_the_size_cap_after_text_is_interrupted(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    name, make, events = provider
    release = threading.Event()  # the rest (~60 KB) comes once the first piece is in
    stream = events(["x" * 1000] * 60)
    server.reply(sse_reply(stream, stall_after=BEFORE_TEXT[name] + 1, release=release))
    items = make(max_response_bytes=20_000).stream(REQUEST)
    assert "x" * 1000 == next(items)
    release.set()

    pieces, error = until_error(items)

    assert len(pieces) < 59
    assert "body over the 20,000 bytes limit" in str(error)
    assert STREAM_INTERRUPTED == error.error_type


def test_a_dripping_stream_ends_at_the_attempt_deadline(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    _, make, events = provider
    server.reply(Reply(content_type="text/event-stream", parts=tuple(events(["slow"])), drip=0.1))

    _, error = until_error(make(clock=time.monotonic, timeout=0.5, retry=ONCE).stream(REQUEST))

    assert "call failed: timed out after 0.5 s reading the body (after 1 attempt)" in str(error)
    assert (200, True) == (error.status, error.retryable)


def test_a_stream_stalling_after_text_is_interrupted_at_the_attempt_deadline(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    name, make, events = provider
    server.reply(sse_reply(events(["said", " more"]), stall_after=BEFORE_TEXT[name] + 1))

    pieces, error = until_error(make(clock=time.monotonic, timeout=0.5).stream(REQUEST))

    assert ["said"] == pieces
    assert "timed out after 0.5 s reading the body (stream interrupted after 1 piece" in str(error)
    assert STREAM_INTERRUPTED == error.error_type
    assert 1 == len(server.requests)


def test_a_body_held_open_after_the_streams_end_still_gives_the_whole_reply(
    server: FakeServer, provider: tuple[str, Make, Events]
) -> None:
    _, make, events = provider
    stream = events(["complete", " reply"])
    server.reply(sse_reply(stream, stall_after=len(stream)))  # never closes the body

    items = list(make(clock=time.monotonic, timeout=0.5).stream(REQUEST))

    assert ["complete", " reply"] == items[:-1]
    assert isinstance(items[-1], ModelResponse)


def test_an_openai_error_chunk_after_text_is_interrupted_with_its_message(
    server: FakeServer, openai_model: Callable[..., OpenAIChatModel]
) -> None:
    error_chunk = sse_event({"error": {"message": "server busy", "type": "server_error"}})
    server.reply(sse_reply([openai_chunk({"content": "so far"}), error_chunk]))

    pieces, error = until_error(openai_model().stream(REQUEST))

    assert ["so far"] == pieces
    assert "HTTP 200 stream with an error event: 'server busy' (stream interrupted" in str(error)
